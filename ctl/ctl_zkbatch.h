/* ctl_zkbatch.h: pipelined ZooKeeper reads for batonctl.
 *
 * A status of a group with thousands of partitions needs two reads per
 * partition; made one at a time that is thousands of round trips. These
 * helpers keep up to a window of asynchronous reads in flight and wait for
 * them all, so the cost is bandwidth, not latency.
 *
 * @locality the zk owner thread (the caller blocks until every read has
 * completed). The completions run on libzookeeper_mt's completion thread and
 * only copy the reply into the caller's slot: no ZooKeeper call, no I/O. No
 * watches are left. */
#ifndef CTL_ZKBATCH_H
#define CTL_ZKBATCH_H

#include "baton_zk.h"

#include <stddef.h>

/* The result of one read. err is a baton_err_t (BATON_NOTFOUND when the node
 * does not exist). After a get: data (NUL-terminated heap copy, "" for a
 * node without data), len and stat. After a children read: names (sorted by
 * name) and count. Owned by the slot: free with ctl_zkread_release. */
typedef struct {
    int err;
    char *data;
    size_t len;
    struct Stat stat;
    char **names;
    size_t count;
} ctl_zkread_t;

/* Reads the data and stat of paths[0..n) into out[0..n) (caller-allocated,
 * zeroed or released). Returns when every read has completed. */
void ctl_zkbatch_get(baton_zk_t *zk, char *const *paths, size_t n, ctl_zkread_t *out);
/* Lists the children of paths[0..n) into out[0..n), each list sorted. */
void ctl_zkbatch_children(baton_zk_t *zk, char *const *paths, size_t n, ctl_zkread_t *out);
/* Frees what a read holds and zeroes it; safe on a zeroed slot. */
void ctl_zkread_release(ctl_zkread_t *r);

/* A directory's children with their data: names (sorted), the full path of
 * each and its read. */
typedef struct {
    char **names;
    char **paths;
    ctl_zkread_t *reads;
    size_t n;
} ctl_zkdir_t;

/* Lists dir, then reads every child (ctl_zkbatch_get) into *out (zeroed
 * first). Returns the listing's error (BATON_NOTFOUND: no such directory;
 * *out is empty then); each child's own result is in its read (a child
 * deleted since the listing: BATON_NOTFOUND there). */
int ctl_zkdir_read(baton_zk_t *zk, const char *dir, ctl_zkdir_t *out);
/* Frees what ctl_zkdir_read filled (names too, unless the caller took them
 * and set names to NULL) and zeroes it. */
void ctl_zkdir_release(ctl_zkdir_t *d);

#endif
