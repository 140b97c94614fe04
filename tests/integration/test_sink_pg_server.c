/* test_sink_pg_server.c: the fenced sink's protocol (ARCHITECTURE.md, "The
 * sink protocol") against the PostgreSQL backend on a real server: the cases
 * of tests/unit/test_sink.c, plus what only a network database has (a commit
 * whose reply is lost, a connection the server kills, authentication).
 * it_pg_sink.sh starts the server (tests/lib/pg.sh) and runs this program
 * with PG_URI (role baton, password from PGPASSFILE) and PG_PORT in the
 * environment. Each test uses its own group, so rows never mix; stored rows
 * are read back with raw libpq, as external tools would. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "sink.h"
#include "sink_int.h"

static const char *pg_uri; /* PG_URI */
static int pg_port;        /* PG_PORT */
static PGconn *raw;        /* the test's own connection */
static char group[64];     /* the current test's group */

/* ---- raw SQL ------------------------------------------------------------- */

static void raw_exec(const char *fmt, ...) {
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    PGresult *res = PQexec(raw, sql);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("raw '%s': %s", sql, PQresultErrorMessage(res));
    PQclear(res);
}

/* One integer from a query; -1 for no row or NULL. */
static int64_t raw_i64(const char *fmt, ...) {
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    PGresult *res = PQexec(raw, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("raw '%s': %s", sql, PQresultErrorMessage(res));
    int64_t v = -1;
    if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
        v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return v;
}

static int64_t raw_outputs(const char *grp, int partition) {
    return raw_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND partition=%d", grp,
                   partition);
}

/* No sink connection may keep a transaction (and its row locks) open
 * after a call returns. */
