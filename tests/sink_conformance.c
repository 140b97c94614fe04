/* sink_conformance.c: the sink conformance suite. Every sink backend must
 * pass it (docs/sinks.md, "Adding one"): the fence and write protocol of
 * sink.h, batched and single, with outputs, the lazy open, the group
 * binding and concurrent opens, through the public calls only.
 *
 *   sink_conformance URI      e.g. sqlite:/tmp/x.db, postgresql://... (PG_URI) or
 *                             redis://:PASS@127.0.0.1:PORT/0 (REDIS_URI)
 *
 * The unit tests run it on an SQLite file, it_pg_sink.sh on tests/lib/pg.sh's
 * throwaway server, it_redis_sink.sh on tests/lib/redis.sh's. Each test uses its own group (emptied
 * first), so one store serves the whole run. Stored rows are read back with the store's own client
 * (a "peek" below: sqlite3, libpq or hiredis), as tools outside baton would; a new backend adds its
 * peek, a few lines of raw SQL. Redis has no SQL: its peek copies the keys of the documented layout
 * into an in-memory SQLite database of the SQL backends' tables and runs the same queries there,
 * and makes the few changes the tests make with Redis commands. What only one backend has (file
 * handling, connections, TLS, passwords) is tested beside it: tests/unit/test_sink.c,
 * tests/integration/test_sink_pg_server.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "sink.h"
#include "sink_helpers.h"
#include "sink_int.h"

static const char *uri;  /* argv[1] */
static char group[64];   /* the current test's group */
static char dump[65536]; /* peek_text's result */

/* ---- peeks: the store read and changed with its own client ---------------- */

typedef struct {
    const char *scheme;   /* as in baton_sink_ops_t (alias included) */
    const char *hex;      /* SQL of a blob as upper-case hex, "%s" the column */
    int (*connect)(void); /* 0 or -1 with a message on stderr */
    void (*disconnect)(void);
    void (*exec)(const char *sql);
    /* The rows of a query as "a|b|c;" concatenated into dump (NULL: "NULL"). */
    void (*text)(const char *sql);
    /* Holds the write lock on (group, partition)'s fence row until unlock. */
    void (*lock)(int32_t partition);
    void (*unlock)(void);
    /* Whether no sink connection holds a transaction open. */
    int (*idle)(void);
    /* An empty store of this kind (round n of a test), as a URI. */
    void (*fresh)(int n, char *buf, size_t size);
    /* The changes the tests make behind the sink's back (NULL: the SQL
     * below, through exec): empties every group whose name starts with
     * prefix; stores an output row (seq 0: baton_output) that baton did not
     * write; sets the group's recorded group id to a value baton would
     * never write. */
    void (*clear)(const char *prefix);
    void (*put_output)(int32_t partition, int64_t offset, int64_t seq, int64_t epoch);
    void (*spoil_group)(void);
    /* Replaces partition's fence row by something that is no fence row
     * (NULL: the backend's schema allows no such thing). */
    void (*spoil_fence)(int32_t partition);
    /* What the sink's messages call the output tables (NULL: baton_output
     * and baton_output_more). */
    const char *out_name, *more_name;
} peek_t;

/* -- SQLite -- */

/* The file of "sqlite:PATH" ("sqlite:///abs" is "/abs"). */
static const char *sq_path(void) {
    const char *p = strchr(uri, ':') + 1;
    return strncmp(p, "///", 3) == 0 ? p + 2 : p;
}

static sqlite3 *sq_open(const char *path) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        fail_msg("peek: cannot open %s", path);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static sqlite3 *sq_holder;

static int sq_connect(void) { return 0; }
static void sq_disconnect(void) {}

static void sq_exec(const char *sql) {
    sqlite3 *db = sq_open(sq_path());
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("peek '%s': %s", sql, msg);
    sqlite3_close(db);
}

