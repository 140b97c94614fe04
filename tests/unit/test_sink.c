/* test_sink.c: what only the SQLite backend has, on a real file in a fresh
 * temporary directory per test: URI and path handling, a file that is not a
 * database, the lazy open's "nothing on disk until the first fence", tables
 * of another shape, values of the wrong type, and files from before
 * baton_output_more and sink ids. The protocol every backend keeps is the
 * conformance suite's (tests/sink_conformance.c), which ctest runs on an
 * SQLite file too (unit.sink_conformance). Stored rows are read back with
 * raw SQLite, as the external tools that rely on the schema would. */
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

/* ---- write ---------------------------------------------------------------- */

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

    /* (postgresql: is a backend of its own: its URIs in tests/unit/test_sink_pg.c,
     * its server-side behaviour in tests/integration/test_sink_pg_server.c.) */
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
    assert_int_equal(fence_row(s, 0).epoch, 1);
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
    assert_int_equal(fence_row(s, 0).epoch, 5);
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

/* Opening a file whose schema is complete takes no write lock: it opens
 * while another connection holds the lock (a worker starting beside
 * others writing the same file must not stall them). A file that lacks
 * something still needs the lock to create it, and waits for it. */
static void test_open_beside_writer(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_destroy(sink_fx_open(fx, "g"));
    sqlite3 *db = raw_open(fx);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    char err[512];
    baton_sink_t *s = NULL;
    int64_t t0 = baton_now_ms();
    assert_int_equal(baton_sink_open(fx->uri, "g", &s, err, sizeof(err)), BATON_OK);
    assert_true(baton_now_ms() - t0 < 1000); /* no wait for the lock (it waits 5 s) */
    baton_sink_meta_t m;
    assert_int_equal(baton_sink_meta(s, &m), BATON_OK);
    assert_int_equal(baton_uuid_valid(m.sink_id), 0);
    baton_sink_destroy(s);
    /* Without its sink id the file needs the lock: BUSY once it waited. */
    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    raw_exec(fx, "DELETE FROM baton_meta WHERE name = 'sink_id'");
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(open_err(fx->uri, "g", err, sizeof(err)), BATON_BUSY);
    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    s = sink_fx_open(fx, "g");
    assert_int_equal(baton_sink_meta(s, &m), BATON_OK);
    assert_int_equal(baton_uuid_valid(m.sink_id), 0);
    baton_sink_destroy(s);
    assert_no_lock_held(fx);
}

/* ---- values baton did not write ------------------------------------------- */

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
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output WHERE grp='g' AND partition=0"),
                     0);
    assert_no_lock_held(fx);

    /* Output rows at or above next_offset: the tables disagree. */
    fence_ok(s, 2, 5);
    raw_exec(fx, "INSERT INTO baton_output VALUES('g', 2, 1, 5, NULL, NULL)");
    assert_int_equal(write_offsets(s, 2, 5, (const int64_t[]){0, 1}, 2, NULL, NULL), BATON_CORRUPT);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output WHERE grp='g' AND partition=2"),
                     1);
    assert_int_equal(raw_i64(fx, "SELECT next_offset FROM baton_fence WHERE partition = 2"), 0);
    assert_no_lock_held(fx);
    baton_sink_destroy(s);
}

/* ---- which group a sink serves (issue 13) ---------------------------------- */

/* ---- files from before ------------------------------------------------------ */

/* An old sink file (made before baton_output_more existed) gets the table
 * on open, and its rows are untouched. */
static void test_old_file_outputs_more(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_destroy(sink_fx_open(fx, "g"));
    raw_exec(fx, "DROP TABLE baton_output_more;"
                 "INSERT INTO baton_output VALUES ('g', 0, 0, 1, NULL, 'kept')");
    baton_sink_t *s = sink_fx_open(fx, "g");
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output WHERE value = 'kept'"), 1);
    assert_int_equal(raw_i64(fx, "SELECT count(*) FROM baton_output_more"), 0);
    baton_sink_destroy(s);
}

/* A file from before sink ids gets one on its next open. */
static void test_old_file_sink_id(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_t *s = sink_fx_open(fx, "g");
    baton_sink_meta_t m1, m2;
    assert_int_equal(baton_sink_meta(s, &m1), BATON_OK);
    baton_sink_destroy(s);
    raw_exec(fx, "DROP TABLE baton_meta");
    s = sink_fx_open(fx, "g");
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
        cmocka_unit_test(test_rules), T(test_open_bad_uri), T(test_open_relative_path),
        T(test_open_not_a_database),  T(test_open_lazy),    T(test_open_wrong_shape),
        T(test_open_beside_writer),   T(test_corrupt_rows), T(test_old_file_outputs_more),
        T(test_old_file_sink_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
