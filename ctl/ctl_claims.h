/* ctl_claims.h: who owns each resource of a group, as batonctl reads it.
 *
 * Partitions and named keys are rows of one resource table
 * (baton_resource.h); this reads the claims queue of every row in two
 * pipelined rounds (every listing, then every owner claim) and resolves a
 * queue whose owner claim went between the two synchronously. The owner is
 * the lowest claim's worker (baton_layout.h), its epoch that claim's czxid;
 * `status`, `partitions`, `watch` and `keys list` all show what this reads. */
#ifndef CTL_CLAIMS_H
#define CTL_CLAIMS_H

#include "baton_resource.h"
#include "baton_zk.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int missing;    /* no claims node */
    size_t nclaims; /* claim nodes listed (other children are warned about) */
    char *lowest;   /* the lowest claim's name, heap, or NULL */
    char *owner;    /* its worker, heap, or NULL (none, or malformed) */
    int64_t epoch;  /* its czxid; valid with have_epoch */
    int64_t ctime;  /* its ctime (ms); valid with have_epoch */
    int have_epoch;
} ctl_queue_t;

/* Appends {"path", "problem"} to warnings. */
void ctl_warning_add(json_t *warnings, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reads the queue of every row of t into q[0..t->n) (zeroed first). A
 * missing claims node, a child that is no claim and a malformed owner claim
 * are warnings; a ZooKeeper error is returned (with a message naming the
 * path). Release q with ctl_queues_release either way. */
int ctl_claims_gather(baton_zk_t *zk, baton_res_table_t *t, ctl_queue_t *q, json_t *warnings,
                      char *errstr, size_t errstr_size);
void ctl_queues_release(ctl_queue_t *q, size_t n);

/* The state a row shows: "unowned" (no claim), "active" (its owner is the
 * member assigned it) or "handoff". */
const char *ctl_queue_state(const ctl_queue_t *q, const char *assigned);

#endif
