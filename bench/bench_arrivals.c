/* bench_arrivals.c: baton-bench-arrivals, the benchmarks' independent
 * observer of the input. A plain librdkafka consumer (manual assign of
 * every partition from the end, no group, no commit) that prints, for each
 * batch it receives, one line per partition with the newest offset in it,
 * stamped with wall-clock microseconds (the clock of baton-bench-watch and
 * of bash's $EPOCHREALTIME):
 *
 *   a TS_US PARTITION LAST_OFFSET
 *
 * "The end" is each partition's high watermark, asked of the broker before
 * the assign; once it has them all it prints
 *
 *   ready TS_US
 *
 * and every record produced after that line is seen (no race with the
 * consumer's own reset to the end, which happens at its first fetch).
 *
 * A handoff cannot write a record before the record exists: the time until
 * the first record a moved partition's new owner must write reaches a
 * consumer of the same broker is the input's part of the handoff, what no
 * coordinator can shorten (bench/lib.sh, bench_input_ms). It fetches with
 * the hot workers' --kafka fetch.wait.max.ms (--fetch-wait-ms, default 2),
 * so it sees records when they do, give or take one fetch. */
#include "baton_signal.h"
#include "baton_util.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static int64_t wall_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static void usage(FILE *f) {
    fprintf(f, "usage: baton-bench-arrivals --brokers B --topic T --partitions N\n"
               "                            [--only P,P...] [--fetch-wait-ms 2] [--max-s 600]\n");
}

/* --only: "P,P..." each in 0..n-1 into want[] (1 = watched). */
static int parse_only(const char *s, int64_t n, char *want) {
    memset(want, 0, (size_t)n);
    char *copy = xstrdup(s), *rest = copy, *t;
    int bad = 0;
    while (!bad && (t = strsep(&rest, ",")) != NULL) {
        int64_t p;
        bad = baton_parse_i64(t, 0, n - 1, &p);
        if (!bad)
            want[p] = 1;
    }
    free(copy);
    return bad;
}

#define MAX_PARTS 100000
#define BATCH 1024

int main(int argc, char **argv) {
    const char *brokers = NULL, *topic = NULL, *fetch_wait = "2", *only = NULL;
    int64_t nparts = 0, max_s = 600, fw = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "baton-bench-arrivals: '%s' needs a value\n", argv[i]);
            return 2;
        }
        const char *a = argv[i], *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--brokers"))
            brokers = v;
        else if (!strcmp(a, "--topic"))
            topic = v;
        else if (!strcmp(a, "--partitions"))
            bad = baton_parse_i64(v, 1, MAX_PARTS, &nparts);
        else if (!strcmp(a, "--only"))
            only = v;
        else if (!strcmp(a, "--fetch-wait-ms")) {
            bad = baton_parse_i64(v, 0, 10000, &fw);
            fetch_wait = v;
        } else if (!strcmp(a, "--max-s"))
            bad = baton_parse_i64(v, 1, 86400, &max_s);
        else {
            fprintf(stderr, "baton-bench-arrivals: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "baton-bench-arrivals: bad value for %s: '%s'\n", a, v);
            return 2;
        }
    }
    if (!brokers || !topic || !nparts) {
        fprintf(stderr, "baton-bench-arrivals: --brokers, --topic and --partitions are required\n");
        usage(stderr);
        return 2;
    }
    char *want = xmalloc((size_t)nparts);
    if (!only)
        memset(want, 1, (size_t)nparts);
    else if (parse_only(only, nparts, want)) {
        fprintf(stderr, "baton-bench-arrivals: bad value for --only: '%s' (partitions 0..%lld)\n",
                only, (long long)nparts - 1);
        free(want);
        return 2;
    }
    baton_signal_init();
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[][2] = {
        {"bootstrap.servers", brokers},    {"group.id", "baton-bench-arrivals"},
        {"enable.auto.commit", "false"},   {"fetch.wait.max.ms", fetch_wait},
        {"fetch.error.backoff.ms", "100"},
    };
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
            fprintf(stderr, "baton-bench-arrivals: %s\n", errstr);
            rd_kafka_conf_destroy(conf);
            free(want);
            return 2;
        }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) {
        fprintf(stderr, "baton-bench-arrivals: %s\n", errstr);
        rd_kafka_conf_destroy(conf);
        free(want);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)nparts);
    for (int32_t p = 0; p < nparts; p++) {
        if (!want[p])
            continue;
        int64_t lo = 0, hi = 0;
        rd_kafka_resp_err_t qerr = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 5000);
        if (qerr) {
            fprintf(stderr, "baton-bench-arrivals: the end of %s [%d]: %s\n", topic, p,
                    rd_kafka_err2str(qerr));
            rd_kafka_topic_partition_list_destroy(l);
            rd_kafka_destroy(rk);
            free(want);
            return 1;
        }
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = hi;
    }
    free(want);
    rd_kafka_resp_err_t err = rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        fprintf(stderr, "baton-bench-arrivals: assign: %s\n", rd_kafka_err2str(err));
        rd_kafka_destroy(rk);
        return 1;
    }
    printf("ready %lld\n", (long long)wall_us());
    fflush(stdout);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    rd_kafka_message_t *msgs[BATCH];
    int64_t *newest = xcalloc((size_t)nparts, sizeof(*newest));
    int32_t *touched = xcalloc((size_t)nparts, sizeof(*touched));
    int64_t deadline = baton_now_ms() + max_s * 1000;
    while (!baton_signal_stop_requested() && baton_now_ms() < deadline) {
        /* A batch call waits until its array is full or the timeout: wait
         * for one record, then take what else is queued without waiting. */
        ssize_t n = rd_kafka_consume_batch_queue(q, 100, msgs, 1);
        if (n == 1) {
            ssize_t more = rd_kafka_consume_batch_queue(q, 0, msgs + 1, BATCH - 1);
            n += more > 0 ? more : 0;
        }
        int64_t now = wall_us();
        size_t nt = 0;
        for (ssize_t i = 0; i < n; i++) {
            rd_kafka_message_t *m = msgs[i];
            if (!m->err && m->partition >= 0 && m->partition < nparts) {
                if (!newest[m->partition]) /* 0: not touched in this batch */
                    touched[nt++] = m->partition;
                if (m->offset + 1 > newest[m->partition])
                    newest[m->partition] = m->offset + 1;
            }
            rd_kafka_message_destroy(m);
        }
        for (size_t i = 0; i < nt; i++) {
            printf("a %lld %d %lld\n", (long long)now, touched[i],
                   (long long)(newest[touched[i]] - 1));
            newest[touched[i]] = 0;
        }
        if (nt)
            fflush(stdout);
    }
    free(newest);
    free(touched);
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return 0;
}
