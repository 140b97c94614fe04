/* test_codec.c: unit tests for the znode JSON codecs (baton_codec.h): round
 * trips of every record, name validation, sequence suffixes, and every
 * decoder's rejection of malformed, mistyped, out-of-range and oversized input
 * with a message that names the offending field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "baton_codec.h"
#include "baton_err.h"
#include "baton_util.h"

/* A string literal and its length, so literals with embedded bytes work. */
#define LIT(s) (s), (sizeof(s) - 1)

/* Returns a heap string of n copies of c. */
static char *repeat(char c, size_t n) {
    char *s = xmalloc(n + 1);
    memset(s, c, n);
    s[n] = 0;
    return s;
}

/* ---- names ---------------------------------------------------------------- */

static void test_id_valid(void **state) {
    (void)state;
    assert_int_equal(baton_id_valid("a"), 0);
    assert_int_equal(baton_id_valid("worker-1"), 0);
    assert_int_equal(baton_id_valid("A.b_c-9"), 0);
    assert_int_equal(baton_id_valid("..."), 0);
    assert_int_equal(baton_id_valid(".hidden"), 0);
    char *max = repeat('w', BATON_ID_MAX);
    assert_int_equal(baton_id_valid(max), 0);
    free(max);

    assert_int_not_equal(baton_id_valid(""), 0);
    assert_int_not_equal(baton_id_valid("."), 0);
    assert_int_not_equal(baton_id_valid(".."), 0);
    assert_int_not_equal(baton_id_valid("a/b"), 0);
    assert_int_not_equal(baton_id_valid("/"), 0);
    assert_int_not_equal(baton_id_valid("a b"), 0);
    assert_int_not_equal(baton_id_valid("a\tb"), 0);
    assert_int_not_equal(baton_id_valid("a:b"), 0);
    assert_int_not_equal(baton_id_valid("w\xc3\xa9"), 0);    /* "wé" in UTF-8 */
    assert_int_not_equal(baton_id_valid("\xe2\x98\x83"), 0); /* snowman */
    char *over = repeat('w', BATON_ID_MAX + 1);
    assert_int_not_equal(baton_id_valid(over), 0);
    free(over);
}

static void test_topic_valid(void **state) {
    (void)state;
    assert_int_equal(baton_topic_valid("orders"), 0);
    assert_int_equal(baton_topic_valid("orders.v2_eu-1"), 0);
    /* Topics may be longer than ids: 129..249 is a valid topic, not an id. */
    char *t = repeat('t', BATON_ID_MAX + 1);
    assert_int_equal(baton_topic_valid(t), 0);
    assert_int_not_equal(baton_id_valid(t), 0);
    free(t);
    t = repeat('t', BATON_TOPIC_MAX);
    assert_int_equal(baton_topic_valid(t), 0);
    free(t);

    t = repeat('t', BATON_TOPIC_MAX + 1);
    assert_int_not_equal(baton_topic_valid(t), 0);
    free(t);
    assert_int_not_equal(baton_topic_valid(""), 0);
    assert_int_not_equal(baton_topic_valid("."), 0);
    assert_int_not_equal(baton_topic_valid(".."), 0);
    assert_int_not_equal(baton_topic_valid("a/b"), 0);
    assert_int_not_equal(baton_topic_valid("a b"), 0);
    assert_int_not_equal(baton_topic_valid("t\xc3\xa9"), 0);
}

/* ---- sequence suffixes ---------------------------------------------------- */

static void test_seq_of(void **state) {
    (void)state;
    assert_int_equal(baton_seq_of("claim-0100000bd46a0003-0000000007"), 7);
    assert_int_equal(baton_seq_of("c-0000000003"), 3);
    assert_int_equal(baton_seq_of("c-0000000000"), 0);
    assert_int_equal(baton_seq_of("c-2147483647"), 2147483647LL);
    assert_int_equal(baton_seq_of("c-9999999999"), 9999999999LL);
    assert_int_equal(baton_seq_of("0000000042"), 42);

    assert_int_equal(baton_seq_of(""), -1);
    assert_int_equal(baton_seq_of("c-"), -1);
    assert_int_equal(baton_seq_of("c-3"), -1);
    assert_int_equal(baton_seq_of("000000003"), -1);   /* 9 digits */
    assert_int_equal(baton_seq_of("c-000000003"), -1); /* 9 digits after '-' */
    assert_int_equal(baton_seq_of("c-00000000a3"), -1);
    assert_int_equal(baton_seq_of("c-000000000x"), -1);
    assert_int_equal(baton_seq_of("c-0000000003x"), -1);
    assert_int_equal(baton_seq_of("c-00000 0003"), -1);
    assert_int_equal(baton_seq_of("claim-abcdef"), -1);
}

/* ---- round trips ---------------------------------------------------------- */