static void assert_no_transaction_left(void) {
    assert_int_equal(raw_i64("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                             "'baton' AND state LIKE 'idle in transaction%%'"),
                     0);
}

/* ---- sink helpers (as in test_sink.c) ------------------------------------- */

static baton_sink_t *sink_open_uri(const char *uri, const char *grp) {
    char err[512];
    baton_sink_t *sink = NULL;
    int rc = baton_sink_open(uri, grp, &sink, err, sizeof(err));
    if (rc != BATON_OK)
        fail_msg("open %s: %s (%s)", uri, err, baton_err_name(rc));
    assert_non_null(sink);
    return sink;
}

static baton_sink_t *sink_open(void) { return sink_open_uri(pg_uri, group); }

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

static baton_fence_row_t fence_row(baton_sink_t *sink, int32_t partition) {
    baton_fence_row_t *rows = NULL;
    size_t n = 0;
    int rc = baton_sink_fences(sink, &rows, &n);
    if (rc != BATON_OK)
        fail_msg("fences: %s", baton_sink_errstr(sink));
    baton_fence_row_t out = {.partition = -1};
    for (size_t i = 0; i < n; i++)
        if (rows[i].partition == partition)
            out = rows[i];
    free(rows);
    if (out.partition != partition)
        fail_msg("no fence row for partition %d", (int)partition);
    return out;
}

/* Every test gets a group named after it, emptied first. */
static int setup_group(void **state) {
    snprintf(group, sizeof(group), "%s", (const char *)*state);
    raw_exec("DELETE FROM baton_output WHERE grp LIKE '%s%%'", group);
    raw_exec("DELETE FROM baton_output_more WHERE grp LIKE '%s%%'", group);
    raw_exec("DELETE FROM baton_fence WHERE grp LIKE '%s%%'", group);
    raw_exec("DELETE FROM baton_groups WHERE grp LIKE '%s%%'", group);
    return 0;
}

/* ---- fence ---------------------------------------------------------------- */

static void test_fence_new_partition(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    assert_int_equal(fence_ok(s, 3, 10), 0);
    baton_fence_row_t r = fence_row(s, 3);
    assert_int_equal(r.epoch, 10);
    assert_int_equal(r.next_offset, 0);
    assert_int_equal(r.rejected, 0);
    assert_int_equal(raw_i64("SELECT epoch FROM baton_fence WHERE grp='%s' AND partition=3", group),
                     10);
    baton_sink_destroy(s);
}

static void test_fence_epochs(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    assert_int_equal(fence_ok(s, 0, 5), 0);
    assert_int_equal(fence_ok(s, 0, 7), 0);
    assert_int_equal(fence_ok(s, 0, 7), 0); /* a retried fence is harmless */
    int64_t next = 42;
    assert_int_equal(baton_sink_fence(s, 0, 6, &next), BATON_STALE);
    assert_int_equal(next, 42);
    assert_non_null(strstr(baton_sink_errstr(s), "epoch 7 owns it"));
    assert_int_equal(baton_sink_fence(s, 0, 5, &next), BATON_STALE);
    baton_fence_row_t r = fence_row(s, 0);
    assert_int_equal(r.epoch, 7);
    assert_int_equal(r.rejected, 2);
    assert_no_transaction_left();
    baton_sink_destroy(s);
}

/* ---- write ---------------------------------------------------------------- */

static void test_write_requires_fence(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    const int64_t offs[] = {0, 1};
    size_t applied = 99;
    int64_t next = 99;
    assert_int_equal(write_offsets(s, 0, 5, offs, 2, &next, &applied), BATON_UNFENCED);
    assert_int_equal(applied, 0);
    assert_int_equal(next, 99);
    assert_non_null(strstr(baton_sink_errstr(s), "before any fence"));
    assert_int_equal(raw_i64("SELECT count(*) FROM baton_fence WHERE grp='%s'", group), 0);

    assert_int_equal(fence_ok(s, 0, 5), 0);
    assert_int_equal(write_offsets(s, 0, 6, offs, 2, &next, &applied), BATON_UNFENCED);
    assert_int_equal(applied, 0);
    assert_int_equal(raw_outputs(group, 0), 0);
    baton_fence_row_t r = fence_row(s, 0);
    assert_int_equal(r.epoch, 5);
    assert_int_equal(r.next_offset, 0);
    assert_int_equal(r.rejected, 0);
    assert_no_transaction_left();
    baton_sink_destroy(s);
}

static void test_write_applies(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    assert_int_equal(fence_ok(s, 1, 5), 0);
    const int64_t a[] = {0, 1, 2};
    int64_t next = -1;
    size_t applied = 0;
    assert_int_equal(write_offsets(s, 1, 5, a, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    assert_int_equal(next, 3);
    assert_int_equal(fence_row(s, 1).next_offset, 3);
    assert_int_equal(raw_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND partition=1 "
                             "AND epoch=5 AND convert_from(value, 'UTF8') = 'v' || \"offset\"",
                             group),
                     3);
    const int64_t b[] = {3, 4};
    assert_int_equal(write_offsets(s, 1, 5, b, 2, &next, NULL), BATON_OK);
    assert_int_equal(next, 5);
    next = -1;
    assert_int_equal(baton_sink_write(s, 1, 5, NULL, 0, &next, &applied), BATON_OK);
    assert_int_equal(next, 5);
    assert_int_equal(applied, 0);
    baton_sink_destroy(s);
}

static void test_write_skips_duplicates(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 5);
    int64_t next;
    size_t applied;
    const int64_t a[] = {0, 1, 2};
    assert_int_equal(write_offsets(s, 0, 5, a, 3, &next, &applied), BATON_OK);
    const int64_t b[] = {1, 2, 3, 4};
    assert_int_equal(write_offsets(s, 0, 5, b, 4, &next, &applied), BATON_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(next, 5);
    baton_record_t c[] = {rec(7, "first"), rec(6, "x"), rec(7, "second"), rec(8, "y")};
    assert_int_equal(baton_sink_write(s, 0, 5, c, 4, &next, &applied), BATON_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(next, 9);
    assert_int_equal(raw_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND \"offset\"=7 "
                             "AND value = 'first'::bytea",
                             group),
                     1);
    assert_int_equal(
        raw_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND \"offset\"=6", group), 0);
    assert_int_equal(write_offsets(s, 0, 5, a, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 0);
    assert_int_equal(next, 9);
    assert_int_equal(raw_outputs(group, 0), 7);
    baton_sink_destroy(s);
}

static void test_write_allows_gaps(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
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
    assert_int_equal(raw_i64("SELECT count(*) FROM (SELECT string_agg(\"offset\"::text, ',' ORDER "
                             "BY \"offset\") AS s FROM baton_output WHERE grp='%s') x "
                             "WHERE s = '10,20,35,36,100'",
                             group),
                     1);
    baton_sink_destroy(s);
}

/* A batch larger than one INSERT statement (1000 rows) lands whole, with
 * the duplicates at its head skipped. */
static void test_write_large_batch(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 5);
    enum { N = 2500 };
    baton_record_t *recs = calloc(N, sizeof(*recs));
    char(*vals)[16] = calloc(N, sizeof(*vals));
    for (int i = 0; i < N; i++) {
        snprintf(vals[i], sizeof(vals[i]), "v%d", i);
        recs[i] = rec(i, vals[i]);
    }
    int64_t next;
    size_t applied;
    assert_int_equal(baton_sink_write(s, 0, 5, recs, 10, &next, &applied), BATON_OK);
    assert_int_equal(baton_sink_write(s, 0, 5, recs, N, &next, &applied), BATON_OK);
    assert_int_equal(applied, N - 10);
    assert_int_equal(next, N);
    assert_int_equal(raw_outputs(group, 0), N);
    assert_int_equal(raw_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND "
                             "convert_from(value, 'UTF8') = 'v' || \"offset\"",
                             group),
                     N);
    free(vals);
    free(recs);
    baton_sink_destroy(s);
}

