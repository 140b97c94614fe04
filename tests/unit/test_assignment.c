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
    const char *bad[] = {"",
                         "Sticky",
                         "STICKY",
                         "sticky ",
                         " range",
                         "round-robin",
                         "round_robin",
                         "rr",
                         "cooperative-sticky",
                         "unknown"};
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
    assert_int_equal(baton_assign((baton_strategy_t)BATON_STRATEGY_COUNT, 4, NULL, 3, next),
                     BATON_INVALID);
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
            case 1: /* piled onto the first few workers */ prev[p] = rng_below(&seed, hot); break;
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

/* ---- The full assignor (baton_assign_compute): capacities, pins, drains,
 * absent workers (leave grace), racks, rendezvous; churn property tests. ---- */

enum { CH_SLOTS = 8, CH_MAXP = 40 };

/* One worker slot of a churn sequence. */
typedef struct {
    int state; /* 0 gone, 1 live, 2 absent (within leave grace) */
    int capacity;
    int rack;
    int drained;
} slot_t;

typedef struct {
    slot_t slot[CH_SLOTS];
    int np;
    int owner[CH_MAXP]; /* slot index or -1 */
    int pin[CH_MAXP];   /* slot index or -1 */
    int leader_rack[CH_MAXP];
} world_t;

/* The input the coordinator would build: present (live or absent) slots in
 * slot order, prev/pins translated to indices. */
typedef struct {
    baton_assign_worker_t w[CH_SLOTS];
    int slot_of[CH_SLOTS];
    int index_of[CH_SLOTS];
    int nw;
    int prev[CH_MAXP], pins[CH_MAXP], racks[CH_MAXP];
    baton_assign_input_t in;
} built_t;

static void world_build_policy(const world_t *wd, baton_strategy_t s, int use_racks,
                               baton_rack_policy_t policy, built_t *b) {
    memset(b, 0, sizeof(*b));
    for (int k = 0; k < CH_SLOTS; k++) {
        b->index_of[k] = -1;
        if (wd->slot[k].state == 0)
            continue;
        int i = b->nw++;
        b->slot_of[i] = k;
        b->index_of[k] = i;
        b->w[i] = (baton_assign_worker_t){
            .capacity = wd->slot[k].capacity,
            .rack = wd->slot[k].rack,
            .flags = (wd->slot[k].drained ? BATON_ASSIGN_DRAINED : 0) |
                     (wd->slot[k].state == 2 ? BATON_ASSIGN_ABSENT : 0),
        };
    }
    for (int p = 0; p < wd->np; p++) {
        b->prev[p] = wd->owner[p] >= 0 ? b->index_of[wd->owner[p]] : -1;
        b->pins[p] = wd->pin[p] >= 0 ? b->index_of[wd->pin[p]] : -1;
        b->racks[p] = wd->leader_rack[p];
    }
    b->in = (baton_assign_input_t){
        .strategy = s,
        .npartitions = wd->np,
        .prev = b->prev,
        .workers = b->w,
        .nworkers = b->nw,
        .pins = b->pins,
        .leader_rack = use_racks ? b->racks : NULL,
        .rack_policy = policy,
    };
}

static void world_build(const world_t *wd, baton_strategy_t s, int use_racks, built_t *b) {
    world_build_policy(wd, s, use_racks, BATON_RACK_TIEBREAK, b);
}

static int ch_eligible(const baton_assign_input_t *in, int w) {
    return !(in->workers[w].flags & (BATON_ASSIGN_DRAINED | BATON_ASSIGN_ABSENT));
}

/* What the test itself expects of partition p: -1 free, else the worker it
 * must go to (pin or reservation). */
static int ch_forced_owner(const baton_assign_input_t *in, int p) {
    int pin = in->pins ? in->pins[p] : -1;
    if (pin >= 0 && ch_eligible(in, pin))
        return pin;
    int prev = in->prev ? in->prev[p] : -1;
    if (prev >= 0 && (in->workers[prev].flags & BATON_ASSIGN_ABSENT) &&
        !(in->workers[prev].flags & BATON_ASSIGN_DRAINED))
        return prev;
    return -1;
}

