/* worker.c: baton-worker, the Kafka stream worker. It consumes the
 * partitions its membership owns (manual incremental assign, no Kafka
 * consumer group), applies the processor, and writes epoch-stamped batches
 * to the fenced sink. One thread runs everything: the membership's
 * callbacks, Kafka polling and sink writes; ZooKeeper's and librdkafka's own
 * threads only queue events for it. */
#include "worker.h"

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_kafka_topic.h"
#include "baton_log.h"
#include "baton_member_int.h"
#include "baton_metrics.h"
#include "baton_signal.h"
#include "baton_util.h"
#include "membership.h"
#include "processor.h"
#include "sink.h"
#include "sink_bind.h"
#include "wpart_state.h"

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
/* Back-pressure: a partition with this many batches buffered is paused in
 * librdkafka. High on purpose: librdkafka 2.0 hands over a whole fetch
 * response at once (thousands of records per partition), and a paused
 * partition's fetching restarts up to ~1 s after rd_kafka_resume_partitions
 * (its broker thread's idle tick), so pausing at 4 batches stalled every
 * catch-up about once a second (issue 5: throughput 0.56x -> see docs/benchmarks.md). */
#define WORKER_PAUSE_BATCHES 40
/* Standby prefetch: how often a standby drops what the owner has written
 * past (a read of the sink's fence rows), and how often at most when a
 * bound is reached. */
#define STANDBY_TRIM_MS 250
#define STANDBY_TRIM_MIN_MS 20
/* A standby partition the sink has no row for yet, or whose Kafka assign
 * failed, is tried again after this. */
#define STANDBY_RETRY_MS 1000
/* How long after an acquire the standby fetch stays unchanged, at most,
 * while the acquired partitions are fenced and written (handoff_busy). */
#define HANDOFF_BUSY_MS 1000

/* One buffered input record and what the processor made of it. */
typedef struct {
    int64_t offset;
    /* copy: the librdkafka message itself, whose key and value are the
     * output (no copy); destroyed once written or dropped, and always before
     * the consumer is destroyed. NULL for other processors: the message is
     * destroyed as soon as it was processed. */
    rd_kafka_message_t *msg;
    baton_processor_result_t out; /* other processors: the outputs, owned */
} wrec_t;

typedef struct {
    /* Where the partition is in its life (wpart_state.h); changed only by
     * wpart_set_state. It replaces the flags active, fresh, failed,
     * fence_pending and prefetch. */
    wpart_state_t state;
    /* Two flags stay beside the state because they are not states of the
     * ownership but of its Kafka side, and hold across states:
     *   paused: Kafka fetching paused (a full buffer, or failed), in any
     *     state that fetches (prefetching to failed); cleared when fetching
     *     stops or restarts;
     *   unassign: let go, still to be unassigned in Kafka
     *     (kafka_unassign_pending). Still owed when a partition let go is
     *     acquired again in the same poll (then fencing with unassign set):
     *     it is unassigned before it is assigned again. */
    int paused;
    int unassign;
    int64_t epoch;
    int64_t next_offset; /* the sink's next_offset after our last write */
    int64_t expect;      /* next offset we expect from Kafka */
    /* Buffered input records, processed, in offset order; owned here. */
    wrec_t *recs;
    size_t nrecs, cap;
    /* The processor's state for this ownership (NULL for copy, or when the
     * processor keeps none), opened after the fence, closed on release. */
    void *pstate;
    /* When the oldest buffered record was taken into the buffer (monotonic
     * ms: from Kafka, or for one fetched ahead of the fence and held, at the
     * fence); the linger counts from it, and the debug log's taken_ms. */
    int64_t first_ms;
    /* At debug only, for event=batch's created_ms: that record's own Kafka
     * timestamp (wall ms; -1 if none or not known). */
    int64_t first_ts_ms;
    int64_t fenced_ms; /* when the fence returned; 0 once the first record came */
    int64_t retry_at;  /* after a failed write */
    /* fencing: the epoch fence_pending fences with (on_acquired's). */
    int64_t fence_epoch;
    /* prefetching: fetched ahead from pre_offset (the sink's next_offset
     * when the assignment came), the messages held in pre, unprocessed,
     * until the fence says where to start (see on_assigned). */
    int64_t pre_offset, pre_expect;
    rd_kafka_message_t **pre;
    size_t npre, precap;
    size_t pre_bytes; /* keys and values held in pre */
    /* standby: fetched ahead as the partition's named standby, not assigned
     * to us (standby_sync), under the memory bounds. pre_full: a bound was
     * reached: fetching is paused and what arrived past pre_expect was
     * dropped, so fetching must restart at pre_expect (standby_trim, or the
     * fence repositions). */
    int standby, pre_full;
    /* pre_full: fetching resumes once the owner has written up to here
     * (standby_trim): the end of the partition's log as this consumer saw
     * it at the pause, and past the record that did not fit at a bound
     * (else a record bigger than the room left would be fetched and
     * dropped again at every trim). */
    int64_t full_hi;
    /* A standby partition's log end at the last periodic trim (-1: not
     * seen yet): an owner still below it a trim later, and more than a
     * batch behind, is catching up (standby_trim). */
    int64_t trim_hi;
    /* Failed seeks of standby_resume in a row: retried at the next trim,
     * the partition restarted from the fence row after STANDBY_SEEK_TRIES. */
    int seek_fails;
    int inlive; /* p is in worker_t.live */
} wpart_t;

/* A partition whose write the wait hook saw refused STALE, and the epoch
 * that write carried (drops_apply). */
typedef struct {
    int32_t p;
    int64_t epoch;
} drop_t;

typedef struct {
    const baton_worker_conf_t *conf;
    baton_membership_t *m;
    baton_sink_t *sink;
    rd_kafka_t *rk;
    const char *topic;
    wpart_t *parts;
    int32_t nparts;
    /* The partitions not WPART_NONE, still to be unassigned in Kafka or
     * holding records, each listed once (wpart_t.inlive), ascending
     * (live_add inserts in order; live_compact drops the rest), so what a
     * pass builds from it is in the order the sinks require: the loop's
     * passes look at these, not at every
     * partition of the topic (in a 100,000-partition group each pass read
     * a cache line per partition, seven or more passes per loop, and the
     * lag metric looked up and removed ~99,000 series a second that did
     * not exist). */
    int32_t *live;
    size_t nlive, livecap;
    int64_t records_written;
    /* Records received from Kafka, and those of them fetched ahead as a
     * standby (the cost of standby.prefetch: logged at exit). */
    int64_t records_fetched, standby_fetched;
    const baton_processor_t *proc; /* never NULL */
    int copy;                      /* proc is the built-in copy: store inputs as they are */
    /* Set by kafka_error_cb (on this thread, inside rd_kafka_consumer_poll)
     * for an error retrying cannot fix: the loop exits 1. */
    int kafka_fatal;
    int64_t fence_retry_at; /* pending fences failed (busy sink): not before this */
    int64_t lag_ms;         /* when metrics_lag last ran */
    /* The sink binding (sink_bind.h) was checked: once, before the first
     * fence. refused: it did not match; the loop leaves and exits 1. */
    int bind_checked;
    /* The check as the loop starts (bind_early): done (passed or refused),
     * or when to try again. */
    int bind_early_done;
    int64_t bind_early_at;
    int bind_fp_done; /* worker.before_bind_check has had its one chance */
    int refused;
    /* The sink failed with an error retrying cannot fix (a fence or a
     * write: not baton_err_is_retriable, not a refusal): nothing more is
     * written; the loop leaves and exits 1. */
    int sink_fatal;
    /* A graceful leave hands its unwritten records over (leave_hands_over):
     * on_released writes nothing; handed_over counts the records left. */
    int handover;
    int64_t handed_over;
    /* Standby prefetch: the partitions the assignment names us standby for
     * (sb[p], as of membership standby version sb_version), the bytes held
     * ahead over all partitions, and when to trim or retry next. */
    unsigned char *sb;
    int32_t nsb;
    uint64_t sb_version;
    size_t pre_bytes;
    int64_t trim_at, trim_forced_at, sb_retry_at;
    int64_t acquired_ms; /* the last on_acquired (handoff_busy) */
    /* Writes withheld by the commit gate in a row (worker_may_commit):
     * while non-zero, writes go one partition at a time with batches of
     * batch_size >> withheld, so a sink too slow for the self-suspension
     * margin still makes progress; 0 after any write commits. */
    int withheld;
    /* Writing while the membership waits (poll_hook): hook_on while the
     * loop's membership poll runs, outside the worker's own callbacks;
     * in_hook while the hook runs. A write refused STALE in the hook
     * drops its claim after the poll (drops), not inside it. */
    int hook_on, in_hook;
    drop_t *drops;
    size_t ndrops, dropcap;
    int64_t hook_batches; /* batches written by the hook (logged at exit) */
} worker_t;

/* Monotonic microseconds, for latencies. */
static int64_t mono_us(void) { return baton_now_us(); }

static void wrec_release(wrec_t *r) {
    if (r->msg)
        rd_kafka_message_destroy(r->msg);
    r->msg = NULL;
    baton_processor_result_release(&r->out);
}

static void batch_clear(wpart_t *wp) {
    for (size_t i = 0; i < wp->nrecs; i++)
        wrec_release(&wp->recs[i]);
    wp->nrecs = 0;
    wp->first_ms = 0;
}

/* Forgets what was fetched ahead of the fence (pre). */
static void pre_clear(worker_t *w, wpart_t *wp) {
    for (size_t i = 0; i < wp->npre; i++)
        rd_kafka_message_destroy(wp->pre[i]);
    wp->npre = 0;
    w->pre_bytes -= wp->pre_bytes;
    wp->pre_bytes = 0;
}

/* What a held message counts against the standby's memory bounds. */
static size_t msg_bytes(const rd_kafka_message_t *msg) {
    return (msg->payload ? msg->len : 0) + (msg->key ? msg->key_len : 0);
}

/* Drops the first n buffered records (written). The rest keep their order;
 * their age restarts, a good enough bound for the linger. */
static void batch_drop_front(wpart_t *wp, size_t n) {
    if (n >= wp->nrecs) {
        batch_clear(wp);
        return;
    }
    for (size_t i = 0; i < n; i++)
        wrec_release(&wp->recs[i]);
    memmove(wp->recs, wp->recs + n, sizeof(wp->recs[0]) * (wp->nrecs - n));
    wp->nrecs -= n;
    wp->first_ms = baton_now_ms();
    /* The copy processor keeps the message; another's timestamp is gone. */
    if (baton_log_on(BATON_LOG_DEBUG))
        wp->first_ts_ms = wp->recs[0].msg ? rd_kafka_message_timestamp(wp->recs[0].msg, NULL) : -1;
}

static void ensure_parts(worker_t *w) {
    int32_t n = baton_membership_partitions(w->m);
    if (n <= w->nparts)
        return;
    w->parts = xrealloc(w->parts, sizeof(wpart_t) * (size_t)n);
    memset(w->parts + w->nparts, 0, sizeof(wpart_t) * (size_t)(n - w->nparts));
    w->nparts = n;
}

/* Lists p as live (worker_t.live), in order. Only a partition leaving
 * none is added: no pass over live adds one, so none is shifted under it. */
static void live_add(worker_t *w, int32_t p) {
    if (w->parts[p].inlive)
        return;
    if (w->nlive == w->livecap) {
        w->livecap = w->livecap ? 2 * w->livecap : 64;
        w->live = xrealloc(w->live, sizeof(*w->live) * w->livecap);
    }
    size_t lo = 0, hi = w->nlive;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->live[mid] < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(w->live + lo + 1, w->live + lo, sizeof(*w->live) * (w->nlive - lo));
    w->live[lo] = p;
    w->nlive++;
    w->parts[p].inlive = 1;
}

/* Marks p to be unassigned in Kafka by the next kafka_unassign_pending,
 * which looks only at the live list. */
static void unassign_later(worker_t *w, int32_t p) {
    w->parts[p].unassign = 1;
    live_add(w, p);
}

/* Drops from the live list what has nothing left (its lag series goes
 * with it: it is not ours). */