/* The rows of sql on db as peek_t.text gives them, into dump; closes db. */
static void sq_text_on(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("peek '%s': %s", sql, sqlite3_errmsg(db));
    size_t n = 0;
    dump[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW && n < sizeof(dump))
        for (int c = 0; c < sqlite3_column_count(st) && n < sizeof(dump); c++) {
            const char *v = sqlite3_column_type(st, c) == SQLITE_NULL
                                ? "NULL"
                                : (const char *)sqlite3_column_text(st, c);
            int last = c == sqlite3_column_count(st) - 1;
            n += (size_t)snprintf(dump + n, sizeof(dump) - n, "%s%s", v, last ? ";" : "|");
        }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void sq_text(const char *sql) { sq_text_on(sq_open(sq_path()), sql); }

/* SQLite locks the whole file: BEGIN IMMEDIATE takes the write lock. */
static void sq_lock(int32_t partition) {
    (void)partition;
    sq_holder = sq_open(sq_path());
    assert_int_equal(sqlite3_exec(sq_holder, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
}

static void sq_unlock(void) {
    assert_int_equal(sqlite3_exec(sq_holder, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(sq_holder);
    sq_holder = NULL;
}

/* Another connection that does not wait gets the write lock at once. */
static int sq_idle(void) {
    sqlite3 *db = sq_open(sq_path());
    sqlite3_busy_timeout(db, 0);
    int ok = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
    if (ok)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    return ok;
}

static void sq_fresh(int n, char *buf, size_t size) {
    char path[512];
    snprintf(path, sizeof(path), "%s.fresh%d", sq_path(), n);
    static const char *const sfx[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char p[600];
        snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
        unlink(p);
    }
    snprintf(buf, size, "sqlite:%s", path);
}

/* -- PostgreSQL -- */

static PGconn *pg_raw, *pg_holder;

static int pg_connect(void) {
    pg_raw = PQconnectdb(uri);
    if (PQstatus(pg_raw) != CONNECTION_OK) {
        fprintf(stderr, "sink_conformance: %s", PQerrorMessage(pg_raw));
        return -1;
    }
    PQclear(PQexec(pg_raw, "SET application_name = 'baton-test'; SET client_min_messages = "
                           "warning"));
    return 0;
}

static void pg_disconnect(void) { PQfinish(pg_raw); }

static PGresult *pg_query(PGconn *conn, const char *sql) {
    PGresult *res = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("peek '%s': %s", sql, PQresultErrorMessage(res));
    return res;
}

static void pg_exec(const char *sql) { PQclear(pg_query(pg_raw, sql)); }

static void pg_text(const char *sql) {
    PGresult *res = pg_query(pg_raw, sql);
    size_t n = 0;
    dump[0] = '\0';
    for (int r = 0; r < PQntuples(res) && n < sizeof(dump); r++)
        for (int c = 0; c < PQnfields(res) && n < sizeof(dump); c++) {
            const char *v = PQgetisnull(res, r, c) ? "NULL" : PQgetvalue(res, r, c);
            n += (size_t)snprintf(dump + n, sizeof(dump) - n, "%s%s", v,
                                  c == PQnfields(res) - 1 ? ";" : "|");
        }
    PQclear(res);
}

/* PostgreSQL locks rows: hold the fence row as a write transaction does. */
static void pg_lock(int32_t partition) {
    pg_holder = PQconnectdb(uri);
    assert_int_equal(PQstatus(pg_holder), CONNECTION_OK);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "BEGIN; SELECT 1 FROM baton_fence WHERE grp='%s' AND partition=%d FOR UPDATE", group,
             (int)partition);
    PQclear(pg_query(pg_holder, sql));
}

static void pg_unlock(void) {
    PQclear(pg_query(pg_holder, "COMMIT"));
    PQfinish(pg_holder);
    pg_holder = NULL;
}

static int pg_idle(void) {
    pg_text("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'baton' AND state "
            "LIKE 'idle in transaction%'");
    return strcmp(dump, "0;") == 0;
}

/* A schema of its own, chosen with search_path. */
static void pg_fresh(int n, char *buf, size_t size) {
    char sql[128];
    snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS fresh%d CASCADE; CREATE SCHEMA fresh%d", n,
             n);
    pg_exec(sql);
    snprintf(buf, size, "%s%soptions=-csearch_path%%3Dfresh%d", uri, strchr(uri, '?') ? "&" : "?",
             n);
}

/* -- Redis -- */

static redisContext *rd_raw;
static char rd_host[128], rd_pass[128];
static int rd_port, rd_db;
static pid_t rd_holder;

static void rd_select(int db);

/* redis://[:PASS@]HOST:PORT[/DB], the form tests/lib/redis.sh exports. */
static int rd_connect(void) {
    const char *p = uri + strlen("redis://");
    const char *at = strchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        snprintf(rd_pass, sizeof(rd_pass), "%.*s", colon ? (int)(at - colon - 1) : 0,
                 colon ? colon + 1 : "");
        p = at + 1;
    }
    if (sscanf(p, "%127[^:]:%d/%d", rd_host, &rd_port, &rd_db) < 2) {
        fprintf(stderr, "sink_conformance: cannot parse '%s'\n", uri);
        return -1;
    }
    rd_raw = redisConnect(rd_host, rd_port);
    if (!rd_raw || rd_raw->err) {
        fprintf(stderr, "sink_conformance: redis: %s\n", rd_raw ? rd_raw->errstr : "oom");
        return -1;
    }
    rd_select(rd_db);
    return 0;
}

static void rd_disconnect(void) { redisFree(rd_raw); }

/* A command that must not fail; the reply, to free. */
static redisReply *rd_do(redisContext *c, int argc, const char **argv, const size_t *lens) {
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    if (!r)
        fail_msg("peek redis: %s", c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("peek redis %s: %s", argv[0], r->str);
    return r;
}

static redisReply *rd_dov(int argc, ...) {
    const char *argv[12];
    size_t lens[12];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++) {
        argv[i] = va_arg(ap, const char *);
        lens[i] = strlen(argv[i]);
    }
    va_end(ap);
    return rd_do(rd_raw, argc, argv, lens);
}

static void rd_select(int db) {
    char d[16];
    snprintf(d, sizeof(d), "%d", db);
    if (rd_pass[0])
        freeReplyObject(rd_dov(2, "AUTH", rd_pass));
    freeReplyObject(rd_dov(2, "SELECT", d));
}

/* Binds a reply string (or NULL for an absent field) to a statement. */
static void bind_str(sqlite3_stmt *st, int i, const redisReply *e) {
    if (e && e->type == REDIS_REPLY_STRING)
        sqlite3_bind_blob(st, i, e->str, (int)e->len, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* The field of an XRANGE entry or HGETALL reply, or NULL. */
static const redisReply *field(const redisReply *fields, const char *name) {
    for (size_t i = 0; i + 1 < fields->elements; i += 2)
        if (!strcmp(fields->element[i]->str, name))
            return fields->element[i + 1];
    return NULL;
}

/* "baton:{G.p}:what" -> G and p (1), or 0 if key is not one of those. */
static int part_key(const char *key, const char *what, char *grp, size_t size, long *partition) {
    const char *open = strchr(key, '{'), *close = strrchr(key, '}');
    if (strncmp(key, "baton:{", 7) || !close || strcmp(close + 2, what) || close[1] != ':')
        return 0;
    const char *dot = close;
    while (dot > open && *dot != '.')
        dot--;
    if (dot == open)
        return 0;
    snprintf(grp, size, "%.*s", (int)(dot - open - 1), open + 1);
    *partition = strtol(dot + 1, NULL, 10);
    return 1;
}

/* The store as the SQL backends' tables, in a fresh in-memory database. */
static sqlite3 *rd_mirror(void) {
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "CREATE TABLE baton_fence(grp, partition, epoch, next_offset, rejected);"
                     "CREATE TABLE baton_output(grp, partition, \"offset\", epoch, key, value);"
                     "CREATE TABLE baton_output_more(grp, partition, \"offset\", seq, epoch, key, "
                     "value);"
                     "CREATE TABLE baton_meta(name, value);"
                     "CREATE TABLE baton_groups(grp, group_uuid, bound_ms);",
                     NULL, NULL, NULL),
        SQLITE_OK);
    redisReply *keys = rd_dov(2, "KEYS", "baton:*");
    for (size_t k = 0; k < keys->elements; k++) {
        const char *key = keys->element[k]->str;
        char grp[128];
        long part = 0;
        sqlite3_stmt *st = NULL;
        if (!strcmp(key, "baton:meta")) {
            redisReply *h = rd_dov(2, "HGETALL", key);
            for (size_t i = 0; i + 1 < h->elements; i += 2) {
                sqlite3_prepare_v2(db,
                                   "INSERT INTO baton_meta VALUES(CAST(?1 AS TEXT), CAST(?2 "
                                   "AS TEXT))",
                                   -1, &st, NULL);
                bind_str(st, 1, h->element[i]);
                bind_str(st, 2, h->element[i + 1]);
                sqlite3_step(st);
                sqlite3_finalize(st);
            }
            freeReplyObject(h);
        } else if (part_key(key, "fence", grp, sizeof(grp), &part)) {
            redisReply *h = rd_dov(5, "HMGET", key, "epoch", "next_offset", "rejected");
            sqlite3_prepare_v2(db,
                               "INSERT INTO baton_fence VALUES(?1, ?2, CAST(?3 AS INTEGER), "
                               "CAST(?4 AS INTEGER), CAST(?5 AS INTEGER))",
                               -1, &st, NULL);
            sqlite3_bind_text(st, 1, grp, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 2, part);
            for (int i = 0; i < 3; i++)
                bind_str(st, 3 + i, h->element[i]);
            sqlite3_step(st);
            sqlite3_finalize(st);
            freeReplyObject(h);
        } else if (part_key(key, "out", grp, sizeof(grp), &part)) {
            redisReply *x = rd_dov(4, "XRANGE", key, "-", "+");
            for (size_t i = 0; i < x->elements; i++) {
                const redisReply *f = x->element[i]->element[1];
                const redisReply *seq = field(f, "seq");
                sqlite3_prepare_v2(db,
                                   seq ? "INSERT INTO baton_output_more VALUES(?1, ?2, CAST(?3 AS "
                                         "INTEGER), CAST(?7 AS INTEGER), CAST(?4 AS INTEGER), ?5, "
                                         "?6)"
                                       : "INSERT INTO baton_output VALUES(?1, ?2, CAST(?3 AS "
                                         "INTEGER), CAST(?4 AS INTEGER), ?5, ?6)",
                                   -1, &st, NULL);
                sqlite3_bind_text(st, 1, grp, -1, SQLITE_TRANSIENT);
                sqlite3_bind_int64(st, 2, part);
                bind_str(st, 3, field(f, "offset"));
                bind_str(st, 4, field(f, "epoch"));
                bind_str(st, 5, field(f, "key"));
                bind_str(st, 6, field(f, "value"));
                if (seq)
                    bind_str(st, 7, seq);
                sqlite3_step(st);
                sqlite3_finalize(st);
            }
            freeReplyObject(x);
        } else if (!strncmp(key, "baton:{", 7) && strstr(key, "}:group")) {
            redisReply *h = rd_dov(4, "HMGET", key, "group_uuid", "bound_ms");
            snprintf(grp, sizeof(grp), "%.*s", (int)(strstr(key, "}:group") - key - 7), key + 7);
            sqlite3_prepare_v2(db,
                               "INSERT INTO baton_groups VALUES(?1, CAST(?2 AS TEXT), CAST(?3 "
                               "AS INTEGER))",
                               -1, &st, NULL);
            sqlite3_bind_text(st, 1, grp, -1, SQLITE_TRANSIENT);
            bind_str(st, 2, h->element[0]);
            bind_str(st, 3, h->element[1]);
            sqlite3_step(st);
            sqlite3_finalize(st);
            freeReplyObject(h);
        }
    }
    freeReplyObject(keys);
    return db;
}

static void rd_exec(const char *sql) { fail_msg("peek redis: no SQL to run '%s'", sql); }

static void rd_text(const char *sql) { sq_text_on(rd_mirror(), sql); }

/* Redis has no locks to hold: a script runs alone. The nearest thing is
 * another client's script running past busy-reply-threshold, during which
 * Redis answers every other command BUSY; a child runs one that loops
 * until SCRIPT KILL. */
static void rd_lock(int32_t partition) {
    (void)partition;
    freeReplyObject(rd_dov(4, "CONFIG", "SET", "busy-reply-threshold", "20"));
    rd_holder = fork();
    assert_true(rd_holder >= 0);
    if (rd_holder == 0) {
        redisContext *c = redisConnect(rd_host, rd_port);
        if (rd_pass[0])
            freeReplyObject(redisCommand(c, "AUTH %s", rd_pass));
        freeReplyObject(redisCommand(c, "EVAL %s 0", "while true do end"));
        _exit(0);
    }
    for (int i = 0; i < 500; i++) { /* until Redis says BUSY: at most 5 s */
        redisReply *r = redisCommand(rd_raw, "PING");
        int busy = r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "BUSY", 4);
        freeReplyObject(r);
        if (busy)
            return;
        usleep(10000);
    }
    fail_msg("peek redis: the busy script never made Redis busy");
}

static void rd_unlock(void) {
    for (int i = 0; i < 500; i++) {
        redisReply *r = redisCommand(rd_raw, "SCRIPT KILL");
        int done = r && (r->type != REDIS_REPLY_ERROR || !strncmp(r->str, "NOTBUSY", 7));
        freeReplyObject(r);
        if (done)
            break;
        usleep(10000);
    }
    int st = 0;
    assert_int_equal(waitpid(rd_holder, &st, 0), rd_holder);
    freeReplyObject(rd_dov(4, "CONFIG", "SET", "busy-reply-threshold", "5000"));
}

/* Every call is one script: no transaction is ever left open. */
static int rd_idle(void) { return 1; }

/* Another database of the same server, emptied. */
static void rd_fresh(int n, char *buf, size_t size) {
    rd_select(rd_db + 1 + n);
    freeReplyObject(rd_dov(1, "FLUSHDB"));
    rd_select(rd_db);
    snprintf(buf, size, "redis://%s%s%s%s:%d/%d", rd_pass[0] ? ":" : "", rd_pass,
             rd_pass[0] ? "@" : "", rd_host, rd_port, rd_db + 1 + n);
}

static void rd_clear(const char *prefix) {
    char pattern[160];
    snprintf(pattern, sizeof(pattern), "baton:{%s*", prefix);
    redisReply *keys = rd_dov(2, "KEYS", pattern);
    for (size_t i = 0; i < keys->elements; i++)
        freeReplyObject(rd_dov(2, "DEL", keys->element[i]->str));
    freeReplyObject(keys);
}

static void rd_put_output(int32_t partition, int64_t offset, int64_t seq, int64_t epoch) {
    char key[160], o[24], s[24], e[24];
    snprintf(key, sizeof(key), "baton:{%s.%d}:out", group, (int)partition);
    snprintf(o, sizeof(o), "%lld", (long long)offset);
    snprintf(s, sizeof(s), "%lld", (long long)seq);
    snprintf(e, sizeof(e), "%lld", (long long)epoch);
    freeReplyObject(seq ? rd_dov(9, "XADD", key, "*", "offset", o, "epoch", e, "seq", s)
                        : rd_dov(7, "XADD", key, "*", "offset", o, "epoch", e));
}

static void rd_spoil_group(void) {
    char key[160];
    snprintf(key, sizeof(key), "baton:{%s}:group", group);
    freeReplyObject(rd_dov(4, "HSET", key, "group_uuid", "x"));
}

/* A string where the fence hash should be: HMGET answers WRONGTYPE. */
static void rd_spoil_fence(int32_t partition) {
    char key[160];
    snprintf(key, sizeof(key), "baton:{%s.%d}:fence", group, (int)partition);
    freeReplyObject(rd_dov(2, "DEL", key));
    freeReplyObject(rd_dov(3, "SET", key, "not a fence"));
}

static const peek_t peeks[] = {
    {"sqlite", "hex(%s)", sq_connect, sq_disconnect, sq_exec, sq_text, sq_lock, sq_unlock, sq_idle,
     sq_fresh, NULL, NULL, NULL, NULL, NULL, NULL},
    {"postgresql", "upper(encode(%s, 'hex'))", pg_connect, pg_disconnect, pg_exec, pg_text, pg_lock,
     pg_unlock, pg_idle, pg_fresh, NULL, NULL, NULL, NULL, NULL, NULL},
    {"postgres", "upper(encode(%s, 'hex'))", pg_connect, pg_disconnect, pg_exec, pg_text, pg_lock,
     pg_unlock, pg_idle, pg_fresh, NULL, NULL, NULL, NULL, NULL, NULL},
    {"redis", "hex(%s)", rd_connect, rd_disconnect, rd_exec, rd_text, rd_lock, rd_unlock, rd_idle,
     rd_fresh, rd_clear, rd_put_output, rd_spoil_group, rd_spoil_fence, ":out", ":out"},
};
static const peek_t *peek;

static void peek_exec(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void peek_exec(const char *fmt, ...) {
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    peek->exec(sql);
}

/* One integer from a query; -1 for no row or NULL. */
static int64_t peek_i64(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int64_t peek_i64(const char *fmt, ...) {
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    peek->text(sql);
    return dump[0] && strncmp(dump, "NULL", 4) != 0 ? strtoll(dump, NULL, 10) : -1;
}

/* An output row baton did not write: (group, partition, offset, seq) at
 * epoch, no key, no value. */
static void put_output(int32_t partition, int64_t offset, int64_t seq, int64_t epoch) {
    if (peek->put_output)
        peek->put_output(partition, offset, seq, epoch);
    else if (seq == 0)
        peek_exec("INSERT INTO baton_output VALUES('%s', %d, %lld, %lld, NULL, NULL)", group,
                  (int)partition, (long long)offset, (long long)epoch);
    else
        peek_exec("INSERT INTO baton_output_more VALUES('%s', %d, %lld, %lld, %lld, NULL, NULL)",
                  group, (int)partition, (long long)offset, (long long)seq, (long long)epoch);
}

static int64_t peek_outputs(const char *grp, int partition) {
    return peek_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND partition=%d", grp,
                    partition);
}

/* Every output row of the group, output 0 and the others, as
 * "partition|offset|seq|epoch|KEY|VALUE;" (hex, or NULL), in order. */
static const char *peek_dump(void) {
    char k[256], v[256], col[256], sql[2048];
    snprintf(col, sizeof(col), "CASE WHEN key IS NULL THEN 'NULL' ELSE %s END, ", peek->hex);
    snprintf(k, sizeof(k), col, "key");
    snprintf(col, sizeof(col), "CASE WHEN value IS NULL THEN 'NULL' ELSE %s END", peek->hex);
    snprintf(v, sizeof(v), col, "value");
    snprintf(sql, sizeof(sql),
             "SELECT partition, \"offset\", 0 AS seq, epoch, %s%s FROM baton_output WHERE "
             "grp='%s' UNION ALL SELECT partition, \"offset\", seq, epoch, %s%s FROM "
             "baton_output_more WHERE grp='%s' ORDER BY 1, 2, 3",
             k, v, group, k, v, group);
    peek->text(sql);
    return dump;
}

/* ---- sink helpers --------------------------------------------------------- */

static baton_sink_t *sink_open(void) { return open_as(uri, group); }

static void inputs_of(baton_sink_input_t *ins, baton_sink_output_t *outs, int64_t first, size_t n) {
    for (size_t i = 0; i < n; i++) {
        outs[i] = (baton_sink_output_t){.value = "v", .value_len = 1};
        ins[i] =
            (baton_sink_input_t){.offset = first + (int64_t)i, .outputs = &outs[i], .noutputs = 1};
    }
}

static size_t len_of(const char *s) { return s ? strlen(s) : 0; }
#define OUT(k, v) ((baton_sink_output_t){(k), len_of(k), (v), len_of(v)})

/* Every test gets a group named after it, emptied first. */
static int setup_group(void **state) {
    snprintf(group, sizeof(group), "%s", (const char *)*state);
    if (peek->clear) {
        peek->clear(group);
        return 0;
    }
    static const char *const tables[] = {"baton_output", "baton_output_more", "baton_fence",
                                         "baton_groups"};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(tables); i++)
        peek_exec("DELETE FROM %s WHERE grp LIKE '%s%%'", tables[i], group);
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
    assert_int_equal(
        peek_i64("SELECT epoch FROM baton_fence WHERE grp='%s' AND partition=3", group), 10);
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
    assert_true(peek->idle());
    baton_sink_destroy(s);
}

/* fence_many of new partitions: every one fenced at next_offset 0,
 * writable at its epoch. */
static void test_fence_many_new(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    int32_t parts[] = {0, 1, 2, 5};
    int64_t epochs[] = {10, 10, 11, 12};
    int64_t next[4] = {-1, -1, -1, -1};
    int res[4] = {-1, -1, -1, -1};
    assert_int_equal(baton_sink_fence_many(s, 4, parts, epochs, next, res), BATON_OK);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(res[i], BATON_OK);
        assert_int_equal(next[i], 0);
    }
    assert_string_equal(baton_sink_errstr(s), "");
    assert_int_equal(write_offsets(s, 5, 12, (const int64_t[]){7}, 1, NULL, NULL), BATON_OK);
    assert_int_equal(write_offsets(s, 2, 10, (const int64_t[]){0}, 1, NULL, NULL), BATON_STALE);
    baton_sink_destroy(s);
}

