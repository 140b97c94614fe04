/* coord_history.h: the leader's record of ownership changes, appended to
 * the bounded ring <base>/history (baton_codec.h) shortly after each publish
 * (the coordinator defers the write so it does not compete with the claims
 * the publish sets off), for `batonctl history`.
 *
 * Reasons: the publish path's move_reason() gives new, leave, rebalance,
 * pin and drain; a partition that goes to a worker absent from the
 * previous publication is recorded as "join" (when it was "new" or
 * "rebalance"). A departed worker's partitions are "leave" when its member
 * node was marked leaving (a graceful leave) and "crash" otherwise (a
 * crash, a session expiry, an eviction); the handoff watchdog records
 * "forced".
 *
 * Runs on the coordinator's main thread; not thread-safe. */
#ifndef COORD_HISTORY_H
#define COORD_HISTORY_H

#include "baton_codec.h"
#include "baton_zk.h"

#include <stdint.h>

typedef struct coord_history_s coord_history_t;

coord_history_t *coord_history_new(void);
void coord_history_destroy(coord_history_t *h);
/* A worker present in the previous publication (call before _add). */
void coord_history_prev_worker(coord_history_t *h, const char *id);
/* One move of partition p (or of key, when not NULL) from -> to ("-" or
 * NULL: none) at generation gen,
 * with the publish path's reason. */
void coord_history_add(coord_history_t *h, int32_t p, const char *key, const char *from,
                       const char *to, int64_t gen, const char *reason);
/* The moves added and not flushed yet, *n of them (tests). */
const baton_history_entry_t *coord_history_pending(const coord_history_t *h, size_t *n);
/* Moves from's moves to the end of into (from keeps its workers). */
void coord_history_merge(coord_history_t *into, coord_history_t *from);
/* Appends the moves to <base>/history, dropping the oldest beyond the
 * bound, in a multi that also checks fence_node (our candidate node) still
 * exists: a deposed leader records nothing. Retries a concurrent update a
 * few times. Returns BATON_OK (also when there was nothing to add), or a
 * baton error; a failure loses these entries only (the assignment itself
 * is already published), so callers log and go on. */
int coord_history_flush(coord_history_t *h, baton_zk_t *zk, const char *base,
                        const char *fence_node);

#endif
