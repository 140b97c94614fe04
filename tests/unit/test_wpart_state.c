/* test_wpart_state.c: the worker's partition states (worker/wpart_state.h):
 * their names, the table of expected transitions, and the predicates
 * worker.c tests instead of the flags they replaced. */
#include "wpart_state.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* Every state has its own name; out of range is "unknown". */
static void test_names(void **state) {
    (void)state;
    for (int a = 0; a < WPART_NSTATES; a++) {
        assert_non_null(wpart_state_name((wpart_state_t)a));
        assert_string_not_equal(wpart_state_name((wpart_state_t)a), "unknown");
        for (int b = 0; b < a; b++)
            assert_string_not_equal(wpart_state_name((wpart_state_t)a),
                                    wpart_state_name((wpart_state_t)b));
    }
    assert_string_equal(wpart_state_name(WPART_NONE), "none");
    assert_string_equal(wpart_state_name(WPART_FENCING_PREFETCHED), "fencing_prefetched");
    assert_string_equal(wpart_state_name(WPART_NSTATES), "unknown");
    assert_string_equal(wpart_state_name((wpart_state_t)-1), "unknown");
}

/* The life of a partition through a handoff, step by step. */
static void test_lifecycle(void **state) {
    (void)state;
    static const wpart_state_t plain[] = {WPART_NONE,   WPART_FENCING,   WPART_FENCED,
                                          WPART_ACTIVE, WPART_RELEASING, WPART_NONE};
    for (size_t i = 0; i + 1 < sizeof(plain) / sizeof(plain[0]); i++)
        assert_true(wpart_transition_ok(plain[i], plain[i + 1]));
    static const wpart_state_t ahead[] = {WPART_NONE, WPART_PREFETCHING, WPART_FENCING_PREFETCHED,
                                          WPART_FENCED, WPART_ACTIVE};
    for (size_t i = 0; i + 1 < sizeof(ahead) / sizeof(ahead[0]); i++)
        assert_true(wpart_transition_ok(ahead[i], ahead[i + 1]));
}

/* What may happen on the way (ok: a stale fence or write, a release
 * before the fence, a processor error, fetching ahead stopped) and what
 * never does (a write without a fence, a fence without a claim). */
static void test_detours_and_refusals(void **state) {
    (void)state;
    static const struct {
        wpart_state_t from, to;
        int ok;
    } cases[] = {
        {WPART_PREFETCHING, WPART_NONE, 1},
        {WPART_FENCING, WPART_NONE, 1},
        {WPART_FENCING_PREFETCHED, WPART_PREFETCHING, 1},
        {WPART_FENCING_PREFETCHED, WPART_NONE, 1},
        {WPART_FENCED, WPART_FAILED, 1},
        {WPART_ACTIVE, WPART_FAILED, 1},
        {WPART_RELEASING, WPART_FAILED, 1},
        {WPART_FAILED, WPART_RELEASING, 1},
        {WPART_FENCED, WPART_RELEASING, 1},
        {WPART_FENCED, WPART_NONE, 1},
        {WPART_ACTIVE, WPART_NONE, 1},
        {WPART_FAILED, WPART_NONE, 1},
        {WPART_NONE, WPART_ACTIVE, 0},
        {WPART_NONE, WPART_FENCED, 0},
        {WPART_PREFETCHING, WPART_FENCED, 0},
        {WPART_FENCING, WPART_ACTIVE, 0},
        {WPART_ACTIVE, WPART_FENCED, 0},
        {WPART_FAILED, WPART_ACTIVE, 0},
        {WPART_RELEASING, WPART_ACTIVE, 0},
        {WPART_ACTIVE, WPART_FENCING, 0},
        {WPART_NONE, WPART_RELEASING, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(wpart_transition_ok(cases[i].from, cases[i].to), cases[i].ok);
}

/* A state set to itself is not a transition; values out of range never
 * are. */
static void test_refused_values(void **state) {
    (void)state;
    for (int s = 0; s < WPART_NSTATES; s++) {
        assert_false(wpart_transition_ok((wpart_state_t)s, (wpart_state_t)s));
        assert_false(wpart_transition_ok((wpart_state_t)s, WPART_NSTATES));
        assert_false(wpart_transition_ok(WPART_NSTATES, (wpart_state_t)s));
        assert_false(wpart_transition_ok((wpart_state_t)-1, (wpart_state_t)s));
    }
}

/* Every state is reachable from none, and none from every state. */
static void test_connected(void **state) {
    (void)state;
    int seen[WPART_NSTATES] = {[WPART_NONE] = 1};
    for (int round = 0; round < WPART_NSTATES; round++)
        for (int a = 0; a < WPART_NSTATES; a++)
            for (int b = 0; b < WPART_NSTATES; b++)
                if (seen[a] && wpart_transition_ok((wpart_state_t)a, (wpart_state_t)b))
                    seen[b] = 1;
    for (int s = 0; s < WPART_NSTATES; s++) {
        assert_true(seen[s]);
        int out = 0;
        for (int b = 0; b < WPART_NSTATES; b++)
            out |= wpart_transition_ok((wpart_state_t)s, (wpart_state_t)b);
        assert_true(out);
    }
}

/* The predicates stand for the old flags: owned = active, consuming =
 * active && !failed, fencing = fence_pending, prefetched = prefetch; the
 * flags were never set together in ways the states cannot say. */
static void test_predicates(void **state) {
    (void)state;
    for (int i = 0; i < WPART_NSTATES; i++) {
        wpart_state_t s = (wpart_state_t)i;
        int owned =
            s == WPART_FENCED || s == WPART_ACTIVE || s == WPART_FAILED || s == WPART_RELEASING;
        assert_int_equal(wpart_owned(s), owned);
        assert_int_equal(wpart_consuming(s), owned && s != WPART_FAILED);
        assert_int_equal(wpart_fencing(s), s == WPART_FENCING || s == WPART_FENCING_PREFETCHED);
        assert_int_equal(wpart_prefetched(s),
                         s == WPART_PREFETCHING || s == WPART_FENCING_PREFETCHED);
        assert_false(wpart_owned(s) && (wpart_fencing(s) || wpart_prefetched(s)));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_detours_and_refusals),
        cmocka_unit_test(test_refused_values),
        cmocka_unit_test(test_connected),
        cmocka_unit_test(test_predicates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
