/* test_history_codec.c: unit tests for the history ring's codec
 * (baton_codec.h): round trip with null from/to/epoch, the bound on entries
 * and bytes (oldest dropped), and rejection of malformed entries with a
 * message naming the entry and field. */
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

static baton_history_entry_t entry(int32_t p, const char *from, const char *to, int64_t epoch,
                                   int64_t gen, const char *reason) {
    baton_history_entry_t e;
    memset(&e, 0, sizeof(e));
    e.partition = p;
    snprintf(e.from, sizeof(e.from), "%s", from);
    snprintf(e.to, sizeof(e.to), "%s", to);
    e.epoch = epoch;
    e.generation = gen;
    e.time_ms = 1700000000123;
    snprintf(e.reason, sizeof(e.reason), "%s", reason);
    return e;
}

static void test_round_trip(void **state) {
    (void)state;
    baton_history_entry_t in[3] = {entry(0, "", "w1", -1, 1, "join"),
                                   entry(7, "w1", "w2", 4294967301, 2, "rebalance"),
                                   entry(3, "w2", "", -1, 3, "leave")};
    char *s = baton_history_encode(in, 3);
    assert_non_null(strstr(s, "\"from\":null"));
    assert_non_null(strstr(s, "\"epoch\":null"));
    baton_history_t h;
    char e[256];
    assert_int_equal(baton_history_decode(s, strlen(s), &h, e, sizeof(e)), BATON_OK);
    assert_int_equal(h.n, 3);
    assert_memory_equal(h.entries, in, sizeof(in));
    baton_history_release(&h);
    free(s);
}

static void test_bounds(void **state) {
    (void)state;
    size_t n = BATON_HISTORY_MAX + 10;
    baton_history_entry_t *in = xcalloc(n, sizeof(*in));
    for (size_t i = 0; i < n; i++)
        in[i] = entry((int32_t)i, "w1", "w2", (int64_t)i, (int64_t)i, "drain");
    char *s = baton_history_encode(in, n);
    baton_history_t h;
    char e[256];
    assert_int_equal(baton_history_decode(s, strlen(s), &h, e, sizeof(e)), BATON_OK);
    assert_int_equal(h.n, BATON_HISTORY_MAX);
    assert_int_equal(h.entries[0].partition, 10); /* the oldest 10 dropped */
    baton_history_release(&h);
    free(s);
    /* The longest ids: 1000 entries still fit the byte bound (which is a
     * safety net: ZooKeeper refuses nodes over 1 MB). */
    char id[BATON_ID_MAX + 1];
    memset(id, 'x', BATON_ID_MAX);
    id[BATON_ID_MAX] = 0;
    for (size_t i = 0; i < n; i++)
        in[i] = entry((int32_t)i, id, id, (int64_t)i, (int64_t)i, "rebalance");
    s = baton_history_encode(in, n);
    assert_true(strlen(s) <= BATON_HISTORY_MAX_BYTES);
    assert_int_equal(baton_history_decode(s, strlen(s), &h, e, sizeof(e)), BATON_OK);
    assert_int_equal(h.n, BATON_HISTORY_MAX);
    assert_int_equal(h.entries[h.n - 1].partition, (int32_t)(n - 1)); /* newest kept */
    baton_history_release(&h);
    free(s);
    free(in);
}

static void test_decode_bad(void **state) {
    (void)state;
    struct {
        const char *json, *msg;
    } bad[] = {
        {"[]", "expected a JSON object"},
        {"{\"entries\":{}}", "'entries' must be an array"},
        {"{\"entries\":[1]}", "history entry 0: expected a JSON object"},
        {"{\"entries\":[{\"generation\":1,\"reason\":\"join\"}]}", "missing field 'partition'"},
        {"{\"entries\":[{\"partition\":-1,\"generation\":1,\"reason\":\"join\"}]}",
         "'partition' = -1 is out of range"},
        {"{\"entries\":[{\"partition\":1,\"generation\":1,\"reason\":\"oops\"}]}",
         "unknown reason 'oops'"},
        {"{\"entries\":[{\"partition\":1,\"generation\":1,\"reason\":\"join\",\"to\":\"a/b\"}]}",
         "not a valid id"},
        {"{\"entries\":[{\"partition\":1,\"generation\":1,\"reason\":\"join\",\"epoch\":\"x\"}]}",
         "'epoch' must be an integer"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        baton_history_t h;
        char e[256] = "";
        assert_int_equal(baton_history_decode(bad[i].json, strlen(bad[i].json), &h, e, sizeof(e)),
                         BATON_CORRUPT);
        if (!strstr(e, bad[i].msg))
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].json, e, bad[i].msg);
        assert_null(h.entries);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_decode_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