static void test_config_round_trip(void **state) {
    (void)state;
    baton_config_t in = {.partitions = 12}, out;
    strcpy(in.topic, "orders.v2");
    strcpy(in.strategy, "roundrobin");
    char *s = baton_config_encode(&in);
    assert_non_null(s);
    char err[256] = "";
    assert_int_equal(baton_config_decode(s, strlen(s), &out, err, sizeof(err)), BATON_OK);
    assert_string_equal(out.topic, "orders.v2");
    assert_int_equal(out.partitions, 12);
    assert_string_equal(out.strategy, "roundrobin");
    free(s);

    /* Boundaries: the longest topic and both partition-count limits. */
    char *topic = repeat('t', BATON_TOPIC_MAX);
    strcpy(in.topic, topic);
    int32_t counts[] = {1, BATON_PARTITIONS_MAX};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(counts); i++) {
        in.partitions = counts[i];
        s = baton_config_encode(&in);
        assert_int_equal(baton_config_decode(s, strlen(s), &out, err, sizeof(err)), BATON_OK);
        assert_string_equal(out.topic, topic);
        assert_int_equal(out.partitions, counts[i]);
        free(s);
    }
    free(topic);
}

static void test_config_defaults(void **state) {
    (void)state;
    baton_config_t out;
    char err[256] = "";
    assert_int_equal(
        baton_config_decode(LIT("{\"topic\":\"t\",\"partitions\":3}"), &out, err, sizeof(err)),
        BATON_OK);
    assert_string_equal(out.strategy, "sticky");
    assert_int_equal(
        baton_config_decode(LIT("{\"topic\":\"t\",\"partitions\":3,\"strategy\":null}"), &out, err,
                            sizeof(err)),
        BATON_OK);
    assert_string_equal(out.strategy, "sticky");
}

/* Issue 13: the group id in the config (absent in older nodes, which stay
 * readable) and the sink binding node. */
static void test_group_uuid_and_binding(void **state) {
    (void)state;
    char err[256] = "";
    baton_config_t in = {.partitions = 2}, out;
    strcpy(in.topic, "t");
    strcpy(in.strategy, "sticky");
    char *s = baton_config_encode(&in);
    assert_null(strstr(s, "group_uuid")); /* none: not written */
    free(s);
    assert_int_equal(baton_uuid_new(in.group_uuid), 0);
    assert_int_equal(baton_uuid_valid(in.group_uuid), 0);
    s = baton_config_encode(&in);
    assert_int_equal(baton_config_decode(s, strlen(s), &out, err, sizeof(err)), BATON_OK);
    assert_string_equal(out.group_uuid, in.group_uuid);
    free(s);
    assert_int_equal(
        baton_config_decode(LIT("{\"topic\":\"t\",\"partitions\":3}"), &out, err, sizeof(err)),
        BATON_OK);
    assert_string_equal(out.group_uuid, "");
    assert_int_equal(baton_config_decode(LIT("{\"topic\":\"t\",\"partitions\":3,"
                                             "\"group_uuid\":\"not-a-uuid\"}"),
                                         &out, err, sizeof(err)),
                     BATON_CORRUPT);
    assert_non_null(strstr(err, "group_uuid"));
    assert_int_equal(baton_config_decode(LIT("{\"topic\":\"t\",\"partitions\":3,"
                                             "\"group_uuid\":7}"),
                                         &out, err, sizeof(err)),
                     BATON_CORRUPT);

    baton_sink_binding_t b = {.bound_ms = 1764583200000}, bo;
    assert_int_equal(baton_uuid_new(b.sink_id), 0);
    strcpy(b.sink_uri, "sqlite:/srv/out.db");
    strcpy(b.bound_by, "w1");
    s = baton_sink_binding_encode(&b);
    assert_int_equal(baton_sink_binding_decode(s, strlen(s), &bo, err, sizeof(err)), BATON_OK);
    assert_string_equal(bo.sink_id, b.sink_id);
    assert_string_equal(bo.sink_uri, b.sink_uri);
    assert_string_equal(bo.bound_by, "w1");
    assert_int_equal(bo.bound_ms, b.bound_ms);
    free(s);
    assert_int_equal(baton_sink_binding_decode(LIT("{\"bound_by\":\"w1\"}"), &bo, err, sizeof(err)),
                     BATON_CORRUPT);
    assert_non_null(strstr(err, "sink_id"));
    assert_int_equal(baton_sink_binding_decode(LIT("{\"sink_id\":\"x\"}"), &bo, err, sizeof(err)),
                     BATON_CORRUPT);
    assert_int_equal(
        baton_sink_binding_decode(LIT("{\"sink_id\":\"0ca9a7c0-f3af-4f6d-badd-1284608c8a6e\","
                                      "\"bound_ms\":-1}"),
                                  &bo, err, sizeof(err)),
        BATON_CORRUPT);
    assert_int_equal(baton_sink_binding_decode(LIT("[1]"), &bo, err, sizeof(err)), BATON_CORRUPT);
}

