/* fuzz_codec.c: fuzz target for every znode decoder in baton_codec.h. Each
 * input is fed to every decoder (config, member, assignment meta, worker
 * assignment, claim, history, pin, sink binding), to baton_seq_of and to
 * the claim-name parser
 * (baton_layout.h). Beyond "no crash, no leak, no
 * out-of-bounds read", it checks the properties callers rely on:
 *  - an error returns BATON_CORRUPT with a non-empty message;
 *  - a success yields values inside the documented limits, and survives a
 *    round trip: decode(encode(x)) succeeds and gives x back. */
#include "fuzz.h"

#include "baton_codec.h"
#include "baton_err.h"
#include "baton_layout.h"

#include <string.h>

#define ERRSZ 256

static void check_err(const char *decoder, int err, const char *errstr) {
    FUZZ_CHECK(err == BATON_CORRUPT, "%s returned %d", decoder, err);
    FUZZ_CHECK(errstr[0] != '\0', "%s gave no error message", decoder);
    FUZZ_CHECK(memchr(errstr, '\0', ERRSZ) != NULL, "%s message not terminated", decoder);
}

static void fuzz_config(const char *buf, size_t len) {
    baton_config_t c, c2;
    char errstr[ERRSZ] = "";
    int err = baton_config_decode(buf, len, &c, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        check_err("config", err, errstr);
        return;
    }
    /* A topic with 1..MAX partitions, or a keys-only group: no topic, 0. */
    if (c.topic[0]) {
        FUZZ_CHECK(baton_topic_valid(c.topic) == 0, "decoded topic '%s' invalid", c.topic);
        FUZZ_CHECK(c.partitions >= 1 && c.partitions <= BATON_PARTITIONS_MAX, "partitions %d",
                   (int)c.partitions);
    } else {
        FUZZ_CHECK(c.partitions == 0, "no topic but %d partitions", (int)c.partitions);
    }
    FUZZ_CHECK(c.strategy[0] != '\0', "empty strategy");
    char *enc = baton_config_encode(&c);
    err = baton_config_decode(enc, strlen(enc), &c2, errstr, sizeof(errstr));
    FUZZ_CHECK(err == BATON_OK, "config round trip failed: %s (%s)", errstr, enc);
    FUZZ_CHECK(strcmp(c.topic, c2.topic) == 0 && c.partitions == c2.partitions &&
                   strcmp(c.strategy, c2.strategy) == 0,
               "config round trip changed %s", enc);
    free(enc);
}

static void fuzz_member(const char *buf, size_t len) {
    baton_member_t m, m2;
    char errstr[ERRSZ] = "";
    int err = baton_member_decode(buf, len, &m, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        check_err("member", err, errstr);
        return;
    }
    FUZZ_CHECK(m.pid >= 0, "pid %lld", (long long)m.pid);
    FUZZ_CHECK(m.capacity >= 1, "capacity %d", (int)m.capacity);
    char *enc = baton_member_encode(&m);
    err = baton_member_decode(enc, strlen(enc), &m2, errstr, sizeof(errstr));
    FUZZ_CHECK(err == BATON_OK, "member round trip failed: %s (%s)", errstr, enc);
    FUZZ_CHECK(strcmp(m.id, m2.id) == 0 && strcmp(m.host, m2.host) == 0 && m.pid == m2.pid &&
                   m.capacity == m2.capacity && strcmp(m.rack, m2.rack) == 0 &&
                   m.keys_filter == m2.keys_filter && strcmp(m.keys, m2.keys) == 0 &&
                   m.no_partitions == m2.no_partitions,
               "member round trip changed %s", enc);
    free(enc);
}

static void fuzz_meta(const char *buf, size_t len) {
    baton_assignment_meta_t a, a2;
    char errstr[ERRSZ] = "";
    int err = baton_assignment_meta_decode(buf, len, &a, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        check_err("assignment meta", err, errstr);
        return;
    }
    FUZZ_CHECK(a.generation >= 0 && a.coordinator_epoch >= 0, "negative generation or epoch");
    char *enc = baton_assignment_meta_encode(&a);
    err = baton_assignment_meta_decode(enc, strlen(enc), &a2, errstr, sizeof(errstr));
    FUZZ_CHECK(err == BATON_OK, "meta round trip failed: %s (%s)", errstr, enc);
    FUZZ_CHECK(a.generation == a2.generation && a.coordinator_epoch == a2.coordinator_epoch &&
                   strcmp(a.strategy, a2.strategy) == 0,
               "meta round trip changed %s", enc);
    free(enc);
}

