/* sink_pg.c: the fenced sink on PostgreSQL, for workers on many hosts. The
 * database enforces the fence: each fence and write is one transaction whose
 * statements refuse a lower epoch (an INSERT ... ON CONFLICT DO UPDATE ...
 * WHERE epoch <= $e for fence; SELECT ... FOR UPDATE on the fence row, then
 * an UPDATE conditional on the epoch for write), so two workers on two hosts
 * serialise on the fence row, and output and next_offset commit together or
 * not at all. A write retried after a commit of unknown outcome (connection
 * lost while COMMIT was in flight) skips the offsets that did commit, so no
 * batch is ever applied twice.
 *
 * The schema is the SQLite sink's (external tools read it), in PostgreSQL
 * types:
 *   baton_fence(grp TEXT, partition BIGINT, epoch BIGINT, next_offset BIGINT,
 *               rejected BIGINT, PRIMARY KEY(grp, partition))
 *   baton_output(grp TEXT, partition BIGINT, "offset" BIGINT, epoch BIGINT,
 *                key BYTEA, value BYTEA, PRIMARY KEY(grp, partition, "offset"))
 * and, for the second and later outputs of one input (docs/sinks.md):
 *   baton_output_more(grp TEXT, partition BIGINT, "offset" BIGINT, seq BIGINT,
 *                     epoch BIGINT, key BYTEA, value BYTEA,
 *                     PRIMARY KEY(grp, partition, "offset", seq))
 * ("offset" is reserved in PostgreSQL and must be quoted.) And the sink's
 * identity (sink_int.h):
 *   baton_meta(name TEXT PRIMARY KEY, value TEXT)
 *   baton_groups(grp TEXT PRIMARY KEY, group_uuid TEXT, bound_ms BIGINT)
 *
 * URI: "postgresql://..." or "postgres://..." is handed to libpq as a URI;
 * "postgresql:KEY=VALUE ..." as a key=value conninfo. A password in it is
 * refused: it comes from PGPASSWORD, PGPASSFILE or passfile=. */
#include <ctype.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "sink_int.h"

#define PG_LOCK_TIMEOUT_MS 5000
/* Rows per INSERT: at most 4 parameters each plus 3 shared stays far below the
 * protocol's 65535-parameter limit and keeps one statement small. */
#define PG_INSERT_CHUNK 1000
/* pg_advisory_xact_lock key that serialises schema creation ("baton_sc"). */
#define PG_SCHEMA_LOCK "7089063242155520867"

/* One connection. conninfo is what libpq parses (no password, by the check
 * in pg_open); the connection is re-made from it after it breaks. */
typedef struct {
    PGconn *conn;
    char *conninfo;
    int lock_timeout_ms;
} pg_t;

/* ---- redaction ------------------------------------------------------------ */

/* Appends [s, s+n) to a heap buffer. */
static void buf_add(char **buf, size_t *len, const char *s, size_t n) {
    *buf = xrealloc(*buf, *len + n + 1);
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
}

/* Whether s (of length n) is "password", case-insensitively (libpq keywords
 * are case-sensitive, but a secret is hidden even when misspelt so). */
static int is_password_key(const char *s, size_t n) {
    return n == 8 && strncasecmp(s, "password", 8) == 0;
}

/* Appends [from, to) with its part [hs, he) (if hs) as "***". */
static void buf_add_hiding(char **out, size_t *len, const char *from, const char *to,
                           const char *hs, const char *he) {
    if (!hs || hs < from || he > to) {
        buf_add(out, len, from, (size_t)(to - from));
        return;
    }
    buf_add(out, len, from, (size_t)(hs - from));
    buf_add(out, len, "***", 3);
    buf_add(out, len, he, (size_t)(to - he));
}

/* A word with an '@' is a mistyped URL ("postgresql:/user:pw@host/db", a
 * slash short, with or without a query), never a keyword: its password,
 * from the userinfo's ':' up to the last '@', is [*hs, *he). A ':'
 * followed by '/' is a scheme's, and the userinfo starts after the
 * slashes; any other first ':' is taken for the userinfo's (in
 * "scheme:user:pw@host" that hides the user too: better than showing a
 * password). Returns 0 (no ':' in the userinfo): nothing to hide. */
static int word_secret(const char *word, size_t wlen, const char **hs, const char **he) {
    const char *at = memrchr(word, '@', wlen);
    if (!at)
        return 0;
    const char *c = memchr(word, ':', (size_t)(at - word));
    if (c && c[1] == '/') {
        const char *u = c + 1;
        while (u < at && *u == '/')
            u++;
        c = memchr(u, ':', (size_t)(at - u));
    }
    if (!c)
        return 0;
    *hs = c + 1;
    *he = at;
    return 1;
}

/* key=value conninfo: every password value (quoted with '...' and backslash
 * escapes, or up to the next blank) becomes ***. */
static void redact_conninfo(const char *s, char **out, size_t *len) {
    const char *p = s;
    while (*p) {
        /* A keyword starts the string or follows a blank or the scheme's ':'. */
        const char *word = p;
        while (*p && !isspace((unsigned char)*p) && *p != '=')
            p++;
        size_t wlen = (size_t)(p - word);
        const char *hs = NULL, *he = NULL;
        if (!word_secret(word, wlen, &hs, &he))
            hs = he = NULL;
        const char *q = p;
        while (isspace((unsigned char)*q))
            q++;
        if (*q != '=') {
            buf_add_hiding(out, len, word, q, hs, he);
            p = q;
            if (!*p)
                break;
            continue;
        }
        /* The keyword may be preceded by "scheme:" in the first token. */
        const char *kw = word;
        const char *c = memchr(word, ':', wlen);
        if (c && word == s)
            kw = c + 1;
        q++;
        while (isspace((unsigned char)*q))
            q++;
        const char *v = q;
        if (*q == '\'') {
            q++;
            while (*q && *q != '\'') {
                if (*q == '\\' && q[1])
                    q++;
                q++;
            }
            if (*q == '\'')
                q++;
        } else {
            while (*q && !isspace((unsigned char)*q))
                q++;
        }
        buf_add_hiding(out, len, word, v, hs, he);
        if (is_password_key(kw, (size_t)(word + wlen - kw)) && q > v)
            buf_add(out, len, "***", 3);
        else
            buf_add(out, len, v, (size_t)(q - v));
        p = q;
        while (isspace((unsigned char)*p))
            buf_add(out, len, p++, 1);
    }
}