static void test_member_round_trip(void **state) {
    (void)state;
    baton_member_t in = {.pid = 4242, .capacity = 3}, out;
    char *id = repeat('w', BATON_ID_MAX);
    strcpy(in.id, id);
    strcpy(in.host, "host-1.example.com");
    strcpy(in.rack, "rack-a");
    strcpy(in.incarnation, "0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f");
    char *s = baton_member_encode(&in);
    char err[256] = "";
    assert_int_equal(baton_member_decode(s, strlen(s), &out, err, sizeof(err)), BATON_OK);
    assert_string_equal(out.incarnation, "0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f");
    assert_string_equal(out.id, id);
    assert_string_equal(out.host, "host-1.example.com");
    assert_int_equal(out.pid, 4242);
    assert_int_equal(out.capacity, 3);
    assert_string_equal(out.rack, "rack-a");
    free(s);
    free(id);

    /* No rack and capacity 0 encode as rack null and capacity 1. */
    baton_member_t bare = {.pid = INT64_MAX};
    strcpy(bare.id, "c1");
    s = baton_member_encode(&bare);
    assert_non_null(strstr(s, "\"rack\":null"));
    assert_int_equal(baton_member_decode(s, strlen(s), &out, err, sizeof(err)), BATON_OK);
    assert_string_equal(out.id, "c1");
    assert_string_equal(out.host, "");
    assert_int_equal(out.pid, INT64_MAX);
    assert_int_equal(out.capacity, 1);
    assert_string_equal(out.rack, "");
    assert_string_equal(out.incarnation, "");
    assert_null(strstr(s, "incarnation"));
    free(s);
    /* An incarnation must be a UUID. */
    assert_int_equal(
        baton_member_decode(LIT("{\"id\":\"w1\",\"incarnation\":\"x\"}"), &out, err, sizeof(err)),
        BATON_CORRUPT);
    assert_non_null(strstr(err, "incarnation"));
    assert_int_equal(
        baton_member_decode(LIT("{\"id\":\"w1\",\"incarnation\":7}"), &out, err, sizeof(err)),
        BATON_CORRUPT);
}

static void test_member_defaults(void **state) {
    (void)state;
    baton_member_t out;
    memset(&out, 0x55, sizeof(out));
    char err[256] = "";
    assert_int_equal(baton_member_decode(LIT("{\"id\":\"w1\"}"), &out, err, sizeof(err)), BATON_OK);
    assert_string_equal(out.id, "w1");
    assert_string_equal(out.host, "");
    assert_int_equal(out.pid, 0);
    assert_int_equal(out.capacity, 1);
    assert_string_equal(out.rack, "");
}

static void test_assignment_meta_round_trip(void **state) {
    (void)state;
    baton_assignment_meta_t in = {.generation = 7, .coordinator_epoch = 3}, out;
    strcpy(in.strategy, "sticky");
    char *s = baton_assignment_meta_encode(&in);
    char err[256] = "";
    assert_int_equal(baton_assignment_meta_decode(s, strlen(s), &out, err, sizeof(err)), BATON_OK);
    assert_int_equal(out.generation, 7);
    assert_int_equal(out.coordinator_epoch, 3);
    assert_string_equal(out.strategy, "sticky");
    free(s);

    in.generation = INT64_MAX;
    in.coordinator_epoch = 0;
    s = baton_assignment_meta_encode(&in);
    assert_int_equal(baton_assignment_meta_decode(s, strlen(s), &out, err, sizeof(err)), BATON_OK);
    assert_int_equal(out.generation, INT64_MAX);
    assert_int_equal(out.coordinator_epoch, 0);
    free(s);

    /* Only the generation is required. */
    assert_int_equal(
        baton_assignment_meta_decode(LIT("{\"generation\":0}"), &out, err, sizeof(err)), BATON_OK);
    assert_int_equal(out.generation, 0);
    assert_int_equal(out.coordinator_epoch, 0);
    assert_string_equal(out.strategy, "");
}

static void test_worker_assignment_round_trip(void **state) {
    (void)state;
    int32_t parts[] = {0, 5, 17, BATON_PARTITIONS_MAX - 1};
    baton_worker_assignment_t in = {
        .generation = 9, .partitions = parts, .npartitions = BATON_ARRAY_SIZE(parts)};
    char *s = baton_worker_assignment_encode(&in);
    baton_worker_assignment_t out;
    char err[256] = "";
    assert_int_equal(baton_worker_assignment_decode(s, strlen(s), &out, err, sizeof(err)),
                     BATON_OK);
    assert_int_equal(out.generation, 9);
    assert_int_equal(out.npartitions, BATON_ARRAY_SIZE(parts));
    assert_memory_equal(out.partitions, parts, sizeof(parts));
    baton_worker_assignment_release(&out);
    assert_null(out.partitions);
    assert_int_equal(out.npartitions, 0);
    free(s);

    /* An idle worker: no partitions. */
    baton_worker_assignment_t none = {.generation = 1};
    s = baton_worker_assignment_encode(&none);
    assert_non_null(strstr(s, "\"partitions\":[]"));
    assert_int_equal(baton_worker_assignment_decode(s, strlen(s), &out, err, sizeof(err)),
                     BATON_OK);
    assert_int_equal(out.generation, 1);
    assert_int_equal(out.npartitions, 0);
    baton_worker_assignment_release(&out);
    free(s);
}

static void test_worker_assignment_sorts(void **state) {
    (void)state;
    baton_worker_assignment_t out;
    char err[256] = "";
    assert_int_equal(
        baton_worker_assignment_decode(LIT("{\"generation\":4,\"partitions\":[9,2,7,0,3]}"), &out,
                                       err, sizeof(err)),
        BATON_OK);
    int32_t want[] = {0, 2, 3, 7, 9};
    assert_int_equal(out.npartitions, BATON_ARRAY_SIZE(want));
    assert_memory_equal(out.partitions, want, sizeof(want));
    baton_worker_assignment_release(&out);
}

