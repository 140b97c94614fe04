/* coord_standby.h: standbys (pure: no I/O). For every worker that owns
 * something, where its partitions and keys would go if it left now: the
 * same assignment computed again with that worker drained and the new
 * assignment as the previous one. Each such successor is published as the
 * resources' standby (assignment/<standby> "standby": {"<owner>": ...});
 * the standby takes them the moment the owner's member node is marked
 * leaving or deleted, without waiting for the coordinator, and the
 * coordinator's own rebalance after that departure names the same worker
 * (it runs the same computation), so nothing moves twice. The claims and
 * the sink's fence stay the only gates: a standby that acts on news the
 * coordinator later contradicts is revoked like any owner. With in->hint
 * (the standbys published before) a standby stays named while it has room:
 * the departure's rebalance takes the same hint, so it still names the
 * published standby. */
#ifndef COORD_STANDBY_H
#define COORD_STANDBY_H

#include "assignment.h"
#include "baton_codec.h"
#include "coord_keys.h"

#include <stddef.h>
#include <stdint.h>

/* Sticky and range partitions take the direct rule (coord_standby.c: no
 * assignment per owner, no budget). What is still simulated (one
 * assignment per owner: roundrobin and rendezvous partitions, and keys) is
 * skipped when owners x (rows + workers) is above this: it must not slow a
 * big group's rebalance by seconds. */
#define COORD_STANDBY_BUDGET 2000000

/* Rows as baton_resource.h lays them out: partition p is row p, key k is
 * row in->npartitions + k. The input: the rebalance's partition input (its
 * prev is ignored: next is the previous assignment of the simulated
 * departure), the keys' members (kw, nw entries, as coord_keys_assign takes
 * them) and next[row], every row's owner. sb[row] receives the standby's
 * worker index, or -1 (none: unowned, no other eligible worker, or a
 * budget skip). Returns 0, 1 if a kind (partitions or keys) was skipped
 * for the budget (its entries -1), or BATON_INVALID with a message in
 * errstr. */
int coord_standby_compute(const baton_assign_input_t *in, char *const *keys, size_t nkeys,
                          const coord_key_worker_t *kw, const int *next, int *sb, char *errstr,
                          size_t errstr_size);

/* The definition itself, for every strategy and without a budget: the
 * assignment once per owner, drained. coord_standby_compute gives the same
 * answer (tests/unit/test_coord_standby.c compares them); returns 0 or
 * BATON_INVALID. */
int coord_standby_simulate(const baton_assign_input_t *in, char *const *keys, size_t nkeys,
                           const coord_key_worker_t *kw, const int *next, int *sb, char *errstr,
                           size_t errstr_size);

/* Per-worker standby lists: owner o's partitions are
 * order[start[o]..start[o+1]) (ascending, as the coordinator lays out its
 * publish); next/sb per row as above, over npartitions + nkeys rows.
 * lists[s] (nw entries, each a heap array of nlists[s] standbys sorted by
 * owner id, as the worker ids are sorted) is what worker s stands by for.
 * ids[k] is worker k's id. Free each with baton_standby_free, then
 * lists/nlists. */
void coord_standby_lists(const int *start, const int *order, int32_t npartitions, char *const *keys,
                         size_t nkeys, const int *next, const int *sb, const char *const *ids,
                         size_t nw, baton_standby_t ***lists, size_t **nlists);

#endif