char *baton_sink__pg_redact(const char *uri) {
    char *out = NULL;
    size_t len = 0;
    buf_add(&out, &len, "", 0);
    if (!uri)
        return out;
    const char *sep = strstr(uri, "://");
    const char *colon = strchr(uri, ':');
    if (!sep || sep != colon) {
        redact_conninfo(uri, &out, &len);
        return out;
    }
    /* URL: scheme://[user[:password]@]hosts[/db][?k=v&...]. libpq takes the
     * userinfo up to the first '@' before any '/'. */
    const char *auth = sep + 3;
    const char *at = auth;
    while (*at && *at != '@' && *at != '/' && *at != '?')
        at++;
    const char *p = auth;
    buf_add(&out, &len, uri, (size_t)(auth - uri));
    if (*at == '@') {
        const char *pc = memchr(auth, ':', (size_t)(at - auth));
        if (pc) {
            buf_add(&out, &len, auth, (size_t)(pc + 1 - auth));
            buf_add(&out, &len, "***", 3);
            p = at;
        }
    }
    const char *query = strchr(p, '?');
    if (!query) {
        buf_add(&out, &len, p, strlen(p));
        return out;
    }
    buf_add(&out, &len, p, (size_t)(query + 1 - p));
    p = query + 1;
    while (*p) {
        const char *end = strchr(p, '&');
        if (!end)
            end = p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (eq && is_password_key(p, (size_t)(eq - p))) {
            buf_add(&out, &len, p, (size_t)(eq + 1 - p));
            buf_add(&out, &len, "***", 3);
        } else {
            buf_add(&out, &len, p, (size_t)(end - p));
        }
        p = end;
        if (*p == '&')
            buf_add(&out, &len, p++, 1);
    }
    return out;
}

/* ---- errors --------------------------------------------------------------- */

/* libpq's message on one line: newlines become "; ", the trailing one goes. */
static void pg_msg_copy(char *dst, size_t size, const char *msg) {
    size_t n = 0;
    if (!size)
        return;
    for (const char *p = msg ? msg : ""; *p && n + 3 < size; p++) {
        if (*p == '\n') {
            if (p[1] == '\0')
                break;
            dst[n++] = ';';
            dst[n++] = ' ';
        } else {
            dst[n++] = *p == '\t' ? ' ' : *p;
        }
    }
    dst[n] = '\0';
}

/* Maps a failed result (or none: res NULL) to baton's bands. Lock waits past
 * lock_timeout, serialisation failures and deadlocks are retriable (BUSY); a
 * broken connection, a server shutting down or refusing new connections is
 * CONNECTION; stored data the server calls corrupt is CORRUPT; the rest
 * (permissions, a dropped table, a full disk...) is a backend failure. */
static int pg_map(const PGconn *conn, const PGresult *res) {
    const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (PQstatus(conn) != CONNECTION_OK || !st)
        return BATON_CONNECTION;
    if (!strcmp(st, "55P03") || !strcmp(st, "40001") || !strcmp(st, "40P01") ||
        !strcmp(st, "57014"))
        return BATON_BUSY;
    if (!strncmp(st, "08", 2) || !strncmp(st, "57P", 3) || !strcmp(st, "53300"))
        return BATON_CONNECTION;
    if (!strcmp(st, "XX001") || !strcmp(st, "XX002"))
        return BATON_CORRUPT;
    return BATON_IO;
}

/* Ends any transaction still open (or failed) on this connection. A failed
 * ROLLBACK is logged; pg_begin finds the transaction and ends it first. */
static void pg_rollback(pg_t *pg) {
    if (!pg->conn || PQstatus(pg->conn) != CONNECTION_OK)
        return;
    PGTransactionStatusType ts = PQtransactionStatus(pg->conn);
    if (ts != PQTRANS_INTRANS && ts != PQTRANS_INERROR)
        return;
    PGresult *res = PQexec(pg->conn, "ROLLBACK");
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        BLOG_ERROR("event=sink_rollback_failed error=\"%s\"",
                   baton_log_q(PQerrorMessage(pg->conn)));
    PQclear(res);
}

/* Records a failure of `what` (on partition, if >= 0) in the sink's errstr,
 * frees res, rolls back and returns the mapped error. */
static int pg_fail(baton_sink_t *sink, PGresult *res, const char *what, int32_t partition) {
    pg_t *pg = sink->be;
    int err = res && PQresultStatus(res) != PGRES_FATAL_ERROR &&
                      PQresultStatus(res) != PGRES_NONFATAL_ERROR
                  ? BATON_INTERNAL /* an unexpected result shape */
                  : pg_map(pg->conn, res);
    char msg[384];
    pg_msg_copy(msg, sizeof(msg),
                res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res)
                                                    : PQerrorMessage(pg->conn));
    if (err == BATON_INTERNAL)
        snprintf(msg, sizeof(msg), "unexpected result %s", PQresStatus(PQresultStatus(res)));
    PQclear(res);
    char where[32] = "";
    if (partition >= 0)
        snprintf(where, sizeof(where), " partition %d", (int)partition);
    baton_sink__seterr(sink, err, "sink '%s' group '%s'%s: %s: %s%s", sink->uri, sink->group, where,
                       what, msg, baton_err_is_retriable(err) ? " (retriable)" : "");
    pg_rollback(pg);
    if (baton_err_is_retriable(err))
        BLOG_WARN("event=sink_%s uri=%s group=%s partition=%d op=\"%s\" error=\"%s\"",
                  err == BATON_BUSY ? "busy" : "disconnected", baton_log_v(sink->uri),
                  baton_log_v(sink->group), (int)partition, baton_log_q(what), baton_log_q(msg));
    else
        BLOG_ERROR("event=sink_failed uri=%s group=%s partition=%d op=\"%s\" error=\"%s\"",
                   baton_log_v(sink->uri), baton_log_v(sink->group), (int)partition,
                   baton_log_q(what), baton_log_q(sink->errstr));
    return err;
}

/* ---- connection ----------------------------------------------------------- */

/* Server notices ("relation ... already exists, skipping") go to the debug
 * log instead of libpq's default, stderr. */
static void pg_notice(void *arg, const char *message) {
    (void)arg;
    char msg[256];
    pg_msg_copy(msg, sizeof(msg), message);
    BLOG_DEBUG("event=sink_notice message=\"%s\"", baton_log_q(msg));
}

