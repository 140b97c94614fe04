/* baton_codec.h: the JSON bodies of baton's znodes, encoded and decoded with
 * jansson. Decoders never trust their input: anything malformed, of the wrong
 * type, out of range or oversized is an error (BATON_CORRUPT) with a message
 * naming the field, never a crash. Encoders return a heap string the caller
 * frees. */
#ifndef BATON_CODEC_H
#define BATON_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define BATON_ID_MAX 128    /* worker and coordinator ids */
#define BATON_TOPIC_MAX 249 /* Kafka's own topic name limit */
#define BATON_PARTITIONS_MAX 1000000
#define BATON_ZNODE_MAX (1024 * 1024)
/* A member's key filter, comma-joined, is at most this long (about 30 keys
 * of the longest names; a member wanting more takes every key). */
#define BATON_MEMBER_KEYS_MAX 4096
/* Named keys: names are ids (1-128 of [A-Za-z0-9._-]); a group has at most
 * this many. */
#define BATON_KEYS_MAX 100000

/* /<root>/<group>/config. A keys-only group (batonctl init --keys without
 * --topic) has topic "" and 0 partitions; its keys are the children of
 * /<root>/<group>/keys, not part of the config. group_uuid is the group's
 * random id ("group_uuid" in JSON; "" in a config written before it
 * existed): it tells this group from another of the same name under
 * another root or cluster, which a sink records (see sink.h). */
#define BATON_GROUP_UUID_SIZE 37
typedef struct {
    char topic[BATON_TOPIC_MAX + 1];
    int32_t partitions;
    char strategy[32];
    char group_uuid[BATON_GROUP_UUID_SIZE];
} baton_config_t;

/* /<root>/<group>/sink: the sink the group is bound to (the first worker
 * to fence binds it; batonctl sink rebind moves it). JSON: {"sink_id",
 * "sink_uri", "bound_by", "bound_ms"}; sink_id is the sink's own random id
 * (its baton_meta table), sink_uri the URI the binder used (secrets
 * redacted; "" if unknown), bound_by the worker id or "batonctl ...". */
typedef struct {
    char sink_id[BATON_GROUP_UUID_SIZE];
    char sink_uri[512];
    char bound_by[256];
    int64_t bound_ms;
} baton_sink_binding_t;

/* /<root>/<group>/workers/<id> and /coordinators/c-N */
typedef struct {
    char id[BATON_ID_MAX + 1];
    char host[256];
    int64_t pid;
    int32_t capacity; /* workers only; 1 when absent */
    char rack[64];    /* "" when absent */
    int leaving;      /* workers: set by a graceful leave before it releases */
    /* Which resources the member takes (baton/baton.h). keys_filter 0:
     * every key; 1: only those in keys, comma-separated ("keys" in JSON,
     * an array; absent means every key). no_partitions: takes no
     * partitions ("keys_only": true). */
    int keys_filter;
    char keys[BATON_MEMBER_KEYS_MAX];
    int no_partitions;
    /* workers: the incarnation (a UUID, baton_incarnation.h) that created
     * the node, "" when absent ("incarnation" in JSON) */
    char incarnation[37];
    /* workers with standby.notice: where they take release notices, an
     * "ip:port" datagram address ("notice" in JSON); "" when absent */
    char notice[64];
} baton_member_t;

/* /<root>/<group>/assignment */
typedef struct {
    int64_t generation;
    int64_t coordinator_epoch;
    char strategy[32];
} baton_assignment_meta_t;

/* What a worker stands by for: the resources of member `owner` that the
 * coordinator would give this worker if owner left (partitions and keys
 * sorted). The standby takes them as soon as owner's member node is marked
 * leaving or deleted, without waiting for the next assignment. */
typedef struct {
    char *owner;
    int32_t *partitions;
    size_t npartitions;
    char **keys;
    size_t nkeys;
} baton_standby_t;

/* /<root>/<group>/assignment/<worker-id>: partitions and keys are heap
 * arrays the caller frees (baton_worker_assignment_release). keys is sorted
 * and only encoded when non-empty ("keys": ["a", ...]); so is standby
 * (sorted by owner): "standby": {"<owner>": {"partitions": [...],
 * "keys": [...]}, ...}. */
typedef struct {
    int64_t generation;
    int32_t *partitions;
    size_t npartitions;
    char **keys;
    size_t nkeys;
    baton_standby_t *standby;
    size_t nstandby;
} baton_worker_assignment_t;

/* /<root>/<group>/partitions/<p>/claims/claim-<session>-N */
typedef struct {
    char worker[BATON_ID_MAX + 1];
    int64_t generation;
} baton_claim_t;

