/* test_assignment.c: unit tests for the pure assignor (assignment.h): strategy
 * names, balance, exact range/roundrobin outputs, and sticky minimal movement
 * checked against brute force on small inputs and closed forms on large ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assignment.h"
#include "baton_err.h"
#include "baton_util.h"

/* xorshift64: a fixed seed gives the same cases on every platform and libc,
 * so a failure reproduces (rand() would not). */
static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int rng_below(uint64_t *s, int n) { return (int)(rng_next(s) % (uint64_t)n); }

static int count_diff(const int *prev, const int *next, int npartitions) {
    int d = 0;
    for (int p = 0; p < npartitions; p++)
        if (next[p] != (prev ? prev[p] : -1))
            d++;
    return d;
}

/* Asserts every partition has an owner in range and every worker owns
 * floor(P/W) or ceil(P/W) partitions. */
static void assert_balanced(const int *next, int npartitions, int nworkers) {
    int *cnt = xcalloc((size_t)nworkers + 1, sizeof(*cnt));
    for (int p = 0; p < npartitions; p++) {
        assert_in_range(next[p], 0, nworkers - 1);
        cnt[next[p]]++;
    }
    int q = npartitions / nworkers;
    int r = npartitions % nworkers, nextra = 0;
    for (int w = 0; w < nworkers; w++) {
        assert_in_range(cnt[w], q, q + 1);
        if (cnt[w] == q + 1)
            nextra++;
    }
    assert_int_equal(nextra, r);
    free(cnt);
}

/* The minimum number of changed owners over every balanced target vector,
 * found by trying every choice of the P % W workers that get one extra
 * partition (nworkers <= 20). This shares no code or reasoning with the
 * assignor's choice of who gets the extras. */
static int min_moves_by_targets(const int *prev, int npartitions, int nworkers) {
    int *cnt = xcalloc((size_t)nworkers, sizeof(*cnt));
    for (int p = 0; p < npartitions; p++)
        if (prev && prev[p] >= 0)
            cnt[prev[p]]++;
    int q = npartitions / nworkers, r = npartitions % nworkers, best = npartitions + 1;
    for (uint32_t mask = 0; mask < (1u << nworkers); mask++) {
        if (__builtin_popcount(mask) != r)
            continue;
        int kept = 0;
        for (int w = 0; w < nworkers; w++) {
            int t = q + ((mask >> w) & 1u);
            kept += cnt[w] < t ? cnt[w] : t;
        }
        if (npartitions - kept < best)
            best = npartitions - kept;
    }
    free(cnt);
    return best;
}

/* The minimum number of changed owners over every balanced assignment,
 * found by enumerating all W^P assignments (tiny inputs only). */
static int min_moves_exhaustive(const int *prev, int npartitions, int nworkers) {
    int cand[8], cnt[8], best = npartitions + 1;
    int q = npartitions / nworkers;
    memset(cand, 0, sizeof(cand));
    for (;;) {
        memset(cnt, 0, sizeof(cnt));
        for (int p = 0; p < npartitions; p++)
            cnt[cand[p]]++;
        int balanced = 1;
        for (int w = 0; w < nworkers; w++)
            if (cnt[w] < q || cnt[w] > q + 1)
                balanced = 0;
        if (balanced) {
            int d = count_diff(prev, cand, npartitions);
            if (d < best)
                best = d;
        }
        /* Next candidate in base-W odometer order. */
        int p = 0;
        while (p < npartitions && ++cand[p] == nworkers)
            cand[p++] = 0;
        if (p == npartitions)
            break;
    }
    return best;
}

/* Runs the sticky assignor and checks what holds for every input: balance,
 * the return value is the real diff, determinism, and that a second round
 * with nothing changed moves nothing. Returns the number moved. */
static int sticky_checked(const int *prev, int npartitions, int nworkers, int *next) {
    int moved = baton_assign(BATON_STRATEGY_STICKY, npartitions, prev, nworkers, next);
    assert_true(moved >= 0);
    assert_balanced(next, npartitions, nworkers);
    assert_int_equal(moved, count_diff(prev, next, npartitions));

    int *again = xmalloc((size_t)npartitions * sizeof(*again) + 1);
    assert_int_equal(baton_assign(BATON_STRATEGY_STICKY, npartitions, prev, nworkers, again),
                     moved);
    assert_memory_equal(again, next, (size_t)npartitions * sizeof(*next));
    assert_int_equal(baton_assign(BATON_STRATEGY_STICKY, npartitions, next, nworkers, again), 0);
    assert_memory_equal(again, next, (size_t)npartitions * sizeof(*next));
    free(again);
    return moved;
}

