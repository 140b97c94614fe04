/* baton_zk.c: ZooKeeper session wrapper; the watcher hands events to the
 * owner thread through a queue and a pipe (see baton_zk.h). */
#include "baton_zk.h"

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "baton_zk_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How often the client may resolve the connect string's host names while
 * connected (zoo_set_servers_resolution_delay; see baton_zk_connect). */
#define BATON_ZK_RESOLVE_MS 60000

typedef struct zk_event_node_s {
    baton_zk_event_t ev;
    struct zk_event_node_s *next;
} zk_event_node_t;

struct baton_zk_s {
    zhandle_t *zh;
    int pipefd[2];
    pthread_mutex_t lock; /* protects the queue and the state fields below */
    zk_event_node_t *head, *tail;
    int connected;
    int expired;
    baton_zk_auth_t *auth; /* our copy of the identity, or NULL */
    /* The log sink current when the session was made (a membership
     * handle's, baton_log.h), or NULL; and the log slot routing the
     * client's lines of this handle to it, or -1. */
    const baton_log_sink_t *log;
    int log_slot;
    /* The send time of the latest request the server answered (the
     * owner's calls and batches): baton_zk_answered_ms. */
    _Atomic int64_t answered_ms;
    /* The owner's wait hook (baton_zk_set_wait_hook); in_hook while it
     * runs, so a wait inside it does not run it again. */
    baton_zk_wait_hook_fn hook;
    void *hook_arg;
    int in_hook;
};

/* A return code the server sent (not the client giving up). */
static int server_answered(int rc) {
    switch (rc) {
    case ZOK:
    case ZNONODE:
    case ZNOAUTH:
    case ZBADVERSION:
    case ZNOCHILDRENFOREPHEMERALS:
    case ZNODEEXISTS:
    case ZNOTEMPTY:
    case ZINVALIDACL: return 1;
    default: return 0;
    }
}

int baton_zk_note_answer(baton_zk_t *zk, int64_t sent, int rc) {
    if (server_answered(rc)) {
        int64_t cur = atomic_load(&zk->answered_ms);
        while (cur < sent && !atomic_compare_exchange_weak(&zk->answered_ms, &cur, sent)) {
        }
    }
    return rc;
}

int64_t baton_zk_answered_ms(const baton_zk_t *zk) {
    return atomic_load(&((baton_zk_t *)zk)->answered_ms);
}

void baton_zk_log_cb(const char *message) {
    /* The client's line: "DATE TIME,MS:PID(0xTID):ZOO_LEVEL@FUNCTION@LINE: TEXT". */
    baton_log_level_t lvl = BATON_LOG_WARN;
    char src[64] = "";
    const char *text = message;
    const char *z = strstr(message, ":ZOO_");
    if (z) {
        static const struct {
            const char *name;
            baton_log_level_t lvl;
        } levels[] = {{"ERROR@", BATON_LOG_ERROR},
                      {"WARN@", BATON_LOG_WARN},
                      {"INFO@", BATON_LOG_INFO},
                      {"DEBUG@", BATON_LOG_DEBUG}};
        z += 5;
        for (size_t i = 0; i < BATON_ARRAY_SIZE(levels); i++)
            if (strncmp(z, levels[i].name, strlen(levels[i].name)) == 0) {
                lvl = levels[i].lvl;
                z += strlen(levels[i].name);
                size_t fn = strcspn(z, "@:");
                snprintf(src, sizeof(src), "%.*s", (int)(fn < 63 ? fn : 63), z);
                const char *colon = strstr(z, ": ");
                text = colon ? colon + 2 : z + fn;
                break;
            }
    }
    /* INFO is asked of the client only for debug (zk_log_level); it may be
     * on for another session's sink. */
    if (lvl == BATON_LOG_INFO && !baton_log_on(BATON_LOG_DEBUG))
        return;
    baton_log_lib(lvl, "zookeeper", src, text);
}

