/* coord_timers.c: the deadline set of coord_timers.h. */
#include "coord_timers.h"

#include <string.h>

void coord_timers_init(coord_timers_t *ts) { memset(ts, 0, sizeof(*ts)); }

int coord_timers_add(coord_timers_t *ts, const char *name, unsigned groups) {
    if (ts->n >= COORD_TIMERS_MAX)
        return -1;
    ts->t[ts->n] = (coord_timer_t){.name = name, .groups = groups};
    return ts->n++;
}

static coord_timer_t *timer_at(coord_timers_t *ts, int id) {
    return id >= 0 && id < ts->n ? &ts->t[id] : NULL;
}

void coord_timers_arm(coord_timers_t *ts, int id, int64_t due_ms) {
    coord_timer_t *t = timer_at(ts, id);
    if (!t)
        return;
    t->due_ms = due_ms > 0 ? due_ms : 0;
    t->seq = ++ts->seq;
}

void coord_timers_arm_once(coord_timers_t *ts, int id, int64_t due_ms) {
    coord_timer_t *t = timer_at(ts, id);
    if (t && !t->due_ms)
        coord_timers_arm(ts, id, due_ms);
}

int64_t coord_timers_due_ms(const coord_timers_t *ts, int id) {
    return id >= 0 && id < ts->n ? ts->t[id].due_ms : 0;
}

int coord_timers_is_due(const coord_timers_t *ts, int id, int64_t now) {
    int64_t due = coord_timers_due_ms(ts, id);
    return due && now >= due;
}

int64_t coord_timers_earliest(const coord_timers_t *ts, unsigned groups) {
    int64_t best = 0;
    for (int i = 0; i < ts->n; i++) {
        const coord_timer_t *t = &ts->t[i];
        if (t->due_ms && (t->groups & groups) && (!best || t->due_ms < best))
            best = t->due_ms;
    }
    return best;
}

/* a fires before b */
static int fires_before(const coord_timer_t *a, const coord_timer_t *b) {
    return a->due_ms != b->due_ms ? a->due_ms < b->due_ms : a->seq < b->seq;
}

int coord_timers_due(const coord_timers_t *ts, int64_t now, unsigned groups, int *ids) {
    int n = 0;
    for (int i = 0; i < ts->n; i++) {
        const coord_timer_t *t = &ts->t[i];
        if (!t->due_ms || !(t->groups & groups) || now < t->due_ms)
            continue;
        int j = n++; /* insertion: at most COORD_TIMERS_MAX */
        while (j > 0 && fires_before(t, &ts->t[ids[j - 1]])) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = i;
    }
    return n;
}

int64_t coord_timers_wait_ms(const coord_timers_t *ts, unsigned groups, int64_t now,
                             int64_t max_ms) {
    int64_t due = coord_timers_earliest(ts, groups);
    if (!due || due - now >= max_ms)
        return max_ms;
    return due > now ? due - now : 0;
}