static void live_compact(worker_t *w) {
    size_t k = 0;
    for (size_t i = 0; i < w->nlive; i++) {
        int32_t p = w->live[i];
        const wpart_t *wp = &w->parts[p];
        if (wp->state != WPART_NONE || wp->unassign || wp->nrecs || wp->npre) {
            w->live[k++] = p;
            continue;
        }
        w->parts[p].inlive = 0;
        char label[16];
        snprintf(label, sizeof(label), "%d", p);
        baton_metric_vec_remove(baton_metric_gauge_vec(BATON_M_W_LAG), label);
    }
    w->nlive = k;
}

/* Moves partition p to state `to` for reason why (one word, logged). Every
 * change of a partition's state goes through here and is logged at debug
 * (event=partition_state). A transition the table does not expect
 * (wpart_transition_ok) is also logged at warn, with from and to, and made
 * all the same: the callers go on as they did when the states were flags,
 * so a surprise shows in the log and never crashes the worker. */
static void wpart_set_state(worker_t *w, int32_t p, wpart_state_t to, const char *why) {
    wpart_t *wp = &w->parts[p];
    wpart_state_t from = wp->state;
    if (!wpart_transition_ok(from, to))
        BLOG_WARN("event=partition_state_unexpected partition=%d from=%s to=%s reason=%s", p,
                  wpart_state_name(from), wpart_state_name(to), baton_log_v(why));
    BLOG_DEBUG("event=partition_state partition=%d from=%s to=%s reason=%s", p,
               wpart_state_name(from), wpart_state_name(to), baton_log_v(why));
    wp->state = to;
    if (to != WPART_NONE)
        live_add(w, p);
}

/* Publishes p's epoch (or its absence) and the number of partitions owned. */
static void metrics_owned(worker_t *w, int32_t p) {
    char label[16];
    snprintf(label, sizeof(label), "%d", p);
    if (wpart_owned(w->parts[p].state))
        baton_metric_vec_set(baton_metric_gauge_vec(BATON_M_W_EPOCH), label,
                             (double)w->parts[p].epoch);
    else
        baton_metric_vec_remove(baton_metric_gauge_vec(BATON_M_W_EPOCH), label);
    int owned = 0;
    for (size_t i = 0; i < w->nlive; i++)
        owned += wpart_owned(w->parts[w->live[i]].state);
    baton_metric_set(baton_metric_gauge(BATON_M_W_OWNED), owned);
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

/* rd_kafka_incremental_assign (assign) or _unassign of l; a failure is
 * logged as event (with l's size) and returned. */
static int kafka_incremental(worker_t *w, rd_kafka_topic_partition_list_t *l, int assign,
                             const char *event) {
    rd_kafka_error_t *e =
        assign ? rd_kafka_incremental_assign(w->rk, l) : rd_kafka_incremental_unassign(w->rk, l);
    if (!e)
        return 0;
    BLOG_ERROR("event=%s partitions=%d error=\"%s\"", baton_log_v(event), l->cnt,
               baton_log_q(rd_kafka_error_string(e)));
    rd_kafka_error_destroy(e);
    return -1;
}

/* Unassigns in Kafka, in one call, every partition let go since the last
 * call. Runs before fence_pending, so a partition released and acquired
 * again in one poll is unassigned before it is assigned again. */
static void kafka_unassign_pending(worker_t *w) {
    rd_kafka_topic_partition_list_t *l = NULL;
    for (size_t i = 0; i < w->nlive; i++) {
        int32_t p = w->live[i];
        if (!w->parts[p].unassign)
            continue;
        w->parts[p].unassign = 0;
        if (!l)
            l = rd_kafka_topic_partition_list_new(4);
        rd_kafka_topic_partition_list_add(l, w->topic, p);
    }
    if (!l)
        return;
    kafka_incremental(w, l, 0, "kafka_unassign_failed");
    rd_kafka_topic_partition_list_destroy(l);
}

/* Drops partition p locally: no more fetching, buffered records discarded
 * (the next owner reads them again from the sink's next_offset). why: the
 * state change's reason. */
static void part_deactivate(worker_t *w, int32_t p, const char *why) {
    wpart_t *wp = &w->parts[p];
    if (!wpart_owned(wp->state))
        return;
    /* Unassigned in Kafka after the poll, with every other partition let go
     * in it: each rd_kafka_incremental_unassign is a round trip to
     * librdkafka's main thread, and the partitions we keep wait for them.
     * Meanwhile part_append drops what still arrives (not owned). */
    unassign_later(w, p);
    batch_clear(wp);
    baton_processor_close(w->proc, wp->pstate);
    wp->pstate = NULL;
    wpart_set_state(w, p, WPART_NONE, why);
    if (wp->paused) /* kept across the unassign by librdkafka: see prefetch_stop */
        kafka_pause(w, p, 0);
    metrics_owned(w, p);
}

static void part_fail(worker_t *w, int32_t p, int64_t offset, const char *stage, const char *error);

/* Does the sink's error err of op ("fence", "write") end the worker? A
 * retriable one (BUSY, CONNECTION, TIMEOUT) does not: the caller retries.
 * Any other (IO, INTERNAL, CORRUPT...) would fail the same way forever: it
 * is logged once, naming the sink and the error, and w->sink_fatal makes
 * the loop leave the group and exit 1. */
static int sink_failed_fatally(worker_t *w, const char *op, int err) {
    if (baton_err_is_retriable(err))
        return 0;
    if (!w->sink_fatal)
        BLOG_ERROR("event=sink_fatal sink=%s op=%s error=%s detail=\"%s\" "
                   "action=leave_and_exit",
                   baton_log_v(baton_sink_uri(w->sink)), baton_log_v(op), baton_err_name(err),
                   baton_log_q(baton_sink_errstr(w->sink)));
    w->sink_fatal = 1;
    return 1;
}

/* One partition's batch on its way to the sink: inputs pointing into the
 * buffered records (valid until the records are dropped). */
typedef struct {
    baton_sink_input_t *ins;
    baton_sink_output_t *copies; /* copy: each record is its own single output */
    size_t count;
} wbatch_t;

/* The copy processor's input for a message: its key and value as they are,
 * its one output. */
static void copy_input(const rd_kafka_message_t *msg, baton_sink_input_t *in,
                       baton_sink_output_t *out) {
    out->key = msg->key;
    out->key_len = msg->key ? msg->key_len : 0;
    out->value = msg->payload;
    out->value_len = msg->payload ? msg->len : 0;
    in->offset = msg->offset;
    in->outputs = out;
    in->noutputs = 1;
}

/* Takes the first records of p's buffer: one transaction holds at most
 * --batch-size records, even when a slow or suspended sink let the buffer
 * grow past it. */
static void wbatch_take(const worker_t *w, const wpart_t *wp, wbatch_t *b) {
    size_t max = (size_t)w->conf->batch_size >> (w->withheld < 16 ? w->withheld : 16);
    if (max == 0)
        max = 1;
    b->count = wp->nrecs < max ? wp->nrecs : max;
    b->ins = xmalloc(sizeof(*b->ins) * (b->count + 1));
    b->copies = w->copy ? xmalloc(sizeof(*b->copies) * (b->count + 1)) : NULL;
    for (size_t i = 0; i < b->count; i++) {
        const wrec_t *r = &wp->recs[i];
        b->ins[i].offset = r->offset;
        if (w->copy) {
            copy_input(r->msg, &b->ins[i], &b->copies[i]);
        } else {
            b->ins[i].outputs = r->out.outputs;
            b->ins[i].noutputs = r->out.n;
        }
    }
}

static void wbatch_free(wbatch_t *b) {
    free(b->copies);
    free(b->ins);
}

/* The copy processor's batch of a hot standby's held messages, to go in
 * with the fence (baton_sink_fence_write): the first --batch-size of them,
 * pointing into the messages (valid while they are held). They ascend from
 * pre_offset (pre_hold, standby_trim); should that ever not hold, the batch
 * stops before the first that breaks it (those go through part_append as
 * before) rather than have the sink refuse the whole fence as invalid. */
static void held_take(const worker_t *w, const wpart_t *wp, wbatch_t *b) {
    size_t max = wp->npre < (size_t)w->conf->batch_size ? wp->npre : (size_t)w->conf->batch_size;
    b->ins = xmalloc(sizeof(*b->ins) * (max + 1));
    b->copies = xmalloc(sizeof(*b->copies) * (max + 1));
    int64_t floor = wp->pre_offset;
    for (b->count = 0; b->count < max && wp->pre[b->count]->offset >= floor; b->count++) {
        floor = wp->pre[b->count]->offset + 1;
        copy_input(wp->pre[b->count], &b->ins[b->count], &b->copies[b->count]);
    }
}

/* The sink's answer for p's batch of count records (err: the batch's own
 * result, or the call's error), us the call's duration. Returns err as
 * part_flush does. */
/* How long a failed fence or write waits before its retry. BUSY is a
 * lock: SQLite's write lock held by another process, which the sink's busy
 * handler already waited 250 ms for (or a PostgreSQL lock timeout,
 * serialisation failure or deadlock); the retry comes 5 ms later, after the
 * loop's ZooKeeper events, not pause_ms later. The rolling-restart bench
 * (48 partitions, 6 workers on one SQLite file) saw 250 + 200 ms gaps on
 * partitions that did not move. */
#define SINK_BUSY_RETRY_MS 5
static int64_t sink_retry_ms(int err, int64_t pause_ms) {
    return err == BATON_BUSY ? SINK_BUSY_RETRY_MS : pause_ms;
}

static int part_flush_done(worker_t *w, int32_t p, size_t count, int err, int64_t next,
                           size_t applied, int64_t us) {
    wpart_t *wp = &w->parts[p];
    if (err == BATON_OK) {
        if (w->withheld)
            BLOG_INFO("event=sink_commit_resumed partition=%d after_withheld=%d records=%zu", p,
                      w->withheld, count);
        w->withheld = 0;
        baton_metric_inc(baton_metric_counter(BATON_M_W_BATCHES));
        w->hook_batches += w->in_hook;
        baton_metric_observe(baton_metric_histogram(BATON_M_W_BATCH_SECONDS), (double)us / 1e6);
        baton_metric_add(baton_metric_counter(BATON_M_W_RECORDS), (double)applied);
        if (baton_log_on(BATON_LOG_DEBUG) && wp->nrecs) {
            /* Where a late write's time went: before the loop took its
             * first record (taken_ms less than created_ms: the producer,
             * Kafka or a loop that did not drain), or after (the flush's
             * turn and the commit). */
            BLOG_DEBUG("event=batch partition=%d epoch=%lld records=%zu applied=%zu "
                       "next_offset=%lld commit_us=%lld taken_ms=%lld created_ms=%lld",
                       p, (long long)wp->epoch, count, applied, (long long)next, (long long)us,
                       (long long)(baton_now_ms() - wp->first_ms),
                       (long long)(wp->first_ts_ms >= 0 ? baton_wall_ms() - wp->first_ts_ms : -1));
        }
        wp->next_offset = next;
        if (wp->state == WPART_FENCED)
            wpart_set_state(w, p, WPART_ACTIVE, "first_write");
        w->records_written += (int64_t)applied;
        batch_drop_front(wp, count);
        /* The processor hears that its outputs so far are durable (not while
         * part_fail writes the records before a failure). */
        char perr[512];
        if (wp->state != WPART_FAILED &&
            baton_processor_flush(w->proc, wp->pstate, perr, sizeof(perr)) != BATON_OK)
            part_fail(w, p, next, "flush", perr);
        return BATON_OK;
    }
    if (err == BATON_STALE || err == BATON_UNFENCED) {
        BLOG_WARN("event=write_rejected partition=%d epoch=%lld records=%zu reason=%s", p,
                  (long long)wp->epoch, wp->nrecs, baton_err_name(err));
        baton_metric_inc(baton_metric_counter(BATON_M_W_STALE));
        part_deactivate(w, p, "write_rejected");
        if (w->in_hook) {
            /* Inside the membership's poll: its rows are not ours to
             * change there (drops_apply, once it returns). */
            if (w->ndrops == w->dropcap)
                w->drops = xrealloc(w->drops, sizeof(*w->drops) *
                                                  (w->dropcap = w->dropcap ? 2 * w->dropcap : 8));
            w->drops[w->ndrops].p = p;
            w->drops[w->ndrops++].epoch = wp->epoch;
            return BATON_STALE;
        }
        baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = p};
        baton_membership_drop(w->m, &r);
        return BATON_STALE;
    }
    if (sink_failed_fatally(w, "write", err))
        return err;
    baton_metric_inc(baton_metric_counter(BATON_M_W_BATCH_ERRORS));
    BLOG_WARN("event=write_failed partition=%d error=%s detail=\"%s\" action=retry", p,
              baton_err_name(err), baton_log_q(baton_sink_errstr(w->sink)));
    wp->retry_at = baton_now_ms() + sink_retry_ms(err, 200);
    return err;
}

