/* baton_zkbatch.h: pipelined ZooKeeper requests, the one batcher of
 * batonctl, the coordinator and the member library: whole batches of reads
 * (children, get), and a batch object for mixed requests (creates, sets,
 * watched reads) that the member library sends in one flight.
 *
 * A status of a group with thousands of partitions needs two reads per
 * partition, a leader reading what it published one read per member; made
 * one at a time that is thousands of round trips. These
 * helpers keep up to a window of asynchronous reads in flight and wait for
 * them all, so the cost is bandwidth, not latency.
 *
 * @locality the zk owner thread (the caller blocks until every read has
 * completed). The completions run on libzookeeper_mt's completion thread and
 * only copy the reply into the caller's slot: no ZooKeeper call, no I/O. Only
 * the watch_ calls leave watches. */
#ifndef BATON_ZKBATCH_H
#define BATON_ZKBATCH_H

#include "baton_zk.h"

#include <stddef.h>

/* The result of one read. err is a baton_err_t (BATON_NOTFOUND when the node
 * does not exist). After a get: data (NUL-terminated heap copy, "" for a
 * node without data), len and stat. After a children read: names (sorted by
 * name) and count. After a create: created (the path of the node made)
 * and stat; after an exists or a set: stat. Owned by the slot: free with
 * baton_zkread_release. */
typedef struct {
    int err;
    char *data;
    size_t len;
    struct Stat stat;
    char **names;
    size_t count;
    char *created;
} baton_zkread_t;

/* Reads the data and stat of paths[0..n) into out[0..n) (caller-allocated,
 * zeroed or released). Returns when every read has completed, with up to a
 * window of them in flight at once. */
void baton_zkbatch_get(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out);
/* Lists the children of paths[0..n) into out[0..n), each list sorted. */
void baton_zkbatch_children(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out);
/* The same, each leaving a watch delivered through baton_zk_watcher onto the
 * session's event queue: a children watch (a read that finds no node leaves
 * none: watch its creation with an exists watch), or an exists watch (data
 * changes, creation, deletion; BATON_NOTFOUND still leaves it). These leave
 * watches, unlike the rest of this API. */
void baton_zkbatch_watch_children(baton_zk_t *zk, char *const *paths, size_t n,
                                  baton_zkread_t *out);
void baton_zkbatch_watch_exists(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out);
/* baton_zkbatch_get, each read leaving a data watch (data changes,
 * deletion) where it found the node; BATON_NOTFOUND leaves none. */
void baton_zkbatch_watch_get(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out);
/* Frees what a read holds and zeroes it; safe on a zeroed slot. */
void baton_zkread_release(baton_zkread_t *r);

/* A directory's children with their data: names (sorted), the full path of
 * each and its read. */
typedef struct {
    char **names;
    char **paths;
    baton_zkread_t *reads;
    size_t n;
} baton_zkdir_t;

/* Lists dir, then reads every child (baton_zkbatch_get) into *out (zeroed
 * first). Returns the listing's error (BATON_NOTFOUND: no such directory;
 * *out is empty then); each child's own result is in its read (a child
 * deleted since the listing: BATON_NOTFOUND there). */
int baton_zkdir_read(baton_zk_t *zk, const char *dir, baton_zkdir_t *out);
/* Frees what baton_zkdir_read filled (names too, unless the caller took them
 * and set names to NULL) and zeroes it. */
void baton_zkdir_release(baton_zkdir_t *d);

/* ---- a batch of mixed requests ---------------------------------------------
 * The member library sends a poll's claims in one flight: creates, the
 * listings of their claims directories, watched exists; its graceful leave
 * a set. Each request's result goes to a slot of its own. Unlike the calls
 * above, the wait is bounded: a member must not hang on a server that stops
 * answering. The client completes every request it queued (with a
 * connection loss if it must), so the bound is a safety net only: past it
 * the batch belongs to its last completion, which frees it.
 *
 * @locality the owner thread (new, add_*, wait, slot, free); the
 * completions, on libzookeeper_mt's completion thread, only copy the reply
 * into the slot. No window: the caller bounds what it adds. */
typedef struct baton_zkbatch_s baton_zkbatch_t;

/* A batch of n slots (each takes one request) on zk's session. A slot no
 * request went to reads BATON_INTERNAL. */
baton_zkbatch_t *baton_zkbatch_new(baton_zk_t *zk, size_t n);
/* Sends one request whose result goes to slot i. A request the client does
 * not queue completes at once with its error in the slot. */
void baton_zkbatch_add_create(baton_zkbatch_t *b, size_t i, const char *path, const char *data,
                              size_t len, int flags);
void baton_zkbatch_add_children(baton_zkbatch_t *b, size_t i, const char *path, int watch);
void baton_zkbatch_add_exists(baton_zkbatch_t *b, size_t i, const char *path, int watch);
void baton_zkbatch_add_set(baton_zkbatch_t *b, size_t i, const char *path, const char *data,
                           size_t len, int version);
/* Waits for every request sent, at most timeout_ms (< 0: without bound).
 * Returns 1 when all completed; 0 when it gave up: b then belongs to its
 * last completion (which frees it) and the caller must not touch b again. */
int baton_zkbatch_wait(baton_zkbatch_t *b, int timeout_ms);
/* Slot i's result, after a wait that returned 1. */
const baton_zkread_t *baton_zkbatch_slot(const baton_zkbatch_t *b, size_t i);
/* Frees b and its results (after a wait that returned 1; NULL is a no-op). */
void baton_zkbatch_free(baton_zkbatch_t *b);

#endif
