/* sink.c: the backend-independent half of the fenced sink. Parses the URI,
 * picks a backend by scheme, validates arguments once for every backend and
 * dispatches through baton_sink_ops_t (sink_int.h). */
#include "sink.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "baton_failpoint.h"
#include "sink_int.h"

/* Every backend, in the order they are listed in error messages. A new
 * backend is one more file and one more line here. */
static const baton_sink_ops_t *const backends[] = {
    &baton_sink_sqlite_ops,
    &baton_sink_pg_ops,
    &baton_sink_redis_ops,
};

/* "sqlite:PATH, postgresql://..." for error messages. */
static void supported_schemes(char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < BATON_ARRAY_SIZE(backends) && n < size; i++) {
        int w = snprintf(buf + n, size - n, "%s%s", i ? ", " : "", backends[i]->usage);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

/* Whether the first len bytes of uri spell scheme (NULL never matches). */
static int scheme_is(const char *scheme, const char *uri, size_t len) {
    return scheme && strlen(scheme) == len && strncasecmp(scheme, uri, len) == 0;
}

int baton_sink__seterr(baton_sink_t *sink, int err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sink->errstr, sizeof(sink->errstr), fmt, ap);
    va_end(ap);
    return err;
}

static int sink_open(const char *uri, const char *group, int lazy, baton_sink_t **out, char *errstr,
                     size_t errstr_size);

/* The backend of uri's scheme, or NULL. */
static const baton_sink_ops_t *sink_backend(const char *uri) {
    const char *colon = uri ? strchr(uri, ':') : NULL;
    size_t scheme_len = colon ? (size_t)(colon - uri) : 0;
    for (size_t i = 0; colon && i < BATON_ARRAY_SIZE(backends); i++)
        if (scheme_is(backends[i]->scheme, uri, scheme_len) ||
            scheme_is(backends[i]->alias, uri, scheme_len))
            return backends[i];
    return NULL;
}

int baton_sink_uri_check(const char *uri, char *errstr, size_t errstr_size) {
    const baton_sink_ops_t *ops = uri && *uri ? sink_backend(uri) : NULL;
    if (ops)
        return ops->check ? ops->check(uri, errstr, errstr_size) : BATON_OK;
    /* The same messages as an open; "-" is a group name that passes. */
    baton_sink_t *sink = NULL;
    int err = sink_open(uri, "-", 1, &sink, errstr, errstr_size);
    baton_sink_destroy(sink);
    return err;
}

char *baton_sink_uri_redact(const char *uri) {
    const baton_sink_ops_t *ops = uri ? sink_backend(uri) : NULL;
    /* An unknown scheme gets the URL and key=value redaction anyway, since
     * a mistyped "postgresq://user:pw@host" still carries a password. */
    return !ops ? baton_sink__pg_redact(uri) : ops->redact ? ops->redact(uri) : xstrdup(uri);
}