/* Per-session settings, again after every reconnect. */
static int pg_session_setup(baton_sink_t *sink) {
    pg_t *pg = sink->be;
    char sql[64];
    snprintf(sql, sizeof(sql), "SET lock_timeout = %d", pg->lock_timeout_ms);
    PGresult *res = PQexec(pg->conn, sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return pg_fail(sink, res, "setting lock_timeout", -1);
    PQclear(res);
    return BATON_OK;
}

/* Connects from pg->conninfo. libpq's keywords go first so the user's
 * conninfo (expanded from "dbname") overrides them: bounded connect and
 * keepalive defaults, so neither an unreachable server nor a silent network
 * can block the worker's one thread for long. */
static PGconn *pg_connect_raw(const char *conninfo) {
    const char *const keys[] = {"connect_timeout",
                                "keepalives_idle",
                                "keepalives_interval",
                                "keepalives_count",
                                "tcp_user_timeout",
                                "application_name",
                                "dbname",
                                NULL};
    const char *const vals[] = {"10", "10", "5", "3", "20000", "baton", conninfo, NULL};
    return PQconnectdbParams(keys, vals, 1);
}

/* Explains a failed connection and classifies it: the server asked for a
 * password none was given for (INVALID: configuration); the server refused
 * us (IO: authentication, missing database or role; not retried); otherwise
 * it was not reached (CONNECTION: retriable). */
static int pg_connect_error(const baton_sink_t *sink, PGconn *conn, char *errstr,
                            size_t errstr_size) {
    char msg[384];
    pg_msg_copy(msg, sizeof(msg), conn ? PQerrorMessage(conn) : "out of memory");
    if (conn && PQconnectionNeedsPassword(conn))
        return baton_seterr(errstr, errstr_size, BATON_INVALID,
                            "sink '%s': the server wants a password and none was found: set "
                            "PGPASSWORD or PGPASSFILE, or passfile= in the URI (%s)",
                            sink->uri, msg);
    if (strstr(msg, "FATAL"))
        return baton_seterr(errstr, errstr_size, BATON_IO, "sink '%s': server refused: %s",
                            sink->uri, msg);
    return baton_seterr(errstr, errstr_size, BATON_CONNECTION,
                        "sink '%s': cannot reach the server: %s (retriable)", sink->uri, msg);
}

/* Makes sure the connection is usable, reconnecting a broken one (bounded by
 * connect_timeout). Returns BATON_OK or an error in sink->errstr. */
static int pg_ensure(baton_sink_t *sink) {
    pg_t *pg = sink->be;
    if (pg->conn && PQstatus(pg->conn) == CONNECTION_OK)
        return BATON_OK;
    PQfinish(pg->conn);
    pg->conn = pg_connect_raw(pg->conninfo);
    if (!pg->conn || PQstatus(pg->conn) != CONNECTION_OK) {
        int err = pg_connect_error(sink, pg->conn, sink->errstr, sizeof(sink->errstr));
        /* Mid-run, every connect failure is worth retrying: a restarting
         * server refuses with FATAL too. */
        if (err != BATON_INVALID)
            err = BATON_CONNECTION;
        BLOG_WARN("event=sink_reconnect_failed uri=%s error=\"%s\"", baton_log_v(sink->uri),
                  baton_log_q(sink->errstr));
        PQfinish(pg->conn);
        pg->conn = NULL;
        return err;
    }
    PQsetNoticeProcessor(pg->conn, pg_notice, NULL);
    int err = pg_session_setup(sink);
    if (err)
        return err;
    BLOG_INFO("event=sink_reconnected uri=%s group=%s", baton_log_v(sink->uri),
              baton_log_v(sink->group));
    return BATON_OK;
}

/* Starts a transaction. A connection the server closed while idle (restart,
 * idle timeout, pg_terminate_backend) is only noticed here; BEGIN has no
 * effect, so it is retried once on a fresh connection. */
static int pg_begin(baton_sink_t *sink, const char *what, int32_t partition) {
    pg_t *pg = sink->be;
    for (int attempt = 0;; attempt++) {
        int err = pg_ensure(sink);
        if (err)
            return err;
        if (PQtransactionStatus(pg->conn) != PQTRANS_IDLE) {
            BLOG_WARN("event=sink_stale_transaction action=rollback");
            pg_rollback(pg);
        }
        PGresult *res = PQexec(pg->conn, "BEGIN");
        if (PQresultStatus(res) == PGRES_COMMAND_OK) {
            PQclear(res);
            return BATON_OK;
        }
        if (attempt == 0 && PQstatus(pg->conn) != CONNECTION_OK) {
            PQclear(res);
            BLOG_INFO("event=sink_connection_lost uri=%s action=reconnect", baton_log_v(sink->uri));
            continue;
        }
        return pg_fail(sink, res, what, partition);
    }
}

/* Runs sql with text parameters (n of them). Returns the result if its status
 * is `want`; otherwise records the failure, rolls back and returns NULL with
 * *err set. */
static PGresult *pg_run(baton_sink_t *sink, const char *sql, int n, const char *const *params,
                        ExecStatusType want, const char *what, int32_t partition, int *err) {
    pg_t *pg = sink->be;
    PGresult *res = PQexecParams(pg->conn, sql, n, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) == want) {
        *err = BATON_OK;
        return res;
    }
    *err = pg_fail(sink, res, what, partition);
    return NULL;
}

/* COMMIT. If the connection breaks while it is in flight, the outcome is
 * unknown: CONNECTION tells the caller to retry, and the retry finds out
 * (a write skips offsets below next_offset; a fence is idempotent). */
static int pg_commit(baton_sink_t *sink, const char *what, int32_t partition) {
    int err;
    PGresult *res = pg_run(sink, "COMMIT", 0, NULL, PGRES_COMMAND_OK, what, partition, &err);
    /* A COMMIT of a failed transaction "succeeds" as ROLLBACK. */
    if (res && strcmp(PQcmdStatus(res), "COMMIT") != 0) {
        PQclear(res);
        return baton_sink__seterr(sink, BATON_INTERNAL, "sink '%s' group '%s': %s rolled back",
                                  sink->uri, sink->group, what);
    }
    PQclear(res);
    return err;
}

/* ---- the protocol ----------------------------------------------------------- */

/* A stored fence value: a non-negative integer, else someone else wrote the
 * row and guessing would break fencing. */
