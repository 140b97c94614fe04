/* baton_kafka_topic.h: the source topic check shared by baton-worker,
 * `batonctl init --brokers` and `batonctl status --brokers`: the group's
 * topic must exist on Kafka with at least the group's partition count.
 * Nothing here creates a topic: the handles are made with
 * allow.auto.create.topics=false (librdkafka then asks the broker not to
 * create one in its Metadata requests), and the check reads metadata of the
 * one topic only.
 *
 * @locality the caller's thread; baton_kafka_topic_check blocks for at most
 * its timeout. */
#ifndef BATON_KAFKA_TOPIC_H
#define BATON_KAFKA_TOPIC_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

/* Routes librdkafka's log lines on conf through baton's logger: lib=librdkafka,
 * src=FACILITY, syslog levels mapped (0-3 error, 4 warn, 5-6 info, 7 debug),
 * repeats collapsed. With errors_logged (the program has an error callback
 * that logs every error), the FAIL lines that repeat those errors are
 * demoted to debug. */
void baton_kafka_conf_log(rd_kafka_conf_t *conf, int errors_logged);

/* Checks n "KEY=VALUE" librdkafka settings (--kafka) against librdkafka's
 * own table without using them: BATON_OK, or BATON_INVALID with
 * "--kafka 'KEY=VALUE': WHY" (an unknown key, a bad value). */
int baton_kafka_props_check(const char *const *kv, size_t n, char *errstr, size_t errstr_size);

/* Sets allow.auto.create.topics=false on conf. Call it after the user's
 * settings (--kafka), so none of them turns topic creation back on. */
int baton_kafka_conf_no_autocreate(rd_kafka_conf_t *conf, char *errstr, size_t errstr_size);

/* Reads topic's partition count through rk (bootstrap servers brokers, for
 * the messages) and compares it with the group's, want:
 *  - BATON_OK: the topic has *have >= want partitions. When it has more,
 *    warn (if not NULL) holds a warning naming `batonctl init --partitions
 *    N`, else warn is "".
 *  - BATON_NOTFOUND: the topic does not exist (message names topic and
 *    brokers).
 *  - BATON_INVALID: fewer partitions than the group (message names both
 *    counts).
 *  - BATON_TIMEOUT / BATON_CONNECTION: Kafka gave no answer within
 *    timeout_ms (or before stop(opaque) returned non-zero), or an error
 *    (message names the brokers).
 * It serves rk's callbacks with rd_kafka_poll between tries, so rk must not
 * be redirected to a consumer queue yet; stop (may be NULL) ends the wait
 * early, e.g. once an error callback saw a failure retrying cannot fix
 * (TLS, SASL) or on SIGTERM. have may be NULL. */
int baton_kafka_topic_check(rd_kafka_t *rk, const char *brokers, const char *topic, int32_t want,
                            int timeout_ms, int (*stop)(void *opaque), void *opaque, int32_t *have,
                            char *warn, size_t warn_size, char *errstr, size_t errstr_size);

#endif
