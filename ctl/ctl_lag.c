/* ctl_lag.c: Kafka high watermarks, the sink's fence rows, and the lag they
 * give per partition, for `batonctl status`, `partitions`, `fences` and
 * `watch` (see ctl_lag.h). */
#include "ctl_lag.h"

#include "baton_err.h"
#include "baton_kafka_topic.h"
#include "baton_log.h"
#include "baton_util.h"
#include "ctl.h"

#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The first Kafka error that retrying cannot fix (a TLS handshake or SASL
 * failure: wrong ssl.ca.location, a certificate for another host name,
 * refused credentials), kept for the one message batonctl prints instead
 * of a bare timeout. Owned by the caller of kafka_new; filled by
 * kafka_error_cb from rd_kafka_poll on the caller's thread. */
typedef struct {
    int err;
    char reason[512];
} kafka_fatal_t;

static void kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    (void)rk;
    kafka_fatal_t *f = opaque;
    if (f->err || (err != RD_KAFKA_RESP_ERR__SSL && err != RD_KAFKA_RESP_ERR__AUTHENTICATION &&
                   err != RD_KAFKA_RESP_ERR__FATAL))
        return;
    f->err = err;
    snprintf(f->reason, sizeof(f->reason), "%s", reason);
}

static rd_kafka_t *kafka_new(const ctl_kafka_conf_t *kc, kafka_fatal_t *fatal, char *errstr,
                             size_t n) {
    char kerr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    /* librdkafka logs every failed connection attempt; batonctl reports the
     * one failure that matters itself. Shown with --verbose. */
    baton_kafka_conf_log(conf, 0);
    rd_kafka_conf_set_error_cb(conf, kafka_error_cb);
    rd_kafka_conf_set_opaque(conf, fatal);
    if (rd_kafka_conf_set(conf, "bootstrap.servers", kc->brokers, kerr, sizeof(kerr)) !=
            RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "client.id", CTL_PROG, kerr, sizeof(kerr)) != RD_KAFKA_CONF_OK) {
        baton_seterr(errstr, n, BATON_INVALID, "--brokers '%s': %s", kc->brokers, kerr);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    for (size_t i = 0; i < kc->nprops; i++) {
        const char *kv = kc->props[i];
        const char *eq = strchr(kv, '=');
        if (!eq || eq == kv) {
            baton_seterr(errstr, n, BATON_INVALID, "--kafka '%s': expected KEY=VALUE", kv);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
        char *key = xasprintf("%.*s", (int)(eq - kv), kv);
        rd_kafka_conf_res_t r = rd_kafka_conf_set(conf, key, eq + 1, kerr, sizeof(kerr));
        free(key);
        if (r != RD_KAFKA_CONF_OK) {
            baton_seterr(errstr, n, BATON_INVALID, "--kafka '%s': %s", kv, kerr);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    }
    /* Last, so no --kafka setting turns it back on: a producer's metadata
     * requests would otherwise ask the broker to create the topic. */
    if (baton_kafka_conf_no_autocreate(conf, errstr, n) != BATON_OK) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    /* A producer handle: it joins no consumer group and commits nothing. */
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, kerr, sizeof(kerr));
    if (!rk) {
        baton_seterr(errstr, n, BATON_INVALID, "kafka client: %s", kerr);
        rd_kafka_conf_destroy(conf); /* rd_kafka_new frees it only on success */
    }
    return rk;
}

int ctl_kafka_high_watermarks(const ctl_kafka_conf_t *kc, const char *topic, int32_t P,
                              int timeout_ms, int64_t *hwm, char **warnings, char *errstr,
                              size_t n) {
    for (int32_t p = 0; p < P; p++) {
        hwm[p] = -1;
        warnings[p] = NULL;
    }
    if (P <= 0)
        return BATON_OK;
    kafka_fatal_t fatal = {0};
    rd_kafka_t *rk = kafka_new(kc, &fatal, errstr, n);
    if (!rk)
        return BATON_INVALID;
    /* One ListOffsets request per leader for every partition at once (the
     * timestamp -1 asks for the latest offset, which is the high watermark),
     * instead of rd_kafka_query_watermark_offsets' round trip per partition:
     * 1,000 partitions cost one request, not a thousand. */
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(P);
    for (int32_t p = 0; p < P; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_END;
    rd_kafka_resp_err_t kerr = rd_kafka_offsets_for_times(rk, l, timeout_ms);
    int err = BATON_OK;
    if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_poll(rk, 0); /* serves the queued errors to kafka_error_cb */
    if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR && fatal.err) {
        err = baton_seterr(errstr, n, BATON_CONNECTION,
                           "--brokers '%s': %s: %s (check the --kafka ssl.*/sasl.* settings: "
                           "ssl.ca.location, and that the broker certificate names the host)",
                           kc->brokers, rd_kafka_err2name(fatal.err), fatal.reason);
    } else if (kerr == RD_KAFKA_RESP_ERR__TIMED_OUT || kerr == RD_KAFKA_RESP_ERR__TRANSPORT ||
               kerr == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        err = baton_seterr(errstr, n, BATON_TIMEOUT,
                           "--brokers '%s': no high watermarks for topic '%s' within %d ms: %s",
                           kc->brokers, topic, timeout_ms, rd_kafka_err2str(kerr));
    } else if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
        err = baton_seterr(errstr, n, BATON_CONNECTION,
                           "--brokers '%s': cannot read the high watermarks of topic '%s': %s",
                           kc->brokers, topic, rd_kafka_err2str(kerr));
    } else {
        for (int i = 0; i < l->cnt; i++) {
            const rd_kafka_topic_partition_t *tp = &l->elems[i];
            if (tp->partition < 0 || tp->partition >= P)
                continue;
            if (tp->err == RD_KAFKA_RESP_ERR_NO_ERROR && tp->offset >= 0)
                hwm[tp->partition] = tp->offset;
            else
                warnings[tp->partition] =
                    xasprintf("kafka: no high watermark for %s/%d: %s", topic, tp->partition,
                              tp->err ? rd_kafka_err2str(tp->err) : "no offset returned");
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return err;
}

/* Ends the topic check's wait once kafka_error_cb kept a fatal error. */
static int kafka_fatal_seen(void *opaque) { return ((const kafka_fatal_t *)opaque)->err != 0; }

int ctl_kafka_topic_check(const ctl_kafka_conf_t *kc, const char *topic, int32_t want,
                          int timeout_ms, char *warn, size_t warn_size, char *errstr, size_t n) {
    kafka_fatal_t fatal = {0};
    rd_kafka_t *rk = kafka_new(kc, &fatal, errstr, n);
    if (!rk)
        return BATON_INVALID;
    int err = baton_kafka_topic_check(rk, kc->brokers, topic, want, timeout_ms, kafka_fatal_seen,
                                      &fatal, NULL, warn, warn_size, errstr, n);
    if (err == BATON_TIMEOUT || err == BATON_CONNECTION) {
        rd_kafka_poll(rk, 0); /* serves the queued errors to kafka_error_cb */
        if (fatal.err)
            err = baton_seterr(errstr, n, BATON_CONNECTION,
                               "--brokers '%s': %s: %s (check the --kafka ssl.*/sasl.* settings: "
                               "ssl.ca.location, and that the broker certificate names the host)",
                               kc->brokers, rd_kafka_err2name(fatal.err), fatal.reason);
    }
    rd_kafka_destroy(rk);
    return err;
}

int ctl_sink_open(const char *uri, const char *group, int create, baton_sink_t **out, char *errstr,
                  size_t n) {
    *out = NULL;
    /* Opening a sink creates it when missing; a typo in a read command's
     * --sink must not leave an empty database behind and report it. */
    if (!create && strncmp(uri, "sqlite:", 7) == 0) {
        const char *path = uri + 7;
        if (strncmp(path, "///", 3) == 0)
            path += 2;
        struct stat st;
        if (*path && stat(path, &st) != 0) {
            /* Name the directory when it is the directory that is missing. */
            const char *slash = strrchr(path, '/');
            char *dir =
                slash && slash != path ? xasprintf("%.*s", (int)(slash - path), path) : NULL;
            int nodir = dir && stat(dir, &st) != 0;
            int err = nodir ? baton_seterr(errstr, n, BATON_NOTFOUND,
                                           "--sink '%s': directory '%s' does not exist", uri, dir)
                            : baton_seterr(errstr, n, BATON_NOTFOUND,
                                           "--sink '%s': '%s' does not exist", uri, path);
            free(dir);
            return err;
        }
    }
    char why[512];
    int err = baton_sink_open(uri, group, out, why, sizeof(why));
    if (err != BATON_OK)
        return baton_seterr(errstr, n, err, "--sink: %s", why);
    return BATON_OK;
}

int ctl_sink_fences(const char *uri, const char *group, baton_fence_row_t **rows, size_t *nrows,
                    char *errstr, size_t n) {
    *rows = NULL;
    *nrows = 0;
    baton_sink_t *sink = NULL;
    int err = ctl_sink_open(uri, group, 0, &sink, errstr, n);
    if (err != BATON_OK)
        return err;
    err = baton_sink_fences(sink, rows, nrows);
    if (err != BATON_OK) {
        char *shown = baton_sink_uri_redact(uri);
        baton_seterr(errstr, n, err, "--sink '%s': cannot read the fences: %s", shown,
                     baton_sink_errstr(sink));
        free(shown);
    }
    baton_sink_destroy(sink);
    return err;
}

static void add_warning(json_t *status, const char *path, const char *problem) {
    json_t *w = json_object();
    json_object_set_new(w, "path", json_string(path));
    json_object_set_new(w, "problem", json_string(problem));
    json_array_append_new(json_object_get(status, "warnings"), w);
}

int ctl_status_add_lag(json_t *status, const ctl_kafka_conf_t *kc, const char *sink_uri,
                       int timeout_ms, char *errstr, size_t n) {
    json_t *parts = json_object_get(status, "partitions");
    const json_t *cfg = json_object_get(status, "config");
    const char *topic = json_string_value(json_object_get(cfg, "topic"));
    json_int_t P = json_integer_value(json_object_get(cfg, "partitions"));
    if (!topic || P <= 0 || P > 1000000)
        return BATON_OK;
    int64_t *hwm = xcalloc((size_t)P, sizeof(int64_t));
    int64_t *next = xcalloc((size_t)P, sizeof(int64_t));
    char **warnings = xcalloc((size_t)P, sizeof(char *));
    int have_hwm = 0, have_next = 0, err = BATON_OK;
    if (kc && kc->brokers) {
        /* A topic Kafka does not have is an error, never lag 0; fewer or
         * more partitions than the group are warnings beside the lag. */
        char warn[512];
        err =
            ctl_kafka_topic_check(kc, topic, (int32_t)P, timeout_ms, warn, sizeof(warn), errstr, n);
        if (err == BATON_INVALID)
            add_warning(status, kc->brokers, errstr);
        else if (err != BATON_OK)
            goto out;
        if (warn[0])
            add_warning(status, kc->brokers, warn);
        err =
            ctl_kafka_high_watermarks(kc, topic, (int32_t)P, timeout_ms, hwm, warnings, errstr, n);
        if (err != BATON_OK)
            goto out;
        have_hwm = 1;
        for (json_int_t p = 0; p < P; p++)
            if (warnings[p])
                add_warning(status, kc->brokers, warnings[p]);
    }
    if (sink_uri) {
        baton_fence_row_t *rows = NULL;
        size_t nrows = 0;
        err = ctl_sink_fences(sink_uri, json_string_value(json_object_get(status, "group")), &rows,
                              &nrows, errstr, n);
        if (err != BATON_OK)
            goto out;
        /* A partition the sink has no row for was never fenced: its first
         * owner starts at offset 0 (what baton_sink_fence returns). */
        for (size_t i = 0; i < nrows; i++)
            if (rows[i].partition >= 0 && rows[i].partition < P)
                next[rows[i].partition] = rows[i].next_offset;
        free(rows);
        have_next = 1;
    }
    json_int_t total = 0;
    int total_known = have_hwm && have_next;
    size_t i;
    json_t *row;
    json_array_foreach(parts, i, row) {
        json_int_t p = json_integer_value(json_object_get(row, "partition"));
        if (p < 0 || p >= P)
            continue;
        if (have_next)
            json_object_set_new(row, "next_offset", json_integer(next[p]));
        if (have_hwm && hwm[p] >= 0)
            json_object_set_new(row, "high_watermark", json_integer(hwm[p]));
        if (have_hwm && have_next && hwm[p] >= 0) {
            /* Never negative: the mock cluster or a truncated topic can put
             * the sink ahead of the log end. */
            int64_t lag = hwm[p] > next[p] ? hwm[p] - next[p] : 0;
            json_object_set_new(row, "lag", json_integer(lag));
            total += lag;
        } else {
            total_known = 0;
        }
    }
    json_t *summary = json_object_get(status, "summary");
    if (summary)
        json_object_set_new(summary, "lag", total_known ? json_integer(total) : json_null());
out:
    for (json_int_t p = 0; p < P; p++)
        free(warnings[p]);
    free(warnings);
    free(hwm);
    free(next);
    return err;
}
