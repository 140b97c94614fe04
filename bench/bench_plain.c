/* bench_plain.c: baton-bench-plain, the throughput benchmark's baseline: a
 * plain librdkafka consumer (manual assign of every partition, no group, no
 * ZooKeeper) that writes what it consumes to the same SQLite schema, batched
 * like baton-worker (--batch-size, --linger-ms; every due partition's batch
 * in one transaction), but without a fence check. It exits once --count records are written.
 * --member I/N makes it one of N such consumers that split the partitions
 * (those with p % N == I are its own): the group-level baseline, beside N
 * baton-workers.
 *
 * --micro instead times the sinks alone, without Kafka: N batches through
 * baton's fenced sink (baton_sink_write: BEGIN, read the fence row, insert,
 * store next_offset, COMMIT) against the same batches through the unfenced
 * writer, and prints the difference per batch: the cost of the fence check. */
#include "bench_out.h"

#include "baton_signal.h"
#include "baton_util.h"
#include "sink.h"

#include <librdkafka/rdkafka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: baton-bench-plain --brokers B --topic T --partitions N --sink PATH --count C\n"
            "                         [--group G] [--batch-size 500] [--linger-ms 10]\n"
            "                         [--member I/N]\n"
            "       baton-bench-plain --micro --dir DIR [--batches 400] [--batch-size 500]\n");
}

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Times nb batches of bs records through both sinks, interleaved so that
 * the machine's noise hits both alike. */
static int micro(const char *dir, int64_t nb, int64_t bs) {
    char errstr[512];
    char *fenced = xasprintf("sqlite:%s/micro-fenced.db", dir);
    char *plain = xasprintf("%s/micro-plain.db", dir);
    baton_sink_t *sink = NULL;
    if (baton_sink_open(fenced, "g", &sink, errstr, sizeof(errstr)) != 0) {
        fprintf(stderr, "baton-bench-plain: %s\n", errstr);
        return 1;
    }
    bench_out_t *out = bench_out_open(plain, "g", errstr, sizeof(errstr));
    if (!out) {
        fprintf(stderr, "baton-bench-plain: %s\n", errstr);
        return 1;
    }
    int64_t next = 0;
    baton_sink_fence(sink, 0, 1, &next);
    bench_out_take(out, 0, 1, &next);
    baton_record_t *recs = xcalloc((size_t)bs, sizeof(*recs));
    rd_kafka_message_t *msgs = xcalloc((size_t)bs, sizeof(*msgs));
    rd_kafka_message_t **mp = xcalloc((size_t)bs, sizeof(*mp));
    char key[32], val[64];
    int64_t t_f = 0, t_p = 0;
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t i = 0; i < bs; i++) {
            int64_t off = b * bs + i;
            snprintf(key, sizeof(key), "k%lld", (long long)off);
            snprintf(val, sizeof(val), "v-%lld", (long long)off);
            recs[i] = (baton_record_t){.offset = off,
                                       .key = xstrdup(key),
                                       .key_len = strlen(key),
                                       .value = xstrdup(val),
                                       .value_len = strlen(val)};
            msgs[i] = (rd_kafka_message_t){.offset = off,
                                           .partition = 0,
                                           .key = (void *)recs[i].key,
                                           .key_len = recs[i].key_len,
                                           .payload = (void *)recs[i].value,
                                           .len = recs[i].value_len};
            mp[i] = &msgs[i];
        }
        int64_t t = now_us();
        if (baton_sink_write(sink, 0, 1, recs, (size_t)bs, &next, NULL) != 0) {
            fprintf(stderr, "baton-bench-plain: fenced write: %s\n", baton_sink_errstr(sink));
            return 1;
        }
        int64_t t2 = now_us();
        if (bench_out_write(out, 0, 1, mp, (size_t)bs) != 0)
            return 1;
        t_f += t2 - t;
        t_p += now_us() - t2;
        for (int64_t i = 0; i < bs; i++) {
            free((void *)recs[i].key);
            free((void *)recs[i].value);
        }
    }
    /* The check itself, alone: the statement baton's sink runs inside
     * every write transaction (sink_sqlite.c, fence_get). */
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char *fpath = xasprintf("%s/micro-fenced.db", dir);
    sqlite3_open_v2(fpath, &db, SQLITE_OPEN_READONLY, NULL);
    free(fpath);
    if (sqlite3_prepare_v2(db,
                           "SELECT epoch, next_offset, rejected FROM baton_fence "
                           "WHERE grp=?1 AND partition=?2",
                           -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "baton-bench-plain: %s\n", sqlite3_errmsg(db));
        return 1;
    }
    sqlite3_bind_text(st, 1, "g", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, 0);
    const int nchecks = 100000;
    int64_t t = now_us();
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (int i = 0; i < nchecks; i++) {
        sqlite3_step(st);
        sqlite3_reset(st);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    double check_us = (double)(now_us() - t) / nchecks;
    sqlite3_finalize(st);
    sqlite3_close(db);
    printf("micro batches=%lld batch_size=%lld fenced_us_per_batch=%.1f plain_us_per_batch=%.1f "
           "difference_us=%.1f fence_check_us=%.2f\n",
           (long long)nb, (long long)bs, (double)t_f / (double)nb, (double)t_p / (double)nb,
           (double)(t_f - t_p) / (double)nb, check_us);
    free(recs);
    free(msgs);
    free(mp);
    bench_out_close(out);
    baton_sink_destroy(sink);
    free(fenced);
    free(plain);
    return 0;
}