static int sink_open(const char *uri, const char *group, int lazy, baton_sink_t **out, char *errstr,
                     size_t errstr_size) {
    char supported[256];
    supported_schemes(supported, sizeof(supported));

    if (errstr && errstr_size)
        errstr[0] = '\0';
    if (!out)
        return baton_seterr(errstr, errstr_size, BATON_INVALID, "no place to return the sink");
    *out = NULL;
    if (!uri || !*uri)
        return baton_seterr(errstr, errstr_size, BATON_INVALID, "sink uri is empty (supported: %s)",
                            supported);

    const char *colon = strchr(uri, ':');
    const baton_sink_ops_t *ops = sink_backend(uri);
    size_t scheme_len = colon ? (size_t)(colon - uri) : 0;
    /* Every message below shows the URI with its secrets replaced. */
    char *shown = baton_sink_uri_redact(uri);
    int err = BATON_INVALID;
    if (!group || !*group) {
        baton_seterr(errstr, errstr_size, err, "sink '%s': group name is empty", shown);
        goto fail;
    }
    if (!colon || colon == uri) {
        baton_seterr(errstr, errstr_size, err, "sink uri '%s' has no scheme (supported: %s)", shown,
                     supported);
        goto fail;
    }
    if (!ops) {
        baton_seterr(errstr, errstr_size, err, "unknown sink scheme '%.*s' in '%s' (supported: %s)",
                     (int)scheme_len, uri, shown, supported);
        goto fail;
    }

    baton_sink_t *sink = xcalloc(1, sizeof(*sink));
    sink->ops = ops;
    sink->uri = shown;
    sink->group = xstrdup(group);
    int missing = lazy && ops->missing ? ops->missing(sink, colon + 1, errstr, errstr_size) : 0;
    if (missing == 1)
        sink->pending = xstrdup(colon + 1);
    err = missing < 0    ? missing
          : missing == 1 ? BATON_OK
                         : ops->open(sink, colon + 1, errstr, errstr_size);
    if (err) {
        free(sink->uri);
        free(sink->group);
        free(sink);
        return err;
    }
    if (sink->pending)
        BLOG_INFO("event=sink_deferred uri=%s group=%s create=first_use", baton_log_v(sink->uri),
                  baton_log_v(group));
    else
        BLOG_INFO("event=sink_opened uri=%s group=%s sink_id=%s", baton_log_v(sink->uri),
                  baton_log_v(group), baton_log_v(sink->sink_id));
    *out = sink;
    return BATON_OK;
fail:
    free(shown);
    return err;
}

int baton_sink_open(const char *uri, const char *group, baton_sink_t **out, char *errstr,
                    size_t errstr_size) {
    return sink_open(uri, group, 0, out, errstr, errstr_size);
}

int baton_sink_open_lazy(const char *uri, const char *group, baton_sink_t **out, char *errstr,
                         size_t errstr_size) {
    return sink_open(uri, group, 1, out, errstr, errstr_size);
}

/* A lazily opened sink's open, on the first call that writes. The message
 * goes to sink->errstr, as every call's does. */
int baton_sink__ready(baton_sink_t *sink) {
    if (!sink->pending)
        return BATON_OK;
    int err = sink->ops->open(sink, sink->pending, sink->errstr, sizeof(sink->errstr));
    if (err != BATON_OK)
        return err;
    free(sink->pending);
    sink->pending = NULL;
    BLOG_INFO("event=sink_opened uri=%s group=%s sink_id=%s", baton_log_v(sink->uri),
              baton_log_v(sink->group), baton_log_v(sink->sink_id));
    return BATON_OK;
}

void baton_sink_destroy(baton_sink_t *sink) {
    if (!sink)
        return;
    if (!sink->pending)
        sink->ops->close(sink);
    free(sink->pending);
    free(sink->expect_group);
    free(sink->uri);
    free(sink->group);
    free(sink);
}

/* The checks of a fence's partition and epoch, before any backend call. */
static int fence_check(baton_sink_t *sink, const char *what, int32_t partition, int64_t epoch) {
    if (partition < 0 || epoch < 0)
        return baton_sink__seterr(sink, BATON_INVALID,
                                  "%s: partition %d epoch %lld: both must be >= 0", what,
                                  (int)partition, (long long)epoch);
    return BATON_OK;
}

/* Sets the out fields of f[0..n) to "nothing happened", with result. */
static void fence_reset(baton_sink_fence_t *f, size_t n, int result) {
    for (size_t i = 0; i < n; i++) {
        f[i].result = result;
        f[i].written = 0;
        f[i].applied = 0;
        f[i].fenced_next = f[i].next_offset = -1;
    }
}

/* The backend's fence path (fence_many) for fences f[0..n), checked, n > 0;
 * the outputs reset first. */
static int fence_run(baton_sink_t *sink, baton_sink_fence_t *f, size_t n) {
    fence_reset(f, n, BATON_INTERNAL);
    int err = baton_sink__ready(sink);
    return err ? err : sink->ops->fence_many(sink, f, n);
}

/* fence(p, e) is fence_many of one partition: the backend's one fence path.
 * Its refusal keeps the backend's message in errstr. */
