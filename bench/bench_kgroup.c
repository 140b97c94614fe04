/* bench_kgroup.c: baton-bench-kgroup, the comparator for the rebalance
 * benchmark: a librdkafka consumer-group member (eager `range` or
 * `cooperative-sticky`) that writes what it consumes to the same SQLite
 * schema as baton's sink, batched the same way, and resumes each assigned
 * partition from the next_offset stored with the output (the careful way to
 * run a plain consumer group: progress lives with the output). Its member
 * number goes in the epoch column so a watcher sees each handoff.
 *
 * --instance-id sets `group.instance.id` (KIP-345 static membership): the
 * member then sends no LeaveGroup when it closes, and a broker that
 * implements static membership gives a member restarting under the same
 * instance id its previous assignment back without a rebalance. librdkafka
 * 2.0.2's mock cluster (baton-devkafka) reads the field but does not keep
 * it: there a restarted static member joins as a new member and the old
 * one stays in the group until its session times out (docs/benchmarks.md).
 *
 * One thread: the rebalance callback runs inside rd_kafka_consumer_poll. */
#include "bench_out.h"

#include "baton_signal.h"
#include "baton_util.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bench_out_t *out;
    bench_batcher_t *b;
    int64_t owner;
} kg_t;

static void usage(FILE *f) {
    fprintf(f, "usage: baton-bench-kgroup --brokers B --topic T --partitions N --group G --id NUM\n"
               "                          --sink PATH [--assignor range|cooperative-sticky]\n"
               "                          [--session-timeout-ms 3000] [--batch-size 500] "
               "[--linger-ms 10]\n"
               "                          [--instance-id ID]   (group.instance.id: static "
               "membership)\n");
}

static void die_usage(const char *msg, const char *what) {
    fprintf(stderr, "baton-bench-kgroup: %s '%s'\n", msg, what);
    usage(stderr);
    exit(2);
}

static void kg_assign(kg_t *kg, rd_kafka_t *rk, rd_kafka_topic_partition_list_t *parts, int coop) {
    for (int i = 0; i < parts->cnt; i++) {
        int64_t next = 0;
        if (bench_out_take(kg->out, parts->elems[i].partition, kg->owner, &next) != 0)
            next = RD_KAFKA_OFFSET_STORED;
        parts->elems[i].offset = next;
        bench_batcher_start(kg->b, parts->elems[i].partition, next);
        fprintf(stderr, "event=assigned partition=%d offset=%lld\n", parts->elems[i].partition,
                (long long)next);
    }
    if (coop) {
        rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, parts);
        if (e) {
            fprintf(stderr, "incremental_assign: %s\n", rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
        }
    } else {
        rd_kafka_assign(rk, parts);
    }
}

static void kg_revoke(kg_t *kg, rd_kafka_t *rk, rd_kafka_topic_partition_list_t *parts, int coop) {
    int lost = rd_kafka_assignment_lost(rk);
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (!lost)
            bench_batcher_flush(kg->b, kg->out, p, kg->owner);
        bench_batcher_drop(kg->b, p);
        fprintf(stderr, "event=revoked partition=%d lost=%d\n", p, lost);
    }
    if (coop) {
        rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
        if (e)
            rd_kafka_error_destroy(e);
    } else {
        rd_kafka_assign(rk, NULL);
    }
}

static void kg_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                            rd_kafka_topic_partition_list_t *parts, void *opaque) {
    kg_t *kg = opaque;
    int coop = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS)
        kg_assign(kg, rk, parts, coop);
    else
        kg_revoke(kg, rk, parts, coop);
}