static int pg_get_i64(const PGresult *res, int row, int col, int64_t *out) {
    if (PQgetisnull(res, row, col))
        return -1;
    char *end = NULL;
    const char *s = PQgetvalue(res, row, col);
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

static int pg_corrupt(baton_sink_t *sink, PGresult *res, int32_t partition, const char *column) {
    PQclear(res);
    pg_rollback(sink->be);
    BLOG_ERROR("event=sink_corrupt uri=%s group=%s partition=%d column=%s", baton_log_v(sink->uri),
               baton_log_v(sink->group), (int)partition, baton_log_v(column));
    return baton_sink__seterr(sink, BATON_CORRUPT,
                              "sink '%s' group '%s' partition %d: baton_fence.%s is NULL or not a "
                              "non-negative integer",
                              sink->uri, sink->group, (int)partition, column);
}

/* The stored epoch is not known yet: pg_count_stale reads it back. */
#define PG_EPOCH_UNREAD (-1)

/* Counts a rejected fence or write of partition in baton_fence.rejected,
 * inside the caller's open transaction, so operators see zombies there, and
 * logs it. *stored is the epoch that owns the partition: the caller passes
 * the one it read under the row lock (a write's SELECT ... FOR UPDATE), or
 * PG_EPOCH_UNREAD when it has none (a refused fence's INSERT ... ON CONFLICT
 * returns no row) and the count's UPDATE then returns it. Returns BATON_OK,
 * or an error with the transaction rolled back. The refusal's message is
 * left in errstr (baton_sink__stale). */
static int pg_count_stale(baton_sink_t *sink, const char *op, int32_t partition, int64_t epoch,
                          int64_t *stored) {
    char part_s[24];
    snprintf(part_s, sizeof(part_s), "%d", (int)partition);
    const char *const params[] = {sink->group, part_s};
    int unread = *stored == PG_EPOCH_UNREAD;
    int err;
    PGresult *res = pg_run(sink,
                           unread ? "UPDATE baton_fence SET rejected = rejected + 1 "
                                    "WHERE grp = $1 AND partition = $2 RETURNING epoch"
                                  : "UPDATE baton_fence SET rejected = rejected + 1 "
                                    "WHERE grp = $1 AND partition = $2",
                           2, params, unread ? PGRES_TUPLES_OK : PGRES_COMMAND_OK,
                           "count rejection", partition, &err);
    if (!res)
        return err;
    if (unread && (PQntuples(res) != 1 || pg_get_i64(res, 0, 0, stored)))
        return pg_corrupt(sink, res, partition, "epoch");
    PQclear(res);
    baton_sink__stale(sink, op, partition, epoch, *stored);
    return BATON_OK;
}

/* Reads the group's baton_groups row; with lock, FOR UPDATE inside the
 * caller's transaction. BATON_OK with *found (uuid, bound_ms set when
 * found); BATON_CORRUPT for a row baton did not write; or a failure
 * (rolled back). */
static int pg_group_row(baton_sink_t *sink, int lock, int *found, char *uuid, size_t size,
                        int64_t *bound_ms) {
    const char *const params[] = {sink->group};
    int err;
    PGresult *res = pg_run(sink,
                           lock ? "SELECT group_uuid, bound_ms FROM baton_groups WHERE grp = $1 "
                                  "FOR UPDATE"
                                : "SELECT group_uuid, bound_ms FROM baton_groups WHERE grp = $1",
                           1, params, PGRES_TUPLES_OK, "read baton_groups", -1, &err);
    if (!res)
        return err;
    *found = PQntuples(res) == 1;
    if (*found) {
        const char *u = PQgetisnull(res, 0, 0) ? NULL : PQgetvalue(res, 0, 0);
        if (!u || baton_uuid_valid(u) != 0 || pg_get_i64(res, 0, 1, bound_ms)) {
            PQclear(res);
            pg_rollback(sink->be);
            return baton_sink__seterr(sink, BATON_CORRUPT,
                                      "sink '%s' group '%s': the baton_groups row is not a group "
                                      "id and a time",
                                      sink->uri, sink->group);
        }
        snprintf(uuid, size, "%s", u);
    }
    PQclear(res);
    return BATON_OK;
}

/* Inside a fence's transaction: records sink->expect_group for the group,
 * or refuses (rolled back) if the sink records another (sink_int.h). Two
 * first fences at once: the INSERT ... ON CONFLICT DO NOTHING of the
 * second waits for the first and inserts nothing, so it reads the row
 * again and compares. */
static int pg_group_check(baton_sink_t *sink) {
    if (!sink->expect_group)
        return BATON_OK;
    char uuid[BATON_SINK_ID_SIZE], now_s[24];
    int64_t bound_ms = 0;
    int found = 0, err;
    snprintf(now_s, sizeof(now_s), "%" PRId64, baton_wall_ms());
    const char *const params[] = {sink->group, sink->expect_group, now_s};
    PGresult *res = pg_run(sink,
                           "INSERT INTO baton_groups(grp, group_uuid, bound_ms) VALUES ($1, $2, "
                           "$3) ON CONFLICT (grp) DO NOTHING",
                           3, params, PGRES_COMMAND_OK, "insert baton_groups", -1, &err);
    if (!res)
        return err;
    int inserted = atoi(PQcmdTuples(res)) == 1;
    PQclear(res);
    if (inserted) {
        BLOG_INFO("event=sink_group_recorded uri=%s group=%s group_uuid=%s", baton_log_v(sink->uri),
                  baton_log_v(sink->group), baton_log_v(sink->expect_group));
        return BATON_OK;
    }
    if ((err = pg_group_row(sink, 1, &found, uuid, sizeof(uuid), &bound_ms)))
        return err;
    if (found && strcasecmp(uuid, sink->expect_group) == 0)
        return BATON_OK;
    pg_rollback(sink->be);
    if (!found) /* deleted between the two statements: try the fence again */
        return baton_sink__seterr(sink, BATON_BUSY,
                                  "sink '%s' group '%s': baton_groups changed meanwhile "
                                  "(retriable)",
                                  sink->uri, sink->group);
    return baton_sink__group_conflict(sink, uuid, bound_ms);
}

static int pg_group_get(baton_sink_t *sink, baton_sink_meta_t *out) {
    int err = pg_ensure(sink);
    int found = 0;
    return err ? err
               : pg_group_row(sink, 0, &found, out->group_uuid, sizeof(out->group_uuid),
                              &out->bound_ms);
}

static int pg_write_body(baton_sink_t *sink, int32_t partition, int64_t epoch,
                         const baton_sink_input_t *inputs, size_t ninputs, int64_t *next_offset,
                         size_t *applied, int *found, int64_t *stored);

/* fence(p, e) for every partition inside one transaction, one commit: the
 * group check, then one statement per partition in which the database
 * applies the fence rule. A stale partition's rejection is counted in the
 * same transaction. A fenced partition whose held inputs start at or
 * before its next_offset is written in the same transaction
 * (pg_write_body), the commit gated then. Row locks are taken in the
 * order given, so callers pass partitions ascending (two workers fencing
 * overlapping sets then cannot deadlock). */

static int pg_fence_many(baton_sink_t *sink, baton_sink_fence_t *fences, size_t n) {
    int err = pg_begin(sink, "begin fence", fences[0].partition);
    if (!err)
        err = pg_group_check(sink);
    if (err)
        return err;
    size_t stale = 0;
    for (size_t i = 0; i < n; i++) {
        baton_sink_fence_t *fi = &fences[i];
        char part_s[24], epoch_s[24];
        snprintf(part_s, sizeof(part_s), "%d", (int)fi->partition);
        snprintf(epoch_s, sizeof(epoch_s), "%" PRId64, fi->epoch);
        const char *const params[] = {sink->group, part_s, epoch_s};
        /* The row is created, or its epoch raised or kept, only where the
         * stored epoch is not higher (the conflicting row is locked either
         * way). No row back means a higher epoch owns the partition. */
        PGresult *res = pg_run(sink,
                               "INSERT INTO baton_fence AS f (grp, partition, epoch, next_offset, "
                               "rejected) VALUES ($1, $2, $3, 0, 0) "
                               "ON CONFLICT (grp, partition) DO UPDATE SET epoch = EXCLUDED.epoch "
                               "WHERE f.epoch <= EXCLUDED.epoch RETURNING f.next_offset",
                               3, params, PGRES_TUPLES_OK, "store fence", fi->partition, &err);
        if (!res)
            return err;
        fi->result = BATON_OK;
        if (PQntuples(res) == 0) {
            PQclear(res);
            int64_t stored = PG_EPOCH_UNREAD;
            if ((err = pg_count_stale(sink, "fence", fi->partition, fi->epoch, &stored)))
                return err;
            fi->result = BATON_STALE;
            stale++;
            continue;
        }
        if (pg_get_i64(res, 0, 0, &fi->fenced_next))
            return pg_corrupt(sink, res, fi->partition, "next_offset");
        PQclear(res);
        BLOG_DEBUG("event=sink_fenced uri=%s group=%s partition=%d epoch=%lld next_offset=%lld",
                   baton_log_v(sink->uri), baton_log_v(sink->group), (int)fi->partition,
                   (long long)fi->epoch, (long long)fi->fenced_next);
        if (fi->ninputs && fi->from <= fi->fenced_next) {
            /* The row is locked and holds our epoch: the write rule passes. */
            int found = 0;
            int64_t stored = 0;
            err = pg_write_body(sink, fi->partition, fi->epoch, fi->inputs, fi->ninputs,
                                &fi->next_offset, &fi->applied, &found, &stored);
            if (err == BATON_STALE || err == BATON_UNFENCED)
                err = baton_sink__fence_changed(sink, fi->partition);
            if (err) {
                pg_rollback(sink->be);
                return err;
            }
            fi->written = 1;
        }
    }
    if ((err = baton_sink__fence_gate(sink, fences, n)) != BATON_OK) {
        pg_rollback(sink->be);
        return err;
    }
    err = pg_commit(sink, "commit fence", fences[0].partition);
    if (err)
        return err;
    if (n > 1)
        BLOG_DEBUG("event=sink_fenced_many uri=%s group=%s partitions=%zu stale=%zu",
                   baton_log_v(sink->uri), baton_log_v(sink->group), n, stale);
    return BATON_OK;
}

/* One output row to insert: output seq of input offset. */
typedef struct {
    int64_t offset;
    size_t seq;
    const baton_sink_output_t *out;
} pg_row_t;

/* Inserts rows[] into baton_output (more = 0: every row has seq 0) or
 * baton_output_more (more = 1), in statements of up to PG_INSERT_CHUNK
 * rows. Keys and values go as binary parameters, so any bytes pass
 * unchanged; NULL stays NULL. fixed is {group, partition, epoch, old
 * next_offset} as text. */
static int pg_insert_rows(baton_sink_t *sink, int32_t partition, const char *const *fixed, int more,
                          const pg_row_t *rows, size_t nrows) {
    pg_t *pg = sink->be;
    const char *table = more ? "baton_output_more" : "baton_output";
    const int per = more ? 4 : 3;
    const size_t maxp = 3 + (size_t)per * PG_INSERT_CHUNK;
    const char **vals = xmalloc(maxp * sizeof(*vals));
    int *lens = xmalloc(maxp * sizeof(*lens));
    int *fmts = xmalloc(maxp * sizeof(*fmts));
    char(*nums)[2][24] = xmalloc(PG_INSERT_CHUNK * sizeof(*nums));
    char *sql = NULL;
    size_t sql_len = 0, i = 0;
    int err = BATON_OK;
    while (i < nrows) {
        int np = 3, count = 0;
        for (int k = 0; k < 3; k++) {
            vals[k] = fixed[k];
            lens[k] = 0;
            fmts[k] = 0;
        }
        sql_len = 0;
        const char *head = more ? "INSERT INTO baton_output_more(grp, partition, \"offset\", seq, "
                                  "epoch, key, value) VALUES "
                                : "INSERT INTO baton_output(grp, partition, \"offset\", epoch, "
                                  "key, value) VALUES ";
        buf_add(&sql, &sql_len, head, strlen(head));
        for (; i < nrows && count < PG_INSERT_CHUNK; i++) {
            const pg_row_t *r = &rows[i];
            snprintf(nums[count][0], sizeof(nums[count][0]), "%" PRId64, r->offset);
            snprintf(nums[count][1], sizeof(nums[count][1]), "%zu", r->seq);
            int p = np;
            vals[p] = nums[count][0];
            lens[p] = 0;
            fmts[p] = 0;
            p++;
            if (more) {
                vals[p] = nums[count][1];
                lens[p] = 0;
                fmts[p] = 0;
                p++;
            }
            /* A non-NULL pointer with length 0 is an empty bytea, not NULL. */
            const baton_sink_output_t *o = r->out;
            vals[p] = o->key ? (o->key_len ? o->key : "") : NULL;
            lens[p] = (int)o->key_len;
            fmts[p] = 1;
            vals[p + 1] = o->value ? (o->value_len ? o->value : "") : NULL;
            lens[p + 1] = (int)o->value_len;
            fmts[p + 1] = 1;
            char row[128];
            int w = more ? snprintf(row, sizeof(row), "%s($1, $2, $%d, $%d, $3, $%d, $%d)",
                                    count ? ", " : "", np + 1, np + 2, np + 3, np + 4)
                         : snprintf(row, sizeof(row), "%s($1, $2, $%d, $3, $%d, $%d)",
                                    count ? ", " : "", np + 1, np + 2, np + 3);
            buf_add(&sql, &sql_len, row, (size_t)w);
            np += per;
            count++;
        }
        PGresult *res = PQexecParams(pg->conn, sql, np, NULL, vals, lens, fmts, 0);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            const char *st = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            /* An output row at or above next_offset: baton_fence and the
             * output tables disagree (someone edited one without the other). */
            if (st && !strcmp(st, "23505")) {
                PQclear(res);
                pg_rollback(pg);
                BLOG_ERROR("event=sink_corrupt uri=%s group=%s partition=%d table=%s "
                           "reason=duplicate_output",
                           baton_log_v(sink->uri), baton_log_v(sink->group), (int)partition,
                           baton_log_v(table));
                err = baton_sink__seterr(sink, BATON_CORRUPT,
                                         "sink '%s' group '%s' partition %d: a record at or above "
                                         "next_offset %s is already in %s",
                                         sink->uri, sink->group, (int)partition, fixed[3], table);
            } else {
                err = pg_fail(sink, res, more ? "insert output_more" : "insert output", partition);
            }
            break;
        }
        PQclear(res);
    }
    free(sql);
    free(nums);
    free(fmts);
    free(lens);
    free(vals);
    return err;
}