/* The client's log callback takes no context, and it runs on the client's
 * own threads too, so a session made with a log sink gets a callback of its
 * own: one of LOG_SLOTS trampolines, each bound to one session while it
 * lives. Sessions without a sink (the programs'), or past LOG_SLOTS at
 * once, use baton_zk_log_cb: the process's logger. */
#define LOG_SLOTS 64
static pthread_mutex_t log_slots_lock = PTHREAD_MUTEX_INITIALIZER;
static const baton_log_sink_t *log_slots[LOG_SLOTS];
static unsigned char log_slot_used[LOG_SLOTS];

static void zk_log_slot(int i, const char *message) {
    pthread_mutex_lock(&log_slots_lock);
    const baton_log_sink_t *sink = log_slots[i];
    pthread_mutex_unlock(&log_slots_lock);
    BATON_LOG_SCOPE(sink);
    baton_zk_log_cb(message);
}

/* zk_log_slot_IJ passes slot I*8+J. */
#define LOG_SLOT_FN(i, j) \
    static void zk_log_slot_##i##j(const char *m) { zk_log_slot((i)*8 + (j), m); }
#define LOG_SLOT_FN8(i) \
    LOG_SLOT_FN(i, 0)   \
    LOG_SLOT_FN(i, 1)   \
    LOG_SLOT_FN(i, 2)   \
    LOG_SLOT_FN(i, 3) LOG_SLOT_FN(i, 4) LOG_SLOT_FN(i, 5) LOG_SLOT_FN(i, 6) LOG_SLOT_FN(i, 7)
LOG_SLOT_FN8(0)
LOG_SLOT_FN8(1)
LOG_SLOT_FN8(2)
LOG_SLOT_FN8(3)
LOG_SLOT_FN8(4)
LOG_SLOT_FN8(5)
LOG_SLOT_FN8(6)
LOG_SLOT_FN8(7)
#define LOG_SLOT_REF8(i)                                                            \
    zk_log_slot_##i##0, zk_log_slot_##i##1, zk_log_slot_##i##2, zk_log_slot_##i##3, \
        zk_log_slot_##i##4, zk_log_slot_##i##5, zk_log_slot_##i##6, zk_log_slot_##i##7
static const log_callback_fn log_slot_fns[LOG_SLOTS] = {
    LOG_SLOT_REF8(0), LOG_SLOT_REF8(1), LOG_SLOT_REF8(2), LOG_SLOT_REF8(3),
    LOG_SLOT_REF8(4), LOG_SLOT_REF8(5), LOG_SLOT_REF8(6), LOG_SLOT_REF8(7)};

/* A slot for sink, or -1 (none needed, or all taken). */
static int log_slot_take(const baton_log_sink_t *sink) {
    if (!sink)
        return -1;
    int got = -1;
    pthread_mutex_lock(&log_slots_lock);
    for (int i = 0; i < LOG_SLOTS && got < 0; i++)
        if (!log_slot_used[i]) {
            log_slot_used[i] = 1;
            log_slots[i] = sink;
            got = i;
        }
    pthread_mutex_unlock(&log_slots_lock);
    return got;
}

/* Only once the client's threads are joined (zookeeper_close). */
static void log_slot_give(int i) {
    if (i < 0)
        return;
    pthread_mutex_lock(&log_slots_lock);
    log_slot_used[i] = 0;
    log_slots[i] = NULL;
    pthread_mutex_unlock(&log_slots_lock);
}

static void zk_log_level(void) {
    /* The client's lines go through baton's logger (baton_zk_log_cb),
     * which collapses repeats. Its INFO level is a line per connection
     * attempt: only asked for with baton's debug level (the process's, or
     * the sink's of the session being made; the client's level is one for
     * the process, so it only rises). */
    static int level = 0; /* under log_slots_lock: sessions may be made on several threads */
    int want = baton_log_on(BATON_LOG_DEBUG) ? ZOO_LOG_LEVEL_INFO : ZOO_LOG_LEVEL_WARN;
    pthread_mutex_lock(&log_slots_lock);
    if (want > level) {
        zoo_set_debug_level((ZooLogLevel)want);
        level = want;
    }
    pthread_mutex_unlock(&log_slots_lock);
}

