/* baton_zk.h: a ZooKeeper session for one owner thread.
 *
 * libzookeeper_mt delivers watches and session events on its completion
 * thread, which must never block. This wrapper's watcher only copies each
 * event onto a queue and writes a byte to a pipe; the owner thread (the one
 * that created the session) polls baton_zk_fd() and drains events with
 * baton_zk_next_event(), then makes its synchronous calls itself. Every
 * synchronous call here is made from the owner thread only.
 *
 * Errors are mapped onto baton_err_t: ZNONODE -> BATON_NOTFOUND, ZNODEEXISTS
 * -> BATON_EXISTS, ZBADVERSION/ZNOTEMPTY -> BATON_CONFLICT, connection loss
 * and timeouts -> BATON_CONNECTION (retriable), an expired or closed session
 * -> BATON_EXPIRED (fatal for this handle: make a new one), ZNOAUTH (an
 * ACL refused the write: baton_zk_auth.h) -> BATON_DENIED. */
#ifndef BATON_ZK_H
#define BATON_ZK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <zookeeper.h>

/* baton_zk_auth_t: the identity a session authenticates as (--zk-auth). */
#include "baton_zk_auth.h"

typedef struct baton_zk_s baton_zk_t;

typedef struct {
    int type;   /* ZOO_SESSION_EVENT, ZOO_CREATED_EVENT, ZOO_DELETED_EVENT... */
    int state;  /* ZOO_CONNECTED_STATE, ZOO_EXPIRED_SESSION_STATE... */
    char *path; /* heap, owned by the event: free with baton_zk_event_release */
} baton_zk_event_t;

/* Connects and waits up to connect_timeout_ms for the session to be
 * established. Returns BATON_OK and *out, or BATON_TIMEOUT/BATON_CONNECTION
 * with a message in errstr. auth (NULL: no identity, no root check) is
 * copied: with an identity the session authenticates first, its creates
 * carry the identity's ACL (baton_zk_acl), and a root this identity may not
 * write is BATON_DENIED with a message naming the user (never the
 * password). */
int baton_zk_connect(const char *hosts, int session_timeout_ms, int connect_timeout_ms,
                     const baton_zk_auth_t *auth, baton_zk_t **out, char *errstr,
                     size_t errstr_size);
/* Closes the session (its ephemeral nodes go at once) and frees everything. */
void baton_zk_destroy(baton_zk_t *zk);

/* A descriptor that is readable while events are queued. */
int baton_zk_fd(const baton_zk_t *zk);
/* Pops one queued event; returns 1 if one was popped, 0 if none. */
int baton_zk_next_event(baton_zk_t *zk, baton_zk_event_t *ev);
void baton_zk_event_release(baton_zk_event_t *ev);

zhandle_t *baton_zk_handle(const baton_zk_t *zk);
/* The ACL every create on this session must pass: its identity's
 * (baton_zk_auth_acl). */
const struct ACL_vector *baton_zk_acl(const baton_zk_t *zk);
int64_t baton_zk_session_id(const baton_zk_t *zk);
/* The negotiated session timeout in milliseconds. */
int baton_zk_session_timeout(const baton_zk_t *zk);
/* 1 while the session is connected. */
int baton_zk_connected(const baton_zk_t *zk);
/* 1 once the session has expired or failed authentication. */
int baton_zk_expired(const baton_zk_t *zk);
/* When (baton_now_ms) the latest request the server answered was sent --
 * its answer renewed the session after that instant (baton_silence.h);
 * 0 before any. Every synchronous call here notes its own; others note
 * theirs with baton_zk_note_answer(zk, sent, rc), which returns rc. */
int64_t baton_zk_answered_ms(const baton_zk_t *zk);
int baton_zk_note_answer(baton_zk_t *zk, int64_t sent, int rc);