/* 1 if p is pinned to an eligible worker (a pin to anyone else is ignored). */
static int ch_pinned(const baton_assign_input_t *in, int p) {
    return in->pins && in->pins[p] >= 0 && ch_eligible(in, in->pins[p]);
}

/* The test's own reading of "balanced": shares by capacity, and a worker
 * pinned beyond its share holds exactly its pins while the others share the
 * rest. Exact integer arithmetic: worker w's share is num[w] / den, or
 * exactly fixed_at[w] when fixed_at[w] >= 0. */
typedef struct {
    long long num[CH_SLOTS];
    long long den;
    int fixed_at[CH_SLOTS];
} ch_shares_t;

static void ch_shares(const baton_assign_input_t *in, ch_shares_t *sh) {
    int pins[CH_SLOTS] = {0};
    long long total = 0;
    for (int p = 0; p < in->npartitions; p++) {
        int f = ch_forced_owner(in, p);
        if (f >= 0 && !ch_pinned(in, p)) /* reserved */
            continue;
        total++;
        if (f >= 0)
            pins[f]++;
    }
    for (int w = 0; w < in->nworkers; w++)
        sh->fixed_at[w] = -1;
    for (int round = 0; round <= in->nworkers; round++) {
        long long rem = total, cap = 0;
        for (int w = 0; w < in->nworkers; w++) {
            if (!ch_eligible(in, w))
                continue;
            if (sh->fixed_at[w] >= 0)
                rem -= sh->fixed_at[w];
            else
                cap += in->workers[w].capacity;
        }
        sh->den = cap ? cap : 1;
        int fixed_one = 0;
        for (int w = 0; w < in->nworkers; w++) {
            sh->num[w] =
                ch_eligible(in, w) && sh->fixed_at[w] < 0 ? rem * in->workers[w].capacity : 0;
            if (ch_eligible(in, w) && sh->fixed_at[w] < 0 && pins[w] * sh->den > sh->num[w]) {
                sh->fixed_at[w] = pins[w];
                fixed_one = 1;
            }
        }
        if (!fixed_one)
            return;
    }
    fail_msg("water filling did not settle");
}

/* 1 if count is within (strictly) 1 of w's share. */
static int ch_within(const ch_shares_t *sh, int w, int count) {
    if (sh->fixed_at[w] >= 0)
        return count == sh->fixed_at[w];
    long long d = (long long)count * sh->den - sh->num[w];
    return d > -sh->den && d < sh->den;
}

/* 1 if next honours pins, reservations, drains and (balanced) the shares. */
static int ch_valid(const baton_assign_input_t *in, const int *next, int balanced,
                    const ch_shares_t *sh) {
    int cnt[CH_SLOTS] = {0}, any = 0;
    for (int w = 0; w < in->nworkers; w++)
        any |= ch_eligible(in, w);
    for (int p = 0; p < in->npartitions; p++) {
        int f = ch_forced_owner(in, p);
        if (f >= 0) {
            if (next[p] != f)
                return 0;
            if (!ch_pinned(in, p))
                continue; /* reserved: outside the balance */
        } else if (next[p] < 0) {
            if (any)
                return 0;
            continue;
        } else if (next[p] >= in->nworkers || !ch_eligible(in, next[p])) {
            return 0;
        }
        cnt[next[p]]++;
    }
    if (balanced)
        for (int w = 0; w < in->nworkers; w++)
            if (ch_eligible(in, w) && !ch_within(sh, w, cnt[w]))
                return 0;
    return 1;
}

/* The fewest changes over every valid balanced assignment, by enumerating
 * all of them: each free partition tries every eligible worker. Shares no
 * reasoning with the assignor's targets. Returns -1 if too large. */