int baton_zk_err(int rc) {
    switch (rc) {
    case ZOK: return BATON_OK;
    case ZNONODE: return BATON_NOTFOUND;
    case ZNODEEXISTS: return BATON_EXISTS;
    case ZBADVERSION:
    case ZNOTEMPTY: return BATON_CONFLICT;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZCLOSING: return BATON_CONNECTION;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZAUTHFAILED:
    case ZSESSIONMOVED: return BATON_EXPIRED;
    case ZBADARGUMENTS: return BATON_INVALID;
    case ZNOAUTH: return BATON_DENIED;
    default: return BATON_IO;
    }
}

void baton_zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    (void)zh;
    baton_zk_t *zk = ctx;
    if (!zk)
        return;
    zk_event_node_t *node = xcalloc(1, sizeof(*node));
    node->ev.type = type;
    node->ev.state = state;
    node->ev.path = xstrdup(path ? path : "");
    pthread_mutex_lock(&zk->lock);
    if (type == ZOO_SESSION_EVENT) {
        if (state == ZOO_CONNECTED_STATE)
            zk->connected = 1;
        else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
            zk->connected = 0;
            zk->expired = 1;
        } else
            zk->connected = 0;
    }
    if (zk->tail)
        zk->tail->next = node;
    else
        zk->head = node;
    zk->tail = node;
    pthread_mutex_unlock(&zk->lock);
    /* The pipe is non-blocking: a full pipe already signals the reader. */
    ssize_t w = write(zk->pipefd[1], "e", 1);
    (void)w;
}