/* The sink's commit gate (baton_sink_set_commit_gate): the membership's
 * "may write", computed at the moment of the commit. A refusal (the
 * transaction outlasted what was left of the margin) shrinks the next
 * writes (withheld); refusals in a row mean a sink slower than the margin. */
static int worker_may_commit(void *opaque) {
    worker_t *w = opaque;
    if (baton_membership_can_write(w->m))
        return 1;
    w->withheld++;
    if (w->withheld >= 3)
        BLOG_ERROR("event=sink_commits_withheld count=%d hint=\"the sink's transactions outlast "
                   "what is left of the self-suspension margin (2/3 of the session after the "
                   "last ZooKeeper answer): the writes shrink until one commits; a sink this "
                   "slow needs a longer --session-timeout-ms\"",
                   w->withheld);
    return 0;
}

/* Writes p's buffered batch. Returns BATON_OK (or nothing to do), BATON_STALE
 * (p was dropped), or an error with the batch kept: retriable, or fatal with
 * w->sink_fatal set (then nothing more is written). */
static int part_flush(worker_t *w, int32_t p) {
    wpart_t *wp = &w->parts[p];
    if (!wpart_owned(wp->state) || wp->nrecs == 0 || w->sink_fatal)
        return BATON_OK;
    if (!baton_membership_can_write(w->m))
        return BATON_CONNECTION; /* suspended: the session may be gone */
    wbatch_t b;
    wbatch_take(w, wp, &b);
    BATON_FAILPOINT("worker.before_sink_write");
    int64_t next = 0;
    size_t applied = 0;
    int64_t t0 = mono_us();
    int err = baton_sink_write_outputs(w->sink, p, wp->epoch, b.ins, b.count, &next, &applied);
    wbatch_free(&b);
    return part_flush_done(w, p, b.count, err, next, applied, mono_us() - t0);
}

/* Writes the batches of partitions parts[0..n) (ascending) in one sink
 * transaction (baton_sink_write_many: one commit, one fsync, instead of
 * one per partition). */
static void parts_flush(worker_t *w, const int32_t *parts, size_t n) {
    if (n == 1 || w->withheld) {
        /* after a withheld commit: one partition per transaction */
        for (size_t i = 0; i < n; i++)
            part_flush(w, parts[i]);
        return;
    }
    if (!baton_membership_can_write(w->m) || w->sink_fatal)
        return; /* suspended: the session may be gone; or the sink failed for good */
    wbatch_t *wb = xcalloc(n, sizeof(*wb));
    baton_sink_batch_t *sb = xcalloc(n, sizeof(*sb));
    for (size_t i = 0; i < n; i++) {
        wpart_t *wp = &w->parts[parts[i]];
        wbatch_take(w, wp, &wb[i]);
        sb[i] = (baton_sink_batch_t){
            .partition = parts[i], .epoch = wp->epoch, .inputs = wb[i].ins, .ninputs = wb[i].count};
    }
    /* One hit per partition's batch, as when each was its own write (so
     * "=N:stop" still stops before the (N+1)th batch, with it in hand). */
    for (size_t i = 0; i < n; i++)
        BATON_FAILPOINT("worker.before_sink_write");
    int64_t t0 = mono_us();
    int err = baton_sink_write_many(w->sink, sb, n);
    int64_t us = mono_us() - t0;
    for (size_t i = 0; i < n; i++) {
        wbatch_free(&wb[i]);
        part_flush_done(w, parts[i], wb[i].count, err == BATON_OK ? sb[i].result : err,
                        sb[i].next_offset, sb[i].applied, us);
    }
    free(sb);
    free(wb);
}

/* ---- fetching ahead of the fence -------------------------------------------
 * A handoff's new owner learns its partitions from the assignment, then
 * claims them (a ZooKeeper round trip), fences the sink, and only then
 * could it ask Kafka, whose broker may be holding a fetch for the
 * partitions it already has (up to fetch.wait.max.ms) before the new one
 * joins. So on_assigned starts fetching at once, from the sink's
 * next_offset as it stands, and holds the messages, unprocessed, until
 * the fence: a fence at or past that offset keeps them (part_append drops
 * what is below the fence's next_offset), one below it (an operator set
 * the sink back) starts over there. Nothing is processed or written
 * before the fence; the fence stays the only gate. */

/* Stops fetching p ahead: prefetching (or fencing_prefetched) -> none, for
 * reason why; nothing for p in another state. */
static void prefetch_stop(worker_t *w, int32_t p, const char *why) {
    wpart_t *wp = &w->parts[p];
    if (!wpart_prefetched(wp->state))
        return;
    pre_clear(w, wp);
    wpart_set_state(w, p, WPART_NONE, why);
    /* Resumed before the unassign: librdkafka keeps an application pause
     * on the partition across an unassign and a later assign, so one
     * paused here (a standby at its bound, a prefetch at
     * WORKER_PAUSE_BATCHES) would never be fetched again once assigned to
     * us. What arrives meanwhile is dropped (not consuming). */
    if (wp->paused)
        kafka_pause(w, p, 0);
    wp->standby = 0;
    wp->pre_full = 0;
    unassign_later(w, p);
}

static void standby_trim(worker_t *w, int periodic);
static int handoff_busy(const worker_t *w);

/* Whether a standby partition may hold sz more bytes. */
static int standby_room(const worker_t *w, const wpart_t *wp, size_t sz) {
    return wp->pre_bytes + sz <= (size_t)w->conf->standby_prefetch_bytes &&
           w->pre_bytes + sz <= (size_t)w->conf->standby_prefetch_total_bytes;
}

/* p's log end as librdkafka last saw it (its cached high watermark, from
 * the last fetch: no request), or -1. */
