/* baton_zkbatch.c: a window of asynchronous reads in flight; see baton_zkbatch.h. */
#include "baton_zkbatch.h"

#include "baton_err.h"
#include "baton_layout.h"
#include "baton_util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Reads in flight at once: enough to hide loopback and LAN latency, small
 * enough not to flood the server's request queue. */
#define BATON_ZKBATCH_WINDOW 256

typedef struct {
    pthread_mutex_t lock; /* protects pending */
    pthread_cond_t cond;  /* signalled whenever pending goes down */
    size_t pending;
} batch_t;

typedef struct {
    batch_t *batch;
    baton_zkread_t *slot;
} request_t;

/* @locality the completion thread */
static void batch_done(batch_t *b) {
    pthread_mutex_lock(&b->lock);
    b->pending--;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
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

typedef enum { OP_GET, OP_CHILDREN, OP_EXISTS } op_t;

/* Sends one request; ZOK if it was queued (a completion will come). */
static int send_one(baton_zk_t *zk, op_t op, int watch, const char *path, request_t *req) {
    zhandle_t *zh = baton_zk_handle(zk);
    watcher_fn w = watch ? baton_zk_watcher : NULL;
    void *wctx = watch ? zk : NULL;
    switch (op) {
    case OP_GET: return zoo_awget(zh, path, w, wctx, on_data, req);
    case OP_CHILDREN: return zoo_awget_children(zh, path, w, wctx, on_children, req);
    default: return zoo_awexists(zh, path, w, wctx, on_stat, req);
    }
}

static void batch_run(baton_zk_t *zk, char *const *paths, size_t n, baton_zkread_t *out, op_t op,
                      int watch) {
    batch_t b = {.pending = 0};
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.cond, NULL);
    request_t *reqs = xcalloc(n ? n : 1, sizeof(*reqs));
    for (size_t i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        reqs[i].batch = &b;
        reqs[i].slot = &out[i];
        pthread_mutex_lock(&b.lock);
        while (b.pending >= BATON_ZKBATCH_WINDOW)
            pthread_cond_wait(&b.cond, &b.lock);
        b.pending++;
        pthread_mutex_unlock(&b.lock);
        int rc = send_one(zk, op, watch, paths[i], &reqs[i]);
        if (rc != ZOK) {
            /* Not queued, so no completion will come for it. */
            out[i].err = baton_zk_err(rc);
            pthread_mutex_lock(&b.lock);
            b.pending--;
            pthread_mutex_unlock(&b.lock);
        }
    }
    /* The client completes every queued request, with ZCONNECTIONLOSS or
     * ZCLOSING if it must, so this wait ends. */
    pthread_mutex_lock(&b.lock);
    while (b.pending > 0)
        pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);
    free(reqs);
    pthread_cond_destroy(&b.cond);
    pthread_mutex_destroy(&b.lock);
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

void baton_zkread_release(baton_zkread_t *r) {
    free(r->data);
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
