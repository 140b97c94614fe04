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
#include "baton_metrics.h"
#include "baton_signal.h"
#include "baton_util.h"
#include "membership.h"
#include "sink.h"

#include <ctype.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The longest the loop sleeps when nothing at all is due. */
#define WORKER_IDLE_MS 100

typedef struct {
    int active;          /* fenced and assigned in Kafka */
    int paused;          /* Kafka fetching paused: buffer full or cannot write */
    int64_t epoch;
    int64_t next_offset; /* the sink's next_offset after our last write */
    int64_t expect;      /* next offset we expect from Kafka */
    int fresh;           /* acquired, nothing written yet: write the first batch at once */
    /* Buffered input, owned here: the librdkafka messages themselves, not
     * copies (destroyed once written or dropped, and always before the
     * consumer is destroyed). */
    rd_kafka_message_t **recs;
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

/* Monotonic microseconds, for latencies. */
static int64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void batch_clear(wpart_t *wp) {
    for (size_t i = 0; i < wp->nrecs; i++)
        rd_kafka_message_destroy(wp->recs[i]);
    wp->nrecs = 0;
    wp->first_ms = 0;
}

/* Drops the first n buffered records (written). The rest keep their order;
 * their age restarts, a good enough bound for the linger. */
static void batch_drop_front(wpart_t *wp, size_t n) {
    if (n >= wp->nrecs) {
        batch_clear(wp);
        return;
    }
    for (size_t i = 0; i < n; i++)
        rd_kafka_message_destroy(wp->recs[i]);
    memmove(wp->recs, wp->recs + n, sizeof(wp->recs[0]) * (wp->nrecs - n));
    wp->nrecs -= n;
    wp->first_ms = baton_now_ms();
}

static void ensure_parts(worker_t *w) {
    int32_t n = baton_membership_partitions(w->m);
    if (n <= w->nparts)
        return;
    w->parts = xrealloc(w->parts, sizeof(wpart_t) * (size_t)n);
    memset(w->parts + w->nparts, 0, sizeof(wpart_t) * (size_t)(n - w->nparts));
    w->nparts = n;
}

/* Publishes p's epoch (or its absence) and the number of partitions owned. */
static void metrics_owned(worker_t *w, int32_t p) {
    char label[16];
    snprintf(label, sizeof(label), "%d", p);
    if (w->parts[p].active)
        baton_metric_vec_set(baton_metric_gauge_vec(BATON_M_W_EPOCH), label,
                             (double)w->parts[p].epoch);
    else
        baton_metric_vec_remove(baton_metric_gauge_vec(BATON_M_W_EPOCH), label);
    int owned = 0;
    for (int32_t i = 0; i < w->nparts; i++)
        owned += w->parts[i].active;
    baton_metric_set(baton_metric_gauge(BATON_M_W_OWNED), owned);
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
    metrics_owned(w, p);
}

/* Writes p's buffered batch. Returns BATON_OK (or nothing to do), BATON_STALE
 * (p was dropped), or a retriable error with the batch kept. */
static int part_flush(worker_t *w, int32_t p) {
    wpart_t *wp = &w->parts[p];
    if (!wp->active || wp->nrecs == 0)
        return BATON_OK;
    if (!baton_membership_can_write(w->m))
        return BATON_CONNECTION; /* suspended: the session may be gone */
    /* One transaction holds at most --batch-size records, even when a slow
     * or suspended sink let the buffer grow past it. */
    size_t count = wp->nrecs < (size_t)w->conf->batch_size ? wp->nrecs : (size_t)w->conf->batch_size;
    baton_record_t *recs = xmalloc(sizeof(baton_record_t) * count);
    for (size_t i = 0; i < count; i++) {
        const rd_kafka_message_t *msg = wp->recs[i];
        recs[i].offset = msg->offset;
        recs[i].key = msg->key;
        recs[i].key_len = msg->key ? msg->key_len : 0;
        recs[i].value = msg->payload;
        recs[i].value_len = msg->payload ? msg->len : 0;
    }
    BATON_FAILPOINT("worker.before_sink_write");
    int64_t next = 0;
    size_t applied = 0;
    int64_t t0 = mono_us();
    int err = baton_sink_write(w->sink, p, wp->epoch, recs, count, &next, &applied);
    free(recs);
    if (err == BATON_OK) {
        baton_metric_inc(baton_metric_counter(BATON_M_W_BATCHES));
        baton_metric_observe(baton_metric_histogram(BATON_M_W_BATCH_SECONDS),
                             (double)(mono_us() - t0) / 1e6);
        baton_metric_add(baton_metric_counter(BATON_M_W_RECORDS), (double)applied);
        BLOG_DEBUG("event=batch partition=%d epoch=%lld records=%zu applied=%zu next_offset=%lld",
                   p, (long long)wp->epoch, count, applied, (long long)next);
        wp->next_offset = next;
        wp->fresh = 0;
        w->records_written += (int64_t)applied;
        batch_drop_front(wp, count);
        return BATON_OK;
    }
    if (err == BATON_STALE || err == BATON_UNFENCED) {
        BLOG_WARN("event=write_rejected partition=%d epoch=%lld records=%zu reason=%s", p,
                  (long long)wp->epoch, wp->nrecs, baton_err_name(err));
        baton_metric_inc(baton_metric_counter(BATON_M_W_STALE));
        part_deactivate(w, p);
        baton_membership_drop(w->m, p);
        return BATON_STALE;
    }
    baton_metric_inc(baton_metric_counter(BATON_M_W_BATCH_ERRORS));
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
    wp->fresh = 1;
    wp->epoch = epoch;
    wp->next_offset = next;
    wp->expect = next;
    kafka_assign(w, p, next, 1);
    metrics_owned(w, p);
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
        for (int failures = 0; failures < 5 && w->parts[p].active && w->parts[p].nrecs > 0;) {
            int err = part_flush(w, p);
            if (err == BATON_STALE)
                break;
            if (err != BATON_OK) {
                failures++;
                baton_sleep_ms(100);
            }
        }
    }
    BLOG_INFO("event=revoked partition=%d epoch=%lld reason=%s next_offset=%lld", p,
              (long long)w->parts[p].epoch,
              reason == BATON_RELEASE_LOST ? "lost" : reason == BATON_RELEASE_LEAVE ? "leave" : "revoked",
              (long long)w->parts[p].next_offset);
    part_deactivate(w, p);
}

