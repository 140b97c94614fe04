/* worker.c: baton-worker, the Kafka stream worker. It consumes the
 * partitions its membership owns (manual incremental assign, no Kafka
 * consumer group), applies the processor, and writes epoch-stamped batches
 * to the fenced sink. One thread runs everything: the membership's
 * callbacks, Kafka polling and sink writes; ZooKeeper's and librdkafka's own
 * threads only queue events for it. */
#include "worker.h"

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_log.h"
#include "baton_signal.h"
#include "baton_util.h"
#include "membership.h"
#include "sink.h"

#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t offset;
    void *key;
    size_t key_len;
    void *value;
    size_t value_len;
    int has_key, has_value;
} wrec_t;

typedef struct {
    int active;          /* fenced and assigned in Kafka */
    int paused;          /* Kafka fetching paused: buffer full or cannot write */
    int64_t epoch;
    int64_t next_offset; /* the sink's next_offset after our last write */
    int64_t expect;      /* next offset we expect from Kafka */
    wrec_t *recs;
    size_t nrecs, cap;
    int64_t first_ms;    /* when the oldest buffered record arrived */
    int64_t retry_at;    /* after a failed write */
} wpart_t;

typedef struct {
    const baton_worker_conf_t *conf;
    baton_membership_t *m;
    baton_sink_t *sink;
    rd_kafka_t *rk;
    const char *topic;
    wpart_t *parts;
    int32_t nparts;
    int64_t records_written;
} worker_t;

static void batch_clear(wpart_t *wp) {
    for (size_t i = 0; i < wp->nrecs; i++) {
        free(wp->recs[i].key);
        free(wp->recs[i].value);
    }
    wp->nrecs = 0;
    wp->first_ms = 0;
}

static void ensure_parts(worker_t *w) {
    int32_t n = baton_membership_partitions(w->m);
    if (n <= w->nparts)
        return;
    w->parts = xrealloc(w->parts, sizeof(wpart_t) * (size_t)n);
    memset(w->parts + w->nparts, 0, sizeof(wpart_t) * (size_t)(n - w->nparts));
    w->nparts = n;
}

static void kafka_assign(worker_t *w, int32_t p, int64_t offset, int add) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, w->topic, p)->offset = offset;
    rd_kafka_error_t *e = add ? rd_kafka_incremental_assign(w->rk, l)
                              : rd_kafka_incremental_unassign(w->rk, l);
    if (e) {
        BLOG_ERROR("event=kafka_%s_failed partition=%d error=\"%s\"", add ? "assign" : "unassign",
                   p, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(l);
}

static void kafka_pause(worker_t *w, int32_t p, int pause) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, w->topic, p);
    if (pause)
        rd_kafka_pause_partitions(w->rk, l);
    else
        rd_kafka_resume_partitions(w->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    w->parts[p].paused = pause;
}

/* Drops partition p locally: no more fetching, buffered records discarded
 * (the next owner reads them again from the sink's next_offset). */
static void part_deactivate(worker_t *w, int32_t p) {
    wpart_t *wp = &w->parts[p];
    if (!wp->active)
        return;
    kafka_assign(w, p, 0, 0);
    batch_clear(wp);
    wp->active = 0;
    wp->paused = 0;
}

/* Writes p's buffered batch. Returns BATON_OK (or nothing to do), BATON_STALE
 * (p was dropped), or a retriable error with the batch kept. */
static int part_flush(worker_t *w, int32_t p) {
    wpart_t *wp = &w->parts[p];
    if (!wp->active || wp->nrecs == 0)
        return BATON_OK;
    if (!baton_membership_can_write(w->m))
        return BATON_CONNECTION; /* suspended: the session may be gone */
    baton_record_t *recs = xmalloc(sizeof(baton_record_t) * wp->nrecs);
    for (size_t i = 0; i < wp->nrecs; i++) {
        recs[i].offset = wp->recs[i].offset;
        recs[i].key = wp->recs[i].has_key ? wp->recs[i].key : NULL;
        recs[i].key_len = wp->recs[i].key_len;
        recs[i].value = wp->recs[i].has_value ? wp->recs[i].value : NULL;
        recs[i].value_len = wp->recs[i].value_len;
    }
    BATON_FAILPOINT("worker.before_sink_write");
    int64_t next = 0;
    size_t applied = 0;
    int err = baton_sink_write(w->sink, p, wp->epoch, recs, wp->nrecs, &next, &applied);
    free(recs);
    if (err == BATON_OK) {
        BLOG_DEBUG("event=batch partition=%d epoch=%lld records=%zu applied=%zu next_offset=%lld",
                   p, (long long)wp->epoch, wp->nrecs, applied, (long long)next);
        wp->next_offset = next;
        w->records_written += (int64_t)applied;
        batch_clear(wp);
        return BATON_OK;
    }
    if (err == BATON_STALE || err == BATON_UNFENCED) {
        BLOG_WARN("event=write_rejected partition=%d epoch=%lld records=%zu reason=%s", p,
                  (long long)wp->epoch, wp->nrecs, baton_err_name(err));
        part_deactivate(w, p);
        baton_membership_drop(w->m, p);
        return BATON_STALE;
    }
    BLOG_WARN("event=write_failed partition=%d error=%s detail=\"%s\" action=retry", p,
              baton_err_name(err), baton_sink_errstr(w->sink));
    wp->retry_at = baton_now_ms() + 200;
    return err;
}