static void test_strategy_parse_name_roundtrip(void **state) {
    (void)state;
    const baton_strategy_t all[] = {BATON_STRATEGY_STICKY, BATON_STRATEGY_RANGE,
                                    BATON_STRATEGY_ROUNDROBIN};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(all); i++) {
        baton_strategy_t s = (baton_strategy_t)-1;
        assert_int_equal(baton_strategy_parse(baton_strategy_name(all[i]), &s), BATON_OK);
        assert_int_equal(s, all[i]);
    }
    assert_string_equal(baton_strategy_name(BATON_STRATEGY_STICKY), "sticky");
    assert_string_equal(baton_strategy_name(BATON_STRATEGY_RANGE), "range");
    assert_string_equal(baton_strategy_name(BATON_STRATEGY_ROUNDROBIN), "roundrobin");
    assert_string_equal(baton_strategy_name((baton_strategy_t)42), "unknown");
}

static void test_strategy_parse_rejects_bad_names(void **state) {
    (void)state;
    const char *bad[] = {"", "Sticky", "STICKY", "sticky ", " range", "round-robin",
                         "round_robin", "rr", "cooperative-sticky", "unknown"};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(bad); i++) {
        baton_strategy_t s = BATON_STRATEGY_RANGE;
        assert_int_equal(baton_strategy_parse(bad[i], &s), BATON_INVALID);
        assert_int_equal(s, BATON_STRATEGY_RANGE); /* untouched on failure */
    }
    baton_strategy_t s;
    assert_int_equal(baton_strategy_parse(NULL, &s), BATON_INVALID);
    assert_int_equal(baton_strategy_parse("sticky", NULL), BATON_INVALID);
}

static void test_balance_many_combos(void **state) {
    (void)state;
    const baton_strategy_t all[] = {BATON_STRATEGY_STICKY, BATON_STRATEGY_RANGE,
                                    BATON_STRATEGY_ROUNDROBIN};
    int next[300];
    for (size_t i = 0; i < BATON_ARRAY_SIZE(all); i++)
        for (int np = 0; np <= 300; np += (np < 70 ? 1 : 23))
            for (int nw = 1; nw <= 40; nw++) {
                assert_int_equal(baton_assign(all[i], np, NULL, nw, next), np);
                assert_balanced(next, np, nw);
            }
}

static void test_no_workers(void **state) {
    (void)state;
    int prev[5] = {-1, -1, -1, -1, -1}, next[5] = {7, 7, 7, 7, 7};
    for (int s = BATON_STRATEGY_STICKY; s <= BATON_STRATEGY_ROUNDROBIN; s++) {
        memset(next, 7, sizeof(next));
        assert_int_equal(baton_assign((baton_strategy_t)s, 5, NULL, 0, next), 0);
        for (int p = 0; p < 5; p++)
            assert_int_equal(next[p], -1);
        memset(next, 7, sizeof(next));
        assert_int_equal(baton_assign((baton_strategy_t)s, 5, prev, 0, next), 0);
        for (int p = 0; p < 5; p++)
            assert_int_equal(next[p], -1);
    }
    /* With no live worker, any owner index is out of range. */
    prev[2] = 0;
    assert_int_equal(baton_assign(BATON_STRATEGY_STICKY, 5, prev, 0, next), BATON_INVALID);
}

static void test_zero_partitions(void **state) {
    (void)state;
    int next[1] = {7};
    for (int s = BATON_STRATEGY_STICKY; s <= BATON_STRATEGY_ROUNDROBIN; s++) {
        assert_int_equal(baton_assign((baton_strategy_t)s, 0, NULL, 3, NULL), 0);
        assert_int_equal(baton_assign((baton_strategy_t)s, 0, NULL, 0, NULL), 0);
        assert_int_equal(baton_assign((baton_strategy_t)s, 0, NULL, 3, next), 0);
        assert_int_equal(next[0], 7);
    }
}