static int ch_min_exhaustive(const baton_assign_input_t *in, const ch_shares_t *sh) {
    int el[CH_SLOTS], nel = 0, freep[CH_MAXP], nfree = 0;
    for (int w = 0; w < in->nworkers; w++)
        if (ch_eligible(in, w))
            el[nel++] = w;
    int cand[CH_MAXP], pick[CH_MAXP] = {0};
    for (int p = 0; p < in->npartitions; p++) {
        int f = ch_forced_owner(in, p);
        cand[p] = f;
        if (f < 0)
            freep[nfree++] = p;
    }
    if (nel == 0)
        return -1;
    double combos = 1;
    for (int k = 0; k < nfree; k++)
        combos *= nel;
    if (combos > 4096)
        return -1;
    int best = INT32_MAX;
    for (;;) {
        for (int k = 0; k < nfree; k++)
            cand[freep[k]] = el[pick[k]];
        if (ch_valid(in, cand, 1, sh)) {
            int d = count_diff(in->prev, cand, in->npartitions);
            if (d < best)
                best = d;
        }
        int k = 0;
        while (k < nfree && ++pick[k] == nel)
            pick[k++] = 0;
        if (k == nfree)
            break;
    }
    return best;
}

/* The fewest changes by trying every choice of which workers round their
 * share up: a worker with target t keeps at most t minus its pins of the free
 * partitions it held. Used when enumeration is too large. */
static int ch_min_by_targets(const baton_assign_input_t *in, const ch_shares_t *sh) {
    int held[CH_SLOTS] = {0}, pins[CH_SLOTS] = {0}, forced = 0, nfree = 0, any = 0;
    for (int p = 0; p < in->npartitions; p++) {
        int f = ch_forced_owner(in, p);
        int prev = in->prev ? in->prev[p] : -1;
        if (f >= 0) {
            if (ch_pinned(in, p)) {
                pins[f]++;
                forced += prev != f;
            }
            continue;
        }
        nfree++;
        if (prev >= 0 && ch_eligible(in, prev))
            held[prev]++;
    }
    long long total = 0;
    for (int w = 0; w < in->nworkers; w++)
        any |= ch_eligible(in, w);
    if (!any) {
        int lost = 0;
        for (int p = 0; p < in->npartitions; p++)
            lost += ch_forced_owner(in, p) < 0 && in->prev && in->prev[p] >= 0;
        return lost;
    }
    for (int p = 0; p < in->npartitions; p++)
        total += ch_forced_owner(in, p) < 0 || ch_pinned(in, p);
    int best = INT32_MAX;
    for (uint32_t mask = 0; mask < (1u << in->nworkers); mask++) {
        long long sum = 0;
        int kept = 0, ok = 1;
        for (int w = 0; w < in->nworkers && ok; w++) {
            if (!ch_eligible(in, w)) {
                ok = !((mask >> w) & 1u);
                continue;
            }
            int t;
            if (sh->fixed_at[w] >= 0) {
                t = sh->fixed_at[w];
                ok = !((mask >> w) & 1u);
            } else {
                long long lo = sh->num[w] / sh->den;
                int whole = sh->num[w] % sh->den == 0;
                t = (int)lo + (int)((mask >> w) & 1u);
                if (whole && ((mask >> w) & 1u))
                    ok = 0;
            }
            sum += t;
            int room = t - pins[w];
            kept += held[w] < room ? held[w] : room;
        }
        if (ok && sum == total && forced + nfree - kept < best)
            best = forced + nfree - kept;
    }
    return best;
}

static int ch_local(const baton_assign_input_t *in, int p, int w) {
    return in->leader_rack && w >= 0 && in->leader_rack[p] >= 0 &&
           in->leader_rack[p] == in->workers[w].rack;
}

/* Realign against tiebreak on the same input: it only swaps partitions
 * outside their leader's rack (so every worker's count, hence balance, is
 * tiebreak's, and nothing in its leader's rack moves for it); it reaches the
 * most rack-local placement those counts allow (per rack, min(free
 * partitions led there, free slots there)); each swap makes at least one
 * partition local for at most two moves; moved = minimal + realigned. */