static void test_claim_round_trip(void **state) {
    (void)state;
    baton_claim_t in = {.generation = 11}, out;
    strcpy(in.worker, "worker-7");
    char *s = baton_claim_encode(&in);
    char err[256] = "";
    assert_int_equal(baton_claim_decode(s, strlen(s), &out, err, sizeof(err)), BATON_OK);
    assert_string_equal(out.worker, "worker-7");
    assert_int_equal(out.generation, 11);
    free(s);

    char *w = repeat('w', BATON_ID_MAX);
    strcpy(in.worker, w);
    in.generation = INT64_MAX;
    s = baton_claim_encode(&in);
    assert_int_equal(baton_claim_decode(s, strlen(s), &out, err, sizeof(err)), BATON_OK);
    assert_string_equal(out.worker, w);
    assert_int_equal(out.generation, INT64_MAX);
    free(s);
    free(w);

    /* The generation is optional and defaults to 0. */
    assert_int_equal(baton_claim_decode(LIT("{\"worker\":\"w\"}"), &out, err, sizeof(err)),
                     BATON_OK);
    assert_int_equal(out.generation, 0);
}

/* Unknown fields are accepted so older binaries read newer records. */
static void test_unknown_fields_accepted(void **state) {
    (void)state;
    char err[256] = "";
    baton_config_t c;
    assert_int_equal(baton_config_decode(LIT("{\"topic\":\"t\",\"partitions\":2,\"version\":9,"
                                             "\"future\":{\"x\":[1,2,{}]},\"flag\":true}"),
                                         &c, err, sizeof(err)),
                     BATON_OK);
    assert_int_equal(c.partitions, 2);
    baton_member_t m;
    assert_int_equal(baton_member_decode(LIT("{\"id\":\"w\",\"zone\":\"eu\",\"labels\":[]}"), &m,
                                         err, sizeof(err)),
                     BATON_OK);
    assert_string_equal(m.id, "w");
    baton_assignment_meta_t a;
    assert_int_equal(
        baton_assignment_meta_decode(LIT("{\"generation\":5,\"note\":null}"), &a, err, sizeof(err)),
        BATON_OK);
    assert_int_equal(a.generation, 5);
    baton_worker_assignment_t wa;
    assert_int_equal(
        baton_worker_assignment_decode(
            LIT("{\"generation\":5,\"partitions\":[1],\"weights\":[0.5]}"), &wa, err, sizeof(err)),
        BATON_OK);
    assert_int_equal(wa.npartitions, 1);
    baton_worker_assignment_release(&wa);
    baton_claim_t cl;
    assert_int_equal(baton_claim_decode(LIT("{\"worker\":\"w\",\"generation\":1,\"at\":123.5}"),
                                        &cl, err, sizeof(err)),
                     BATON_OK);
    assert_string_equal(cl.worker, "w");
}

/* ---- malformed input ------------------------------------------------------ */

/* Every decoder behind one signature; output is decoded into a local and
 * released, and a failed worker-assignment decode must leave nothing to free. */
typedef int (*decode_fn)(const char *buf, size_t len, char *err, size_t n);

static int dec_config(const char *b, size_t l, char *e, size_t n) {
    baton_config_t c;
    return baton_config_decode(b, l, &c, e, n);
}
static int dec_member(const char *b, size_t l, char *e, size_t n) {
    baton_member_t m;
    return baton_member_decode(b, l, &m, e, n);
}
static int dec_meta(const char *b, size_t l, char *e, size_t n) {
    baton_assignment_meta_t a;
    return baton_assignment_meta_decode(b, l, &a, e, n);
}
static int dec_worker(const char *b, size_t l, char *e, size_t n) {
    baton_worker_assignment_t a;
    memset(&a, 0, sizeof(a));
    int rc = baton_worker_assignment_decode(b, l, &a, e, n);
    if (rc != BATON_OK) {
        assert_null(a.partitions);
        assert_int_equal(a.npartitions, 0);
    }
    baton_worker_assignment_release(&a);
    return rc;
}
static int dec_claim(const char *b, size_t l, char *e, size_t n) {
    baton_claim_t c;
    return baton_claim_decode(b, l, &c, e, n);
}

typedef struct {
    const char *record; /* the record name every message starts with */
    decode_fn decode;
} decoder_t;

static const decoder_t decoders[] = {
    {"group config", dec_config},      {"member", dec_member}, {"assignment", dec_meta},
    {"worker assignment", dec_worker}, {"claim", dec_claim},
};

/* Asserts buf[0..len) is rejected as BATON_CORRUPT with a message that
 * starts with the record name and contains each non-NULL needle. */