/* Picks the inputs that apply (see baton_sink__applies), starting at
 * *floor, and inserts their outputs: the first of each into baton_output,
 * the others into baton_output_more. *napplied counts the inputs. */
static int pg_insert_outputs(baton_sink_t *sink, int32_t partition, const char *const *fixed,
                             const baton_sink_input_t *inputs, size_t ninputs, int64_t *floor,
                             size_t *napplied) {
    size_t nfirst = 0, nmore = 0;
    for (size_t i = 0; i < ninputs; i++) {
        nfirst += inputs[i].noutputs > 0;
        nmore += inputs[i].noutputs > 1 ? inputs[i].noutputs - 1 : 0;
    }
    pg_row_t *first = nfirst ? xmalloc(nfirst * sizeof(*first)) : NULL;
    pg_row_t *rest = nmore ? xmalloc(nmore * sizeof(*rest)) : NULL;
    nfirst = nmore = 0;
    for (size_t i = 0; i < ninputs; i++) {
        const baton_sink_input_t *in = &inputs[i];
        if (!baton_sink__applies(*floor, in->offset))
            continue;
        for (size_t j = 0; j < in->noutputs; j++) {
            pg_row_t r = {in->offset, j, &in->outputs[j]};
            if (j)
                rest[nmore++] = r;
            else
                first[nfirst++] = r;
        }
        /* An input without outputs is consumed all the same. */
        *floor = in->offset + 1;
        (*napplied)++;
    }
    int err = BATON_OK;
    if (nfirst)
        err = pg_insert_rows(sink, partition, fixed, 0, first, nfirst);
    if (!err && nmore)
        err = pg_insert_rows(sink, partition, fixed, 1, rest, nmore);
    free(first);
    free(rest);
    return err;
}

