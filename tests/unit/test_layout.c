/* test_layout.c: unit tests for the group layout (baton_layout.h): every
 * path, claim names built and parsed (malformed ones refused), "the lowest
 * claim owns" and "watch your predecessor", over claims and election
 * candidates; watch-event paths classified (baton_layout_classify). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "baton_layout.h"

/* Checks a heap path against want and frees it. */
static void path_is(char *got, const char *want) {
    assert_string_equal(got, want);
    free(got);
}

static void test_paths(void **state) {
    (void)state;
    const char *b = "/baton/g";
    path_is(baton_layout_config(b), "/baton/g/config");
    path_is(baton_layout_sink(b), "/baton/g/sink");
    path_is(baton_layout_history(b), "/baton/g/history");
    path_is(baton_layout_coordinators(b), "/baton/g/coordinators");
    path_is(baton_layout_workers(b), "/baton/g/workers");
    path_is(baton_layout_assignment(b), "/baton/g/assignment");
    path_is(baton_layout_partitions(b), "/baton/g/partitions");
    path_is(baton_layout_keys(b), "/baton/g/keys");
    path_is(baton_layout_drains(b), "/baton/g/drains");
    path_is(baton_layout_pins(b), "/baton/g/pins");
    path_is(baton_layout_candidate_create(b), "/baton/g/coordinators/c-");
    path_is(baton_layout_worker(b, "w1"), "/baton/g/workers/w1");
    path_is(baton_layout_assignment_of(b, "w1"), "/baton/g/assignment/w1");
    path_is(baton_layout_drain(b, "w1"), "/baton/g/drains/w1");
    path_is(baton_layout_pin(b, 7), "/baton/g/pins/7");
    path_is(baton_layout_partition(b, 0), "/baton/g/partitions/0");
    path_is(baton_layout_partition_claims(b, 1999), "/baton/g/partitions/1999/claims");
    path_is(baton_layout_key(b, "nightly"), "/baton/g/keys/nightly");
    path_is(baton_layout_key_claims(b, "nightly"), "/baton/g/keys/nightly/claims");
    path_is(baton_layout_key_runs(b, "nightly"), "/baton/g/keys/nightly/runs");
    path_is(baton_layout_child("/baton/g/workers", "w2"), "/baton/g/workers/w2");
}

static void test_claim_prefix(void **state) {
    (void)state;
    char p[BATON_CLAIM_PREFIX_SIZE];
    baton_claim_prefix(0x100000bd46a0003LL, p);
    assert_string_equal(p, "claim-0100000bd46a0003-");
    baton_claim_prefix(0, p);
    assert_string_equal(p, "claim-0000000000000000-");
    baton_claim_prefix(-1, p); /* all bits: still 16 digits, fits */
    assert_string_equal(p, "claim-ffffffffffffffff-");
    path_is(baton_layout_claim_create("/baton/g/partitions/3/claims", 0xabcLL),
            "/baton/g/partitions/3/claims/claim-0000000000000abc-");
}

static void test_claim_parse(void **state) {
    (void)state;
    baton_claim_name_t c = {0};
    assert_int_equal(baton_claim_parse("claim-0100000bd46a0003-0000000007", &c), 0);
    assert_int_equal(c.session, 0x100000bd46a0003LL);
    assert_int_equal(c.seq, 7);
    assert_int_equal(baton_claim_parse("claim-ffffffffffffffff-9999999999", &c), 0);
    assert_int_equal(c.session, -1);
    assert_int_equal(c.seq, 9999999999LL);
    /* Round trip with the prefix builder. */
    char p[BATON_CLAIM_PREFIX_SIZE], name[64];
    baton_claim_prefix(0x1234, p);
    snprintf(name, sizeof(name), "%s0000000042", p);
    assert_int_equal(baton_claim_parse(name, &c), 0);
    assert_int_equal(c.session, 0x1234);
    assert_int_equal(c.seq, 42);

    /* Malformed names are refused and leave *out alone. */
    static const char *const bad[] = {
        "",
        "claim-",
        "claim--0000000007",
        "claim-0100000bd46a0003-",
        "claim-0100000bd46a0003-000000007",   /* 9 digits */
        "claim-0100000bd46a0003-00000000007", /* 11 digits */
        "claim-0100000bd46a0003-00000000x7",
        "claim-0100000bd46a003-0000000007",   /* 15 hex */
        "claim-0100000bd46a00030-0000000007", /* 17 hex */
        "claim-0100000BD46A0003-0000000007",  /* upper case: not written by us */
        "claim-0100000bd46a000g-0000000007",
        "claim-0100000bd46a0003_0000000007",
        "claim-0x00000bd46a0003-0000000007",
        "claim-0-0000000000",
        "Claim-0100000bd46a0003-0000000007",
        "c-0000000007",
        "garbage",
        "claim-0100000bd46a0003-0000000007 ",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        baton_claim_name_t keep = {.session = 11, .seq = 22};
        if (baton_claim_parse(bad[i], &keep) != -1)
            fail_msg("'%s' parsed as a claim", bad[i]);
        assert_int_equal(keep.session, 11);
        assert_int_equal(keep.seq, 22);
    }
}