/* A stale partition among others is refused and counted; the others are
 * fenced and return their stored next_offset. A retry changes nothing. */
static void test_fence_many_stale_among_others(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 1, 50);
    assert_int_equal(write_offsets(s, 1, 50, (const int64_t[]){41}, 1, NULL, NULL), BATON_OK);
    fence_ok(s, 2, 20);
    assert_int_equal(write_offsets(s, 2, 20, (const int64_t[]){9}, 1, NULL, NULL), BATON_OK);
    int32_t parts[] = {1, 2, 3};
    int64_t epochs[] = {40, 30, 30}; /* 1 is owned by 50: stale */
    for (int round = 0; round < 2; round++) {
        int64_t nx[3] = {-1, -1, -1};
        int res[3] = {-1, -1, -1};
        assert_int_equal(baton_sink_fence_many(s, 3, parts, epochs, nx, res), BATON_OK);
        assert_int_equal(res[0], BATON_STALE);
        assert_int_equal(res[1], BATON_OK);
        assert_int_equal(nx[1], 10);
        assert_int_equal(res[2], BATON_OK);
        assert_int_equal(nx[2], 0);
    }
    baton_fence_row_t r = fence_row(s, 1);
    assert_int_equal(r.epoch, 50); /* unchanged */
    assert_int_equal(r.rejected, 2);
    r = fence_row(s, 2);
    assert_int_equal(r.epoch, 30);
    assert_int_equal(r.rejected, 0);
    assert_true(peek->idle());
    assert_int_equal(write_offsets(s, 2, 20, (const int64_t[]){10}, 1, NULL, NULL), BATON_STALE);
    assert_int_equal(write_offsets(s, 2, 30, (const int64_t[]){10}, 1, NULL, NULL), BATON_OK);
    baton_sink_destroy(s);
}

/* Bad arguments are refused with a message before anything is stored. */
static void test_fence_bad_input(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    int32_t parts[] = {0, -1};
    int64_t epochs[] = {1, 1};
    int64_t nx[2];
    int res[2];
    assert_int_equal(baton_sink_fence_many(s, 2, parts, epochs, nx, res), BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(s), "partition -1"));
    assert_int_equal(baton_sink_fence_many(s, 1, parts, epochs, NULL, res), BATON_INVALID);
    assert_int_equal(baton_sink_fence_many(s, 0, NULL, NULL, NULL, NULL), BATON_OK);
    int64_t next;
    assert_int_equal(baton_sink_fence(s, 0, -5, &next), BATON_INVALID);
    assert_int_equal(baton_sink_fence(s, 0, 5, NULL), BATON_INVALID);
    assert_int_equal(peek_i64("SELECT count(*) FROM baton_fence WHERE grp='%s'", group), 0);
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
    assert_int_equal(peek_i64("SELECT count(*) FROM baton_fence WHERE grp='%s'", group), 0);
    /* Fenced at 5, writing at 6: the writer skipped its own fence. */
    assert_int_equal(fence_ok(s, 0, 5), 0);
    assert_int_equal(write_offsets(s, 0, 6, offs, 2, &next, &applied), BATON_UNFENCED);
    assert_int_equal(applied, 0);
    assert_non_null(strstr(baton_sink_errstr(s), "fence holds epoch 5"));
    assert_int_equal(peek_outputs(group, 0), 0);
    baton_fence_row_t r = fence_row(s, 0);
    assert_int_equal(r.epoch, 5);
    assert_int_equal(r.next_offset, 0);
    assert_int_equal(r.rejected, 0);
    assert_true(peek->idle());
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
    /* "v0", "v1", "v2" in hex */
    assert_string_equal(peek_dump(), "1|0|0|5|NULL|7630;1|1|0|5|NULL|7631;1|2|0|5|NULL|7632;");
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
    (void)state;
    baton_sink_t *s = sink_open();
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
    baton_record_t c[] = {rec(7, "A"), rec(6, "x"), rec(7, "B"), rec(8, "y")};
    assert_int_equal(baton_sink_write(s, 0, 5, c, 4, &next, &applied), BATON_OK);
    assert_int_equal(applied, 2);
    assert_int_equal(next, 9);
    assert_int_equal(peek_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND "
                              "\"offset\" IN (6, 7)",
                              group),
                     1);
    assert_non_null(strstr(peek_dump(), "0|7|0|5|NULL|41;")); /* "A" */
    /* Entirely old: nothing applied, progress unchanged. */
    assert_int_equal(write_offsets(s, 0, 5, a, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 0);
    assert_int_equal(next, 9);
    assert_int_equal(peek_outputs(group, 0), 7);
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
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT \"offset\" FROM baton_output WHERE grp='%s' ORDER BY \"offset\"", group);
    peek->text(sql);
    assert_string_equal(dump, "10;20;35;36;100;");
    baton_sink_destroy(s);
}