static void test_stale_write_rejected_whole(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
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
    assert_int_equal(raw_outputs(group, 0), 2);
    assert_int_equal(baton_sink_write(s, 0, 5, NULL, 0, NULL, NULL), BATON_STALE);
    baton_fence_row_t r = fence_row(s, 0);
    assert_int_equal(r.rejected, 2);
    assert_int_equal(r.next_offset, 2);
    assert_int_equal(r.epoch, 7);
    assert_no_transaction_left();
    assert_int_equal(write_offsets(s, 0, 7, b, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    baton_sink_destroy(s);
}

/* write_many: one transaction over several partitions; a stale one (a
 * newer owner fenced it) is counted and refused, an unfenced one refused,
 * the others applied; a second call applies nothing twice. */
static void test_write_many(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 5);
    fence_ok(s, 1, 5);
    fence_ok(s, 2, 5);
    fence_ok(s, 1, 9); /* the newer owner of partition 1 */
    baton_sink_output_t outs[3] = {{.value = "a", .value_len = 1},
                                   {.value = "b", .value_len = 1},
                                   {.value = "c", .value_len = 1}};
    baton_sink_input_t ins[3] = {{0, &outs[0], 1}, {1, &outs[1], 1}, {2, &outs[2], 1}};
    baton_sink_batch_t b[4] = {
        {.partition = 0, .epoch = 5, .inputs = ins, .ninputs = 3},
        {.partition = 1, .epoch = 5, .inputs = ins, .ninputs = 3},
        {.partition = 2, .epoch = 5, .inputs = ins, .ninputs = 2},
        {.partition = 3, .epoch = 5, .inputs = ins, .ninputs = 1},
    };
    assert_int_equal(baton_sink_write_many(s, b, 4), BATON_OK);
    assert_int_equal(b[0].result, BATON_OK);
    assert_int_equal(b[0].applied, 3);
    assert_int_equal(b[0].next_offset, 3);
    assert_int_equal(b[1].result, BATON_STALE);
    assert_int_equal(b[2].result, BATON_OK);
    assert_int_equal(b[2].next_offset, 2);
    assert_int_equal(b[3].result, BATON_UNFENCED);
    assert_no_transaction_left();
    assert_int_equal(raw_outputs(group, 0), 3);
    assert_int_equal(raw_outputs(group, 1), 0);
    assert_int_equal(raw_outputs(group, 2), 2);
    baton_fence_row_t r = fence_row(s, 1);
    assert_int_equal(r.rejected, 1);
    assert_int_equal(r.epoch, 9);
    assert_int_equal(baton_sink_write_many(s, b, 3), BATON_OK); /* a retry */
    assert_int_equal(b[0].applied, 0);
    assert_int_equal(b[2].applied, 0);
    assert_int_equal(raw_outputs(group, 0), 3);
    assert_int_equal(fence_row(s, 1).rejected, 2);
    baton_sink_destroy(s);
}

static void test_new_owner_resumes(void **state) {
    (void)state;
    baton_sink_t *old = sink_open();
    fence_ok(old, 0, 5);
    const int64_t a[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(write_offsets(old, 0, 5, a, 10, NULL, NULL), BATON_OK);
    baton_sink_destroy(old);
    baton_sink_t *s = sink_open();
    assert_int_equal(fence_ok(s, 0, 9), 10);
    const int64_t b[] = {8, 9, 10, 11, 12};
    int64_t next;
    size_t applied;
    assert_int_equal(write_offsets(s, 0, 9, b, 5, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    assert_int_equal(next, 13);
    assert_int_equal(raw_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND epoch=5", group),
                     10);
    assert_int_equal(
        raw_i64("SELECT min(\"offset\") FROM baton_output WHERE grp='%s' AND epoch=9", group), 10);
    baton_sink_destroy(s);
}

/* Two connections act as two worker hosts: the zombie's writes and fences
 * are refused once the new owner fenced. */
static void test_zombie_refused(void **state) {
    (void)state;
    baton_sink_t *zombie = sink_open();
    baton_sink_t *owner = sink_open();
    int64_t next;
    size_t applied;
    assert_int_equal(fence_ok(zombie, 2, 100), 0);
    const int64_t a[] = {0, 1};
    assert_int_equal(write_offsets(zombie, 2, 100, a, 2, &next, &applied), BATON_OK);
    assert_int_equal(fence_ok(owner, 2, 200), 2);
    const int64_t b[] = {2, 3};
    assert_int_equal(write_offsets(zombie, 2, 100, b, 2, &next, &applied), BATON_STALE);
    assert_int_equal(applied, 0);
    assert_int_equal(baton_sink_fence(zombie, 2, 100, &next), BATON_STALE);
    assert_int_equal(write_offsets(owner, 2, 200, b, 2, &next, &applied), BATON_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(next, 4);
    assert_int_equal(
        raw_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND epoch=100", group), 2);
    assert_int_equal(
        raw_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND epoch=200", group), 2);
    assert_int_equal(fence_row(zombie, 2).rejected, 2);
    assert_no_transaction_left();
    baton_sink_destroy(zombie);
    baton_sink_destroy(owner);
}

/* The new owner fences while the zombie's write transaction holds the fence
 * row: the fence waits for it, then wins; the zombie's next write is
 * refused. Real processes, so the two transactions truly overlap. */
static void test_fence_waits_for_write(void **state) {
    (void)state;
    baton_sink_t *zombie = sink_open();
    fence_ok(zombie, 0, 100);
    /* Hold the fence row as a write transaction does, from a raw session. */
    PGconn *holder = PQconnectdb(pg_uri);
    assert_int_equal(PQstatus(holder), CONNECTION_OK);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "BEGIN; SELECT 1 FROM baton_fence WHERE grp='%s' AND partition=0 FOR UPDATE", group);
    PGresult *res = PQexec(holder, sql);
    assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
    PQclear(res);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512];
        baton_sink_t *s = NULL;
        int64_t next = -1;
        if (baton_sink_open(pg_uri, group, &s, err, sizeof(err)))
            _exit(10);
        int rc = baton_sink_fence(s, 0, 200, &next);
        baton_sink_destroy(s);
        _exit(rc == BATON_OK && next == 0 ? 0 : 11);
    }
    /* The child's fence is blocked on the row lock (bounded: lock_timeout
     * is 5 s, then it would fail); wait until the server shows it waiting. */
    int waiting = 0;
    for (int i = 0; i < 200 && !waiting; i++) {
        waiting = raw_i64("SELECT count(*) FROM pg_stat_activity WHERE application_name='baton' "
                          "AND wait_event_type = 'Lock'") > 0;
        if (!waiting)
            usleep(10000);
    }
    res = PQexec(holder, "COMMIT");
    PQclear(res);
    PQfinish(holder);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(waiting);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(write_offsets(zombie, 0, 100, (const int64_t[]){0}, 1, NULL, NULL),
                     BATON_STALE);
    assert_int_equal(fence_row(zombie, 0).epoch, 200);
    baton_sink_destroy(zombie);
}

static void test_group_isolation(void **state) {
    (void)state;
    char g1[80], g2[80];
    snprintf(g1, sizeof(g1), "%s-1", group);
    snprintf(g2, sizeof(g2), "%s-2", group);
    baton_sink_t *s1 = sink_open_uri(pg_uri, g1);
    baton_sink_t *s2 = sink_open_uri(pg_uri, g2);
    fence_ok(s1, 0, 5);
    assert_int_equal(fence_ok(s2, 0, 3), 0);
    const int64_t a[] = {0, 1, 2};
    int64_t next;
    assert_int_equal(write_offsets(s1, 0, 5, a, 3, &next, NULL), BATON_OK);
    size_t applied;
    assert_int_equal(write_offsets(s2, 0, 3, a, 1, &next, &applied), BATON_OK);
    assert_int_equal(applied, 1);
    assert_int_equal(write_offsets(s2, 0, 5, a, 1, NULL, NULL), BATON_UNFENCED);
    assert_int_equal(write_offsets(s1, 0, 3, a, 1, NULL, NULL), BATON_STALE);
    assert_int_equal(raw_outputs(g1, 0), 3);
    assert_int_equal(raw_outputs(g2, 0), 1);
    baton_sink_destroy(s1);
    baton_sink_destroy(s2);
}

static void test_key_value_roundtrip(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 5);
    static const char k1[] = {'a', '\0', 'b'};
    static const unsigned char v1[] = {0x00, 0x00, 0xff, 0x7f, '\\', '\''};
    baton_record_t recs[] = {
        {.offset = 0},
        {.offset = 1, .key = k1, .key_len = sizeof(k1), .value = v1, .value_len = sizeof(v1)},
        {.offset = 2, .key = "", .key_len = 0, .value = "x", .value_len = 1},
    };
    assert_int_equal(baton_sink_write(s, 0, 5, recs, 3, NULL, NULL), BATON_OK);
    baton_sink_destroy(s);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT key IS NULL, value IS NULL, encode(key, 'hex'), encode(value, 'hex') "
             "FROM baton_output WHERE grp='%s' ORDER BY \"offset\"",
             group);
    PGresult *res = PQexec(raw, sql);
    assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(res), 3);
    assert_string_equal(PQgetvalue(res, 0, 0), "t");
    assert_string_equal(PQgetvalue(res, 0, 1), "t");
    assert_string_equal(PQgetvalue(res, 1, 2), "610062");
    assert_string_equal(PQgetvalue(res, 1, 3), "0000ff7f5c27");
    assert_string_equal(PQgetvalue(res, 2, 0), "f"); /* empty, not NULL */
    assert_string_equal(PQgetvalue(res, 2, 2), "");
    PQclear(res);
}

static void test_fences_listing(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    baton_fence_row_t *rows = NULL;
    size_t n = 9;
    assert_int_equal(baton_sink_fences(s, &rows, &n), BATON_OK);
    assert_int_equal(n, 0);
    free(rows);
    fence_ok(s, 5, 50);
    fence_ok(s, 1, 10);
    fence_ok(s, 3, 30);
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
}

/* Output rows at or above next_offset mean the tables disagree: CORRUPT,
 * nothing applied, progress unchanged. */
static void test_output_conflict_corrupt(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 2, 5);
    raw_exec("INSERT INTO baton_output VALUES('%s', 2, 1, 5, NULL, NULL)", group);
    assert_int_equal(write_offsets(s, 2, 5, (const int64_t[]){0, 1}, 2, NULL, NULL), BATON_CORRUPT);
    assert_int_equal(raw_outputs(group, 2), 1);
    assert_int_equal(fence_row(s, 2).next_offset, 0);
    assert_no_transaction_left();
    baton_sink_destroy(s);
}

