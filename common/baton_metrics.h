/* baton_metrics.h: a tiny process-wide metrics registry (counters, gauges,
 * gauges with one label, histograms with fixed buckets) rendered in the
 * Prometheus text exposition format 0.0.4.
 *
 * Metrics are looked up by name and created on first use, so instrumenting
 * a line of code is one call:
 *     baton_metric_inc(baton_metric_counter(BATON_M_ZK_RECONNECTS));
 * The BATON_M_* macros below expand to "name", "help" (and, for histograms,
 * the buckets), so every name and help text lives in this one header.
 *
 * Thread-safety: every function takes one registry mutex; they may be called
 * from any thread (the daemons' main loops update, libmicrohttpd's thread
 * renders). Metric handles are owned by the registry and live until the
 * process exits (or baton_metrics_reset()); callers never free them. */
#ifndef BATON_METRICS_H
#define BATON_METRICS_H

#include <stddef.h>

typedef struct baton_metric_s baton_metric_t;

/* Get-or-create. name must match [a-zA-Z_:][a-zA-Z0-9_:]*; a name already
 * registered as another type is a programming error and aborts. */
baton_metric_t *baton_metric_counter(const char *name, const char *help);
baton_metric_t *baton_metric_gauge(const char *name, const char *help);
/* A gauge family with one label (e.g. "partition"). */
baton_metric_t *baton_metric_gauge_vec(const char *name, const char *help, const char *label);
/* bounds: ascending upper bounds, copied; +Inf is implicit. */
baton_metric_t *baton_metric_histogram(const char *name, const char *help, const double *bounds,
                                       size_t nbounds);

void baton_metric_inc(baton_metric_t *m);           /* counter += 1 */
void baton_metric_add(baton_metric_t *m, double v); /* counter or gauge += v (counter: v >= 0) */
void baton_metric_set(baton_metric_t *m, double v); /* gauge = v */
/* Gauge family: sets (creating) or removes the series label=value. */
void baton_metric_vec_set(baton_metric_t *m, const char *label_value, double v);
void baton_metric_vec_remove(baton_metric_t *m, const char *label_value);
void baton_metric_observe(baton_metric_t *m, double v); /* histogram */

/* Reads back a value (tests): counter/gauge value, a series of a family
 * (label_value non-NULL), a histogram's count. 0 when absent. */
double baton_metric_value(baton_metric_t *m, const char *label_value);

/* The whole registry in text format 0.0.4, metrics in registration order,
 * each with # HELP and # TYPE lines. Heap string: the caller frees it. */
char *baton_metrics_render(size_t *len);
/* Forgets every metric (tests only: invalidates all handles). */
void baton_metrics_reset(void);

/* ZooKeeper session transitions of the process's one session, for the
 * BATON_M_ZK_* metrics: 1 connected, 0 connection lost, -1 session
 * expired. A 1 after a 0 counts a reconnect; -1 counts an expiration (the
 * next session's first connect is not a reconnect). Call from the one
 * thread that owns the session. */
void baton_metrics_zk_state(int state);

/* Buckets for durations in seconds: 1 ms .. 60 s. */
extern const double baton_metrics_seconds_buckets[];
extern const size_t baton_metrics_seconds_nbuckets;
#define BATON_M_SECONDS_BUCKETS baton_metrics_seconds_buckets, baton_metrics_seconds_nbuckets

/* The catalogue: name, help[, label | buckets]. */
#define BATON_M_ZK_CONNECTED \
    "baton_zk_connected", "1 while the ZooKeeper session is connected, 0 while disconnected"
#define BATON_M_ZK_RECONNECTS \
    "baton_zk_reconnects_total", "ZooKeeper reconnections after a lost connection (same session)"
#define BATON_M_ZK_EXPIRATIONS \
    "baton_zk_session_expirations_total", "ZooKeeper sessions expired (followed by a new session)"