/* One batch's steps inside an open transaction: lock and read the fence
 * row, apply the write rule, insert the outputs not yet applied, move
 * next_offset conditionally. Returns BATON_OK (*next_offset, *applied
 * set), BATON_STALE or BATON_UNFENCED (nothing written; *found and *stored
 * say why), or an error (the connection's transaction is then failed or
 * rolled back by pg_fail). */
static int pg_write_body(baton_sink_t *sink, int32_t partition, int64_t epoch,
                         const baton_sink_input_t *inputs, size_t ninputs, int64_t *next_offset,
                         size_t *applied, int *found, int64_t *stored) {
    char part_s[24], epoch_s[24], old_s[24], next_s[24];
    snprintf(part_s, sizeof(part_s), "%d", (int)partition);
    snprintf(epoch_s, sizeof(epoch_s), "%" PRId64, epoch);
    const char *params[] = {sink->group, part_s, epoch_s, old_s, next_s};
    int err;
    /* Lock the fence row: a concurrent fence by a new owner waits until this
     * transaction ends, or this one sees its higher epoch. */
    PGresult *res = pg_run(sink,
                           "SELECT epoch, next_offset FROM baton_fence "
                           "WHERE grp = $1 AND partition = $2 FOR UPDATE",
                           2, params, PGRES_TUPLES_OK, "read fence", partition, &err);
    if (!res)
        return err;
    *found = PQntuples(res) == 1;
    int64_t floor = 0;
    *stored = 0;
    if (*found && pg_get_i64(res, 0, 0, stored))
        return pg_corrupt(sink, res, partition, "epoch");
    if (*found && pg_get_i64(res, 0, 1, &floor))
        return pg_corrupt(sink, res, partition, "next_offset");
    PQclear(res);
    err = *found ? baton_sink__write_rule(*stored, epoch) : BATON_UNFENCED;
    if (err)
        return err;

    const int64_t old = floor;
    snprintf(old_s, sizeof(old_s), "%" PRId64, old);
    size_t n = 0;
    err = pg_insert_outputs(sink, partition, params, inputs, ninputs, &floor, &n);
    if (err)
        return err;
    if (n) {
        /* Conditional on the epoch and the progress read above: the
         * database refuses to move next_offset for any other owner. */
        snprintf(next_s, sizeof(next_s), "%" PRId64, floor);
        res = pg_run(sink,
                     "UPDATE baton_fence SET next_offset = $5 WHERE grp = $1 AND partition = $2 "
                     "AND epoch = $3 AND next_offset = $4",
                     5, params, PGRES_COMMAND_OK, "store next_offset", partition, &err);
        if (!res)
            return err;
        int updated = atoi(PQcmdTuples(res));
        PQclear(res);
        if (updated != 1) {
            pg_rollback(sink->be);
            return baton_sink__seterr(sink, BATON_INTERNAL,
                                      "sink '%s' group '%s' partition %d: the fence row changed "
                                      "under its lock",
                                      sink->uri, sink->group, (int)partition);
        }
    }
    *next_offset = floor;
    *applied = n;
    return BATON_OK;
}

/* write(p, e, batch) for every batch in one transaction, one commit
 * (pg_write_body). Batches come in ascending partition order, so the row locks are
 * taken in that order and two workers' overlapping calls cannot deadlock.
 * A stale batch is counted in rejected in the same transaction; an
 * unfenced one writes nothing; neither stops the others. A lost COMMIT
 * reply is BATON_CONNECTION like a single write's: the retry skips what
 * committed. */
static int pg_write_many(baton_sink_t *sink, baton_sink_batch_t *batches, size_t n) {
    int err = pg_begin(sink, "begin write", batches[0].partition);
    if (err)
        return err;
    for (size_t i = 0; i < n; i++) {
        baton_sink_batch_t *b = &batches[i];
        int found = 0;
        int64_t stored = 0;
        err = pg_write_body(sink, b->partition, b->epoch, b->inputs, b->ninputs, &b->next_offset,
                            &b->applied, &found, &stored);
        if (err == BATON_STALE) {
            int cerr = pg_count_stale(sink, "write", b->partition, b->epoch, &stored);
            if (cerr)
                return cerr;
        } else if (err == BATON_UNFENCED) {
            baton_sink__unfenced(sink, b->partition, b->epoch, found, stored);
        } else if (err) {
            pg_rollback(sink->be); /* nothing of any batch applied */
            return err;
        }
        b->result = err;
    }
    if ((err = baton_sink__commit_gate(sink, batches, n)) != BATON_OK) {
        pg_rollback(sink->be);
        for (size_t i = 0; i < n; i++)
            batches[i].applied = 0;
        return err;
    }
    err = pg_commit(sink, "commit write", batches[0].partition);
    if (err) {
        for (size_t i = 0; i < n; i++)
            batches[i].applied = 0;
        return err;
    }
    return BATON_OK;
}

/* The fence rows a query over (grp = $1, and $2 when nparams is 2)
 * returns, ordered by partition. */
static int pg_fence_rows(baton_sink_t *sink, const char *where, int nparams,
                         const char *const *params, baton_fence_row_t **rows, size_t *nrows) {
    int err = pg_ensure(sink);
    if (err)
        return err;
    char *sql = xasprintf("SELECT partition, epoch, next_offset, rejected FROM baton_fence "
                          "WHERE %s ORDER BY partition",
                          where);
    PGresult *res = pg_run(sink, sql, nparams, params, PGRES_TUPLES_OK, "list fences", -1, &err);
    free(sql);
    if (!res)
        return err;
    int n = PQntuples(res);
    baton_fence_row_t *out = n ? xcalloc((size_t)n, sizeof(*out)) : NULL;
    for (int i = 0; i < n; i++) {
        int64_t part = 0;
        if (pg_get_i64(res, i, 0, &part) || part > INT32_MAX ||
            pg_get_i64(res, i, 1, &out[i].epoch) || pg_get_i64(res, i, 2, &out[i].next_offset) ||
            pg_get_i64(res, i, 3, &out[i].rejected)) {
            free(out);
            PQclear(res);
            return baton_sink__seterr(sink, BATON_CORRUPT,
                                      "sink '%s' group '%s': baton_fence row %d has a NULL or "
                                      "negative value",
                                      sink->uri, sink->group, i + 1);
        }
        out[i].partition = (int32_t)part;
    }
    PQclear(res);
    *rows = out;
    *nrows = (size_t)n;
    return BATON_OK;
}

static int pg_fences(baton_sink_t *sink, baton_fence_row_t **rows, size_t *nrows) {
    const char *const params[] = {sink->group};
    return pg_fence_rows(sink, "grp = $1", 1, params, rows, nrows);
}

/* The partitions as one int[] parameter ("{1,5,9}"). */
static int pg_fences_of(baton_sink_t *sink, const int32_t *parts, size_t n,
                        baton_fence_row_t **rows, size_t *nrows) {
    size_t cap = 2 + 12 * n, len = 0;
    char *arr = xmalloc(cap);
    arr[len++] = '{';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(arr + len, cap - len, "%s%d", i ? "," : "", (int)parts[i]);
    snprintf(arr + len, cap - len, "}");
    const char *const params[] = {sink->group, arr};
    int err =
        pg_fence_rows(sink, "grp = $1 AND partition = ANY($2::bigint[])", 2, params, rows, nrows);
    free(arr);
    return err;
}