/* Ids (worker, coordinator, group): 1-128 of [A-Za-z0-9._-]. Returns 0 if valid. */
int baton_id_valid(const char *id);
/* Key names (batonctl keys): 1-128 of [A-Za-z0-9._-], like ids. */
int baton_key_valid(const char *key);
/* Kafka topic names: 1-249 of [A-Za-z0-9._-]. */
int baton_topic_valid(const char *topic);

char *baton_config_encode(const baton_config_t *c);
int baton_config_decode(const char *buf, size_t len, baton_config_t *out, char *errstr,
                        size_t errstr_size);

char *baton_sink_binding_encode(const baton_sink_binding_t *b);
/* sink_id must be a UUID; the other fields are optional. */
int baton_sink_binding_decode(const char *buf, size_t len, baton_sink_binding_t *out, char *errstr,
                              size_t errstr_size);

char *baton_member_encode(const baton_member_t *m);
int baton_member_decode(const char *buf, size_t len, baton_member_t *out, char *errstr,
                        size_t errstr_size);

char *baton_assignment_meta_encode(const baton_assignment_meta_t *a);
int baton_assignment_meta_decode(const char *buf, size_t len, baton_assignment_meta_t *out,
                                 char *errstr, size_t errstr_size);

char *baton_worker_assignment_encode(const baton_worker_assignment_t *a);
/* Partitions must be distinct and within [0, BATON_PARTITIONS_MAX); keys
 * distinct valid names. */
int baton_worker_assignment_decode(const char *buf, size_t len, baton_worker_assignment_t *out,
                                   char *errstr, size_t errstr_size);
void baton_worker_assignment_release(baton_worker_assignment_t *a);
/* 1 if the two standby lists (each sorted by owner) say the same. */
int baton_standby_equal(const baton_standby_t *a, size_t na, const baton_standby_t *b, size_t nb);
/* Frees sb[0..n) and sb itself. */
void baton_standby_free(baton_standby_t *sb, size_t n);

char *baton_claim_encode(const baton_claim_t *c);
int baton_claim_decode(const char *buf, size_t len, baton_claim_t *out, char *errstr,
                       size_t errstr_size);

/* /<root>/<group>/pins/<partition>: the operator pinned the partition to
 * worker (batonctl pin). /<root>/<group>/drains/<worker-id> carries no data
 * that matters: its existence drains the worker. */
typedef struct {
    char worker[BATON_ID_MAX + 1];
} baton_pin_t;

char *baton_pin_encode(const baton_pin_t *p);
/* The worker must be a valid id. */
int baton_pin_decode(const char *buf, size_t len, baton_pin_t *out, char *errstr,
                     size_t errstr_size);

/* /<root>/<group>/history: the coordinator's ring of the last ownership
 * changes, oldest first, as {"entries":[{...}, ...]}. Each entry:
 * {"partition":7,"from":"w1"|null,"to":"w2"|null,"epoch":N|null,
 *  "generation":G,"time_ms":T,"reason":"leave"}. from/to "" mean none
 * (null in JSON); epoch -1 means unknown (null). */
#define BATON_HISTORY_MAX 1000               /* entries kept */
#define BATON_HISTORY_MAX_BYTES (512 * 1024) /* and at most this encoded */
typedef struct {
    int32_t partition;          /* -1 for a key */
    char key[BATON_ID_MAX + 1]; /* "" for a partition ("key" in JSON, partition null) */
    char from[BATON_ID_MAX + 1];
    char to[BATON_ID_MAX + 1];
    int64_t epoch;
    int64_t generation;
    int64_t time_ms;
    char reason[16]; /* one of baton_history_reason_valid() */
} baton_history_entry_t;

typedef struct {
    baton_history_entry_t *entries; /* heap; baton_history_release */
    size_t n;
} baton_history_t;

/* 0 if r is a reason history knows: new, join, leave, crash, drain, pin,
 * rebalance, forced. */
int baton_history_reason_valid(const char *r);
/* Encodes the last entries of e[0..n) that fit BATON_HISTORY_MAX and
 * BATON_HISTORY_MAX_BYTES (dropping the oldest). */
char *baton_history_encode(const baton_history_entry_t *e, size_t n);
int baton_history_decode(const char *buf, size_t len, baton_history_t *out, char *errstr,
                         size_t errstr_size);
void baton_history_release(baton_history_t *h);

/* Parses the sequence suffix of an ephemeral sequential node name
 * ("claim-0x1234-0000000007" -> 7, "c-0000000003" -> 3). Returns -1 if the
 * name has no valid 10-digit suffix. */
int64_t baton_seq_of(const char *name);

#endif