/* A batch larger than one INSERT statement of a backend that chunks them
 * lands whole, with the duplicates at its head skipped. */
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
    assert_int_equal(peek_outputs(group, 0), N);
    assert_int_equal(
        peek_i64("SELECT count(DISTINCT value) FROM baton_output WHERE grp='%s'", group), N);
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
    assert_int_equal(peek_outputs(group, 0), 2);
    /* Even an empty batch from the old epoch is refused. */
    assert_int_equal(baton_sink_write(s, 0, 5, NULL, 0, NULL, NULL), BATON_STALE);
    baton_fence_row_t r = fence_row(s, 0);
    assert_int_equal(r.rejected, 2);
    assert_int_equal(r.next_offset, 2);
    assert_int_equal(r.epoch, 7);
    assert_true(peek->idle());
    assert_int_equal(write_offsets(s, 0, 7, b, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    baton_sink_destroy(s);
}

/* write_many: one transaction over four partitions; two apply, one is
 * stale (a newer owner fenced it: counted in rejected), one was never
 * fenced; the refusals do not stop the others and leave no error. */
static void test_write_many_mixed(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    int32_t parts[] = {0, 1, 2};
    int64_t epochs[] = {10, 10, 10};
    int64_t next[3];
    int res[3];
    assert_int_equal(baton_sink_fence_many(s, 3, parts, epochs, next, res), BATON_OK);
    fence_ok(s, 1, 20); /* the newer owner */
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
    assert_int_equal(baton_sink_write_many(s, b, 4), BATON_OK);
    assert_string_equal(baton_sink_errstr(s), "");
    assert_int_equal(b[0].result, BATON_OK);
    assert_int_equal(b[0].next_offset, 3);
    assert_int_equal(b[0].applied, 3);
    assert_int_equal(b[1].result, BATON_STALE);
    assert_int_equal(b[2].result, BATON_OK);
    assert_int_equal(b[2].next_offset, 2);
    assert_int_equal(b[3].result, BATON_UNFENCED);
    assert_true(peek->idle());
    assert_int_equal(peek_outputs(group, 0), 3);
    assert_int_equal(peek_outputs(group, 1), 0);
    assert_int_equal(peek_outputs(group, 2), 2);
    baton_fence_row_t r;
    assert_int_equal(fence_row(s, 0).next_offset, 3);
    r = fence_row(s, 1);
    assert_int_equal(r.epoch, 20);
    assert_int_equal(r.next_offset, 0); /* the stale batch stored nothing */
    assert_int_equal(r.rejected, 1);
    assert_false(fence_find(s, 3, &r)); /* unfenced: no row made */
    /* A retry of the first three applies nothing twice and counts again. */
    assert_int_equal(baton_sink_write_many(s, b, 3), BATON_OK);
    assert_int_equal(b[0].applied, 0);
    assert_int_equal(b[2].applied, 0);
    assert_int_equal(peek_outputs(group, 0), 3);
    assert_int_equal(fence_row(s, 1).rejected, 2);
    /* The newer owner of partition 1 writes from where the sink says. */
    assert_int_equal(write_offsets(s, 1, 20, (const int64_t[]){0}, 1, NULL, NULL), BATON_OK);
    baton_sink_destroy(s);
}

/* A batch that overlaps what is stored applies only its new offsets. */
static void test_write_many_retry(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    int32_t parts[] = {4, 7};
    int64_t epochs[] = {3, 3};
    int64_t next[2];
    int res[2];
    assert_int_equal(baton_sink_fence_many(s, 2, parts, epochs, next, res), BATON_OK);
    baton_sink_input_t ins[2][4];
    baton_sink_output_t outs[2][4];
    inputs_of(ins[0], outs[0], 0, 2);
    inputs_of(ins[1], outs[1], 0, 4);
    baton_sink_batch_t b[2] = {
        {.partition = 4, .epoch = 3, .inputs = ins[0], .ninputs = 2},
        {.partition = 7, .epoch = 3, .inputs = ins[1], .ninputs = 4},
    };
    assert_int_equal(baton_sink_write_many(s, b, 2), BATON_OK);
    assert_int_equal(b[0].applied + b[1].applied, 6);
    assert_int_equal(baton_sink_write_many(s, b, 2), BATON_OK);
    assert_int_equal(b[0].result, BATON_OK);
    assert_int_equal(b[0].applied, 0);
    assert_int_equal(b[1].applied, 0);
    assert_int_equal(b[1].next_offset, 4);
    inputs_of(ins[0], outs[0], 1, 3); /* offsets 1..3: 1 is a duplicate */
    b[0].ninputs = 3;
    b[1].ninputs = 0;
    assert_int_equal(baton_sink_write_many(s, b, 2), BATON_OK);
    assert_int_equal(b[0].applied, 2);
    assert_int_equal(b[0].next_offset, 4);
    assert_int_equal(b[1].applied, 0);
    baton_sink_destroy(s);
}

/* The commit gate (baton_sink_set_commit_gate) is asked after a write's
 * statements, before its commit: a refusal rolls the whole write back
 * (BATON_CONNECTION, nothing applied, next_offset unmoved); once it allows
 * again the same write applies in full. Fences are not gated. */
static int gate_calls, gate_open;
static int test_gate(void *arg) {
    assert_ptr_equal(arg, &gate_open);
    gate_calls++;
    return gate_open;
}

static void test_write_commit_gate(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    gate_calls = 0;
    gate_open = 0;
    baton_sink_set_commit_gate(s, test_gate, &gate_open);
    assert_int_equal(fence_ok(s, 2, 9), 0); /* not gated */
    assert_int_equal(gate_calls, 0);
    const int64_t a[] = {0, 1, 2};
    int64_t next = -1;
    size_t applied = 7;
    assert_int_equal(write_offsets(s, 2, 9, a, 3, &next, &applied), BATON_CONNECTION);
    assert_int_equal(gate_calls, 1);
    assert_non_null(strstr(baton_sink_errstr(s), "withheld"));
    assert_int_equal(fence_row(s, 2).next_offset, 0);
    assert_int_equal(peek_outputs(group, 2), 0);
    /* The refusal left no transaction and no lock: another connection
     * fences the same row (the same epoch again) at once. */
    baton_sink_t *other = sink_open();
    assert_int_equal(baton_sink__set_busy_timeout(other, 500), BATON_OK);
    assert_int_equal(fence_ok(other, 2, 9), 0);
    baton_sink_destroy(other);
    gate_open = 1;
    assert_int_equal(write_offsets(s, 2, 9, a, 3, &next, &applied), BATON_OK);
    assert_int_equal(gate_calls, 2);
    assert_int_equal(applied, 3);
    assert_int_equal(next, 3);
    assert_int_equal(peek_outputs(group, 2), 3);
    baton_sink_set_commit_gate(s, NULL, NULL);
    const int64_t b[] = {3};
    assert_int_equal(write_offsets(s, 2, 9, b, 1, &next, NULL), BATON_OK);
    assert_int_equal(gate_calls, 2);
    assert_int_equal(fence_row(s, 2).next_offset, 4);
    /* A stale batch with the gate closed (a zombie resuming) is still
     * refused by the fence and counted at the sink, not withheld. */
    baton_sink_set_commit_gate(s, test_gate, &gate_open);
    gate_open = 0;
    baton_sink_t *newer = sink_open();
    fence_ok(newer, 2, 11);
    baton_sink_destroy(newer);
    int64_t rejected = fence_row(s, 2).rejected;
    assert_int_equal(write_offsets(s, 2, 9, (const int64_t[]){4}, 1, NULL, NULL), BATON_STALE);
    assert_int_equal(fence_row(s, 2).rejected, rejected + 1);
    assert_int_equal(fence_row(s, 2).next_offset, 4);
    /* The same stale batch beside one that would apply, gate closed: the
     * whole call is withheld, so the stale one is not counted either (a
     * retry would count it twice), on every sink alike. */
    assert_int_equal(fence_ok(s, 3, 9), 0);
    baton_sink_input_t ins[2][1];
    baton_sink_output_t outs[2][1];
    inputs_of(ins[0], outs[0], 4, 1);
    inputs_of(ins[1], outs[1], 0, 1);
    baton_sink_batch_t mixed[2] = {
        {.partition = 2, .epoch = 9, .inputs = ins[0], .ninputs = 1},
        {.partition = 3, .epoch = 9, .inputs = ins[1], .ninputs = 1},
    };
    int calls = gate_calls;
    assert_int_equal(baton_sink_write_many(s, mixed, 2), BATON_CONNECTION);
    assert_int_equal(gate_calls, calls + 1);
    assert_non_null(strstr(baton_sink_errstr(s), "withheld"));
    assert_int_equal(fence_row(s, 2).rejected, rejected + 1);
    assert_int_equal(fence_row(s, 3).next_offset, 0);
    assert_int_equal(peek_outputs(group, 3), 0);
    gate_open = 1;
    assert_int_equal(baton_sink_write_many(s, mixed, 2), BATON_OK);
    assert_int_equal(mixed[0].result, BATON_STALE);
    assert_int_equal(mixed[1].result, BATON_OK);
    assert_int_equal(fence_row(s, 2).rejected, rejected + 2);
    assert_int_equal(fence_row(s, 3).next_offset, 1);
    baton_sink_destroy(s);
}

/* ---- fence_write: a fence and the first batch in one call ------------------- */

/* One fence_write entry of partition at epoch holding inputs from `from`. */
static baton_sink_fence_t fw(int32_t partition, int64_t epoch, int64_t from,
                             const baton_sink_input_t *ins, size_t n) {
    return (baton_sink_fence_t){
        .partition = partition, .epoch = epoch, .from = from, .inputs = ins, .ninputs = n};
}

static int64_t peek_epoch_at(int32_t partition, int64_t offset) {
    return peek_i64("SELECT epoch FROM baton_output WHERE grp='%s' AND partition=%d AND "
                    "\"offset\"=%lld",
                    group, (int)partition, (long long)offset);
}

/* Held inputs that start at or before the fence's next_offset go in with
 * it (those at or past it); ones that start past it leave the fence alone;
 * a stale fence writes nothing; a retry applies nothing twice. */
static void test_fence_write(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    const int64_t five[] = {0, 1, 2, 3, 4}, ten[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    fence_ok(s, 0, 5);
    assert_int_equal(write_offsets(s, 0, 5, five, 5, NULL, NULL), BATON_OK);
    fence_ok(s, 1, 5);
    assert_int_equal(write_offsets(s, 1, 5, ten, 10, NULL, NULL), BATON_OK);
    fence_ok(s, 3, 50);
    baton_sink_input_t i0[5], i1[2], i2[2], i3[1];
    baton_sink_output_t o0[5], o1[2], o2[2], o3[1];
    inputs_of(i0, o0, 3, 5); /* 3..7: 5, 6, 7 are new */
    inputs_of(i1, o1, 12, 2);
    inputs_of(i2, o2, 0, 2);
    i2[1].offset = 2; /* a gap of Kafka's own */
    inputs_of(i3, o3, 0, 1);
    baton_sink_fence_t f[] = {fw(0, 6, 3, i0, 5), fw(1, 6, 12, i1, 2), fw(2, 6, 0, i2, 2),
                              fw(3, 6, 0, i3, 1)};
    for (int round = 0; round < 2; round++) {
        assert_int_equal(baton_sink_fence_write(s, f, 4), BATON_OK);
        assert_string_equal(baton_sink_errstr(s), "");
        assert_int_equal(f[0].result, BATON_OK);
        assert_int_equal(f[0].fenced_next, round ? 8 : 5);
        assert_int_equal(f[0].written, 1);
        assert_int_equal(f[0].applied, round ? 0 : 3);
        assert_int_equal(f[0].next_offset, 8);
        assert_int_equal(f[1].result, BATON_OK); /* held from 12, the sink is at 10 */
        assert_int_equal(f[1].fenced_next, 10);
        assert_int_equal(f[1].written, 0);
        assert_int_equal(f[1].applied, 0);
        assert_int_equal(f[1].next_offset, 10);
        assert_int_equal(f[2].result, BATON_OK);
        assert_int_equal(f[2].written, 1);
        assert_int_equal(f[2].fenced_next, round ? 3 : 0);
        assert_int_equal(f[2].applied, round ? 0 : 2);
        assert_int_equal(f[2].next_offset, 3);
        assert_int_equal(f[3].result, BATON_STALE);
        assert_int_equal(f[3].written, 0);
    }
    baton_fence_row_t r = fence_row(s, 0);
    assert_int_equal(r.epoch, 6);
    assert_int_equal(r.next_offset, 8);
    assert_int_equal(peek_outputs(group, 0), 8);
    assert_int_equal(peek_epoch_at(0, 4), 5);
    assert_int_equal(peek_epoch_at(0, 5), 6);
    r = fence_row(s, 1);
    assert_int_equal(r.epoch, 6);
    assert_int_equal(r.next_offset, 10);
    assert_int_equal(peek_outputs(group, 1), 10);
    assert_int_equal(fence_row(s, 2).next_offset, 3);
    assert_int_equal(peek_outputs(group, 2), 2);
    r = fence_row(s, 3);
    assert_int_equal(r.epoch, 50);
    assert_int_equal(r.rejected, 2);
    assert_int_equal(peek_outputs(group, 3), 0);
    /* The old owner is fenced out; the new one writes on. */
    assert_int_equal(write_offsets(s, 0, 5, (const int64_t[]){8}, 1, NULL, NULL), BATON_STALE);
    assert_int_equal(write_offsets(s, 1, 6, (const int64_t[]){10}, 1, NULL, NULL), BATON_OK);
    /* Without inputs it is a fence. */
    baton_sink_fence_t bare = fw(4, 2, 0, NULL, 0);
    assert_int_equal(baton_sink_fence_write(s, &bare, 1), BATON_OK);
    assert_int_equal(bare.result, BATON_OK);
    assert_int_equal(bare.fenced_next, 0);
    assert_int_equal(fence_row(s, 4).epoch, 2);
    assert_true(peek->idle());
    baton_sink_destroy(s);
}

/* Malformed fence_write calls are refused before anything is stored. */
static void test_fence_write_bad_input(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    baton_sink_input_t in[2];
    baton_sink_output_t out[2];
    inputs_of(in, out, 4, 2);
    baton_sink_fence_t below = fw(7, 1, 5, in, 2); /* 4 is below from */
    assert_int_equal(baton_sink_fence_write(s, &below, 1), BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(s), "below"));
    assert_int_equal(below.result, BATON_INVALID);
    assert_int_equal(below.written, 0);
    in[1].offset = 4; /* not ascending */
    baton_sink_fence_t repeat = fw(7, 1, 0, in, 2);
    assert_int_equal(baton_sink_fence_write(s, &repeat, 1), BATON_INVALID);
    in[1].offset = 5;
    baton_sink_fence_t order[] = {fw(8, 1, 0, NULL, 0), fw(7, 1, 0, in, 2)};
    assert_int_equal(baton_sink_fence_write(s, order, 2), BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(s), "ascending"));
    baton_sink_fence_t neg = fw(7, 1, -1, in, 2);
    assert_int_equal(baton_sink_fence_write(s, &neg, 1), BATON_INVALID);
    baton_sink_fence_t nul = fw(7, 1, 0, NULL, 2);
    assert_int_equal(baton_sink_fence_write(s, &nul, 1), BATON_INVALID);
    assert_int_equal(baton_sink_fence_write(s, NULL, 1), BATON_INVALID);
    baton_fence_row_t r;
    assert_false(fence_find(s, 7, &r));
    assert_false(fence_find(s, 8, &r));
    baton_sink_destroy(s);
}

