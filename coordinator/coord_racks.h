/* coord_racks.h: the rack of each partition's leader broker, read from Kafka
 * with one Metadata request, for the assignor's rack preference (KIP-881's
 * idea). Version 4: racks came in v1, and v4 lets the request say "do not
 * create the topic" (baton-devkafka offers v4 only, for that reason).
 *
 * librdkafka 2.0's public API has no broker rack (rd_kafka_metadata_broker_t
 * is id, host and port; rd_kafka_DescribeCluster and rd_kafka_Node_rack
 * came in 2.3), so this speaks the request itself with a deadline, over
 * plain TCP or TLS (OpenSSL) and with SASL/PLAIN, as the coordinator's
 * kafka.* settings say (coord_racks_setup). Runs on the coordinator's
 * thread; blocks at most timeout_ms per broker. */
#ifndef COORD_RACKS_H
#define COORD_RACKS_H

#include <stddef.h>
#include <stdint.h>

typedef struct coord_racks_s coord_racks_t;

/* Takes the librdkafka settings ("key=value", the coordinator's kafka.* keys
 * and --kafka flags, later ones win) that decide how the rack lookup
 * connects: security.protocol (plaintext, ssl, sasl_plaintext, sasl_ssl),
 * ssl.ca.location, ssl.certificate.location, ssl.key.location,
 * ssl.key.password, enable.ssl.certificate.verification,
 * ssl.endpoint.identification.algorithm, sasl.mechanism(s) (PLAIN),
 * sasl.username, sasl.password. Other settings do not concern a Metadata
 * request and are only checked by librdkafka's own validation. Call once,
 * before coord_racks_fetch; settings are kept for the process.
 * Returns BATON_INVALID with a message for a setting librdkafka refuses or a
 * TLS file that does not load. Returns BATON_OK with off[0] == 0 when the
 * lookup can honour every security setting, or with a reason in off when it
 * cannot (e.g. sasl.mechanism=GSSAPI): then rack preference must be off. */
int coord_racks_setup(char *const *kafka, size_t nkafka, char *off, size_t off_size, char *errstr,
                      size_t errstr_size);

/* Asks the brokers ("host:port[,host:port...]", tried in order) for topic's
 * metadata. On success *out (free with coord_racks_destroy) maps partitions
 * 0..npartitions-1 to their leader's rack. Returns BATON_OK or an error with
 * a message in errstr (unreachable brokers, TLS or SASL refused, unknown
 * topic, bad reply). */
int coord_racks_fetch(const char *brokers, const char *topic, int32_t npartitions, int timeout_ms,
                      coord_racks_t **out, char *errstr, size_t errstr_size);
/* The leader's rack of partition p, or NULL if unknown (r may be NULL). */
const char *coord_racks_of(const coord_racks_t *r, int32_t p);
/* Partitions whose leader's rack is known. */
int coord_racks_known(const coord_racks_t *r);
/* 1 if both map every partition to the same rack (NULLs included). */
int coord_racks_equal(const coord_racks_t *a, const coord_racks_t *b);
void coord_racks_destroy(coord_racks_t *r);

/* The reply parsers, for the fuzz target (tests/fuzz/fuzz_racks.c). Each
 * takes a whole reply as the broker sent it (after the size prefix,
 * starting with the correlation id) and reads it bounds-checked.
 * A Metadata v4 reply: BATON_OK with *out, or an error with a message. */
int coord_racks_parse_metadata(const unsigned char *buf, size_t len, const char *topic,
                               int32_t npartitions, coord_racks_t **out, char *errstr,
                               size_t errstr_size);
/* A SaslHandshake v1 reply (does the broker enable mechanism?), or a
 * SaslAuthenticate v0 reply (were the credentials accepted?): BATON_OK, or
 * an error with a message. */
int coord_racks_parse_sasl_handshake(const unsigned char *buf, size_t len, const char *mechanism,
                                     char *errstr, size_t errstr_size);
int coord_racks_parse_sasl_authenticate(const unsigned char *buf, size_t len, char *errstr,
                                        size_t errstr_size);

#endif