static int on_acquired(void *opaque, int32_t p, int64_t epoch) {
    worker_t *w = opaque;
    ensure_parts(w);
    wpart_t *wp = &w->parts[p];
    BATON_FAILPOINT("worker.before_fence");
    int64_t next = 0;
    int err = baton_sink_fence(w->sink, p, epoch, &next);
    if (err != BATON_OK) {
        BLOG_WARN("event=fence_failed partition=%d epoch=%lld error=%s detail=\"%s\"", p,
                  (long long)epoch, baton_err_name(err), baton_sink_errstr(w->sink));
        return err;
    }
    batch_clear(wp);
    wp->active = 1;
    wp->paused = 0;
    wp->epoch = epoch;
    wp->next_offset = next;
    wp->expect = next;
    kafka_assign(w, p, next, 1);
    BLOG_INFO("event=fenced partition=%d epoch=%lld next_offset=%lld", p, (long long)epoch,
              (long long)next);
    return BATON_OK;
}

static void on_released(void *opaque, int32_t p, baton_release_reason_t reason) {
    worker_t *w = opaque;
    if (p >= w->nparts || !w->parts[p].active)
        return;
    if (reason != BATON_RELEASE_LOST) {
        /* Hand over cleanly: what we read is written before the claim goes,
         * so the next owner starts exactly where we stopped. A failure here
         * loses nothing: the next owner reads from the sink's next_offset. */
        for (int attempt = 0; attempt < 5 && w->parts[p].nrecs > 0; attempt++) {
            int err = part_flush(w, p);
            if (err == BATON_OK || err == BATON_STALE)
                break;
            baton_sleep_ms(100);
        }
    }
    BLOG_INFO("event=revoked partition=%d epoch=%lld reason=%s next_offset=%lld", p,
              (long long)w->parts[p].epoch,
              reason == BATON_RELEASE_LOST ? "lost" : reason == BATON_RELEASE_LEAVE ? "leave" : "revoked",
              (long long)w->parts[p].next_offset);
    part_deactivate(w, p);
}

/* Applies the processor to one record and buffers the output. The built-in
 * processor is `copy`: output key and value equal the input's. */
static void part_append(worker_t *w, const rd_kafka_message_t *msg) {
    int32_t p = msg->partition;
    if (p < 0 || p >= w->nparts || !w->parts[p].active)
        return; /* fetched before we let it go */
    wpart_t *wp = &w->parts[p];
    if (msg->offset < wp->expect)
        return; /* already buffered or applied */
    if (msg->offset > wp->expect)
        BLOG_DEBUG("event=offset_gap partition=%d expected=%lld got=%lld", p,
                   (long long)wp->expect, (long long)msg->offset);
    if (wp->nrecs == wp->cap) {
        wp->cap = wp->cap ? wp->cap * 2 : 64;
        wp->recs = xrealloc(wp->recs, sizeof(wrec_t) * wp->cap);
    }
    wrec_t *r = &wp->recs[wp->nrecs++];
    memset(r, 0, sizeof(*r));
    r->offset = msg->offset;
    if (msg->key) {
        r->has_key = 1;
        r->key = xmalloc(msg->key_len);
        memcpy(r->key, msg->key, msg->key_len);
        r->key_len = msg->key_len;
    }
    if (msg->payload) {
        r->has_value = 1;
        r->value = xmalloc(msg->len);
        memcpy(r->value, msg->payload, msg->len);
        r->value_len = msg->len;
    }
    if (!wp->first_ms)
        wp->first_ms = baton_now_ms();
    wp->expect = msg->offset + 1;
}

static rd_kafka_t *kafka_new(const baton_worker_conf_t *conf, char *errstr, size_t n) {
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    char group_id[300];
    snprintf(group_id, sizeof(group_id), "baton-%s", conf->group);
    const char *defaults[][2] = {
        {"bootstrap.servers", conf->brokers},
        /* librdkafka wants a group.id for a consumer; baton never joins the
         * group or commits: progress lives in the sink with the output. */
        {"group.id", group_id},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "false"},
        {"fetch.wait.max.ms", "50"},
    };
    char kerr[512];
    for (size_t i = 0; i < BATON_ARRAY_SIZE(defaults); i++)
        if (rd_kafka_conf_set(kc, defaults[i][0], defaults[i][1], kerr, sizeof(kerr)) !=
            RD_KAFKA_CONF_OK) {
            baton_seterr(errstr, n, BATON_INVALID, "kafka setting %s: %s", defaults[i][0], kerr);
            rd_kafka_conf_destroy(kc);
            return NULL;
        }
    for (size_t i = 0; i < conf->nkafka_props; i++) {
        char *kv = xstrdup(conf->kafka_props[i]);
        char *eq = strchr(kv, '=');
        int bad = !eq;
        if (eq) {
            *eq = 0;
            bad = rd_kafka_conf_set(kc, kv, eq + 1, kerr, sizeof(kerr)) != RD_KAFKA_CONF_OK;
        } else
            snprintf(kerr, sizeof(kerr), "expected key=value");
        if (bad) {
            baton_seterr(errstr, n, BATON_INVALID, "--kafka '%s': %s", kv, kerr);
            free(kv);
            rd_kafka_conf_destroy(kc);
            return NULL;
        }
        free(kv);
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, kerr, sizeof(kerr));
    if (!rk) {
        baton_seterr(errstr, n, BATON_INVALID, "kafka consumer: %s", kerr);
        return NULL; /* rd_kafka_new frees kc only on success */
    }
    rd_kafka_poll_set_consumer(rk);
    return rk;
}