int main(int argc, char **argv) {
    const char *brokers = NULL, *topic = NULL, *group = NULL, *sink = NULL;
    const char *assignor = "range", *instance = NULL;
    int64_t id = -1, nparts = 0, session_ms = 3000, batch = 500, linger = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc)
            die_usage("missing value or unknown option", a);
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--brokers"))
            brokers = v;
        else if (!strcmp(a, "--topic"))
            topic = v;
        else if (!strcmp(a, "--group"))
            group = v;
        else if (!strcmp(a, "--sink"))
            sink = v;
        else if (!strcmp(a, "--assignor")) {
            assignor = v;
            bad = strcmp(v, "range") && strcmp(v, "cooperative-sticky") && strcmp(v, "roundrobin");
        } else if (!strcmp(a, "--instance-id")) {
            instance = v;
            bad = !*v || strlen(v) > 249;
        } else if (!strcmp(a, "--id"))
            bad = baton_parse_i64(v, 0, 1000000, &id);
        else if (!strcmp(a, "--partitions"))
            bad = baton_parse_i64(v, 1, 100000, &nparts);
        else if (!strcmp(a, "--session-timeout-ms"))
            bad = baton_parse_i64(v, 1000, 600000, &session_ms);
        else if (!strcmp(a, "--batch-size"))
            bad = baton_parse_i64(v, 1, 1000000, &batch);
        else if (!strcmp(a, "--linger-ms"))
            bad = baton_parse_i64(v, 0, 600000, &linger);
        else
            die_usage("unknown option", a);
        if (bad)
            die_usage("bad value for", a);
    }
    if (!brokers || !topic || !group || !sink || id < 0 || !nparts)
        die_usage("missing one of --brokers --topic --partitions --group --id --sink", "");

    char errstr[512];
    kg_t kg = {.owner = id};
    if (!(kg.out = bench_out_open(sink, group, errstr, sizeof(errstr)))) {
        fprintf(stderr, "baton-bench-kgroup: %s\n", errstr);
        return 1;
    }
    kg.b = bench_batcher_new((int32_t)nparts, (int)batch, (int)linger);
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    char session[32], heartbeat[32];
    snprintf(session, sizeof(session), "%lld", (long long)session_ms);
    snprintf(heartbeat, sizeof(heartbeat), "%lld", (long long)(session_ms / 3));
    const char *props[][2] = {
        {"bootstrap.servers", brokers},
        {"group.id", group},
        {"partition.assignment.strategy", assignor},
        {"session.timeout.ms", session},
        {"heartbeat.interval.ms", heartbeat},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"auto.offset.reset", "earliest"},
        {"fetch.wait.max.ms", "50"},
    };
    for (size_t i = 0; i < BATON_ARRAY_SIZE(props); i++)
        if (rd_kafka_conf_set(kc, props[i][0], props[i][1], errstr, sizeof(errstr))) {
            fprintf(stderr, "baton-bench-kgroup: %s: %s\n", props[i][0], errstr);
            return 1;
        }
    if (instance && rd_kafka_conf_set(kc, "group.instance.id", instance, errstr, sizeof(errstr))) {
        fprintf(stderr, "baton-bench-kgroup: group.instance.id: %s\n", errstr);
        return 1;
    }
    rd_kafka_conf_set_rebalance_cb(kc, kg_rebalance_cb);
    rd_kafka_conf_set_opaque(kc, &kg);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, sizeof(errstr));
    if (!rk) {
        fprintf(stderr, "baton-bench-kgroup: %s\n", errstr);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (err) {
        fprintf(stderr, "baton-bench-kgroup: subscribe: %s\n", rd_kafka_err2str(err));
        return 1;
    }
    baton_signal_init();
    fprintf(stderr, "event=started id=%lld assignor=%s instance_id=%s\n", (long long)id, assignor,
            instance ? instance : "-");
    while (!baton_signal_stop_requested()) {
        for (int i = 0; i < 10000; i++) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, i == 0 ? 10 : 0);
            if (!m)
                break;
            if (m->err) {
                rd_kafka_message_destroy(m);
                continue;
            }
            bench_batcher_add(kg.b, m);
        }
        bench_batcher_flush_due(kg.b, kg.out, kg.owner, 0);
    }
    /* Graceful leave: the revoke callback flushes what is buffered. */
    bench_batcher_flush_due(kg.b, kg.out, kg.owner, 1);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    fprintf(stderr, "event=stopped written=%lld\n", (long long)kg.b->written);
    bench_batcher_destroy(kg.b);
    bench_out_close(kg.out);
    return 0;
}