int baton_sink_fence(baton_sink_t *sink, int32_t partition, int64_t epoch, int64_t *next_offset) {
    if (!sink)
        return BATON_INVALID;
    sink->errstr[0] = '\0';
    if (!next_offset)
        return baton_sink__seterr(sink, BATON_INVALID, "fence: next_offset is NULL");
    int err = fence_check(sink, "fence", partition, epoch);
    if (err)
        return err;
    baton_sink_fence_t f = {.partition = partition, .epoch = epoch};
    if ((err = fence_run(sink, &f, 1)) != BATON_OK)
        return err;
    if (f.result == BATON_OK)
        *next_offset = f.fenced_next;
    return f.result;
}

int baton_sink_fence_many(baton_sink_t *sink, size_t n, const int32_t *partitions,
                          const int64_t *epochs, int64_t *next_offsets, int *results) {
    if (!sink)
        return BATON_INVALID;
    sink->errstr[0] = '\0';
    if (n == 0)
        return BATON_OK;
    if (!partitions || !epochs || !next_offsets || !results)
        return baton_sink__seterr(sink, BATON_INVALID, "fence_many: an array is NULL");
    int err = BATON_OK;
    for (size_t i = 0; i < n && !err; i++)
        err = fence_check(sink, "fence_many", partitions[i], epochs[i]);
    if (err)
        return err;
    baton_sink_fence_t *f = xcalloc(n, sizeof(*f));
    for (size_t i = 0; i < n; i++)
        f[i] = (baton_sink_fence_t){.partition = partitions[i], .epoch = epochs[i]};
    err = fence_run(sink, f, n);
    for (size_t i = 0; i < n && !err; i++) {
        results[i] = f[i].result;
        if (f[i].result == BATON_OK)
            next_offsets[i] = f[i].fenced_next;
    }
    free(f);
    if (!err)
        sink->errstr[0] = '\0'; /* refusals are in results, not an error */
    return err;
}

static int inputs_check(baton_sink_t *sink, int32_t partition, const baton_sink_input_t *inputs,
                        size_t ninputs);

/* fence_write's checks of one partition: its fence's, ascending partitions,
 * and held inputs a write would take, strictly ascending from `from` on. */
static int fence_write_check(baton_sink_t *sink, const baton_sink_fence_t *f, size_t i) {
    int err = fence_check(sink, "fence_write", f[i].partition, f[i].epoch);
    if (!err && i > 0 && f[i].partition <= f[i - 1].partition)
        err = baton_sink__seterr(sink, BATON_INVALID,
                                 "fence_write: partition %d after %d: partitions must be distinct "
                                 "and ascending",
                                 (int)f[i].partition, (int)f[i - 1].partition);
    if (!err && f[i].from < 0)
        err = baton_sink__seterr(sink, BATON_INVALID,
                                 "fence_write: partition %d: from %lld must be >= 0",
                                 (int)f[i].partition, (long long)f[i].from);
    if (!err)
        err = inputs_check(sink, f[i].partition, f[i].inputs, f[i].ninputs);
    for (size_t j = 0; j < f[i].ninputs && !err; j++) {
        int64_t lo = j ? f[i].inputs[j - 1].offset + 1 : f[i].from;
        if (f[i].inputs[j].offset < lo)
            err = baton_sink__seterr(sink, BATON_INVALID,
                                     "fence_write: partition %d input %zu: offset %lld below "
                                     "%lld: held inputs ascend from `from` (%lld)",
                                     (int)f[i].partition, j, (long long)f[i].inputs[j].offset,
                                     (long long)lo, (long long)f[i].from);
    }
    return err;
}

int baton_sink_fence_write(baton_sink_t *sink, baton_sink_fence_t *fences, size_t n) {
    if (!sink)
        return BATON_INVALID;
    sink->errstr[0] = '\0';
    if (n == 0)
        return BATON_OK;
    if (!fences)
        return baton_sink__seterr(sink, BATON_INVALID, "fence_write: %zu fences but NULL", n);
    fence_reset(fences, n, BATON_INVALID);
    int err = BATON_OK;
    for (size_t i = 0; i < n && !err; i++)
        err = fence_write_check(sink, fences, i);
    if (err)
        return err;
    err = fence_run(sink, fences, n);
    for (size_t i = 0; i < n; i++) {
        baton_sink_fence_t *f = &fences[i];
        if (err || f->result != BATON_OK || !f->written) {
            f->written = 0;
            f->applied = 0;
            f->next_offset = f->fenced_next;
        }
    }
    if (!err)
        sink->errstr[0] = '\0'; /* refusals are in the results, not an error */
    return err;
}