/* Applies the processor to one record and buffers the output; takes
 * ownership of msg. The built-in processor is `copy`: output key and value
 * equal the input's, so the message itself is the output (no copy). */
static void part_append(worker_t *w, rd_kafka_message_t *msg) {
    int32_t p = msg->partition;
    if (p < 0 || p >= w->nparts || !w->parts[p].active || msg->offset < w->parts[p].expect) {
        /* fetched before we let it go, or already buffered or applied */
        rd_kafka_message_destroy(msg);
        return;
    }
    wpart_t *wp = &w->parts[p];
    if (msg->offset > wp->expect)
        BLOG_DEBUG("event=offset_gap partition=%d expected=%lld got=%lld", p,
                   (long long)wp->expect, (long long)msg->offset);
    if (wp->nrecs == wp->cap) {
        wp->cap = wp->cap ? wp->cap * 2 : 64;
        wp->recs = xrealloc(wp->recs, sizeof(*wp->recs) * wp->cap);
    }
    wp->recs[wp->nrecs++] = msg;
    if (!wp->first_ms)
        wp->first_ms = baton_now_ms();
    wp->expect = msg->offset + 1;
}

/* librdkafka accepts any bootstrap string and only fails to resolve it
 * later, forever: reject what can never work at start. Each comma-separated
 * entry is [PROTO://]HOST:PORT, HOST a name, an IPv4 address or [IPv6]. */
