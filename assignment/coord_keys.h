/* coord_keys.h: assigns a group's named keys over its members (pure: no
 * I/O). Keys go through the same assignor (assignment.h) and strategy as
 * partitions. A member may take only some keys (its filter, e.g. a baton-run
 * for one key): keys are grouped by the set of members eligible for them,
 * and each group is assigned over exactly that set, so balance and minimal
 * movement hold within every group. A key previously held by an absent
 * worker (within its leave grace) stays with it. */
#ifndef COORD_KEYS_H
#define COORD_KEYS_H

#include "assignment.h"

#include <stddef.h>

/* One member as key assignment sees it. */
typedef struct {
    const char *id;
    int capacity;
    int flags;        /* BATON_ASSIGN_DRAINED | BATON_ASSIGN_ABSENT */
    int keys_filter;  /* 0: every key; 1: only those in keys */
    const char *keys; /* comma-separated, when keys_filter */
} coord_key_worker_t;

/* next[k] (nkeys entries) receives the worker index owning keys[k], or -1
 * (no eligible member). prev[k] is the previous owner's index or -1.
 * Returns the number of keys whose owner changed, or BATON_INVALID. */
int coord_keys_assign(baton_strategy_t strategy, char *const *keys, size_t nkeys,
                      const coord_key_worker_t *w, size_t nw, const int *prev, int *next,
                      char *errstr, size_t errstr_size);

/* 1 if the comma-separated list has key. */
int coord_keys_has(const char *list, const char *key);

/* 1 if a member with this filter (keys_filter 0: every key) may take key:
 * the eligibility rule of keys, shared with the plan's
 * baton_plan_member_takes. */
int coord_keys_takes(int keys_filter, const char *keys, const char *key);

#endif
