/* bench_watch.c: baton-bench-watch, the benchmarks' independent observer of
 * a sink. It polls baton_fence (epoch, next_offset per partition) every
 * --interval-us and prints one line per change, stamped with wall-clock
 * microseconds (comparable with bash's $EPOCHREALTIME):
 *
 *   w TS_US PARTITION EPOCH NEXT_OFFSET
 *
 * A partition's new owner "writes to the sink" at the first line where its
 * epoch differs from the old owner's and next_offset has moved since the
 * epoch changed. With --until-total N it prints "done TS_US TOTAL" and exits
 * once the sum of next_offset reaches N (the throughput benchmark's clock).
 * Reads only; WAL lets it run beside the writers without blocking them.
 * --sink is a SQLite file's path, or a server sink's URI (postgresql://,
 * redis://: read through the sink library's fence listing, one query a
 * poll). */
#include "baton_err.h"
#include "baton_signal.h"
#include "baton_util.h"
#include "sink.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

typedef struct {
    int64_t epoch, next;
    int seen;
} wstate_t;

static int64_t wall_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static void usage(FILE *f) {
    fprintf(f, "usage: baton-bench-watch --sink PATH|URI --group G [--interval-us 1000]\n"
               "                         [--until-total N] [--max-s 600]\n");
}

/* Prints a line for partition p if its epoch or next_offset changed. */
static void note(wstate_t **ws, int32_t *nws, int64_t now, int32_t p, int64_t e, int64_t n) {
    if (p < 0 || p > 10000000)
        return;
    if (p >= *nws) {
        *ws = xrealloc(*ws, sizeof(**ws) * (size_t)(p + 1));
        memset(*ws + *nws, 0, sizeof(**ws) * (size_t)(p + 1 - *nws));
        *nws = p + 1;
    }
    wstate_t *w = &(*ws)[p];
    if (!w->seen || w->epoch != e || w->next != n) {
        printf("w %lld %d %lld %lld\n", (long long)now, p, (long long)e, (long long)n);
        *w = (wstate_t){.epoch = e, .next = n, .seen = 1};
    }
}

/* Where the fence rows come from: a SQLite statement, or a server sink
 * (PostgreSQL, Redis) through the sink library's fence listing. */
typedef struct {
    sqlite3_stmt *st;
    baton_sink_t *sink;
} source_t;

/* One read of every fence row; returns the sum of next_offset. */
static int64_t read_once(const source_t *src, int64_t now, wstate_t **ws, int32_t *nws) {
    int64_t total = 0;
    if (src->st) {
        while (sqlite3_step(src->st) == SQLITE_ROW) {
            int64_t n = sqlite3_column_int64(src->st, 2);
            note(ws, nws, now, sqlite3_column_int(src->st, 0), sqlite3_column_int64(src->st, 1), n);
            total += n;
        }
        sqlite3_reset(src->st);
        return total;
    }
    baton_fence_row_t *rows = NULL;
    size_t n = 0;
    if (baton_sink_fences(src->sink, &rows, &n) == BATON_OK)
        for (size_t i = 0; i < n; i++) {
            note(ws, nws, now, rows[i].partition, rows[i].epoch, rows[i].next_offset);
            total += rows[i].next_offset;
        }
    free(rows);
    return total;
}

static void watch(const source_t *src, int64_t interval, int64_t until, int64_t deadline) {
    wstate_t *ws = NULL;
    int32_t nws = 0;
    while (!baton_signal_stop_requested() && baton_now_ms() < deadline) {
        int64_t now = wall_us(), total = read_once(src, now, &ws, &nws);
        if (until >= 0 && total >= until) {
            printf("done %lld %lld\n", (long long)now, (long long)total);
            break;
        }
        usleep((useconds_t)interval);
    }
    free(ws);
}

/* A server sink: opened (retried until it answers), then watched. */
static int watch_uri(const char *uri, const char *group, int64_t interval, int64_t until,
                     int64_t deadline) {
    source_t src = {0};
    char err[512];
    while (baton_sink_open(uri, group, &src.sink, err, sizeof(err)) != BATON_OK) {
        if (baton_signal_stop_requested() || baton_now_ms() > deadline) {
            fprintf(stderr, "baton-bench-watch: %s\n", err);
            return 1;
        }
        usleep(10000);
    }
    watch(&src, interval, until, deadline);
    baton_sink_destroy(src.sink);
    return 0;
}

int main(int argc, char **argv) {
    const char *path = NULL, *group = NULL;
    int64_t interval = 1000, until = -1, max_s = 600;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "baton-bench-watch: '%s' needs a value\n", argv[i]);
            return 2;
        }
        const char *a = argv[i], *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--sink"))
            path = v;
        else if (!strcmp(a, "--group"))
            group = v;
        else if (!strcmp(a, "--interval-us"))
            bad = baton_parse_i64(v, 100, 10000000, &interval);
        else if (!strcmp(a, "--until-total"))
            bad = baton_parse_i64(v, 0, INT64_MAX, &until);
        else if (!strcmp(a, "--max-s"))
            bad = baton_parse_i64(v, 1, 86400, &max_s);
        else {
            fprintf(stderr, "baton-bench-watch: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "baton-bench-watch: bad value for %s: '%s'\n", a, v);
            return 2;
        }
    }
    if (!path || !group) {
        fprintf(stderr, "baton-bench-watch: --sink and --group are required\n");
        return 2;
    }
    baton_signal_init();
    setvbuf(stdout, NULL, _IOLBF, 0);
    int64_t deadline = baton_now_ms() + max_s * 1000;
    if (strstr(path, "://"))
        return watch_uri(path, group, interval, until, deadline);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    /* The sink may not exist yet: wait for its table. */
    while (!st) {
        if (baton_signal_stop_requested() || baton_now_ms() > deadline)
            return 1;
        if (access(path, F_OK) == 0 &&
            sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db,
                               "SELECT partition, epoch, next_offset FROM baton_fence WHERE grp=?1",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, group, -1, SQLITE_STATIC);
            sqlite3_busy_timeout(db, 1000);
            break;
        }
        if (db)
            sqlite3_close(db);
        db = NULL;
        st = NULL;
        usleep(10000);
    }
    source_t src = {.st = st};
    watch(&src, interval, until, deadline);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return 0;
}
