/* test_coord_standby.c: standbys (assignment/coord_standby.c). The point
 * of a standby is that it is who the coordinator's next rebalance names
 * when the owner leaves, so a standby that takes over on the owner's leave
 * mark or death is never moved again. Checked over seeded random groups
 * for every strategy (capacities, racks, pins, a drained worker): the
 * rebalance with the owner drained (a leave mark) and the one with the
 * owner gone from the member list (a crash: indices shift) both give each
 * of its partitions and keys to its standby. Also: no standby for what is
 * unowned, none that is the owner itself, the direct rule (sticky, range)
 * against the simulation over bigger groups, the budget skip, the per-worker
 * lists, and the assignment codec's "standby" field (round trip, bad
 * input refused by name). */
#include "assignment.h"
#include "baton_codec.h"
#include "baton_err.h"
#include "coord_keys.h"
#include "coord_standby.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *const key_names[] = {"k0", "k1", "k2", "k3", "k4", "k5"};
static const char *const ids[] = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"};

#define WMAX 9
#define PMAX 40
#define KMAX 6

/* Rows as coord_standby.h takes them: partitions, then keys. */
static void standby_rows(const baton_assign_input_t *in, const int *next, size_t nkeys,
                         const coord_key_worker_t *kw, const int *knext, int *sb, int *ksb,
                         int want) {
    int rows[PMAX + KMAX + 1], rsb[PMAX + KMAX + 1];
    char err[256];
    size_t P = (size_t)in->npartitions;
    memcpy(rows, next, sizeof(int) * P);
    memcpy(rows + P, knext, sizeof(int) * nkeys);
    assert_int_equal(coord_standby_compute(in, key_names, nkeys, kw, rows, rsb, err, sizeof(err)),
                     want);
    memcpy(sb, rsb, sizeof(int) * P);
    memcpy(ksb, rsb + P, sizeof(int) * nkeys);
}

static unsigned rnd_state;
static unsigned rnd(unsigned n) {
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 16) % n;
}

typedef struct {
    baton_assign_worker_t aw[WMAX];
    coord_key_worker_t kw[WMAX];
    int nw, P, nkeys;
    int pins[PMAX], lrack[PMAX], prev[PMAX], hint[PMAX];
    baton_strategy_t strategy;
    baton_rack_policy_t rack_policy; /* realign or tiebreak, drawn */
} group_t;

static void group_random(group_t *g, baton_strategy_t strategy) {
    memset(g, 0, sizeof(*g));
    g->strategy = strategy;
    g->rack_policy = rnd(2) ? BATON_RACK_REALIGN : BATON_RACK_TIEBREAK;
    g->nw = 2 + (int)rnd(WMAX - 1);
    g->P = 1 + (int)rnd(PMAX);
    g->nkeys = (int)rnd(KMAX + 1);
    for (int i = 0; i < g->nw; i++) {
        g->aw[i] = (baton_assign_worker_t){
            .id = ids[i], .capacity = 1 + (int)rnd(3), .rack = (int)rnd(3) - 1};
        if (rnd(8) == 0)
            g->aw[i].flags = BATON_ASSIGN_DRAINED;
        g->kw[i] = (coord_key_worker_t){
            .id = ids[i], .capacity = g->aw[i].capacity, .flags = g->aw[i].flags};
    }
    for (int p = 0; p < g->P; p++) {
        g->pins[p] = rnd(10) == 0 ? (int)rnd((unsigned)g->nw) : -1;
        g->lrack[p] = (int)rnd(3) - 1;
        g->prev[p] = rnd(3) == 0 ? -1 : (int)rnd((unsigned)g->nw);
        g->hint[p] = rnd(3) == 0 ? -1 : (int)rnd((unsigned)g->nw);
    }
}

