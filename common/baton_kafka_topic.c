/* baton_kafka_topic.c: the source topic check (see baton_kafka_topic.h). */
#include "baton_kafka_topic.h"

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf,
                      int errors_logged) {
    (void)rk;
    baton_log_rdkafka(errors_logged && strcmp(fac, "FAIL") == 0 ? 7 : level, fac, buf);
}

static void kafka_log_all(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    kafka_log(rk, level, fac, buf, 0);
}

static void kafka_log_no_fail(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    kafka_log(rk, level, fac, buf, 1);
}

void baton_kafka_conf_log(rd_kafka_conf_t *conf, int errors_logged) {
    rd_kafka_conf_set_log_cb(conf, errors_logged ? kafka_log_no_fail : kafka_log_all);
}

int baton_kafka_props_check(const char *const *kv, size_t n, char *errstr, size_t errstr_size) {
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    int err = BATON_OK;
    for (size_t i = 0; i < n && err == BATON_OK; i++) {
        const char *eq = strchr(kv[i], '=');
        char kerr[256] = "expected KEY=VALUE";
        if (eq && eq != kv[i]) {
            char *key = xasprintf("%.*s", (int)(eq - kv[i]), kv[i]);
            if (rd_kafka_conf_set(conf, key, eq + 1, kerr, sizeof(kerr)) == RD_KAFKA_CONF_OK)
                kerr[0] = 0;
            free(key);
        }
        if (kerr[0])
            err = baton_seterr(errstr, errstr_size, BATON_INVALID, "--kafka '%s': %s", kv[i], kerr);
    }
    rd_kafka_conf_destroy(conf);
    return err;
}

int baton_kafka_conf_no_autocreate(rd_kafka_conf_t *conf, char *errstr, size_t n) {
    char kerr[256];
    if (rd_kafka_conf_set(conf, "allow.auto.create.topics", "false", kerr, sizeof(kerr)) !=
        RD_KAFKA_CONF_OK)
        return baton_seterr(errstr, n, BATON_INVALID, "kafka setting allow.auto.create.topics: %s",
                            kerr);
    return BATON_OK;
}

/* Errors worth asking again until the deadline: no broker yet, or a topic
 * whose leaders are still being elected. */
static int transient(rd_kafka_resp_err_t e) {
    return e == RD_KAFKA_RESP_ERR__TIMED_OUT || e == RD_KAFKA_RESP_ERR__TRANSPORT ||
           e == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
           e == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE || e == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
}

/* Asks for the metadata of topic alone (never all topics, never with
 * auto-creation: rk was made with allow.auto.create.topics=false) until
 * an answer that is not transient, the deadline, or stop(opaque). Between
 * tries it serves rk's callbacks (which stop may look at). Returns
 * librdkafka's error for the request or the topic; *count is the partition
 * count. */
static rd_kafka_resp_err_t topic_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms,
                                            int (*stop)(void *), void *opaque, int32_t *count) {
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (!rkt)
        return rd_kafka_last_error();
    int64_t deadline = baton_now_ms() + timeout_ms;
    rd_kafka_resp_err_t e;
    for (;;) {
        /* Short tries: with no usable broker a try waits its whole timeout. */
        int64_t left = deadline - baton_now_ms();
        const struct rd_kafka_metadata *md = NULL;
        e = rd_kafka_metadata(rk, 0, rkt, &md, left > 500 ? 500 : left > 0 ? (int)left : 1);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            e = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
            for (int i = 0; i < md->topic_cnt; i++)
                if (strcmp(md->topics[i].topic, topic) == 0) {
                    e = md->topics[i].err;
                    *count = md->topics[i].partition_cnt;
                }
            rd_kafka_metadata_destroy(md);
        }
        if (!transient(e) || baton_now_ms() >= deadline)
            break;
        rd_kafka_poll(rk, 100); /* a pause before asking again */
        if (stop && stop(opaque))
            break;
    }
    rd_kafka_topic_destroy(rkt);
    return e;
}

int baton_kafka_topic_check(rd_kafka_t *rk, const char *brokers, const char *topic, int32_t want,
                            int timeout_ms, int (*stop)(void *opaque), void *opaque, int32_t *have,
                            char *warn, size_t warn_size, char *errstr, size_t n) {
    int32_t count = 0;
    if (warn && warn_size)
        warn[0] = 0;
    rd_kafka_resp_err_t e = topic_partitions(rk, topic, timeout_ms, stop, opaque, &count);
    if (have)
        *have = count;
    if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
        return baton_seterr(errstr, n, BATON_NOTFOUND,
                            "topic '%s' does not exist on Kafka at --brokers '%s' (baton creates "
                            "no topics: create it with %d partitions, or check the group's topic)",
                            topic, brokers, want);
    if (transient(e))
        return baton_seterr(errstr, n, BATON_TIMEOUT,
                            "--brokers '%s': no metadata for topic '%s' within %d ms: %s", brokers,
                            topic, timeout_ms, rd_kafka_err2str(e));
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return baton_seterr(errstr, n, BATON_CONNECTION,
                            "--brokers '%s': cannot read the metadata of topic '%s': %s", brokers,
                            topic, rd_kafka_err2str(e));
    if (count < want)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "topic '%s' on --brokers '%s' has %d partitions, fewer than the "
                            "group's %d: partitions %d-%d have nothing to read (add partitions "
                            "to the topic)",
                            topic, brokers, count, want, count, want - 1);
    if (count > want && warn && warn_size)
        snprintf(warn, warn_size,
                 "topic '%s' on --brokers '%s' has %d partitions, more than the group's %d: "
                 "partitions %d-%d are not consumed (run batonctl init --topic %s "
                 "--partitions %d to grow the group)",
                 topic, brokers, count, want, want, count - 1, topic, count);
    return BATON_OK;
}