/* Processors' outputs (baton_sink_write_outputs): zero, one and several
 * per input; output 0 in baton_output, the rest in baton_output_more (in
 * several INSERT chunks for a large one), next_offset past inputs without
 * output, a retry applies nothing twice, a stale epoch writes nothing, and
 * a conflicting baton_output_more row is CORRUPT with everything rolled
 * back. */
static void test_write_outputs(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 7);
    enum { MANY = 2500 };
    baton_sink_output_t *many = calloc(MANY, sizeof(*many));
    for (size_t i = 0; i < MANY; i++)
        many[i] = (baton_sink_output_t){"k", 1, "w", 1};
    baton_sink_output_t one[] = {{"k", 1, "a", 1}};
    baton_sink_output_t three[] = {{"k", 1, "x", 1}, {NULL, 0, "y", 1}, {"k", 1, "", 0}};
    baton_sink_input_t in[] = {
        {0, one, 1}, {1, NULL, 0}, {2, three, 3}, {3, many, MANY}, {5, NULL, 0}};
    int64_t next = -1;
    size_t applied = 0;
    assert_int_equal(baton_sink_write_outputs(s, 0, 7, in, 5, &next, &applied), BATON_OK);
    assert_int_equal(applied, 5);
    assert_int_equal(next, 6);
    assert_int_equal(raw_outputs(group, 0), 3); /* offsets 0, 2, 3 */
    assert_int_equal(raw_i64("SELECT count(*) FROM baton_output_more WHERE grp='%s'", group),
                     2 + MANY - 1);
    assert_int_equal(raw_i64("SELECT max(seq) FROM baton_output_more WHERE grp='%s' AND "
                             "\"offset\"=3",
                             group),
                     MANY - 1);
    assert_int_equal(raw_i64("SELECT count(*) FROM baton_output_more WHERE grp='%s' AND "
                             "\"offset\"=2 AND ((seq=1 AND key IS NULL AND value='y') OR "
                             "(seq=2 AND key='k' AND value=''))",
                             group),
                     2);
    assert_int_equal(
        raw_i64("SELECT count(*) FROM baton_output_more WHERE grp='%s' AND epoch<>7", group), 0);
    assert_int_equal(fence_row(s, 0).next_offset, 6);
    /* The retry after a lost COMMIT reply: nothing twice. */
    assert_int_equal(baton_sink_write_outputs(s, 0, 7, in, 5, &next, &applied), BATON_OK);
    assert_int_equal(applied, 0);
    assert_int_equal(raw_i64("SELECT count(*) FROM baton_output_more WHERE grp='%s'", group),
                     2 + MANY - 1);
    /* A stale epoch: nothing in either table. */
    fence_ok(s, 1, 9);
    baton_sink_input_t in1[] = {{0, three, 3}};
    assert_int_equal(baton_sink_write_outputs(s, 1, 8, in1, 1, NULL, NULL), BATON_STALE);
    assert_int_equal(raw_outputs(group, 1), 0);
    /* A conflicting row in baton_output_more: CORRUPT, nothing applied. */
    raw_exec("INSERT INTO baton_output_more VALUES('%s', 1, 0, 2, 9, NULL, NULL)", group);
    assert_int_equal(baton_sink_write_outputs(s, 1, 9, in1, 1, NULL, NULL), BATON_CORRUPT);
    assert_non_null(strstr(baton_sink_errstr(s), "baton_output_more"));
    assert_int_equal(raw_outputs(group, 1), 0);
    assert_int_equal(fence_row(s, 1).next_offset, 0);
    assert_no_transaction_left();
    free(many);
    baton_sink_destroy(s);
}

