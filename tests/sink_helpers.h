/* sink_helpers.h: the calls the sink tests share (tests/sink_conformance.c
 * and each backend's own tests), failing the cmocka test on an unexpected
 * error. Include <cmocka.h> (and what it needs) and sink.h first. */
#ifndef BATON_TESTS_SINK_HELPERS_H
#define BATON_TESTS_SINK_HELPERS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_err.h"
#include "sink.h"

/* A handle on uri for group (as another process would open it). */
static inline baton_sink_t *open_as(const char *uri, const char *group) {
    char err[512];
    baton_sink_t *sink = NULL;
    int rc = baton_sink_open(uri, group, &sink, err, sizeof(err));
    if (rc != BATON_OK)
        fail_msg("open %s: %s (%s)", uri, err, baton_err_name(rc));
    assert_non_null(sink);
    return sink;
}

/* fence(p, e) that must succeed; returns next_offset. */
static inline int64_t fence_ok(baton_sink_t *sink, int32_t partition, int64_t epoch) {
    int64_t next = -1;
    int rc = baton_sink_fence(sink, partition, epoch, &next);
    if (rc != BATON_OK)
        fail_msg("fence p=%d e=%lld: %s", (int)partition, (long long)epoch,
                 baton_sink_errstr(sink));
    return next;
}

static inline baton_record_t rec(int64_t offset, const char *value) {
    return (baton_record_t){
        .offset = offset, .value = value, .value_len = value ? strlen(value) : 0};
}

/* Writes values named "v<offset>" for the given offsets (at most 32). */
static inline int write_offsets(baton_sink_t *sink, int32_t partition, int64_t epoch,
                                const int64_t *offsets, size_t n, int64_t *next, size_t *applied) {
    baton_record_t recs[32];
    static char vals[32][24];
    assert_true(n <= 32);
    for (size_t i = 0; i < n; i++) {
        snprintf(vals[i], sizeof(vals[i]), "v%lld", (long long)offsets[i]);
        recs[i] = rec(offsets[i], vals[i]);
    }
    return baton_sink_write(sink, partition, epoch, recs, n, next, applied);
}

/* The fence row of partition as baton_sink_fences reports it, in *out.
 * Returns 1 if there is one, 0 if not. */
static inline int fence_find(baton_sink_t *sink, int32_t partition, baton_fence_row_t *out) {
    baton_fence_row_t *rows = NULL;
    size_t n = 0;
    int rc = baton_sink_fences(sink, &rows, &n);
    if (rc != BATON_OK)
        fail_msg("fences: %s", baton_sink_errstr(sink));
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].partition == partition) {
            *out = rows[i];
            found = 1;
        }
    free(rows);
    return found;
}

/* The fence row of partition; fails the test if there is none. */
static inline baton_fence_row_t fence_row(baton_sink_t *sink, int32_t partition) {
    baton_fence_row_t out = {.partition = -1};
    if (!fence_find(sink, partition, &out))
        fail_msg("no fence row for partition %d", (int)partition);
    return out;
}

#endif