static void fuzz_worker_assignment(const char *buf, size_t len) {
    baton_worker_assignment_t a = {0}, a2 = {0};
    char errstr[ERRSZ] = "";
    int err = baton_worker_assignment_decode(buf, len, &a, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        check_err("worker assignment", err, errstr);
        /* On error the decoder owns nothing: release must be harmless. */
        FUZZ_CHECK(a.partitions == NULL && a.npartitions == 0 && a.keys == NULL && a.nkeys == 0 &&
                       a.standby == NULL && a.nstandby == 0,
                   "error left partitions, keys or standbys behind");
        return;
    }
    for (size_t i = 0; i < a.npartitions; i++) {
        FUZZ_CHECK(a.partitions[i] >= 0 && a.partitions[i] < BATON_PARTITIONS_MAX,
                   "partition %d out of range", (int)a.partitions[i]);
        FUZZ_CHECK(i == 0 || a.partitions[i - 1] < a.partitions[i],
                   "partitions not sorted and distinct at %zu", i);
    }
    char *enc = baton_worker_assignment_encode(&a);
    err = baton_worker_assignment_decode(enc, strlen(enc), &a2, errstr, sizeof(errstr));
    FUZZ_CHECK(err == BATON_OK, "worker assignment round trip failed: %s", errstr);
    FUZZ_CHECK(a.generation == a2.generation && a.npartitions == a2.npartitions &&
                   (a.npartitions == 0 ||
                    memcmp(a.partitions, a2.partitions, a.npartitions * sizeof(int32_t)) == 0) &&
                   a.nkeys == a2.nkeys,
               "worker assignment round trip changed %s", enc);
    for (size_t i = 0; i < a.nkeys && i < a2.nkeys; i++)
        FUZZ_CHECK(strcmp(a.keys[i], a2.keys[i]) == 0 && baton_key_valid(a.keys[i]) == 0 &&
                       (i == 0 || strcmp(a.keys[i - 1], a.keys[i]) < 0),
                   "keys not valid, sorted, distinct and kept at %zu", i);
    FUZZ_CHECK(baton_standby_equal(a.standby, a.nstandby, a2.standby, a2.nstandby),
               "worker assignment round trip changed the standbys of %s", enc);
    for (size_t i = 0; i < a.nstandby; i++)
        FUZZ_CHECK(baton_id_valid(a.standby[i].owner) == 0 &&
                       (i == 0 || strcmp(a.standby[i - 1].owner, a.standby[i].owner) < 0),
                   "standby owners not valid, sorted and distinct at %zu", i);
    free(enc);
    baton_worker_assignment_release(&a);
    baton_worker_assignment_release(&a2);
}

static void fuzz_claim(const char *buf, size_t len) {
    baton_claim_t c, c2;
    char errstr[ERRSZ] = "";
    int err = baton_claim_decode(buf, len, &c, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        check_err("claim", err, errstr);
        return;
    }
    FUZZ_CHECK(c.generation >= 0, "generation %lld", (long long)c.generation);
    char *enc = baton_claim_encode(&c);
    err = baton_claim_decode(enc, strlen(enc), &c2, errstr, sizeof(errstr));
    FUZZ_CHECK(err == BATON_OK, "claim round trip failed: %s (%s)", errstr, enc);
    FUZZ_CHECK(strcmp(c.worker, c2.worker) == 0 && c.generation == c2.generation,
               "claim round trip changed %s", enc);
    free(enc);
}

/* The history ring: valid entries, and a round trip keeps the newest
 * BATON_HISTORY_MAX of them unchanged. */
static void fuzz_history(const char *buf, size_t len) {
    baton_history_t h, h2;
    char errstr[ERRSZ] = "";
    int err = baton_history_decode(buf, len, &h, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        check_err("history", err, errstr);
        return;
    }
    for (size_t i = 0; i < h.n; i++)
        /* A partition's entry, or a named key's (partition -1). */
        FUZZ_CHECK(baton_history_reason_valid(h.entries[i].reason) == 0 &&
                       (h.entries[i].key[0]
                            ? h.entries[i].partition == -1 && baton_key_valid(h.entries[i].key) == 0
                            : h.entries[i].partition >= 0),
                   "history entry %zu invalid", i);
    char *enc = baton_history_encode(h.entries, h.n);
    err = baton_history_decode(enc, strlen(enc), &h2, errstr, sizeof(errstr));
    FUZZ_CHECK(err == BATON_OK, "history round trip failed: %s", errstr);
    FUZZ_CHECK(h2.n <= h.n && h2.n <= BATON_HISTORY_MAX &&
                   (h2.n == 0 ||
                    memcmp(h2.entries, h.entries + (h.n - h2.n), h2.n * sizeof(*h.entries)) == 0),
               "history round trip changed the newest entries");
    free(enc);
    baton_history_release(&h);
    baton_history_release(&h2);
}

/* The input as a NUL-terminated heap string (cut at its first NUL). */
static char *cstr(const char *buf, size_t len) {
    char *name = malloc(len + 1);
    if (!name)
        abort();
    memcpy(name, buf, len);
    name[len] = '\0';
    return name;
}

/* baton_seq_of against an independent reading of its contract: the last 10
 * characters are decimal digits, and their value. */
