/* baton_zkbatch.c: pipelined ZooKeeper requests in flight; see baton_zkbatch.h. */
#include "baton_zkbatch.h"

#include "baton_err.h"
#include "baton_layout.h"
#include "baton_util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Reads in flight at once: enough to hide loopback and LAN latency, small
 * enough not to flood the server's request queue. */
#define BATON_ZKBATCH_WINDOW 256

/* One batch: the whole-batch reads below and baton_zkbatch_t alike. */
struct baton_zkbatch_s {
    pthread_mutex_t lock; /* protects pending, wake_below and abandoned */
    pthread_cond_t cond;  /* signalled when pending reaches 0 or drops below wake_below */
    size_t pending;       /* requests queued, not completed yet */
    size_t wake_below;    /* a sender waits for room (batch_enter): its window; else 0 */
    int abandoned;        /* the owner stopped waiting: the last completion frees */
    baton_zk_t *zk;
    size_t n;
    baton_zkread_t *slots; /* the caller's (whole-batch reads) or owned */
    int own_slots;
    struct request_s *reqs;
};

typedef struct request_s {
    baton_zkbatch_t *batch;
    baton_zkread_t *slot;
} request_t;

static baton_zkbatch_t *batch_alloc(baton_zk_t *zk, size_t n, baton_zkread_t *slots) {
    baton_zkbatch_t *b = xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    b->zk = zk;
    b->n = n;
    b->own_slots = slots == NULL;
    b->slots = slots ? slots : xcalloc(n ? n : 1, sizeof(*b->slots));
    b->reqs = xcalloc(n ? n : 1, sizeof(*b->reqs));
    for (size_t i = 0; i < n; i++) {
        memset(&b->slots[i], 0, sizeof(b->slots[i]));
        b->slots[i].err = BATON_INTERNAL; /* no request went to it */
        b->reqs[i] = (request_t){.batch = b, .slot = &b->slots[i]};
    }
    return b;
}

