/* baton-produce.c: a bounded test producer. Writes C records round-robin over
 * N explicit partitions (record i goes to partition i % N, key "k<i>", value
 * "<prefix>-<i>"), waits for every delivery report, prints "produced=C" and
 * exits 0; any failed delivery makes it exit 1 (bad usage: 2). It always
 * stops by itself: message.timeout.ms (--timeout-ms) bounds every record and
 * so the final flush. With --deliveries FILE it appends every delivery report
 * to FILE as it arrives, flushed at once (so a kill loses none already
 * reported): "<partition>\x1f<offset>\x1f<value>\x1e", the record Kafka
 * acknowledged and where it is; a failed record that may still have been
 * written (librdkafka's "possibly persisted") is appended with offset -1.
 * The chaos checker compares the sink against these instead of reading the
 * topic back. */
#include "baton_log.h"
#include "baton_util.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

/* Default bound on one record's life in the producer, retries included. */
#define PRODUCE_DEFAULT_TIMEOUT_MS 30000

typedef struct produce_opts_s {
    const char *brokers;
    const char *topic;
    const char *prefix;
    int partitions;
    int64_t count;
    int64_t rate;
    int64_t timeout_ms;
    const char *deliveries;
    const char *linger_ms; /* librdkafka's linger.ms, as given */
} produce_opts_t;

/* Delivery accounting; only touched from rd_kafka_poll/flush on the main
 * thread, where librdkafka runs the delivery report callback. */
typedef struct produce_stats_s {
    int64_t delivered;
    int64_t failed;
    FILE *deliveries;     /* --deliveries, or NULL */
    int deliveries_error; /* a write to it failed */
} produce_stats_t;

static void produce_usage(FILE *out) {
    fprintf(out, "usage: baton-produce --brokers B --topic T --partitions N "
                 "--count C\n"
                 "                     [--rate R] [--prefix S] [--timeout-ms MS]\n"
                 "                     [--deliveries FILE] [--linger-ms L]\n"
                 "\n"
                 "Produces C records round-robin over partitions 0..N-1: record i\n"
                 "has key \"k<i>\" and value \"<S>-<i>\" (S defaults to \"v\").\n"
                 "R is records per second, 0 (default) for as fast as possible.\n"
                 "Waits for all deliveries (acks=all, idempotent), prints\n"
                 "\"produced=C\" and exits 0; exits 1 if any delivery fails.\n"
                 "MS bounds each record's delivery (default 30000), so the run\n"
                 "always ends. L is librdkafka's linger.ms (default 5): how long\n"
                 "a partition's records wait to go in one request.\n"
                 "FILE (appended to) gets one \"<partition>\\x1f<offset>\\x1f<value>\\x1e\"\n"
                 "per delivered record, written as its delivery report arrives;\n"
                 "a failed record that may have been written anyway gets offset -1.\n");
}

static void produce_bad_usage(const char *fmt, const char *what) {
    fputs("baton-produce: ", stderr);
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
    produce_usage(stderr);
    exit(2);
}

static void produce_parse_args(int argc, char **argv, produce_opts_t *o) {
    memset(o, 0, sizeof(*o));
    o->prefix = "v";
    o->count = -1;
    o->timeout_ms = PRODUCE_DEFAULT_TIMEOUT_MS;
    o->linger_ms = "5";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            produce_usage(stdout);
            exit(0);
        }
        static const char *const known[] = {"--brokers",    "--topic",      "--partitions",
                                            "--count",      "--rate",       "--prefix",
                                            "--timeout-ms", "--deliveries", "--linger-ms"};
        size_t k = 0;
        while (k < BATON_ARRAY_SIZE(known) && strcmp(a, known[k]) != 0)
            k++;
        if (k == BATON_ARRAY_SIZE(known))
            produce_bad_usage("unknown argument '%s'", a);
        if (i + 1 >= argc)
            produce_bad_usage("option '%s' needs a value", a);
        const char *v = argv[++i];
        int64_t n = 0;
        switch (k) {
        case 0: o->brokers = v; break;
        case 1: o->topic = v; break;
        case 2:
            if (baton_parse_i64(v, 1, 100000, &n) != 0)
                produce_bad_usage("bad value for --partitions: '%s'", v);
            o->partitions = (int)n;
            break;
        case 3:
            if (baton_parse_i64(v, 0, 1000000000000LL, &n) != 0)
                produce_bad_usage("bad value for --count: '%s'", v);
            o->count = n;
            break;
        case 4:
            if (baton_parse_i64(v, 0, 100000000, &n) != 0)
                produce_bad_usage("bad value for --rate: '%s'", v);
            o->rate = n;
            break;
        case 5: o->prefix = v; break;
        case 7:
            if (!*v)
                produce_bad_usage("bad value for --deliveries: '%s'", v);
            o->deliveries = v;
            break;
        case 8:
            if (baton_parse_i64(v, 0, 60000, &n) != 0)
                produce_bad_usage("bad value for --linger-ms: '%s'", v);
            o->linger_ms = v;
            break;
        default:
            if (baton_parse_i64(v, 1, 3600000, &n) != 0)
                produce_bad_usage("bad value for --timeout-ms: '%s'", v);
            o->timeout_ms = n;
            break;
        }
    }
    if (!o->brokers || !*o->brokers)
        produce_bad_usage("missing required option '%s'", "--brokers");
    if (!o->topic || !*o->topic)
        produce_bad_usage("missing required option '%s'", "--topic");
    if (!o->partitions)
        produce_bad_usage("missing required option '%s'", "--partitions");
    if (o->count < 0)
        produce_bad_usage("missing required option '%s'", "--count");
}