static int bootstrap_check(const char *list, char *errstr, size_t n) {
    char *copy = xstrdup(list), *save = NULL;
    int err = BATON_OK, count = 0;
    for (char *e = strtok_r(copy, ",", &save); e && err == BATON_OK;
         e = strtok_r(NULL, ",", &save)) {
        while (*e == ' ')
            e++;
        char *proto = strstr(e, "://");
        const char *hp = proto ? proto + 3 : e;
        const char *colon = strrchr(hp, ':');
        int64_t port = 0;
        const char *why = NULL;
        if (!colon || colon == hp)
            why = "expected HOST:PORT";
        else if (baton_parse_i64(colon + 1, 1, 65535, &port) != 0)
            why = "the port is not a number in 1-65535";
        else if (hp[0] == '[' ? colon[-1] != ']' : memchr(hp, ':', (size_t)(colon - hp)) != NULL)
            why = "an IPv6 address must be in brackets";
        else
            for (const char *c = hp; c < colon && !why; c++)
                if (!(isalnum((unsigned char)*c) || strchr(".-_[]:", *c)))
                    why = "the host has a character no host name has";
        if (why)
            err = baton_seterr(errstr, n, BATON_INVALID, "--brokers: '%s': %s", e, why);
        count++;
    }
    if (err == BATON_OK && count == 0)
        err = baton_seterr(errstr, n, BATON_INVALID, "--brokers: '%s' lists no broker", list);
    free(copy);
    return err;
}