static int64_t log_end(const worker_t *w, int32_t p) {
    int64_t lo = -1, hi = -1;
    if (rd_kafka_get_watermark_offsets(w->rk, w->topic, p, &lo, &hi) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return -1;
    return hi;
}

/* Stops fetching standby partition p (paused, what still arrives dropped:
 * pre_full) until its owner has written up to `until` (standby_trim
 * resumes it then). */
static void standby_hold(worker_t *w, int32_t p, int64_t until) {
    wpart_t *wp = &w->parts[p];
    wp->pre_full = 1;
    wp->full_hi = until;
    if (!wp->paused)
        kafka_pause(w, p, 1);
}

/* Holds a message of a partition fetched ahead (takes ownership). Past
 * WORKER_PAUSE_BATCHES batches (a claim that waits behind a slow
 * predecessor), fetching pauses until the fence. */
static void pre_hold(worker_t *w, int32_t p, rd_kafka_message_t *msg) {
    wpart_t *wp = &w->parts[p];
    w->standby_fetched += wp->standby;
    if (msg->offset < wp->pre_expect || wp->pre_full) {
        rd_kafka_message_destroy(msg);
        return;
    }
    size_t sz = msg_bytes(msg);
    if (wp->standby && !standby_room(w, wp, sz)) {
        /* A bound is reached: first drop what the owner has written past
         * (at most every STANDBY_TRIM_MIN_MS, and not while a handoff to
         * us is fenced and first written: the trim reads the sink and its
         * resumes seek in Kafka, see handoff_busy), then, if there is still
         * no room, pause and drop from here on (fetching restarts once
         * the owner has written up to the log's end: standby_trim). */
        if (baton_now_ms() >= w->trim_forced_at + STANDBY_TRIM_MIN_MS && !handoff_busy(w) &&
            !w->in_hook) { /* the trim reads the sink and may seek: not inside a wait */
            w->trim_forced_at = baton_now_ms();
            standby_trim(w, 0);
        }
        if (!standby_room(w, wp, sz)) {
            int64_t hi = log_end(w, p);
            standby_hold(w, p, hi > msg->offset ? hi : msg->offset + 1);
            BLOG_DEBUG("event=standby_prefetch_full partition=%d held=%zu held_bytes=%zu "
                       "total_bytes=%zu next=%lld log_end=%lld",
                       p, wp->npre, wp->pre_bytes, w->pre_bytes, (long long)wp->pre_expect,
                       (long long)wp->full_hi);
            rd_kafka_message_destroy(msg);
            return;
        }
    }
    if (wp->npre == wp->precap) {
        wp->precap = wp->precap ? wp->precap * 2 : 64;
        wp->pre = xrealloc(wp->pre, sizeof(*wp->pre) * wp->precap);
    }
    wp->pre[wp->npre++] = msg;
    wp->pre_bytes += sz;
    w->pre_bytes += sz;
    wp->pre_expect = msg->offset + 1;
    if (!wp->standby && !wp->paused &&
        wp->npre >= (size_t)w->conf->batch_size * WORKER_PAUSE_BATCHES)
        kafka_pause(w, p, 1);
}

static int fence_row_cmp(const void *key, const void *elem) {
    int32_t p = *(const int32_t *)key, q = ((const baton_fence_row_t *)elem)->partition;
    return p < q ? -1 : p > q;
}

/* The membership's on_assigned, called before it claims rs: fetch ahead
 * every partition the sink has a row for (a partition never written
 * starts where its fence says). Best effort: a failed read fetches
 * nothing ahead. */
static void on_assigned(void *opaque, const baton_resource_t *rs, size_t n) {
    worker_t *w = opaque;
    int64_t t0 = mono_us();
    ensure_parts(w);
    /* The fence rows of the partitions that may start, only those, in
     * ascending order (rs need not be). */
    unsigned char *mark = xcalloc((size_t)w->nparts + 1, 1);
    size_t nwant = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t p = rs[i].partition;
        /* unassign: let go in this very poll, not unassigned in Kafka yet */
        if (rs[i].kind == BATON_RESOURCE_PARTITION && p >= 0 && p < w->nparts && !mark[p] &&
            w->parts[p].state == WPART_NONE && !w->parts[p].unassign) {
            mark[p] = 1;
            nwant++;
        }
    }
    int32_t *want = xcalloc(nwant + 1, sizeof(*want));
    for (int32_t p = 0, k = 0; p < w->nparts && (size_t)k < nwant; p++)
        if (mark[p])
            want[k++] = p;
    free(mark);
    baton_fence_row_t *rows = NULL;
    size_t nrows = 0;
    int err = nwant ? baton_sink_fences_of(w->sink, want, nwant, &rows, &nrows) : BATON_OK;
    if (err != BATON_OK || nwant == 0) {
        if (err != BATON_OK)
            BLOG_DEBUG("event=prefetch_skipped error=%s detail=\"%s\"", baton_err_name(err),
                       baton_log_q(baton_sink_errstr(w->sink)));
        free(want);
        return;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)nwant);
    for (size_t i = 0; i < nwant; i++) {
        int32_t p = want[i];
        wpart_t *wp = &w->parts[p];
        const baton_fence_row_t *row =
            nrows ? bsearch(&p, rows, nrows, sizeof(*rows), fence_row_cmp) : NULL;
        if (!row)
            continue;
        wpart_set_state(w, p, WPART_PREFETCHING, "assigned");
        wp->pre_offset = wp->pre_expect = row->next_offset;
        rd_kafka_topic_partition_list_add(l, w->topic, p)->offset = row->next_offset;
    }
    if (l->cnt > 0) {
        if (kafka_incremental(w, l, 1, "prefetch_failed") != 0) {
            for (int i = 0; i < l->cnt; i++)
                wpart_set_state(w, l->elems[i].partition, WPART_NONE, "prefetch_failed");
        } else {
            BLOG_DEBUG("event=prefetch partitions=%d took_us=%lld", l->cnt,
                       (long long)(mono_us() - t0));
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    free(rows);
    free(want);
}

/* ---- standby prefetch -------------------------------------------------------
 * The assignment names, for every partition, the worker that takes it if
 * its owner leaves (member_standby.c). With --standby-prefetch that worker
 * fetches it ahead all along, as Kafka Streams' standby tasks do, so that
 * when the partition moves to it its first write follows the fence at
 * once: no Kafka fetch is on the handoff's path. The held messages are
 * those of prefetching (same state, same fence rule); what the owner has
 * written past (below the sink's next_offset) is dropped every
 * STANDBY_TRIM_MS, and the bytes held are bounded per partition and in
 * total (pre_hold pauses the partition when a bound is reached). */

/* Whether a handoff to us is under way: a partition acquired and not
 * written yet (fencing, or fenced with nothing written). Changes to the
 * standby fetch (Kafka assigns and unassigns, each a round trip to
 * librdkafka's main thread that also rebuilds the next fetch) wait until
 * it is done (at most HANDOFF_BUSY_MS after the last acquire), so they
 * are never on the handoff's path: the coordinator's publish that names
 * new standbys lands right in it. */
static int handoff_busy(const worker_t *w) {
    /* Bounded: a partition with no input stays fenced and unwritten. */
    if (baton_now_ms() - w->acquired_ms >= HANDOFF_BUSY_MS)
        return 0;
    for (size_t i = 0; i < w->nlive; i++) {
        wpart_state_t st = w->parts[w->live[i]].state;
        if (wpart_fencing(st) || st == WPART_FENCED)
            return 1;
    }
    return 0;
}

/* Whether the assignment names us standby for p. */
static int standby_wanted(const worker_t *w, int32_t p) {
    return w->conf->standby_prefetch && p < w->nsb && w->sb[p];
}

/* Starts fetching ahead, from the sink's next_offset, every partition we
 * stand by for that is not fetched yet (and not assigned to us: that is
 * on_assigned's). A partition the sink has no row for yet, or a failed
 * read or assign, is tried again after STANDBY_RETRY_MS. */
static void standby_sync(worker_t *w) {
    if (!w->conf->standby_prefetch)
        return;
    uint64_t v = baton_membership__standby_version(w->m);
    if (w->nsb != w->nparts || v != w->sb_version) {
        w->sb = xrealloc(w->sb, (size_t)w->nparts + 1);
        w->nsb = w->nparts;
        w->sb_version = v;
        baton_membership__standby_partitions(w->m, w->sb, w->nsb);
        w->sb_retry_at = 0;
    }
    int64_t now = baton_now_ms();
    if (now < w->sb_retry_at || handoff_busy(w))
        return;
    int32_t *want = NULL;
    size_t nwant = 0;
    for (int32_t p = 0; p < w->nparts; p++) {
        baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = p};
        if (!w->sb[p] || w->parts[p].state != WPART_NONE || w->parts[p].unassign ||
            baton_membership_assigned(w->m, &r))
            continue;
        if (!want)
            want = xcalloc((size_t)(w->nparts - p), sizeof(*want));
        want[nwant++] = p;
    }
    if (!nwant) {
        /* Nothing to start: the scan (every partition) waits for a change
         * of the standby list (which resets sb_retry_at), or a while. */
        w->sb_retry_at = now + STANDBY_TRIM_MS;
        return;
    }
    baton_fence_row_t *rows = NULL;
    size_t nrows = 0;
    if (baton_sink_fences_of(w->sink, want, nwant, &rows, &nrows) != BATON_OK) {
        w->sb_retry_at = now + STANDBY_RETRY_MS;
        free(want);
        return;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (size_t i = 0; i < nwant; i++) {
        int32_t p = want[i];
        wpart_t *wp = &w->parts[p];
        const baton_fence_row_t *row =
            nrows ? bsearch(&p, rows, nrows, sizeof(*rows), fence_row_cmp) : NULL;
        if (!row) {
            w->sb_retry_at = now + STANDBY_RETRY_MS; /* never written: not yet */
            continue;
        }
        wpart_set_state(w, p, WPART_PREFETCHING, "standby");
        wp->standby = 1;
        wp->pre_full = 0;
        wp->trim_hi = -1;
        wp->pre_offset = wp->pre_expect = row->next_offset;
        rd_kafka_topic_partition_list_add(l, w->topic, p)->offset = row->next_offset;
    }
    if (l->cnt > 0) {
        if (kafka_incremental(w, l, 1, "standby_prefetch_failed") != 0) {
            for (int i = 0; i < l->cnt; i++) {
                w->parts[l->elems[i].partition].standby = 0;
                wpart_set_state(w, l->elems[i].partition, WPART_NONE, "prefetch_failed");
            }
            w->sb_retry_at = now + STANDBY_RETRY_MS;
        } else {
            BLOG_INFO("event=standby_prefetch partitions=%d", l->cnt);
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    free(rows);
    free(want);
}

/* Restarts fetching standby partition p at offset (it was paused, and
 * what arrived past pre_expect dropped). A failed seek leaves it paused for
 * the next trim to try again; after STANDBY_SEEK_TRIES in a row it stops
 * fetching it ahead, and standby_sync starts it again from the sink's
 * next_offset. */
#define STANDBY_SEEK_TRIES 3
static void standby_resume(worker_t *w, int32_t p, int64_t offset) {
    wpart_t *wp = &w->parts[p];
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, w->topic, p)->offset = offset;
    rd_kafka_error_t *e = rd_kafka_seek_partitions(w->rk, l, 1000);
    int err = e != NULL || l->elems[0].err != RD_KAFKA_RESP_ERR_NO_ERROR;
    if (e) {
        BLOG_WARN("event=standby_prefetch_seek_failed partition=%d error=\"%s\"", p,
                  baton_log_q(rd_kafka_error_string(e)));
        rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        /* Still paused at its bound: the next trim tries again (the mock
         * cluster's seek sometimes times out); after a few, start over. */
        if (++wp->seek_fails >= STANDBY_SEEK_TRIES) {
            wp->seek_fails = 0;
            prefetch_stop(w, p, "standby_seek_failed");
        }
        return;
    }
    wp->seek_fails = 0;
    wp->pre_full = 0;
    wp->trim_hi = -1;
    wp->pre_expect = offset;
    if (wp->paused)
        kafka_pause(w, p, 0);
    BLOG_DEBUG("event=standby_prefetch_resumed partition=%d from=%lld held=%zu held_bytes=%zu", p,
               (long long)offset, wp->npre, wp->pre_bytes);
}

/* Drops, from every partition fetched ahead, what the owner has written
 * past (offsets below the sink's next_offset: useless at the fence), and
 * resumes a standby partition paused (pre_full) once its owner has written
 * up to full_hi, which leaves nothing of it held, from the owner's
 * next_offset, unless the bound over all partitions is still reached.
 *
 * An owner catching up on a backlog (after an outage, or in a throughput
 * run) writes faster than the log grows, and a standby fetching ahead of
 * it read every record a second time right behind it: 2.0 records read
 * per record written, 3 workers at 0.78-0.82 of the plain consumer's
 * throughput against 1.15 with prefetch off (bench/run.sh throughput,
 * 2026-12-07/08). Held records only spare the new owner a fetch at its
 * fence, and behind a backlog that fetch is answered at once. So at a
 * periodic trim a standby partition whose owner is still below the log
 * end of the trim before, and more than --batch-size records behind the
 * log end now, is paused (standby_hold) until the owner has written up to
 * that end; it keeps what it holds meanwhile. A bound is reached behind
 * an owner that far behind, and waits the same way. An owner that keeps up
 * (a linger and a commit behind) does not pause its standbys; one stalled
 * past a trim and more than a batch behind does, and a handoff to the
 * standby then fetches at its fence. The log's end is librdkafka's cached
 * high watermark: where the log ends in a transaction marker (or aborted
 * records) the owner's next_offset stays below it, and the standby waits
 * for the partition's next records. */
static void standby_trim(worker_t *w, int periodic) {
    int32_t *held = NULL;
    size_t nheld = 0;
    for (size_t i = 0; i < w->nlive; i++) {
        int32_t p = w->live[i];
        if (w->parts[p].state != WPART_PREFETCHING)
            continue;
        if (!held)
            held = xcalloc(w->nlive - i, sizeof(*held));
        held[nheld++] = p;
    }
    if (!nheld)
        return;
    baton_fence_row_t *rows = NULL;
    size_t nrows = 0;
    int err = baton_sink_fences_of(w->sink, held, nheld, &rows, &nrows);
    free(held);
    if (err != BATON_OK)
        return;
    for (size_t i = 0; i < nrows; i++) {
        int32_t p = rows[i].partition;
        if (p < 0 || p >= w->nparts || w->parts[p].state != WPART_PREFETCHING)
            continue;
        wpart_t *wp = &w->parts[p];
        int64_t next = rows[i].next_offset;
        size_t k = 0, bytes = 0;
        while (k < wp->npre && wp->pre[k]->offset < next) {
            bytes += msg_bytes(wp->pre[k]);
            rd_kafka_message_destroy(wp->pre[k++]);
        }
        if (k) {
            memmove(wp->pre, wp->pre + k, sizeof(*wp->pre) * (wp->npre - k));
            wp->npre -= k;
            wp->pre_bytes -= bytes;
            w->pre_bytes -= bytes;
        }
        /* Held: everything in [pre_offset, pre_expect). Past what we
         * fetched, the owner's next_offset is where we start to hold. */
        if (next > wp->pre_offset)
            wp->pre_offset = next;
        if (next > wp->pre_expect)
            wp->pre_expect = next;
        if (!periodic || !wp->standby || wp->pre_full)
            continue;
        int64_t hi = log_end(w, p);
        if (wp->trim_hi >= 0 && next < wp->trim_hi && hi - next > w->conf->batch_size) {
            standby_hold(w, p, hi);
            BLOG_DEBUG("event=standby_prefetch_lagging partition=%d owner_next=%lld log_end=%lld "
                       "held=%zu held_bytes=%zu",
                       p, (long long)next, (long long)hi, wp->npre, wp->pre_bytes);
        }
        wp->trim_hi = hi;
    }
    free(rows);
    for (size_t i = 0; i < w->nlive; i++) {
        int32_t p = w->live[i];
        wpart_t *wp = &w->parts[p];
        if (wp->state == WPART_PREFETCHING && wp->pre_full && wp->pre_offset >= wp->full_hi &&
            w->pre_bytes < (size_t)w->conf->standby_prefetch_total_bytes)
            standby_resume(w, p, wp->pre_expect);
    }
}

/* Stops fetching ahead what is no longer assigned to us (and was not
 * acquired: on_released takes fencing_prefetched back to prefetching),
 * unless we stand by for it; a standby partition that became assigned
 * (promoted, or named by the coordinator) is an ordinary prefetch now. */
static void prefetch_check(worker_t *w) {
    int busy = -1; /* handoff_busy, computed when first needed */
    for (size_t i = 0; i < w->nlive; i++) {
        int32_t p = w->live[i];
        baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = p};
        if (w->parts[p].state != WPART_PREFETCHING)
            continue;
        if (baton_membership_assigned(w->m, &r))
            w->parts[p].standby = 0;
        else if (standby_wanted(w, p)) {
            if (!w->parts[p].standby)
                w->parts[p].trim_hi = -1;
            w->parts[p].standby = 1;
        } else if (w->parts[p].standby && (busy < 0 ? (busy = handoff_busy(w)) : busy))
            continue; /* no longer a standby's: stopped once our handoff is done */
        else
            prefetch_stop(w, p, "not_assigned");
    }
    int64_t now = baton_now_ms();
    if (w->conf->standby_prefetch && now >= w->trim_at && !handoff_busy(w)) {
        w->trim_at = now + STANDBY_TRIM_MS;
        standby_trim(w, 1);
    }
}

/* on_acquired only notes the epoch: the fence itself runs in
 * fence_pending, after the membership's poll, for every partition acquired
 * in that poll at once (one transaction, one fsync, instead of one each:
 * a cold start or a failover acquires many together). Deferring it is
 * safe: nothing is read or written for p until its fence returned
 * next_offset (the partition is not owned and not assigned in Kafka), the
 * sink refuses a write at an epoch it was not fenced with (UNFENCED), and a
 * fence that comes back STALE drops the claim as on_acquired's STALE did.
 * A release before the fence just forgets it (on_released). */
static int on_acquired(void *opaque, const baton_resource_t *r, int64_t epoch) {
    worker_t *w = opaque;
    if (r->kind != BATON_RESOURCE_PARTITION)
        return BATON_OK; /* never assigned: the worker registers with no keys */
    int32_t p = r->partition;
    ensure_parts(w);
    wpart_set_state(
        w, p, w->parts[p].state == WPART_PREFETCHING ? WPART_FENCING_PREFETCHED : WPART_FENCING,
        "acquired");
    w->parts[p].fence_epoch = epoch;
    w->acquired_ms = baton_now_ms();
    return BATON_OK;
}

/* Starts consuming p, fenced at epoch with the sink's next_offset (the
 * Kafka assign is done by the caller, for every partition at once). */
static void part_activate(worker_t *w, int32_t p, int64_t epoch, int64_t next, int64_t fence_us) {
    char errstr[512];
    wpart_t *wp = &w->parts[p];
    batch_clear(wp);
    wpart_set_state(w, p, WPART_FENCED, "fenced");
    wp->paused = 0;
    wp->epoch = epoch;
    wp->next_offset = next;
    wp->expect = next;
    wp->fenced_ms = baton_now_ms();
    baton_processor_close(w->proc, wp->pstate);
    wp->pstate = NULL;
    metrics_owned(w, p);
    BLOG_INFO("event=fenced partition=%d epoch=%lld next_offset=%lld fence_us=%lld", p,
              (long long)epoch, (long long)next, (long long)fence_us);
    /* One processor state per ownership. A failed init fails the partition
     * at next_offset, like a failed record: we keep the claim (it is ours;
     * fenced) but consume nothing. */
    if (!w->copy &&
        baton_processor_open(w->proc, p, epoch, &wp->pstate, errstr, sizeof(errstr)) != BATON_OK)
        part_fail(w, p, next, "init", errstr);
}

static void part_append(worker_t *w, rd_kafka_message_t *msg);

/* One binding check (sink_bind.h); a refusal (BATON_CONFLICT) is logged
 * and sets w->refused. The failpoint worker.before_bind_check fires before
 * the first one only (bind_early's, usually). */
static int bind_check(worker_t *w, char *errstr, size_t n) {
    if (!w->bind_fp_done) {
        w->bind_fp_done = 1;
        BATON_FAILPOINT("worker.before_bind_check");
    }
    baton_zk_t *zk = baton_membership__zk(w->m);
    int err = zk ? baton_sink_bind_check(zk, w->conf->root ? w->conf->root : BATON_DEFAULT_ROOT,
                                         w->conf->group, w->sink, w->conf->id, errstr, n)
                 : baton_seterr(errstr, n, BATON_CONNECTION, "no ZooKeeper session");
    if (err == BATON_CONFLICT) {
        BLOG_ERROR("event=sink_bind_refused error=\"%s\" action=leave_and_exit",
                   baton_log_q(errstr));
        w->refused = 1;
    }
    return err;
}

/* Before the first fence: is our sink the group's, and is the group the
 * one our sink serves (sink_bind.h)? Binds them if the group has no sink
 * yet. Returns 1 when fencing may go on; 0 to wait (a ZooKeeper or sink
 * error: retried) or, with w->refused set, never. */
static int bind_ready(worker_t *w) {
    if (w->bind_checked)
        return 1;
    char errstr[1024];
    int err = bind_check(w, errstr, sizeof(errstr));
    if (err == BATON_OK) {
        w->bind_checked = 1;
        return 1;
    }
    if (err == BATON_CONFLICT)
        return 0;
    BLOG_WARN("event=sink_bind_check_failed error=%s detail=\"%s\" action=retry",
              baton_err_name(err), baton_log_q(errstr));
    w->fence_retry_at = baton_now_ms() + 200;
    return 0;
}

/* As the run loop starts: opens the sink and checks its binding while
 * nothing waits on them (a restarted worker's first fence paid for both:
 * acquired to fenced 3-47 ms, median 8, in a rolling restart; 1-11,
 * median 6, now), and refuses a wrong sink before anything is assigned.
 * A passing error is tried again each second until one check passes. It
 * does not stand for the check before the first fence (bind_ready), which
 * reads the binding again: a `batonctl sink rebind` may land in between. */
static void bind_early(worker_t *w) {
    if (w->bind_early_done || w->bind_checked || w->refused || baton_now_ms() < w->bind_early_at)
        return;
    char errstr[1024];
    int err = bind_check(w, errstr, sizeof(errstr));
    if (err == BATON_OK || err == BATON_CONFLICT) {
        w->bind_early_done = 1;
        return;
    }
    /* The first failure at warn (a worker with nothing assigned would show
     * nothing else), the retries at debug. */
    if (!w->bind_early_at)
        BLOG_WARN("event=sink_bind_check_failed when=start error=%s detail=\"%s\" action=retry",
                  baton_err_name(err), baton_log_q(errstr));
    else
        BLOG_DEBUG("event=sink_bind_check_failed when=start error=%s detail=\"%s\" action=retry",
                   baton_err_name(err), baton_log_q(errstr));
    w->bind_early_at = baton_now_ms() + 1000;
}

/* Whether records fetched ahead (a hot standby's, or an on_assigned
 * prefetch's) go in with their partition's fence: copy only (another
 * processor would process records the fence then skips), and not while
 * writes are refused or the commit gate refuses (withheld: the gate would
 * roll back the fences with them, which alone are never gated). */
static int fence_takes_held(const worker_t *w) {
    return w->copy && !w->withheld && baton_membership_can_write(w->m);
}

/* Whether fence_pending has a partition fetched ahead to fence now whose
 * held records would go in with its fence. */
static int fence_waiting(const worker_t *w) {
    if (w->fence_retry_at > baton_now_ms() || w->sink_fatal || w->refused || !w->bind_checked ||
        !fence_takes_held(w))
        return 0;
    for (size_t i = 0; i < w->nlive; i++)
        if (w->parts[w->live[i]].state == WPART_FENCING_PREFETCHED)
            return 1;
    return 0;
}

/* Fences every partition acquired since the last call, in one sink
 * transaction (with the first batch of those fetched ahead:
 * baton_sink_fence_write), then assigns them in Kafka together. A stale fence drops the
 * claim (a newer owner exists); a transaction that failed retriably (a busy
 * sink) is retried after 100 ms, one that failed otherwise ends the worker
 * (sink_failed_fatally); a partition whose epoch is no longer valid (we
 * stopped hearing from ZooKeeper) waits until it is valid again or is
 * released. */
static void fence_pending(worker_t *w) {
    if (w->fence_retry_at > baton_now_ms() || w->sink_fatal || w->refused)
        return;
    int32_t n = 0;
    for (size_t i = 0; i < w->nlive; i++)
        n += wpart_fencing(w->parts[w->live[i]].state);
    if (n == 0 || !bind_ready(w))
        return;
    baton_sink_fence_t *f = xcalloc((size_t)n, sizeof(*f));
    wbatch_t *held = xcalloc((size_t)n, sizeof(*held));
    int takes_held = fence_takes_held(w);
    int32_t k = 0;
    for (size_t i = 0; i < w->nlive && k < n; i++) {
        int32_t p = w->live[i];
        wpart_t *wp = &w->parts[p];
        baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = p};
        if (!wpart_fencing(wp->state) || !baton_epoch_valid(w->m, &r, wp->fence_epoch))
            continue;
        f[k] = (baton_sink_fence_t){.partition = p, .epoch = wp->fence_epoch};
        if (takes_held && wp->state == WPART_FENCING_PREFETCHED && wp->npre > 0 &&
            wp->pre_offset >= 0) {
            held_take(w, wp, &held[k]);
            f[k].from = wp->pre_offset;
            f[k].inputs = held[k].ins;
            f[k].ninputs = held[k].count;
        }
        k++;
    }
    if (k > 0) {
        BATON_FAILPOINT("worker.before_fence");
        /* A first batch going in with its fence is a write decided, the
         * sink not yet called, like any other (part_flush's point). */
        for (int32_t i = 0; i < k; i++)
            if (f[i].ninputs)
                BATON_FAILPOINT("worker.before_sink_write");
        int64_t t0 = mono_us();
        int err = baton_sink_fence_write(w->sink, f, (size_t)k);
        int64_t us = mono_us() - t0;
        if (err == BATON_CONFLICT) {
            /* The sink serves another group of our name (sink.h). */
            BLOG_ERROR("event=sink_bind_refused error=\"%s\" action=leave_and_exit",
                       baton_log_q(baton_sink_errstr(w->sink)));
            w->refused = 1;
        } else if (err != BATON_OK) {
            /* Fatal (sink_fatal): the loop leaves and exits 1. */
            if (!sink_failed_fatally(w, "fence", err)) {
                BLOG_WARN("event=fence_failed partitions=%d error=%s detail=\"%s\" action=retry", k,
                          baton_err_name(err), baton_log_q(baton_sink_errstr(w->sink)));
                w->fence_retry_at = baton_now_ms() + sink_retry_ms(err, 100);
            }
        } else {
            rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(k);
            rd_kafka_topic_partition_list_t *ul = NULL;
            for (int32_t i = 0; i < k; i++) {
                int32_t p = f[i].partition;
                int64_t epoch = f[i].epoch, next = f[i].fenced_next;
                wpart_t *wp = &w->parts[p];
                int prefetched = wp->state == WPART_FENCING_PREFETCHED;
                if (f[i].result == BATON_STALE) {
                    BLOG_WARN("event=fence_failed partition=%d epoch=%lld error=STALE", p,
                              (long long)epoch);
                    baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = p};
                    baton_membership_drop(w->m, &r);
                    if (prefetched)
                        prefetch_stop(w, p, "stale_fence");
                    else
                        wpart_set_state(w, p, WPART_NONE, "stale_fence");
                    continue;
                }
                if (prefetched && next >= wp->pre_offset) {
                    /* Fetched ahead from where the fence starts, or before:
                     * keep fetching; what was held goes through part_append
                     * now, which drops what is below next_offset. Fetching
                     * goes on from pre_expect, unless a standby's bound
                     * dropped what came after it (pre_full): then Kafka is
                     * sent to max(pre_expect, next_offset). A fence past
                     * everything fetched is not repositioned: what lies
                     * between is usually fetched already (queued locally
                     * or in flight), and part_append drops it faster than
                     * a new assign starts a fetch. */
                    int64_t from = wp->pre_expect > next ? wp->pre_expect : next;
                    int reposition = wp->pre_full;
                    if (next > wp->pre_expect)
                        BLOG_INFO("event=prefetch_discarded partition=%d from=%lld "
                                  "next_offset=%lld held=%zu reason=fence_ahead",
                                  p, (long long)wp->pre_offset, (long long)next, wp->npre);
                    if (wp->paused)
                        kafka_pause(w, p, 0);
                    part_activate(w, p, epoch, next, us);
                    size_t npre = wp->npre, used = 0;
                    for (size_t j = 0; j < npre; j++)
                        used += wp->pre[j]->offset >= next;
                    BLOG_DEBUG("event=prefetch_used partition=%d held=%zu used=%zu from=%lld "
                               "next_offset=%lld written_with_fence=%zu",
                               p, npre, used, (long long)wp->pre_offset, (long long)next,
                               f[i].written ? f[i].applied : 0);
                    wp->npre = 0;
                    w->pre_bytes -= wp->pre_bytes;
                    wp->pre_bytes = 0;
                    wp->standby = wp->pre_full = 0;
                    for (size_t j = 0; j < npre; j++)
                        part_append(w, wp->pre[j]);
                    /* The first of them went in with the fence: they are
                     * the first applied ones buffered now. */
                    if (f[i].written && f[i].applied > 0)
                        part_flush_done(w, p, f[i].applied, BATON_OK, f[i].next_offset,
                                        f[i].applied, us);
                    if (reposition) {
                        if (!ul)
                            ul = rd_kafka_topic_partition_list_new(4);
                        rd_kafka_topic_partition_list_add(ul, w->topic, p);
                        rd_kafka_topic_partition_list_add(l, w->topic, p)->offset = from;
                    }
                    continue;
                }
                if (prefetched) {
                    /* The sink went back below where we fetched from. */
                    BLOG_INFO("event=prefetch_discarded partition=%d from=%lld next_offset=%lld "
                              "reason=fence_behind",
                              p, (long long)wp->pre_offset, (long long)next);
                    pre_clear(w, wp);
                    wp->standby = wp->pre_full = 0;
                    if (wp->paused)
                        kafka_pause(w, p, 0);
                    wp->paused = 0;
                    if (!ul)
                        ul = rd_kafka_topic_partition_list_new(4);
                    rd_kafka_topic_partition_list_add(ul, w->topic, p);
                }
                rd_kafka_topic_partition_list_add(l, w->topic, p)->offset = next;
                part_activate(w, p, epoch, next, us);
            }
            if (ul) {
                kafka_incremental(w, ul, 0, "kafka_unassign_failed");
                rd_kafka_topic_partition_list_destroy(ul);
            }
            if (l->cnt > 0)
                kafka_incremental(w, l, 1, "kafka_assign_failed");
            rd_kafka_topic_partition_list_destroy(l);
        }
    }
    for (int32_t i = 0; i < k; i++)
        wbatch_free(&held[i]);
    free(held);
    free(f);
}