static void ch_check_realign(const baton_assign_input_t *in, const int *next,
                             const baton_assign_stats_t *st) {
    enum { NR = CH_MAXP + CH_SLOTS };
    baton_assign_input_t tb = *in;
    tb.rack_policy = BATON_RACK_TIEBREAK;
    int plain[CH_MAXP + 1], cnt[CH_SLOTS] = {0}, pcnt[CH_SLOTS] = {0};
    int led[NR] = {0}, slots[NR] = {0}, local = 0, best = 0;
    baton_assign_stats_t pst;
    char errstr[128];
    assert_true(baton_assign_compute(&tb, plain, &pst, errstr, sizeof(errstr)) >= 0);
    assert_int_equal(pst.realigned, 0);
    for (int p = 0; p < in->npartitions; p++) {
        if (next[p] >= 0)
            cnt[next[p]]++;
        if (plain[p] >= 0)
            pcnt[plain[p]]++;
        if (next[p] != plain[p]) {
            assert_true(ch_forced_owner(in, p) < 0);
            assert_false(ch_local(in, p, plain[p]));
        }
        if (ch_forced_owner(in, p) >= 0 || next[p] < 0)
            continue;
        local += ch_local(in, p, next[p]);
        if (in->leader_rack[p] >= 0)
            led[in->leader_rack[p]]++;
        if (in->workers[next[p]].rack >= 0)
            slots[in->workers[next[p]].rack]++;
    }
    assert_memory_equal(cnt, pcnt, sizeof(cnt));
    for (int r = 0; r < NR; r++)
        best += led[r] < slots[r] ? led[r] : slots[r];
    assert_int_equal(local, best);
    assert_true(st->rack_local >= pst.rack_local);
    assert_int_equal(st->moved, pst.moved + st->realigned);
    assert_true(st->realigned <= 2 * (st->rack_local - pst.rack_local));
}

/* Runs one strategy on the world and checks everything that must hold. */
static void ch_check(world_t *wd, baton_strategy_t s, int use_racks, baton_rack_policy_t policy,
                     int *moved_out) {
    built_t b;
    world_build_policy(wd, s, use_racks, policy, &b);
    int next[CH_MAXP + 1], again[CH_MAXP + 1];
    baton_assign_stats_t st;
    char errstr[256];
    int moved = baton_assign_compute(&b.in, next, &st, errstr, sizeof(errstr));
    if (moved < 0)
        fail_msg("refused: %s", errstr);
    ch_shares_t sh;
    ch_shares(&b.in, &sh);
    assert_true(ch_valid(&b.in, next, s != BATON_STRATEGY_RENDEZVOUS, &sh));
    assert_int_equal(moved, count_diff(b.prev, next, wd->np));
    assert_int_equal(st.moved, moved);
    if (s != BATON_STRATEGY_RENDEZVOUS)
        assert_true(baton_assign_imbalance(&b.in, next) < 1.0);

    /* Same input, same output. */
    assert_int_equal(baton_assign_compute(&b.in, again, NULL, errstr, sizeof(errstr)), moved);
    assert_memory_equal(again, next, (size_t)wd->np * sizeof(int));

    int lb = ch_min_exhaustive(&b.in, &sh);
    int lb2 = ch_min_by_targets(&b.in, &sh);
    if (lb >= 0)
        assert_int_equal(lb, lb2);
    assert_int_equal(st.minimal, lb2);
    if (s == BATON_STRATEGY_STICKY && policy == BATON_RACK_REALIGN && use_racks)
        ch_check_realign(&b.in, next, &st);
    else
        assert_int_equal(st.realigned, 0);
    if (s == BATON_STRATEGY_STICKY) {
        assert_int_equal(moved - st.realigned, lb2);
        /* Nothing moves when nothing needs to. */
        memcpy(b.prev, next, (size_t)wd->np * sizeof(int));
        assert_int_equal(baton_assign_compute(&b.in, again, NULL, errstr, sizeof(errstr)), 0);
    }
    for (int p = 0; p < wd->np; p++)
        wd->owner[p] = next[p] >= 0 ? b.slot_of[next[p]] : -1;
    if (moved_out)
        *moved_out = moved;
}

