/* plan.h: the plan step of a rebalance (pure: no I/O).
 *
 * The coordinator reads a snapshot of its group (members, settings, keys,
 * what is published) and hands it here; the plan says what to publish: the
 * next assignment of partitions and keys, each resource's standby, the
 * generation, and the node diff (which assignment/<id> nodes to create,
 * rewrite or delete). The coordinator then only writes the diff (fenced)
 * and reports it. Everything in between is testable without ZooKeeper
 * (tests/unit/test_plan.c, tests/fuzz/fuzz_plan.c).
 *
 *   snapshot --baton_plan_compute--> plan --publish_chunks--> ZooKeeper
 */
#ifndef BATON_PLAN_H
#define BATON_PLAN_H

#include "assignment.h"
#include "baton/baton.h"
#include "baton_codec.h"

#include <stddef.h>
#include <stdint.h>

/* One member as the plan sees it: live, or absent within its leave grace
 * (flags BATON_ASSIGN_ABSENT: its resources stay put). */
typedef struct {
    const char *id;
    int capacity;
    const char *rack;  /* "" or NULL: none */
    int flags;         /* BATON_ASSIGN_DRAINED (drained, or leaving), BATON_ASSIGN_ABSENT */
    int no_partitions; /* takes keys only (a baton-run, a library member) */
    int keys_filter;   /* takes only the keys in keys */
    const char *keys;  /* comma-separated, when keys_filter */
} baton_plan_member_t;

/* One assignment/<id> node as published (read back, or cached). */
typedef struct {
    const char *id;
    const int32_t *partitions; /* ascending */
    size_t npartitions;
    char *const *keys; /* sorted */
    size_t nkeys;
    const baton_standby_t *standby; /* sorted by owner */
    size_t nstandby;
    int64_t generation; /* the generation the node was written with */
    int valid;          /* 0: malformed (rewritten) */
} baton_plan_published_t;

typedef struct {
    baton_strategy_t strategy;
    int32_t npartitions;
    const baton_plan_member_t *members; /* sorted by id, ids unique */
    size_t nmembers;
    const char *const *pin_of; /* [npartitions]: the worker a partition is pinned to, or NULL */
    char *const *keys;         /* the group's named keys, sorted */
    size_t nkeys;
    const baton_plan_published_t *published;
    size_t npublished;
    const char *const *leader_rack;  /* [npartitions] each partition's leader rack, or NULL */
    baton_rack_policy_t rack_policy; /* what racks may cost (tiebreak: 0) */
    int standbys;                    /* name standbys (not with a leave grace) */
    /* With standbys: name none if any row moves (the group still forms:
     * coordinator.c, standby_defer); baton_plan_t.standby_deferred says so. */
    int standbys_unless_moved;
    int republish;      /* write every member's node with the new generation */
    int64_t generation; /* /assignment's generation */
} baton_plan_snapshot_t;

typedef enum { BATON_PLAN_CREATE, BATON_PLAN_SET, BATON_PLAN_DELETE } baton_plan_op_kind_t;

/* One node to write: assignment/<id>. */
typedef struct {
    baton_plan_op_kind_t kind;
    const char *id; /* the member's or the published node's (borrowed) */
    char *payload;  /* the encoded baton_worker_assignment_t; NULL for a delete */
    long delta;     /* resources gained (negative: lost); the diff is sorted by it */
} baton_plan_op_t;

typedef struct {
    int64_t generation; /* of this plan's writes: past every generation written */
    /* One entry per row, rows as baton_resource.h lays them out: partition
     * p is row p, the snapshot's key k is row npartitions + k. */
    size_t nrows;  /* npartitions + nkeys */
    int *next;     /* the member index owning the row, or -1 */
    int *prev;     /* the published owner's member index, or -1 (gone or none) */
    int *prev_pub; /* the published node that lists the row, or -1 */
    int *pins;     /* the member index the row is pinned to, or -1 (keys: always) */
    int *hint;     /* partitions: the member index the published nodes name standby for
                    * it, or -1 (the assignor's hint: standbys stay where they are) */
    /* Member k's partitions are order[start[k]..start[k+1]), ascending. */
    int *start, *order;
    /* What member k stands by for: standby[k][0..nstandby[k]). */
    baton_standby_t **standby;
    size_t *nstandby;
    /* The node diff, losers first (then by id), so a partition's new owner
     * is written after its old owner lets go of it. Empty: nothing to
     * publish. */
    baton_plan_op_t *ops;
    size_t nops;
    int moved;  /* partition rows whose owner changed */
    int kmoved; /* key rows whose owner changed */
    baton_assign_stats_t stats;
    int standby_skipped;  /* over COORD_STANDBY_BUDGET: no standbys named */
    int standby_deferred; /* standbys_unless_moved and rows moved: none named */
    const char *failed;   /* on an error: "partitions", "keys" or "standby" */
    int64_t standby_ms;   /* what naming the standbys took */
    int64_t diff_ms;      /* the node diff, encoding the nodes to write included */
} baton_plan_t;

/* The row of the snapshot's key k, and whether a row is a key's. */
static inline size_t baton_plan_key_row(const baton_plan_snapshot_t *s, size_t k) {
    return (size_t)s->npartitions + k;
}
static inline int baton_plan_row_is_key(const baton_plan_snapshot_t *s, size_t row) {
    return row >= (size_t)s->npartitions;
}

/* The one rule for who may take a row: a partition needs a member that
 * takes partitions (not keys-only); a key, a member without a keys filter
 * or whose filter lists it. Drains and absences are the assignor's
 * business (flags), not this rule's. */
int baton_plan_member_takes(const baton_plan_member_t *m, const baton_resource_t *r);

/* Computes the plan of snapshot s into *out (zeroed first). Returns 0, or
 * BATON_INVALID with a message in errstr (a snapshot the assignor refuses).
 * Release it with baton_plan_release in either case. */
int baton_plan_compute(const baton_plan_snapshot_t *s, baton_plan_t *out, char *errstr,
                       size_t errstr_size);
void baton_plan_release(baton_plan_t *p, size_t nmembers);

/* The member's node as the plan has it (for pc caches and tests): fills
 * wa's partitions (heap), keys (borrowed from s) and standby (borrowed
 * from p); free wa->partitions and wa->keys (the array) only. */
void baton_plan_node(const baton_plan_snapshot_t *s, const baton_plan_t *p, size_t k,
                     baton_worker_assignment_t *wa);

#endif
