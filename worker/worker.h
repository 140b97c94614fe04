/* worker.h: baton-worker's run loop (Kafka in, fenced sink out), built on
 * membership.h. */
#ifndef BATON_WORKER_H
#define BATON_WORKER_H

#include <stddef.h>

struct baton_zk_auth_s;

typedef struct {
    const char *zk_hosts;
    const char *root;
    const char *group;
    const char *id;
    const char *brokers;
    const char *sink_uri;
    const char *rack;
    int capacity;
    int session_timeout_ms;
    int connect_timeout_ms;
    int batch_size;           /* records per sink transaction, at most */
    int linger_ms;            /* how long a partial batch may wait */
    const char **kafka_props; /* "key=value" passed to librdkafka unchanged */
    size_t nkafka_props;
    /* The loaded processor (processor.h), owned by the caller; NULL: copy. */
    const struct baton_processor_s *processor;
    /* The ZooKeeper identity of every session (--zk-auth); NULL: none. */
    const struct baton_zk_auth_s *zk_auth;
    /* The member lock's directory (NULL: the default) and how long a live
     * member holding our id is waited for (0: three session timeouts). */
    const char *state_dir;
    int member_wait_ms;
    /* Standby prefetch (--standby-prefetch): fetch ahead the partitions the
     * assignment names us standby for, holding at most
     * standby_prefetch_bytes of keys and values per partition and
     * standby_prefetch_total_bytes over all of them (worker.c). */
    int standby_prefetch;
    /* standby.claim=ahead (--standby-claim ahead): keep a claim of every
     * partition we stand by for queued behind its owner's (membership). */
    int standby_claim_ahead;
    /* standby.notice (--standby-notice): the release notices' address, or
     * NULL/"off" (membership, member_notice.c). */
    const char *standby_notice;
    long long standby_prefetch_bytes;
    long long standby_prefetch_total_bytes;
} baton_worker_conf_t;

/* Runs until SIGTERM/SIGINT (graceful leave, returns 0) or a fatal error
 * (logged, returns 1). */
int baton_worker_run(const baton_worker_conf_t *conf, int stop_fd);

#endif
