/* test_member_state.c: the member library's resource states
 * (worker/member_state.h): their names, how a state is made of the
 * assignment and the claim's phase, and the table of expected
 * transitions. */
#include "member_state.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Every state has its own name; out of range is "unknown". */
static void test_names(void **state) {
    (void)state;
    for (int a = 0; a < MSTATE_NSTATES; a++) {
        assert_string_not_equal(mstate_name((mstate_t)a), "unknown");
        for (int b = 0; b < a; b++)
            assert_string_not_equal(mstate_name((mstate_t)a), mstate_name((mstate_t)b));
    }
    assert_string_equal(mstate_name(MSTATE_IDLE), "idle");
    assert_string_equal(mstate_name(MSTATE_ORPHAN_CHECK), "orphan_check");
    assert_string_equal(mstate_name(MSTATE_OWNED), "owned");
    assert_string_equal(mstate_name(MSTATE_NSTATES), "unknown");
    assert_string_equal(mstate_name((mstate_t)-1), "unknown");
}

/* The header's table of flag combinations, one row per state. */
static void test_make_and_predicates(void **state) {
    (void)state;
    static const struct {
        int assigned;
        mphase_t phase;
        mstate_t s;
        int owned, claimed, uncertain;
    } rows[] = {
        {0, MPHASE_NONE, MSTATE_IDLE, 0, 0, 0},
        {0, MPHASE_UNCERTAIN, MSTATE_ORPHAN_CHECK, 0, 0, 1},
        {0, MPHASE_CLAIMED, MSTATE_RELEASING, 0, 1, 0},
        {0, MPHASE_OWNED, MSTATE_REVOKING, 1, 1, 0},
        {1, MPHASE_NONE, MSTATE_WANTED, 0, 0, 0},
        {1, MPHASE_UNCERTAIN, MSTATE_LOOKING, 0, 0, 1},
        {1, MPHASE_CLAIMED, MSTATE_QUEUED, 0, 1, 0},
        {1, MPHASE_OWNED, MSTATE_OWNED, 1, 1, 0},
    };
    assert_int_equal(N(rows), MSTATE_NSTATES);
    for (size_t i = 0; i < N(rows); i++) {
        assert_int_equal(mstate_make(rows[i].assigned, rows[i].phase), rows[i].s);
        assert_int_equal(mstate_phase(rows[i].s), rows[i].phase);
        assert_int_equal(mstate_assigned(rows[i].s), rows[i].assigned);
        assert_int_equal(mstate_owned(rows[i].s), rows[i].owned);
        assert_int_equal(mstate_claimed(rows[i].s), rows[i].claimed);
        assert_int_equal(mstate_uncertain(rows[i].s), rows[i].uncertain);
    }
}

/* The lives the membership leads a resource through, step by step. */
static void test_lives(void **state) {
    (void)state;
    static const mstate_t handoff[] = {MSTATE_IDLE,  MSTATE_WANTED,   MSTATE_QUEUED,
                                       MSTATE_OWNED, MSTATE_REVOKING, MSTATE_IDLE};
    static const mstate_t lost_reply[] = {MSTATE_WANTED, MSTATE_LOOKING, MSTATE_QUEUED,
                                          MSTATE_OWNED};
    static const mstate_t orphan[] = {MSTATE_WANTED, MSTATE_LOOKING, MSTATE_ORPHAN_CHECK,
                                      MSTATE_RELEASING, MSTATE_IDLE};
    static const mstate_t leave[] = {MSTATE_OWNED, MSTATE_QUEUED, MSTATE_WANTED};
    static const mstate_t standby[] = {MSTATE_IDLE, MSTATE_WANTED, MSTATE_IDLE};
    static const struct {
        const mstate_t *s;
        size_t n;
    } lives[] = {{handoff, N(handoff)},
                 {lost_reply, N(lost_reply)},
                 {orphan, N(orphan)},
                 {leave, N(leave)},
                 {standby, N(standby)}};
    for (size_t l = 0; l < N(lives); l++)
        for (size_t i = 0; i + 1 < lives[l].n; i++)
            assert_true(mstate_transition_ok(lives[l].s[i], lives[l].s[i + 1]));
}