/* Writes, in one transaction, the buffered batches of the partitions we
 * still hold for which keep(w, r) is 0. */
static void flush_unless(worker_t *w,
                         int (*keep)(const baton_membership_t *, const baton_resource_t *)) {
    int32_t *parts = xmalloc(sizeof(int32_t) * (w->nlive + 1));
    size_t n = 0;
    for (size_t i = 0; i < w->nlive; i++) {
        int32_t q = w->live[i];
        baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = q};
        if (wpart_consuming(w->parts[q].state) && w->parts[q].nrecs > 0 && !keep(w->m, &r))
            parts[n++] = q;
    }
    if (n > 0)
        parts_flush(w, parts, n);
    free(parts);
}

/* A rebalance's revokes, from the first one's on_released: the batches of
 * the partitions the assignment no longer gives us, in one transaction
 * (the ones kept are not written early). */
static void flush_unassigned(worker_t *w) { flush_unless(w, baton_membership_assigned); }

/* A hot leave's first release of a partition no standby holds ahead: the
 * batches of every such partition, in one transaction (the others are
 * handed over). */
static void flush_uncovered(worker_t *w) { flush_unless(w, baton_membership__notice_covers); }

static void flush_due(worker_t *w, int force);

/* Whether a graceful leave hands over what it read and has not written
 * instead of writing it: with standby.prefetch on, for each partition a
 * standby subscribed to our release notices (standby.notice) holds ahead
 * (its HLD named it: baton_membership__notice_covers). They hear the
 * notice at once, hold those records already (they fetch what we fetch),
 * and write them in their fence's transaction: the moved partitions are
 * written again one fsync after the notice, where our flush put a
 * transaction (behind the file's other writers) before it and the
 * successors then waited for the producer's next record. The partitions
 * no subscriber holds (a cold standby's, one not subscribed yet, none
 * named) are written by us as usual (on_released). Nothing is lost either
 * way: a successor starts at the sink's next_offset, and one that does
 * not hold them (a bound that dropped them, a successor other than the
 * standby) reads them again from Kafka. Returns how many of our
 * partitions would be handed over now. */