/* One random churn event. */
static void ch_event(world_t *wd, uint64_t *rng) {
    int k = rng_below(rng, CH_SLOTS);
    slot_t *sl = &wd->slot[k];
    switch (rng_below(rng, 10)) {
    case 0: /* join */
    case 1:
        if (sl->state == 0)
            *sl = (slot_t){.state = 1, .capacity = 1 + rng_below(rng, 3), .rack = -1};
        else if (sl->state == 2)
            sl->state = 1; /* came back within its grace */
        break;
    case 2: /* graceful leave or grace expired: gone, partitions free */
        if (sl->state != 0) {
            sl->state = 0;
            sl->drained = 0;
            for (int p = 0; p < wd->np; p++) {
                if (wd->owner[p] == k)
                    wd->owner[p] = -1;
                if (wd->pin[p] == k && rng_below(rng, 2))
                    wd->pin[p] = -1;
            }
        }
        break;
    case 3: /* crash: absent within the leave grace */
        if (sl->state == 1)
            sl->state = 2;
        break;
    case 4: /* capacity change */
        if (sl->state != 0)
            sl->capacity = 1 + rng_below(rng, 4);
        break;
    case 5: /* partition growth */
        for (int n = 1 + rng_below(rng, 3); n > 0 && wd->np < CH_MAXP; n--) {
            wd->owner[wd->np] = -1;
            wd->pin[wd->np] = -1;
            wd->leader_rack[wd->np] = -1;
            wd->np++;
        }
        break;
    case 6: /* pin */
        if (wd->np > 0)
            wd->pin[rng_below(rng, wd->np)] = k;
        break;
    case 7: /* unpin */
        if (wd->np > 0)
            wd->pin[rng_below(rng, wd->np)] = -1;
        break;
    case 8: /* drain or undrain */
        if (sl->state != 0)
            sl->drained = !sl->drained;
        break;
    case 9: /* rack change */
        if (sl->state != 0)
            sl->rack = rng_below(rng, 3) - 1;
        break;
    }
}

static void world_init(world_t *wd, uint64_t *rng, int np) {
    memset(wd, 0, sizeof(*wd));
    wd->np = np;
    for (int p = 0; p < CH_MAXP; p++) {
        wd->owner[p] = -1;
        wd->pin[p] = -1;
        wd->leader_rack[p] = rng_below(rng, 3) - 1;
    }
    for (int k = 0; k < 3; k++)
        wd->slot[k] = (slot_t){.state = 1, .capacity = 1, .rack = rng_below(rng, 3) - 1};
}

/* Thousands of seeded churn sequences, each strategy: pins, reservations and
 * drains honoured; balance within 1 of the capacity share (all but
 * rendezvous); sticky's moves equal the lower bound, found by enumeration
 * on small inputs and by trying every rounding choice otherwise (with
 * rack.policy=realign: plus the moves realignment added, checked against
 * tiebreak by ch_check_realign); same input, same output; a second round
 * moves nothing. */
static void test_churn_properties(void **state) {
    (void)state;
    for (int seq = 0; seq < 3000; seq++) {
        uint64_t rng = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)seq * 0x2545f4914f6cdd1dULL);
        rng_next(&rng);
        world_t wd;
        world_init(&wd, &rng, 1 + rng_below(&rng, seq % 2 ? 8 : CH_MAXP));
        baton_strategy_t s = (baton_strategy_t)(seq % BATON_STRATEGY_COUNT);
        if (seq % 3 == 0)
            s = BATON_STRATEGY_STICKY;
        int racks = rng_below(&rng, 2);
        baton_rack_policy_t policy = (seq / 2) % 2 ? BATON_RACK_REALIGN : BATON_RACK_TIEBREAK;
        for (int step = 0; step < 15; step++) {
            ch_check(&wd, s, racks, policy, NULL);
            ch_event(&wd, &rng);
        }
    }
}