#define BATON_M_W_OWNED "baton_worker_partitions_owned", "partitions this worker owns (fenced)"
#define BATON_M_W_EPOCH                                                                       \
    "baton_worker_partition_epoch", "epoch (claim czxid) of each partition this worker owns", \
        "partition"
#define BATON_M_W_RECORDS \
    "baton_worker_records_written_total", "records written to the sink (applied, not duplicates)"
#define BATON_M_W_BUFFERED \
    "baton_worker_records_buffered", "records read from Kafka and not yet written"
#define BATON_M_W_HELD                                                                         \
    "baton_worker_standby_records_held", "records fetched ahead (standby.prefetch) and held, " \
                                         "not ours to write yet"
#define BATON_M_W_BATCHES "baton_worker_sink_batches_total", "batches written to the sink"
#define BATON_M_W_BATCH_ERRORS \
    "baton_worker_sink_batch_errors_total", "sink writes that failed and will be retried"
#define BATON_M_W_BATCH_SECONDS                                                           \
    "baton_worker_sink_batch_duration_seconds", "time of one sink write (a transaction)", \
        BATON_M_SECONDS_BUCKETS
#define BATON_M_W_STALE                          \
    "baton_worker_stale_batches_rejected_total", \
        "batches the sink rejected because a newer epoch fenced the partition"
#define BATON_M_W_HANDOFF_SECONDS                                            \
    "baton_worker_handoff_duration_seconds",                                 \
        "from our claim's creation until the sink is fenced with its epoch", \
        BATON_M_SECONDS_BUCKETS

#define BATON_M_W_LAG                                                                       \
    "baton_worker_partition_lag",                                                           \
        "records in Kafka past what the sink has, per owned partition: the high watermark " \
        "librdkafka last saw minus the sink's next_offset",                                 \
        "partition"

#define BATON_M_W_STANDBY_PROMOTIONS                                                      \
    "baton_worker_standby_promotions_total",                                              \
        "resources taken as a standby when their owner marked its leave or disappeared, " \
        "before the coordinator's publish"

#define BATON_M_W_STANDBY_CLAIM_YIELDS                                                      \
    "baton_worker_standby_claim_yields_total",                                              \
        "claims made ahead of time (standby.claim=ahead) deleted because they were lowest " \
        "without the resource being ours: its owner let go without leaving, or had not "    \
        "claimed yet"

#define BATON_M_W_NOTICES_RECEIVED         \
    "baton_worker_notices_received_total", \
        "release notices (standby.notice) received from a leaving owner of this group"

#define BATON_M_W_NOTICES_MALFORMED         \
    "baton_worker_notices_malformed_total", \
        "datagrams on the standby.notice socket that were not a notice (dropped)"

#define BATON_M_C_LEADER "baton_coordinator_leader", "1 while this coordinator is the leader"
#define BATON_M_C_SUSPENDED                                                                    \
    "baton_coordinator_leader_suspended",                                                      \
        "1 while this coordinator has stopped leading because ZooKeeper has not answered for " \
        "2/3 of its session (it runs the election again once answered)"
#define BATON_M_C_EPOCH                                                                        \
    "baton_coordinator_epoch", "this coordinator's epoch while leader (its candidate czxid), " \
                               "else 0"
#define BATON_M_C_PARTITIONS                                                                \
    "baton_coordinator_partitions", "the group's partition count, from its config as this " \
                                    "coordinator last read it leading (0 before)"
#define BATON_M_C_GENERATION \
    "baton_coordinator_generation", "the last assignment generation this coordinator published"
#define BATON_M_C_REBALANCES              \
    "baton_coordinator_rebalances_total", \
        "assignments published (rebalances that changed something)"
#define BATON_M_C_MOVES \
    "baton_coordinator_partition_moves_total", "partitions assigned to a different worker"
#define BATON_M_C_REBALANCE_SECONDS                 \
    "baton_coordinator_rebalance_duration_seconds", \
        "from computing an assignment until it is published", BATON_M_SECONDS_BUCKETS

#endif