/* The checks both write calls share, before any backend call. */
static int write_check(baton_sink_t *sink, int32_t partition, int64_t epoch, size_t *applied) {
    sink->errstr[0] = '\0';
    if (applied)
        *applied = 0;
    if (partition < 0 || epoch < 0)
        return baton_sink__seterr(sink, BATON_INVALID,
                                  "write: partition %d epoch %lld: both must be >= 0",
                                  (int)partition, (long long)epoch);
    return BATON_OK;
}

/* write(p, e, batch) is write_many of one batch: the backend's one write
 * path. Its refusal keeps the backend's message in errstr. */
static int write_one(baton_sink_t *sink, int32_t partition, int64_t epoch,
                     const baton_sink_input_t *inputs, size_t ninputs, int64_t *next_offset,
                     size_t *applied) {
    baton_sink_batch_t b = {.partition = partition,
                            .epoch = epoch,
                            .inputs = inputs,
                            .ninputs = ninputs,
                            .result = BATON_INTERNAL};
    int err = sink->ops->write_many(sink, &b, 1);
    if (err)
        return err;
    if (b.result == BATON_OK) {
        if (next_offset)
            *next_offset = b.next_offset;
        if (applied)
            *applied = b.applied;
    }
    return b.result;
}

/* Whether an offset can be stored: INT64_MAX is refused because
 * next_offset would overflow; Kafka offsets never come near it. */
static int offset_ok(int64_t offset) { return offset >= 0 && offset != INT64_MAX; }

int baton_sink_write(baton_sink_t *sink, int32_t partition, int64_t epoch,
                     const baton_record_t *records, size_t nrecords, int64_t *next_offset,
                     size_t *applied) {
    if (!sink)
        return BATON_INVALID;
    int err = write_check(sink, partition, epoch, applied);
    if (err)
        return err;
    if (nrecords && !records)
        return baton_sink__seterr(sink, BATON_INVALID, "write: %zu records but records is NULL",
                                  nrecords);
    /* Reject the batch before opening a transaction, so a malformed record
     * can never leave half a batch applied. */
    for (size_t i = 0; i < nrecords; i++) {
        const baton_record_t *r = &records[i];
        if (!offset_ok(r->offset))
            return baton_sink__seterr(sink, BATON_INVALID,
                                      "write: partition %d record %zu: offset %lld out of range",
                                      (int)partition, i, (long long)r->offset);
        if ((!r->key && r->key_len) || (!r->value && r->value_len))
            return baton_sink__seterr(sink, BATON_INVALID,
                                      "write: partition %d record %zu: NULL key or value "
                                      "with a non-zero length",
                                      (int)partition, i);
    }
    if ((err = baton_sink__ready(sink)) != BATON_OK)
        return err;
    /* A record is an input with exactly one output: itself. */
    baton_sink_input_t *in = nrecords ? xmalloc(sizeof(*in) * nrecords) : NULL;
    baton_sink_output_t *out = nrecords ? xmalloc(sizeof(*out) * nrecords) : NULL;
    for (size_t i = 0; i < nrecords; i++) {
        out[i] = (baton_sink_output_t){records[i].key, records[i].key_len, records[i].value,
                                       records[i].value_len};
        in[i] = (baton_sink_input_t){records[i].offset, &out[i], 1};
    }
    err = write_one(sink, partition, epoch, in, nrecords, next_offset, applied);
    free(out);
    free(in);
    return err;
}

int baton_sink_write_outputs(baton_sink_t *sink, int32_t partition, int64_t epoch,
                             const baton_sink_input_t *inputs, size_t ninputs, int64_t *next_offset,
                             size_t *applied) {
    if (!sink)
        return BATON_INVALID;
    int err = write_check(sink, partition, epoch, applied);
    if (err)
        return err;
    if ((err = inputs_check(sink, partition, inputs, ninputs)) != BATON_OK)
        return err;
    if ((err = baton_sink__ready(sink)) != BATON_OK)
        return err;
    return write_one(sink, partition, epoch, inputs, ninputs, next_offset, applied);
}