static void test_invalid_arguments(void **state) {
    (void)state;
    const int bad_owner[] = {-2, 3, 4, 1000, -1000};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(bad_owner); i++)
        for (int s = BATON_STRATEGY_STICKY; s <= BATON_STRATEGY_ROUNDROBIN; s++) {
            int prev[4] = {0, 1, 2, -1}, next[4] = {9, 9, 9, 9};
            prev[3] = bad_owner[i];
            assert_int_equal(baton_assign((baton_strategy_t)s, 4, prev, 3, next), BATON_INVALID);
            /* A refused call writes nothing. */
            for (int p = 0; p < 4; p++)
                assert_int_equal(next[p], 9);
        }
    int next[4];
    assert_int_equal(baton_assign(BATON_STRATEGY_STICKY, -1, NULL, 3, next), BATON_INVALID);
    assert_int_equal(baton_assign(BATON_STRATEGY_STICKY, 4, NULL, -1, next), BATON_INVALID);
    assert_int_equal(baton_assign(BATON_STRATEGY_STICKY, 4, NULL, 3, NULL), BATON_INVALID);
    assert_int_equal(baton_assign((baton_strategy_t)3, 4, NULL, 3, next), BATON_INVALID);
    assert_int_equal(baton_assign((baton_strategy_t)-1, 4, NULL, 3, next), BATON_INVALID);
}

static void test_range_exact(void **state) {
    (void)state;
    int next[16];
    const int want10x3[] = {0, 0, 0, 0, 1, 1, 1, 2, 2, 2};
    assert_int_equal(baton_assign(BATON_STRATEGY_RANGE, 10, NULL, 3, next), 10);
    assert_memory_equal(next, want10x3, sizeof(want10x3));

    const int want2x3[] = {0, 1};
    assert_int_equal(baton_assign(BATON_STRATEGY_RANGE, 2, NULL, 3, next), 2);
    assert_memory_equal(next, want2x3, sizeof(want2x3));

    const int want7x1[] = {0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(baton_assign(BATON_STRATEGY_RANGE, 7, NULL, 1, next), 7);
    assert_memory_equal(next, want7x1, sizeof(want7x1));

    const int want11x4[] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3};
    assert_int_equal(baton_assign(BATON_STRATEGY_RANGE, 11, NULL, 4, next), 11);
    assert_memory_equal(next, want11x4, sizeof(want11x4));

    /* The count is against prev: range ignores it but reports what moved. */
    const int prev[] = {0, 0, 0, 0, 2, 2, 1, 1, 2, -1};
    assert_int_equal(baton_assign(BATON_STRATEGY_RANGE, 10, prev, 3, next), 4);
    assert_memory_equal(next, want10x3, sizeof(want10x3));
}

static void test_roundrobin_exact(void **state) {
    (void)state;
    int next[16];
    const int want7x3[] = {0, 1, 2, 0, 1, 2, 0};
    assert_int_equal(baton_assign(BATON_STRATEGY_ROUNDROBIN, 7, NULL, 3, next), 7);
    assert_memory_equal(next, want7x3, sizeof(want7x3));

    const int want3x5[] = {0, 1, 2};
    assert_int_equal(baton_assign(BATON_STRATEGY_ROUNDROBIN, 3, NULL, 5, next), 3);
    assert_memory_equal(next, want3x5, sizeof(want3x5));

    const int prev[] = {0, 1, 2, 0, 0, -1, 0};
    assert_int_equal(baton_assign(BATON_STRATEGY_ROUNDROBIN, 7, prev, 3, next), 2);
    assert_memory_equal(next, want7x3, sizeof(want7x3));
}

/* From nothing, sticky fills workers in index order with the extras on the
 * lowest indices, which is exactly the range layout. */
static void test_sticky_fresh_matches_range(void **state) {
    (void)state;
    int a[200], b[200];
    for (int np = 0; np <= 200; np += 7)
        for (int nw = 1; nw <= 25; nw++) {
            assert_int_equal(baton_assign(BATON_STRATEGY_STICKY, np, NULL, nw, a), np);
            assert_int_equal(baton_assign(BATON_STRATEGY_RANGE, np, NULL, nw, b), np);
            assert_memory_equal(a, b, (size_t)np * sizeof(int));
        }
}

