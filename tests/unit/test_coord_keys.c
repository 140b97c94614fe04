/* test_coord_keys.c: named-key assignment (coordinator/coord_keys.c):
 * filters are obeyed, every group of keys is balanced over exactly the
 * members that may take it, nothing moves when nothing changed, a departed
 * member's keys move and only they do, an absent member keeps its keys,
 * drained members get none, and codec round trips of the new fields. */
#include "baton_codec.h"
#include "baton_err.h"
#include "coord_keys.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *const keys8[] = {"a", "b", "c", "d", "e", "f", "g", "h"};

static int count_of(const int *next, size_t n, int w) {
    int c = 0;
    for (size_t k = 0; k < n; k++)
        c += next[k] == w;
    return c;
}

static void test_unfiltered_balanced_and_sticky(void **state) {
    (void)state;
    coord_key_worker_t w[3] = {
        {.id = "w1", .capacity = 1}, {.id = "w2", .capacity = 1}, {.id = "w3", .capacity = 1}};
    int prev[8], next[8], again[8];
    for (int k = 0; k < 8; k++)
        prev[k] = -1;
    char err[256];
    int moved =
        coord_keys_assign(BATON_STRATEGY_STICKY, keys8, 8, w, 3, prev, next, err, sizeof(err));
    assert_int_equal(moved, 8);
    for (int i = 0; i < 3; i++) {
        int c = count_of(next, 8, i);
        assert_true(c == 2 || c == 3);
    }
    /* Same input, same output, nothing moves. */
    assert_int_equal(
        coord_keys_assign(BATON_STRATEGY_STICKY, keys8, 8, w, 3, next, again, err, sizeof(err)), 0);
    assert_memory_equal(next, again, sizeof(next));
    /* w2 drained: only its keys move, to the others, balanced. */
    w[1].flags = BATON_ASSIGN_DRAINED;
    int had = count_of(next, 8, 1);
    moved = coord_keys_assign(BATON_STRATEGY_STICKY, keys8, 8, w, 3, next, again, err, sizeof(err));
    assert_int_equal(moved, had);
    assert_int_equal(count_of(again, 8, 1), 0);
    assert_int_equal(count_of(again, 8, 0), 4);
    assert_int_equal(count_of(again, 8, 2), 4);
    for (int k = 0; k < 8; k++)
        if (next[k] != 1)
            assert_int_equal(again[k], next[k]);
}

static void test_filters(void **state) {
    (void)state;
    /* r1 and r2 run one key each (baton-run); w takes any key. */
    coord_key_worker_t w[3] = {
        {.id = "r1", .capacity = 1, .keys_filter = 1, .keys = "a"},
        {.id = "r2", .capacity = 1, .keys_filter = 1, .keys = "a,b"},
        {.id = "w", .capacity = 1},
    };
    int prev[8], next[8];
    for (int k = 0; k < 8; k++)
        prev[k] = -1;
    char err[256];
    assert_true(coord_keys_assign(BATON_STRATEGY_STICKY, keys8, 8, w, 3, prev, next, err,
                                  sizeof(err)) >= 0);
    for (int k = 0; k < 8; k++) {
        assert_true(next[k] >= 0);
        if (next[k] == 0)
            assert_int_equal(k, 0);
        if (next[k] == 1)
            assert_true(k == 0 || k == 1);
    }
    for (int k = 2; k < 8; k++)
        assert_int_equal(next[k], 2); /* only w may take c..h */
    /* A filter naming only keys that do not exist: nothing. */
    coord_key_worker_t lone[1] = {{.id = "x", .capacity = 1, .keys_filter = 1, .keys = "zz"}};
    assert_int_equal(
        coord_keys_assign(BATON_STRATEGY_STICKY, keys8, 8, lone, 1, prev, next, err, sizeof(err)),
        0);
    for (int k = 0; k < 8; k++)
        assert_int_equal(next[k], -1);
    /* An empty filter (a Kafka worker) takes no key. */
    coord_key_worker_t kw[1] = {{.id = "k", .capacity = 1, .keys_filter = 1, .keys = ""}};
    coord_keys_assign(BATON_STRATEGY_STICKY, keys8, 8, kw, 1, prev, next, err, sizeof(err));
    for (int k = 0; k < 8; k++)
        assert_int_equal(next[k], -1);
}