static int pg_set_busy_timeout(baton_sink_t *sink, int timeout_ms) {
    pg_t *pg = sink->be;
    pg->lock_timeout_ms = timeout_ms;
    int err = pg_ensure(sink);
    return err ? err : pg_session_setup(sink);
}

static void pg_close(baton_sink_t *sink) {
    pg_t *pg = sink->be;
    if (!pg)
        return;
    pg_rollback(pg);
    PQfinish(pg->conn);
    free(pg->conninfo);
    free(pg);
    sink->be = NULL;
}

/* ---- open: URI, schema ---------------------------------------------------- */

/* The expected shape of each table (sink_int.h), types as format_type()
 * prints them. */

static const baton_sink_col_t fence_cols[] = {
    {"grp", "text", 1},           {"partition", "bigint", 2}, {"epoch", "bigint", 0},
    {"next_offset", "bigint", 0}, {"rejected", "bigint", 0},
};
static const baton_sink_col_t output_cols[] = {
    {"grp", "text", 1},     {"partition", "bigint", 2}, {"offset", "bigint", 3},
    {"epoch", "bigint", 0}, {"key", "bytea", 0},        {"value", "bytea", 0},
};
static const baton_sink_col_t more_cols[] = {
    {"grp", "text", 1},    {"partition", "bigint", 2}, {"offset", "bigint", 3},
    {"seq", "bigint", 4},  {"epoch", "bigint", 0},     {"key", "bytea", 0},
    {"value", "bytea", 0},
};
static const baton_sink_col_t meta_cols[] = {{"name", "text", 1}, {"value", "text", 0}};
static const baton_sink_col_t groups_cols[] = {
    {"grp", "text", 1}, {"group_uuid", "text", 0}, {"bound_ms", "bigint", 0}};

static const char *const create_sql[] = {
    "CREATE TABLE baton_fence(grp TEXT NOT NULL, partition BIGINT NOT NULL, "
    "epoch BIGINT NOT NULL, next_offset BIGINT NOT NULL, rejected BIGINT NOT NULL, "
    "PRIMARY KEY(grp, partition))",
    "CREATE TABLE baton_output(grp TEXT NOT NULL, partition BIGINT NOT NULL, "
    "\"offset\" BIGINT NOT NULL, epoch BIGINT NOT NULL, key BYTEA, value BYTEA, "
    "PRIMARY KEY(grp, partition, \"offset\"))",
    "CREATE TABLE baton_output_more(grp TEXT NOT NULL, partition BIGINT NOT NULL, "
    "\"offset\" BIGINT NOT NULL, seq BIGINT NOT NULL, epoch BIGINT NOT NULL, key BYTEA, "
    "value BYTEA, PRIMARY KEY(grp, partition, \"offset\", seq))",
    "CREATE TABLE baton_meta(name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    /* In parentheses: clang's -Wstring-concatenation takes a lone joined
     * literal in a list for a missing comma. */
    ("CREATE TABLE baton_groups(grp TEXT PRIMARY KEY, group_uuid TEXT NOT NULL, "
     "bound_ms BIGINT NOT NULL)"),
};

/* Checks that `table` (as the search_path resolves it) is a table with
 * exactly the columns baton creates, in order, with the same types and
 * primary key. Runs inside the schema transaction. */
static int pg_check_table(baton_sink_t *sink, const char *table, const baton_sink_col_t *cols,
                          size_t ncols, char *errstr, size_t errstr_size) {
    pg_t *pg = sink->be;
    const char *const params[] = {table};
    PGresult *res = PQexecParams(
        pg->conn,
        "SELECT c.relkind, a.attname, format_type(a.atttypid, a.atttypmod), "
        "COALESCE((SELECT k.n FROM unnest(i.indkey) WITH ORDINALITY AS k(att, n) "
        "WHERE k.att = a.attnum), 0) "
        "FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
        "AND NOT a.attisdropped LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary "
        "WHERE c.oid = to_regclass($1) ORDER BY a.attnum",
        1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        char msg[384];
        pg_msg_copy(msg, sizeof(msg), PQresultErrorMessage(res));
        int err = pg_map(pg->conn, res);
        PQclear(res);
        return baton_seterr(errstr, errstr_size, err, "sink '%s': checking table '%s': %s",
                            sink->uri, table, msg);
    }
    int err = BATON_OK;
    int n = PQntuples(res);
    const char *kind = n ? PQgetvalue(res, 0, 0) : "";
    if (n == 0) {
        err = baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                           "sink '%s': table '%s' is missing after creating it", sink->uri, table);
    } else if (strcmp(kind, "r") != 0 && strcmp(kind, "p") != 0) {
        const char *what = !strcmp(kind, "v")   ? "view"
                           : !strcmp(kind, "m") ? "materialized view"
                           : !strcmp(kind, "f") ? "foreign table"
                           : !strcmp(kind, "S") ? "sequence"
                                                : "relation that is not a table";
        err = baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                           "sink '%s': '%s' is a %s, not a table", sink->uri, table, what);
    } else {
        for (int i = 0; i < n || (size_t)i < ncols; i++) {
            err = i >= n
                      ? baton_sink__check_column(sink, table, cols, ncols, (size_t)i, NULL, NULL, 0,
                                                 errstr, errstr_size)
                      : baton_sink__check_column(sink, table, cols, ncols, (size_t)i,
                                                 PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
                                                 atoi(PQgetvalue(res, i, 3)), errstr, errstr_size);
            if (err)
                break;
        }
    }
    PQclear(res);
    return err;
}

/* Creates the tables that are missing and checks both, in one transaction
 * under an advisory lock: CREATE TABLE IF NOT EXISTS alone can still fail
 * when several workers create the same table at once (a unique violation on
 * pg_type), so they queue on the lock and the later ones find the tables.
 * Existing tables are not created again, so a role that may only read and
 * write them (not CREATE in the schema) works. */