static void expect_corrupt(const decoder_t *d, const char *buf, size_t len, const char *needle1,
                           const char *needle2) {
    char err[512];
    memset(err, 'X', sizeof(err));
    err[sizeof(err) - 1] = 0;
    int rc = d->decode(buf, len, err, sizeof(err));
    if (rc != BATON_CORRUPT)
        fail_msg("%s: %.*s: expected BATON_CORRUPT, got %d (%s)", d->record,
                 (int)(len > 200 ? 200 : len), buf ? buf : "(null)", rc, err);
    if (strncmp(err, d->record, strlen(d->record)) != 0)
        fail_msg("%s: %.*s: message '%s' does not name the record", d->record,
                 (int)(len > 200 ? 200 : len), buf ? buf : "(null)", err);
    if (needle1 && !strstr(err, needle1))
        fail_msg("%s: %.*s: message '%s' lacks '%s'", d->record, (int)(len > 200 ? 200 : len),
                 buf ? buf : "(null)", err, needle1);
    if (needle2 && !strstr(err, needle2))
        fail_msg("%s: %.*s: message '%s' lacks '%s'", d->record, (int)(len > 200 ? 200 : len),
                 buf ? buf : "(null)", err, needle2);
}

static void expect_corrupt_str(const decoder_t *d, const char *json, const char *needle) {
    expect_corrupt(d, json, strlen(json), needle, NULL);
}

/* Malformed envelopes, the same for every decoder. */
static void test_decode_envelope(void **state) {
    (void)state;
    for (size_t i = 0; i < BATON_ARRAY_SIZE(decoders); i++) {
        const decoder_t *d = &decoders[i];
        expect_corrupt(d, NULL, 0, "empty", NULL);
        expect_corrupt(d, "", 0, "empty", NULL);
        expect_corrupt(d, "{}", 0, "empty", NULL); /* len 0 wins over content */
        expect_corrupt_str(d, "not json", "invalid JSON");
        expect_corrupt_str(d, "{\"a\":", "invalid JSON");
        expect_corrupt_str(d, "{} {}", "invalid JSON");
        expect_corrupt_str(d, "[]", "object");
        expect_corrupt_str(d, "[{\"generation\":1}]", "object");
        /* Scalars: jansson itself refuses them at top level. */
        expect_corrupt_str(d, "\"str\"", NULL);
        expect_corrupt_str(d, "42", NULL);
        expect_corrupt_str(d, "null", NULL);
        /* Invalid UTF-8 is not JSON. */
        expect_corrupt_str(d, "{\"x\":\"\xff\"}", "invalid JSON");
        /* A trailing NUL (a C string stored with its terminator) is junk. */
        expect_corrupt(d, LIT("{}\0"), "invalid JSON", NULL);
        /* NUL inside a key cannot be represented; jansson refuses it. */
        expect_corrupt_str(d, "{\"a\\u0000b\":1}", "invalid JSON");
        /* Missing the required field. */
        expect_corrupt_str(d, "{}", "missing field");
    }
}

/* Buffers over BATON_ZNODE_MAX are rejected before parsing; exactly
 * BATON_ZNODE_MAX bytes of valid JSON is accepted. */
static void test_decode_oversized(void **state) {
    (void)state;
    const char *body = "{\"topic\":\"t\",\"partitions\":1,\"worker\":\"w\",\"id\":\"w\","
                       "\"generation\":1}";
    size_t blen = strlen(body);
    char *buf = xmalloc(BATON_ZNODE_MAX + 2);
    memcpy(buf, body, blen);
    memset(buf + blen, ' ', BATON_ZNODE_MAX + 2 - blen);

    for (size_t i = 0; i < BATON_ARRAY_SIZE(decoders); i++) {
        const decoder_t *d = &decoders[i];
        if (d->decode == dec_worker)
            continue;
        char err[256] = "";
        if (d->decode(buf, BATON_ZNODE_MAX, err, sizeof(err)) != BATON_OK)
            fail_msg("%s: exactly BATON_ZNODE_MAX bytes rejected: %s", d->record, err);
        expect_corrupt(d, buf, BATON_ZNODE_MAX + 1, "limit", NULL);
        expect_corrupt(d, buf, (size_t)BATON_ZNODE_MAX * 4, "limit", NULL);
    }

    /* A worker assignment of a million partitions is the one record that
     * legitimately grows large; over the limit it is refused. */
    const char *wa = "{\"generation\":1,\"partitions\":[1]}";
    memcpy(buf, wa, strlen(wa));
    memset(buf + strlen(wa), ' ', BATON_ZNODE_MAX + 2 - strlen(wa));
    char err[256] = "";
    assert_int_equal(dec_worker(buf, BATON_ZNODE_MAX, err, sizeof(err)), BATON_OK);
    expect_corrupt(&decoders[3], buf, BATON_ZNODE_MAX + 1, "limit", NULL);
    free(buf);
}

/* Duplicate keys are ambiguous (which one wins depends on the reader). */
static void test_decode_duplicate_keys(void **state) {
    (void)state;
    expect_corrupt_str(&decoders[0], "{\"topic\":\"t\",\"partitions\":1,\"partitions\":2}",
                       "duplicate");
    expect_corrupt_str(&decoders[1], "{\"id\":\"a\",\"id\":\"b\"}", "duplicate");
    expect_corrupt_str(&decoders[2], "{\"generation\":1,\"generation\":2}", "duplicate");
    expect_corrupt_str(&decoders[3], "{\"generation\":1,\"partitions\":[1],\"partitions\":[2]}",
                       "duplicate");
    expect_corrupt_str(&decoders[4], "{\"worker\":\"a\",\"worker\":\"b\"}", "duplicate");
    /* Even an unknown field may not repeat. */
    expect_corrupt_str(&decoders[4], "{\"worker\":\"a\",\"x\":1,\"x\":1}", "duplicate");
}