/* fence_write's inputs are gated as a write is: a closed gate applies no
 * input (BATON_CONNECTION); a fence with nothing to write asks no gate. */
static void test_fence_write_gate(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    gate_calls = 0;
    gate_open = 0;
    baton_sink_set_commit_gate(s, test_gate, &gate_open);
    baton_sink_input_t in[3];
    baton_sink_output_t out[3];
    inputs_of(in, out, 0, 3);
    baton_sink_fence_t f = fw(1, 4, 0, in, 3);
    assert_int_equal(baton_sink_fence_write(s, &f, 1), BATON_CONNECTION);
    assert_int_equal(gate_calls, 1);
    assert_non_null(strstr(baton_sink_errstr(s), "withheld"));
    assert_int_equal(f.written, 0);
    assert_int_equal(f.applied, 0);
    assert_int_equal(peek_outputs(group, 1), 0);
    baton_fence_row_t r;
    assert_false(fence_find(s, 1, &r)); /* the fence rolled back with the write */
    gate_open = 1;
    assert_int_equal(baton_sink_fence_write(s, &f, 1), BATON_OK);
    assert_int_equal(gate_calls, 2);
    assert_int_equal(f.applied, 3);
    assert_int_equal(f.next_offset, 3);
    assert_int_equal(peek_outputs(group, 1), 3);
    /* Nothing to apply: no gate asked, even closed, where the sink asks
     * inside its transaction; Redis, whose transaction is one script, asks
     * before it whenever the call carries inputs (asked counts those). */
    int asked = 0, ahead = !strcmp(peek->scheme, "redis");
    gate_open = 0;
    baton_sink_fence_t again = fw(1, 5, 0, in, 3);
    assert_int_equal(baton_sink_fence_write(s, &again, 1), BATON_OK);
    assert_int_equal(again.applied, 0);
    assert_int_equal(again.fenced_next, 3);
    assert_int_equal(fence_row(s, 1).epoch, 5);
    assert_int_equal(gate_calls, 2 + (asked += ahead));
    /* Held from 10, the new partition's fence at 0: fenced alone, no gate
     * asked (Redis: asked, before its script). */
    baton_sink_input_t later[2];
    baton_sink_output_t lout[2];
    inputs_of(later, lout, 10, 2);
    baton_sink_fence_t past = fw(2, 5, 10, later, 2);
    assert_int_equal(baton_sink_fence_write(s, &past, 1), BATON_OK);
    assert_int_equal(past.result, BATON_OK);
    assert_int_equal(past.fenced_next, 0);
    assert_int_equal(past.written, 0);
    assert_int_equal(past.next_offset, 0);
    assert_int_equal(peek_outputs(group, 2), 0);
    assert_int_equal(gate_calls, 2 + (asked += ahead));
    /* A closed gate with an input that applies, in the last partition of
     * the call: nothing of the call lands, the fences and the stale count
     * before it included (one transaction; fences alone are never gated). */
    baton_sink_input_t more[1];
    baton_sink_output_t mout[1];
    inputs_of(more, mout, 0, 1);
    int64_t rejected = fence_row(s, 2).rejected;
    baton_sink_fence_t three[] = {fw(2, 4, 0, NULL, 0), fw(3, 6, 0, NULL, 0), fw(4, 6, 0, more, 1)};
    assert_int_equal(baton_sink_fence_write(s, three, 3), BATON_CONNECTION);
    assert_int_equal(gate_calls, 3 + asked);
    assert_int_equal(fence_row(s, 2).rejected, rejected); /* its stale fence: not counted */
    assert_int_equal(fence_row(s, 2).epoch, 5);
    assert_false(fence_find(s, 3, &r));
    assert_false(fence_find(s, 4, &r));
    assert_int_equal(peek_outputs(group, 4), 0);
    assert_int_equal(fence_row(s, 1).next_offset, 3);
    assert_int_equal(peek_outputs(group, 1), 3);
    assert_true(peek->idle());
    baton_sink_set_commit_gate(s, NULL, NULL);
    baton_sink_destroy(s);
}