static rd_kafka_t *kafka_new(const baton_worker_conf_t *conf, char *errstr, size_t n) {
    if (bootstrap_check(conf->brokers, errstr, n) != BATON_OK)
        return NULL;
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

/* Flushes what is due: full batches, batches older than linger, retries,
 * and the first batch of a partition just acquired (so a handoff is done
 * when the new owner's first write lands, without waiting a linger). */
static void flush_due(worker_t *w, int force) {
    int64_t now = baton_now_ms();
    size_t buffered = 0;
    for (int32_t p = 0; p < w->nparts; p++) {
        wpart_t *wp = &w->parts[p];
        buffered += wp->nrecs; /* before this flush: good enough for a gauge */
        if (!wp->active || wp->nrecs == 0 || wp->retry_at > now)
            continue;
        if (force || wp->fresh || wp->nrecs >= (size_t)w->conf->batch_size ||
            now - wp->first_ms >= w->conf->linger_ms)
            part_flush(w, p);
        /* Back-pressure: stop fetching while the buffer is full (a slow or
         * suspended sink); resume once it drains. */
        if (wp->active && !wp->paused && wp->nrecs >= (size_t)w->conf->batch_size * 4)
            kafka_pause(w, p, 1);
        else if (wp->active && wp->paused && wp->nrecs < (size_t)w->conf->batch_size)
            kafka_pause(w, p, 0);
    }
    baton_metric_set(baton_metric_gauge(BATON_M_W_BUFFERED), (double)buffered);
}

/* Milliseconds until flush_due has something to do (at most cap). */
static int flush_due_in(const worker_t *w, int cap) {
    int64_t now = baton_now_ms(), soon = cap;
    for (int32_t p = 0; p < w->nparts; p++) {
        const wpart_t *wp = &w->parts[p];
        if (!wp->active || wp->nrecs == 0)
            continue;
        int64_t at = wp->first_ms + w->conf->linger_ms;
        if (wp->retry_at > at)
            at = wp->retry_at;
        if (at - now < soon)
            soon = at - now;
    }
    return soon < 0 ? 0 : (int)soon;
}

/* Destroys every buffered message: librdkafka must get its messages back
 * before the consumer is closed. */
static void parts_clear(worker_t *w) {
    for (int32_t p = 0; p < w->nparts; p++)
        batch_clear(&w->parts[p]);
}

/* Creates every worker metric, so a scrape shows zeros rather than gaps. */
static void worker_metrics_register(void) {
    baton_metric_gauge(BATON_M_W_OWNED);
    baton_metric_gauge_vec(BATON_M_W_EPOCH);
    baton_metric_counter(BATON_M_W_RECORDS);
    baton_metric_gauge(BATON_M_W_BUFFERED);
    baton_metric_counter(BATON_M_W_BATCHES);
    baton_metric_counter(BATON_M_W_BATCH_ERRORS);
    baton_metric_histogram(BATON_M_W_BATCH_SECONDS);
    baton_metric_counter(BATON_M_W_STALE);
    baton_metric_histogram(BATON_M_W_HANDOFF_SECONDS);
    baton_metric_gauge(BATON_M_ZK_CONNECTED);
    baton_metric_counter(BATON_M_ZK_RECONNECTS);
    baton_metric_counter(BATON_M_ZK_EXPIRATIONS);
}

int baton_worker_run(const baton_worker_conf_t *conf, int stop_fd) {
    char errstr[512];
    worker_t w = {.conf = conf};
    int rc = 1;
    /* librdkafka writes a byte to kpipe[1] when the consumer queue becomes
     * non-empty, so one poll() waits for Kafka, ZooKeeper and SIGTERM at
     * once: a watch or a signal is acted on at once, not after a Kafka poll
     * timeout. */
    int kpipe[2] = {-1, -1};
    rd_kafka_queue_t *kq = NULL;
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
    if (pipe2(kpipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        BLOG_ERROR("event=pipe_failed");
        goto out;
    }
    kq = rd_kafka_queue_get_consumer(w.rk);
    rd_kafka_queue_io_event_enable(kq, kpipe[1], "k", 1);
    w.topic = baton_membership_topic(w.m);
    ensure_parts(&w);
    BLOG_INFO("event=started topic=%s partitions=%d sink=%s", w.topic, w.nparts, conf->sink_uri);
    worker_metrics_register();

    int next_ms = 0;
    while (!baton_signal_stop_requested()) {
        err = baton_membership_poll(w.m, &next_ms, errstr, sizeof(errstr));
        if (err != BATON_OK) {
            BLOG_ERROR("event=membership_failed error=\"%s\"", errstr);
            goto out;
        }
        ensure_parts(&w);
        /* Drain what Kafka has, bounded so ZooKeeper events never wait long. */
        int more = 0;
        for (int i = 0; i < 10000; i++) {
            rd_kafka_message_t *msg = rd_kafka_consumer_poll(w.rk, 0);
            if (!msg)
                break;
            more = i == 9999;
            if (msg->err) {
                if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                    BLOG_WARN("event=kafka_error partition=%d error=\"%s\"", msg->partition,
                              rd_kafka_message_errstr(msg));
                rd_kafka_message_destroy(msg);
            } else {
                part_append(&w, msg);
            }
        }
        flush_due(&w, 0);
        if (baton_signal_stop_requested())
            break;
        int timeout = more ? 0 : flush_due_in(&w, next_ms < WORKER_IDLE_MS ? next_ms : WORKER_IDLE_MS);
        struct pollfd pfds[3] = {{.fd = baton_membership_fd(w.m), .events = POLLIN},
                                 {.fd = kpipe[0], .events = POLLIN},
                                 {.fd = stop_fd, .events = POLLIN}};
        if (poll(pfds, stop_fd >= 0 ? 3 : 2, timeout) > 0 && (pfds[1].revents & POLLIN)) {
            char buf[256];
            while (read(kpipe[0], buf, sizeof(buf)) > 0) {
            }
        }
    }
    BLOG_INFO("event=stopping action=graceful_leave");
    /* Write every buffered batch first, so each release below is only the
     * claim's deletion and the next owners start sooner. */
    flush_due(&w, 1);
    baton_membership_leave(w.m);
    rc = 0;
out:
    parts_clear(&w);
    if (kq) {
        rd_kafka_queue_io_event_enable(kq, -1, NULL, 0);
        rd_kafka_queue_destroy(kq);
    }
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
    if (kpipe[0] >= 0) {
        close(kpipe[0]);
        close(kpipe[1]);
    }
    BLOG_INFO("event=stopped records_written=%lld", (long long)w.records_written);
    return rc;
}