/* The churn sequences with racks on, every strategy, under the default
 * (tiebreak) policy, hashed: the value was recorded with the assignor as it
 * was before rack.policy existed, so tiebreak is today's behaviour exactly,
 * output for output. */
static uint64_t churn_fingerprint(void) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int seq = 0; seq < 1000; seq++) {
        uint64_t rng = 0x7261636bULL ^ ((uint64_t)seq * 0x2545f4914f6cdd1dULL);
        rng_next(&rng);
        world_t wd;
        world_init(&wd, &rng, 1 + rng_below(&rng, CH_MAXP));
        baton_strategy_t s = (baton_strategy_t)(seq % BATON_STRATEGY_COUNT);
        for (int step = 0; step < 15; step++) {
            built_t b;
            world_build(&wd, s, 1, &b);
            int next[CH_MAXP + 1];
            char errstr[128];
            assert_true(baton_assign_compute(&b.in, next, NULL, errstr, sizeof(errstr)) >= 0);
            for (int p = 0; p < wd.np; p++) {
                h = (h ^ (uint64_t)(next[p] + 2)) * 0x100000001b3ULL;
                wd.owner[p] = next[p] >= 0 ? b.slot_of[next[p]] : -1;
            }
            h = (h ^ 0xffu) * 0x100000001b3ULL;
            ch_event(&wd, &rng);
        }
    }
    return h;
}

static void test_tiebreak_unchanged(void **state) {
    (void)state;
    assert_true(churn_fingerprint() == 0xc6a80e627440d442ULL);
}

/* Racks never cost movement, and from scratch every rack gets as many local
 * partitions as its workers have room for. */
static void test_racks(void **state) {
    (void)state;
    enum { NP = 60, NW = 6 };
    baton_assign_worker_t w[NW];
    int rack[NP], next[NP], plain[NP], prev[NP];
    for (int i = 0; i < NW; i++)
        w[i] = (baton_assign_worker_t){.capacity = 1, .rack = i % 3};
    for (int p = 0; p < NP; p++)
        rack[p] = (p * 7) % 3;
    baton_assign_input_t in = {
        .npartitions = NP, .workers = w, .nworkers = NW, .leader_rack = rack};
    baton_assign_stats_t st;
    char errstr[128];
    assert_int_equal(baton_assign_compute(&in, next, &st, errstr, sizeof(errstr)), NP);
    assert_int_equal(st.rack_local, NP); /* 20 per rack, 2 workers x 10 slots per rack */
    for (int p = 0; p < NP; p++)
        assert_int_equal(w[next[p]].rack, rack[p]);

    /* A worker of rack 0 dies: its 10 go to the others; racks change which,
     * never how many. */
    for (int p = 0; p < NP; p++)
        prev[p] = next[p] == 0 ? -1 : next[p];
    in.prev = prev;
    w[0].flags = BATON_ASSIGN_DRAINED;
    int moved = baton_assign_compute(&in, next, &st, errstr, sizeof(errstr));
    in.leader_rack = NULL;
    assert_int_equal(baton_assign_compute(&in, plain, NULL, errstr, sizeof(errstr)), moved);
    assert_int_equal(moved, 10);
    assert_int_equal(st.minimal, 10);
}

/* Kafka's own rack-aware sticky assignor case (AbstractStickyAssignorTest,
 * testRackAwareAssignmentWithUniformSubscription: "rack-awareness is
 * improved if already owned partitions are misaligned"): topics t1 (6), t2
 * (7) and t3 (2) are 15 partitions here; one replica each, the leaders go
 * round the brokers of racks a, b, c in order, so partition p leads in rack
 * p % 3; three members in racks a, b, c own 0-4, 5-9 and 10-14 (t1-0..t1-4;
 * t1-5, t2-0..t2-3; t2-4..t3-1): 10 outside their rack. Kafka ends with none
 * (member a: t1-0, t1-3, t2-0, t2-3, t2-6, i.e. 0, 3, 6, 9, 12). Tiebreak
 * keeps the balanced assignment as it is; realign moves exactly the 10. */