static void test_claim_seq(void **state) {
    (void)state;
    assert_int_equal(baton_claim_seq("claim-0100000bd46a0003-0000000007"), 7);
    /* Any claim- name with a sequence is a claim of the queue (as batonctl
     * has always counted them), even if its session part is odd. */
    assert_int_equal(baton_claim_seq("claim-0-0000000003"), 3);
    assert_int_equal(baton_claim_seq("c-0000000003"), -1);
    assert_int_equal(baton_claim_seq("garbage-0000000003"), -1);
    assert_int_equal(baton_claim_seq("claim-0100000bd46a0003-"), -1);
    assert_int_equal(baton_claim_seq("claim-"), -1);
    assert_int_equal(baton_claim_seq(""), -1);

    assert_true(baton_claim_of_session("claim-0000000000000abc-0000000001", 0xabc));
    assert_false(baton_claim_of_session("claim-0000000000000abc-0000000001", 0xabd));
    assert_false(baton_claim_of_session("claim-0000000000000abc-", 0xabc));
    assert_false(baton_claim_of_session("claim-0000000000000abc-00000x0001", 0xabc));
    assert_false(baton_claim_of_session("claim-0000000000000abcd-0000000001", 0xabc));
    assert_false(baton_claim_of_session("", 0));
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_claim_lowest(void **state) {
    (void)state;
    char *names[] = {
        "claim-0000000000000002-0000000005",
        "garbage-0000000000",
        "not a claim",
        "claim-0000000000000001-0000000003",
        "claim-0000000000000003-0000000009",
    };
    assert_string_equal(baton_claim_lowest(names, N(names)), names[3]);
    assert_null(baton_claim_lowest(names, 0));
    assert_null(baton_claim_lowest(names + 1, 2)); /* no claim at all */
    /* A name cleared to "" (a deleted duplicate) is skipped. */
    char gone[] = "", *with_gone[] = {gone, names[0]};
    assert_string_equal(baton_claim_lowest(with_gone, 2), names[0]);
}

static void test_claim_predecessor(void **state) {
    (void)state;
    char *names[] = {
        "claim-0000000000000002-0000000005", "claim-0000000000000001-0000000003", "junk-0000000004",
        "claim-0000000000000003-0000000009", "claim-0000000000000004-0000000007",
    };
    int found = -1;
    size_t below = 99;
    /* The lowest has none: it owns and watches itself. */
    assert_null(baton_claim_predecessor(names, N(names), names[1], &found, &below));
    assert_int_equal(found, 1);
    assert_int_equal(below, 0);
    /* Each other watches the next lower claim, not the lowest; below counts
     * every claim before it (junk is not one). */
    assert_string_equal(baton_claim_predecessor(names, N(names), names[0], &found, &below),
                        names[1]);
    assert_int_equal(below, 1);
    assert_string_equal(baton_claim_predecessor(names, N(names), names[4], &found, NULL), names[0]);
    assert_string_equal(baton_claim_predecessor(names, N(names), names[3], &found, &below),
                        names[4]);
    assert_int_equal(found, 1);
    assert_int_equal(below, 3);
    /* Mine gone: not found (the claim was lost). */
    assert_string_equal(baton_claim_predecessor(names, N(names) - 1,
                                                "claim-0000000000000004-0000000007", &found,
                                                &below),
                        names[0]);
    assert_int_equal(found, 0);
    assert_int_equal(below, 2);
    /* Mine malformed: never found, no predecessor. */
    assert_null(baton_claim_predecessor(names, N(names), "junk-0000000004", &found, &below));
    assert_int_equal(found, 0);
    assert_int_equal(below, 0);
    assert_null(baton_claim_predecessor(names, N(names), "", NULL, NULL));
    assert_null(baton_claim_predecessor(names, 0, names[0], &found, &below));
    assert_int_equal(found, 0);
    assert_int_equal(below, 0);
}

/* A multi deleting one queue's claims: highest sequence first, so a member
 * waiting behind exactly one of them sees its own claim's deletion before
 * its predecessor's; what is no claim goes last. */
static void test_claim_sort_for_delete(void **state) {
    (void)state;
    char *paths[] = {
        "/b/keys/k/claims/claim-0000000000000002-0000000005", "/b/keys/k/claims/junk",
        "/b/keys/k/claims/claim-0000000000000001-0000000010", "claim-0000000000000003-0000000007",
        "/b/keys/k/claims/claim-0000000000000004-0000000002",
    };
    baton_claim_sort_for_delete(paths, N(paths));
    assert_string_equal(paths[0], "/b/keys/k/claims/claim-0000000000000001-0000000010");
    assert_string_equal(paths[1], "claim-0000000000000003-0000000007");
    assert_string_equal(paths[2], "/b/keys/k/claims/claim-0000000000000002-0000000005");
    assert_string_equal(paths[3], "/b/keys/k/claims/claim-0000000000000004-0000000002");
    assert_string_equal(paths[4], "/b/keys/k/claims/junk");
    baton_claim_sort_for_delete(paths, 0); /* nothing to do */
    baton_claim_sort_for_delete(paths, 1);
    assert_string_equal(paths[0], "/b/keys/k/claims/claim-0000000000000001-0000000010");
}

/* The election's candidates (c-<seq>): any sequential name counts. */
static void test_seq_queue(void **state) {
    (void)state;
    char *names[] = {"c-0000000004", "c-0000000001", "stray", "c-0000000002", "x-000000009"};
    assert_string_equal(baton_seq_lowest(names, N(names)), "c-0000000001");
    int found = 0;
    assert_string_equal(baton_seq_predecessor(names, N(names), "c-0000000004", &found, NULL),
                        "c-0000000002");
    assert_int_equal(found, 1);
    assert_null(baton_seq_predecessor(names, N(names), "c-0000000001", &found, NULL));
    assert_int_equal(found, 1);
    assert_null(baton_seq_predecessor(names, N(names), "stray", &found, NULL));
    assert_int_equal(found, 0);
    assert_null(baton_seq_lowest(names + 2, 1));
}

/* A watch event's path: which part of the layout it concerns. */
static void test_classify(void **state) {
    (void)state;
    const char *b = "/baton/g";
    baton_path_t at;
    static const struct {
        const char *path;
        baton_path_kind_t kind;
        int32_t partition;
        const char *name; /* NULL: none */
    } cases[] = {
        {"/baton/g/config", BATON_PATH_CONFIG, -1, NULL},
        {"/baton/g/partitions/3", BATON_PATH_PARTITION, 3, NULL},
        {"/baton/g/partitions/17/claims", BATON_PATH_PARTITION, 17, NULL},
        {"/baton/g/partitions/0/claims/claim-00000000000000ab-0000000001", BATON_PATH_PARTITION, 0,
         NULL},
        {"/baton/g/partitions/2147483647", BATON_PATH_PARTITION, 2147483647, NULL},
        {"/baton/g/keys/nightly", BATON_PATH_KEY, -1, "nightly"},
        {"/baton/g/keys/nightly/claims/claim-1", BATON_PATH_KEY, -1, "nightly"},
        {"/baton/g/assignment/w1", BATON_PATH_ASSIGNMENT, -1, NULL},
        {"/baton/g/workers/w1", BATON_PATH_WORKER, -1, "w1"},
        {"/baton/g/workers/", BATON_PATH_WORKER, -1, ""},
        /* not ours, or nothing a member knows */
        {"/other/g/config", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g2/config", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/config/x", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/history", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/workers/w1/x", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/workers", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/assignment", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/keys/", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/keys//claims", BATON_PATH_OTHER, -1, NULL},
        /* a partition is digits up to '/' or the end, and fits an int32 */
        {"/baton/g/partitions/", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/partitions/-1", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/partitions/ 3", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/partitions/3abc", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/partitions/2147483648", BATON_PATH_OTHER, -1, NULL},
        {"/baton/g/partitions/99999999999999999999", BATON_PATH_OTHER, -1, NULL},
    };
    for (size_t i = 0; i < N(cases); i++) {
        assert_int_equal(baton_layout_classify(b, cases[i].path, &at), cases[i].kind);
        assert_int_equal(at.kind, cases[i].kind);
        assert_int_equal(at.partition, cases[i].partition);
        if (cases[i].name) {
            assert_non_null(at.name);
            assert_int_equal(at.name_len, strlen(cases[i].name));
            assert_memory_equal(at.name, cases[i].name, at.name_len);
        } else {
            assert_null(at.name);
        }
    }
    assert_int_equal(baton_layout_classify(b, NULL, &at), BATON_PATH_OTHER);
    assert_int_equal(baton_layout_classify(NULL, "/baton/g/config", &at), BATON_PATH_OTHER);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_claim_prefix),
        cmocka_unit_test(test_claim_parse),
        cmocka_unit_test(test_claim_seq),
        cmocka_unit_test(test_claim_lowest),
        cmocka_unit_test(test_claim_predecessor),
        cmocka_unit_test(test_seq_queue),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_claim_sort_for_delete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