int baton_zk_connect(const char *hosts, int session_timeout_ms, int connect_timeout_ms,
                     const baton_zk_auth_t *auth, baton_zk_t **out, char *errstr, size_t n) {
    zk_log_level();
    baton_zk_t *zk = xcalloc(1, sizeof(*zk));
    zk->auth = baton_zk_auth_dup(auth);
    zk->log = baton_log_cur;
    zk->log_slot = log_slot_take(zk->log);
    pthread_mutex_init(&zk->lock, NULL);
    if (pipe2(zk->pipefd, O_NONBLOCK | O_CLOEXEC) != 0) {
        log_slot_give(zk->log_slot);
        baton_zk_auth_destroy(zk->auth);
        free(zk);
        return baton_seterr(errstr, n, BATON_IO, "pipe: %s", strerror(errno));
    }
    zk->zh = zookeeper_init2(hosts, baton_zk_watcher, session_timeout_ms, NULL, zk, 0,
                             zk->log_slot >= 0 ? log_slot_fns[zk->log_slot] : baton_zk_log_cb);
    if (!zk->zh) {
        int e = errno;
        baton_zk_destroy(zk);
        /* zookeeper_init fails at once on a string it cannot parse or a
         * host name it cannot resolve (errno ENOENT or EINVAL then, which
         * strerror would misname). */
        const char *why = e == EINVAL   ? "bad syntax"
                          : e == ENOENT ? "a host name does not resolve"
                                        : strerror(e);
        return baton_seterr(errstr, n, BATON_INVALID,
                            "cannot use ZooKeeper connect string '%s': %s", hosts, why);
    }
    /* The client resolves the connect string's host names again every time
     * its I/O thread checks the socket, unless told otherwise: getaddrinfo,
     * with a netlink dump of the interfaces, under a lock glibc shares
     * across the process. 999 members in one process spent a quarter of
     * their CPU there (docs/benchmarks.md). While connected, once every
     * BATON_ZK_RESOLVE_MS is enough to notice a DNS change; a lost
     * connection still resolves at once (the client's rule). */
    zoo_set_servers_resolution_delay(zk->zh, BATON_ZK_RESOLVE_MS);
    /* The identity of --zk-auth, if any: queued before the session is
     * established, so it precedes every request (and is re-sent on
     * reconnect by the client). */
    int arc = baton_zk__auth_add(zk->auth, zk->zh);
    if (arc != ZOK) {
        baton_zk_destroy(zk);
        return baton_seterr(errstr, n, BATON_DENIED, "cannot add the ZooKeeper credentials: %s",
                            zerror(arc));
    }
    int64_t deadline = baton_now_ms() + connect_timeout_ms;
    for (;;) {
        pthread_mutex_lock(&zk->lock);
        int connected = zk->connected, expired = zk->expired;
        pthread_mutex_unlock(&zk->lock);
        if (connected)
            break;
        if (expired) {
            const char *user = baton_zk_auth_user(zk->auth);
            int err = user ? baton_seterr(errstr, n, BATON_DENIED,
                                          "ZooKeeper at '%s' refused the session or the "
                                          "credentials of digest user '%s'",
                                          hosts, user)
                           : BATON_OK;
            baton_zk_destroy(zk);
            if (err != BATON_OK)
                return err;
            return baton_seterr(errstr, n, BATON_EXPIRED, "ZooKeeper at '%s' refused the session",
                                hosts);
        }
        int64_t left = deadline - baton_now_ms();
        if (left <= 0) {
            baton_zk_destroy(zk);
            return baton_seterr(errstr, n, BATON_TIMEOUT,
                                "cannot connect to ZooKeeper at '%s' within %d ms", hosts,
                                connect_timeout_ms);
        }
        struct pollfd pfd = {.fd = zk->pipefd[0], .events = POLLIN};
        poll(&pfd, 1, (int)(left < 100 ? left : 100));
    }
    int cerr = baton_zk__auth_check(zk->auth, zk->zh, hosts, errstr, n);
    if (cerr != BATON_OK) {
        baton_zk_destroy(zk);
        return cerr;
    }
    *out = zk;
    return BATON_OK;
}

void baton_zk_destroy(baton_zk_t *zk) {
    if (!zk)
        return;
    if (zk->zh)
        zookeeper_close(zk->zh);
    baton_zk_event_t ev;
    while (baton_zk_next_event(zk, &ev))
        baton_zk_event_release(&ev);
    close(zk->pipefd[0]);
    close(zk->pipefd[1]);
    pthread_mutex_destroy(&zk->lock);
    log_slot_give(zk->log_slot);
    baton_zk_auth_destroy(zk->auth);
    free(zk);
}

int baton_zk_fd(const baton_zk_t *zk) { return zk->pipefd[0]; }

int baton_zk_next_event(baton_zk_t *zk, baton_zk_event_t *ev) {
    char buf[64];
    pthread_mutex_lock(&zk->lock);
    zk_event_node_t *node = zk->head;
    if (node) {
        zk->head = node->next;
        if (!zk->head)
            zk->tail = NULL;
    } else {
        /* Drain the pipe only when the queue is empty, under the lock, so a
         * byte for a queued event is never lost. */
        while (read(zk->pipefd[0], buf, sizeof(buf)) > 0)
            ;
    }
    pthread_mutex_unlock(&zk->lock);
    if (!node)
        return 0;
    *ev = node->ev;
    free(node);
    return 1;
}

void baton_zk_event_release(baton_zk_event_t *ev) {
    free(ev->path);
    ev->path = NULL;
}

zhandle_t *baton_zk_handle(const baton_zk_t *zk) { return zk->zh; }

const struct ACL_vector *baton_zk_acl(const baton_zk_t *zk) { return baton_zk_auth_acl(zk->auth); }