static void test_sticky_nothing_moves_when_balanced(void **state) {
    (void)state;
    /* Counts 2,3,2,3: the extras sit on workers 1 and 3, not 0 and 1 as a
     * fresh assignment would put them; still balanced, so nothing moves. */
    const int prev[] = {3, 1, 0, 2, 3, 1, 0, 2, 3, 1};
    int next[10];
    assert_int_equal(sticky_checked(prev, 10, 4, next), 0);
    assert_memory_equal(next, prev, sizeof(prev));

    /* Every balanced layout of a randomly shuffled fresh assignment. */
    uint64_t seed = 0x9e3779b97f4a7c15u;
    int shuffled[120], out[120];
    for (int round = 0; round < 200; round++) {
        int np = rng_below(&seed, 121), nw = 1 + rng_below(&seed, 15);
        assert_int_equal(baton_assign(BATON_STRATEGY_ROUNDROBIN, np, NULL, nw, shuffled), np);
        for (int i = np - 1; i > 0; i--) {
            int j = rng_below(&seed, i + 1), t = shuffled[i];
            shuffled[i] = shuffled[j];
            shuffled[j] = t;
        }
        assert_int_equal(sticky_checked(shuffled, np, nw, out), 0);
        assert_memory_equal(out, shuffled, (size_t)np * sizeof(int));
    }
}

/* A worker of a balanced group dies: the survivors are renumbered (indices
 * above it shift down, as the coordinator's sorted id list would) and exactly
 * the dead worker's partitions move. That is always the minimum: old counts
 * are q or q+1 with q = floor(P/W), the new floor is at least q, and at most
 * r = P % W survivors hold q+1 while P % (W-1) extra slots are >= r when the
 * floor did not grow. */
static void test_sticky_worker_death(void **state) {
    (void)state;
    int prev[200], next[200], after[200];
    for (int np = 0; np <= 200; np += (np < 40 ? 1 : 17))
        for (int nw = 2; nw <= 12; nw++)
            for (int dead = 0; dead < nw; dead++) {
                assert_int_equal(baton_assign(BATON_STRATEGY_STICKY, np, NULL, nw, prev), np);
                int lost = 0;
                for (int p = 0; p < np; p++) {
                    if (prev[p] == dead) {
                        after[p] = -1;
                        lost++;
                    } else {
                        after[p] = prev[p] > dead ? prev[p] - 1 : prev[p];
                    }
                }
                int moved = sticky_checked(after, np, nw - 1, next);
                assert_int_equal(moved, lost);
                assert_int_equal(moved, min_moves_by_targets(after, np, nw - 1));
                for (int p = 0; p < np; p++)
                    if (after[p] >= 0)
                        assert_int_equal(next[p], after[p]);
            }
}

/* A worker joins a balanced group of W at any index: exactly floor(P/(W+1))
 * partitions move, all to the newcomer. Every old worker holds at least the
 * new floor, and the P % (W+1) extra slots go to old workers holding more
 * than it, so the newcomer's target is the new floor and no old worker is
 * short. */
static void test_sticky_worker_join(void **state) {
    (void)state;
    int prev[200], next[200], before[200];
    for (int np = 0; np <= 200; np += (np < 40 ? 1 : 17))
        for (int nw = 1; nw <= 12; nw++)
            for (int joined = 0; joined <= nw; joined++) {
                assert_int_equal(baton_assign(BATON_STRATEGY_STICKY, np, NULL, nw, prev), np);
                for (int p = 0; p < np; p++)
                    before[p] = prev[p] >= joined ? prev[p] + 1 : prev[p];
                int moved = sticky_checked(before, np, nw + 1, next);
                assert_int_equal(moved, np / (nw + 1));
                assert_int_equal(moved, min_moves_by_targets(before, np, nw + 1));
                for (int p = 0; p < np; p++)
                    if (next[p] != before[p])
                        assert_int_equal(next[p], joined);
            }

    /* The examples from the design notes. */
    const int twelve[] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
    assert_int_equal(sticky_checked(twelve, 12, 4, next), 3);
    const int seven[] = {0, 0, 0, 0, 1, 1, 1};
    assert_int_equal(sticky_checked(seven, 7, 3, next), 2);
}

/* Every previous assignment of up to 6 partitions over up to 4 workers
 * (including unowned partitions), checked against the minimum over all
 * balanced assignments. This also validates min_moves_by_targets(), which the
 * larger random test relies on. */
static void test_sticky_exhaustive_small(void **state) {
    (void)state;
    int prev[8], next[8];
    for (int nw = 1; nw <= 4; nw++)
        for (int np = 0; np <= (nw <= 3 ? 6 : 5); np++) {
            /* Odometer over owners -1..nw-1 for every partition. */
            for (int p = 0; p < np; p++)
                prev[p] = -1;
            for (;;) {
                int moved = sticky_checked(prev, np, nw, next);
                int best = min_moves_exhaustive(prev, np, nw);
                assert_int_equal(moved, best);
                assert_int_equal(min_moves_by_targets(prev, np, nw), best);
                int p = 0;
                while (p < np && ++prev[p] == nw)
                    prev[p++] = -1;
                if (p == np)
                    break;
            }
        }
}