int main(int argc, char **argv) {
    const char *brokers = NULL, *topic = NULL, *sink = NULL, *group = "g", *dir = NULL;
    int64_t nparts = 0, count = -1, batch = 500, linger = 10, batches = 400;
    int64_t member = 0, members = 1;
    int do_micro = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--micro")) {
            do_micro = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "baton-bench-plain: '%s' needs a value or is unknown\n", a);
            return 2;
        }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--brokers"))
            brokers = v;
        else if (!strcmp(a, "--topic"))
            topic = v;
        else if (!strcmp(a, "--sink"))
            sink = v;
        else if (!strcmp(a, "--group"))
            group = v;
        else if (!strcmp(a, "--dir"))
            dir = v;
        else if (!strcmp(a, "--partitions"))
            bad = baton_parse_i64(v, 1, 100000, &nparts);
        else if (!strcmp(a, "--count"))
            bad = baton_parse_i64(v, 0, INT64_MAX, &count);
        else if (!strcmp(a, "--batch-size"))
            bad = baton_parse_i64(v, 1, 1000000, &batch);
        else if (!strcmp(a, "--linger-ms"))
            bad = baton_parse_i64(v, 0, 600000, &linger);
        else if (!strcmp(a, "--batches"))
            bad = baton_parse_i64(v, 1, 10000000, &batches);
        else if (!strcmp(a, "--member")) {
            /* I/N, 0 <= I < N */
            const char *slash = strchr(v, '/');
            char ibuf[16];
            size_t il = slash ? (size_t)(slash - v) : 0;
            bad = !slash || il == 0 || il >= sizeof(ibuf);
            if (!bad) {
                memcpy(ibuf, v, il);
                ibuf[il] = '\0';
                bad = baton_parse_i64(slash + 1, 1, 100000, &members) ||
                      baton_parse_i64(ibuf, 0, members - 1, &member);
            }
        } else {
            fprintf(stderr, "baton-bench-plain: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "baton-bench-plain: bad value for %s: '%s'\n", a, v);
            return 2;
        }
    }
    if (do_micro) {
        if (!dir) {
            fprintf(stderr, "baton-bench-plain: --micro needs --dir\n");
            return 2;
        }
        return micro(dir, batches, batch);
    }
    if (!brokers || !topic || !sink || !nparts || count < 0) {
        fprintf(stderr,
                "baton-bench-plain: --brokers --topic --partitions --sink --count are required\n");
        return 2;
    }
    char errstr[512];
    bench_out_t *out = bench_out_open(sink, group, errstr, sizeof(errstr));
    if (!out) {
        fprintf(stderr, "baton-bench-plain: %s\n", errstr);
        return 1;
    }
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    /* The same consumer settings as baton-worker. */
    const char *props[][2] = {
        {"bootstrap.servers", brokers},    {"group.id", "bench-plain"},
        {"enable.auto.commit", "false"},   {"enable.auto.offset.store", "false"},
        {"auto.offset.reset", "earliest"}, {"enable.partition.eof", "false"},
        {"fetch.wait.max.ms", "20"},       {"fetch.error.backoff.ms", "100"},
        {"socket.nagle.disable", "true"},
    };
    for (size_t i = 0; i < BATON_ARRAY_SIZE(props); i++)
        if (rd_kafka_conf_set(kc, props[i][0], props[i][1], errstr, sizeof(errstr))) {
            fprintf(stderr, "baton-bench-plain: %s: %s\n", props[i][0], errstr);
            return 1;
        }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, sizeof(errstr));
    if (!rk) {
        fprintf(stderr, "baton-bench-plain: %s\n", errstr);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    bench_batcher_t *b = bench_batcher_new((int32_t)nparts, (int)batch, (int)linger);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)nparts);
    for (int32_t p = 0; p < nparts; p++) {
        int64_t next = 0;
        if (p % members != member)
            continue;
        if (bench_out_take(out, p, 1, &next) != 0)
            return 1;
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = next;
        bench_batcher_start(b, p, next);
    }
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    baton_signal_init();
    while (!baton_signal_stop_requested() && b->written < count) {
        for (int i = 0; i < 10000; i++) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, i == 0 ? 20 : 0);
            if (!m)
                break;
            if (m->err)
                rd_kafka_message_destroy(m);
            else
                bench_batcher_add(b, m);
        }
        bench_batcher_flush_due(b, out, 1, 0);
    }
    bench_batcher_flush_due(b, out, 1, 1);
    fprintf(stderr, "event=stopped written=%lld\n", (long long)b->written);
    bench_batcher_destroy(b);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    bench_out_close(out);
    return 0;
}