/* Malformed batches are refused before any transaction, anywhere in them. */
static void test_write_bad_input(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 1);
    fence_ok(s, 1, 1);
    baton_record_t neg[] = {rec(0, "a"), rec(-1, "b")};
    assert_int_equal(baton_sink_write(s, 0, 1, neg, 2, NULL, NULL), BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(s), "record 1"));
    baton_record_t nokey[] = {{.offset = 0, .key = NULL, .key_len = 3}};
    assert_int_equal(baton_sink_write(s, 0, 1, nokey, 1, NULL, NULL), BATON_INVALID);
    baton_record_t top[] = {rec(INT64_MAX, "a")};
    assert_int_equal(baton_sink_write(s, 0, 1, top, 1, NULL, NULL), BATON_INVALID);
    assert_int_equal(baton_sink_write(s, 0, 1, NULL, 2, NULL, NULL), BATON_INVALID);
    assert_int_equal(baton_sink_write(s, -1, 1, neg, 1, NULL, NULL), BATON_INVALID);

    baton_sink_input_t no_outs[] = {{0, NULL, 2}};
    assert_int_equal(baton_sink_write_outputs(s, 0, 1, no_outs, 1, NULL, NULL), BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(s), "outputs is NULL"));
    baton_sink_output_t bad[] = {{NULL, 3, "v", 1}};
    baton_sink_input_t bad_key[] = {{0, bad, 1}};
    assert_int_equal(baton_sink_write_outputs(s, 0, 1, bad_key, 1, NULL, NULL), BATON_INVALID);
    baton_sink_input_t negin[] = {{-1, NULL, 0}};
    assert_int_equal(baton_sink_write_outputs(s, 0, 1, negin, 1, NULL, NULL), BATON_INVALID);
    assert_int_equal(baton_sink_write_outputs(s, 0, 1, NULL, 1, NULL, NULL), BATON_INVALID);

    baton_sink_input_t ins[2][1];
    baton_sink_output_t outs[2][1];
    inputs_of(ins[0], outs[0], 0, 1);
    inputs_of(ins[1], outs[1], 0, 1);
    baton_sink_batch_t b[2] = {
        {.partition = 1, .epoch = 1, .inputs = ins[0], .ninputs = 1},
        {.partition = 0, .epoch = 1, .inputs = ins[1], .ninputs = 1},
    };
    assert_int_equal(baton_sink_write_many(s, b, 2), BATON_INVALID);
    assert_non_null(strstr(baton_sink_errstr(s), "ascending"));
    b[0].partition = 0;
    b[1].partition = 1;
    ins[1][0].offset = -5;
    assert_int_equal(baton_sink_write_many(s, b, 2), BATON_INVALID);
    assert_int_equal(baton_sink_write_many(s, NULL, 0), BATON_OK);
    assert_int_equal(baton_sink_write_many(s, NULL, 2), BATON_INVALID);
    /* Nothing of any of them was stored, the good first batch included. */
    assert_int_equal(peek_outputs(group, 0), 0);
    assert_int_equal(fence_row(s, 0).next_offset, 0);
    int64_t next = -1;
    assert_int_equal(baton_sink_write_outputs(s, 0, 1, NULL, 0, &next, NULL), BATON_OK);
    assert_int_equal(next, 0);
    baton_sink_destroy(s);
}

static void test_new_owner_resumes(void **state) {
    (void)state;
    baton_sink_t *old = sink_open();
    fence_ok(old, 0, 5);
    const int64_t a[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(write_offsets(old, 0, 5, a, 10, NULL, NULL), BATON_OK);
    baton_sink_destroy(old);
    /* A fresh connection: the progress lives in the store. */
    baton_sink_t *s = sink_open();
    assert_int_equal(fence_ok(s, 0, 9), 10);
    /* The new owner's consumer may hand it a few already-applied records. */
    const int64_t b[] = {8, 9, 10, 11, 12};
    int64_t next;
    size_t applied;
    assert_int_equal(write_offsets(s, 0, 9, b, 5, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    assert_int_equal(next, 13);
    assert_int_equal(
        peek_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND epoch=5", group), 10);
    assert_int_equal(
        peek_i64("SELECT min(\"offset\") FROM baton_output WHERE grp='%s' AND epoch=9", group), 10);
    baton_sink_destroy(s);
}

/* Two connections act as two processes: a paused worker (the zombie) wakes
 * up after a new owner fenced, and every write and fence it tries is
 * refused while the new owner's go through. */
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
        peek_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND epoch=100", group), 2);
    assert_int_equal(
        peek_i64("SELECT count(*) FROM baton_output WHERE grp='%s' AND epoch=200", group), 2);
    assert_int_equal(fence_row(zombie, 2).rejected, 2);
    assert_true(peek->idle());
    baton_sink_destroy(zombie);
    baton_sink_destroy(owner);
}

static void test_group_isolation(void **state) {
    (void)state;
    char g1[80], g2[80];
    snprintf(g1, sizeof(g1), "%s-1", group);
    snprintf(g2, sizeof(g2), "%s-2", group);
    baton_sink_t *s1 = open_as(uri, g1);
    baton_sink_t *s2 = open_as(uri, g2);
    fence_ok(s1, 0, 5);
    /* A lower epoch in another group is not stale. */
    assert_int_equal(fence_ok(s2, 0, 3), 0);
    const int64_t a[] = {0, 1, 2};
    int64_t next;
    assert_int_equal(write_offsets(s1, 0, 5, a, 3, &next, NULL), BATON_OK);
    assert_int_equal(next, 3);
    /* g2's offset 0 is its own, not a duplicate of g1's. */
    size_t applied;
    assert_int_equal(write_offsets(s2, 0, 3, a, 1, &next, &applied), BATON_OK);
    assert_int_equal(applied, 1);
    assert_int_equal(next, 1);
    /* g1's epoch does not fence g2 and the other way round. */
    assert_int_equal(write_offsets(s2, 0, 5, a, 1, NULL, NULL), BATON_UNFENCED);
    assert_int_equal(write_offsets(s1, 0, 3, a, 1, NULL, NULL), BATON_STALE);
    assert_int_equal(fence_row(s1, 0).next_offset, 3);
    assert_int_equal(fence_row(s2, 0).epoch, 3);
    assert_int_equal(fence_row(s2, 0).next_offset, 1);
    assert_int_equal(peek_outputs(g1, 0), 3);
    assert_int_equal(peek_outputs(g2, 0), 1);
    baton_sink_destroy(s1);
    baton_sink_destroy(s2);
}

/* Keys and values are bytes: NULL stays NULL, empty stays empty, and
 * NUL, 0xff, quotes and backslashes come back as written. */
static void test_key_value_roundtrip(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 5);
    static const char k1[] = {'a', '\0', 'b'};
    static const unsigned char v1[] = {0x00, 0x00, 0xff, 0x7f, '\\', '\''};
    baton_record_t recs[] = {
        {.offset = 0}, /* no key, no value */
        {.offset = 1, .key = k1, .key_len = sizeof(k1), .value = v1, .value_len = sizeof(v1)},
        {.offset = 2, .key = "", .key_len = 0, .value = "x", .value_len = 1}, /* empty key */
    };
    assert_int_equal(baton_sink_write(s, 0, 5, recs, 3, NULL, NULL), BATON_OK);
    baton_sink_destroy(s);
    assert_string_equal(peek_dump(), "0|0|0|5|NULL|NULL;0|1|0|5|610062|0000FF7F5C27;0|2|0|5||78;");
}

/* baton_sink_fences_of: the rows of the partitions asked for that have
 * one, in order; the others are not read. Bad lists are refused. */
static void test_fences_of(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    baton_fence_row_t *rows = NULL;
    size_t n = 9;
    assert_int_equal(baton_sink_fences_of(s, (const int32_t[]){1, 2}, 2, &rows, &n), BATON_OK);
    assert_int_equal(n, 0);
    assert_null(rows);
    fence_ok(s, 1, 10);
    fence_ok(s, 3, 30);
    fence_ok(s, 5, 50);
    assert_int_equal(write_offsets(s, 3, 30, (const int64_t[]){0, 1}, 2, NULL, NULL), BATON_OK);
    assert_int_equal(baton_sink_fences_of(s, (const int32_t[]){0, 3, 4, 5, 9}, 5, &rows, &n),
                     BATON_OK);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].partition, 3);
    assert_int_equal(rows[0].epoch, 30);
    assert_int_equal(rows[0].next_offset, 2);
    assert_int_equal(rows[1].partition, 5);
    assert_int_equal(rows[1].epoch, 50);
    assert_int_equal(rows[1].next_offset, 0);
    free(rows);
    assert_int_equal(baton_sink_fences_of(s, (const int32_t[]){1}, 1, &rows, &n), BATON_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].epoch, 10);
    free(rows);
    assert_int_equal(baton_sink_fences_of(s, NULL, 0, &rows, &n), BATON_OK);
    assert_int_equal(n, 0);
    assert_int_equal(baton_sink_fences_of(s, (const int32_t[]){3, 1}, 2, &rows, &n), BATON_INVALID);
    assert_int_equal(baton_sink_fences_of(s, (const int32_t[]){3, 3}, 2, &rows, &n), BATON_INVALID);
    assert_int_equal(baton_sink_fences_of(s, (const int32_t[]){-1}, 1, &rows, &n), BATON_INVALID);
    assert_int_equal(baton_sink_fences_of(s, NULL, 1, &rows, &n), BATON_INVALID);
    /* A row that is no fence row amid others (a server backend reads
     * them in one pipelined round trip): an error naming it, and the
     * connection stays in step, so the next reads get their own rows. */
    if (peek->spoil_fence) {
        peek->spoil_fence(3);
        int err = baton_sink_fences_of(s, (const int32_t[]){1, 3, 5}, 3, &rows, &n);
        assert_int_not_equal(err, BATON_OK);
        assert_non_null(strstr(baton_sink_errstr(s), "fence"));
        err = baton_sink_fences(s, &rows, &n);
        assert_int_not_equal(err, BATON_OK);
        for (int round = 0; round < 2; round++) {
            assert_int_equal(baton_sink_fences_of(s, (const int32_t[]){1, 5}, 2, &rows, &n),
                             BATON_OK);
            assert_int_equal(n, 2);
            assert_int_equal(rows[0].partition, 1);
            assert_int_equal(rows[0].epoch, 10);
            assert_int_equal(rows[1].partition, 5);
            assert_int_equal(rows[1].epoch, 50);
            free(rows);
        }
        fence_ok(s, 1, 11);
        assert_int_equal(baton_sink_fences_of(s, (const int32_t[]){1}, 1, &rows, &n), BATON_OK);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].epoch, 11);
        free(rows);
        peek->clear(group); /* the later tests' peeks read every key */
    }
    baton_sink_destroy(s);
}