int64_t baton_zk_session_id(const baton_zk_t *zk) {
    const clientid_t *cid = zoo_client_id(zk->zh);
    return cid ? cid->client_id : 0;
}

int baton_zk_session_timeout(const baton_zk_t *zk) { return zoo_recv_timeout(zk->zh); }

int baton_zk_connected(const baton_zk_t *zk) {
    baton_zk_t *m = (baton_zk_t *)zk;
    pthread_mutex_lock(&m->lock);
    int c = m->connected;
    pthread_mutex_unlock(&m->lock);
    return c;
}

int baton_zk_expired(const baton_zk_t *zk) {
    baton_zk_t *m = (baton_zk_t *)zk;
    pthread_mutex_lock(&m->lock);
    int e = m->expired;
    pthread_mutex_unlock(&m->lock);
    return e;
}

/* An asynchronous request waited on (zk_wait), and what a get, an exists,
 * a listing or a create answered: the client calls every completion, with
 * ZCONNECTIONLOSS, ZOPERATIONTIMEOUT or ZCLOSING at worst, so the wait
 * ends. Every call here waits this way, through baton_zk__wait, so the
 * owner's wait hook runs meanwhile. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done, rc;
    char *data;   /* a get's copy of the node's data, a create's path */
    int len;      /* its length; a listing's count */
    char **names; /* a listing's copy of the children's names */
    struct Stat st;
} zk_sync_wait_t;

#define ZK_SYNC_WAIT_INIT                                                               \
    {                                                                                   \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, 0, NULL, { 0 } \
    }

