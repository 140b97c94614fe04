/* coord_timers.h: one small set of deadlines for an event loop (pure: no
 * I/O, no clock of its own; times are the caller's, baton_now_ms).
 *
 * The coordinator's loop keeps every deadline it has (the rebalance
 * debounce, the leave grace, the resync, the rack refresh, the handoff
 * watchdog and its sweep, the history write, the leave-mark verify) in one
 * set, instead of merging them by hand: each phase arms or re-arms its
 * timer, the loop asks which are due and sleeps until the earliest one.
 *
 * A timer is a deadline, not a callback: it stays due until its owner
 * disarms or re-arms it (a rebalance that has run clears the debounce),
 * so a phase that could not act (disconnected) finds it due again. Each
 * timer belongs to groups (a bit mask) so a loop can leave some out of its
 * wait (a standby coordinator does not wait for a leader's timers).
 *
 * Not thread-safe; owned by one loop. */
#ifndef COORD_TIMERS_H
#define COORD_TIMERS_H

#include <stddef.h>
#include <stdint.h>

#define COORD_TIMERS_MAX 16

typedef struct {
    const char *name; /* for debugging and tests */
    unsigned groups;  /* bit mask */
    int64_t due_ms;   /* 0: not armed */
    uint64_t seq;     /* when it was armed: equal deadlines fire in arming order */
} coord_timer_t;

typedef struct {
    coord_timer_t t[COORD_TIMERS_MAX];
    int n;
    uint64_t seq;
} coord_timers_t;

void coord_timers_init(coord_timers_t *ts);

/* Adds a timer (not armed) in groups; returns its id, or -1 when the set is
 * full. */
int coord_timers_add(coord_timers_t *ts, const char *name, unsigned groups);

/* Arms id for due_ms (> 0), replacing any earlier arming; 0 disarms. */
void coord_timers_arm(coord_timers_t *ts, int id, int64_t due_ms);
/* Arms id for due_ms unless it is armed already (an earlier deadline, or
 * a later one, is kept as it is). */
void coord_timers_arm_once(coord_timers_t *ts, int id, int64_t due_ms);
static inline void coord_timers_disarm(coord_timers_t *ts, int id) { coord_timers_arm(ts, id, 0); }

/* id's deadline, 0 when not armed. */
int64_t coord_timers_due_ms(const coord_timers_t *ts, int id);
/* 1 if id is armed and its deadline is now or past. */
int coord_timers_is_due(const coord_timers_t *ts, int id, int64_t now);

/* The earliest deadline of the armed timers in any of groups, 0: none. */
int64_t coord_timers_earliest(const coord_timers_t *ts, unsigned groups);

/* The timers of groups due at now, in firing order (deadline, then arming
 * order) into ids (COORD_TIMERS_MAX entries); returns how many. */
int coord_timers_due(const coord_timers_t *ts, int64_t now, unsigned groups, int *ids);

/* How long to sleep from now until the earliest deadline in groups, at
 * most max_ms (the same when nothing is armed); 0 when one is past. */
int64_t coord_timers_wait_ms(const coord_timers_t *ts, unsigned groups, int64_t now,
                             int64_t max_ms);

#endif
