/* test_sink.c: the fenced sink's protocol (ARCHITECTURE.md, "The sink
 * protocol") against the SQLite backend on a real file in a fresh temporary
 * directory per test. Several handles on one file stand in for several
 * processes; one test forks real ones. Stored rows are read back with raw
 * SQLite, as the external tools that rely on the schema would. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "sink.h"
#include "sink_int.h"
#include "sink_fixture.h"

static int64_t fence_ok(baton_sink_t *sink, int32_t partition, int64_t epoch) {
    int64_t next = -1;
    int rc = baton_sink_fence(sink, partition, epoch, &next);
    if (rc != BATON_OK)
        fail_msg("fence p=%d e=%lld: %s", (int)partition, (long long)epoch,
                 baton_sink_errstr(sink));
    return next;
}

static baton_record_t rec(int64_t offset, const char *value) {
    return (baton_record_t){
        .offset = offset, .value = value, .value_len = value ? strlen(value) : 0};
}

/* Writes values named "v<offset>" for the given offsets. */
static int write_offsets(baton_sink_t *sink, int32_t partition, int64_t epoch,
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

static sqlite3 *raw_open(const sink_fx_t *fx) {
    sqlite3 *db = NULL;
    assert_int_equal(
        sqlite3_open_v2(fx->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
        SQLITE_OK);
    return db;
}

static void raw_exec(const sink_fx_t *fx, const char *sql) {
    sqlite3 *db = raw_open(fx);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("raw exec '%s': %s", sql, msg);
    sqlite3_close(db);
}

/* One integer from a query; -1 if it returned no row or NULL. */
static int64_t raw_i64(const sink_fx_t *fx, const char *fmt, ...) {
    char sql[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    sqlite3 *db = raw_open(fx);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("raw prepare '%s': %s", sql, sqlite3_errmsg(db));
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static int64_t raw_outputs(const sink_fx_t *fx, const char *group, int partition) {
    return raw_i64(fx, "SELECT count(*) FROM baton_output WHERE grp='%s' AND partition=%d", group,
                   partition);
}

/* No handle may keep a transaction open after a call returns: another
 * connection that does not wait at all must get the write lock at once. */
static void assert_no_lock_held(const sink_fx_t *fx) {
    sqlite3 *db = raw_open(fx);
    sqlite3_busy_timeout(db, 0);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* ---- pure rules --------------------------------------------------------- */

static void test_rules(void **state) {
    (void)state;
    assert_int_equal(baton_sink__fence_rule(5, 4), BATON_STALE);
    assert_int_equal(baton_sink__fence_rule(5, 5), BATON_OK);
    assert_int_equal(baton_sink__fence_rule(5, 6), BATON_OK);
    assert_int_equal(baton_sink__write_rule(5, 4), BATON_STALE);
    assert_int_equal(baton_sink__write_rule(5, 5), BATON_OK);
    assert_int_equal(baton_sink__write_rule(5, 6), BATON_UNFENCED);
    assert_false(baton_sink__applies(10, 9));
    assert_true(baton_sink__applies(10, 10));
    assert_true(baton_sink__applies(10, 25));
    assert_true(baton_err_is_fatal(BATON_STALE) && baton_err_is_fatal(BATON_UNFENCED));
    assert_true(baton_err_is_retriable(BATON_BUSY));
}

/* ---- fence ---------------------------------------------------------------- */

static void test_fence_new_partition(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    assert_int_equal(fence_ok(s, 3, 10), 0);
    baton_fence_row_t r = sink_fx_fence_row(s, 3);
    assert_int_equal(r.epoch, 10);
    assert_int_equal(r.next_offset, 0);
    assert_int_equal(r.rejected, 0);
    assert_int_equal(raw_i64(fx, "SELECT epoch FROM baton_fence WHERE grp='g' AND partition=3"),
                     10);
    baton_sink_destroy(s);
}

static void test_fence_epochs(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    assert_int_equal(fence_ok(s, 0, 5), 0);
    assert_int_equal(fence_ok(s, 0, 7), 0);
    assert_int_equal(fence_ok(s, 0, 7), 0); /* a retried fence is harmless */

    int64_t next = 42;
    assert_int_equal(baton_sink_fence(s, 0, 6, &next), BATON_STALE);
    assert_int_equal(next, 42);
    assert_non_null(strstr(baton_sink_errstr(s), "epoch 7"));
    assert_int_equal(baton_sink_fence(s, 0, 5, &next), BATON_STALE);

    baton_fence_row_t r = sink_fx_fence_row(s, 0);
    assert_int_equal(r.epoch, 7);
    assert_int_equal(r.rejected, 2);
    assert_no_lock_held(fx);
    baton_sink_destroy(s);
}

/* ---- write ---------------------------------------------------------------- */

static void test_write_requires_fence(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    const int64_t offs[] = {0, 1};
    size_t applied = 99;
    int64_t next = 99;

    assert_int_equal(write_offsets(s, 0, 5, offs, 2, &next, &applied), BATON_UNFENCED);
    assert_int_equal(applied, 0);
    assert_int_equal(next, 99);
    assert_non_null(strstr(baton_sink_errstr(s), "before any fence"));
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_fence"), 0);

    /* Fenced at 5, writing at 6: the writer skipped its own fence. */
    assert_int_equal(fence_ok(s, 0, 5), 0);
    assert_int_equal(write_offsets(s, 0, 6, offs, 2, &next, &applied), BATON_UNFENCED);
    assert_int_equal(applied, 0);
    assert_int_equal(raw_outputs(fx, "g", 0), 0);
    baton_fence_row_t r = sink_fx_fence_row(s, 0);
    assert_int_equal(r.epoch, 5);
    assert_int_equal(r.next_offset, 0);
    assert_int_equal(r.rejected, 0);
    assert_no_lock_held(fx);
    baton_sink_destroy(s);
}

static void test_write_applies(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    assert_int_equal(fence_ok(s, 1, 5), 0);

    const int64_t a[] = {0, 1, 2};
    int64_t next = -1;
    size_t applied = 0;
    assert_int_equal(write_offsets(s, 1, 5, a, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    assert_int_equal(next, 3);
    assert_int_equal(sink_fx_fence_row(s, 1).next_offset, 3);
    assert_int_equal(raw_outputs(fx, "g", 1), 3);
    assert_int_equal(raw_i64(fx,
                             "SELECT count(*) FROM baton_output WHERE partition=1 AND epoch=5 AND "
                             "CAST(value AS TEXT)='v' || offset"),
                     3);

    const int64_t b[] = {3, 4};
    assert_int_equal(write_offsets(s, 1, 5, b, 2, &next, NULL), BATON_OK);
    assert_int_equal(next, 5);

    /* An empty batch checks the fence and reports progress. */
    next = -1;
    assert_int_equal(baton_sink_write(s, 1, 5, NULL, 0, &next, &applied), BATON_OK);
    assert_int_equal(next, 5);
    assert_int_equal(applied, 0);
    baton_sink_destroy(s);
}

static void test_write_skips_duplicates(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    fence_ok(s, 0, 5);
    int64_t next;
    size_t applied;

    const int64_t a[] = {0, 1, 2};
    assert_int_equal(write_offsets(s, 0, 5, a, 3, &next, &applied), BATON_OK);

    /* Replayed after a crash: 1 and 2 are already applied. */
    const int64_t b[] = {1, 2, 3, 4};
    assert_int_equal(write_offsets(s, 0, 5, b, 4, &next, &applied), BATON_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(next, 5);

    /* Out of order within a batch: 6 after 7 and the second 7 are skipped. */
    baton_record_t c[] = {rec(7, "first"), rec(6, "x"), rec(7, "second"), rec(8, "y")};
    assert_int_equal(baton_sink_write(s, 0, 5, c, 4, &next, &applied), BATON_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(next, 9);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output WHERE offset=7 AND "
                                 "CAST(value AS TEXT)='first'"),
                     1);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output WHERE offset=6"), 0);

    /* Entirely old: nothing applied, progress unchanged. */
    assert_int_equal(write_offsets(s, 0, 5, a, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 0);
    assert_int_equal(next, 9);
    assert_int_equal(raw_outputs(fx, "g", 0), 7);
    baton_sink_destroy(s);
}

static void test_write_allows_gaps(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    fence_ok(s, 0, 5);
    int64_t next;
    size_t applied;
    const int64_t a[] = {10, 20, 35};
    assert_int_equal(write_offsets(s, 0, 5, a, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    assert_int_equal(next, 36);
    const int64_t b[] = {30, 36, 100};
    assert_int_equal(write_offsets(s, 0, 5, b, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(next, 101);
    assert_int_equal(raw_i64(fx, "SELECT group_concat(offset) = '10,20,35,36,100' FROM "
                                 "(SELECT offset FROM baton_output ORDER BY offset)"),
                     1);
    baton_sink_destroy(s);
}

static void test_stale_write_rejected_whole(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    fence_ok(s, 0, 5);
    const int64_t a[] = {0, 1};
    int64_t next;
    size_t applied;
    assert_int_equal(write_offsets(s, 0, 5, a, 2, &next, &applied), BATON_OK);

    assert_int_equal(fence_ok(s, 0, 7), 2);
    const int64_t b[] = {2, 3, 4};
    next = -7;
    applied = 99;
    assert_int_equal(write_offsets(s, 0, 5, b, 3, &next, &applied), BATON_STALE);
    assert_int_equal(applied, 0);
    assert_int_equal(next, -7);
    assert_non_null(strstr(baton_sink_errstr(s), "epoch 7 owns it"));
    assert_int_equal(raw_outputs(fx, "g", 0), 2);
    /* Even an empty batch from the old epoch is refused. */
    assert_int_equal(baton_sink_write(s, 0, 5, NULL, 0, NULL, NULL), BATON_STALE);

    baton_fence_row_t r = sink_fx_fence_row(s, 0);
    assert_int_equal(r.rejected, 2);
    assert_int_equal(r.next_offset, 2);
    assert_int_equal(r.epoch, 7);
    assert_no_lock_held(fx);

    assert_int_equal(write_offsets(s, 0, 7, b, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    baton_sink_destroy(s);
}

static void test_new_owner_resumes(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *old = sink_fx_open(fx, "g");
    fence_ok(old, 0, 5);
    const int64_t a[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(write_offsets(old, 0, 5, a, 10, NULL, NULL), BATON_OK);
    baton_sink_destroy(old);

    /* A fresh connection: the progress lives in the file. */
    baton_sink_t *s = sink_fx_open(fx, "g");
    assert_int_equal(fence_ok(s, 0, 9), 10);
    /* The new owner's consumer may hand it a few already-applied records. */
    const int64_t b[] = {8, 9, 10, 11, 12};
    int64_t next;
    size_t applied;
    assert_int_equal(write_offsets(s, 0, 9, b, 5, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    assert_int_equal(next, 13);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output WHERE epoch=5"), 10);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output WHERE epoch=9"), 3);
    assert_int_equal(raw_i64(fx, "SELECT min(offset) FROM baton_output WHERE epoch=9"), 10);
    baton_sink_destroy(s);
}

/* Two connections on one file act as two processes: a paused worker (the
 * zombie) wakes up after a new owner fenced, and every write it tries is
 * refused while the new owner's go through. */
static void test_zombie_refused(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *zombie = sink_fx_open(fx, "g");
    baton_sink_t *owner = sink_fx_open(fx, "g");
    int64_t next;
    size_t applied;

    assert_int_equal(fence_ok(zombie, 2, 100), 0);
    const int64_t a[] = {0, 1};
    assert_int_equal(write_offsets(zombie, 2, 100, a, 2, &next, &applied), BATON_OK);

    assert_int_equal(fence_ok(owner, 2, 200), 2);
    const int64_t b[] = {2, 3};
    assert_int_equal(write_offsets(zombie, 2, 100, b, 2, &next, &applied), BATON_STALE);
    assert_int_equal(applied, 0);
    /* Nor can it take the partition back by fencing again. */
    assert_int_equal(baton_sink_fence(zombie, 2, 100, &next), BATON_STALE);
    assert_int_equal(write_offsets(owner, 2, 200, b, 2, &next, &applied), BATON_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(next, 4);

    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output WHERE epoch=100"), 2);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output WHERE epoch=200"), 2);
    assert_int_equal(sink_fx_fence_row(zombie, 2).rejected, 2);
    assert_no_lock_held(fx);
    baton_sink_destroy(zombie);
    baton_sink_destroy(owner);
}

static void test_group_isolation(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *g1 = sink_fx_open(fx, "g1");
    baton_sink_t *g2 = sink_fx_open(fx, "g2");
    fence_ok(g1, 0, 5);
    /* A lower epoch in another group is not stale. */
    assert_int_equal(fence_ok(g2, 0, 3), 0);
    const int64_t a[] = {0, 1, 2};
    int64_t next;
    assert_int_equal(write_offsets(g1, 0, 5, a, 3, &next, NULL), BATON_OK);
    assert_int_equal(next, 3);
    /* g2's offset 0 is its own, not a duplicate of g1's. */
    size_t applied;
    assert_int_equal(write_offsets(g2, 0, 3, a, 1, &next, &applied), BATON_OK);
    assert_int_equal(applied, 1);
    assert_int_equal(next, 1);
    /* g1's epoch does not fence g2 and the other way round. */
    assert_int_equal(write_offsets(g2, 0, 5, a, 1, NULL, NULL), BATON_UNFENCED);
    assert_int_equal(write_offsets(g1, 0, 3, a, 1, NULL, NULL), BATON_STALE);

    assert_int_equal(sink_fx_fence_row(g1, 0).epoch, 5);
    assert_int_equal(sink_fx_fence_row(g1, 0).next_offset, 3);
    assert_int_equal(sink_fx_fence_row(g2, 0).epoch, 3);
    assert_int_equal(sink_fx_fence_row(g2, 0).next_offset, 1);
    assert_int_equal(raw_outputs(fx, "g1", 0), 3);
    assert_int_equal(raw_outputs(fx, "g2", 0), 1);
    baton_sink_destroy(g1);
    baton_sink_destroy(g2);
}

static void test_key_value_roundtrip(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    fence_ok(s, 0, 5);
    static const char k1[] = {'a', '\0', 'b'};
    static const unsigned char v1[] = {0x00, 0x00, 0xff, 0x7f};
    baton_record_t recs[] = {
        {.offset = 0}, /* no key, no value */
        {.offset = 1, .key = k1, .key_len = sizeof(k1), .value = v1, .value_len = sizeof(v1)},
        {.offset = 2, .key = "", .key_len = 0, .value = "x", .value_len = 1}, /* empty key */
    };
    assert_int_equal(baton_sink_write(s, 0, 5, recs, 3, NULL, NULL), BATON_OK);
    baton_sink_destroy(s);

    sqlite3 *db = raw_open(fx);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT offset, key, value FROM baton_output "
                                        "WHERE grp='g' AND partition=0 ORDER BY offset",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_type(st, 1), SQLITE_NULL);
    assert_int_equal(sqlite3_column_type(st, 2), SQLITE_NULL);

    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_type(st, 1), SQLITE_BLOB);
    assert_int_equal(sqlite3_column_bytes(st, 1), sizeof(k1));
    assert_memory_equal(sqlite3_column_blob(st, 1), k1, sizeof(k1));
    assert_int_equal(sqlite3_column_type(st, 2), SQLITE_BLOB);
    assert_int_equal(sqlite3_column_bytes(st, 2), sizeof(v1));
    assert_memory_equal(sqlite3_column_blob(st, 2), v1, sizeof(v1));

    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_type(st, 1), SQLITE_BLOB); /* empty, not NULL */
    assert_int_equal(sqlite3_column_bytes(st, 1), 0);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_invalid_records(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    fence_ok(s, 0, 5);
    /* A bad record anywhere rejects the batch before anything is applied. */
    baton_record_t neg[] = {rec(0, "a"), rec(-1, "b")};
    assert_int_equal(baton_sink_write(s, 0, 5, neg, 2, NULL, NULL), BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(s), "record 1"));
    baton_record_t nokey[] = {{.offset = 0, .key = NULL, .key_len = 3}};
    assert_int_equal(baton_sink_write(s, 0, 5, nokey, 1, NULL, NULL), BATON_INVALID);
    baton_record_t top[] = {rec(INT64_MAX, "a")};
    assert_int_equal(baton_sink_write(s, 0, 5, top, 1, NULL, NULL), BATON_INVALID);
    assert_int_equal(baton_sink_write(s, 0, 5, NULL, 2, NULL, NULL), BATON_INVALID);
    assert_int_equal(baton_sink_write(s, -1, 5, neg, 1, NULL, NULL), BATON_INVALID);
    int64_t next;
    assert_int_equal(baton_sink_fence(s, 0, -5, &next), BATON_INVALID);
    assert_int_equal(baton_sink_fence(s, 0, 5, NULL), BATON_INVALID);
    assert_int_equal(raw_outputs(fx, "g", 0), 0);
    assert_int_equal(sink_fx_fence_row(s, 0).next_offset, 0);
    baton_sink_destroy(s);
}

/* ---- open ----------------------------------------------------------------- */

static int open_err(const char *uri, const char *group, char *err, size_t n) {
    baton_sink_t *s = (baton_sink_t *)0x1;
    int rc = baton_sink_open(uri, group, &s, err, n);
    assert_null(s);
    return rc;
}

static void test_open_bad_uri(void **state) {
    sink_fx_t *fx = *state;
    char err[512];
    char uri[256];

    /* (postgresql: is a backend of its own: tests/integration/test_sink_pg.c.) */
    assert_int_equal(open_err("mysql://db/baton", "g", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "mysql://db/baton"));
    assert_non_null(strstr(err, "sqlite:PATH"));
    assert_non_null(strstr(err, "postgresql://"));

    assert_int_equal(open_err("/var/lib/baton.db", "g", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "no scheme"));
    assert_int_equal(open_err("", "g", err, sizeof(err)), BATON_INVALID);
    assert_int_equal(open_err("sqlite:", "g", err, sizeof(err)), BATON_INVALID);
    assert_int_equal(open_err("sqlite::memory:", "g", err, sizeof(err)), BATON_INVALID);
    assert_int_equal(open_err("sqlite://relative.db", "g", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "ambiguous"));

    assert_int_equal(open_err(fx->uri, "", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "group"));
    assert_int_equal(open_err(fx->uri, NULL, err, sizeof(err)), BATON_INVALID);
    /* Nothing was created for the refused opens. */
    assert_int_equal(access(fx->path, F_OK), -1);

    /* The URL spelling of an absolute path and an upper-case scheme work. */
    snprintf(uri, sizeof(uri), "sqlite://%s", fx->path);
    baton_sink_t *s = NULL;
    assert_int_equal(baton_sink_open(uri, "g", &s, err, sizeof(err)), BATON_OK);
    fence_ok(s, 0, 1);
    baton_sink_destroy(s);
    snprintf(uri, sizeof(uri), "SQLite:%s", fx->path);
    assert_int_equal(baton_sink_open(uri, "g", &s, err, sizeof(err)), BATON_OK);
    assert_int_equal(sink_fx_fence_row(s, 0).epoch, 1);
    baton_sink_destroy(s);
}

/* A relative PATH is relative to the working directory, and a PATH that
 * looks like an SQLite URI ("file:...?nolock=1") is still a plain file name. */
static void test_open_relative_path(void **state) {
    sink_fx_t *fx = *state;
    char cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(fx->dir), 0);
    char err[512];
    baton_sink_t *s = NULL;
    int rc1 = baton_sink_open("sqlite:rel.db", "g", &s, err, sizeof(err));
    baton_sink_destroy(s);
    s = NULL;
    int rc2 = baton_sink_open("sqlite:file:uri.db?nolock=1", "g", &s, err, sizeof(err));
    baton_sink_destroy(s);
    assert_int_equal(chdir(cwd), 0);

    assert_int_equal(rc1, BATON_OK);
    assert_int_equal(rc2, BATON_OK);
    char p[256];
    snprintf(p, sizeof(p), "%s/rel.db", fx->dir);
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof(p), "%s/file:uri.db?nolock=1", fx->dir);
    assert_int_equal(access(p, F_OK), 0);
}

static void test_open_not_a_database(void **state) {
    sink_fx_t *fx = *state;
    FILE *f = fopen(fx->path, "w");
    assert_non_null(f);
    for (int i = 0; i < 200; i++)
        fputs("this is a text file, not an SQLite database\n", f);
    fclose(f);

    char err[512];
    assert_int_equal(open_err(fx->uri, "g", err, sizeof(err)), BATON_CORRUPT);
    assert_non_null(strstr(err, fx->path));
    assert_non_null(strstr(err, "not a database"));
}

/* baton_sink_open_lazy: a missing file is created by the first fence, not
 * by the open; a missing directory is an error naming it; an existing file
 * opens at once. */
static void test_open_lazy(void **state) {
    sink_fx_t *fx = *state;
    char err[512], uri[300];
    baton_sink_t *s = NULL;
    snprintf(uri, sizeof(uri), "sqlite:%s/no-such-dir/x.db", fx->dir);
    assert_int_equal(baton_sink_open_lazy(uri, "g", &s, err, sizeof(err)), BATON_NOTFOUND);
    assert_null(s);
    assert_non_null(strstr(err, "no-such-dir' does not exist"));

    assert_int_equal(baton_sink_open_lazy(fx->uri, "g", &s, err, sizeof(err)), BATON_OK);
    assert_int_equal(access(fx->path, F_OK), -1);
    baton_fence_row_t *rows = NULL;
    size_t n = 1;
    assert_int_equal(baton_sink_fences(s, &rows, &n), BATON_OK);
    assert_int_equal(n, 0);
    assert_int_equal(access(fx->path, F_OK), -1);
    baton_sink_destroy(s); /* never used: nothing on disk */
    assert_int_equal(access(fx->path, F_OK), -1);

    assert_int_equal(baton_sink_open_lazy(fx->uri, "g", &s, err, sizeof(err)), BATON_OK);
    assert_int_equal(fence_ok(s, 0, 5), 0);
    assert_int_equal(access(fx->path, F_OK), 0);
    baton_sink_destroy(s);
    assert_int_equal(baton_sink_open_lazy(fx->uri, "g", &s, err, sizeof(err)), BATON_OK);
    assert_int_equal(sink_fx_fence_row(s, 0).epoch, 5);
    baton_sink_destroy(s);
}

static void test_open_wrong_shape(void **state) {
    sink_fx_t *fx = *state;
    char err[512];

    /* Missing column. */
    raw_exec(fx, "CREATE TABLE baton_fence(grp TEXT, partition INTEGER, epoch INTEGER, "
                 "next_offset INTEGER, PRIMARY KEY(grp, partition))");
    assert_int_equal(open_err(fx->uri, "g", err, sizeof(err)), BATON_CORRUPT);
    assert_non_null(strstr(err, "baton_fence"));
    assert_non_null(strstr(err, "missing column 'rejected'"));

    /* Right columns, wrong type and key. */
    raw_exec(fx, "DROP TABLE baton_fence;"
                 "CREATE TABLE baton_output(grp TEXT, partition INTEGER, offset TEXT, "
                 "epoch INTEGER, key BLOB, value BLOB, PRIMARY KEY(grp, partition))");
    assert_int_equal(open_err(fx->uri, "g", err, sizeof(err)), BATON_CORRUPT);
    assert_non_null(strstr(err, "baton_output"));
    assert_non_null(strstr(err, "'offset' TEXT"));

    /* A view in the table's place. */
    raw_exec(fx, "DROP TABLE baton_output; CREATE VIEW baton_output AS SELECT 1 AS x");
    assert_int_equal(open_err(fx->uri, "g", err, sizeof(err)), BATON_CORRUPT);
    assert_non_null(strstr(err, "view"));

    /* The refused opens changed nothing: no baton_fence was created. */
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM sqlite_master WHERE name='baton_fence'"), 0);
    assert_no_lock_held(fx);
}

/* ---- corrupt rows, busy, listing ----------------------------------------- */

static void test_corrupt_rows(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    fence_ok(s, 0, 5);
    fence_ok(s, 1, 5);
    raw_exec(fx, "UPDATE baton_fence SET epoch = NULL WHERE partition = 0;"
                 "UPDATE baton_fence SET next_offset = 'abc' WHERE partition = 1");

    int64_t next;
    assert_int_equal(baton_sink_fence(s, 0, 9, &next), BATON_CORRUPT);
    assert_non_null(strstr(baton_sink_errstr(s), "epoch is NULL"));
    assert_int_equal(write_offsets(s, 0, 5, (const int64_t[]){0}, 1, NULL, NULL), BATON_CORRUPT);
    assert_int_equal(baton_sink_fence(s, 1, 9, &next), BATON_CORRUPT);
    assert_non_null(strstr(baton_sink_errstr(s), "next_offset"));
    baton_fence_row_t *rows = (baton_fence_row_t *)0x1;
    size_t n = 7;
    assert_int_equal(baton_sink_fences(s, &rows, &n), BATON_CORRUPT);
    assert_null(rows);
    assert_int_equal(n, 0);
    /* Nothing was changed: the fence above did not overwrite the NULL. */
    assert_int_equal(raw_i64(fx, "SELECT epoch FROM baton_fence WHERE partition = 0"), -1);
    assert_int_equal(raw_outputs(fx, "g", 0), 0);
    assert_no_lock_held(fx);

    /* Output rows at or above next_offset: the tables disagree. */
    fence_ok(s, 2, 5);
    raw_exec(fx, "INSERT INTO baton_output VALUES('g', 2, 1, 5, NULL, NULL)");
    assert_int_equal(write_offsets(s, 2, 5, (const int64_t[]){0, 1}, 2, NULL, NULL), BATON_CORRUPT);
    assert_int_equal(raw_outputs(fx, "g", 2), 1);
    assert_int_equal(raw_i64(fx, "SELECT next_offset FROM baton_fence WHERE partition = 2"), 0);
    assert_no_lock_held(fx);
    baton_sink_destroy(s);
}

/* Another process holding the write lock past the busy timeout is
 * retriable: BUSY, nothing applied, and the call works once it is gone. */
static void test_busy(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    fence_ok(s, 0, 5);
    assert_int_equal(baton_sink__set_busy_timeout(s, 50), BATON_OK);

    sqlite3 *other = raw_open(fx);
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    int64_t next = -1;
    size_t applied = 9;
    assert_int_equal(baton_sink_fence(s, 0, 6, &next), BATON_BUSY);
    assert_true(baton_err_is_retriable(BATON_BUSY));
    assert_non_null(strstr(baton_sink_errstr(s), "database is locked (retriable)"));
    assert_int_equal(write_offsets(s, 0, 5, (const int64_t[]){0, 1}, 2, &next, &applied),
                     BATON_BUSY);
    assert_int_equal(applied, 0);
    assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);

    assert_no_lock_held(fx);
    assert_int_equal(raw_outputs(fx, "g", 0), 0);
    assert_int_equal(sink_fx_fence_row(s, 0).epoch, 5);
    assert_int_equal(write_offsets(s, 0, 5, (const int64_t[]){0, 1}, 2, &next, &applied), BATON_OK);
    assert_int_equal(next, 2);
    baton_sink_destroy(s);
}

static void test_fences_listing(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g1");
    baton_sink_t *other = sink_fx_open(fx, "g2");
    baton_fence_row_t *rows = NULL;
    size_t n = 9;
    assert_int_equal(baton_sink_fences(s, &rows, &n), BATON_OK);
    assert_int_equal(n, 0);
    free(rows);

    fence_ok(s, 5, 50);
    fence_ok(s, 1, 10);
    fence_ok(s, 3, 30);
    fence_ok(other, 2, 20);
    assert_int_equal(write_offsets(s, 3, 30, (const int64_t[]){0, 4}, 2, NULL, NULL), BATON_OK);
    int64_t next;
    assert_int_equal(baton_sink_fence(s, 1, 9, &next), BATON_STALE);

    assert_int_equal(baton_sink_fences(s, &rows, &n), BATON_OK);
    assert_int_equal(n, 3);
    const baton_fence_row_t want[] = {{1, 10, 0, 1}, {3, 30, 5, 0}, {5, 50, 0, 0}};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rows[i].partition, want[i].partition);
        assert_int_equal(rows[i].epoch, want[i].epoch);
        assert_int_equal(rows[i].next_offset, want[i].next_offset);
        assert_int_equal(rows[i].rejected, want[i].rejected);
    }
    free(rows);
    baton_sink_destroy(s);
    baton_sink_destroy(other);
}

/* Real processes opening a brand-new file at the same moment: schema
 * creation and the switch to WAL must not fail for any of them. */
static void test_concurrent_open(void **state) {
    sink_fx_t *fx = *state;
    enum { NPROC = 8, ROUNDS = 3 };
    for (int round = 0; round < ROUNDS; round++) {
        char uri[320], path[256];
        snprintf(path, sizeof(path), "%s/race%d.db", fx->dir, round);
        snprintf(uri, sizeof(uri), "sqlite:%s", path);
        int go[2];
        assert_int_equal(pipe(go), 0);
        pid_t pids[NPROC];
        int forked = 0;
        for (int i = 0; i < NPROC; i++, forked++) {
            pids[i] = fork();
            if (pids[i] < 0)
                break;
            if (pids[i] == 0) {
                close(go[1]);
                char c;
                (void)!read(go[0], &c, 1); /* EOF when the parent lets go */
                char err[512];
                baton_sink_t *s = NULL;
                int64_t next = -1;
                int rc = baton_sink_open(uri, "g", &s, err, sizeof(err));
                if (rc) {
                    fprintf(stderr, "child %d: open: %s\n", i, err);
                    _exit(10);
                }
                if (baton_sink_fence(s, i, 1, &next) || next != 0 ||
                    baton_sink_write(s, i, 1, &(baton_record_t){.offset = 0}, 1, NULL, NULL)) {
                    fprintf(stderr, "child %d: %s\n", i, baton_sink_errstr(s));
                    _exit(11);
                }
                baton_sink_destroy(s);
                _exit(0);
            }
        }
        close(go[0]);
        close(go[1]);
        /* Reap every child before asserting: a failed assert would run the
         * teardown and delete the directory under the children still running. */
        int failed = NPROC - forked;
        for (int i = 0; i < forked; i++) {
            int st = 0;
            if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                failed++;
        }
        assert_int_equal(failed, 0);
        char err[512];
        baton_sink_t *s = NULL;
        assert_int_equal(baton_sink_open(uri, "g", &s, err, sizeof(err)), BATON_OK);
        baton_fence_row_t *rows = NULL;
        size_t n = 0;
        assert_int_equal(baton_sink_fences(s, &rows, &n), BATON_OK);
        assert_int_equal(n, NPROC);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(rows[i].partition, (int32_t)i);
            assert_int_equal(rows[i].next_offset, 1);
        }
        free(rows);
        baton_sink_destroy(s);
    }
}

/* ---- which group a sink serves (issue 13) ---------------------------------- */

static void test_sink_identity(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    baton_sink_meta_t m1, m2;
    assert_int_equal(baton_sink_meta(s, &m1), BATON_OK);
    assert_int_equal(baton_uuid_valid(m1.sink_id), 0);
    assert_string_equal(m1.group_uuid, ""); /* nothing recorded yet */
    assert_int_equal(m1.bound_ms, 0);
    /* The id is the file's: another handle sees the same one. */
    baton_sink_t *s2 = sink_fx_open(fx, "g");
    assert_int_equal(baton_sink_meta(s2, &m2), BATON_OK);
    assert_string_equal(m1.sink_id, m2.sink_id);
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM baton_meta WHERE value = '%s'", m1.sink_id);
    assert_int_equal(raw_i64(fx, sql), 1);

    /* Without expect_group, fences record nothing. */
    fence_ok(s, 0, 5);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_groups"), 0);

    assert_int_equal(baton_sink_expect_group(s, "nope"), BATON_INVALID);
    char u1[BATON_UUID_LEN + 1], u2[BATON_UUID_LEN + 1];
    assert_int_equal(baton_uuid_new(u1), 0);
    assert_int_equal(baton_uuid_new(u2), 0);
    assert_int_equal(baton_sink_expect_group(s, u1), BATON_OK);
    assert_int_equal(fence_ok(s, 1, 5), 0); /* records u1 in the same transaction */
    assert_int_equal(baton_sink_meta(s2, &m2), BATON_OK);
    assert_string_equal(m2.group_uuid, u1);
    assert_true(m2.bound_ms > 0);
    fence_ok(s, 1, 6); /* the same id again: fine */

    /* Another group of the same name (another deployment): refused, nothing
     * fenced, by fence and by fence_many; the message names both ids. */
    assert_int_equal(baton_sink_expect_group(s2, u2), BATON_OK);
    int64_t next = -1;
    assert_int_equal(baton_sink_fence(s2, 2, 99, &next), BATON_CONFLICT);
    assert_non_null(strstr(baton_sink_errstr(s2), u1));
    assert_non_null(strstr(baton_sink_errstr(s2), u2));
    int32_t parts[] = {1, 3};
    int64_t epochs[] = {99, 99}, nexts[2];
    int res[2];
    assert_int_equal(baton_sink_fence_many(s2, 2, parts, epochs, nexts, res), BATON_CONFLICT);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_fence WHERE partition IN (2, 3)"), 0);
    assert_int_equal(raw_i64(fx, "SELECT epoch FROM baton_fence WHERE partition = 1"), 6);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM baton_groups WHERE group_uuid = '%s'", u1);
    assert_int_equal(raw_i64(fx, sql), 1);
    assert_no_lock_held(fx);
    /* Writes are not checked (the hot path): only fences are. */
    assert_int_equal(write_offsets(s, 1, 6, (const int64_t[]){0}, 1, NULL, NULL), BATON_OK);
    assert_int_equal(baton_sink_expect_group(s2, NULL), BATON_OK);
    fence_ok(s2, 2, 99);

    /* Another group name in the same sink records its own id. */
    baton_sink_t *h = sink_fx_open(fx, "h");
    assert_int_equal(baton_sink_expect_group(h, u2), BATON_OK);
    fence_ok(h, 0, 1);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_groups"), 2);

    /* A row baton did not write is CORRUPT, never a guess. */
    raw_exec(fx, "UPDATE baton_groups SET group_uuid = 'x' WHERE grp = 'g'");
    assert_int_equal(baton_sink_fence(s, 1, 7, &next), BATON_CORRUPT);
    assert_int_equal(baton_sink_meta(s, &m1), BATON_CORRUPT);
    assert_no_lock_held(fx);
    baton_sink_destroy(h);
    baton_sink_destroy(s2);
    baton_sink_destroy(s);

    /* A file from before sink ids gets one on its next open. */
    raw_exec(fx, "DROP TABLE baton_meta");
    s = sink_fx_open(fx, "g");
    assert_int_equal(baton_sink_meta(s, &m2), BATON_CORRUPT); /* the row above, still bad */
    raw_exec(fx, "DELETE FROM baton_groups");
    assert_int_equal(baton_sink_meta(s, &m2), BATON_OK);
    assert_int_equal(baton_uuid_valid(m2.sink_id), 0);
    assert_string_not_equal(m2.sink_id, m1.sink_id);
    baton_sink_destroy(s);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, sink_fx_setup, sink_fx_teardown)

int main(void) {
    /* The tests provoke stale, busy and corrupt on purpose; keep the
     * expected warnings out of the output. */
    baton_log_level = BATON_LOG_ERROR;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        T(test_fence_new_partition),
        T(test_fence_epochs),
        T(test_write_requires_fence),
        T(test_write_applies),
        T(test_write_skips_duplicates),
        T(test_write_allows_gaps),
        T(test_stale_write_rejected_whole),
        T(test_new_owner_resumes),
        T(test_zombie_refused),
        T(test_group_isolation),
        T(test_key_value_roundtrip),
        T(test_invalid_records),
        T(test_open_bad_uri),
        T(test_open_relative_path),
        T(test_open_not_a_database),
        T(test_open_lazy),
        T(test_open_wrong_shape),
        T(test_corrupt_rows),
        T(test_busy),
        T(test_fences_listing),
        T(test_concurrent_open),
        T(test_sink_identity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