static size_t leave_hands_over(worker_t *w) {
    size_t n = 0;
    if (!w->conf->standby_prefetch || baton_membership__notice_subscribers(w->m) == 0)
        return 0;
    for (size_t i = 0; i < w->nlive; i++) {
        baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = w->live[i]};
        n += wpart_owned(w->parts[w->live[i]].state) && baton_membership__notice_covers(w->m, &r);
    }
    return n;
}

static void on_released(void *opaque, const baton_resource_t *r, baton_release_reason_t reason) {
    worker_t *w = opaque;
    if (r->kind != BATON_RESOURCE_PARTITION)
        return;
    int32_t p = r->partition;
    if (p >= w->nparts)
        return;
    wpart_state_t st = w->parts[p].state;
    const char *why = baton_release_reason_name(reason);
    if (wpart_fencing(st)) /* acquired and let go before its fence */
        wpart_set_state(w, p, st == WPART_FENCING_PREFETCHED ? WPART_PREFETCHING : WPART_NONE,
                        "released_before_fence");
    if (!wpart_owned(st))
        return;
    wpart_set_state(w, p, WPART_RELEASING, why);
    /* A refused sink serves another group: nothing more goes to it (a
     * refusal by a later fence finds earlier partitions active). */
    if (w->refused)
        reason = BATON_RELEASE_LOST;
    /* A hot leave hands over what it has not written: its standbys hold
     * it, and write it with their fences (leave_hands_over). Nothing is
     * written here then, as for a lost partition. */
    size_t handed = 0;
    int handover =
        reason == BATON_RELEASE_LEAVE && w->handover && baton_membership__notice_covers(w->m, r);
    if (handover) {
        handed = w->parts[p].nrecs;
        w->handed_over += (int64_t)handed;
        reason = BATON_RELEASE_LOST;
    }
    /* A leave releases them all: write every batch in one transaction
     * (a hot leave: every batch it does not hand over). A rebalance's
     * revokes come together (the member deletes their claims in one multi
     * after the last of them): at the first, the batches of every
     * partition we are letting go of, in one transaction. */
    if (reason == BATON_RELEASE_LEAVE && !w->sink_fatal) {
        if (w->handover)
            flush_uncovered(w);
        else
            flush_due(w, 1);
    }
    if (reason == BATON_RELEASE_REVOKED && !w->sink_fatal)
        flush_unassigned(w);
    if (reason != BATON_RELEASE_LOST) {
        /* Hand over cleanly: what we read is written before the claim goes,
         * so the next owner starts exactly where we stopped. A failure here
         * loses nothing: the next owner reads from the sink's next_offset. */
        for (int failures = 0;
             failures < 5 && wpart_owned(w->parts[p].state) && w->parts[p].nrecs > 0;) {
            int err = part_flush(w, p);
            if (err == BATON_STALE || w->sink_fatal)
                break;
            if (err != BATON_OK) {
                failures++;
                baton_sleep_ms(sink_retry_ms(err, 100)); /* BUSY: waited in the sink */
            }
        }
    }
    BLOG_INFO("event=revoked partition=%d epoch=%lld reason=%s next_offset=%lld handover=%d "
              "handed_over=%zu",
              p, (long long)w->parts[p].epoch, baton_log_v(why), (long long)w->parts[p].next_offset,
              handover, handed);
    part_deactivate(w, p, "released");
}

/* The processor failed on partition p at offset (stage "init", "process"
 * or "flush"). The partition fails loudly and stops, and the record is
 * never skipped:
 *   - event=processor_error names the partition, the offset and the error;
 *   - the buffered records before offset were processed fine: they are
 *     written (bounded retries; if that fails they are dropped and read
 *     again later), so the sink's next_offset lands exactly on the failed
 *     record; the failed record's outputs were discarded by
 *     baton_processor_apply;
 *   - fetching stops and nothing more is processed or written, but the
 *     claim is kept: releasing it would only move the poison record to
 *     another worker that fails the same way (or, with an exit, take every
 *     other partition of this worker down with it, fleet-wide). The
 *     partition resumes at next_offset when it is owned again: after a
 *     restart of this worker, or a revoke (drain, rebalance).
 * Runs on the worker's thread; may block for the bounded flush. */
static void part_fail(worker_t *w, int32_t p, int64_t offset, const char *stage,
                      const char *error) {
    wpart_t *wp = &w->parts[p];
    wpart_set_state(w, p, WPART_FAILED, "processor_error");
    BLOG_ERROR("event=processor_error partition=%d offset=%lld epoch=%lld processor=%s stage=%s "
               "error=\"%s\"",
               p, (long long)offset, (long long)wp->epoch,
               baton_log_v(baton_processor_name(w->proc)), baton_log_v(stage),
               baton_log_q(error ? error : ""));
    /* Keep only the records before the failure, then write them. */
    size_t keep = 0;
    while (keep < wp->nrecs && wp->recs[keep].offset < offset)
        keep++;
    for (size_t i = keep; i < wp->nrecs; i++)
        wrec_release(&wp->recs[i]);
    wp->nrecs = keep;
    for (int failures = 0; failures < 5 && wpart_owned(wp->state) && wp->nrecs > 0;) {
        int err = part_flush(w, p);
        if (err == BATON_STALE || w->sink_fatal)
            break;
        if (err != BATON_OK) {
            failures++;
            baton_sleep_ms(sink_retry_ms(err, 100));
        }
    }
    if (!wpart_owned(wp->state))
        return; /* a newer owner fenced us: it is theirs now */
    batch_clear(wp);
    if (!wp->paused)
        kafka_pause(w, p, 1);
    baton_processor_close(w->proc, wp->pstate);
    wp->pstate = NULL;
    BLOG_ERROR(
        "event=partition_stopped partition=%d epoch=%lld next_offset=%lld reason=processor_error "
        "action=\"fix the processor, its config or the record, then restart this worker; "
        "it resumes at next_offset\"",
        p, (long long)wp->epoch, (long long)wp->next_offset);
}

/* Applies the processor to one record and buffers its outputs; takes
 * ownership of msg. The default processor is `copy`: output key and value
 * equal the input's, so the message itself is the output (no copy, no
 * call). Any other processor runs here, once per record, so a batch that
 * must be retried is written again without being processed again. */
static void part_append(worker_t *w, rd_kafka_message_t *msg) {
    int32_t p = msg->partition;
    if (p >= 0 && p < w->nparts && wpart_prefetched(w->parts[p].state)) {
        pre_hold(w, p, msg);
        return;
    }
    if (p < 0 || p >= w->nparts || !wpart_consuming(w->parts[p].state) ||
        msg->offset < w->parts[p].expect) {
        /* fetched before we let it go, or already buffered or applied, or
         * the partition is stopped after a processor error */
        rd_kafka_message_destroy(msg);
        return;
    }
    wpart_t *wp = &w->parts[p];
    if (wp->fenced_ms) {
        /* The handoff's last leg: Kafka's first fetch for the partition. */
        BLOG_DEBUG("event=first_record partition=%d offset=%lld since_fence_ms=%lld", p,
                   (long long)msg->offset, (long long)(baton_now_ms() - wp->fenced_ms));
        wp->fenced_ms = 0;
    }
    if (msg->offset > wp->expect)
        BLOG_DEBUG("event=offset_gap partition=%d expected=%lld got=%lld", p, (long long)wp->expect,
                   (long long)msg->offset);
    wrec_t rec = {.offset = msg->offset};
    /* At debug, event=batch's created_ms (taken before a processor's
     * message is destroyed). */
    int64_t ts =
        !wp->nrecs && baton_log_on(BATON_LOG_DEBUG) ? rd_kafka_message_timestamp(msg, NULL) : -1;
    if (w->copy) {
        rec.msg = msg;
    } else {
        baton_processor_record_t in = {
            .partition = p,
            .offset = msg->offset,
            .timestamp_ms = rd_kafka_message_timestamp(msg, NULL),
            .key = msg->key,
            .key_len = msg->key ? msg->key_len : 0,
            .value = msg->payload,
            .value_len = msg->payload ? msg->len : 0,
        };
        char errstr[512];
        int err = baton_processor_apply(w->proc, wp->pstate, &in, &rec.out, errstr, sizeof(errstr));
        rd_kafka_message_destroy(msg);
        if (err != BATON_OK) {
            part_fail(w, p, rec.offset, "process", errstr);
            return;
        }
    }
    if (wp->nrecs == wp->cap) {
        wp->cap = wp->cap ? wp->cap * 2 : 64;
        wp->recs = xrealloc(wp->recs, sizeof(*wp->recs) * wp->cap);
    }
    if (!wp->nrecs) {
        wp->first_ms = baton_now_ms();
        wp->first_ts_ms = ts;
    }
    wp->recs[wp->nrecs++] = rec;
    wp->expect = rec.offset + 1;
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

/* librdkafka's error callback; runs on the worker's thread (the main queue
 * is forwarded to the consumer queue, served by rd_kafka_consumer_poll).
 * librdkafka retries every connection error forever, a TLS handshake or
 * SASL failure included: a broker whose certificate does not verify (wrong
 * ssl.ca.location, a name that does not match --brokers) or credentials it
 * refuses will not get better by retrying, and a worker that keeps its
 * claims while it cannot read would stall its partitions silently. So those
 * fail closed: event=kafka_fatal and exit 1, the claims go with the session.
 * Other errors (a broker down, a refused connection) stay retriable. The
 * reason is librdkafka's text; it never holds a setting's value. */
static void kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    worker_t *w = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char fatal[512];
        err = rd_kafka_fatal_error(rk, fatal, sizeof(fatal));
        reason = fatal;
        BLOG_ERROR("event=kafka_fatal error=%s reason=\"%s\" action=exit", rd_kafka_err2name(err),
                   baton_log_q(reason));
        w->kafka_fatal = 1;
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__SSL || err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
        if (!w->kafka_fatal)
            BLOG_ERROR("event=kafka_fatal error=%s reason=\"%s\" hint=\"%s\" action=exit",
                       rd_kafka_err2name(err), baton_log_q(reason),
                       err == RD_KAFKA_RESP_ERR__SSL
                           ? "check kafka ssl.ca.location and that the broker certificate names "
                             "the host in --brokers"
                           : "check the kafka sasl.* settings");
        w->kafka_fatal = 1;
        return;
    }
    BLOG_WARN("event=kafka_error error=%s reason=\"%s\" action=retry", rd_kafka_err2name(err),
              baton_log_q(reason));
}

