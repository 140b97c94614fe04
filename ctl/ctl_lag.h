/* ctl_lag.h: what batonctl reads outside ZooKeeper: the Kafka high
 * watermarks of the group's topic and the sink's fence rows, and the lag
 * (high watermark minus the sink's next_offset) they give per partition.
 *
 * @locality the caller's thread; every call blocks for at most its timeout. */
#ifndef CTL_LAG_H
#define CTL_LAG_H

#include "sink.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka settings for batonctl's short-lived client: bootstrap servers and
 * extra librdkafka KEY=VALUE settings (not owned; must outlive the call). */
typedef struct {
    const char *brokers;
    const char *const *props;
    size_t nprops;
} ctl_kafka_conf_t;

/* Fills hwm[0..P) with the high watermark of each partition of topic, -1
 * where Kafka gave none (a per-partition error is described in
 * warnings[p], a heap string the caller frees, or NULL). Returns BATON_OK,
 * BATON_INVALID (a bad setting, named in errstr) or BATON_TIMEOUT /
 * BATON_CONNECTION (Kafka did not answer within timeout_ms). */
int ctl_kafka_high_watermarks(const ctl_kafka_conf_t *kc, const char *topic, int32_t P,
                              int timeout_ms, int64_t *hwm, char **warnings, char *errstr,
                              size_t errstr_size);

/* Opens the sink at uri for group. Without create, a sqlite: path that
 * does not exist is BATON_NOTFOUND (read commands never create a sink).
 * Messages name the --sink value. */
int ctl_sink_open(const char *uri, const char *group, int create, baton_sink_t **out, char *errstr,
                  size_t errstr_size);

/* Checks the group's topic on Kafka (baton_kafka_topic.h) with batonctl's
 * short-lived client: BATON_OK (warn holds a warning when the topic has
 * more partitions than want, else ""), BATON_NOTFOUND (no such topic),
 * BATON_INVALID (fewer partitions), BATON_TIMEOUT / BATON_CONNECTION. */
int ctl_kafka_topic_check(const ctl_kafka_conf_t *kc, const char *topic, int32_t want,
                          int timeout_ms, char *warn, size_t warn_size, char *errstr,
                          size_t errstr_size);

/* Reads every fence row of group from the sink at uri. A read command must
 * not create a sink: a sqlite: path that does not exist is BATON_NOTFOUND.
 * *rows is a heap array the caller frees. Messages name the --sink value. */
int ctl_sink_fences(const char *uri, const char *group, baton_fence_row_t **rows, size_t *nrows,
                    char *errstr, size_t errstr_size);

/* Fills the "next_offset", "high_watermark" and "lag" of every partition of
 * a status object (ctl_status.h) that has both: with kc (may be NULL) the
 * high watermarks, with sink_uri (may be NULL) the next offsets; lag needs
 * both. Also sets summary.lag (the total) and adds warnings. Returns an
 * error with a message only when Kafka or the sink cannot be read at all. */
int ctl_status_add_lag(json_t *status, const ctl_kafka_conf_t *kc, const char *sink_uri,
                       int timeout_ms, char *errstr, size_t errstr_size);

#endif