static void test_fences_listing(void **state) {
    (void)state;
    char other_group[80];
    snprintf(other_group, sizeof(other_group), "%s-other", group);
    baton_sink_t *s = sink_open();
    baton_sink_t *other = open_as(uri, other_group);
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

/* ---- outputs (processors) --------------------------------------------------- */

/* Zero, one and several outputs per input (one with more than a chunked
 * INSERT holds): output 0 in baton_output, the rest in baton_output_more,
 * next_offset past inputs without output; a retry applies nothing twice. */
static void test_outputs_layout(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    assert_int_equal(fence_ok(s, 0, 7), 0);
    enum { MANY = 2500 };
    baton_sink_output_t *many = calloc(MANY, sizeof(*many));
    for (size_t i = 0; i < MANY; i++)
        many[i] = OUT("k", "w");
    baton_sink_output_t o0[] = {OUT("k", "a")};
    baton_sink_output_t o2[] = {OUT("k", "x"), OUT(NULL, "y"), OUT("k", "")};
    baton_sink_input_t in[] = {
        {0, o0, 1},      {1, NULL, 0}, {2, o2, 3}, {5, NULL, 0}, /* gap 3-4, last has no output */
        {6, many, MANY},
    };
    int64_t next = -1;
    size_t applied = 0;
    assert_int_equal(baton_sink_write_outputs(s, 0, 7, in, 4, &next, &applied), BATON_OK);
    assert_int_equal(applied, 4);
    assert_int_equal(next, 6); /* past the last input, which stored nothing */
    /* NULL key stays NULL, an empty value stays an empty blob. */
    assert_string_equal(peek_dump(), "0|0|0|7|6B|61;0|2|0|7|6B|78;0|2|1|7|NULL|79;0|2|2|7|6B|;");
    assert_int_equal(fence_row(s, 0).next_offset, 6);
    /* A retry of the same batch (a lost COMMIT reply) applies nothing twice,
     * and the large input lands whole. */
    assert_int_equal(baton_sink_write_outputs(s, 0, 7, in, 5, &next, &applied), BATON_OK);
    assert_int_equal(applied, 1);
    assert_int_equal(next, 7);
    assert_int_equal(peek_i64("SELECT count(*) FROM baton_output_more WHERE grp='%s'", group),
                     2 + MANY - 1);
    assert_int_equal(
        peek_i64("SELECT max(seq) FROM baton_output_more WHERE grp='%s' AND \"offset\"=6", group),
        MANY - 1);
    assert_int_equal(
        peek_i64("SELECT count(*) FROM baton_output_more WHERE grp='%s' AND epoch<>7", group), 0);
    free(many);
    baton_sink_destroy(s);
}

/* Fencing is the same for outputs: a stale epoch writes nothing in either
 * table and is counted; an unfenced one writes nothing. */
static void test_outputs_stale(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 1, 10);
    baton_sink_output_t o[] = {OUT("k", "a"), OUT("k", "b")};
    baton_sink_input_t in[] = {{0, o, 2}};
    assert_int_equal(baton_sink_write_outputs(s, 1, 9, in, 1, NULL, NULL), BATON_STALE);
    assert_int_equal(baton_sink_write_outputs(s, 1, 11, in, 1, NULL, NULL), BATON_UNFENCED);
    assert_string_equal(peek_dump(), "");
    baton_fence_row_t r = fence_row(s, 1);
    assert_int_equal(r.next_offset, 0);
    assert_int_equal(r.rejected, 1);
    baton_sink_destroy(s);
}

/* Inputs that all have zero outputs still move next_offset (a filter that
 * drops everything must not make the worker re-read). */
static void test_outputs_all_filtered(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 2, 3);
    baton_sink_input_t in[] = {{0, NULL, 0}, {1, NULL, 0}, {2, NULL, 0}};
    int64_t next = -1;
    size_t applied = 0;
    assert_int_equal(baton_sink_write_outputs(s, 2, 3, in, 3, &next, &applied), BATON_OK);
    assert_int_equal(applied, 3);
    assert_int_equal(next, 3);
    assert_int_equal(fence_ok(s, 2, 4), 3); /* a new owner resumes after them */
    baton_sink_destroy(s);
}

/* An output row at or above next_offset (in either table) means the tables
 * disagree: CORRUPT naming the table, nothing applied, progress unchanged. */
static void test_output_conflict_corrupt(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 2, 5);
    put_output(2, 1, 0, 5);
    assert_int_equal(write_offsets(s, 2, 5, (const int64_t[]){0, 1}, 2, NULL, NULL), BATON_CORRUPT);
    assert_non_null(strstr(baton_sink_errstr(s), peek->out_name ? peek->out_name : "baton_output"));
    assert_int_equal(peek_outputs(group, 2), 1);
    assert_int_equal(fence_row(s, 2).next_offset, 0);

    fence_ok(s, 3, 1);
    put_output(3, 1, 1, 1);
    baton_sink_output_t o1[] = {OUT("k", "a")};
    baton_sink_output_t o2[] = {OUT("k", "b"), OUT("k", "c")};
    baton_sink_input_t in[] = {{0, o1, 1}, {1, o2, 2}};
    assert_int_equal(baton_sink_write_outputs(s, 3, 1, in, 2, NULL, NULL), BATON_CORRUPT);
    assert_non_null(
        strstr(baton_sink_errstr(s), peek->more_name ? peek->more_name : "baton_output_more"));
    assert_int_equal(peek_outputs(group, 3), 0);
    assert_int_equal(fence_row(s, 3).next_offset, 0);
    assert_true(peek->idle());
    baton_sink_destroy(s);
}

/* ---- locks, lazy open, identity, concurrent opens ----------------------------- */

/* Another session holding the lock past the busy timeout is retriable:
 * BUSY, nothing applied, and the call works once it is gone. */
static void test_busy(void **state) {
    (void)state;
    baton_sink_t *s = sink_open();
    fence_ok(s, 0, 5);
    assert_int_equal(baton_sink__set_busy_timeout(s, 50), BATON_OK);
    peek->lock(0);
    int64_t next = -1;
    size_t applied = 9;
    int rc_fence = baton_sink_fence(s, 0, 6, &next);
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", baton_sink_errstr(s));
    int rc_write = write_offsets(s, 0, 5, (const int64_t[]){0, 1}, 2, &next, &applied);
    peek->unlock();
    assert_int_equal(rc_fence, BATON_BUSY);
    assert_true(baton_err_is_retriable(BATON_BUSY));
    assert_non_null(strstr(msg, "(retriable)"));
    assert_int_equal(rc_write, BATON_BUSY);
    assert_int_equal(applied, 0);
    assert_true(peek->idle());
    assert_int_equal(peek_outputs(group, 0), 0);
    assert_int_equal(fence_row(s, 0).epoch, 5);
    assert_int_equal(write_offsets(s, 0, 5, (const int64_t[]){0, 1}, 2, &next, &applied), BATON_OK);
    assert_int_equal(next, 2);
    baton_sink_destroy(s);
}

/* baton_sink_open_lazy on a store that may not exist yet: no rows until
 * the first fence, which creates what is missing; the handle then works
 * like any other. */