static rd_kafka_t *kafka_new(worker_t *w, const baton_worker_conf_t *conf, char *errstr, size_t n) {
    if (bootstrap_check(conf->brokers, errstr, n) != BATON_OK)
        return NULL;
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    rd_kafka_conf_set_error_cb(kc, kafka_error_cb);
    baton_kafka_conf_log(kc, 1);
    rd_kafka_conf_set_opaque(kc, w);
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
        /* Latency of the first records after an acquire (the handoff ends
         * with the new owner's first write): a partition assigned while a
         * fetch is in flight joins the next fetch, so the broker's long
         * poll is kept short; a fetch error (a leader moving) is retried
         * after 100 ms, not librdkafka's 500; small requests are not
         * delayed by Nagle. Idle cost: a few more fetches per second.
         * --kafka overrides any of these (it is applied after them).
         * librdkafka 2.0 has no fetch.queue.backoff.ms (2.1+). */
        {"fetch.wait.max.ms", "20"},
        {"fetch.error.backoff.ms", "100"},
        {"socket.nagle.disable", "true"},
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
    /* Last, so no --kafka setting turns it back on: reading metadata (the
     * topic check, an assign) must never create the topic. */
    if (baton_kafka_conf_no_autocreate(kc, errstr, n) != BATON_OK) {
        rd_kafka_conf_destroy(kc);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, kerr, sizeof(kerr));
    if (!rk) {
        baton_seterr(errstr, n, BATON_INVALID, "kafka consumer: %s", kerr);
        return NULL; /* rd_kafka_new frees kc only on success */
    }
    return rk; /* rd_kafka_poll_set_consumer after the topic check */
}

/* Flushes what is due: full batches, batches older than linger, retries,
 * and the first batch of a partition just acquired (so a handoff is done
 * when the new owner's first write lands, without waiting a linger). */
static void flush_due(worker_t *w, int force) {
    int64_t now = baton_now_ms();
    size_t buffered = 0, ndue = 0, held = 0;
    int32_t *due = xmalloc(sizeof(int32_t) * (w->nlive + 1));
    for (size_t i = 0; i < w->nlive; i++) {
        int32_t p = w->live[i];
        wpart_t *wp = &w->parts[p];
        buffered += wp->nrecs; /* before this flush: good enough for a gauge */
        held += wp->npre;
        if (!wpart_consuming(wp->state) || wp->nrecs == 0 || wp->retry_at > now)
            continue;
        if (force || wp->state == WPART_FENCED || wp->nrecs >= (size_t)w->conf->batch_size ||
            now - wp->first_ms >= w->conf->linger_ms)
            due[ndue++] = p;
    }
    /* Every partition that is due, in one transaction. */
    if (ndue)
        parts_flush(w, due, ndue);
    free(due);
    for (size_t i = 0; i < w->nlive; i++) {
        int32_t p = w->live[i];
        wpart_t *wp = &w->parts[p];
        /* Back-pressure: stop fetching while the buffer is full (a slow or
         * suspended sink); resume once it drains. */
        if (!wpart_consuming(wp->state))
            continue; /* failed: stays paused */
        if (!wp->paused && wp->nrecs >= (size_t)w->conf->batch_size * WORKER_PAUSE_BATCHES)
            kafka_pause(w, p, 1);
        else if (wp->paused && wp->nrecs < (size_t)w->conf->batch_size)
            kafka_pause(w, p, 0);
    }
    baton_metric_set(baton_metric_gauge(BATON_M_W_BUFFERED), (double)buffered);
    baton_metric_set(baton_metric_gauge(BATON_M_W_HELD), (double)held);
}

/* Milliseconds until flush_due has something to do (at most cap). */
static int flush_due_in(const worker_t *w, int cap) {
    int64_t now = baton_now_ms(), soon = cap;
    for (size_t i = 0; i < w->nlive; i++) {
        const wpart_t *wp = &w->parts[w->live[i]];
        if (!wpart_owned(wp->state) || wp->nrecs == 0)
            continue;
        int64_t at = wp->first_ms + w->conf->linger_ms;
        /* A full batch (or a fresh partition's first) is due now, not at
         * the linger: sleeping here made the worker wait up to a linger
         * per batch under load (issue 5, throughput). */
        if (wp->state != WPART_FAILED &&
            (wp->state == WPART_FENCED || wp->nrecs >= (size_t)w->conf->batch_size))
            at = now;
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
    for (int32_t p = 0; p < w->nparts; p++) {
        batch_clear(&w->parts[p]);
        pre_clear(w, &w->parts[p]);
    }
}

/* baton_worker_partition_lag, at most once a second: for every partition
 * we own, the high watermark librdkafka cached from its last fetch minus
 * the sink's next_offset (0 when caught up); no series while the
 * watermark is unknown or the partition is not ours. */
static void metrics_lag(worker_t *w) {
    int64_t now = baton_now_ms();
    if (now - w->lag_ms < 1000)
        return;
    w->lag_ms = now;
    baton_metric_t *vec = baton_metric_gauge_vec(BATON_M_W_LAG);
    for (size_t i = 0; i < w->nlive; i++) {
        int32_t p = w->live[i];
        char label[16];
        snprintf(label, sizeof(label), "%d", p);
        int64_t hi = wpart_owned(w->parts[p].state) ? log_end(w, p) : -1;
        if (hi < 0) {
            baton_metric_vec_remove(vec, label);
            continue;
        }
        int64_t lag = hi - w->parts[p].next_offset;
        baton_metric_vec_set(vec, label, (double)(lag > 0 ? lag : 0));
    }
}

/* Creates every worker metric, so a scrape shows zeros rather than gaps. */
static void worker_metrics_register(void) {
    baton_metric_gauge(BATON_M_W_OWNED);
    baton_metric_gauge_vec(BATON_M_W_EPOCH);
    baton_metric_counter(BATON_M_W_RECORDS);
    baton_metric_gauge(BATON_M_W_BUFFERED);
    baton_metric_gauge(BATON_M_W_HELD);
    baton_metric_counter(BATON_M_W_BATCHES);
    baton_metric_counter(BATON_M_W_BATCH_ERRORS);
    baton_metric_histogram(BATON_M_W_BATCH_SECONDS);
    baton_metric_counter(BATON_M_W_STALE);
    baton_metric_histogram(BATON_M_W_HANDOFF_SECONDS);
    baton_metric_counter(BATON_M_W_STANDBY_PROMOTIONS);
    baton_metric_gauge_vec(BATON_M_W_LAG);
    baton_metric_gauge(BATON_M_ZK_CONNECTED);
    baton_metric_counter(BATON_M_ZK_RECONNECTS);
    baton_metric_counter(BATON_M_ZK_EXPIRATIONS);
}

static const char *const no_keys[1] = {NULL};

/* Ends the topic check's wait: a TLS/SASL failure (kafka_error_cb) or a
 * stop signal. */
static int topic_check_stop(void *opaque) {
    const worker_t *w = opaque;
    return w->kafka_fatal || baton_signal_stop_requested();
}

/* The source topic check, before the worker joins (so a misconfigured
 * worker never takes partitions from the group): the group config's topic
 * must exist on --brokers with at least the group's partitions. Reads the
 * config over a short ZooKeeper session of its own; a group it cannot read
 * is left to the join, which reports it. Returns 0 to go on, 1 to exit
 * (logged). Kafka not answering is a warning: the worker retries Kafka as
 * before. */
static int source_topic_check(worker_t *w, const baton_worker_conf_t *conf) {
    char errstr[512], warn[512];
    baton_zk_t *zk = NULL;
    baton_config_t cfg = {0};
    if (baton_zk_connect(conf->zk_hosts, conf->session_timeout_ms, conf->connect_timeout_ms,
                         conf->zk_auth, &zk, errstr, sizeof(errstr)) != BATON_OK)
        return 0;
    char *base = baton_group_base(conf->root ? conf->root : BATON_DEFAULT_ROOT, conf->group);
    int err = baton_group_config_read(zk, base, 0, &cfg, errstr, sizeof(errstr));
    free(base);
    baton_zk_destroy(zk);
    if (err != BATON_OK || !cfg.topic[0])
        return 0; /* reported by the join: no group, or keys only */
    int timeout_ms = conf->connect_timeout_ms > 0 ? conf->connect_timeout_ms : 15000;
    int32_t have = 0;
    err = baton_kafka_topic_check(w->rk, conf->brokers, cfg.topic, cfg.partitions, timeout_ms,
                                  topic_check_stop, w, &have, warn, sizeof(warn), errstr,
                                  sizeof(errstr));
    if (w->kafka_fatal)
        return 1; /* TLS or SASL: logged by kafka_error_cb */
    if (baton_signal_stop_requested())
        return 0; /* the run loop leaves at once */
    if (err == BATON_NOTFOUND || err == BATON_INVALID) {
        BLOG_ERROR("event=topic_check_failed topic=%s brokers=%s group_partitions=%d "
                   "error=\"%s\"",
                   baton_log_v(cfg.topic), baton_log_v(conf->brokers), cfg.partitions,
                   baton_log_q(errstr));
        return 1;
    }
    if (err != BATON_OK)
        BLOG_WARN("event=topic_unchecked topic=%s error=\"%s\"", baton_log_v(cfg.topic),
                  baton_log_q(errstr));
    else if (warn[0])
        BLOG_WARN("event=topic_has_more_partitions topic=%s partitions=%d group_partitions=%d "
                  "warning=\"%s\"",
                  baton_log_v(cfg.topic), have, cfg.partitions, baton_log_q(warn));
    else
        BLOG_INFO("event=topic_checked topic=%s partitions=%d", baton_log_v(cfg.topic), have);
    return 0;
}

/* Takes up to max messages from Kafka into the partitions' buffers (or
 * their held fetches). Returns 1 if there may be more. */
static int kafka_drain(worker_t *w, int max) {
    for (int i = 0; i < max; i++) {
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(w->rk, 0);
        if (!msg)
            return 0;
        if (msg->err) {
            if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                BLOG_WARN("event=kafka_error partition=%d error=\"%s\"", msg->partition,
                          baton_log_q(rd_kafka_message_errstr(msg)));
            rd_kafka_message_destroy(msg);
        } else {
            w->records_fetched++;
            part_append(w, msg);
        }
    }
    return 1;
}

/* ---- writing while the membership waits --------------------------------------
 * The loop runs the membership's poll, the fences, Kafka and the sink on
 * one thread, and the poll waits for ZooKeeper: a claim (create and queue
 * check), a release (the claims' delete), a read of the assignment. Each
 * is a round trip with a ZooKeeper fsync in it, and every partition this
 * worker writes used to wait through it: in a rolling restart each
 * worker stopped writing for 25-50 ms per restart of another worker
 * (docs/benchmarks.md). poll_hook runs while such a wait lasts past
 * BATON_ZK_HOOK_GRACE_MS (baton_zk_set_wait_hook): it takes what Kafka
 * has and writes what is due, exactly as the loop does between polls, so
 * the partitions that are not moving keep being written. It never fences
 * and never touches the membership's rows: a write refused STALE drops
 * its claim once the poll is over (drops_apply). The writes are the loop's
 * own, with the same checks (can_write, the commit gate, the epoch fence
 * at the sink), so what a write may do does not change, only when. */
static int poll_hook(void *opaque) {
    worker_t *w = opaque;
    if (!w->hook_on || w->in_hook || w->sink_fatal || w->refused || w->kafka_fatal)
        return 50;
    w->in_hook = 1;
    ensure_parts(w);
    int more = kafka_drain(w, 1000);
    flush_due(w, 0);
    w->in_hook = 0;
    return more ? 1 : flush_due_in(w, 10); /* Kafka has more: soon again */
}

/* The partitions whose write the hook saw refused: their claims go now,
 * each only if it is still the claim the refused write's epoch came from
 * (the poll may have let it go, or lost it, meanwhile). */
static void drops_apply(worker_t *w) {
    for (size_t i = 0; i < w->ndrops; i++) {
        baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = w->drops[i].p};
        if (baton_membership__holds(w->m, &r, w->drops[i].epoch))
            baton_membership_drop(w->m, &r);
    }
    w->ndrops = 0;
}

