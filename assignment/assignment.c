/* assignment.c: the pure partition assignor behind assignment.h. It turns a
 * previous assignment and a count of live workers into the next assignment
 * with the sticky, range or roundrobin strategy, without I/O or clocks. */
#include "assignment.h"

#include <stdlib.h>
#include <string.h>

#include "baton_err.h"
#include "baton_util.h"

static const char *const strategy_names[] = {
    [BATON_STRATEGY_STICKY] = "sticky",
    [BATON_STRATEGY_RANGE] = "range",
    [BATON_STRATEGY_ROUNDROBIN] = "roundrobin",
};

int baton_strategy_parse(const char *s, baton_strategy_t *out) {
    if (!s || !out)
        return BATON_INVALID;
    /* Exact, case-sensitive match: the name round-trips through the config
     * znode, and one spelling per strategy keeps those documents comparable. */
    for (size_t i = 0; i < BATON_ARRAY_SIZE(strategy_names); i++) {
        if (strcmp(s, strategy_names[i]) == 0) {
            *out = (baton_strategy_t)i;
            return BATON_OK;
        }
    }
    return BATON_INVALID;
}

/* Returns "unknown" for a value outside the enum rather than NULL, so a
 * caller can log it without a check. */
const char *baton_strategy_name(baton_strategy_t s) {
    if ((unsigned)s >= BATON_ARRAY_SIZE(strategy_names))
        return "unknown";
    return strategy_names[s];
}

/* Kafka's RangeAssignor for one topic: worker i owns one contiguous block and
 * the first P % W workers own one partition more than the rest. */
static void assign_range(int npartitions, int nworkers, int *next) {
    int base = npartitions / nworkers, extra = npartitions % nworkers, p = 0;
    for (int w = 0; w < nworkers; w++) {
        int len = base + (w < extra ? 1 : 0);
        for (int k = 0; k < len; k++)
            next[p++] = w;
    }
}

/* Kafka's RoundRobinAssignor for one topic with workers in index order. */
static void assign_roundrobin(int npartitions, int nworkers, int *next) {
    for (int p = 0; p < npartitions; p++)
        next[p] = p % nworkers;
}

typedef struct {
    int count; /* partitions the worker owned before */
    int index;
} worker_load_t;

/* Most loaded first, lower index first among equals: a total order, so qsort's
 * instability cannot make the result depend on the C library. */
static int load_cmp(const void *a, const void *b) {
    const worker_load_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* The sticky assignor.
 *
 * Every worker ends with a target t_i of q = floor(P/W) or q + 1, and exactly
 * r = P % W workers get q + 1. Worker i can keep at most min(c_i, t_i) of the
 * c_i partitions it owned, and every other partition must change owner, so a
 * target vector costs P - sum min(c_i, t_i) moves. A +1 raises that sum by one
 * exactly when it lands on a worker with c_i > q, so giving the r extra slots
 * to the r workers that own the most reaches the minimum over all balanced
 * targets. Keeping min(c_i, t_i) partitions per worker then attains it: the
 * rest (the excess plus the unowned) fill the deficits exactly, because the
 * targets sum to P.
 *
 * Kept partitions are each worker's lowest-numbered ones and the pool is
 * handed out in ascending partition order to workers in ascending index, so
 * the result depends on nothing but the input. From an empty previous
 * assignment this yields the same contiguous blocks as the range strategy. */
static void assign_sticky(int npartitions, const int *prev, int nworkers, int *next) {
    int *target = xcalloc((size_t)nworkers, sizeof(*target));
    int *held = xcalloc((size_t)nworkers, sizeof(*held));
    worker_load_t *load = xmalloc((size_t)nworkers * sizeof(*load));
    int *pool = xmalloc((size_t)npartitions * sizeof(*pool));
    int quota = npartitions / nworkers, extra = npartitions % nworkers, npool = 0;

    for (int w = 0; w < nworkers; w++)
        load[w] = (worker_load_t){.count = 0, .index = w};
    if (prev)
        for (int p = 0; p < npartitions; p++)
            if (prev[p] >= 0)
                load[prev[p]].count++;
    qsort(load, (size_t)nworkers, sizeof(*load), load_cmp);
    for (int k = 0; k < nworkers; k++)
        target[load[k].index] = quota + (k < extra ? 1 : 0);

    /* One ascending pass keeps each worker's lowest-numbered partitions up to
     * its target and collects the rest, already in ascending order. */
    for (int p = 0; p < npartitions; p++) {
        int owner = prev ? prev[p] : -1;
        if (owner >= 0 && held[owner] < target[owner]) {
            next[p] = owner;
            held[owner]++;
        } else {
            pool[npool++] = p;
        }
    }

    int w = 0;
    for (int k = 0; k < npool; k++) {
        /* The targets sum to P, so a worker below target always remains while
         * the pool is not empty and w never runs past nworkers. */
        while (held[w] >= target[w])
            w++;
        next[pool[k]] = w;
        held[w]++;
    }

    free(pool);
    free(load);
    free(held);
    free(target);
}

int baton_assign(baton_strategy_t strategy, int npartitions, const int *prev, int nworkers,
                 int *next) {
    if (npartitions < 0 || nworkers < 0 || (npartitions > 0 && !next))
        return BATON_INVALID;
    if ((unsigned)strategy >= BATON_ARRAY_SIZE(strategy_names))
        return BATON_INVALID;
    /* Validate everything before writing, so a refused call leaves next as
     * the caller had it. */
    if (prev)
        for (int p = 0; p < npartitions; p++)
            if (prev[p] < -1 || prev[p] >= nworkers)
                return BATON_INVALID;

    if (nworkers == 0) {
        /* Every prev entry is -1 here (checked above), so nothing changed. */
        for (int p = 0; p < npartitions; p++)
            next[p] = -1;
        return 0;
    }

    switch (strategy) {
    case BATON_STRATEGY_STICKY:
        assign_sticky(npartitions, prev, nworkers, next);
        break;
    case BATON_STRATEGY_RANGE:
        assign_range(npartitions, nworkers, next);
        break;
    case BATON_STRATEGY_ROUNDROBIN:
        assign_roundrobin(npartitions, nworkers, next);
        break;
    }

    int moved = 0;
    for (int p = 0; p < npartitions; p++)
        if (next[p] != (prev ? prev[p] : -1))
            moved++;
    return moved;
}