static void test_realign_kafka_case(void **state) {
    (void)state;
    enum { NP = 15, NW = 3 };
    baton_assign_worker_t w[NW];
    int rack[NP], prev[NP], next[NP];
    for (int i = 0; i < NW; i++)
        w[i] = (baton_assign_worker_t){.capacity = 1, .rack = i};
    for (int p = 0; p < NP; p++) {
        rack[p] = p % 3;
        prev[p] = p / 5;
    }
    baton_assign_input_t in = {
        .npartitions = NP, .prev = prev, .workers = w, .nworkers = NW, .leader_rack = rack};
    baton_assign_stats_t st;
    char errstr[128];
    assert_int_equal(baton_assign_compute(&in, next, &st, errstr, sizeof(errstr)), 0);
    assert_int_equal(st.rack_local, 5); /* today: 10 outside their rack */

    in.rack_policy = BATON_RACK_REALIGN;
    assert_int_equal(baton_assign_compute(&in, next, &st, errstr, sizeof(errstr)), 10);
    assert_int_equal(st.rack_local, NP);
    assert_int_equal(st.minimal, 0);
    assert_int_equal(st.realigned, 10);
    for (int p = 0; p < NP; p++)
        assert_int_equal(next[p], p % 3);
    assert_true(baton_assign_imbalance(&in, next) < 1.0);
    /* Realigned and balanced: the next round moves nothing. */
    memcpy(prev, next, sizeof(prev));
    assert_int_equal(baton_assign_compute(&in, next, &st, errstr, sizeof(errstr)), 0);
    assert_int_equal(st.realigned, 0);

    /* A fourth member in rack a: balance first (4/4/4/3), and still every
     * partition the counts allow in its rack (rack a: 5 led, 8 slots). */
    baton_assign_worker_t w4[NW + 1] = {w[0], w[1], w[2], {.capacity = 1, .rack = 0}};
    in.workers = w4;
    in.nworkers = NW + 1;
    int moved = baton_assign_compute(&in, next, &st, errstr, sizeof(errstr));
    assert_true(baton_assign_imbalance(&in, next) < 1.0);
    assert_int_equal(moved, st.minimal + st.realigned);
    assert_int_equal(st.rack_local, 5 + 4 + 4);
}

/* The policy's names round-trip; anything else is refused, by the parser
 * and by the assignor. */
static void test_rack_policy_parse(void **state) {
    (void)state;
    baton_rack_policy_t p;
    assert_int_equal(baton_rack_policy_parse("realign", &p), BATON_OK);
    assert_int_equal(p, BATON_RACK_REALIGN);
    assert_string_equal(baton_rack_policy_name(p), "realign");
    assert_int_equal(baton_rack_policy_parse("tiebreak", &p), BATON_OK);
    assert_int_equal(p, BATON_RACK_TIEBREAK);
    assert_string_equal(baton_rack_policy_name(p), "tiebreak");
    assert_int_equal(baton_rack_policy_parse("Realign", &p), BATON_INVALID);
    assert_int_equal(baton_rack_policy_parse("", &p), BATON_INVALID);
    assert_int_equal(baton_rack_policy_parse(NULL, &p), BATON_INVALID);
    assert_string_equal(baton_rack_policy_name((baton_rack_policy_t)7), "unknown");
    baton_assign_worker_t w = {.capacity = 1, .rack = -1};
    int next[1];
    char errstr[128];
    baton_assign_input_t in = {
        .npartitions = 1, .workers = &w, .nworkers = 1, .rack_policy = (baton_rack_policy_t)7};
    assert_int_equal(baton_assign_compute(&in, next, NULL, errstr, sizeof(errstr)), BATON_INVALID);
    assert_non_null(strstr(errstr, "rack_policy"));
}

