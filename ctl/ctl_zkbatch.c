/* ctl_zkbatch.c: a window of asynchronous reads in flight; see ctl_zkbatch.h. */
#include "ctl_zkbatch.h"

#include "baton_err.h"
#include "baton_util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Reads in flight at once: enough to hide loopback and LAN latency, small
 * enough not to flood the server's request queue. */
#define CTL_ZKBATCH_WINDOW 256

typedef struct {
    pthread_mutex_t lock; /* protects pending */
    pthread_cond_t cond;  /* signalled whenever pending goes down */
    size_t pending;
} batch_t;

typedef struct {
    batch_t *batch;
    ctl_zkread_t *slot;
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
    ctl_zkread_t *r = req->slot;
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
    ctl_zkread_t *r = req->slot;
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

static void batch_run(baton_zk_t *zk, char *const *paths, size_t n, ctl_zkread_t *out,
                      int children) {
    zhandle_t *zh = baton_zk_handle(zk);
    batch_t b = {.pending = 0};
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.cond, NULL);
    request_t *reqs = xcalloc(n ? n : 1, sizeof(*reqs));
    for (size_t i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        reqs[i].batch = &b;
        reqs[i].slot = &out[i];
        pthread_mutex_lock(&b.lock);
        while (b.pending >= CTL_ZKBATCH_WINDOW)
            pthread_cond_wait(&b.cond, &b.lock);
        b.pending++;
        pthread_mutex_unlock(&b.lock);
        int rc = children ? zoo_aget_children(zh, paths[i], 0, on_children, &reqs[i])
                          : zoo_aget(zh, paths[i], 0, on_data, &reqs[i]);
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

void ctl_zkbatch_get(baton_zk_t *zk, char *const *paths, size_t n, ctl_zkread_t *out) {
    batch_run(zk, paths, n, out, 0);
}

void ctl_zkbatch_children(baton_zk_t *zk, char *const *paths, size_t n, ctl_zkread_t *out) {
    batch_run(zk, paths, n, out, 1);
}

void ctl_zkread_release(ctl_zkread_t *r) {
    free(r->data);
    baton_zk_strings_free(r->names, r->count);
    memset(r, 0, sizeof(*r));
}

int ctl_zkdir_read(baton_zk_t *zk, const char *dir, ctl_zkdir_t *out) {
    memset(out, 0, sizeof(*out));
    int err = baton_zk_children(zk, dir, 0, &out->names, &out->n);
    if (err != BATON_OK) {
        out->names = NULL;
        out->n = 0;
        return err;
    }
    out->paths = xcalloc(out->n ? out->n : 1, sizeof(char *));
    out->reads = xcalloc(out->n ? out->n : 1, sizeof(ctl_zkread_t));
    for (size_t i = 0; i < out->n; i++)
        out->paths[i] = xasprintf("%s/%s", dir, out->names[i]);
    ctl_zkbatch_get(zk, out->paths, out->n, out->reads);
    return BATON_OK;
}

void ctl_zkdir_release(ctl_zkdir_t *d) {
    for (size_t i = 0; d->reads && i < d->n; i++)
        ctl_zkread_release(&d->reads[i]);
    free(d->reads);
    for (size_t i = 0; d->paths && i < d->n; i++)
        free(d->paths[i]);
    free(d->paths);
    if (d->names)
        baton_zk_strings_free(d->names, d->n);
    memset(d, 0, sizeof(*d));
}
