/* test_sink_pg_server.c: what only the PostgreSQL backend has, on a real
 * server: a fence waiting for a write's row lock, a connection the server
 * kills, a commit whose reply is lost and its retry, authentication, an
 * unreachable server, a table of another shape. The protocol every backend
 * keeps is the conformance suite's (tests/sink_conformance.c), which
 * it_pg_sink.sh runs against the same server first. it_pg_sink.sh starts the
 * server (tests/lib/pg.sh) and runs this program with PG_URI (role baton,
 * password from PGPASSFILE) and PG_PORT in the environment. Each test uses
 * its own group, so rows never mix; stored rows are read back with raw
 * libpq, as external tools would. */
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
#include "../sink_helpers.h"
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

/* ---- sink helpers ------------------------------------------------------------ */

static baton_sink_t *sink_open(void) { return open_as(pg_uri, group); }

/* Every test gets a group named after it, emptied first. */
static int setup_group(void **state) {
    snprintf(group, sizeof(group), "%s", (const char *)*state);
    raw_exec("DELETE FROM baton_output WHERE grp LIKE '%s%%'", group);
    raw_exec("DELETE FROM baton_output_more WHERE grp LIKE '%s%%'", group);
    raw_exec("DELETE FROM baton_fence WHERE grp LIKE '%s%%'", group);
    raw_exec("DELETE FROM baton_groups WHERE grp LIKE '%s%%'", group);
    return 0;
}

/* ---- locks ----------------------------------------------------------------- */

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
    baton_sink_t *s = open_as(uri, group);
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
        T(test_fence_waits_for_write), T(test_reconnect_after_kill),
        T(test_commit_reply_lost),     T(test_open_auth),
        T(test_open_unreachable),      T(test_open_wrong_shape),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    PQfinish(raw);
    return rc;
}