/* Another session holding the fence row past the lock timeout is
 * retriable: BUSY, nothing applied, and the call works once it is gone. */
static void test_busy(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 5);
    assert_int_equal(baton_sink__set_busy_timeout(s, 50), BATON_OK);
    raw_exec("BEGIN");
    raw_exec("SELECT 1 FROM baton_fence WHERE grp='%s' AND partition=0 FOR UPDATE", group);
    int64_t next = -1;
    size_t applied = 9;
    assert_int_equal(baton_sink_fence(s, 0, 6, &next), BATON_BUSY);
    assert_non_null(strstr(baton_sink_errstr(s), "(retriable)"));
    assert_int_equal(write_offsets(s, 0, 5, (const int64_t[]){0, 1}, 2, &next, &applied),
                     BATON_BUSY);
    assert_int_equal(applied, 0);
    raw_exec("COMMIT");
    assert_no_transaction_left();
    assert_int_equal(raw_outputs(group, 0), 0);
    assert_int_equal(fence_row(s, 0).epoch, 5);
    assert_int_equal(write_offsets(s, 0, 5, (const int64_t[]){0, 1}, 2, &next, &applied), BATON_OK);
    assert_int_equal(next, 2);
    baton_sink_destroy(s);
}

/* ---- connections ------------------------------------------------------------ */

/* The server kills the sink's connection while it is idle (a restart, an
 * idle timeout, an operator): the next call reconnects by itself. */
static void test_reconnect_after_kill(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 5);
    /* (Backends of sinks closed by earlier tests may still be exiting.) */
    assert_true(raw_i64("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE application_name = 'baton'") >= 1);
    /* Bounded wait until the backend is gone. */
    for (int i = 0; i < 200 && raw_i64("SELECT count(*) FROM pg_stat_activity WHERE "
                                       "application_name = 'baton'") > 0;
         i++)
        usleep(10000);
    int64_t next;
    size_t applied;
    assert_int_equal(write_offsets(s, 0, 5, (const int64_t[]){0, 1}, 2, &next, &applied), BATON_OK);
    assert_int_equal(applied, 2);
    /* Killed again, the fence also goes through on a new connection. */
    raw_i64("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'baton'");
    for (int i = 0; i < 200 && raw_i64("SELECT count(*) FROM pg_stat_activity WHERE "
                                       "application_name = 'baton'") > 0;
         i++)
        usleep(10000);
    assert_int_equal(fence_ok(s, 0, 6), 2);
    baton_sink_destroy(s);
}

/* A loopback TCP proxy in front of the server that, when armed, drops the
 * connection instead of forwarding the server's reply to COMMIT: the commit
 * happened, but the client cannot know. One thread; pairs of sockets. */
typedef struct {
    int lfd;
    int port;
    int stop[2];
    pthread_t th;
    volatile int armed;
    volatile int dropped;
} proxy_t;

static int proxy_dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