static void test_detours_and_refusals(void **state) {
    (void)state;
    static const struct {
        mstate_t from, to;
        int ok;
    } cases[] = {
        /* on_acquired refused; the claim lost or dropped while owned */
        {MSTATE_OWNED, MSTATE_QUEUED, 1},
        {MSTATE_OWNED, MSTATE_WANTED, 1},
        {MSTATE_QUEUED, MSTATE_WANTED, 1},
        /* none found after a lost reply, assigned or not */
        {MSTATE_LOOKING, MSTATE_WANTED, 1},
        {MSTATE_ORPHAN_CHECK, MSTATE_IDLE, 1},
        /* the assignment alone, in every phase */
        {MSTATE_QUEUED, MSTATE_RELEASING, 1},
        {MSTATE_RELEASING, MSTATE_QUEUED, 1},
        {MSTATE_REVOKING, MSTATE_OWNED, 1},
        {MSTATE_ORPHAN_CHECK, MSTATE_LOOKING, 1},
        /* a leave while a revoke is pending */
        {MSTATE_REVOKING, MSTATE_RELEASING, 1},
        /* the session gone: idle from anything */
        {MSTATE_OWNED, MSTATE_IDLE, 1},
        {MSTATE_LOOKING, MSTATE_IDLE, 1},
        {MSTATE_QUEUED, MSTATE_IDLE, 1},
        /* never: acquiring without a claim or while unassigned, creating
         * while unassigned, two things at once, back to uncertain with a
         * claim */
        {MSTATE_WANTED, MSTATE_OWNED, 0},
        {MSTATE_LOOKING, MSTATE_OWNED, 0},
        {MSTATE_RELEASING, MSTATE_REVOKING, 0},
        {MSTATE_IDLE, MSTATE_RELEASING, 0},
        {MSTATE_IDLE, MSTATE_ORPHAN_CHECK, 0},
        {MSTATE_IDLE, MSTATE_QUEUED, 0},
        {MSTATE_IDLE, MSTATE_OWNED, 0},
        {MSTATE_WANTED, MSTATE_RELEASING, 0},
        {MSTATE_OWNED, MSTATE_RELEASING, 0},
        {MSTATE_QUEUED, MSTATE_LOOKING, 0},
        {MSTATE_OWNED, MSTATE_LOOKING, 0},
    };
    for (size_t i = 0; i < N(cases); i++)
        assert_int_equal(mstate_transition_ok(cases[i].from, cases[i].to), cases[i].ok);
}

/* standby.claim=ahead: creating while unassigned is expected too (a claim
 * made ahead of time, or its lost reply); acquiring still is not, and
 * everything the plain table allows stays allowed. */
static void test_ahead(void **state) {
    (void)state;
    assert_int_equal(mstate_transition_ok_ahead(MSTATE_IDLE, MSTATE_RELEASING), 1);
    assert_int_equal(mstate_transition_ok_ahead(MSTATE_IDLE, MSTATE_ORPHAN_CHECK), 1);
    assert_int_equal(mstate_transition_ok_ahead(MSTATE_IDLE, MSTATE_OWNED), 0);
    assert_int_equal(mstate_transition_ok_ahead(MSTATE_IDLE, MSTATE_QUEUED), 0);
    assert_int_equal(mstate_transition_ok_ahead(MSTATE_RELEASING, MSTATE_REVOKING), 0);
    assert_int_equal(mstate_transition_ok_ahead(MSTATE_IDLE, MSTATE_IDLE), 0);
    for (int f = 0; f < MSTATE_NSTATES; f++)
        for (int t = 0; t < MSTATE_NSTATES; t++)
            if (mstate_transition_ok((mstate_t)f, (mstate_t)t))
                assert_int_equal(mstate_transition_ok_ahead((mstate_t)f, (mstate_t)t), 1);
}

/* A state set to itself is not a transition; values out of range never
 * are. */
static void test_refused_values(void **state) {
    (void)state;
    for (int s = 0; s < MSTATE_NSTATES; s++) {
        assert_false(mstate_transition_ok((mstate_t)s, (mstate_t)s));
        assert_false(mstate_transition_ok((mstate_t)s, MSTATE_NSTATES));
        assert_false(mstate_transition_ok(MSTATE_NSTATES, (mstate_t)s));
        assert_false(mstate_transition_ok((mstate_t)-1, (mstate_t)s));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),          cmocka_unit_test(test_make_and_predicates),
        cmocka_unit_test(test_lives),          cmocka_unit_test(test_detours_and_refusals),
        cmocka_unit_test(test_refused_values), cmocka_unit_test(test_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
