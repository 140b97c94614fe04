/* assignment.h: the pure partition assignor. No I/O, no clock, deterministic:
 * the same input always yields the same output.
 *
 * Workers are identified by their index in the caller's array (the
 * coordinator sorts live worker ids so indices are stable for a given set).
 * A previous owner that is no longer live is given as -1. */
#ifndef BATON_ASSIGNMENT_H
#define BATON_ASSIGNMENT_H

#include <stddef.h>

typedef enum {
    BATON_STRATEGY_STICKY = 0,     /* balanced, moves only what balance needs */
    BATON_STRATEGY_RANGE = 1,      /* Kafka's range: contiguous blocks */
    BATON_STRATEGY_ROUNDROBIN = 2, /* Kafka's roundrobin: p -> p mod W */
} baton_strategy_t;

/* Parses "sticky", "range", "roundrobin"; returns 0 or BATON_INVALID. */
int baton_strategy_parse(const char *s, baton_strategy_t *out);
/* The strategy's name as baton_strategy_parse() reads it. */
const char *baton_strategy_name(baton_strategy_t s);

/* Computes the next assignment.
 *
 * npartitions >= 0 partitions numbered 0..npartitions-1; nworkers >= 0 live
 * workers. prev[p] is the live previous owner's index or -1 (prev may be NULL:
 * nothing owned). next (caller-allocated, npartitions entries) receives the
 * new owner index per partition, or -1 for every partition when nworkers is 0.
 *
 * Balance: every worker ends with floor(P/W) or ceil(P/W) partitions.
 * Sticky: the number of partitions whose owner differs from a live previous
 * owner is the minimum that reaches that balance; a partition with no live
 * previous owner goes to a worker below its quota.
 *
 * Returns the number of partitions whose owner changed (including newly owned
 * ones), or BATON_INVALID on a bad argument (prev index out of range). */
int baton_assign(baton_strategy_t strategy, int npartitions, const int *prev, int nworkers,
                 int *next);

#endif