int baton_sink_write_many(baton_sink_t *sink, baton_sink_batch_t *batches, size_t n) {
    if (!sink)
        return BATON_INVALID;
    sink->errstr[0] = '\0';
    if (n && !batches)
        return baton_sink__seterr(sink, BATON_INVALID, "write_many: %zu batches but NULL", n);
    for (size_t i = 0; i < n; i++) {
        baton_sink_batch_t *b = &batches[i];
        b->result = BATON_INVALID;
        b->applied = 0;
        int err = write_check(sink, b->partition, b->epoch, NULL);
        if (err == BATON_OK && i > 0 && b->partition <= batches[i - 1].partition)
            err = baton_sink__seterr(sink, BATON_INVALID,
                                     "write_many: partition %d after %d: partitions must be "
                                     "distinct and ascending",
                                     (int)b->partition, (int)batches[i - 1].partition);
        if (err == BATON_OK)
            err = inputs_check(sink, b->partition, b->inputs, b->ninputs);
        if (err != BATON_OK)
            return err;
    }
    if (n == 0)
        return BATON_OK;
    int err = baton_sink__ready(sink);
    if (!err)
        err = sink->ops->write_many(sink, batches, n);
    if (!err)
        sink->errstr[0] = '\0'; /* refusals are in the results, not an error */
    return err;
}

static int inputs_check(baton_sink_t *sink, int32_t partition, const baton_sink_input_t *inputs,
                        size_t ninputs) {
    if (ninputs && !inputs)
        return baton_sink__seterr(sink, BATON_INVALID, "write: %zu inputs but inputs is NULL",
                                  ninputs);
    for (size_t i = 0; i < ninputs; i++) {
        const baton_sink_input_t *in = &inputs[i];
        if (!offset_ok(in->offset))
            return baton_sink__seterr(sink, BATON_INVALID,
                                      "write: partition %d input %zu: offset %lld out of range",
                                      (int)partition, i, (long long)in->offset);
        if (in->noutputs && !in->outputs)
            return baton_sink__seterr(sink, BATON_INVALID,
                                      "write: partition %d input %zu (offset %lld): %zu outputs "
                                      "but outputs is NULL",
                                      (int)partition, i, (long long)in->offset, in->noutputs);
        for (size_t j = 0; j < in->noutputs; j++) {
            const baton_sink_output_t *o = &in->outputs[j];
            if ((!o->key && o->key_len) || (!o->value && o->value_len))
                return baton_sink__seterr(sink, BATON_INVALID,
                                          "write: partition %d offset %lld output %zu: NULL key "
                                          "or value with a non-zero length",
                                          (int)partition, (long long)in->offset, j);
        }
    }
    return BATON_OK;
}

/* The start of a fence read: 1 when there is nothing to read (a sink not
 * created yet, and still not there), 0 to read, or an error. */
static int fences_start(baton_sink_t *sink, baton_fence_row_t **rows, size_t *nrows) {
    *rows = NULL;
    *nrows = 0;
    if (sink->pending &&
        sink->ops->missing(sink, sink->pending, sink->errstr, sizeof(sink->errstr)) == 1)
        return 1;
    return baton_sink__ready(sink);
}

int baton_sink_fences(baton_sink_t *sink, baton_fence_row_t **rows, size_t *nrows) {
    if (!sink)
        return BATON_INVALID;
    sink->errstr[0] = '\0';
    if (!rows || !nrows)
        return baton_sink__seterr(sink, BATON_INVALID, "fences: rows or nrows is NULL");
    int err = fences_start(sink, rows, nrows);
    if (err)
        return err == 1 ? BATON_OK : err;
    return sink->ops->fences(sink, rows, nrows);
}

