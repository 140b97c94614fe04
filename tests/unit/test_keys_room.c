/* test_keys_room.c: the keys limit's arithmetic (baton_keys_room): which
 * children are keys, which names asked for are new, and the refusal of an
 * add that would take the group past BATON_KEYS_MAX, at the real limit;
 * and the same on a listing split into kept and ignored names. */
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
#include "baton_group.h"
#include "baton_util.h"

/* n sorted children k000000, k000001, ... (the names sort as the numbers). */
static char **children(size_t n) {
    char **v = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        v[i] = xasprintf("k%06zu", i);
    return v;
}

static void children_free(char **v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void test_counts(void **state) {
    (void)state;
    /* "bad key" (made by hand) is no key; sorted as baton_strcmp_p sorts. */
    char *kids[] = {"a", "b", "bad key", "c"};
    char *keys[] = {"d", "a", "e", "d", "e", "c"};
    size_t have = 9, fresh = 9;
    char err[256] = "";
    assert_int_equal(baton_keys_room(kids, 4, keys, 6, &have, &fresh, err, sizeof(err)), BATON_OK);
    assert_int_equal(have, 3);
    assert_int_equal(fresh, 2); /* d and e, each asked for twice */
    assert_string_equal(err, "");
    assert_int_equal(baton_keys_room(NULL, 0, keys, 6, &have, &fresh, err, sizeof(err)), BATON_OK);
    assert_int_equal(have, 0);
    assert_int_equal(fresh, 4);
}

static void test_limit(void **state) {
    (void)state;
    size_t n = BATON_KEYS_MAX - 2, have = 0, fresh = 0;
    char **kids = children(n);
    char *two[] = {"new-a", "new-b", "k000000"};
    char *three[] = {"new-a", "new-b", "new-c", "new-a"};
    char err[512] = "";
    /* Up to the limit exactly. */
    assert_int_equal(baton_keys_room(kids, n, two, 3, &have, &fresh, err, sizeof(err)), BATON_OK);
    assert_int_equal(have, BATON_KEYS_MAX - 2);
    assert_int_equal(fresh, 2);
    /* One past it: refused, naming the limit and both counts. */
    assert_int_equal(baton_keys_room(kids, n, three, 4, &have, &fresh, err, sizeof(err)),
                     BATON_INVALID);
    assert_int_equal(fresh, 3);
    assert_non_null(strstr(err, "the group has 99998 keys and 3 of those asked for are new"));
    assert_non_null(strstr(err, "limit of 100000 keys"));
    assert_non_null(strstr(err, "add at most 2"));
    children_free(kids, n);
}

static void test_full(void **state) {
    (void)state;
    /* A group at (or past: a racing add) the limit takes no new key, but a
     * request that is all there already creates nothing and passes. */
    size_t n = BATON_KEYS_MAX + 1, have = 0, fresh = 0;
    char **kids = children(n);
    char *old[] = {"k000007", "k100000"};
    char *one[] = {"k000007", "new"};
    char err[512] = "";
    assert_int_equal(baton_keys_room(kids, n, old, 2, &have, &fresh, err, sizeof(err)), BATON_OK);
    assert_int_equal(have, BATON_KEYS_MAX + 1);
    assert_int_equal(fresh, 0);
    assert_int_equal(baton_keys_room(kids, n, one, 2, &have, &fresh, err, sizeof(err)),
                     BATON_INVALID);
    assert_int_equal(fresh, 1);
    assert_non_null(strstr(err, "the group has 100001 keys, the limit is 100000"));
    assert_non_null(strstr(err, "remove keys first"));
    children_free(kids, n);
}

/* baton_keys_room_listed: what baton_group_keys split into kept names and
 * ignored children counts as the one listing it came from. */
static void test_listed(void **state) {
    (void)state;
    size_t n = BATON_KEYS_MAX;
    char **kept = children(n);
    /* Past the limit (a racing add) and made by hand: ignored, yet there. */
    baton_bad_key_t bad[] = {{"k100000", BATON_BAD_KEY_OVER_MAX}, {"bad key", BATON_BAD_KEY_NAME}};
    baton_bad_keys_t ignored = {bad, 2};
    char *there[] = {"k100000", "k000003"};
    char *fresh[] = {"k100001"};
    char err[512] = "";
    /* All there already, the ignored one too: nothing new, passes. */
    assert_int_equal(baton_keys_room_listed(kept, n, &ignored, there, 2, err, sizeof(err)),
                     BATON_OK);
    /* Without the ignored ones k100000 would look new. */
    assert_int_equal(baton_keys_room_listed(kept, n, NULL, there, 2, err, sizeof(err)),
                     BATON_INVALID);
    assert_non_null(strstr(err, "the group has 100000 keys, the limit is 100000"));
    /* A new one: the count includes the key past the limit, not the bad name. */
    assert_int_equal(baton_keys_room_listed(kept, n, &ignored, fresh, 1, err, sizeof(err)),
                     BATON_INVALID);
    assert_non_null(strstr(err, "the group has 100001 keys"));
    /* An empty group. */
    assert_int_equal(baton_keys_room_listed(NULL, 0, NULL, fresh, 1, err, sizeof(err)), BATON_OK);
    children_free(kept, n);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_listed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