static void *proxy_main(void *arg) {
    proxy_t *px = arg;
    enum { MAXP = 8 };
    int cli[MAXP], srv[MAXP];
    for (int i = 0; i < MAXP; i++)
        cli[i] = srv[i] = -1;
    for (;;) {
        struct pollfd pf[2 + 2 * MAXP];
        int n = 0;
        pf[n++] = (struct pollfd){.fd = px->stop[0], .events = POLLIN};
        pf[n++] = (struct pollfd){.fd = px->lfd, .events = POLLIN};
        for (int i = 0; i < MAXP; i++) {
            pf[n++] = (struct pollfd){.fd = cli[i], .events = POLLIN};
            pf[n++] = (struct pollfd){.fd = srv[i], .events = POLLIN};
        }
        if (poll(pf, (nfds_t)n, 1000) < 0 && errno != EINTR)
            break;
        if (pf[0].revents)
            break;
        if (pf[1].revents & POLLIN) {
            int c = accept(px->lfd, NULL, NULL);
            int u = c >= 0 ? proxy_dial(pg_port) : -1;
            int slot = -1;
            for (int i = 0; i < MAXP && slot < 0; i++)
                if (cli[i] < 0)
                    slot = i;
            if (c >= 0 && u >= 0 && slot >= 0) {
                cli[slot] = c;
                srv[slot] = u;
            } else {
                if (c >= 0)
                    close(c);
                if (u >= 0)
                    close(u);
            }
        }
        for (int i = 0; i < MAXP; i++) {
            for (int dir = 0; dir < 2 && cli[i] >= 0; dir++) {
                struct pollfd *p = &pf[2 + 2 * i + dir];
                if (!p->revents)
                    continue;
                char buf[65536];
                ssize_t r = read(p->fd, buf, sizeof(buf));
                int drop = r <= 0;
                /* Server to client: CommandComplete "COMMIT" is the reply
                 * to lose (the plaintext protocol: sslmode=disable). */
                if (!drop && dir == 1 && px->armed && memmem(buf, (size_t)r, "COMMIT", 7)) {
                    px->armed = 0;
                    px->dropped = 1;
                    drop = 1;
                }
                if (!drop) {
                    int to = dir == 0 ? srv[i] : cli[i];
                    for (ssize_t off = 0; off < r && !drop;) {
                        ssize_t w = write(to, buf + off, (size_t)(r - off));
                        if (w <= 0)
                            drop = 1;
                        else
                            off += w;
                    }
                }
                if (drop) {
                    close(cli[i]);
                    close(srv[i]);
                    cli[i] = srv[i] = -1;
                }
            }
        }
    }
    for (int i = 0; i < MAXP; i++)
        if (cli[i] >= 0) {
            close(cli[i]);
            close(srv[i]);
        }
    return NULL;
}

