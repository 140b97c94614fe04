/* test_sink_fence_many.c: baton_sink_fence_many and baton_sink_write_many,
 * the fence and the write of many partitions in one transaction (issue 5:
 * a worker acquiring many partitions at once fences them with one commit,
 * and writes every partition that is due with one commit), against the
 * SQLite backend on a real file in a fresh temporary directory per test.
 * They must keep the single call's rules partition by partition: new rows
 * start at next_offset 0, a stored higher epoch is STALE (and counted in
 * rejected, without stopping the others), a write before its fence is
 * UNFENCED (nothing stored, the others go through), an equal epoch is a
 * retry, offsets below next_offset are duplicates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton_err.h"
#include "baton_log.h"
#include "sink.h"
#include "sink_fixture.h"

static void write_one(baton_sink_t *s, int32_t p, int64_t epoch, int64_t offset, int want) {
    baton_record_t r = {.offset = offset, .value = "v", .value_len = 1};
    int64_t next = -1;
    assert_int_equal(baton_sink_write(s, p, epoch, &r, 1, &next, NULL), want);
}

/* New partitions: every one fenced, next_offset 0, writable at its epoch. */
static void test_new_partitions(void **state) {
    sink_fx_t *fx = *state;
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
    sink_fx_t *fx = *state;
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
    sink_fx_t *fx = *state;
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
    sink_fx_t *fx = *state;
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

static void inputs_of(baton_sink_input_t *ins, baton_sink_output_t *outs, int64_t first, size_t n) {
    for (size_t i = 0; i < n; i++) {
        outs[i] = (baton_sink_output_t){.value = "v", .value_len = 1};
        ins[i] =
            (baton_sink_input_t){.offset = first + (int64_t)i, .outputs = &outs[i], .noutputs = 1};
    }
}

/* One transaction, four partitions: two apply, one is stale (a newer
 * owner fenced it: counted in rejected), one was never fenced; the refusals
 * do not stop the others. */
static void test_write_many_mixed(void **state) {
    sink_fx_t *fx = *state;
    int32_t parts[] = {0, 1, 2};
    int64_t epochs[] = {10, 10, 10};
    int64_t next[3];
    int res[3];
    assert_int_equal(baton_sink_fence_many(fx->sink, 3, parts, epochs, next, res), BATON_OK);
    int64_t n1 = -1;
    assert_int_equal(baton_sink_fence(fx->sink, 1, 20, &n1), BATON_OK); /* the newer owner */
    baton_sink_input_t ins[4][3];
    baton_sink_output_t outs[4][3];
    for (int i = 0; i < 4; i++)
        inputs_of(ins[i], outs[i], 0, 3);
    baton_sink_batch_t b[4] = {
        {.partition = 0, .epoch = 10, .inputs = ins[0], .ninputs = 3},
        {.partition = 1, .epoch = 10, .inputs = ins[1], .ninputs = 3},
        {.partition = 2, .epoch = 10, .inputs = ins[2], .ninputs = 2},
        {.partition = 3, .epoch = 10, .inputs = ins[3], .ninputs = 1},
    };
    assert_int_equal(baton_sink_write_many(fx->sink, b, 4), BATON_OK);
    assert_int_equal(b[0].result, BATON_OK);
    assert_int_equal(b[0].next_offset, 3);
    assert_int_equal(b[0].applied, 3);
    assert_int_equal(b[1].result, BATON_STALE);
    assert_int_equal(b[2].result, BATON_OK);
    assert_int_equal(b[2].next_offset, 2);
    assert_int_equal(b[3].result, BATON_UNFENCED);
    baton_fence_row_t r;
    assert_true(sink_fx_fence_find(fx->sink, 0, &r));
    assert_int_equal(r.next_offset, 3);
    assert_true(sink_fx_fence_find(fx->sink, 1, &r));
    assert_int_equal(r.epoch, 20);
    assert_int_equal(r.next_offset, 0); /* the stale batch stored nothing */
    assert_int_equal(r.rejected, 1);
    assert_true(sink_fx_fence_find(fx->sink, 2, &r));
    assert_int_equal(r.next_offset, 2);
    assert_false(sink_fx_fence_find(fx->sink, 3, &r)); /* unfenced: no row made */
    /* The newer owner of partition 1 writes from where the sink says. */
    write_one(fx->sink, 1, 20, 0, BATON_OK);
}

/* A batch written again (a retry after an unknown outcome) applies nothing
 * twice; a batch that overlaps applies only its new offsets. */
static void test_write_many_retry(void **state) {
    sink_fx_t *fx = *state;
    int32_t parts[] = {4, 7};
    int64_t epochs[] = {3, 3};
    int64_t next[2];
    int res[2];
    assert_int_equal(baton_sink_fence_many(fx->sink, 2, parts, epochs, next, res), BATON_OK);
    baton_sink_input_t ins[2][4];
    baton_sink_output_t outs[2][4];
    inputs_of(ins[0], outs[0], 0, 2);
    inputs_of(ins[1], outs[1], 0, 4);
    baton_sink_batch_t b[2] = {
        {.partition = 4, .epoch = 3, .inputs = ins[0], .ninputs = 2},
        {.partition = 7, .epoch = 3, .inputs = ins[1], .ninputs = 4},
    };
    assert_int_equal(baton_sink_write_many(fx->sink, b, 2), BATON_OK);
    assert_int_equal(b[0].applied + b[1].applied, 6);
    assert_int_equal(baton_sink_write_many(fx->sink, b, 2), BATON_OK);
    assert_int_equal(b[0].result, BATON_OK);
    assert_int_equal(b[0].applied, 0);
    assert_int_equal(b[1].applied, 0);
    assert_int_equal(b[1].next_offset, 4);
    inputs_of(ins[0], outs[0], 1, 3); /* offsets 1..3: 1 is a duplicate */
    b[0].ninputs = 3;
    b[1].ninputs = 0;
    assert_int_equal(baton_sink_write_many(fx->sink, b, 2), BATON_OK);
    assert_int_equal(b[0].applied, 2);
    assert_int_equal(b[0].next_offset, 4);
    assert_int_equal(b[1].applied, 0);
}

/* Bad input is refused before anything is written: partitions out of
 * order or repeated, a bad offset in a later batch. */
static void test_write_many_bad_input(void **state) {
    sink_fx_t *fx = *state;
    int64_t n0 = -1, n1 = -1;
    assert_int_equal(baton_sink_fence(fx->sink, 0, 1, &n0), BATON_OK);
    assert_int_equal(baton_sink_fence(fx->sink, 1, 1, &n1), BATON_OK);
    baton_sink_input_t ins[2][1];
    baton_sink_output_t outs[2][1];
    inputs_of(ins[0], outs[0], 0, 1);
    inputs_of(ins[1], outs[1], 0, 1);
    baton_sink_batch_t b[2] = {
        {.partition = 1, .epoch = 1, .inputs = ins[0], .ninputs = 1},
        {.partition = 0, .epoch = 1, .inputs = ins[1], .ninputs = 1},
    };
    assert_int_equal(baton_sink_write_many(fx->sink, b, 2), BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(fx->sink), "ascending"));
    b[0].partition = 0;
    b[1].partition = 1;
    ins[1][0].offset = -5;
    assert_int_equal(baton_sink_write_many(fx->sink, b, 2), BATON_INVALID);
    baton_fence_row_t r;
    assert_true(sink_fx_fence_find(fx->sink, 0, &r));
    assert_int_equal(r.next_offset, 0); /* the good first batch was not written either */
    assert_int_equal(baton_sink_write_many(fx->sink, NULL, 0), BATON_OK);
    assert_int_equal(baton_sink_write_many(fx->sink, NULL, 2), BATON_INVALID);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, sink_fx_setup_open, sink_fx_teardown)

int main(void) {
    /* The tests provoke stale fences on purpose. */
    baton_log_level = BATON_LOG_ERROR;
    const struct CMUnitTest tests[] = {
        T(test_new_partitions),       T(test_stale_among_others),
        T(test_retry_is_idempotent),  T(test_bad_input),
        T(test_write_many_mixed),     T(test_write_many_retry),
        T(test_write_many_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