int baton_sink_fences_of(baton_sink_t *sink, const int32_t *parts, size_t n,
                         baton_fence_row_t **rows, size_t *nrows) {
    if (!sink)
        return BATON_INVALID;
    sink->errstr[0] = '\0';
    if (!rows || !nrows || (n && !parts))
        return baton_sink__seterr(sink, BATON_INVALID, "fences_of: parts, rows or nrows is NULL");
    *rows = NULL;
    *nrows = 0;
    for (size_t i = 0; i < n; i++)
        if (parts[i] < 0 || (i > 0 && parts[i] <= parts[i - 1]))
            return baton_sink__seterr(sink, BATON_INVALID,
                                      "fences_of: partition %d at %zu: partitions must be "
                                      "non-negative, distinct and ascending",
                                      (int)parts[i], i);
    if (n == 0)
        return BATON_OK;
    int err = fences_start(sink, rows, nrows);
    if (err)
        return err == 1 ? BATON_OK : err;
    return sink->ops->fences_of(sink, parts, n, rows, nrows);
}

int baton_sink__stale(baton_sink_t *sink, const char *op, int32_t partition, int64_t epoch,
                      int64_t stored_epoch) {
    BLOG_WARN("event=sink_stale op=%s uri=%s group=%s partition=%d epoch=%lld stored_epoch=%lld",
              baton_log_v(op), baton_log_v(sink->uri), baton_log_v(sink->group), (int)partition,
              (long long)epoch, (long long)stored_epoch);
    return baton_sink__seterr(sink, BATON_STALE,
                              "sink '%s' group '%s' partition %d: %s with epoch %lld refused: "
                              "epoch %lld owns it",
                              sink->uri, sink->group, (int)partition, op, (long long)epoch,
                              (long long)stored_epoch);
}

int baton_sink__unfenced(baton_sink_t *sink, int32_t partition, int64_t epoch, int found,
                         int64_t stored_epoch) {
    BLOG_WARN("event=sink_unfenced uri=%s group=%s partition=%d epoch=%lld", baton_log_v(sink->uri),
              baton_log_v(sink->group), (int)partition, (long long)epoch);
    if (!found)
        return baton_sink__seterr(sink, BATON_UNFENCED,
                                  "sink '%s' group '%s' partition %d: write with epoch %lld "
                                  "before any fence",
                                  sink->uri, sink->group, (int)partition, (long long)epoch);
    return baton_sink__seterr(sink, BATON_UNFENCED,
                              "sink '%s' group '%s' partition %d: write with epoch %lld but "
                              "the fence holds epoch %lld (fence first)",
                              sink->uri, sink->group, (int)partition, (long long)epoch,
                              (long long)stored_epoch);
}

int baton_sink__set_busy_timeout(baton_sink_t *sink, int timeout_ms) {
    if (!sink || timeout_ms < 0)
        return BATON_INVALID;
    sink->errstr[0] = '\0';
    int err = baton_sink__ready(sink);
    return err ? err : sink->ops->set_busy_timeout(sink, timeout_ms);
}

int baton_sink_meta(baton_sink_t *sink, baton_sink_meta_t *out) {
    if (!sink)
        return BATON_INVALID;
    sink->errstr[0] = '\0';
    if (!out)
        return baton_sink__seterr(sink, BATON_INVALID, "meta: out is NULL");
    memset(out, 0, sizeof(*out));
    if (sink->pending) {
        /* Deferred: if another worker has created the target since, open
         * it now (its id is the one to compare); else no id, no group. */
        int m = sink->ops->missing(sink, sink->pending, sink->errstr, sizeof(sink->errstr));
        if (m < 0)
            return m;
        if (m == 1)
            return BATON_OK; /* sink_id "" */
        int err = baton_sink__ready(sink);
        if (err != BATON_OK)
            return err;
    }
    memcpy(out->sink_id, sink->sink_id, sizeof(out->sink_id));
    return sink->ops->group_get(sink, out);
}

int baton_sink_expect_group(baton_sink_t *sink, const char *group_uuid) {
    if (!sink)
        return BATON_INVALID;
    sink->errstr[0] = '\0';
    if (group_uuid && baton_uuid_valid(group_uuid) != 0)
        return baton_sink__seterr(sink, BATON_INVALID, "expect_group: '%s' is not a UUID",
                                  group_uuid);
    free(sink->expect_group);
    sink->expect_group = group_uuid ? xstrdup(group_uuid) : NULL;
    return BATON_OK;
}