/* Random previous assignments of several shapes (uniform, skewed onto a few
 * workers, mostly unowned, left over from a different worker count) checked
 * for balance and minimal movement. */
static void test_sticky_property_random(void **state) {
    (void)state;
    uint64_t seed = 0x2545f4914f6cdd1du;
    int prev[97], next[97];
    for (int round = 0; round < 4000; round++) {
        int np = rng_below(&seed, 97), nw = 1 + rng_below(&seed, 12);
        int shape = rng_below(&seed, 4), hot = 1 + rng_below(&seed, nw);
        for (int p = 0; p < np; p++) {
            switch (shape) {
            case 0: /* uniform, with unowned partitions */
                prev[p] = rng_below(&seed, nw + 1) - 1;
                break;
            case 1: /* piled onto the first few workers */
                prev[p] = rng_below(&seed, hot);
                break;
            case 2: /* mostly unowned */
                prev[p] = rng_below(&seed, 5) == 0 ? rng_below(&seed, nw) : -1;
                break;
            default: /* a contiguous layout for another count, clipped */
                prev[p] = (p * hot / (np ? np : 1)) % nw;
                break;
            }
        }
        int moved = sticky_checked(prev, np, nw, next);
        assert_int_equal(moved, min_moves_by_targets(prev, np, nw));

        /* Stickiness in the other direction: no partition leaves a worker
         * that ended at or below the count it already had. */
        int cnt_prev[13] = {0}, cnt_next[13] = {0};
        for (int p = 0; p < np; p++) {
            if (prev[p] >= 0)
                cnt_prev[prev[p]]++;
            cnt_next[next[p]]++;
        }
        for (int p = 0; p < np; p++)
            if (prev[p] >= 0 && next[p] != prev[p])
                assert_true(cnt_next[prev[p]] < cnt_prev[prev[p]]);
    }
}

/* 100,000 partitions over 1,000 workers: fresh, a death, the rejoin, and a
 * fully skewed start. Correctness only; the size proves it is not quadratic. */
static void test_sticky_large(void **state) {
    (void)state;
    enum { NP = 100000, NW = 1000, DEAD = 500 };
    int *a = xmalloc(NP * sizeof(int)), *b = xmalloc(NP * sizeof(int));
    int *c = xmalloc(NP * sizeof(int));

    assert_int_equal(sticky_checked(NULL, NP, NW, a), NP);

    int lost = 0;
    for (int p = 0; p < NP; p++) {
        if (a[p] == DEAD) {
            b[p] = -1;
            lost++;
        } else {
            b[p] = a[p] > DEAD ? a[p] - 1 : a[p];
        }
    }
    assert_int_equal(lost, NP / NW);
    assert_int_equal(sticky_checked(b, NP, NW - 1, c), lost);

    /* A new worker joins at the end: 999 workers hold 100 or 101, the
     * newcomer takes one from each of the 100 that hold 101. */
    assert_int_equal(sticky_checked(c, NP, NW, a), NP / NW);

    /* Everything on worker 0: all but its quota moves. */
    memset(b, 0, NP * sizeof(int));
    assert_int_equal(sticky_checked(b, NP, NW, a), NP - NP / NW);
    for (int p = 0; p < NP / NW; p++)
        assert_int_equal(a[p], 0); /* kept its lowest-numbered partitions */

    for (int s = BATON_STRATEGY_RANGE; s <= BATON_STRATEGY_ROUNDROBIN; s++) {
        assert_int_equal(baton_assign((baton_strategy_t)s, NP, NULL, NW, a), NP);
        assert_balanced(a, NP, NW);
    }
    free(c);
    free(b);
    free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strategy_parse_name_roundtrip),
        cmocka_unit_test(test_strategy_parse_rejects_bad_names),
        cmocka_unit_test(test_balance_many_combos),
        cmocka_unit_test(test_no_workers),
        cmocka_unit_test(test_zero_partitions),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_range_exact),
        cmocka_unit_test(test_roundrobin_exact),
        cmocka_unit_test(test_sticky_fresh_matches_range),
        cmocka_unit_test(test_sticky_nothing_moves_when_balanced),
        cmocka_unit_test(test_sticky_worker_death),
        cmocka_unit_test(test_sticky_worker_join),
        cmocka_unit_test(test_sticky_exhaustive_small),
        cmocka_unit_test(test_sticky_property_random),
        cmocka_unit_test(test_sticky_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