void baton_zkbatch_free(baton_zkbatch_t *b) {
    if (!b)
        return;
    if (b->own_slots) {
        for (size_t i = 0; i < b->n; i++)
            baton_zkread_release(&b->slots[i]);
        free(b->slots);
    }
    free(b->reqs);
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* @locality the completion thread */
static void batch_done(baton_zkbatch_t *b) {
    pthread_mutex_lock(&b->lock);
    int orphan = --b->pending == 0 && b->abandoned;
    /* Only a wait that can end is woken: the owner's for the whole batch
     * (a cold start's batch of hundreds otherwise wakes it once per
     * answer), or a sender's for room in its window. */
    if (b->pending == 0 || b->pending < b->wake_below)
        pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
    if (orphan)
        baton_zkbatch_free(b);
}

/* @locality the completion thread */
static void on_data(int rc, const char *value, int value_len, const struct Stat *stat,
                    const void *ctx) {
    const request_t *req = ctx;
    baton_zkread_t *r = req->slot;
    r->err = baton_zk_err(rc);
    if (rc == ZOK) {
        size_t len = value && value_len > 0 ? (size_t)value_len : 0;
        r->data = xmalloc(len + 1);
        if (len)
            memcpy(r->data, value, len);
        r->data[len] = 0;
        r->len = len;
        if (stat)
            r->stat = *stat;
    }
    batch_done(req->batch);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* @locality the completion thread */
static void on_children(int rc, const struct String_vector *sv, const void *ctx) {
    const request_t *req = ctx;
    baton_zkread_t *r = req->slot;
    r->err = baton_zk_err(rc);
    if (rc == ZOK) {
        size_t count = sv ? (size_t)sv->count : 0;
        r->names = xcalloc(count ? count : 1, sizeof(char *));
        for (size_t i = 0; i < count; i++)
            r->names[i] = xstrdup(sv->data[i]);
        qsort(r->names, count, sizeof(char *), cmp_str);
        r->count = count;
    }
    batch_done(req->batch);
}

/* @locality the completion thread */
static void on_stat(int rc, const struct Stat *stat, const void *ctx) {
    const request_t *req = ctx;
    req->slot->err = baton_zk_err(rc);
    if (rc == ZOK && stat)
        req->slot->stat = *stat;
    batch_done(req->batch);
}

/* @locality the completion thread */
static void on_create(int rc, const char *path, const struct Stat *stat, const void *ctx) {
    const request_t *req = ctx;
    req->slot->err = baton_zk_err(rc);
    if (rc == ZOK && path) {
        req->slot->created = xstrdup(path);
        if (stat)
            req->slot->stat = *stat;
    }
    batch_done(req->batch);
}

/* Counts a request in before it is sent (its completion may run before the
 * send returns); with window > 0, first waits until fewer than window are
 * in flight. */
static void batch_enter(baton_zkbatch_t *b, size_t window) {
    pthread_mutex_lock(&b->lock);
    while (window && b->pending >= window) {
        b->wake_below = window;
        pthread_cond_wait(&b->cond, &b->lock);
    }
    b->wake_below = 0;
    b->pending++;
    pthread_mutex_unlock(&b->lock);
}

/* rc is what the client said when sending slot i's request: one it did not
 * queue gets no completion, so it is completed here. */
static void batch_sent(baton_zkbatch_t *b, size_t i, int rc) {
    if (rc == ZOK)
        return;
    b->slots[i].err = baton_zk_err(rc);
    pthread_mutex_lock(&b->lock);
    b->pending--;
    pthread_mutex_unlock(&b->lock);
}

typedef enum { OP_GET, OP_CHILDREN, OP_EXISTS } op_t;

/* Sends one read into slot i. */
static void send_read(baton_zkbatch_t *b, size_t i, op_t op, int watch, const char *path,
                      size_t window) {
    zhandle_t *zh = baton_zk_handle(b->zk);
    watcher_fn w = watch ? baton_zk_watcher : NULL;
    void *wctx = watch ? b->zk : NULL;
    request_t *req = &b->reqs[i];
    batch_enter(b, window);
    int rc;
    switch (op) {
    case OP_GET: rc = zoo_awget(zh, path, w, wctx, on_data, req); break;
    case OP_CHILDREN: rc = zoo_awget_children(zh, path, w, wctx, on_children, req); break;
    default: rc = zoo_awexists(zh, path, w, wctx, on_stat, req); break;
    }
    batch_sent(b, i, rc);
}

static int batch_ready(const void *arg) { return ((const baton_zkbatch_t *)arg)->pending == 0; }

int baton_zkbatch_wait(baton_zkbatch_t *b, int timeout_ms) {
    pthread_mutex_lock(&b->lock);
    /* The owner's wait hook runs meanwhile (baton_zk_set_wait_hook). */
    baton_zk__wait(b->zk, &b->lock, &b->cond, batch_ready, b, timeout_ms);
    int done = b->pending == 0;
    if (!done)
        b->abandoned = 1;
    pthread_mutex_unlock(&b->lock);
    return done;
}

/* The whole-batch reads: up to a window in flight, waiting for them all
 * (the client completes every queued request, with ZCONNECTIONLOSS or
 * ZCLOSING if it must, so this wait ends). */
static void batch_run(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out, op_t op,
                      int watch) {
    baton_zkbatch_t *b = batch_alloc(zk, n, out);
    int64_t t = baton_now_ms();
    for (size_t i = 0; i < n; i++)
        send_read(b, i, op, watch, paths[i], BATON_ZKBATCH_WINDOW);
    baton_zkbatch_wait(b, -1);
    baton_zkbatch_free(b);
    /* Any answer renewed the session after t (the batch's first send).
     * Only a result the server sent counts: not a request the client
     * refused (a bad path: BATON_INVALID, BATON_IO) or never sent. */
    for (size_t i = 0; i < n; i++) {
        int e = out[i].err;
        if (e == BATON_OK || e == BATON_NOTFOUND || e == BATON_EXISTS || e == BATON_CONFLICT ||
            e == BATON_DENIED) {
            baton_zk_note_answer(zk, t, ZOK);
            break;
        }
    }
}

void baton_zkbatch_get(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out) {
    batch_run(zk, paths, n, out, OP_GET, 0);
}

void baton_zkbatch_children(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out) {
    batch_run(zk, paths, n, out, OP_CHILDREN, 0);
}

void baton_zkbatch_watch_children(baton_zk_t *zk, char *const *paths, size_t n,
                                  baton_zkread_t *out) {
    batch_run(zk, paths, n, out, OP_CHILDREN, 1);
}

void baton_zkbatch_watch_exists(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out) {
    batch_run(zk, paths, n, out, OP_EXISTS, 1);
}

void baton_zkbatch_watch_get(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out) {
    batch_run(zk, paths, n, out, OP_GET, 1);
}

/* ---- a batch of mixed requests ------------------------------------------ */

baton_zkbatch_t *baton_zkbatch_new(baton_zk_t *zk, size_t n) { return batch_alloc(zk, n, NULL); }

void baton_zkbatch_add_children(baton_zkbatch_t *b, size_t i, const char *path, int watch) {
    send_read(b, i, OP_CHILDREN, watch, path, 0);
}

void baton_zkbatch_add_exists(baton_zkbatch_t *b, size_t i, const char *path, int watch) {
    send_read(b, i, OP_EXISTS, watch, path, 0);
}

void baton_zkbatch_add_create(baton_zkbatch_t *b, size_t i, const char *path, const char *data,
                              size_t len, int flags) {
    batch_enter(b, 0);
    batch_sent(b, i,
               zoo_acreate2(baton_zk_handle(b->zk), path, data, (int)len, baton_zk_acl(b->zk),
                            flags, on_create, &b->reqs[i]));
}

void baton_zkbatch_add_set(baton_zkbatch_t *b, size_t i, const char *path, const char *data,
                           size_t len, int version) {
    batch_enter(b, 0);
    batch_sent(
        b, i,
        zoo_aset(baton_zk_handle(b->zk), path, data, (int)len, version, on_stat, &b->reqs[i]));
}

const baton_zkread_t *baton_zkbatch_slot(const baton_zkbatch_t *b, size_t i) {
    return &b->slots[i];
}

void baton_zkread_release(baton_zkread_t *r) {
    free(r->data);
    free(r->created);
    baton_zk_strings_free(r->names, r->count);
    memset(r, 0, sizeof(*r));
}

int baton_zkdir_read(baton_zk_t *zk, const char *dir, baton_zkdir_t *out) {
    memset(out, 0, sizeof(*out));
    int err = baton_zk_children(zk, dir, 0, &out->names, &out->n);
    if (err != BATON_OK) {
        out->names = NULL;
        out->n = 0;
        return err;
    }
    out->paths = xcalloc(out->n ? out->n : 1, sizeof(char *));
    out->reads = xcalloc(out->n ? out->n : 1, sizeof(baton_zkread_t));
    for (size_t i = 0; i < out->n; i++)
        out->paths[i] = baton_layout_child(dir, out->names[i]);
    baton_zkbatch_get(zk, out->paths, out->n, out->reads);
    return BATON_OK;
}

void baton_zkdir_release(baton_zkdir_t *d) {
    for (size_t i = 0; d->reads && i < d->n; i++)
        baton_zkread_release(&d->reads[i]);
    free(d->reads);
    for (size_t i = 0; d->paths && i < d->n; i++)
        free(d->paths[i]);
    free(d->paths);
    if (d->names)
        baton_zk_strings_free(d->names, d->n);
    memset(d, 0, sizeof(*d));
}