/* Flushes what is due: full batches, batches older than linger, retries. */
static void flush_due(worker_t *w, int force) {
    int64_t now = baton_now_ms();
    for (int32_t p = 0; p < w->nparts; p++) {
        wpart_t *wp = &w->parts[p];
        if (!wp->active || wp->nrecs == 0 || wp->retry_at > now)
            continue;
        if (force || wp->nrecs >= (size_t)w->conf->batch_size ||
            now - wp->first_ms >= w->conf->linger_ms)
            part_flush(w, p);
        /* Back-pressure: stop fetching while the buffer is full (a slow or
         * suspended sink); resume once it drains. */
        if (wp->active && !wp->paused && wp->nrecs >= (size_t)w->conf->batch_size * 4)
            kafka_pause(w, p, 1);
        else if (wp->active && wp->paused && wp->nrecs < (size_t)w->conf->batch_size)
            kafka_pause(w, p, 0);
    }
}

int baton_worker_run(const baton_worker_conf_t *conf, int stop_fd) {
    char errstr[512];
    worker_t w = {.conf = conf};
    int rc = 1;
    int err = baton_sink_open(conf->sink_uri, conf->group, &w.sink, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        BLOG_ERROR("event=sink_open_failed error=\"%s\"", errstr);
        return 1;
    }
    baton_membership_conf_t mc = {
        .zk_hosts = conf->zk_hosts,
        .root = conf->root,
        .group = conf->group,
        .id = conf->id,
        .capacity = conf->capacity,
        .rack = conf->rack,
        .session_timeout_ms = conf->session_timeout_ms,
        .connect_timeout_ms = conf->connect_timeout_ms,
    };
    baton_membership_cbs_t cbs = {.on_acquired = on_acquired, .on_released = on_released,
                                  .opaque = &w};
    if (!(w.rk = kafka_new(conf, errstr, sizeof(errstr)))) {
        BLOG_ERROR("event=kafka_config_error error=\"%s\"", errstr);
        goto out;
    }
    err = baton_membership_new(&mc, &cbs, &w.m, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        BLOG_ERROR("event=join_failed error=\"%s\"", errstr);
        goto out;
    }
    w.topic = baton_membership_topic(w.m);
    ensure_parts(&w);
    BLOG_INFO("event=started topic=%s partitions=%d sink=%s", w.topic, w.nparts, conf->sink_uri);

    int next_ms = 0;
    while (!baton_signal_stop_requested()) {
        err = baton_membership_poll(w.m, &next_ms, errstr, sizeof(errstr));
        if (err != BATON_OK) {
            BLOG_ERROR("event=membership_failed error=\"%s\"", errstr);
            goto out;
        }
        ensure_parts(&w);
        /* Drain what Kafka has, bounded so ZooKeeper events never wait long. */
        int timeout = next_ms < 20 ? next_ms : 20;
        for (int i = 0; i < 10000; i++) {
            rd_kafka_message_t *msg = rd_kafka_consumer_poll(w.rk, i == 0 ? timeout : 0);
            if (!msg)
                break;
            if (msg->err) {
                if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                    BLOG_WARN("event=kafka_error partition=%d error=\"%s\"", msg->partition,
                              rd_kafka_message_errstr(msg));
            } else {
                part_append(&w, msg);
            }
            rd_kafka_message_destroy(msg);
        }
        flush_due(&w, 0);
        (void)stop_fd;
    }
    BLOG_INFO("event=stopping action=graceful_leave");
    baton_membership_leave(w.m);
    rc = 0;
out:
    if (w.rk) {
        rd_kafka_consumer_close(w.rk);
        rd_kafka_destroy(w.rk);
    }
    baton_membership_destroy(w.m);
    if (w.parts) {
        for (int32_t p = 0; p < w.nparts; p++) {
            batch_clear(&w.parts[p]);
            free(w.parts[p].recs);
        }
        free(w.parts);
    }
    baton_sink_destroy(w.sink);
    BLOG_INFO("event=stopped records_written=%lld", (long long)w.records_written);
    return rc;
}