static void zk_wait_done(int rc, const void *data) {
    zk_sync_wait_t *w = (zk_sync_wait_t *)data;
    pthread_mutex_lock(&w->lock);
    w->rc = rc;
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static void zk_sync_done(int rc, const char *value, const void *data) {
    (void)value;
    zk_wait_done(rc, data);
}

/* @locality the completion thread: copies the reply only */
static void zk_data_done(int rc, const char *value, int value_len, const struct Stat *stat,
                         const void *data) {
    zk_sync_wait_t *w = (zk_sync_wait_t *)data;
    if (rc == ZOK) {
        int len = value && value_len > 0 ? value_len : 0;
        w->data = xmalloc((size_t)len + 1);
        if (len)
            memcpy(w->data, value, (size_t)len);
        w->data[len] = 0;
        w->len = len;
        if (stat)
            w->st = *stat;
    }
    zk_wait_done(rc, data);
}

/* @locality the completion thread */
static void zk_stat_done(int rc, const struct Stat *stat, const void *data) {
    zk_sync_wait_t *w = (zk_sync_wait_t *)data;
    if (rc == ZOK && stat)
        w->st = *stat;
    zk_wait_done(rc, data);
}

/* @locality the completion thread: copies the names only */
static void zk_children_done(int rc, const struct String_vector *sv, const void *data) {
    zk_sync_wait_t *w = (zk_sync_wait_t *)data;
    if (rc == ZOK) {
        int n = sv && sv->count > 0 ? sv->count : 0;
        w->names = xcalloc(n ? (size_t)n : 1, sizeof(char *));
        for (int i = 0; i < n; i++)
            w->names[i] = xstrdup(sv->data[i]);
        w->len = n;
    }
    zk_wait_done(rc, data);
}

/* @locality the completion thread: copies the created path only */
static void zk_created_done(int rc, const char *path, const struct Stat *stat, const void *data) {
    zk_sync_wait_t *w = (zk_sync_wait_t *)data;
    if (rc == ZOK) {
        w->data = xstrdup(path ? path : "");
        if (stat)
            w->st = *stat;
    }
    zk_wait_done(rc, data);
}

static int zk_wait_ready(const void *arg) { return ((const zk_sync_wait_t *)arg)->done; }

/* sent: what the request's send returned; waits for its completion if it
 * went out, notes the answer and returns the ZooKeeper code. */
static int zk_wait(baton_zk_t *zk, zk_sync_wait_t *w, int64_t t, int sent) {
    int rc = sent;
    if (sent == ZOK) {
        pthread_mutex_lock(&w->lock);
        baton_zk__wait(zk, &w->lock, &w->cond, zk_wait_ready, w, -1);
        rc = w->rc;
        pthread_mutex_unlock(&w->lock);
    }
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    return baton_zk_note_answer(zk, t, rc);
}

void baton_zk_set_wait_hook(baton_zk_t *zk, baton_zk_wait_hook_fn fn, void *arg) {
    zk->hook = fn;
    zk->hook_arg = arg;
}

/* The CLOCK_REALTIME instant ms from now (pthread_cond_timedwait's clock). */
static struct timespec realtime_in(int64_t ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int baton_zk__wait(baton_zk_t *zk, pthread_mutex_t *lock, pthread_cond_t *cond,
                   int (*ready)(const void *), const void *arg, int timeout_ms) {
    int64_t now = baton_now_ms();
    int64_t end = timeout_ms >= 0 ? now + timeout_ms : INT64_MAX;
    int64_t hook_at = now + BATON_ZK_HOOK_GRACE_MS;
    while (!ready(arg)) {
        int hooked = zk && zk->hook && !zk->in_hook;
        now = baton_now_ms();
        if (now >= end)
            return 0;
        if (hooked && now >= hook_at) {
            /* Unlocked: the completion thread goes on filling in answers. */
            pthread_mutex_unlock(lock);
            zk->in_hook = 1;
            int again = zk->hook(zk->hook_arg);
            zk->in_hook = 0;
            pthread_mutex_lock(lock);
            hook_at = baton_now_ms() + (again < 1 ? 1 : again > 50 ? 50 : again);
            continue;
        }
        int64_t until = hooked && hook_at < end ? hook_at : end;
        if (until == INT64_MAX) {
            pthread_cond_wait(cond, lock);
        } else {
            struct timespec ts = realtime_in(until - now);
            pthread_cond_timedwait(cond, lock, &ts);
        }
    }
    return 1;
}

int baton_zk_get(baton_zk_t *zk, const char *path, int watch, char **data, size_t *len,
                 struct Stat *stat) {
    zk_sync_wait_t w = ZK_SYNC_WAIT_INIT;
    int64_t t = baton_now_ms();
    int rc = zk_wait(zk, &w, t,
                     zoo_awget(zk->zh, path, watch ? baton_zk_watcher : NULL, watch ? zk : NULL,
                               zk_data_done, &w));
    if (rc != ZOK) {
        free(w.data);
        return baton_zk_err(rc);
    }
    *data = w.data;
    if (len)
        *len = (size_t)w.len;
    if (stat)
        *stat = w.st;
    return BATON_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int baton_zk_children(baton_zk_t *zk, const char *path, int watch, char ***names, size_t *count) {
    zk_sync_wait_t w = ZK_SYNC_WAIT_INIT;
    int64_t t = baton_now_ms();
    int rc = zk_wait(zk, &w, t,
                     zoo_awget_children(zk->zh, path, watch ? baton_zk_watcher : NULL,
                                        watch ? zk : NULL, zk_children_done, &w));
    if (rc != ZOK) {
        baton_zk_strings_free(w.names, w.names ? (size_t)w.len : 0);
        return baton_zk_err(rc);
    }
    qsort(w.names, (size_t)w.len, sizeof(char *), cmp_str);
    *names = w.names;
    *count = (size_t)w.len;
    return BATON_OK;
}

void baton_zk_strings_free(char **names, size_t count) {
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

int baton_zk_exists(baton_zk_t *zk, const char *path, int watch, struct Stat *stat) {
    zk_sync_wait_t w = ZK_SYNC_WAIT_INIT;
    int64_t t = baton_now_ms();
    int rc = zk_wait(zk, &w, t,
                     zoo_awexists(zk->zh, path, watch ? baton_zk_watcher : NULL, watch ? zk : NULL,
                                  zk_stat_done, &w));
    if (rc == ZOK && stat)
        *stat = w.st;
    return baton_zk_err(rc);
}

int baton_zk_create(baton_zk_t *zk, const char *path, const char *data, size_t len, int mode,
                    char *created, size_t created_size, struct Stat *stat) {
    zk_sync_wait_t w = ZK_SYNC_WAIT_INIT;
    int64_t t = baton_now_ms();
    int rc = zk_wait(zk, &w, t,
                     zoo_acreate2(zk->zh, path, data, data ? (int)len : -1, baton_zk_acl(zk), mode,
                                  zk_created_done, &w));
    if (rc == ZOK) {
        if (created && created_size)
            snprintf(created, created_size, "%s", w.data);
        if (stat)
            *stat = w.st;
    }
    free(w.data);
    return baton_zk_err(rc);
}

int baton_zk_mkdirs(baton_zk_t *zk, const char *path) {
    char *copy = xstrdup(path);
    int err = BATON_OK;
    for (char *p = copy + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char saved = *p;
            *p = 0;
            zk_sync_wait_t w = ZK_SYNC_WAIT_INIT;
            int64_t t = baton_now_ms();
            int rc =
                zk_wait(zk, &w, t,
                        zoo_acreate(zk->zh, copy, NULL, -1, baton_zk_acl(zk), 0, zk_sync_done, &w));
            *p = saved;
            if (rc != ZOK && rc != ZNODEEXISTS) {
                err = baton_zk_err(rc);
                break;
            }
            if (saved == 0)
                break;
        }
    }
    free(copy);
    return err;
}

int baton_zk_set(baton_zk_t *zk, const char *path, const char *data, size_t len, int version,
                 struct Stat *stat) {
    zk_sync_wait_t w = ZK_SYNC_WAIT_INIT;
    int64_t t = baton_now_ms();
    int rc = zk_wait(zk, &w, t, zoo_aset(zk->zh, path, data, (int)len, version, zk_stat_done, &w));
    if (rc == ZOK && stat)
        *stat = w.st;
    return baton_zk_err(rc);
}

int baton_zk_delete(baton_zk_t *zk, const char *path, int version) {
    zk_sync_wait_t w = ZK_SYNC_WAIT_INIT;
    int64_t t = baton_now_ms();
    return baton_zk_err(zk_wait(zk, &w, t, zoo_adelete(zk->zh, path, version, zk_wait_done, &w)));
}

int baton_zk_sync(baton_zk_t *zk, const char *path) {
    zk_sync_wait_t w = ZK_SYNC_WAIT_INIT;
    int64_t t = baton_now_ms();
    return baton_zk_err(zk_wait(zk, &w, t, zoo_async(zk->zh, path, zk_sync_done, &w)));
}

int baton_zk_multi(baton_zk_t *zk, int count, const zoo_op_t *ops, zoo_op_result_t *results) {
    if (zoo_state(zk->zh) < 0) /* the client's is_unrecoverable() */
        return ZINVALIDSTATE;
    zk_sync_wait_t w = ZK_SYNC_WAIT_INIT;
    int64_t t = baton_now_ms();
    /* Not zoo_multi: when the connection drops with a synchronous multi in
     * flight, the 3.8 client frees the multi's own entry but not the
     * entries of its ops (free_completions destroys a synchronous entry
     * without its op list), which LeakSanitizer reported as 168 bytes per
     * op (tests/integration/test_zk_multi.c). An asynchronous multi's
     * failure goes through cleanup_failed_multi, which frees them. Each
     * op's result is filled in before the completion runs, as zoo_multi's
     * are. */
    return zk_wait(zk, &w, t, zoo_amulti(zk->zh, count, ops, results, zk_wait_done, &w));
}
