/* devkafka_guard.h: baton-devkafka creates only the topics it is told to.
 * librdkafka's mock cluster would create any topic a client names in a
 * Metadata request (a misspelt --topic then "works" against an empty
 * topic); with the guard such a request answers UNKNOWN_TOPIC_OR_PART, as
 * a broker with auto.create.topics.enable=false does. Linking
 * devkafka_guard.c into the executable installs the socket half; see there.
 *
 * @locality devkafka_guard_init: the main thread, right after the cluster
 * is created and before it serves anyone. */
#ifndef DEVKAFKA_GUARD_H
#define DEVKAFKA_GUARD_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/* Has the mock offer only Metadata version 4, the one whose requests carry
 * the flag the socket half clears. */
rd_kafka_resp_err_t devkafka_guard_init(rd_kafka_mock_cluster_t *mcluster);

#endif