static void test_open_lazy(void **state) {
    (void)state;
    char fresh[600], err[512];
    peek->fresh(0, fresh, sizeof(fresh));
    baton_sink_t *s = NULL;
    assert_int_equal(baton_sink_open_lazy(fresh, group, &s, err, sizeof(err)), BATON_OK);
    baton_fence_row_t *rows = NULL;
    size_t n = 1;
    assert_int_equal(baton_sink_fences(s, &rows, &n), BATON_OK);
    assert_int_equal(n, 0);
    free(rows);
    assert_int_equal(fence_ok(s, 0, 5), 0);
    assert_int_equal(write_offsets(s, 0, 5, (const int64_t[]){0}, 1, NULL, NULL), BATON_OK);
    baton_sink_meta_t m;
    assert_int_equal(baton_sink_meta(s, &m), BATON_OK);
    assert_int_equal(baton_uuid_valid(m.sink_id), 0);
    baton_sink_destroy(s);
    /* An existing store opens at once, lazily or not. */
    assert_int_equal(baton_sink_open_lazy(fresh, group, &s, err, sizeof(err)), BATON_OK);
    assert_int_equal(fence_row(s, 0).next_offset, 1);
    baton_sink_meta_t m2;
    assert_int_equal(baton_sink_meta(s, &m2), BATON_OK);
    assert_string_equal(m.sink_id, m2.sink_id);
    baton_sink_destroy(s);
}

/* Which group a sink serves (issue 13): one id per store, made by the first
 * open; the group id recorded by the first fence of a handle that expects
 * it; another group id refused by fence and fence_many with nothing fenced;
 * writes do not look; a row baton did not write is CORRUPT. */
static void test_sink_identity(void **state) {
    (void)state;
    baton_sink_t *s = sink_open(), *s2 = sink_open();
    baton_sink_meta_t m1, m2;
    assert_int_equal(baton_sink_meta(s, &m1), BATON_OK);
    assert_int_equal(baton_uuid_valid(m1.sink_id), 0);
    assert_string_equal(m1.group_uuid, ""); /* nothing recorded yet */
    assert_int_equal(m1.bound_ms, 0);
    assert_int_equal(baton_sink_meta(s2, &m2), BATON_OK);
    assert_string_equal(m1.sink_id, m2.sink_id);
    assert_int_equal(peek_i64("SELECT count(*) FROM baton_meta WHERE value = '%s'", m1.sink_id), 1);
    /* Without expect_group, fences record nothing. */
    fence_ok(s, 0, 5);
    assert_int_equal(peek_i64("SELECT count(*) FROM baton_groups WHERE grp='%s'", group), 0);

    assert_int_equal(baton_sink_expect_group(s, "nope"), BATON_INVALID);
    char u1[BATON_UUID_LEN + 1], u2[BATON_UUID_LEN + 1];
    assert_int_equal(baton_uuid_new(u1), 0);
    assert_int_equal(baton_uuid_new(u2), 0);
    assert_int_equal(baton_sink_expect_group(s, u1), BATON_OK);
    assert_int_equal(fence_ok(s, 1, 5), 0); /* records u1 in the same transaction */
    fence_ok(s, 1, 6);                      /* the same id again: fine */
    assert_int_equal(baton_sink_meta(s2, &m2), BATON_OK);
    assert_string_equal(m2.group_uuid, u1);
    assert_true(m2.bound_ms > 0);

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
    assert_int_equal(
        peek_i64("SELECT count(*) FROM baton_fence WHERE grp='%s' AND partition IN (2, 3)", group),
        0);
    assert_int_equal(fence_row(s, 1).epoch, 6);
    assert_int_equal(
        peek_i64("SELECT count(*) FROM baton_groups WHERE grp='%s' AND group_uuid='%s'", group, u1),
        1);
    assert_true(peek->idle());
    /* Writes are not checked (the hot path): only fences are. */
    assert_int_equal(write_offsets(s, 1, 6, (const int64_t[]){0}, 1, NULL, NULL), BATON_OK);
    assert_int_equal(baton_sink_expect_group(s2, NULL), BATON_OK);
    fence_ok(s2, 2, 99);

    /* Another group name in the same sink records its own id. */
    char h_group[80];
    snprintf(h_group, sizeof(h_group), "%s-h", group);
    baton_sink_t *h = open_as(uri, h_group);
    assert_int_equal(baton_sink_expect_group(h, u2), BATON_OK);
    fence_ok(h, 0, 1);
    assert_int_equal(peek_i64("SELECT count(*) FROM baton_groups WHERE grp LIKE '%s%%'", group), 2);

    /* A row baton did not write is CORRUPT, never a guess. */
    if (peek->spoil_group)
        peek->spoil_group();
    else
        peek_exec("UPDATE baton_groups SET group_uuid = 'x' WHERE grp = '%s'", group);
    assert_int_equal(baton_sink_fence(s, 1, 7, &next), BATON_CORRUPT);
    assert_int_equal(baton_sink_meta(s, &m1), BATON_CORRUPT);
    assert_true(peek->idle());
    baton_sink_destroy(h);
    baton_sink_destroy(s2);
    baton_sink_destroy(s);
}

/* Real processes opening an empty store at the same moment: schema
 * creation must not fail for any of them; each fences and writes. */
static void test_concurrent_open(void **state) {
    (void)state;
    enum { NPROC = 8, ROUNDS = 3 };
    for (int round = 0; round < ROUNDS; round++) {
        char fresh[600];
        peek->fresh(1 + round, fresh, sizeof(fresh));
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
                if (baton_sink_open(fresh, "g", &s, err, sizeof(err))) {
                    fprintf(stderr, "child %d: open: %s\n", i, err);
                    _exit(10);
                }
                /* BUSY is retriable, and the worker retries it: eight
                 * processes fencing one file at once on a loaded machine
                 * may wait longer than one operation's busy timeout. */
                int rc, tries = 0;
                do
                    rc = baton_sink_fence(s, i, 1, &next);
                while (rc == BATON_BUSY && ++tries < 20);
                if (rc == BATON_OK && next != 0)
                    rc = BATON_INTERNAL;
                if (rc == BATON_OK) {
                    tries = 0;
                    do
                        rc = baton_sink_write(s, i, 1, &(baton_record_t){.offset = 0}, 1, NULL,
                                              NULL);
                    while (rc == BATON_BUSY && ++tries < 20);
                }
                if (rc != BATON_OK) {
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
         * teardown under the children still running. */
        int failed = NPROC - forked;
        for (int i = 0; i < forked; i++) {
            int st = 0;
            if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                failed++;
        }
        assert_int_equal(failed, 0);
        baton_sink_t *s = open_as(fresh, "g");
        baton_fence_row_t *rows = NULL;
        size_t n = 0;
        assert_int_equal(baton_sink_fences(s, &rows, &n), BATON_OK);
        assert_int_equal(n, NPROC);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(rows[i].partition, (int32_t)i);
            assert_int_equal(rows[i].next_offset, 1);
        }
        free(rows);
        baton_sink_meta_t m;
        assert_int_equal(baton_sink_meta(s, &m), BATON_OK); /* one id, agreed on */
        assert_int_equal(baton_uuid_valid(m.sink_id), 0);
        baton_sink_destroy(s);
    }
}

#define T(fn) \
    { #fn, fn, setup_group, NULL, (void *)#fn }

int main(int argc, char **argv) {
    /* The tests provoke stale, busy and corrupt on purpose. */
    baton_log_level = BATON_LOG_ERROR;
    if (argc != 2) {
        fprintf(stderr, "usage: sink_conformance URI (sqlite:PATH, postgresql://..., "
                        "redis://...)\n");
        return 2;
    }
    uri = argv[1];
    const char *colon = strchr(uri, ':');
    for (size_t i = 0; colon && i < BATON_ARRAY_SIZE(peeks); i++)
        if (strlen(peeks[i].scheme) == (size_t)(colon - uri) &&
            strncasecmp(peeks[i].scheme, uri, (size_t)(colon - uri)) == 0)
            peek = &peeks[i];
    if (!peek) {
        fprintf(stderr, "sink_conformance: no peek for '%s' (add one for a new backend)\n", uri);
        return 2;
    }
    /* Create the schema once so setup_group can empty the tables. */
    char err[512];
    baton_sink_t *s = NULL;
    if (baton_sink_open(uri, "setup", &s, err, sizeof(err))) {
        fprintf(stderr, "sink_conformance: open: %s\n", err);
        return 1;
    }
    baton_sink_destroy(s);
    if (peek->connect())
        return 1;
    const struct CMUnitTest tests[] = {
        T(test_fence_new_partition),
        T(test_fence_epochs),
        T(test_fence_many_new),
        T(test_fence_many_stale_among_others),
        T(test_fence_bad_input),
        T(test_write_requires_fence),
        T(test_write_applies),
        T(test_write_skips_duplicates),
        T(test_write_allows_gaps),
        T(test_write_large_batch),
        T(test_stale_write_rejected_whole),
        T(test_write_many_mixed),
        T(test_write_many_retry),
        T(test_write_commit_gate),
        T(test_write_bad_input),
        T(test_fence_write),
        T(test_fence_write_bad_input),
        T(test_fence_write_gate),
        T(test_new_owner_resumes),
        T(test_zombie_refused),
        T(test_group_isolation),
        T(test_key_value_roundtrip),
        T(test_fences_listing),
        T(test_fences_of),
        T(test_outputs_layout),
        T(test_outputs_stale),
        T(test_outputs_all_filtered),
        T(test_output_conflict_corrupt),
        T(test_busy),
        T(test_open_lazy),
        T(test_sink_identity),
        T(test_concurrent_open),
    };
    int rc = cmocka_run_group_tests_name(uri, tests, NULL, NULL);
    peek->disconnect();
    return rc;
}
