/* test_sink_fence_many.c: baton_sink_fence_many, the fence of many
 * partitions in one transaction (issue 5: a worker acquiring many
 * partitions at once fences them with one commit), against the SQLite
 * backend on a real file in a fresh temporary directory per test. It must
 * keep the single fence's rules partition by partition: new rows start at
 * next_offset 0, a stored higher epoch is STALE (and counted in rejected,
 * without stopping the others), an equal epoch is a retry, a write at the
 * fenced epoch is accepted afterwards. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "baton_err.h"
#include "baton_log.h"
#include "sink.h"

typedef struct {
    char dir[64];
    char uri[160];
    baton_sink_t *sink;
} fx_t;

static int fx_setup(void **state) {
    fx_t *fx = calloc(1, sizeof(*fx));
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/baton-test-fmany-XXXXXX");
    if (!mkdtemp(fx->dir)) {
        free(fx);
        return -1;
    }
    snprintf(fx->uri, sizeof(fx->uri), "sqlite:%s/sink.db", fx->dir);
    char err[512];
    if (baton_sink_open(fx->uri, "g", &fx->sink, err, sizeof(err)) != BATON_OK) {
        fprintf(stderr, "open: %s\n", err);
        return -1;
    }
    *state = fx;
    return 0;
}

static int fx_teardown(void **state) {
    fx_t *fx = *state;
    baton_sink_destroy(fx->sink);
    DIR *d = opendir(fx->dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            char p[512];
            snprintf(p, sizeof(p), "%s/%s", fx->dir, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    int rc = rmdir(fx->dir);
    free(fx);
    return rc;
}

static void write_one(baton_sink_t *s, int32_t p, int64_t epoch, int64_t offset, int want) {
    baton_record_t r = {.offset = offset, .value = "v", .value_len = 1};
    int64_t next = -1;
    assert_int_equal(baton_sink_write(s, p, epoch, &r, 1, &next, NULL), want);
}

/* New partitions: every one fenced, next_offset 0, writable at its epoch. */
static void test_new_partitions(void **state) {
    fx_t *fx = *state;
    int32_t parts[] = {0, 1, 2, 5};
    int64_t epochs[] = {10, 10, 11, 12};
    int64_t next[4] = {-1, -1, -1, -1};
    int res[4] = {-1, -1, -1, -1};
    assert_int_equal(baton_sink_fence_many(fx->sink, 4, parts, epochs, next, res), BATON_OK);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(res[i], BATON_OK);
        assert_int_equal(next[i], 0);
    }
    write_one(fx->sink, 5, 12, 7, BATON_OK);
    write_one(fx->sink, 2, 10, 0, BATON_STALE); /* 11 owns it */
}

/* Mixed: a stale one is refused and counted, the others are fenced and
 * return their stored next_offset. */
static void test_stale_among_others(void **state) {
    fx_t *fx = *state;
    int64_t next = 0;
    assert_int_equal(baton_sink_fence(fx->sink, 1, 50, &next), BATON_OK);
    write_one(fx->sink, 1, 50, 41, BATON_OK);
    assert_int_equal(baton_sink_fence(fx->sink, 2, 20, &next), BATON_OK);
    write_one(fx->sink, 2, 20, 9, BATON_OK);

    int32_t parts[] = {1, 2, 3};
    int64_t epochs[] = {40, 30, 30}; /* 1 is owned by 50: stale */
    int64_t nx[3] = {-1, -1, -1};
    int res[3] = {-1, -1, -1};
    assert_int_equal(baton_sink_fence_many(fx->sink, 3, parts, epochs, nx, res), BATON_OK);
    assert_int_equal(res[0], BATON_STALE);
    assert_int_equal(res[1], BATON_OK);
    assert_int_equal(nx[1], 10);
    assert_int_equal(res[2], BATON_OK);
    assert_int_equal(nx[2], 0);

    baton_fence_row_t *rows = NULL;
    size_t n = 0;
    assert_int_equal(baton_sink_fences(fx->sink, &rows, &n), BATON_OK);
    assert_int_equal(n, 3);
    assert_int_equal(rows[0].partition, 1);
    assert_int_equal(rows[0].epoch, 50); /* unchanged */
    assert_int_equal(rows[0].rejected, 1);
    assert_int_equal(rows[1].epoch, 30);
    assert_int_equal(rows[1].rejected, 0);
    free(rows);
    write_one(fx->sink, 2, 20, 10, BATON_STALE); /* the old owner is fenced off */
    write_one(fx->sink, 2, 30, 10, BATON_OK);
}

/* The same call again (a retry after a lost reply) changes nothing. */
static void test_retry_is_idempotent(void **state) {
    fx_t *fx = *state;
    int32_t parts[] = {0, 1};
    int64_t epochs[] = {7, 8};
    int64_t nx[2];
    int res[2];
    for (int round = 0; round < 2; round++) {
        assert_int_equal(baton_sink_fence_many(fx->sink, 2, parts, epochs, nx, res), BATON_OK);
        assert_int_equal(res[0], BATON_OK);
        assert_int_equal(res[1], BATON_OK);
        if (round == 0)
            write_one(fx->sink, 1, 8, 3, BATON_OK);
    }
    assert_int_equal(nx[1], 4);
}

/* Bad arguments are refused with a message, nothing is stored. */
static void test_bad_input(void **state) {
    fx_t *fx = *state;
    int32_t parts[] = {0, -1};
    int64_t epochs[] = {1, 1};
    int64_t nx[2];
    int res[2];
    assert_int_equal(baton_sink_fence_many(fx->sink, 2, parts, epochs, nx, res), BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(fx->sink), "partition -1"));
    assert_int_equal(baton_sink_fence_many(fx->sink, 1, parts, epochs, NULL, res), BATON_INVALID);
    assert_int_equal(baton_sink_fence_many(fx->sink, 0, NULL, NULL, NULL, NULL), BATON_OK);
    baton_fence_row_t *rows = NULL;
    size_t n = 5;
    assert_int_equal(baton_sink_fences(fx->sink, &rows, &n), BATON_OK);
    assert_int_equal(n, 0);
    free(rows);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
    /* The tests provoke stale fences on purpose. */
    baton_log_level = BATON_LOG_ERROR;
    const struct CMUnitTest tests[] = {
        T(test_new_partitions),
        T(test_stale_among_others),
        T(test_retry_is_idempotent),
        T(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