static void test_absent_keeps(void **state) {
    (void)state;
    coord_key_worker_t w[2] = {{.id = "w1", .capacity = 1},
                               {.id = "w2", .capacity = 1, .flags = BATON_ASSIGN_ABSENT}};
    int prev[4] = {0, 1, 1, -1}, next[4];
    char err[256];
    coord_keys_assign(BATON_STRATEGY_STICKY, keys8, 4, w, 2, prev, next, err, sizeof(err));
    assert_int_equal(next[0], 0);
    assert_int_equal(next[1], 1); /* reserved within its grace */
    assert_int_equal(next[2], 1);
    assert_int_equal(next[3], 0); /* new keys go to eligible members only */
}

static void test_has(void **state) {
    (void)state;
    assert_true(coord_keys_has("a,bb,c", "bb"));
    assert_false(coord_keys_has("a,bb,c", "b"));
    assert_false(coord_keys_has("", "a"));
    assert_true(coord_keys_has("only", "only"));
}

static void test_codecs(void **state) {
    (void)state;
    baton_member_t m = {.capacity = 1, .keys_filter = 1, .no_partitions = 1};
    strcpy(m.id, "r1");
    strcpy(m.keys, "nightly,report.x");
    char *s = baton_member_encode(&m);
    baton_member_t back;
    char err[256];
    assert_int_equal(baton_member_decode(s, strlen(s), &back, err, sizeof(err)), BATON_OK);
    assert_string_equal(back.keys, "nightly,report.x");
    assert_true(back.keys_filter && back.no_partitions);
    free(s);
    const char *bad_key = "{\"id\":\"w\",\"keys\":[\"a/b\"]}";
    assert_int_equal(baton_member_decode(bad_key, strlen(bad_key), &back, err, sizeof(err)),
                     BATON_CORRUPT);
    assert_non_null(strstr(err, "keys[0]"));
    const char *bad_only = "{\"id\":\"w\",\"keys_only\":1}";
    assert_int_equal(baton_member_decode(bad_only, strlen(bad_only), &back, err, sizeof(err)),
                     BATON_CORRUPT);

    char *ks[2] = {"x", "y"};
    baton_worker_assignment_t wa = {.generation = 3, .keys = ks, .nkeys = 2};
    s = baton_worker_assignment_encode(&wa);
    baton_worker_assignment_t wb;
    assert_int_equal(baton_worker_assignment_decode(s, strlen(s), &wb, err, sizeof(err)), BATON_OK);
    assert_int_equal(wb.nkeys, 2);
    assert_string_equal(wb.keys[1], "y");
    baton_worker_assignment_release(&wb);
    free(s);
    const char *dup = "{\"generation\":1,\"partitions\":[],\"keys\":[\"a\",\"a\"]}";
    assert_int_equal(baton_worker_assignment_decode(dup, strlen(dup), &wb, err, sizeof(err)),
                     BATON_CORRUPT);
    /* A keys-only config: no topic, 0 partitions; a topic needs partitions. */
    baton_config_t c;
    const char *ko = "{\"topic\":\"\",\"partitions\":0}";
    assert_int_equal(baton_config_decode(ko, strlen(ko), &c, err, sizeof(err)), BATON_OK);
    const char *np = "{\"topic\":\"\",\"partitions\":3}";
    assert_int_equal(baton_config_decode(np, strlen(np), &c, err, sizeof(err)), BATON_CORRUPT);
    assert_int_equal(baton_key_valid("nightly-report.v2_x"), 0);
    assert_int_not_equal(baton_key_valid("no/slash"), 0);
    assert_int_not_equal(baton_key_valid(".."), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unfiltered_balanced_and_sticky),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_absent_keeps),
        cmocka_unit_test(test_has),
        cmocka_unit_test(test_codecs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