/* Bad input is refused with a message naming the field, never a crash. */
static void test_compute_rejects(void **state) {
    (void)state;
    baton_assign_worker_t w[2] = {{.capacity = 1, .rack = -1}, {.capacity = 0, .rack = -1}};
    int next[3], prev[3] = {0, 1, 5};
    char errstr[128];
    baton_assign_input_t in = {.npartitions = 3, .workers = w, .nworkers = 2};
    assert_int_equal(baton_assign_compute(&in, next, NULL, errstr, sizeof(errstr)), BATON_INVALID);
    assert_non_null(strstr(errstr, "workers[1].capacity"));
    w[1].capacity = 2;
    in.prev = prev;
    assert_int_equal(baton_assign_compute(&in, next, NULL, errstr, sizeof(errstr)), BATON_INVALID);
    assert_non_null(strstr(errstr, "prev[2]"));
    prev[2] = -1;
    w[0].rack = 5;
    assert_int_equal(baton_assign_compute(&in, next, NULL, errstr, sizeof(errstr)), BATON_INVALID);
    assert_non_null(strstr(errstr, "workers[0].rack"));
    w[0].rack = -1;
    in.strategy = (baton_strategy_t)99;
    assert_int_equal(baton_assign_compute(&in, next, NULL, errstr, sizeof(errstr)), BATON_INVALID);
    assert_non_null(strstr(errstr, "strategy"));
    in.strategy = BATON_STRATEGY_STICKY;
    assert_int_equal(baton_assign_compute(&in, NULL, NULL, errstr, sizeof(errstr)), BATON_INVALID);
    /* capacity 2 vs 1: shares 2 and 1 of 3 */
    assert_int_equal(baton_assign_compute(&in, next, NULL, errstr, sizeof(errstr)), 1);
    assert_int_equal(next[0], 0);
    assert_int_equal(next[1], 1);
    assert_int_equal(next[2], 1);
}

/* Capacities at scale: 100,000 partitions over 1,000 workers of capacity 1
 * to 4; a worker dies, one joins, a capacity doubles, one is drained: every
 * step moves the minimum and stays within 1 of every share. */
static void test_sticky_large_capacities(void **state) {
    (void)state;
    enum { NP = 100000, NW = 1000 };
    baton_assign_worker_t *w = xcalloc(NW, sizeof(*w));
    int *prev = xmalloc(NP * sizeof(int)), *next = xmalloc(NP * sizeof(int));
    uint64_t rng = 42;
    for (int i = 0; i < NW; i++)
        w[i] = (baton_assign_worker_t){.capacity = 1 + rng_below(&rng, 4), .rack = -1};
    baton_assign_input_t in = {.npartitions = NP, .workers = w, .nworkers = NW - 1};
    baton_assign_stats_t st;
    char errstr[128];
    assert_int_equal(baton_assign_compute(&in, next, &st, errstr, sizeof(errstr)), NP);
    for (int round = 0; round < 4; round++) {
        memcpy(prev, next, NP * sizeof(int));
        in.prev = prev;
        if (round == 0)
            in.nworkers = NW; /* join */
        else if (round == 1)
            w[17].capacity *= 2;
        else if (round == 2)
            w[500].flags = BATON_ASSIGN_DRAINED;
        else
            for (int p = 0; p < NP; p++)
                if (prev[p] == 3)
                    prev[p] = -1; /* worker 3 died (slot kept, drained) */
        if (round == 3)
            w[3].flags = BATON_ASSIGN_DRAINED;
        int moved = baton_assign_compute(&in, next, &st, errstr, sizeof(errstr));
        assert_true(moved > 0);
        assert_int_equal(moved, st.minimal);
        assert_true(baton_assign_imbalance(&in, next) < 1.0);
    }
    free(next);
    free(prev);
    free(w);
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
        cmocka_unit_test(test_churn_properties),
        cmocka_unit_test(test_racks),
        cmocka_unit_test(test_tiebreak_unchanged),
        cmocka_unit_test(test_realign_kafka_case),
        cmocka_unit_test(test_rack_policy_parse),
        cmocka_unit_test(test_compute_rejects),
        cmocka_unit_test(test_sticky_large_capacities),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
