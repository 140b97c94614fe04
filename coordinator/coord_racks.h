/* coord_racks.h: the rack of each partition's leader broker, read from Kafka
 * with one Metadata request (version 1, the first that carries racks), for
 * the assignor's rack preference (KIP-881's idea).
 *
 * librdkafka 2.0's public metadata API does not expose broker racks, so this
 * speaks the request itself over a plain TCP connection with a deadline.
 * Runs on the coordinator's thread; blocks at most timeout_ms per broker. */
#ifndef COORD_RACKS_H
#define COORD_RACKS_H

#include <stddef.h>
#include <stdint.h>

typedef struct coord_racks_s coord_racks_t;

/* Asks the brokers ("host:port[,host:port...]", tried in order) for topic's
 * metadata. On success *out (free with coord_racks_destroy) maps partitions
 * 0..npartitions-1 to their leader's rack. Returns BATON_OK or an error with
 * a message in errstr (unreachable brokers, unknown topic, bad reply). */
int coord_racks_fetch(const char *brokers, const char *topic, int32_t npartitions, int timeout_ms,
                      coord_racks_t **out, char *errstr, size_t errstr_size);
/* The leader's rack of partition p, or NULL if unknown (r may be NULL). */
const char *coord_racks_of(const coord_racks_t *r, int32_t p);
/* Partitions whose leader's rack is known. */
int coord_racks_known(const coord_racks_t *r);
/* 1 if both map every partition to the same rack (NULLs included). */
int coord_racks_equal(const coord_racks_t *a, const coord_racks_t *b);
void coord_racks_destroy(coord_racks_t *r);

#endif