typedef struct {
    const char *json;
    const char *field; /* must appear in the message, e.g. "'partitions'" */
} bad_t;

static void expect_all(const decoder_t *d, const bad_t *cases, size_t n) {
    for (size_t i = 0; i < n; i++)
        expect_corrupt_str(d, cases[i].json, cases[i].field);
}

static void test_config_decode_bad(void **state) {
    (void)state;
    static const bad_t cases[] = {
        {"{\"partitions\":3}", "'topic'"},
        {"{\"topic\":null,\"partitions\":3}", "'topic'"},
        {"{\"topic\":\"t\"}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":null}", "'partitions'"},
        {"{\"topic\":5,\"partitions\":3}", "'topic'"},
        {"{\"topic\":[\"t\"],\"partitions\":3}", "'topic'"},
        {"{\"topic\":\"t\",\"partitions\":\"3\"}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":3.0}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":2.5}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":true}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":{}}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":0}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":-1}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":1000001}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":4294967297}", "'partitions'"},
        {"{\"topic\":\"t\",\"partitions\":3,\"strategy\":7}", "'strategy'"},
        {"{\"topic\":\"t\",\"partitions\":3,\"strategy\":"
         "\"0123456789012345678901234567890123\"}",
         "'strategy'"},
        {"{\"topic\":\"a\\u0000b\",\"partitions\":3}", "'topic'"},
        {"{\"topic\":\"\",\"partitions\":3}", "topic"},
        {"{\"topic\":\"a/b\",\"partitions\":3}", "topic"},
        {"{\"topic\":\"..\",\"partitions\":3}", "topic"},
        {"{\"topic\":\"a b\",\"partitions\":3}", "topic"},
        {"{\"topic\":\"caf\\u00e9\",\"partitions\":3}", "topic"},
    };
    expect_all(&decoders[0], cases, BATON_ARRAY_SIZE(cases));

    /* Topic one byte over Kafka's limit. */
    char *t = repeat('t', BATON_TOPIC_MAX + 1);
    char *json = xasprintf("{\"topic\":\"%s\",\"partitions\":3}", t);
    expect_corrupt_str(&decoders[0], json, "'topic'");
    free(json);
    free(t);
}

static void test_member_decode_bad(void **state) {
    (void)state;
    static const bad_t cases[] = {
        {"{\"host\":\"h\"}", "'id'"},
        {"{\"id\":null}", "'id'"},
        {"{\"id\":7}", "'id'"},
        {"{\"id\":true}", "'id'"},
        {"{\"id\":\"a\\u0000b\"}", "'id'"},
        {"{\"id\":\"w\",\"host\":1}", "'host'"},
        {"{\"id\":\"w\",\"pid\":-1}", "'pid'"},
        {"{\"id\":\"w\",\"pid\":\"12\"}", "'pid'"},
        {"{\"id\":\"w\",\"pid\":1.5}", "'pid'"},
        {"{\"id\":\"w\",\"pid\":false}", "'pid'"},
        {"{\"id\":\"w\",\"capacity\":0}", "'capacity'"},
        {"{\"id\":\"w\",\"capacity\":-2}", "'capacity'"},
        {"{\"id\":\"w\",\"capacity\":1000001}", "'capacity'"},
        {"{\"id\":\"w\",\"capacity\":2.0}", "'capacity'"},
        {"{\"id\":\"w\",\"capacity\":true}", "'capacity'"},
        {"{\"id\":\"w\",\"rack\":5}", "'rack'"},
        {"{\"id\":\"w\",\"rack\":\"r\\u0000\"}", "'rack'"},
    };
    expect_all(&decoders[1], cases, BATON_ARRAY_SIZE(cases));

    /* Each string field one byte over its buffer is rejected; at the limit it fits. */
    struct {
        const char *key;
        size_t max;
    } longs[] = {{"id", BATON_ID_MAX}, {"host", 255}, {"rack", 63}};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(longs); i++) {
        for (size_t len = longs[i].max; len <= longs[i].max + 1; len++) {
            char *v = repeat('x', len);
            char *json = strcmp(longs[i].key, "id") == 0
                             ? xasprintf("{\"id\":\"%s\"}", v)
                             : xasprintf("{\"id\":\"w\",\"%s\":\"%s\"}", longs[i].key, v);
            char *field = xasprintf("'%s'", longs[i].key);
            if (len > longs[i].max) {
                expect_corrupt_str(&decoders[1], json, field);
            } else {
                char err[256] = "";
                if (dec_member(json, strlen(json), err, sizeof(err)) != BATON_OK)
                    fail_msg("member %s of %zu bytes rejected: %s", longs[i].key, len, err);
            }
            free(field);
            free(json);
            free(v);
        }
    }
}

