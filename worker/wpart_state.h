/* wpart_state.h: the state of one partition in baton-worker (worker.c) and
 * which transitions between states are expected. Pure (no I/O, no worker):
 * tests/unit/test_wpart_state.c checks the table. worker.c changes a
 * partition's state only through wpart_set_state, which logs every
 * transition (event=partition_state, debug) and an unexpected one at warn.
 *
 * The usual life of a partition:
 *
 *   none -> [prefetching ->] fencing[_prefetched] -> fenced -> active
 *        -> releasing -> none
 *
 * with failed (a processor error) reachable from every owned state, and
 * none reachable from every other state (a stale fence or write, a release before
 * the fence, fetching ahead stopped). */
#ifndef BATON_WPART_STATE_H
#define BATON_WPART_STATE_H

typedef enum {
    /* Not ours, or let go. */
    WPART_NONE,
    /* Assigned to us, not acquired yet: fetched ahead from the sink's
     * next_offset, the messages held unprocessed (worker.c, on_assigned). */
    WPART_PREFETCHING,
    /* Acquired (we hold the lowest claim), the fence not run yet: it runs in
     * fence_pending, after the membership's poll. Nothing fetched. */
    WPART_FENCING,
    /* Acquired, the fence not run yet, and fetched ahead (as prefetching). */
    WPART_FENCING_PREFETCHED,
    /* Fenced and assigned in Kafka, nothing written yet: the first batch is
     * written at once, without waiting a linger. */
    WPART_FENCED,
    /* Fenced, assigned in Kafka, and written at least once. */
    WPART_ACTIVE,
    /* The processor failed: the claim is kept but nothing more is consumed
     * or written until the partition is released (worker.c, part_fail). */
    WPART_FAILED,
    /* on_released runs: the last batches are written before the claim goes
     * (not after a lost session), then the partition is let go. */
    WPART_RELEASING,
    WPART_NSTATES
} wpart_state_t;

/* The state's name in logs ("none", "fencing_prefetched", ...); "unknown"
 * for a value out of range. */
const char *wpart_state_name(wpart_state_t s);

/* 1 if from -> to is a transition the worker makes, 0 if not (from == to
 * included: setting the state it already has is not a transition). Values
 * out of range are never ok. */
int wpart_transition_ok(wpart_state_t from, wpart_state_t to);

/* Fenced with an epoch and assigned in Kafka (what the flag `active` meant
 * before the states had names): its epoch is published, its records are
 * written. */
static inline int wpart_owned(wpart_state_t s) {
    return s == WPART_FENCED || s == WPART_ACTIVE || s == WPART_FAILED || s == WPART_RELEASING;
}

/* Owned and not stopped by a processor error: records are buffered,
 * processed and flushed. */
static inline int wpart_consuming(wpart_state_t s) { return wpart_owned(s) && s != WPART_FAILED; }

/* Acquired, its fence still to run (fence_pending). */
static inline int wpart_fencing(wpart_state_t s) {
    return s == WPART_FENCING || s == WPART_FENCING_PREFETCHED;
}

/* Fetched ahead of the fence: Kafka's messages are held in pre. */
static inline int wpart_prefetched(wpart_state_t s) {
    return s == WPART_PREFETCHING || s == WPART_FENCING_PREFETCHED;
}

#endif