static void fuzz_seq(const char *buf, size_t len) {
    char *name = cstr(buf, len);
    size_t n = strlen(name);
    int64_t want = -1;
    if (n >= 10) {
        want = 0;
        for (size_t i = n - 10; i < n; i++) {
            if (name[i] < '0' || name[i] > '9') {
                want = -1;
                break;
            }
            want = want * 10 + (name[i] - '0');
        }
    }
    int64_t got = baton_seq_of(name);
    FUZZ_CHECK(got == want, "baton_seq_of('%s') = %lld, expected %lld", name, (long long)got,
               (long long)want);
    free(name);
}

/* baton_claim_parse (baton_layout.h): what it accepts is exactly what
 * baton_claim_prefix and a 10-digit sequence build, and agrees with
 * baton_claim_seq and baton_claim_of_session. */
static void fuzz_claim_name(const char *buf, size_t len) {
    char *name = cstr(buf, len);
    baton_claim_name_t c = {.session = 0, .seq = -1};
    if (baton_claim_parse(name, &c) == 0) {
        char prefix[BATON_CLAIM_PREFIX_SIZE], again[64];
        baton_claim_prefix(c.session, prefix);
        snprintf(again, sizeof(again), "%s%010lld", prefix, (long long)c.seq);
        FUZZ_CHECK(strcmp(again, name) == 0, "claim '%s' parsed, rebuilt as '%s'", name, again);
        FUZZ_CHECK(baton_claim_seq(name) == c.seq, "claim '%s': seq %lld, parse %lld", name,
                   (long long)baton_claim_seq(name), (long long)c.seq);
        FUZZ_CHECK(baton_claim_of_session(name, c.session), "claim '%s' not of its session", name);
    }
    free(name);
}

static void fuzz_pin(const char *buf, size_t len) {
    baton_pin_t p, p2;
    char errstr[ERRSZ] = "";
    int err = baton_pin_decode(buf, len, &p, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        check_err("pin", err, errstr);
        return;
    }
    FUZZ_CHECK(baton_id_valid(p.worker) == 0, "decoded pin worker '%s' invalid", p.worker);
    char *enc = baton_pin_encode(&p);
    err = baton_pin_decode(enc, strlen(enc), &p2, errstr, sizeof(errstr));
    FUZZ_CHECK(err == BATON_OK && strcmp(p.worker, p2.worker) == 0, "pin round trip: %s (%s)",
               errstr, enc);
    free(enc);
}

/* The binding's strings come from a flag or the system (any bytes): its
 * encoder must take whatever the decoder gave, and a UTF-8 one back. */
static void fuzz_binding(const char *buf, size_t len) {
    baton_sink_binding_t b, b2;
    char errstr[ERRSZ] = "";
    /* The input's bytes as a URI and a binder, as a flag or gethostname
     * may give them: they encode, and what is encoded decodes. */
    baton_sink_binding_t raw = {.bound_ms = 1};
    strcpy(raw.sink_id, "0ca9a7c0-f3af-4f6d-badd-1284608c8a6e");
    size_t ul = len < sizeof(raw.sink_uri) - 1 ? len : sizeof(raw.sink_uri) - 1;
    memcpy(raw.sink_uri, buf, ul);
    size_t hl = len < sizeof(raw.bound_by) - 1 ? len : sizeof(raw.bound_by) - 1;
    memcpy(raw.bound_by, buf, hl);
    char *renc = baton_sink_binding_encode(&raw);
    int err = baton_sink_binding_decode(renc, strlen(renc), &b2, errstr, sizeof(errstr));
    FUZZ_CHECK(err == BATON_OK, "a binding of raw bytes did not decode: %s (%s)", errstr, renc);
    free(renc);
    err = baton_sink_binding_decode(buf, len, &b, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        check_err("sink binding", err, errstr);
        return;
    }
    char *enc = baton_sink_binding_encode(&b);
    err = baton_sink_binding_decode(enc, strlen(enc), &b2, errstr, sizeof(errstr));
    FUZZ_CHECK(err == BATON_OK, "binding round trip failed: %s (%s)", errstr, enc);
    FUZZ_CHECK(strcmp(b.sink_id, b2.sink_id) == 0 && strcmp(b.sink_uri, b2.sink_uri) == 0 &&
                   strcmp(b.bound_by, b2.bound_by) == 0 && b.bound_ms == b2.bound_ms,
               "binding round trip changed %s", enc);
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *buf = (const char *)data;
    fuzz_config(buf, size);
    fuzz_member(buf, size);
    fuzz_meta(buf, size);
    fuzz_worker_assignment(buf, size);
    fuzz_claim(buf, size);
    fuzz_history(buf, size);
    fuzz_seq(buf, size);
    fuzz_claim_name(buf, size);
    fuzz_pin(buf, size);
    fuzz_binding(buf, size);
    return 0;
}