/* A wait hook: while the owner's thread waits for a ZooKeeper answer
 * (every call here, and baton_zkbatch_wait: each sends its request
 * asynchronously and waits for the completion), it runs
 * fn(arg) once the wait has lasted BATON_ZK_HOOK_GRACE_MS, then again
 * every time the ms fn returned have passed (at least 1, at most 50),
 * until the answer is in. A hook call in progress is never interrupted,
 * and a ZooKeeper call the hook itself makes waits without running it
 * again. So a worker goes on writing what it holds while its membership
 * waits for a round trip (a claim, a release, an assignment read): the
 * writes do not stop for the coordination of other partitions. fn runs on
 * the waiting thread; set it only on a handle one thread calls (NULL
 * removes it). */
typedef int (*baton_zk_wait_hook_fn)(void *arg);
#define BATON_ZK_HOOK_GRACE_MS 2
void baton_zk_set_wait_hook(baton_zk_t *zk, baton_zk_wait_hook_fn fn, void *arg);
/* For baton_zkbatch: waits on cond (lock held, as on return) until
 * ready(arg) holds or timeout_ms have passed (-1: no limit), running zk's
 * hook as above. Returns 1 once ready, 0 on the timeout. */
int baton_zk__wait(baton_zk_t *zk, pthread_mutex_t *lock, pthread_cond_t *cond,
                   int (*ready)(const void *), const void *arg, int timeout_ms);

/* Maps a ZooKeeper return code onto baton_err_t. */
int baton_zk_err(int rc);

/* The ZooKeeper client's log callback (zookeeper_init2): its lines become
 * baton log lines with lib=zookeeper, its level mapped, repeats collapsed. */
void baton_zk_log_cb(const char *message);
/* The watcher to pass to zoo_w* calls with the baton_zk_t as context, so the
 * event lands on the owner's queue. */
void baton_zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);

/* Reads a node. *data is a NUL-terminated heap copy (free it); *len its
 * length. stat may be NULL. With watch, a watch is left on the node. */
int baton_zk_get(baton_zk_t *zk, const char *path, int watch, char **data, size_t *len,
                 struct Stat *stat);
/* Lists children sorted by name. *names is a heap array of heap strings:
 * free with baton_zk_strings_free. */
int baton_zk_children(baton_zk_t *zk, const char *path, int watch, char ***names, size_t *count);
void baton_zk_strings_free(char **names, size_t count);

/* A synchronous multi: zoo_amulti, waited on (zoo_multi leaks its ops'
 * bookkeeping when the connection drops with it in flight; see
 * baton_zk.c). Except on a handle whose session is gone (expired, auth
 * failed): then ZINVALIDSTATE without calling it. The 3.8 C client's
 * zoo_amulti frees an uninitialised pointer when an op after the first
 * fails its path check, which an unrecoverable handle makes every op do
 * (seen as a bad free under AddressSanitizer in a coordinator resumed past
 * its session). The state can still turn between this check and the call;
 * the window is a few instructions wide. Returns a ZooKeeper code. */
int baton_zk_multi(baton_zk_t *zk, int count, const zoo_op_t *ops, zoo_op_result_t *results);
/* Exists with an optional watch (left even if the node does not exist). */
int baton_zk_exists(baton_zk_t *zk, const char *path, int watch, struct Stat *stat);
/* Creates a node; with a sequential mode the created path is copied into
 * created (may be NULL) and its stat (czxid = epoch) into stat (may be NULL). */
int baton_zk_create(baton_zk_t *zk, const char *path, const char *data, size_t len, int mode,
                    char *created, size_t created_size, struct Stat *stat);
/* Creates every missing persistent node along path (like mkdir -p). */
int baton_zk_mkdirs(baton_zk_t *zk, const char *path);
int baton_zk_set(baton_zk_t *zk, const char *path, const char *data, size_t len, int version,
                 struct Stat *stat);
int baton_zk_delete(baton_zk_t *zk, const char *path, int version);
/* zoo_async, waited for: the server we are connected to has caught up with
 * the leader for path, so a read after it sees every write committed
 * before (a create whose reply was lost through another server, say). */
int baton_zk_sync(baton_zk_t *zk, const char *path);

#endif