static void proxy_start(proxy_t *px) {
    memset(px, 0, sizeof(*px));
    px->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(px->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_int_equal(bind(px->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(px->lfd, 8), 0);
    assert_int_equal(getsockname(px->lfd, (struct sockaddr *)&a, &len), 0);
    px->port = ntohs(a.sin_port);
    assert_int_equal(pipe(px->stop), 0);
    assert_int_equal(pthread_create(&px->th, NULL, proxy_main, px), 0);
}

static void proxy_stop(proxy_t *px) {
    (void)!write(px->stop[1], "x", 1);
    pthread_join(px->th, NULL);
    close(px->stop[0]);
    close(px->stop[1]);
    close(px->lfd);
}

/* The retried commit of unknown outcome: the write committed but its reply
 * was lost, so the sink reports a retriable CONNECTION; the worker retries
 * the same batch, which applies nothing twice and leaves next_offset where
 * the first attempt put it. */
static void test_commit_reply_lost(void **state) {
    (void)state;
    proxy_t px;
    proxy_start(&px);
    char uri[256];
    snprintf(uri, sizeof(uri),
             "postgresql://baton@127.0.0.1:%d/baton?sslmode=disable&gssencmode=disable", px.port);
    baton_sink_t *s = sink_open_uri(uri, group);
    fence_ok(s, 0, 5);
    const int64_t a[] = {0, 1, 2};
    int64_t next = -1;
    size_t applied = 9;
    px.armed = 1;
    int rc = write_offsets(s, 0, 5, a, 3, &next, &applied);
    int dropped = px.dropped;
    px.armed = 0;
    assert_true(dropped);
    assert_int_equal(rc, BATON_CONNECTION);
    assert_true(baton_err_is_retriable(rc));
    assert_int_equal(applied, 0);
    /* It did commit. */
    assert_int_equal(raw_outputs(group, 0), 3);
    assert_int_equal(raw_i64("SELECT next_offset FROM baton_fence WHERE grp='%s'", group), 3);

    /* The worker's retry: same epoch, same batch, plus one new record. */
    assert_int_equal(write_offsets(s, 0, 5, a, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 0);
    assert_int_equal(next, 3);
    assert_int_equal(raw_outputs(group, 0), 3);
    const int64_t b[] = {0, 1, 2, 3};
    assert_int_equal(write_offsets(s, 0, 5, b, 4, &next, &applied), BATON_OK);
    assert_int_equal(applied, 1);
    assert_int_equal(next, 4);
    assert_int_equal(raw_i64("SELECT count(*) FROM (SELECT \"offset\" FROM baton_output WHERE "
                             "grp='%s' GROUP BY \"offset\" HAVING count(*) > 1) d",
                             group),
                     0);
    baton_sink_destroy(s);
    proxy_stop(&px);
}

/* ---- open ------------------------------------------------------------------- */

static int open_err(const char *uri, char *err, size_t n) {
    baton_sink_t *s = (baton_sink_t *)0x1;
    int rc = baton_sink_open(uri, group, &s, err, n);
    assert_null(s);
    return rc;
}

/* Authentication: a wrong password is a clear, non-retriable error; no
 * password at all says where one comes from; a password in the URI is
 * refused and never echoed. */
static void test_open_auth(void **state) {
    (void)state;
    char err[512], uri[256];
    const char *passfile = getenv("PGPASSFILE");
    assert_non_null(passfile);
    char *saved = strdup(passfile);

    char bad[256];
    snprintf(bad, sizeof(bad), "%s.wrong", saved);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("*:*:*:baton:not-the-password\n", f);
    fclose(f);
    assert_int_equal(chmod(bad, 0600), 0);
    setenv("PGPASSFILE", bad, 1);
    int rc_wrong = open_err(pg_uri, err, sizeof(err));
    char err_wrong[512];
    snprintf(err_wrong, sizeof(err_wrong), "%s", err);

    setenv("PGPASSFILE", "/nonexistent/baton-passfile", 1);
    int rc_none = open_err(pg_uri, err, sizeof(err));
    char err_none[512];
    snprintf(err_none, sizeof(err_none), "%s", err);

    /* passfile= in the URI works as well as the environment. */
    snprintf(uri, sizeof(uri), "%s?passfile=%s", pg_uri, saved);
    baton_sink_t *s = NULL;
    int rc_passfile = baton_sink_open(uri, group, &s, err, sizeof(err));
    baton_sink_destroy(s);
    setenv("PGPASSFILE", saved, 1);
    unlink(bad);
    free(saved);

    assert_int_equal(rc_wrong, BATON_IO);
    assert_non_null(strstr(err_wrong, "password authentication failed"));
    assert_null(strstr(err_wrong, "not-the-password"));
    assert_int_equal(rc_none, BATON_INVALID);
    assert_non_null(strstr(err_none, "PGPASSFILE"));
    assert_int_equal(rc_passfile, BATON_OK);

    snprintf(uri, sizeof(uri), "postgresql://baton:s3cret@127.0.0.1:%d/baton", pg_port);
    assert_int_equal(open_err(uri, err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "password"));
    assert_null(strstr(err, "s3cret"));
}

/* Nothing listens: CONNECTION (retriable), with libpq's reason. */
static void test_open_unreachable(void **state) {
    (void)state;
    char err[512], uri[128];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    /* Bound but not listening: connections are refused. */
    snprintf(uri, sizeof(uri), "postgresql://baton@127.0.0.1:%d/baton?connect_timeout=3",
             ntohs(a.sin_port));
    assert_int_equal(open_err(uri, err, sizeof(err)), BATON_CONNECTION);
    close(fd);
    assert_non_null(strstr(err, "cannot reach the server"));
    assert_non_null(strstr(err, "refused"));
}

/* A table of another shape in baton_fence's place (its own schema, chosen
 * with search_path) fails the open with the difference named. */
/* Issue 13: the sink's id (one per database, made by the first open) and
 * the group id it records for a group name, written by the first fence of
 * a handle that expects it; another group id is refused by fence and
 * fence_many with nothing fenced. */
static void test_sink_identity(void **state) {
    (void)state;
    baton_sink_t *s = sink_open(), *s2 = sink_open();
    baton_sink_meta_t m1, m2;
    assert_int_equal(baton_sink_meta(s, &m1), BATON_OK);
    assert_int_equal(baton_uuid_valid(m1.sink_id), 0);
    assert_string_equal(m1.group_uuid, "");
    assert_int_equal(baton_sink_meta(s2, &m2), BATON_OK);
    assert_string_equal(m1.sink_id, m2.sink_id);
    assert_int_equal(raw_i64("SELECT count(*) FROM baton_meta WHERE value = '%s'", m1.sink_id), 1);
    char u1[BATON_UUID_LEN + 1], u2[BATON_UUID_LEN + 1];
    assert_int_equal(baton_uuid_new(u1), 0);
    assert_int_equal(baton_uuid_new(u2), 0);
    assert_int_equal(baton_sink_expect_group(s, u1), BATON_OK);
    assert_int_equal(fence_ok(s, 1, 5), 0);
    fence_ok(s, 1, 6);
    assert_int_equal(baton_sink_meta(s2, &m2), BATON_OK);
    assert_string_equal(m2.group_uuid, u1);
    assert_true(m2.bound_ms > 0);
    assert_int_equal(baton_sink_expect_group(s2, u2), BATON_OK);
    int64_t next = -1;
    assert_int_equal(baton_sink_fence(s2, 2, 99, &next), BATON_CONFLICT);
    assert_non_null(strstr(baton_sink_errstr(s2), u1));
    assert_non_null(strstr(baton_sink_errstr(s2), u2));
    int32_t parts[] = {1, 3};
    int64_t epochs[] = {99, 99}, nexts[2];
    int res[2];
    assert_int_equal(baton_sink_fence_many(s2, 2, parts, epochs, nexts, res), BATON_CONFLICT);
    assert_int_equal(
        raw_i64("SELECT count(*) FROM baton_fence WHERE grp = '%s' AND partition IN (2, 3)", group),
        0);
    assert_int_equal(fence_row(s, 1).epoch, 6);
    /* Writes do not look at it. */
    assert_int_equal(write_offsets(s, 1, 6, (const int64_t[]){0}, 1, NULL, NULL), BATON_OK);
    raw_exec("UPDATE baton_groups SET group_uuid = 'x' WHERE grp = '%s'", group);
    assert_int_equal(baton_sink_fence(s, 1, 7, &next), BATON_CORRUPT);
    assert_int_equal(baton_sink_meta(s, &m1), BATON_CORRUPT);
    baton_sink_destroy(s2);
    baton_sink_destroy(s);
}

static void test_open_wrong_shape(void **state) {
    (void)state;
    char err[512], uri[300];
    raw_exec("DROP SCHEMA IF EXISTS shape CASCADE; CREATE SCHEMA shape");
    raw_exec("CREATE TABLE shape.baton_fence(grp TEXT, partition BIGINT, epoch BIGINT, "
             "next_offset BIGINT, PRIMARY KEY(grp, partition))");
    snprintf(uri, sizeof(uri), "%s?options=-csearch_path%%3Dshape", pg_uri);
    assert_int_equal(open_err(uri, err, sizeof(err)), BATON_CORRUPT);
    assert_non_null(strstr(err, "missing column 'rejected'"));
    raw_exec("DROP TABLE shape.baton_fence; CREATE TABLE shape.baton_output(grp TEXT, "
             "partition BIGINT, \"offset\" TEXT, epoch BIGINT, key BYTEA, value BYTEA, "
             "PRIMARY KEY(grp, partition))");
    assert_int_equal(open_err(uri, err, sizeof(err)), BATON_CORRUPT);
    assert_non_null(strstr(err, "'offset' text"));
    raw_exec("DROP TABLE shape.baton_output; CREATE VIEW shape.baton_output AS SELECT 1 AS x");
    assert_int_equal(open_err(uri, err, sizeof(err)), BATON_CORRUPT);
    assert_non_null(strstr(err, "view"));
    /* The refused opens left nothing behind: the schema transaction rolled back. */
    assert_int_equal(raw_i64("SELECT count(*) FROM pg_tables WHERE schemaname='shape'"), 0);
    raw_exec("DROP SCHEMA shape CASCADE");
}

/* Workers starting at once on an empty database: the advisory lock makes
 * schema creation safe; every process opens, fences and writes. */
static void test_concurrent_open(void **state) {
    (void)state;
    enum { NPROC = 8, ROUNDS = 3 };
    for (int round = 0; round < ROUNDS; round++) {
        char uri[300];
        raw_exec("DROP SCHEMA IF EXISTS race CASCADE; CREATE SCHEMA race");
        snprintf(uri, sizeof(uri), "%s?options=-csearch_path%%3Drace", pg_uri);
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
                (void)!read(go[0], &c, 1);
                char err[512];
                baton_sink_t *s = NULL;
                int64_t next = -1;
                if (baton_sink_open(uri, "g", &s, err, sizeof(err))) {
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
        int failed = NPROC - forked;
        for (int i = 0; i < forked; i++) {
            int st = 0;
            if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                failed++;
        }
        assert_int_equal(failed, 0);
        assert_int_equal(raw_i64("SELECT count(*) FROM race.baton_fence WHERE next_offset = 1"),
                         NPROC);
    }
    raw_exec("DROP SCHEMA race CASCADE");
}

#define T(fn) \
    { #fn, fn, setup_group, NULL, (void *)#fn }

int main(void) {
    baton_log_level = BATON_LOG_ERROR;
    pg_uri = getenv("PG_URI");
    const char *port = getenv("PG_PORT");
    if (!pg_uri || !port) {
        fprintf(stderr, "test_sink_pg_server: set PG_URI and PG_PORT (tests/lib/pg.sh)\n");
        return 1;
    }
    pg_port = atoi(port);
    raw = PQconnectdb(pg_uri);
    if (PQstatus(raw) != CONNECTION_OK) {
        fprintf(stderr, "test_sink_pg_server: %s", PQerrorMessage(raw));
        return 1;
    }
    PQclear(PQexec(raw, "SET application_name = 'baton-test'; SET client_min_messages = warning"));
    /* Create the tables once so setup_group can empty them. */
    char err[512];
    baton_sink_t *s = NULL;
    if (baton_sink_open(pg_uri, "setup", &s, err, sizeof(err))) {
        fprintf(stderr, "test_sink_pg_server: open: %s\n", err);
        return 1;
    }
    baton_sink_destroy(s);
    const struct CMUnitTest tests[] = {
        T(test_fence_new_partition),
        T(test_write_many),
        T(test_fence_epochs),
        T(test_write_requires_fence),
        T(test_write_applies),
        T(test_write_skips_duplicates),
        T(test_write_allows_gaps),
        T(test_write_large_batch),
        T(test_stale_write_rejected_whole),
        T(test_new_owner_resumes),
        T(test_zombie_refused),
        T(test_fence_waits_for_write),
        T(test_group_isolation),
        T(test_key_value_roundtrip),
        T(test_fences_listing),
        T(test_output_conflict_corrupt),
        T(test_write_outputs),
        T(test_busy),
        T(test_reconnect_after_kill),
        T(test_commit_reply_lost),
        T(test_open_auth),
        T(test_open_unreachable),
        T(test_open_wrong_shape),
        T(test_concurrent_open),
        T(test_sink_identity),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    PQfinish(raw);
    return rc;
}