static void test_assignment_meta_decode_bad(void **state) {
    (void)state;
    static const bad_t cases[] = {
        {"{\"strategy\":\"sticky\"}", "'generation'"},
        {"{\"generation\":null}", "'generation'"},
        {"{\"generation\":-1}", "'generation'"},
        {"{\"generation\":\"1\"}", "'generation'"},
        {"{\"generation\":1.0}", "'generation'"},
        {"{\"generation\":true}", "'generation'"},
        {"{\"generation\":[1]}", "'generation'"},
        {"{\"generation\":1,\"coordinator_epoch\":-1}", "'coordinator_epoch'"},
        {"{\"generation\":1,\"coordinator_epoch\":\"2\"}", "'coordinator_epoch'"},
        {"{\"generation\":1,\"coordinator_epoch\":0.5}", "'coordinator_epoch'"},
        {"{\"generation\":1,\"strategy\":false}", "'strategy'"},
        {"{\"generation\":1,\"strategy\":\"s\\u0000\"}", "'strategy'"},
        {"{\"generation\":1,\"strategy\":\"01234567890123456789012345678901\"}", "'strategy'"},
    };
    expect_all(&decoders[2], cases, BATON_ARRAY_SIZE(cases));
    /* Beyond int64 does not parse as an integer at all. */
    expect_corrupt_str(&decoders[2], "{\"generation\":9223372036854775808}", NULL);
}

static void test_worker_assignment_decode_bad(void **state) {
    (void)state;
    static const bad_t cases[] = {
        {"{\"partitions\":[1]}", "'generation'"},
        {"{\"generation\":-1,\"partitions\":[1]}", "'generation'"},
        {"{\"generation\":\"3\",\"partitions\":[1]}", "'generation'"},
        {"{\"generation\":3.0,\"partitions\":[1]}", "'generation'"},
        {"{\"generation\":true,\"partitions\":[1]}", "'generation'"},
        {"{\"generation\":1}", "'partitions'"},
        {"{\"generation\":1,\"partitions\":null}", "'partitions'"},
        {"{\"generation\":1,\"partitions\":{}}", "'partitions'"},
        {"{\"generation\":1,\"partitions\":\"1,2\"}", "'partitions'"},
        {"{\"generation\":1,\"partitions\":3}", "'partitions'"},
        {"{\"generation\":1,\"partitions\":[1.5]}", "partitions[0]"},
        {"{\"generation\":1,\"partitions\":[1.0]}", "partitions[0]"},
        {"{\"generation\":1,\"partitions\":[0,\"3\"]}", "partitions[1]"},
        {"{\"generation\":1,\"partitions\":[0,1,null]}", "partitions[2]"},
        {"{\"generation\":1,\"partitions\":[true]}", "partitions[0]"},
        {"{\"generation\":1,\"partitions\":[[1]]}", "partitions[0]"},
        {"{\"generation\":1,\"partitions\":[-1]}", "partitions[0]"},
        {"{\"generation\":1,\"partitions\":[1000000]}", "partitions[0]"},
        {"{\"generation\":1,\"partitions\":[4,4294967296]}", "partitions[1]"},
        /* Duplicates, adjacent or not, sorted or not. */
        {"{\"generation\":1,\"partitions\":[1,1]}", "partition 1 "},
        {"{\"generation\":1,\"partitions\":[3,0,7,3]}", "partition 3 "},
        {"{\"generation\":1,\"partitions\":[5,2,9,2,5]}", "twice"},
    };
    expect_all(&decoders[3], cases, BATON_ARRAY_SIZE(cases));
}

static void test_claim_decode_bad(void **state) {
    (void)state;
    static const bad_t cases[] = {
        {"{\"generation\":1}", "'worker'"},
        {"{\"worker\":null,\"generation\":1}", "'worker'"},
        {"{\"worker\":5,\"generation\":1}", "'worker'"},
        {"{\"worker\":{},\"generation\":1}", "'worker'"},
        {"{\"worker\":\"a\\u0000b\",\"generation\":1}", "'worker'"},
        {"{\"worker\":\"w\",\"generation\":-1}", "'generation'"},
        {"{\"worker\":\"w\",\"generation\":\"2\"}", "'generation'"},
        {"{\"worker\":\"w\",\"generation\":2.0}", "'generation'"},
        {"{\"worker\":\"w\",\"generation\":true}", "'generation'"},
    };
    expect_all(&decoders[4], cases, BATON_ARRAY_SIZE(cases));

    char *w = repeat('w', BATON_ID_MAX + 1);
    char *json = xasprintf("{\"worker\":\"%s\",\"generation\":1}", w);
    expect_corrupt_str(&decoders[4], json, "'worker'");
    free(json);
    free(w);
}

/* The error string is always terminated, truncated to fit, and optional. */
static void test_decode_errstr_sizes(void **state) {
    (void)state;
    baton_config_t c;
    char small[8];
    memset(small, 'X', sizeof(small));
    assert_int_equal(
        baton_config_decode(LIT("{\"topic\":\"t\",\"partitions\":0}"), &c, small, sizeof(small)),
        BATON_CORRUPT);
    assert_int_equal(strlen(small), sizeof(small) - 1);
    assert_memory_equal(small, "group c", 7);
    assert_int_equal(baton_config_decode(LIT("{\"topic\":\"t\",\"partitions\":0}"), &c, NULL, 0),
                     BATON_CORRUPT);
    assert_int_equal(baton_config_decode(LIT("nope"), &c, NULL, 0), BATON_CORRUPT);
}

