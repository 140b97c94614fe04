/* bench_out.c: the comparators' unfenced sink (see bench_out.h). */
#include "bench_out.h"

#include "baton_util.h"
#include "sqlite_wait.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_out_s {
    sqlite3 *db;
    char *group;
    sqlite3_stmt *begin, *commit, *rollback, *get, *take, *ins, *next;
    baton_sqlite_wait_t busy; /* the wait for the write lock */
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS baton_fence(grp TEXT, partition INTEGER, epoch INTEGER, "
    "next_offset INTEGER, rejected INTEGER, PRIMARY KEY(grp, partition));"
    "CREATE TABLE IF NOT EXISTS baton_output(grp TEXT, partition INTEGER, offset INTEGER, "
    "epoch INTEGER, key BLOB, value BLOB, PRIMARY KEY(grp, partition, offset));";

static int run(sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

static void fail(bench_out_t *o, const char *what) {
    fprintf(stderr, "bench_out: %s: %s\n", what, sqlite3_errmsg(o->db));
    if (!sqlite3_get_autocommit(o->db))
        run(o->rollback);
}

bench_out_t *bench_out_open(const char *path, const char *group, char *errstr, size_t n) {
    bench_out_t *o = xcalloc(1, sizeof(*o));
    o->group = xstrdup(group);
    const char *step = "open";
    if (sqlite3_open_v2(path, &o->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        goto err;
    /* The lock wait baton's SQLite sink uses, for up to 5 s. SQLite's own
     * (sqlite3_busy_timeout) sleeps up to 25 ms between tries, which would
     * handicap these writers against baton's wherever several share a file
     * (the throughput benchmark's group runs). */
    baton_sqlite_wait_set(o->db, &o->busy, 5000);
    /* Three comparators open a fresh file at once in the throughput
     * benchmark's group runs: the WAL switch waits as baton's sink does
     * (it failed "database is locked" in 3 of about 70 runs on 2026-12-07,
     * and the benchmark waited 300 s for records nobody wrote). */
    step = "pragmas and schema";
    char mode[16];
    if (baton_sqlite_wal(o->db, 5000, mode, sizeof(mode)) ||
        sqlite3_exec(o->db, "PRAGMA synchronous=FULL;", NULL, NULL, NULL) ||
        sqlite3_exec(o->db, schema_sql, NULL, NULL, NULL))
        goto err;
    step = "prepare";
    struct {
        sqlite3_stmt **st;
        const char *sql;
    } stmts[] = {
        {&o->begin, "BEGIN IMMEDIATE"},
        {&o->commit, "COMMIT"},
        {&o->rollback, "ROLLBACK"},
        {&o->get, "SELECT next_offset FROM baton_fence WHERE grp=?1 AND partition=?2"},
        {&o->take, "INSERT INTO baton_fence(grp, partition, epoch, next_offset, rejected) "
                   "VALUES(?1, ?2, ?3, 0, 0) ON CONFLICT(grp, partition) DO UPDATE SET epoch=?3"},
        {&o->ins, "INSERT OR IGNORE INTO baton_output(grp, partition, offset, epoch, key, value) "
                  "VALUES(?1, ?2, ?3, ?4, ?5, ?6)"},
        {&o->next, "UPDATE baton_fence SET next_offset=?3 WHERE grp=?1 AND partition=?2"},
    };
    for (size_t i = 0; i < BATON_ARRAY_SIZE(stmts); i++) {
        if (sqlite3_prepare_v2(o->db, stmts[i].sql, -1, stmts[i].st, NULL) != SQLITE_OK)
            goto err;
        if (sqlite3_bind_parameter_count(*stmts[i].st) > 0)
            sqlite3_bind_text(*stmts[i].st, 1, o->group, -1, SQLITE_STATIC);
    }
    return o;
err:
    baton_seterr(errstr, n, -1, "sink '%s': %s: %s", path, step,
                 o->db ? sqlite3_errmsg(o->db) : "out of memory");
    bench_out_close(o);
    return NULL;
}

void bench_out_close(bench_out_t *o) {
    if (!o)
        return;
    sqlite3_stmt *all[] = {o->begin, o->commit, o->rollback, o->get, o->take, o->ins, o->next};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(all); i++)
        sqlite3_finalize(all[i]);
    sqlite3_close(o->db);
    free(o->group);
    free(o);
}

int bench_out_take(bench_out_t *o, int32_t p, int64_t owner, int64_t *next) {
    if (run(o->begin))
        return fail(o, "begin take"), -1;
    sqlite3_bind_int(o->take, 2, p);
    sqlite3_bind_int64(o->take, 3, owner);
    if (run(o->take))
        return fail(o, "take"), -1;
    sqlite3_bind_int(o->get, 2, p);
    int64_t n = 0;
    if (sqlite3_step(o->get) == SQLITE_ROW)
        n = sqlite3_column_int64(o->get, 0);
    sqlite3_reset(o->get);
    if (run(o->commit))
        return fail(o, "commit take"), -1;
    *next = n;
    return 0;
}

/* Inserts msgs and stores next_offset, inside an open transaction. */
static int write_rows(bench_out_t *o, int32_t p, int64_t owner, rd_kafka_message_t *const *msgs,
                      size_t n) {
    sqlite3_bind_int(o->ins, 2, p);
    sqlite3_bind_int64(o->ins, 4, owner);
    for (size_t i = 0; i < n; i++) {
        const rd_kafka_message_t *m = msgs[i];
        sqlite3_bind_int64(o->ins, 3, m->offset);
        if (m->key)
            sqlite3_bind_blob64(o->ins, 5, m->key, m->key_len, SQLITE_STATIC);
        else
            sqlite3_bind_null(o->ins, 5);
        if (m->payload)
            sqlite3_bind_blob64(o->ins, 6, m->payload, m->len, SQLITE_STATIC);
        else
            sqlite3_bind_null(o->ins, 6);
        if (run(o->ins))
            return fail(o, "insert"), -1;
    }
    sqlite3_bind_null(o->ins, 5);
    sqlite3_bind_null(o->ins, 6);
    sqlite3_bind_int(o->next, 2, p);
    sqlite3_bind_int64(o->next, 3, msgs[n - 1]->offset + 1);
    if (run(o->next))
        return fail(o, "store next_offset"), -1;
    return 0;
}

int bench_out_write(bench_out_t *o, int32_t p, int64_t owner, rd_kafka_message_t *const *msgs,
                    size_t n) {
    if (n == 0)
        return 0;
    if (run(o->begin))
        return fail(o, "begin write"), -1;
    if (write_rows(o, p, owner, msgs, n))
        return -1;
    if (run(o->commit))
        return fail(o, "commit write"), -1;
    return 0;
}

bench_batcher_t *bench_batcher_new(int32_t nparts, int batch_size, int linger_ms) {
    bench_batcher_t *b = xcalloc(1, sizeof(*b));
    b->parts = xcalloc((size_t)nparts, sizeof(*b->parts));
    b->nparts = nparts;
    b->batch_size = batch_size;
    b->linger_ms = linger_ms;
    return b;
}

void bench_batcher_destroy(bench_batcher_t *b) {
    if (!b)
        return;
    for (int32_t p = 0; p < b->nparts; p++) {
        bench_batcher_drop(b, p);
        free(b->parts[p].msgs);
    }
    free(b->parts);
    free(b);
}

void bench_batcher_start(bench_batcher_t *b, int32_t p, int64_t next) {
    if (p < 0 || p >= b->nparts)
        return;
    bench_batcher_drop(b, p);
    b->parts[p].active = 1;
    b->parts[p].expect = next;
}

void bench_batcher_drop(bench_batcher_t *b, int32_t p) {
    if (p < 0 || p >= b->nparts)
        return;
    bench_part_t *bp = &b->parts[p];
    for (size_t i = 0; i < bp->n; i++)
        rd_kafka_message_destroy(bp->msgs[i]);
    bp->n = 0;
    bp->first_ms = 0;
    bp->active = 0;
}

void bench_batcher_add(bench_batcher_t *b, rd_kafka_message_t *m) {
    int32_t p = m->partition;
    if (p < 0 || p >= b->nparts || !b->parts[p].active || m->offset < b->parts[p].expect) {
        rd_kafka_message_destroy(m);
        return;
    }
    bench_part_t *bp = &b->parts[p];
    if (bp->n == bp->cap) {
        bp->cap = bp->cap ? bp->cap * 2 : 64;
        bp->msgs = xrealloc(bp->msgs, bp->cap * sizeof(*bp->msgs));
    }
    bp->msgs[bp->n++] = m;
    bp->expect = m->offset + 1;
    if (!bp->first_ms)
        bp->first_ms = baton_now_ms();
}

/* Forgets the first n of p's messages (written). The rest keep their
 * order and their age restarts, as baton-worker's (batch_drop_front). */
static void batch_done(bench_batcher_t *b, bench_part_t *bp, size_t n) {
    b->written += (int64_t)n;
    for (size_t i = 0; i < n; i++)
        rd_kafka_message_destroy(bp->msgs[i]);
    memmove(bp->msgs, bp->msgs + n, sizeof(*bp->msgs) * (bp->n - n));
    bp->n -= n;
    bp->first_ms = bp->n ? baton_now_ms() : 0;
}

int bench_batcher_flush(bench_batcher_t *b, bench_out_t *o, int32_t p, int64_t owner) {
    bench_part_t *bp = &b->parts[p];
    if (!bp->active || bp->n == 0)
        return 0;
    int rc = bench_out_write(o, p, owner, bp->msgs, bp->n);
    if (rc == 0)
        batch_done(b, bp, bp->n);
    return rc;
}

/* How many of p's messages one transaction takes: at most batch_size, as
 * baton-worker takes them (wbatch_take), so that behind a backlog both
 * write the same transactions; a forced flush (the end) takes everything. */
static size_t batch_take(const bench_batcher_t *b, const bench_part_t *bp, int force) {
    return force || bp->n < (size_t)b->batch_size ? bp->n : (size_t)b->batch_size;
}

void bench_batcher_flush_due(bench_batcher_t *b, bench_out_t *o, int64_t owner, int force) {
    /* Every due partition in one transaction, as baton-worker writes them
     * (baton_sink_write_many): the same batching for both. */
    int64_t now = baton_now_ms();
    int32_t *due = xmalloc(sizeof(int32_t) * ((size_t)b->nparts + 1));
    size_t ndue = 0;
    for (int32_t p = 0; p < b->nparts; p++) {
        bench_part_t *bp = &b->parts[p];
        if (bp->active && bp->n &&
            (force || bp->n >= (size_t)b->batch_size || now - bp->first_ms >= b->linger_ms))
            due[ndue++] = p;
    }
    int ok = ndue > 0 && run(o->begin) == 0;
    if (ndue > 0 && !ok)
        fail(o, "begin write");
    for (size_t i = 0; ok && i < ndue; i++) {
        bench_part_t *bp = &b->parts[due[i]];
        ok = write_rows(o, due[i], owner, bp->msgs, batch_take(b, bp, force)) == 0;
    }
    if (ok && run(o->commit)) {
        fail(o, "commit write");
        ok = 0;
    }
    for (size_t i = 0; ok && i < ndue; i++)
        batch_done(b, &b->parts[due[i]], batch_take(b, &b->parts[due[i]], force));
    free(due);
}