static int pg_schema(baton_sink_t *sink, char *errstr, size_t errstr_size) {
    pg_t *pg = sink->be;
    static const char *const tables[] = {"baton_fence", "baton_output", "baton_output_more",
                                         "baton_meta", "baton_groups"};
    int err = BATON_OK;
    char msg[384];
    const char *creating = NULL; /* the table being created, for the message */
    PGresult *res = PQexec(pg->conn, "BEGIN; SELECT pg_advisory_xact_lock(" PG_SCHEMA_LOCK ")");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        goto pg_err;
    PQclear(res);
    for (size_t t = 0; t < BATON_ARRAY_SIZE(tables); t++) {
        const char *const params[] = {tables[t]};
        res = PQexecParams(pg->conn, "SELECT to_regclass($1) IS NULL", 1, NULL, params, NULL, NULL,
                           0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK)
            goto pg_err;
        int missing = PQntuples(res) == 1 && !strcmp(PQgetvalue(res, 0, 0), "t");
        PQclear(res);
        if (!missing)
            continue;
        creating = tables[t];
        res = PQexec(pg->conn, create_sql[t]);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            goto pg_err;
        creating = NULL;
        PQclear(res);
        BLOG_INFO("event=sink_table_created uri=%s table=%s", baton_log_v(sink->uri),
                  baton_log_v(tables[t]));
    }
    err = pg_check_table(sink, "baton_fence", fence_cols, BATON_ARRAY_SIZE(fence_cols), errstr,
                         errstr_size);
    if (!err)
        err = pg_check_table(sink, "baton_output", output_cols, BATON_ARRAY_SIZE(output_cols),
                             errstr, errstr_size);
    if (!err)
        err = pg_check_table(sink, "baton_output_more", more_cols, BATON_ARRAY_SIZE(more_cols),
                             errstr, errstr_size);
    if (!err)
        err = pg_check_table(sink, "baton_meta", meta_cols, BATON_ARRAY_SIZE(meta_cols), errstr,
                             errstr_size);
    if (!err)
        err = pg_check_table(sink, "baton_groups", groups_cols, BATON_ARRAY_SIZE(groups_cols),
                             errstr, errstr_size);
    if (err)
        goto fail;
    /* The sink's id: made once, by the first open (under the lock). */
    char fresh[BATON_SINK_ID_SIZE];
    if (baton_uuid_new(fresh) != 0) {
        err = baton_seterr(errstr, errstr_size, BATON_INTERNAL,
                           "sink '%s': no randomness for the sink id", sink->uri);
        goto fail;
    }
    const char *const idp[] = {fresh};
    res = PQexecParams(pg->conn,
                       "INSERT INTO baton_meta(name, value) VALUES ('sink_id', $1) "
                       "ON CONFLICT (name) DO NOTHING",
                       1, NULL, idp, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        goto pg_err;
    PQclear(res);
    res = PQexec(pg->conn, "SELECT value FROM baton_meta WHERE name = 'sink_id'");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        goto pg_err;
    const char *id = PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "";
    if (baton_uuid_valid(id) != 0) {
        err = baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                           "sink '%s': baton_meta's sink_id '%s' is not a UUID", sink->uri, id);
        PQclear(res);
        goto fail;
    }
    snprintf(sink->sink_id, sizeof(sink->sink_id), "%s", id);
    PQclear(res);
    res = PQexec(pg->conn, "COMMIT");
    if (PQresultStatus(res) != PGRES_COMMAND_OK || strcmp(PQcmdStatus(res), "COMMIT") != 0)
        goto pg_err;
    PQclear(res);
    return BATON_OK;
pg_err:
    pg_msg_copy(msg, sizeof(msg),
                res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res)
                                                    : PQerrorMessage(pg->conn));
    err = pg_map(pg->conn, res);
    PQclear(res);
    /* A role that may only use existing tables meets a new table here
     * (baton_output_more after an upgrade): say which one to create. */
    baton_seterr(errstr, errstr_size, err, "sink '%s': creating the schema%s%s%s: %s", sink->uri,
                 creating ? " (table '" : "", creating ? creating : "",
                 creating ? "' is missing; "
                            "an owner of the schema can create it, see docs/sinks.md)"
                          : "",
                 msg);
fail:
    pg_rollback(pg);
    return err;
}

/* The conninfo libpq gets for target (the URI after "scheme:"), or NULL with
 * errstr set: a URI for "//...", a key=value conninfo otherwise, and never
 * one that carries a password. */
static char *pg_conninfo(baton_sink_t *sink, const char *target, char *errstr, size_t errstr_size) {
    char *conninfo =
        strncmp(target, "//", 2) == 0 ? xasprintf("postgresql:%s", target) : xstrdup(target);
    const char *p = conninfo;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p) {
        baton_seterr(errstr, errstr_size, BATON_INVALID,
                     "sink '%s': empty connection string (use postgresql://[USER@]HOST[:PORT]/DB "
                     "or postgresql:KEY=VALUE ...)",
                     sink->uri);
        goto err;
    }
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &perr);
    if (!opts) {
        char msg[256];
        pg_msg_copy(msg, sizeof(msg), perr ? perr : "out of memory");
        PQfreemem(perr);
        /* libpq's message may quote a piece of the string; if the redacted
         * form differs, that piece may be the password, so it is left out. */
        char *redacted = baton_sink__pg_redact(conninfo);
        int secret = strcmp(redacted, conninfo) != 0;
        free(redacted);
        baton_seterr(errstr, errstr_size, BATON_INVALID,
                     "sink '%s': not a valid libpq URI or conninfo: %s", sink->uri,
                     secret ? "(details hidden: the string carries a password)" : msg);
        goto err;
    }
    int has_password = 0;
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (!strcmp(o->keyword, "password") && o->val)
            has_password = 1;
    PQconninfoFree(opts);
    if (has_password) {
        /* Should the redaction have missed it (an exotic spelling libpq
         * still accepts), show no part of the string at all. */
        char *redacted = baton_sink__pg_redact(conninfo);
        if (!strcmp(redacted, conninfo)) {
            free(sink->uri);
            sink->uri = xstrdup("postgresql:(hidden)");
        }
        free(redacted);
        baton_seterr(errstr, errstr_size, BATON_INVALID,
                     "sink '%s': a password in the sink URI is refused (it would show in process "
                     "lists and shell history); use PGPASSWORD, PGPASSFILE or passfile=PATH",
                     sink->uri);
        goto err;
    }
    return conninfo;
err:
    free(conninfo);
    return NULL;
}

static int pg_open(baton_sink_t *sink, const char *target, char *errstr, size_t errstr_size) {
    char *conninfo = pg_conninfo(sink, target, errstr, errstr_size);
    if (!conninfo)
        return BATON_INVALID;
    pg_t *pg = xcalloc(1, sizeof(*pg));
    sink->be = pg;
    pg->conninfo = conninfo;
    pg->lock_timeout_ms = PG_LOCK_TIMEOUT_MS;
    int err;
    pg->conn = pg_connect_raw(conninfo);
    if (!pg->conn || PQstatus(pg->conn) != CONNECTION_OK) {
        err = pg_connect_error(sink, pg->conn, errstr, errstr_size);
        goto err;
    }
    PQsetNoticeProcessor(pg->conn, pg_notice, NULL);
    err = pg_session_setup(sink);
    if (err) {
        baton_seterr(errstr, errstr_size, err, "%s", sink->errstr);
        goto err;
    }
    err = pg_schema(sink, errstr, errstr_size);
    if (err)
        goto err;
    return BATON_OK;
err:
    /* Not logged here: the caller reports errstr, once. */
    pg_close(sink);
    return err;
}

const baton_sink_ops_t baton_sink_pg_ops = {
    .scheme = "postgresql",
    .alias = "postgres",
    .usage = "postgresql://[USER@]HOST[:PORT]/DB (password from PGPASSWORD or PGPASSFILE)",
    .open = pg_open,
    .close = pg_close,
    .fences = pg_fences,
    .fences_of = pg_fences_of,
    .set_busy_timeout = pg_set_busy_timeout,
    .redact = baton_sink__pg_redact,
    .fence_many = pg_fence_many,
    .write_many = pg_write_many,
    .group_get = pg_group_get,
};
