/* test_resource.c: unit tests for the resource table (baton_resource.h):
 * partitions are rows 0..P-1, keys rows after them in the order added,
 * lookups by resource and by key (unknown ones -1), claims directories and
 * log labels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "baton_resource.h"

static void test_partitions(void **state) {
    (void)state;
    baton_res_table_t t;
    baton_res_table_init(&t, "/baton/g", 3);
    assert_int_equal(t.n, 3);
    for (int32_t p = 0; p < 3; p++) {
        assert_int_equal(baton_res_at(&t, (size_t)p)->kind, BATON_RESOURCE_PARTITION);
        assert_int_equal(baton_res_at(&t, (size_t)p)->partition, p);
        assert_false(baton_res_is_key(&t, (size_t)p));
        baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = p};
        assert_int_equal(baton_res_table_find(&t, &r), p);
    }
    baton_resource_t out = {.kind = BATON_RESOURCE_PARTITION, .partition = 3};
    assert_int_equal(baton_res_table_find(&t, &out), -1);
    out.partition = -1;
    assert_int_equal(baton_res_table_find(&t, &out), -1);
    assert_int_equal(baton_res_table_find(&t, NULL), -1);
    baton_resource_t bad = {.kind = (baton_resource_kind_t)7, .partition = 0};
    assert_int_equal(baton_res_table_find(&t, &bad), -1);
    assert_string_equal(baton_res_claims(&t, 2), "/baton/g/partitions/2/claims");
    assert_null(baton_res_claims(&t, 3));
    baton_res_table_free(&t);
}

/* Partition rows are numbered when first looked at, not when the table is
 * made: a row's claims directory, asked for first, and rows looked at only
 * after keys moved the table are still the right partitions. */
static void test_partitions_first_look(void **state) {
    (void)state;
    baton_res_table_t t;
    baton_res_table_init(&t, "/baton/g", 1000);
    assert_string_equal(baton_res_claims(&t, 999), "/baton/g/partitions/999/claims");
    size_t row = baton_res_table_add_key(&t, "nightly");
    assert_int_equal(row, 1000);
    for (size_t i = 0; i < 10; i++)
        (void)baton_res_table_add_key(&t, (char[]){(char)('a' + i), 0}); /* grows the rows */
    assert_int_equal(baton_res_at(&t, 500)->partition, 500);
    assert_int_equal(baton_res_at(&t, 500)->kind, BATON_RESOURCE_PARTITION);
    assert_null(baton_res_at(&t, 500)->key);
    assert_int_equal(baton_res_at(&t, 0)->partition, 0);
    assert_int_equal(baton_res_at(&t, 1000)->partition, -1);
    assert_string_equal(baton_res_at(&t, 1000)->key, "nightly");
    assert_string_equal(baton_res_claims(&t, 1), "/baton/g/partitions/1/claims");
    baton_res_table_free(&t);
}

static void test_keys(void **state) {
    (void)state;
    baton_res_table_t t;
    baton_res_table_init(&t, "/baton/g", 2);
    /* added out of order: rows follow the order added, lookups work */
    const char *names[] = {"nightly", "alpha", "zeta", "beta", "alpha2"};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(baton_res_table_add_key(&t, names[i]), 2 + i);
    assert_int_equal(baton_res_table_add_key(&t, "zeta"), 4); /* known: same row */
    assert_int_equal(t.n, 7);
    for (size_t i = 0; i < 5; i++) {
        baton_resource_t r = {.kind = BATON_RESOURCE_KEY, .partition = -1, .key = names[i]};
        assert_int_equal(baton_res_table_find(&t, &r), 2 + i);
        assert_true(baton_res_is_key(&t, 2 + i));
        assert_string_equal(baton_res_at(&t, 2 + i)->key, names[i]);
        assert_int_equal(baton_res_at(&t, 2 + i)->partition, -1);
    }
    /* by length: a prefix or an extension of a key is another key */
    assert_int_equal(baton_res_table_find_key(&t, "alpha2x", 5), 3);
    assert_int_equal(baton_res_table_find_key(&t, "alph", 4), -1);
    assert_int_equal(baton_res_table_find_key(&t, "alpha22", 7), -1);
    assert_int_equal(baton_res_table_find_key(&t, NULL, 0), -1);
    baton_resource_t nokey = {.kind = BATON_RESOURCE_KEY, .partition = -1, .key = NULL};
    assert_int_equal(baton_res_table_find(&t, &nokey), -1);
    assert_string_equal(baton_res_claims(&t, 2), "/baton/g/keys/nightly/claims");
    assert_string_equal(baton_res_claims(&t, 2), "/baton/g/keys/nightly/claims"); /* cached */
    baton_res_table_free(&t);
}

static void test_many_keys(void **state) {
    (void)state;
    baton_res_table_t t;
    baton_res_table_init(&t, NULL, 0);
    char name[32];
    for (int i = 999; i >= 0; i--) {
        snprintf(name, sizeof(name), "k%04d", (i * 7919) % 1000);
        baton_res_table_add_key(&t, name);
    }
    assert_int_equal(t.n, 1000);
    assert_int_equal(t.nkeys, 1000);
    for (size_t i = 1; i < t.nkeys; i++)
        assert_true(strcmp(t.rows[t.by_key[i - 1]].res.key, t.rows[t.by_key[i]].res.key) < 0);
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "k%04d", i);
        long row = baton_res_table_find_key(&t, name, strlen(name));
        assert_true(row >= 0);
        assert_string_equal(baton_res_at(&t, (size_t)row)->key, name);
    }
    assert_null(baton_res_claims(&t, 0)); /* no base */
    baton_res_table_free(&t);
}

static void test_labels(void **state) {
    (void)state;
    char buf[BATON_RES_LABEL_SIZE];
    baton_resource_t p = {.kind = BATON_RESOURCE_PARTITION, .partition = 12};
    assert_string_equal(baton_res_label(&p, buf, sizeof(buf)), "partition=12");
    baton_resource_t k = {.kind = BATON_RESOURCE_KEY, .partition = -1, .key = "nightly"};
    assert_string_equal(baton_res_label(&k, buf, sizeof(buf)), "key=nightly");
    char *c = baton_res_claims_of("/r/g", &k);
    assert_string_equal(c, "/r/g/keys/nightly/claims");
    free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partitions), cmocka_unit_test(test_partitions_first_look),
        cmocka_unit_test(test_keys),       cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