/* Strings that are not UTF-8 (a Latin-1 file name in a sink URI, a long
 * UTF-8 path cut inside a character by the binding's 512 bytes, a host
 * name) encode: kept when valid, their bytes past ASCII shown as '?'
 * otherwise. json_pack refused them and the encoder aborted. */
static void test_encode_not_utf8(void **state) {
    (void)state;
    char err[256] = "";
    baton_sink_binding_t b = {.bound_ms = 1}, bo;
    assert_int_equal(baton_uuid_new(b.sink_id), 0);
    strcpy(b.sink_uri, "sqlite:/data/caf\xe9.db");
    strcpy(b.bound_by, "w1");
    char *s = baton_sink_binding_encode(&b);
    assert_non_null(s);
    assert_int_equal(baton_sink_binding_decode(s, strlen(s), &bo, err, sizeof(err)), BATON_OK);
    assert_string_equal(bo.sink_uri, "sqlite:/data/caf?.db");
    free(s);
    /* 600 bytes of "é" cut at 511: the last character is half there. */
    char longpath[700] = "sqlite:/";
    for (int i = 0; i < 300; i++)
        strcat(longpath, "\xc3\xa9");
    memcpy(b.sink_uri, longpath, sizeof(b.sink_uri) - 1); /* the binder's cut */
    b.sink_uri[sizeof(b.sink_uri) - 1] = 0;
    s = baton_sink_binding_encode(&b);
    assert_int_equal(baton_sink_binding_decode(s, strlen(s), &bo, err, sizeof(err)), BATON_OK);
    assert_int_equal(strlen(bo.sink_uri), strlen(b.sink_uri));
    assert_memory_equal(bo.sink_uri, "sqlite:/\xc3\xa9\xc3\xa9", 12); /* the whole ones kept */
    assert_int_equal(bo.sink_uri[strlen(bo.sink_uri) - 1], '?');      /* the half one not */
    free(s);
    /* The sequences RFC 3629 allows, and those it does not. */
    const struct {
        const char *s;
        size_t len;
    } seqs[] = {{"a", 1},
                {"\xc3\xa9", 2},
                {"\xe2\x82\xac", 3},
                {"\xf0\x9f\x98\x80", 4},
                {"\xc0\x80", 0},
                {"\xc3", 0},
                {"\x80", 0},
                {"\xed\xa0\x80", 0},
                {"\xe0\x80\x80", 0},
                {"\xf4\x90\x80\x80", 0},
                {"\xf5\x80\x80\x80", 0},
                {"\xff", 0}};
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++)
        assert_int_equal(baton_utf8_seq((const unsigned char *)seqs[i].s, strlen(seqs[i].s)),
                         seqs[i].len);
    /* Valid UTF-8 is kept as it is. */
    strcpy(b.sink_uri, "sqlite:/data/caf\xc3\xa9.db");
    s = baton_sink_binding_encode(&b);
    assert_int_equal(baton_sink_binding_decode(s, strlen(s), &bo, err, sizeof(err)), BATON_OK);
    assert_string_equal(bo.sink_uri, "sqlite:/data/caf\xc3\xa9.db");
    free(s);
    baton_member_t m = {.pid = 1, .capacity = 1}, mo;
    strcpy(m.id, "w1");
    strcpy(m.host, "h\xff");
    strcpy(m.rack, "r\xfe");
    s = baton_member_encode(&m);
    assert_int_equal(baton_member_decode(s, strlen(s), &mo, err, sizeof(err)), BATON_OK);
    assert_string_equal(mo.host, "h?");
    assert_string_equal(mo.rack, "r?");
    free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_valid),
        cmocka_unit_test(test_topic_valid),
        cmocka_unit_test(test_seq_of),
        cmocka_unit_test(test_config_round_trip),
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_group_uuid_and_binding),
        cmocka_unit_test(test_member_round_trip),
        cmocka_unit_test(test_encode_not_utf8),
        cmocka_unit_test(test_member_defaults),
        cmocka_unit_test(test_assignment_meta_round_trip),
        cmocka_unit_test(test_worker_assignment_round_trip),
        cmocka_unit_test(test_worker_assignment_sorts),
        cmocka_unit_test(test_claim_round_trip),
        cmocka_unit_test(test_unknown_fields_accepted),
        cmocka_unit_test(test_decode_envelope),
        cmocka_unit_test(test_decode_oversized),
        cmocka_unit_test(test_decode_duplicate_keys),
        cmocka_unit_test(test_config_decode_bad),
        cmocka_unit_test(test_member_decode_bad),
        cmocka_unit_test(test_assignment_meta_decode_bad),
        cmocka_unit_test(test_worker_assignment_decode_bad),
        cmocka_unit_test(test_claim_decode_bad),
        cmocka_unit_test(test_decode_errstr_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
