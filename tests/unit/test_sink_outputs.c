/* test_sink_outputs.c: baton_sink_write_outputs, the sink write for
 * processors (zero or more outputs per input offset), against the SQLite
 * backend on a real file in a fresh temporary directory per test. Stored
 * rows are read back with raw SQLite, as external tools would: output 0 in
 * baton_output, outputs 1..n-1 in baton_output_more, next_offset past every
 * consumed input, outputs or not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "baton_err.h"
#include "baton_log.h"
#include "sink.h"
#include "sink_fixture.h"

/* Runs a query on the file with raw SQLite and returns its rows as
 * "a|b|c;" concatenated (NULL printed as "NULL"). */
static char *query(const sink_fx_t *fx, const char *sql) {
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(fx->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    static char out[4096];
    size_t n = 0;
    out[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const char *v = sqlite3_column_type(st, c) == SQLITE_NULL
                                ? "NULL"
                                : (const char *)sqlite3_column_text(st, c);
            n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", c ? "|" : "", v);
        }
        n += (size_t)snprintf(out + n, sizeof(out) - n, ";");
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

static void exec(const sink_fx_t *fx, const char *sql) {
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static size_t len_of(const char *s) { return s ? strlen(s) : 0; }
#define OUT(k, v) ((baton_sink_output_t){(k), len_of(k), (v), len_of(v)})

/* Zero, one and several outputs per input: rows, seqs, next_offset. */
static void test_outputs_layout(void **state) {
    sink_fx_t *fx = *state;
    int64_t next = -1;
    assert_int_equal(baton_sink_fence(fx->sink, 0, 7, &next), BATON_OK);
    assert_int_equal(next, 0);
    baton_sink_output_t o0[] = {OUT("k", "a")};
    baton_sink_output_t o2[] = {OUT("k", "x"), OUT(NULL, "y"), OUT("k", "")};
    baton_sink_input_t in[] = {
        {0, o0, 1}, {1, NULL, 0}, {2, o2, 3}, {5, NULL, 0}, /* gap 3-4, last has no output */
    };
    size_t applied = 0;
    assert_int_equal(baton_sink_write_outputs(fx->sink, 0, 7, in, 4, &next, &applied), BATON_OK);
    assert_int_equal(applied, 4);
    assert_int_equal(next, 6); /* past the last input, which stored nothing */
    assert_string_equal(query(fx, "SELECT partition, offset, epoch, key, value FROM baton_output "
                                  "WHERE grp='g' ORDER BY offset"),
                        "0|0|7|k|a;0|2|7|k|x;");
    /* NULL key stays NULL, an empty value stays an empty blob. */
    assert_string_equal(query(fx, "SELECT offset, seq, epoch, quote(key), quote(value) FROM "
                                  "baton_output_more WHERE grp='g' ORDER BY offset, seq"),
                        "2|1|7|NULL|X'79';2|2|7|X'6B'|X'';");
    assert_string_equal(query(fx, "SELECT next_offset FROM baton_fence WHERE grp='g'"), "6;");

    /* A retry of the same batch (a lost COMMIT reply) applies nothing twice. */
    assert_int_equal(baton_sink_write_outputs(fx->sink, 0, 7, in, 4, &next, &applied), BATON_OK);
    assert_int_equal(applied, 0);
    assert_int_equal(next, 6);
    assert_string_equal(query(fx, "SELECT count(*) FROM baton_output_more"), "2;");
}

/* Fencing is unchanged: a stale epoch writes nothing in either table. */
static void test_outputs_stale(void **state) {
    sink_fx_t *fx = *state;
    int64_t next = -1;
    assert_int_equal(baton_sink_fence(fx->sink, 1, 10, &next), BATON_OK);
    baton_sink_output_t o[] = {OUT("k", "a"), OUT("k", "b")};
    baton_sink_input_t in[] = {{0, o, 2}};
    assert_int_equal(baton_sink_write_outputs(fx->sink, 1, 9, in, 1, &next, NULL), BATON_STALE);
    assert_int_equal(baton_sink_write_outputs(fx->sink, 1, 11, in, 1, &next, NULL), BATON_UNFENCED);
    assert_string_equal(query(fx, "SELECT count(*) FROM baton_output"), "0;");
    assert_string_equal(query(fx, "SELECT count(*) FROM baton_output_more"), "0;");
    assert_string_equal(query(fx, "SELECT next_offset, rejected FROM baton_fence WHERE "
                                  "partition=1"),
                        "0|1;");
}

/* A batch of inputs that all have zero outputs still moves next_offset
 * (a filter that drops everything must not make the worker re-read). */
static void test_outputs_all_filtered(void **state) {
    sink_fx_t *fx = *state;
    int64_t next = -1;
    assert_int_equal(baton_sink_fence(fx->sink, 2, 3, &next), BATON_OK);
    baton_sink_input_t in[] = {{0, NULL, 0}, {1, NULL, 0}, {2, NULL, 0}};
    size_t applied = 0;
    assert_int_equal(baton_sink_write_outputs(fx->sink, 2, 3, in, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    assert_int_equal(next, 3);
    assert_int_equal(baton_sink_fence(fx->sink, 2, 4, &next), BATON_OK);
    assert_int_equal(next, 3); /* a new owner resumes after them */
}

/* baton_output_more disagreeing with baton_fence is CORRUPT, and the whole
 * batch is rolled back. */
static void test_outputs_corrupt_more(void **state) {
    sink_fx_t *fx = *state;
    int64_t next = -1;
    assert_int_equal(baton_sink_fence(fx->sink, 3, 1, &next), BATON_OK);
    exec(fx, "INSERT INTO baton_output_more VALUES ('g', 3, 1, 1, 1, NULL, 'old')");
    baton_sink_output_t o1[] = {OUT("k", "a")};
    baton_sink_output_t o2[] = {OUT("k", "b"), OUT("k", "c")};
    baton_sink_input_t in[] = {{0, o1, 1}, {1, o2, 2}};
    assert_int_equal(baton_sink_write_outputs(fx->sink, 3, 1, in, 2, &next, NULL), BATON_CORRUPT);
    assert_non_null(strstr(baton_sink_errstr(fx->sink), "baton_output_more"));
    assert_string_equal(query(fx, "SELECT count(*) FROM baton_output WHERE partition=3"), "0;");
    assert_string_equal(query(fx, "SELECT next_offset FROM baton_fence WHERE partition=3"), "0;");
}

/* Malformed batches are refused before any transaction. */
static void test_outputs_invalid(void **state) {
    sink_fx_t *fx = *state;
    int64_t next = -1;
    assert_int_equal(baton_sink_fence(fx->sink, 4, 1, &next), BATON_OK);
    baton_sink_input_t no_outs[] = {{0, NULL, 2}};
    assert_int_equal(baton_sink_write_outputs(fx->sink, 4, 1, no_outs, 1, NULL, NULL),
                     BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(fx->sink), "outputs is NULL"));
    baton_sink_output_t bad[] = {{NULL, 3, "v", 1}};
    baton_sink_input_t bad_key[] = {{0, bad, 1}};
    assert_int_equal(baton_sink_write_outputs(fx->sink, 4, 1, bad_key, 1, NULL, NULL),
                     BATON_INVALID);
    baton_sink_input_t neg[] = {{-1, NULL, 0}};
    assert_int_equal(baton_sink_write_outputs(fx->sink, 4, 1, neg, 1, NULL, NULL), BATON_INVALID);
    assert_int_equal(baton_sink_write_outputs(fx->sink, 4, 1, NULL, 1, NULL, NULL), BATON_INVALID);
    assert_int_equal(baton_sink_write_outputs(fx->sink, 4, 1, NULL, 0, &next, NULL), BATON_OK);
    assert_int_equal(next, 0);
}

/* An old sink file (made before baton_output_more existed) gets the table
 * on open, and its rows are untouched. */
static void test_outputs_old_file(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_destroy(fx->sink);
    fx->sink = NULL;
    exec(fx, "DROP TABLE baton_output_more");
    exec(fx, "INSERT INTO baton_output VALUES ('g', 0, 0, 1, NULL, 'kept')");
    char err[512];
    assert_int_equal(baton_sink_open(fx->uri, "g", &fx->sink, err, sizeof(err)), BATON_OK);
    assert_string_equal(query(fx, "SELECT value FROM baton_output"), "kept;");
    assert_string_equal(query(fx, "SELECT count(*) FROM baton_output_more"), "0;");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, sink_fx_setup_open, sink_fx_teardown)

int main(void) {
    /* The tests provoke stale and corrupt on purpose. */
    baton_log_level = BATON_LOG_ERROR;
    const struct CMUnitTest tests[] = {
        T(test_outputs_layout),       T(test_outputs_stale),   T(test_outputs_all_filtered),
        T(test_outputs_corrupt_more), T(test_outputs_invalid), T(test_outputs_old_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