/* Delivery report callback; runs inside rd_kafka_poll()/rd_kafka_flush() on
 * the main thread. The first few failures are logged, all are counted. */
static void produce_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    produce_stats_t *st = opaque;
    int64_t offset = m->err ? -1 : m->offset;
    if (st->deliveries &&
        (!m->err || rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED)) {
        /* Flushed per report: what is in the file survives a SIGKILL. */
        if (fprintf(st->deliveries, "%" PRId32 "\x1f%" PRId64 "\x1f%.*s\x1e", m->partition, offset,
                    (int)m->len, (const char *)m->payload) < 0 ||
            fflush(st->deliveries) != 0) {
            if (!st->deliveries_error)
                BLOG_ERROR("event=deliveries_write_failed");
            st->deliveries_error = 1;
        }
    }
    if (!m->err) {
        st->delivered++;
        return;
    }
    if (st->failed++ < 10)
        BLOG_ERROR("event=delivery_failed partition=%" PRId32 " key=%.*s err=\"%s\"", m->partition,
                   (int)m->key_len, (const char *)m->key, baton_log_q(rd_kafka_err2str(m->err)));
}

static void produce_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk;
    baton_log_rdkafka(level, fac, buf);
}

static int produce_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value) {
    char errstr[256];
    if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) == RD_KAFKA_CONF_OK)
        return 0;
    BLOG_ERROR("event=config_failed name=%s err=\"%s\"", baton_log_v(name), baton_log_q(errstr));
    return -1;
}

int main(int argc, char **argv) {
    produce_opts_t o;
    produce_stats_t st = {0, 0, NULL, 0};
    char errstr[512];
    char tmo[32];

    baton_log_init("baton-produce", NULL);
    produce_parse_args(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    if (o.deliveries && !(st.deliveries = fopen(o.deliveries, "a"))) {
        fprintf(stderr, "baton-produce: cannot open --deliveries file '%s': %s\n", o.deliveries,
                strerror(errno));
        return 1;
    }

    snprintf(tmo, sizeof(tmo), "%" PRId64, o.timeout_ms);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (produce_conf_set(conf, "bootstrap.servers", o.brokers) ||
        produce_conf_set(conf, "acks", "all") ||
        produce_conf_set(conf, "enable.idempotence", "true") ||
        produce_conf_set(conf, "message.timeout.ms", tmo) ||
        produce_conf_set(conf, "linger.ms", o.linger_ms)) {
        rd_kafka_conf_destroy(conf);
        return 1;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, produce_dr_cb);
    rd_kafka_conf_set_log_cb(conf, produce_log_cb);
    rd_kafka_conf_set_opaque(conf, &st);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        BLOG_ERROR("event=rdkafka_new_failed err=\"%s\"", baton_log_q(errstr));
        rd_kafka_conf_destroy(conf);
        return 1;
    }

    int64_t start = baton_now_ms();
    int enqueue_failed = 0;
    for (int64_t i = 0; i < o.count && !enqueue_failed; i++) {
        if (o.rate > 0) {
            /* Pace against the start time, not the previous record, so the
             * average rate holds even when one sleep oversleeps. */
            int64_t due = start + i * 1000 / o.rate;
            int64_t now = baton_now_ms();
            while (now < due) {
                rd_kafka_poll(rk, (int)(due - now));
                now = baton_now_ms();
            }
        }
        char key[32], *value = xasprintf("%s-%" PRId64, o.prefix, i);
        snprintf(key, sizeof(key), "k%" PRId64, i);
        int32_t partition = (int32_t)(i % o.partitions);
        int64_t stalled_since = baton_now_ms();
        for (;;) {
            rd_kafka_resp_err_t err = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(o.topic), RD_KAFKA_V_PARTITION(partition),
                RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(value, strlen(value)),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (!err)
                break;
            if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL ||
                baton_now_ms() - stalled_since > o.timeout_ms) {
                BLOG_ERROR("event=produce_failed partition=%" PRId32 " key=%s err=\"%s\"",
                           partition, baton_log_v(key), baton_log_q(rd_kafka_err2str(err)));
                enqueue_failed = 1;
                break;
            }
            /* Queue full: serve delivery reports to make room. */
            rd_kafka_poll(rk, 100);
        }
        free(value);
        rd_kafka_poll(rk, 0);
    }

    /* Every queued record resolves (delivered or failed) within
     * message.timeout.ms, so this flush is bounded; the extra margin covers
     * the final round trip. */
    rd_kafka_resp_err_t ferr = rd_kafka_flush(rk, (int)o.timeout_ms + 5000);
    int64_t outstanding = rd_kafka_outq_len(rk);
    if (outstanding > 0) {
        /* Drop what is left so destroy does not wait on it; each purged
         * record is reported (and counted) as failed. */
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(rk, 0);
    }
    rd_kafka_destroy(rk);
    if (st.deliveries && fclose(st.deliveries) != 0)
        st.deliveries_error = 1;
    if (st.deliveries_error) {
        fprintf(stderr, "baton-produce: FAILED writing --deliveries file '%s'\n", o.deliveries);
        return 1;
    }

    if (enqueue_failed || ferr || st.failed || st.delivered != o.count) {
        fprintf(stderr,
                "baton-produce: FAILED topic=%s delivered=%" PRId64 " failed=%" PRId64
                " outstanding=%" PRId64 " wanted=%" PRId64 "%s\n",
                o.topic, st.delivered, st.failed, outstanding, o.count,
                ferr ? " (flush timed out)" : "");
        return 1;
    }
    printf("produced=%" PRId64 "\n", st.delivered);
    BLOG_INFO("event=done produced=%" PRId64 " ms=%" PRId64, st.delivered, baton_now_ms() - start);
    return 0;
}