/* At debug, an iteration of the loop that kept the partitions it writes
 * waiting: its work (the membership's poll, the fences and Kafka before
 * the drain, the drain, the flush) past LOOP_SLOW_MS, or a poll() that
 * returned LOOP_SLOW_MS past its timeout (the process was not run). Each
 * phase's share tells a late write's cause apart: ZooKeeper, the sink, or
 * the machine. Times are monotonic us; timeout is poll()'s, in ms. */
#define LOOP_SLOW_MS 30
enum { LC_START, LC_MEMBERSHIP, LC_FENCES, LC_DRAIN, LC_FLUSH, LC_WAIT, LC_N };
typedef struct {
    int on; /* at debug: the times are taken */
    int64_t t[LC_N];
} loop_clock_t;

static void lc_mark(loop_clock_t *c, int phase) {
    if (phase == LC_START)
        c->on = baton_log_on(BATON_LOG_DEBUG);
    if (c->on)
        c->t[phase] = mono_us();
}

static void loop_trace(const loop_clock_t *c, int timeout) {
    if (!c->on)
        return;
    const int64_t *t = c->t;
    int64_t end = mono_us(), over = (end - t[LC_WAIT]) / 1000 - (timeout < 0 ? 0 : timeout);
    if ((t[LC_WAIT] - t[LC_START]) / 1000 < LOOP_SLOW_MS && over < LOOP_SLOW_MS)
        return;
    BLOG_DEBUG("event=loop_slow work_ms=%lld membership_ms=%lld fences_ms=%lld drain_ms=%lld "
               "flush_ms=%lld wait_ms=%lld timeout_ms=%d",
               (long long)((t[LC_WAIT] - t[LC_START]) / 1000),
               (long long)((t[LC_MEMBERSHIP] - t[LC_START]) / 1000),
               (long long)((t[LC_FENCES] - t[LC_MEMBERSHIP]) / 1000),
               (long long)((t[LC_DRAIN] - t[LC_FENCES]) / 1000),
               (long long)((t[LC_FLUSH] - t[LC_DRAIN]) / 1000),
               (long long)((end - t[LC_WAIT]) / 1000), timeout);
}

/* The membership's callbacks run inside its poll, in the worker's own
 * code: no hook while they run (a wait in them, none today, would
 * otherwise re-enter the loop's writes mid-callback). */
static int hooked_acquired(void *opaque, const baton_resource_t *r, int64_t epoch) {
    worker_t *w = opaque;
    int on = w->hook_on;
    w->hook_on = 0;
    int err = on_acquired(opaque, r, epoch);
    w->hook_on = on;
    return err;
}

static void hooked_released(void *opaque, const baton_resource_t *r,
                            baton_release_reason_t reason) {
    worker_t *w = opaque;
    int on = w->hook_on;
    w->hook_on = 0;
    on_released(opaque, r, reason);
    w->hook_on = on;
}

static void hooked_assigned(void *opaque, const baton_resource_t *rs, size_t n) {
    worker_t *w = opaque;
    int on = w->hook_on;
    w->hook_on = 0;
    on_assigned(opaque, rs, n);
    w->hook_on = on;
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
    /* No processor given: the built-in copy (loading it cannot fail). */
    baton_processor_t *own_proc = NULL;
    if (!conf->processor &&
        baton_processor_load("copy", NULL, &own_proc, errstr, sizeof(errstr)) != BATON_OK) {
        BLOG_ERROR("event=processor_error error=\"%s\"", baton_log_q(errstr));
        return 1;
    }
    w.proc = conf->processor ? conf->processor : own_proc;
    w.copy = baton_processor_is_copy(w.proc);
    /* The member lock before the sink: a duplicate of a live worker on
     * this host (one frozen, say, inside a sink transaction, holding an
     * SQLite file's write lock) is refused by the lock, naming its holder,
     * and never touches the sink. The membership adopts the lock. */
    baton_incarnation_t lock;
    int err = baton_membership__lock(&lock, conf->state_dir, conf->group, conf->id, errstr,
                                     sizeof(errstr));
    if (err != BATON_OK) {
        baton_processor_destroy(own_proc);
        BLOG_ERROR("event=join_failed error=\"%s\"", baton_log_q(errstr));
        return 1;
    }
    /* A new SQLite file is created by the binding check once the run loop
     * starts (bind_early), so a worker that fails before (ZooKeeper
     * unreachable, group not initialised, bad topic) leaves none behind. */
    err = baton_sink_open_lazy(conf->sink_uri, conf->group, &w.sink, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        baton_incarnation_close(&lock);
        baton_processor_destroy(own_proc);
        BLOG_ERROR("event=sink_open_failed error=\"%s\"", baton_log_q(errstr));
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
        /* A Kafka worker takes partitions only: an empty key filter. */
        .keys = no_keys,
        .nkeys = 0,
    };
    baton_membership_cbs_t cbs = {.on_acquired = hooked_acquired,
                                  .on_released = hooked_released,
                                  .opaque = &w,
                                  .on_assigned = hooked_assigned};
    if (!(w.rk = kafka_new(&w, conf, errstr, sizeof(errstr)))) {
        BLOG_ERROR("event=kafka_config_error error=\"%s\"", baton_log_q(errstr));
        goto out;
    }
    if (source_topic_check(&w, conf) != 0)
        goto out;
    rd_kafka_poll_set_consumer(w.rk);
    baton_membership_ext_t ext = {.zk_auth = conf->zk_auth,
                                  .member_wait_ms = conf->member_wait_ms,
                                  .lock = &lock,
                                  .claim_ahead = conf->standby_claim_ahead,
                                  .notice = conf->standby_notice,
                                  .notice_holds = conf->standby_prefetch};
    err = baton_membership__new(&mc, &cbs, &ext, &w.m, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        BLOG_ERROR("event=join_failed error=\"%s\"", baton_log_q(errstr));
        goto out;
    }
    /* The flush checks can_write before its transaction; the gate checks
     * it again just before the commit, so a transaction that outlasts
     * the self-suspension limit rolls back instead of committing late. */
    baton_sink_set_commit_gate(w.sink, worker_may_commit, &w);
    baton_membership__set_wait_hook(w.m, poll_hook, &w);
    if (pipe2(kpipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        BLOG_ERROR("event=pipe_failed");
        goto out;
    }
    kq = rd_kafka_queue_get_consumer(w.rk);
    rd_kafka_queue_io_event_enable(kq, kpipe[1], "k", 1);
    w.topic = baton_membership_topic(w.m);
    if (!w.topic[0]) {
        BLOG_ERROR("event=join_failed error=\"group '%s' has named keys only, no topic: run "
                   "its jobs with baton-run or the member library\"",
                   baton_log_q(conf->group));
        goto out;
    }
    ensure_parts(&w);
    BLOG_INFO("event=started topic=%s partitions=%d sink=%s processor=%s", baton_log_v(w.topic),
              w.nparts, baton_log_v(conf->sink_uri), baton_log_v(baton_processor_name(w.proc)));
    worker_metrics_register();

    int next_ms = 0;
    loop_clock_t lc = {0};
    while (!baton_signal_stop_requested()) {
        if (w.kafka_fatal)
            goto out; /* logged by kafka_error_cb */
        lc_mark(&lc, LC_START);
        w.hook_on = 1;
        err = baton_membership_poll(w.m, &next_ms, errstr, sizeof(errstr));
        w.hook_on = 0;
        lc_mark(&lc, LC_MEMBERSHIP);
        drops_apply(&w);
        if (err != BATON_OK) {
            BLOG_ERROR("event=membership_failed error=\"%s\"", baton_log_q(errstr));
            goto out;
        }
        ensure_parts(&w);
        bind_early(&w);
        prefetch_check(&w);
        standby_sync(&w);
        kafka_unassign_pending(&w);
        /* A partition just acquired is fenced with what we fetched ahead
         * for it: take what Kafka delivered since the last drain first
         * (while the last commit ran, say), or it waits for a commit of
         * its own after the fence. */
        if (fence_waiting(&w))
            kafka_drain(&w, 10000);
        fence_pending(&w);
        if (w.refused) {
            /* Leave (writing nothing more: on_released skips the flush),
             * so our partitions go to workers whose sink is the group's,
             * and exit 1. */
            baton_membership_leave(w.m);
            goto out;
        }
        if (w.sink_fatal)
            break;
        /* Drain what Kafka has, bounded so ZooKeeper events never wait long. */
        lc_mark(&lc, LC_FENCES);
        int more = kafka_drain(&w, 10000);
        if (baton_signal_stop_requested() && leave_hands_over(&w))
            break; /* what is due is handed over, not written */
        lc_mark(&lc, LC_DRAIN);
        flush_due(&w, 0);
        lc_mark(&lc, LC_FLUSH);
        metrics_lag(&w);
        live_compact(&w);
        if (baton_signal_stop_requested() || w.sink_fatal)
            break;
        int timeout =
            more ? 0 : flush_due_in(&w, next_ms < WORKER_IDLE_MS ? next_ms : WORKER_IDLE_MS);
        for (size_t i = 0; i < w.nlive && timeout > 0; i++)
            if (wpart_fencing(w.parts[w.live[i]].state))
                timeout = timeout < 100 ? timeout : 100; /* a fence to retry */
        struct pollfd pfds[3] = {{.fd = baton_membership_fd(w.m), .events = POLLIN},
                                 {.fd = kpipe[0], .events = POLLIN},
                                 {.fd = stop_fd, .events = POLLIN}};
        lc_mark(&lc, LC_WAIT);
        if (poll(pfds, stop_fd >= 0 ? 3 : 2, timeout) > 0 && (pfds[1].revents & POLLIN)) {
            char buf[256];
            while (read(kpipe[0], buf, sizeof(buf)) > 0) {
            }
        }
        loop_trace(&lc, timeout);
    }
    size_t covered = w.sink_fatal ? 0 : leave_hands_over(&w);
    w.handover = covered > 0;
    BLOG_INFO("event=stopping action=graceful_leave handover=%d covered=%zu", w.handover, covered);
    /* The leave marks our member node first (the coordinator names our
     * successors at once), then releases every partition (on_released
     * writes its buffered batches, or hands them over with handover; if
     * the sink failed for good the successors read them again from the
     * sink's next_offset) while the coordinator works, waits for the new
     * assignment and only then deletes the claims. */
    baton_membership_leave(w.m);
    rc = w.sink_fatal ? 1 : 0;
out:
    if (w.m) /* no hook from here: what it writes with is going */
        baton_membership__set_wait_hook(w.m, NULL, NULL);
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
    baton_incarnation_close(&lock); /* if the membership never adopted it */
    if (w.parts) {
        for (int32_t p = 0; p < w.nparts; p++) {
            batch_clear(&w.parts[p]);
            pre_clear(&w, &w.parts[p]);
            free(w.parts[p].recs);
            free(w.parts[p].pre);
            baton_processor_close(w.proc, w.parts[p].pstate);
        }
        free(w.parts);
    }
    free(w.live);
    free(w.sb);
    free(w.drops);
    baton_processor_destroy(own_proc);
    baton_sink_destroy(w.sink);
    if (kpipe[0] >= 0) {
        close(kpipe[0]);
        close(kpipe[1]);
    }
    BLOG_INFO(
        "event=stopped records_written=%lld records_fetched=%lld standby_records_fetched=%lld "
        "batches_in_zk_waits=%lld records_handed_over=%lld",
        (long long)w.records_written, (long long)w.records_fetched, (long long)w.standby_fetched,
        (long long)w.hook_batches, (long long)w.handed_over);
    return rc;
}