static baton_assign_input_t group_input(group_t *g, const int *prev, const int *hint) {
    return (baton_assign_input_t){.hint = hint,
                                  .strategy = g->strategy,
                                  .npartitions = g->P,
                                  .prev = prev,
                                  .workers = g->aw,
                                  .nworkers = g->nw,
                                  .pins = g->pins,
                                  .leader_rack = g->lrack,
                                  .rack_policy = g->rack_policy};
}

/* The rebalance after worker o crashed: o is gone from the member list, so
 * every later index shifts down by one; results mapped back to g's indices.
 * hint: the standbys published with next (g's indices). */
static void rebalance_without(group_t *g, const int *next, const int *knext, const int *hint, int o,
                              int *out, int *kout) {
    group_t h = *g;
    int map[WMAX], back[WMAX], n = 0;
    for (int i = 0; i < g->nw; i++) {
        map[i] = -1;
        if (i == o)
            continue;
        map[i] = n;
        back[n] = i;
        h.aw[n] = g->aw[i];
        h.kw[n] = g->kw[i];
        n++;
    }
    h.nw = n;
    int prev[PMAX], pins[PMAX], hints[PMAX], kprev[KMAX + 1], res[PMAX], kres[KMAX + 1];
    for (int p = 0; p < g->P; p++) {
        prev[p] = next[p] >= 0 ? map[next[p]] : -1;
        pins[p] = g->pins[p] >= 0 ? map[g->pins[p]] : -1;
        hints[p] = hint[p] >= 0 ? map[hint[p]] : -1;
    }
    memcpy(h.pins, pins, sizeof(pins));
    for (int k = 0; k < g->nkeys; k++)
        kprev[k] = knext[k] >= 0 ? map[knext[k]] : -1;
    char err[256];
    baton_assign_input_t in = group_input(&h, prev, hints);
    in.rotate = o < h.nw ? o : 0; /* o's place: the worker after it, as the plan passes */
    assert_true(baton_assign_compute(&in, res, NULL, err, sizeof(err)) >= 0);
    assert_true(coord_keys_assign(h.strategy, key_names, (size_t)h.nkeys, h.kw, (size_t)h.nw, kprev,
                                  kres, err, sizeof(err)) >= 0);
    for (int p = 0; p < g->P; p++)
        out[p] = res[p] >= 0 ? back[res[p]] : -1;
    for (int k = 0; k < g->nkeys; k++)
        kout[k] = kres[k] >= 0 ? back[kres[k]] : -1;
}

static void check_strategy(baton_strategy_t strategy, unsigned seed) {
    rnd_state = seed;
    char err[256];
    for (int round = 0; round < 300; round++) {
        group_t g;
        group_random(&g, strategy);
        int next[PMAX], knext[KMAX + 1], kprev[KMAX + 1], sb[PMAX], ksb[KMAX + 1];
        /* The standbys published before (g.hint, drawn) steer this
         * rebalance and the standbys it names; those steer the next. */
        baton_assign_input_t in = group_input(&g, g.prev, g.hint);
        assert_true(baton_assign_compute(&in, next, NULL, err, sizeof(err)) >= 0);
        for (int k = 0; k < g.nkeys; k++)
            kprev[k] = -1;
        assert_true(coord_keys_assign(strategy, key_names, (size_t)g.nkeys, g.kw, (size_t)g.nw,
                                      kprev, knext, err, sizeof(err)) >= 0);
        standby_rows(&in, next, (size_t)g.nkeys, g.kw, knext, sb, ksb, 0);
        for (int o = 0; o < g.nw; o++) {
            /* Leave mark: o drained, still listed. */
            group_t d = g;
            d.aw[o].flags |= BATON_ASSIGN_DRAINED;
            d.kw[o].flags |= BATON_ASSIGN_DRAINED;
            int alt[PMAX], kalt[KMAX + 1], cut[PMAX], kcut[KMAX + 1];
            baton_assign_input_t din = group_input(&d, next, sb);
            din.rotate = o; /* a lone departure: the plan passes its place */
            assert_true(baton_assign_compute(&din, alt, NULL, err, sizeof(err)) >= 0);
            assert_true(coord_keys_assign(strategy, key_names, (size_t)d.nkeys, d.kw, (size_t)d.nw,
                                          knext, kalt, err, sizeof(err)) >= 0);
            /* Crash: o gone. */
            rebalance_without(&g, next, knext, sb, o, cut, kcut);
            for (int p = 0; p < g.P; p++) {
                if (next[p] != o)
                    continue;
                int want = alt[p] >= 0 && alt[p] != o ? alt[p] : -1;
                assert_int_equal(sb[p], want);
                assert_int_not_equal(sb[p], o);
                assert_int_equal(cut[p], want);
            }
            for (int k = 0; k < g.nkeys; k++) {
                if (knext[k] != o)
                    continue;
                int want = kalt[k] >= 0 && kalt[k] != o ? kalt[k] : -1;
                assert_int_equal(ksb[k], want);
                assert_int_equal(kcut[k], want);
            }
        }
        for (int p = 0; p < g.P; p++)
            if (next[p] < 0)
                assert_int_equal(sb[p], -1);
    }
}

