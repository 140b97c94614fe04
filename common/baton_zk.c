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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
};

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
    baton_log_lib(lvl, "zookeeper", src, text);
}

static void zk_log_level_once(void) {
    static int done = 0;
    if (!done) {
        /* The client's lines go through baton's logger (baton_zk_log_cb),
         * which collapses repeats. Its INFO level is a line per connection
         * attempt: only asked for with baton's debug level. */
        zoo_set_debug_level(baton_log_level == BATON_LOG_DEBUG ? ZOO_LOG_LEVEL_INFO
                                                               : ZOO_LOG_LEVEL_WARN);
        done = 1;
    }
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
                     baton_zk_t **out, char *errstr, size_t n) {
    zk_log_level_once();
    baton_zk_t *zk = xcalloc(1, sizeof(*zk));
    pthread_mutex_init(&zk->lock, NULL);
    if (pipe2(zk->pipefd, O_NONBLOCK | O_CLOEXEC) != 0) {
        free(zk);
        return baton_seterr(errstr, n, BATON_IO, "pipe: %s", strerror(errno));
    }
    zk->zh =
        zookeeper_init2(hosts, baton_zk_watcher, session_timeout_ms, NULL, zk, 0, baton_zk_log_cb);
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
    /* The identity of --zk-auth, if any: queued before the session is
     * established, so it precedes every request (and is re-sent on
     * reconnect by the client). */
    int arc = baton_zk__auth_add(zk->zh);
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
            baton_zk_destroy(zk);
            if (baton_zk_auth_user())
                return baton_seterr(errstr, n, BATON_DENIED,
                                    "ZooKeeper at '%s' refused the session or the credentials "
                                    "of digest user '%s'",
                                    hosts, baton_zk_auth_user());
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
    int cerr = baton_zk__auth_check(zk->zh, hosts, errstr, n);
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

int baton_zk_multi(baton_zk_t *zk, int count, const zoo_op_t *ops, zoo_op_result_t *results) {
    if (zoo_state(zk->zh) < 0) /* the client's is_unrecoverable() */
        return ZINVALIDSTATE;
    return zoo_multi(zk->zh, count, ops, results);
}

int baton_zk_expired(const baton_zk_t *zk) {
    baton_zk_t *m = (baton_zk_t *)zk;
    pthread_mutex_lock(&m->lock);
    int e = m->expired;
    pthread_mutex_unlock(&m->lock);
    return e;
}

int baton_zk_get(baton_zk_t *zk, const char *path, int watch, char **data, size_t *len,
                 struct Stat *stat) {
    struct Stat st;
    int cap = 4096;
    for (int attempt = 0; attempt < 4; attempt++) {
        char *buf = xmalloc((size_t)cap + 1);
        int blen = cap;
        int rc = zoo_wget(zk->zh, path, watch ? baton_zk_watcher : NULL, watch ? zk : NULL, buf,
                          &blen, &st);
        if (rc != ZOK) {
            free(buf);
            return baton_zk_err(rc);
        }
        if (st.dataLength > cap) {
            /* Grew past the buffer: retry with the size the server reported. */
            free(buf);
            cap = st.dataLength;
            continue;
        }
        if (blen < 0)
            blen = 0;
        buf[blen] = 0;
        *data = buf;
        if (len)
            *len = (size_t)blen;
        if (stat)
            *stat = st;
        return BATON_OK;
    }
    return BATON_CONFLICT;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int baton_zk_children(baton_zk_t *zk, const char *path, int watch, char ***names, size_t *count) {
    struct String_vector sv = {0, NULL};
    int rc =
        zoo_wget_children(zk->zh, path, watch ? baton_zk_watcher : NULL, watch ? zk : NULL, &sv);
    if (rc != ZOK)
        return baton_zk_err(rc);
    char **out = xcalloc((size_t)sv.count, sizeof(char *));
    for (int i = 0; i < sv.count; i++)
        out[i] = xstrdup(sv.data[i]);
    qsort(out, (size_t)sv.count, sizeof(char *), cmp_str);
    *names = out;
    *count = (size_t)sv.count;
    deallocate_String_vector(&sv);
    return BATON_OK;
}

void baton_zk_strings_free(char **names, size_t count) {
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

int baton_zk_exists(baton_zk_t *zk, const char *path, int watch, struct Stat *stat) {
    struct Stat st;
    int rc = zoo_wexists(zk->zh, path, watch ? baton_zk_watcher : NULL, watch ? zk : NULL, &st);
    if (rc == ZOK && stat)
        *stat = st;
    return baton_zk_err(rc);
}

int baton_zk_create(baton_zk_t *zk, const char *path, const char *data, size_t len, int mode,
                    char *created, size_t created_size, struct Stat *stat) {
    char buf[1024];
    struct Stat st;
    int rc = zoo_create2(zk->zh, path, data, data ? (int)len : -1, baton_zk_acl(), mode, buf,
                         sizeof(buf), &st);
    if (rc != ZOK)
        return baton_zk_err(rc);
    if (created && created_size)
        snprintf(created, created_size, "%s", buf);
    if (stat)
        *stat = st;
    return BATON_OK;
}

int baton_zk_mkdirs(baton_zk_t *zk, const char *path) {
    char *copy = xstrdup(path);
    int err = BATON_OK;
    for (char *p = copy + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char saved = *p;
            *p = 0;
            int rc = zoo_create(zk->zh, copy, NULL, -1, baton_zk_acl(), 0, NULL, 0);
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
    struct Stat st;
    int rc = zoo_set2(zk->zh, path, data, (int)len, version, &st);
    if (rc == ZOK && stat)
        *stat = st;
    return baton_zk_err(rc);
}

int baton_zk_delete(baton_zk_t *zk, const char *path, int version) {
    return baton_zk_err(zoo_delete(zk->zh, path, version));
}

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done, rc;
} zk_sync_wait_t;

static void zk_sync_done(int rc, const char *value, const void *data) {
    (void)value;
    zk_sync_wait_t *w = (zk_sync_wait_t *)data;
    pthread_mutex_lock(&w->lock);
    w->rc = rc;
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int baton_zk_sync(baton_zk_t *zk, const char *path) {
    zk_sync_wait_t w = {.done = 0};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    int rc = zoo_async(zk->zh, path, zk_sync_done, &w);
    if (rc == ZOK) {
        /* The client calls every completion, with ZCONNECTIONLOSS or
         * ZCLOSING at worst, so this wait ends. */
        pthread_mutex_lock(&w.lock);
        while (!w.done)
            pthread_cond_wait(&w.cond, &w.lock);
        rc = w.rc;
        pthread_mutex_unlock(&w.lock);
    }
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    return baton_zk_err(rc);
}