void baton_sink_set_commit_gate(baton_sink_t *sink, baton_sink_gate_fn gate, void *arg) {
    if (!sink)
        return;
    sink->gate = gate;
    sink->gate_arg = gate ? arg : NULL;
}

int baton_sink__gate_open(baton_sink_t *sink) {
    BATON_FAILPOINT("sink.before_commit");
    return !sink->gate || sink->gate(sink->gate_arg);
}

int baton_sink__withheld(baton_sink_t *sink, int32_t partition) {
    BLOG_WARN("event=sink_commit_withheld uri=%s group=%s partition=%d reason=gate",
              baton_log_v(sink->uri), baton_log_v(sink->group), (int)partition);
    return baton_sink__seterr(sink, BATON_CONNECTION,
                              "sink %s: write of partition %d withheld before its commit: the "
                              "writer may no longer write (suspended); rolled back",
                              sink->uri, (int)partition);
}

int baton_sink__commit_gate(baton_sink_t *sink, const baton_sink_batch_t *batches, size_t n) {
    int applies = 0;
    for (size_t i = 0; i < n && !applies; i++)
        applies = batches[i].result == BATON_OK;
    if (!applies || baton_sink__gate_open(sink))
        return BATON_OK;
    return baton_sink__withheld(sink, batches[0].partition);
}

int baton_sink__fence_gate(baton_sink_t *sink, const baton_sink_fence_t *fences, size_t n) {
    int applies = 0;
    for (size_t i = 0; i < n && !applies; i++)
        applies = fences[i].result == BATON_OK && fences[i].written && fences[i].applied > 0;
    if (!applies || baton_sink__gate_open(sink))
        return BATON_OK;
    return baton_sink__withheld(sink, fences[0].partition);
}

int baton_sink__fence_changed(baton_sink_t *sink, int32_t partition) {
    return baton_sink__seterr(sink, BATON_INTERNAL,
                              "sink '%s' group '%s' partition %d: the fence row changed inside "
                              "its own transaction",
                              sink->uri, sink->group, (int)partition);
}

int baton_sink__group_conflict(baton_sink_t *sink, const char *found, int64_t bound_ms) {
    char when[32];
    baton_time_iso(bound_ms, when, sizeof(when));
    BLOG_ERROR("event=sink_group_conflict uri=%s group=%s sink_group_uuid=%s group_uuid=%s",
               baton_log_v(sink->uri), baton_log_v(sink->group), baton_log_v(found),
               baton_log_v(sink->expect_group));
    return baton_sink__seterr(sink, BATON_CONFLICT,
                              "sink %s (id %s) serves another group named '%s': it records group "
                              "id %s (since %s), this group's id is %s; nothing fenced",
                              sink->uri, sink->sink_id, sink->group, found, when,
                              sink->expect_group);
}

const char *baton_sink_errstr(const baton_sink_t *sink) { return sink ? sink->errstr : "no sink"; }

int baton_sink__check_column(const baton_sink_t *sink, const char *table,
                             const baton_sink_col_t *cols, size_t ncols, size_t i, const char *name,
                             const char *type, int pk, char *errstr, size_t errstr_size) {
    if (!name)
        return baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                            "sink '%s': table '%s' has the wrong shape: missing column '%s' %s",
                            sink->uri, table, cols[i].name, cols[i].type);
    if (i >= ncols)
        return baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                            "sink '%s': table '%s' has the wrong shape: unexpected column "
                            "'%s' %s",
                            sink->uri, table, name, type);
    if (strcasecmp(name, cols[i].name) != 0 || strcasecmp(type, cols[i].type) != 0 ||
        pk != cols[i].pk)
        return baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                            "sink '%s': table '%s' has the wrong shape: column %zu is '%s' "
                            "%s%s, expected '%s' %s%s",
                            sink->uri, table, i + 1, name, type, pk ? " (key)" : "", cols[i].name,
                            cols[i].type, cols[i].pk ? " (key)" : "");
    return BATON_OK;
}