static void test_sticky(void **state) {
    (void)state;
    check_strategy(BATON_STRATEGY_STICKY, 1);
}
static void test_range(void **state) {
    (void)state;
    check_strategy(BATON_STRATEGY_RANGE, 2);
}
static void test_roundrobin(void **state) {
    (void)state;
    check_strategy(BATON_STRATEGY_ROUNDROBIN, 3);
}
static void test_rendezvous(void **state) {
    (void)state;
    check_strategy(BATON_STRATEGY_RENDEZVOUS, 4);
}

/* The direct rule (sticky, range) against the simulation it replaces, the
 * assignment once per owner: bigger seeded random groups than above, with
 * absent workers (their partitions reserved), many pins, racks, uneven
 * capacities, and a previous assignment far from balance; then the
 * rebalance after a random change, as a coordinator sees it. */
static void check_direct(baton_strategy_t strategy, unsigned seed, int rounds) {
    enum { DW = 40, DP = 400 };
    static const char *const dids[DW] = {
        "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "b0", "b1", "b2", "b3",
        "b4", "b5", "b6", "b7", "b8", "b9", "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7",
        "c8", "c9", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9"};
    rnd_state = seed;
    char err[256];
    for (int round = 0; round < rounds; round++) {
        baton_assign_worker_t aw[DW];
        int nw = 1 + (int)rnd(DW), P = (int)rnd(DP + 1), ncap = 1 + (int)rnd(4);
        int nracks = (int)rnd(4), pin_rate = (int)rnd(4);
        int prev[DP + 1], pins[DP + 1], lrack[DP + 1], next[DP + 1], next2[DP + 1];
        int sb[DP + 1], want[DP + 1], hint[DP + 1];
        for (int i = 0; i < nw; i++) {
            aw[i] =
                (baton_assign_worker_t){.id = dids[i],
                                        .capacity = 1 + (int)rnd((unsigned)ncap),
                                        .rack = nracks ? (int)rnd((unsigned)nracks + 1) - 1 : -1};
            unsigned f = rnd(10);
            aw[i].flags = f == 0 ? BATON_ASSIGN_DRAINED : f == 1 ? BATON_ASSIGN_ABSENT : 0;
        }
        for (int p = 0; p < P; p++) {
            pins[p] = pin_rate && rnd(12) < (unsigned)pin_rate ? (int)rnd((unsigned)nw) : -1;
            lrack[p] = nracks ? (int)rnd((unsigned)nracks + 1) - 1 : -1;
            prev[p] = rnd(4) == 0 ? -1 : (int)rnd((unsigned)(1 + rnd((unsigned)nw)));
            hint[p] = rnd(3) == 0 ? -1 : (int)rnd((unsigned)nw);
        }
        baton_assign_input_t in = {.strategy = strategy,
                                   .npartitions = P,
                                   .prev = prev,
                                   .workers = aw,
                                   .nworkers = nw,
                                   .pins = pins,
                                   .leader_rack = nracks ? lrack : NULL,
                                   .hint = rnd(3) ? hint : NULL};
        assert_true(baton_assign_compute(&in, next, NULL, err, sizeof(err)) >= 0);
        /* A change: a capacity, a drain, an absence ended, then the next
         * rebalance from this one. */
        int k = (int)rnd((unsigned)nw);
        switch (rnd(3)) {
        case 0: aw[k].capacity = 1 + (int)rnd(5); break;
        case 1: aw[k].flags ^= BATON_ASSIGN_DRAINED; break;
        default: aw[k].flags &= ~BATON_ASSIGN_ABSENT;
        }
        in.prev = next;
        assert_true(baton_assign_compute(&in, next2, NULL, err, sizeof(err)) >= 0);
        assert_int_equal(coord_standby_compute(&in, NULL, 0, NULL, next2, sb, err, sizeof(err)), 0);
        assert_int_equal(coord_standby_simulate(&in, NULL, 0, NULL, next2, want, err, sizeof(err)),
                         0);
        for (int p = 0; p < P; p++)
            if (sb[p] != want[p])
                fail_msg("%s seed %u round %d: partition %d (owner %d): standby %d, simulated %d",
                         baton_strategy_name(strategy), seed, round, p, next2[p], sb[p], want[p]);
    }
}

static void test_direct_rule(void **state) {
    (void)state;
    check_direct(BATON_STRATEGY_STICKY, 11, 1500);
    check_direct(BATON_STRATEGY_RANGE, 12, 1500);
}

/* Standbys stay where they were named. 20 equal workers own 400
 * partitions, each with a standby; one worker leaves (drained). Of the
 * partitions that keep their owner and whose standby was not the leaver,
 * the standbys named after the rebalance are the ones named before, but for
 * a few: with the published standbys as the assignor's hint. Without it the
 * pool goes out by index again, and with one worker fewer nearly every
 * standby moved (a scale benchmark's failover: 9,504 of 10,000 standby
 * claims made again with standby.claim=ahead). */
static int standby_churn(int use_hint) {
    enum { SW = 20, SP = 400, LEAVER = 7 };
    baton_assign_worker_t aw[SW];
    for (int i = 0; i < SW; i++)
        aw[i] = (baton_assign_worker_t){.id = NULL, .capacity = 1, .rack = -1};
    int next[SP], next2[SP], sb1[SP], sb2[SP];
    char err[256];
    baton_assign_input_t in = {
        .strategy = BATON_STRATEGY_STICKY, .npartitions = SP, .workers = aw, .nworkers = SW};
    assert_true(baton_assign_compute(&in, next, NULL, err, sizeof(err)) >= 0);
    assert_int_equal(coord_standby_compute(&in, NULL, 0, NULL, next, sb1, err, sizeof(err)), 0);
    aw[LEAVER].flags = BATON_ASSIGN_DRAINED;
    in.prev = next;
    in.hint = use_hint ? sb1 : NULL;
    in.rotate = LEAVER; /* the plan passes a lone departure's place */
    assert_true(baton_assign_compute(&in, next2, NULL, err, sizeof(err)) >= 0);
    int changed = 0, kept = 0;
    for (int p = 0; p < SP; p++) {
        assert_int_not_equal(next2[p], LEAVER);
        if (next[p] == LEAVER) /* the leaver's go to their standbys */
            assert_int_equal(next2[p], sb1[p]);
    }
    assert_int_equal(coord_standby_compute(&in, NULL, 0, NULL, next2, sb2, err, sizeof(err)), 0);
    for (int p = 0; p < SP; p++) {
        if (next2[p] != next[p] || sb1[p] == LEAVER)
            continue;
        kept++;
        changed += sb2[p] != sb1[p];
    }
    assert_true(kept > SP / 2);
    return changed * 100 / kept;
}

/* Only the partitions whose owner is gone or drained follow a hint: what a
 * worker over its new target lets go does not, in the assignor and in the
 * direct rule alike. A departure that makes a worker give one up is rare
 * in random groups; this one (found by a search) does: draining worker 0
 * leaves worker 3 over its target, and partition 7 moves from 3 to 4. */
static void test_hint_only_for_departed(void **state) {
    (void)state;
    enum { HW = 6, HP = 8 };
    static const int caps[HW] = {2, 3, 3, 2, 3, 1};
    int prev[HP] = {5, 4, 0, 2, 1, 3, 1, 3}, next[HP], plain[HP], hinted[HP], hint[HP];
    int sb[HP], want[HP];
    baton_assign_worker_t aw[HW];
    for (int i = 0; i < HW; i++)
        aw[i] = (baton_assign_worker_t){.capacity = caps[i], .rack = -1};
    char err[256];
    baton_assign_input_t in = {.strategy = BATON_STRATEGY_STICKY,
                               .npartitions = HP,
                               .prev = prev,
                               .workers = aw,
                               .nworkers = HW};
    assert_true(baton_assign_compute(&in, next, NULL, err, sizeof(err)) >= 0);
    /* The released partition is hinted to the worker with room that the
     * drained owner's partition 2 takes by index: followed, the hint would
     * swap the two. */
    for (int p = 0; p < HP; p++)
        hint[p] = -1;
    hint[7] = 2;
    aw[0].flags = BATON_ASSIGN_DRAINED;
    in.prev = next;
    assert_true(baton_assign_compute(&in, plain, NULL, err, sizeof(err)) >= 0);
    in.hint = hint;
    assert_true(baton_assign_compute(&in, hinted, NULL, err, sizeof(err)) >= 0);
    assert_int_equal(next[2], 0);
    assert_int_equal(plain[2], 2);
    assert_int_equal(next[7], 3);
    assert_int_equal(plain[7], 4); /* released: worker 3 is over its target */
    for (int p = 0; p < HP; p++)
        assert_int_equal(hinted[p], plain[p]); /* 7's owner stays: no hint */
    /* And the standbys, with these hints, as the simulation names them. */
    aw[0].flags = 0;
    assert_int_equal(coord_standby_compute(&in, NULL, 0, NULL, next, sb, err, sizeof(err)), 0);
    assert_int_equal(coord_standby_simulate(&in, NULL, 0, NULL, next, want, err, sizeof(err)), 0);
    for (int p = 0; p < HP; p++)
        assert_int_equal(sb[p], want[p]);
}

static void test_standby_stability(void **state) {
    (void)state;
    int with = standby_churn(1), without = standby_churn(0);
    print_message("standbys moved by one leave of 20: %d%% with the hint, %d%% without\n", with,
                  without);
    assert_true(with <= 10);
    assert_true(without >= 40);
}

/* Keys-only members (baton-run: drained for partitions, not for keys) get
 * standbys for their keys: the keys rebalance with the owner drained. */
static void test_keys_only_members(void **state) {
    (void)state;
    baton_assign_worker_t aw[3];
    coord_key_worker_t kw[3];
    for (int i = 0; i < 3; i++) {
        aw[i] = (baton_assign_worker_t){
            .id = ids[i], .capacity = 1, .rack = -1, .flags = BATON_ASSIGN_DRAINED};
        kw[i] = (coord_key_worker_t){.id = ids[i], .capacity = 1};
    }
    int next[1] = {-1}, kprev[KMAX], knext[KMAX], sb[1], ksb[KMAX], kalt[KMAX];
    for (int k = 0; k < KMAX; k++)
        kprev[k] = -1;
    char err[256];
    assert_true(coord_keys_assign(BATON_STRATEGY_STICKY, key_names, KMAX, kw, 3, kprev, knext, err,
                                  sizeof(err)) >= 0);
    baton_assign_input_t in = {.strategy = BATON_STRATEGY_STICKY,
                               .npartitions = 1,
                               .prev = next,
                               .workers = aw,
                               .nworkers = 3};
    standby_rows(&in, next, KMAX, kw, knext, sb, ksb, 0);
    assert_int_equal(sb[0], -1);
    for (int o = 0; o < 3; o++) {
        coord_key_worker_t d[3];
        memcpy(d, kw, sizeof(d));
        d[o].flags = BATON_ASSIGN_DRAINED;
        assert_true(coord_keys_assign(BATON_STRATEGY_STICKY, key_names, KMAX, d, 3, knext, kalt,
                                      err, sizeof(err)) >= 0);
        for (int k = 0; k < KMAX; k++)
            if (knext[k] == o) {
                assert_true(ksb[k] >= 0 && ksb[k] != o);
                assert_int_equal(ksb[k], kalt[k]);
            }
    }
}

static void test_lists_and_budget(void **state) {
    (void)state;
    /* 6 partitions over w0..w2 (start/order: the coordinator's per-worker
     * layout), keys k0 (w0), k1 (w2). */
    int start[4] = {0, 2, 4, 6}, order[6] = {0, 1, 2, 3, 4, 5};
    /* rows: partitions 0..5, then keys k0, k1 */
    int next[8] = {0, 0, 1, 1, 2, 2, 0, 2}, sb[8] = {1, 2, 2, 0, 0, -1, 2, 1};
    baton_standby_t **lists;
    size_t *n;
    coord_standby_lists(start, order, 6, key_names, 2, next, sb, (const char *const *)ids, 3,
                        &lists, &n);
    /* w0 stands by for w1 (3) and w2 (4); w1 for w0 (0) and w2's key k1;
     * w2 for w0 (1, k0) and w1 (2). */
    assert_int_equal(n[0], 2);
    assert_string_equal(lists[0][0].owner, "w1");
    assert_int_equal(lists[0][0].npartitions, 1);
    assert_int_equal(lists[0][0].partitions[0], 3);
    assert_string_equal(lists[0][1].owner, "w2");
    assert_int_equal(lists[0][1].partitions[0], 4);
    assert_int_equal(n[1], 2);
    assert_string_equal(lists[1][0].owner, "w0");
    assert_int_equal(lists[1][1].npartitions, 0);
    assert_int_equal(lists[1][1].nkeys, 1);
    assert_string_equal(lists[1][1].keys[0], "k1");
    assert_int_equal(n[2], 2);
    assert_string_equal(lists[2][0].owner, "w0");
    assert_int_equal(lists[2][0].npartitions, 1);
    assert_int_equal(lists[2][0].nkeys, 1);
    assert_string_equal(lists[2][0].keys[0], "k0");
    assert_true(baton_standby_equal(lists[0], n[0], lists[0], n[0]));
    assert_false(baton_standby_equal(lists[0], n[0], lists[1], n[1]));
    for (int i = 0; i < 3; i++)
        baton_standby_free(lists[i], n[i]);
    free(lists);
    free(n);

    /* Over the budget: a simulated strategy is skipped, nothing named; the
     * direct rule (sticky, range) has no budget. */
    enum { BIG_W = 3, BIG_P = COORD_STANDBY_BUDGET / BIG_W + 1 };
    baton_assign_worker_t aw[BIG_W] = {{.capacity = 1}, {.capacity = 1}, {.capacity = 1}};
    int *bn = calloc(BIG_P, sizeof(int)), *bsb = calloc(BIG_P, sizeof(int));
    for (int p = 0; p < BIG_P; p++)
        bn[p] = p % BIG_W;
    baton_assign_input_t in = {.strategy = BATON_STRATEGY_ROUNDROBIN,
                               .npartitions = BIG_P,
                               .workers = aw,
                               .nworkers = BIG_W};
    char err[256];
    assert_int_equal(coord_standby_compute(&in, NULL, 0, NULL, bn, bsb, err, sizeof(err)), 1);
    assert_int_equal(bsb[0], -1);
    assert_int_equal(bsb[BIG_P - 1], -1);
    in.strategy = BATON_STRATEGY_STICKY;
    assert_int_equal(coord_standby_compute(&in, NULL, 0, NULL, bn, bsb, err, sizeof(err)), 0);
    for (int p = 0; p < BIG_P; p++)
        if (bsb[p] < 0 || bsb[p] == bn[p])
            fail_msg("partition %d (owner %d): standby %d", p, bn[p], bsb[p]);
    free(bn);
    free(bsb);
}

static void test_codec(void **state) {
    (void)state;
    int32_t mine[] = {4, 5}, p1[] = {0, 2}, p2[] = {7};
    char *k1[] = {"k0"};
    baton_standby_t sbs[2] = {
        {.owner = "w1", .partitions = p1, .npartitions = 2},
        {.owner = "w3", .partitions = p2, .npartitions = 1, .keys = k1, .nkeys = 1}};
    baton_worker_assignment_t a = {
        .generation = 9, .partitions = mine, .npartitions = 2, .standby = sbs, .nstandby = 2};
    char *s = baton_worker_assignment_encode(&a);
    assert_string_equal(
        s, "{\"generation\":9,\"partitions\":[4,5],\"standby\":{\"w1\":{\"partitions\":"
           "[0,2]},\"w3\":{\"keys\":[\"k0\"],\"partitions\":[7]}}}");
    baton_worker_assignment_t b;
    char err[256];
    assert_int_equal(baton_worker_assignment_decode(s, strlen(s), &b, err, sizeof(err)), BATON_OK);
    assert_true(baton_standby_equal(a.standby, a.nstandby, b.standby, b.nstandby));
    baton_worker_assignment_release(&b);
    free(s);
    /* No standby: the field is left out, and an old node without it reads. */
    baton_worker_assignment_t none = {.generation = 1};
    s = baton_worker_assignment_encode(&none);
    assert_null(strstr(s, "standby"));
    free(s);
    struct {
        const char *json, *says;
    } bad[] = {
        {"{\"generation\":1,\"partitions\":[],\"standby\":[]}",
         "field 'standby' must be an object"},
        {"{\"generation\":1,\"partitions\":[],\"standby\":{\"a/b\":{}}}", "not a worker id"},
        {"{\"generation\":1,\"partitions\":[],\"standby\":{\"w1\":3}}",
         "standby 'w1' must be an object"},
        {"{\"generation\":1,\"partitions\":[],\"standby\":{\"w1\":{\"partitions\":[1,1]}}}",
         "partition 1 is listed twice"},
        {"{\"generation\":1,\"partitions\":[],\"standby\":{\"w1\":{\"partitions\":[-1]}}}",
         "partitions[0] is not a partition number"},
        {"{\"generation\":1,\"partitions\":[],\"standby\":{\"w1\":{\"keys\":[\"..\"]}}}",
         "keys[0] is not a key name"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(
            baton_worker_assignment_decode(bad[i].json, strlen(bad[i].json), &b, err, sizeof(err)),
            BATON_CORRUPT);
        if (!strstr(err, bad[i].says))
            fail_msg("'%s': got '%s', want '%s'", bad[i].json, err, bad[i].says);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sticky),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_roundrobin),
        cmocka_unit_test(test_rendezvous),
        cmocka_unit_test(test_direct_rule),
        cmocka_unit_test(test_keys_only_members),
        cmocka_unit_test(test_lists_and_budget),
        cmocka_unit_test(test_codec),
        cmocka_unit_test(test_standby_stability),
        cmocka_unit_test(test_hint_only_for_departed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
