/* assignment.c: the pure partition assignor behind assignment.h. It turns a
 * previous assignment, the workers (capacity, rack, drained, absent), pins and
 * leader racks into the next assignment with the sticky, range, roundrobin or
 * rendezvous strategy, without I/O or clocks.
 *
 * Every strategy first places what is not its to decide: a partition pinned
 * to an eligible worker goes there; a partition of an absent worker (within
 * its leave grace) stays reserved for it. The rest, the "free" partitions, go
 * to eligible workers. Sticky, range and roundrobin fill per-worker targets
 * computed from capacity shares (targets_compute); rendezvous hashes. With
 * rack.policy=realign, sticky's result is then realigned (realign). */
#include "assignment.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baton_err.h"
#include "baton_util.h"

static const char *const strategy_names[] = {
    [BATON_STRATEGY_STICKY] = "sticky",
    [BATON_STRATEGY_RANGE] = "range",
    [BATON_STRATEGY_ROUNDROBIN] = "roundrobin",
    [BATON_STRATEGY_RENDEZVOUS] = "rendezvous",
};

_Static_assert(BATON_ARRAY_SIZE(strategy_names) == BATON_STRATEGY_COUNT, "strategy table");

static const char *const rack_policy_names[] = {
    [BATON_RACK_TIEBREAK] = "tiebreak",
    [BATON_RACK_REALIGN] = "realign",
};

_Static_assert(BATON_ARRAY_SIZE(rack_policy_names) == BATON_RACK_POLICY_COUNT, "policy table");

/* Exact, case-sensitive match against a name table: a strategy's name
 * round-trips through the config znode, and one spelling per value keeps
 * those documents comparable. Returns the index or -1. */
static int name_lookup(const char *const *names, size_t n, const char *s) {
    for (size_t i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return (int)i;
    return -1;
}

int baton_strategy_parse(const char *s, baton_strategy_t *out) {
    int i = name_lookup(strategy_names, BATON_ARRAY_SIZE(strategy_names), s);
    if (i < 0 || !out)
        return BATON_INVALID;
    *out = (baton_strategy_t)i;
    return BATON_OK;
}

int baton_rack_policy_parse(const char *s, baton_rack_policy_t *out) {
    int i = name_lookup(rack_policy_names, BATON_ARRAY_SIZE(rack_policy_names), s);
    if (i < 0 || !out)
        return BATON_INVALID;
    *out = (baton_rack_policy_t)i;
    return BATON_OK;
}

const char *baton_rack_policy_name(baton_rack_policy_t p) {
    if ((unsigned)p >= BATON_ARRAY_SIZE(rack_policy_names))
        return "unknown";
    return rack_policy_names[p];
}

/* Returns "unknown" for a value outside the enum rather than NULL, so a
 * caller can log it without a check. */
const char *baton_strategy_name(baton_strategy_t s) {
    if ((unsigned)s >= BATON_ARRAY_SIZE(strategy_names))
        return "unknown";
    return strategy_names[s];
}

/* Partition classes. */
enum { CLS_FREE = 0, CLS_PINNED = 1, CLS_RESERVED = 2 };

/* A worker's share is lo + frac / den partitions (den is common to all
 * workers that are not fixed); a fixed worker was pinned more than its share
 * and gets exactly its pins. */
typedef struct {
    int fixed;
    long long lo;
    long long frac;
} share_t;

/* The working state of one computation. All arrays are owned here. */
typedef struct {
    const baton_assign_input_t *in;
    int np, nw;
    unsigned char *elig; /* per worker: 1 if it may be given partitions */
    unsigned char *cls;  /* per partition: CLS_* */
    int *pin_cnt;        /* per worker: partitions pinned to it */
    int *c;              /* per worker: free partitions it owned before */
    int p_e;             /* partitions not reserved: pinned + free */
    int nfree;
    int forced; /* pinned partitions that change owner */
    share_t *sh;
    long long den;
} plan_t;

static int worker_eligible(const baton_assign_worker_t *w) {
    return !(w->flags & (BATON_ASSIGN_DRAINED | BATON_ASSIGN_ABSENT));
}

static int input_check(const baton_assign_input_t *in, const int *next, char *errstr, size_t n) {
    if (!in)
        return baton_seterr(errstr, n, BATON_INVALID, "no input");
    if ((unsigned)in->strategy >= BATON_STRATEGY_COUNT)
        return baton_seterr(errstr, n, BATON_INVALID, "strategy %d is not a known strategy",
                            (int)in->strategy);
    if ((unsigned)in->rack_policy >= BATON_RACK_POLICY_COUNT)
        return baton_seterr(errstr, n, BATON_INVALID, "rack_policy %d is not a known policy",
                            (int)in->rack_policy);
    if (in->npartitions < 0 || in->npartitions > 100000000)
        return baton_seterr(errstr, n, BATON_INVALID, "npartitions %d is out of range",
                            in->npartitions);
    if (in->nworkers < 0 || in->nworkers > 1000000)
        return baton_seterr(errstr, n, BATON_INVALID, "nworkers %d is out of range", in->nworkers);
    if (in->npartitions > 0 && !next)
        return baton_seterr(errstr, n, BATON_INVALID, "no output array for %d partitions",
                            in->npartitions);
    if (in->nworkers > 0 && !in->workers)
        return baton_seterr(errstr, n, BATON_INVALID, "no worker array for %d workers",
                            in->nworkers);
    /* Racks are indices a caller gives to distinct rack names, so there are
     * never more than workers plus partitions; the bound keeps the per-rack
     * tables small. */
    int nracks = in->nworkers + in->npartitions;
    for (int w = 0; w < in->nworkers; w++) {
        const baton_assign_worker_t *wk = &in->workers[w];
        if (wk->capacity < 1 || wk->capacity > BATON_ASSIGN_CAPACITY_MAX)
            return baton_seterr(errstr, n, BATON_INVALID, "workers[%d].capacity %d is not in 1..%d",
                                w, wk->capacity, BATON_ASSIGN_CAPACITY_MAX);
        if (wk->rack < -1 || wk->rack >= nracks)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "workers[%d].rack %d is not a rack index (0..%d) or -1", w,
                                wk->rack, nracks - 1);
        if (wk->flags & ~(BATON_ASSIGN_DRAINED | BATON_ASSIGN_ABSENT))
            return baton_seterr(errstr, n, BATON_INVALID, "workers[%d].flags 0x%x is unknown", w,
                                (unsigned)wk->flags);
    }
    if (in->rotate < 0 || (in->rotate > 0 && in->rotate >= in->nworkers))
        return baton_seterr(errstr, n, BATON_INVALID, "rotate %d is not a worker index or 0",
                            in->rotate);
    const struct {
        const char *name;
        const int *a;
        int limit;
    } arrays[] = {{"prev", in->prev, in->nworkers},
                  {"pins", in->pins, in->nworkers},
                  {"leader_rack", in->leader_rack, nracks},
                  {"hint", in->hint, in->nworkers}};
    for (size_t k = 0; k < BATON_ARRAY_SIZE(arrays); k++) {
        if (!arrays[k].a)
            continue;
        for (int p = 0; p < in->npartitions; p++)
            if (arrays[k].a[p] < -1 || arrays[k].a[p] >= arrays[k].limit)
                return baton_seterr(errstr, n, BATON_INVALID,
                                    "%s[%d] = %d is not an index (0..%d) or -1", arrays[k].name, p,
                                    arrays[k].a[p], arrays[k].limit - 1);
    }
    return BATON_OK;
}

/* Classifies partitions and counts pins and previous holdings. */
static void plan_init(plan_t *pl, const baton_assign_input_t *in) {
    memset(pl, 0, sizeof(*pl));
    pl->in = in;
    pl->np = in->npartitions;
    pl->nw = in->nworkers;
    size_t nw1 = (size_t)pl->nw + 1, np1 = (size_t)pl->np + 1;
    pl->elig = xcalloc(nw1, 1);
    pl->cls = xcalloc(np1, 1);
    pl->pin_cnt = xcalloc(nw1, sizeof(int));
    pl->c = xcalloc(nw1, sizeof(int));
    pl->sh = xcalloc(nw1, sizeof(share_t));
    for (int w = 0; w < pl->nw; w++)
        pl->elig[w] = (unsigned char)worker_eligible(&in->workers[w]);
    for (int p = 0; p < pl->np; p++) {
        int prev = in->prev ? in->prev[p] : -1;
        int pin = in->pins ? in->pins[p] : -1;
        if (pin >= 0 && pl->elig[pin]) {
            pl->cls[p] = CLS_PINNED;
            pl->pin_cnt[pin]++;
            pl->p_e++;
            if (prev != pin)
                pl->forced++;
        } else if (prev >= 0 && (in->workers[prev].flags & BATON_ASSIGN_ABSENT) &&
                   !(in->workers[prev].flags & BATON_ASSIGN_DRAINED)) {
            pl->cls[p] = CLS_RESERVED;
        } else {
            pl->cls[p] = CLS_FREE;
            pl->p_e++;
            pl->nfree++;
            if (prev >= 0 && pl->elig[prev])
                pl->c[prev]++;
        }
    }
}

static void plan_release(plan_t *pl) {
    free(pl->elig);
    free(pl->cls);
    free(pl->pin_cnt);
    free(pl->c);
    free(pl->sh);
}

/* Water filling: a worker pinned more than its share is fixed at its pins
 * and the others share what is left, until no remaining worker is
 * over-pinned. Each round fixes at least one worker, so it ends within nw
 * rounds. At least one worker stays unfixed when any is eligible: the
 * unfixed pins never exceed what is left, so not all of them can exceed
 * their shares of it. */
static void shares_compute(plan_t *pl) {
    const baton_assign_worker_t *wk = pl->in->workers;
    for (;;) {
        long long rem = pl->p_e, cap = 0;
        for (int w = 0; w < pl->nw; w++) {
            if (!pl->elig[w])
                continue;
            if (pl->sh[w].fixed)
                rem -= pl->pin_cnt[w];
            else
                cap += wk[w].capacity;
        }
        pl->den = cap > 0 ? cap : 1;
        if (cap == 0)
            return;
        int changed = 0;
        for (int w = 0; w < pl->nw; w++) {
            if (!pl->elig[w] || pl->sh[w].fixed)
                continue;
            if ((long long)pl->pin_cnt[w] * cap > rem * wk[w].capacity) {
                pl->sh[w].fixed = 1;
                changed = 1;
            }
        }
        if (changed)
            continue;
        for (int w = 0; w < pl->nw; w++) {
            if (!pl->elig[w])
                continue;
            pl->sh[w].lo = rem * wk[w].capacity / cap;
            pl->sh[w].frac = rem * wk[w].capacity % cap;
        }
        return;
    }
}

typedef struct {
    int gain; /* 1 if one more slot lets the worker keep one more partition */
    long long frac;
    int order; /* the index, or without gain its place counted from rotate */
    int index;
} extra_t;

/* Gain first, then the share closest to its ceiling, then lower order: a
 * total order, so qsort's instability cannot leak into the result. */
static int extra_cmp(const void *a, const void *b) {
    const extra_t *x = a, *y = b;
    if (x->gain != y->gain)
        return x->gain > y->gain ? -1 : 1;
    if (x->frac != y->frac)
        return x->frac > y->frac ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* Free slots per worker (target minus pins) into f. Each unfixed worker gets
 * floor(share), and the R = P_E - sum floor partitions left over go one each
 * to R workers whose share is not whole. With prefer_gain (sticky), workers
 * that owned more than floor(share) - pins free partitions come first: a
 * +1 keeps one more partition in place exactly for them, so this choice
 * maximises what stays, i.e. minimises moves over every balanced target. */
static void targets_compute(const plan_t *pl, int prefer_gain, int *f) {
    /* Sticky's extra slots without gain go round from in->rotate (the
     * departed worker's place), so one departure's partitions land on the
     * workers after it, not always on the lowest-indexed (standbys spread
     * over the group, and stay put when another worker goes). */
    int rot = prefer_gain && pl->nw > 0 ? pl->in->rotate % pl->nw : 0;
    extra_t *cand = xmalloc(((size_t)pl->nw + 1) * sizeof(*cand));
    int ncand = 0;
    long long base = 0;
    for (int w = 0; w < pl->nw; w++) {
        f[w] = 0;
        if (!pl->elig[w])
            continue;
        if (pl->sh[w].fixed) {
            base += pl->pin_cnt[w];
            continue;
        }
        f[w] = (int)(pl->sh[w].lo - pl->pin_cnt[w]);
        base += pl->sh[w].lo;
        if (pl->sh[w].frac > 0)
            cand[ncand++] = (extra_t){
                .gain = prefer_gain && pl->c[w] > f[w],
                .frac = pl->sh[w].frac,
                .index = w,
            };
        if (pl->sh[w].frac > 0)
            cand[ncand - 1].order = cand[ncand - 1].gain ? w : (w - rot + pl->nw) % pl->nw;
    }
    long long extra = pl->p_e - base;
    if (extra > 0) {
        qsort(cand, (size_t)ncand, sizeof(*cand), extra_cmp);
        for (long long k = 0; k < extra && k < ncand; k++)
            f[cand[k].index]++;
    }
    free(cand);
}

/* The fewest changes any balanced assignment needs: forced pins, plus every
 * free partition except those a worker can keep (min(owned, free slots)). */
static int minimal_moves(const plan_t *pl, const int *f_gain) {
    int any = 0, kept = 0;
    for (int w = 0; w < pl->nw; w++) {
        if (!pl->elig[w])
            continue;
        any = 1;
        kept += pl->c[w] < f_gain[w] ? pl->c[w] : f_gain[w];
    }
    if (any)
        return pl->forced + pl->nfree - kept;
    /* Nobody to give them to: only the free partitions someone held change
     * (to no owner). */
    int lost = 0;
    for (int p = 0; p < pl->np; p++)
        if (pl->cls[p] == CLS_FREE && pl->in->prev && pl->in->prev[p] >= 0)
            lost++;
    return lost;
}

static int rack_match(const baton_assign_input_t *in, int p, int w) {
    return in->leader_rack && in->leader_rack[p] >= 0 && in->leader_rack[p] == in->workers[w].rack;
}

/* Hands the unset free partitions (next[p] == -2, ascending) to workers with
 * free slots left (deficit d). First, per rack, partitions go to workers in
 * their leader's rack: racks are disjoint, so filling each rack greedily
 * places the most partitions locally. Then a partition whose previous owner
 * is gone or drained goes to its hint (its named standby) if that worker is
 * eligible and has room: a departure moves its partitions where the
 * standbys were told, and the standbys named after it stay where they were
 * (coord_standby.c follows the same order; not with rack realignment). The
 * rest go to workers in index order from in->rotate, wrapping round. */
static void pool_distribute(const plan_t *pl, int *d, int *next) {
    const baton_assign_input_t *in = pl->in;
    int nw = pl->nw;
    int nr = 0; /* racks 0..nr-1 have workers */
    for (int w = 0; w < nw; w++)
        if (in->workers[w].rack >= nr)
            nr = in->workers[w].rack + 1;
    if (in->leader_rack && nr > 0) {
        int *rstart = xcalloc((size_t)nr + 1, sizeof(int));
        int *rlist = xmalloc(((size_t)nw + 1) * sizeof(int));
        for (int w = 0; w < nw; w++)
            if (pl->elig[w] && d[w] > 0 && in->workers[w].rack >= 0)
                rstart[in->workers[w].rack + 1]++;
        for (int r = 0; r < nr; r++)
            rstart[r + 1] += rstart[r];
        int *rcur = xmalloc(((size_t)nr + 1) * sizeof(int));
        memcpy(rcur, rstart, ((size_t)nr + 1) * sizeof(int));
        for (int w = 0; w < nw; w++)
            if (pl->elig[w] && d[w] > 0 && in->workers[w].rack >= 0)
                rlist[rcur[in->workers[w].rack]++] = w;
        memcpy(rcur, rstart, ((size_t)nr + 1) * sizeof(int));
        for (int p = 0; p < pl->np; p++) {
            int r = in->leader_rack[p];
            if (next[p] != -2 || r < 0 || r >= nr)
                continue;
            while (rcur[r] < rstart[r + 1] && d[rlist[rcur[r]]] == 0)
                rcur[r]++;
            if (rcur[r] == rstart[r + 1])
                continue;
            int w = rlist[rcur[r]];
            next[p] = w;
            d[w]--;
        }
        free(rcur);
        free(rlist);
        free(rstart);
    }
    /* Not under realignment: its exchanges after this pass would move a
     * hinted partition again, so a standby named from a hint would not be
     * where the next rebalance puts it. */
    int hints = in->hint && !(in->rack_policy == BATON_RACK_REALIGN && in->leader_rack);
    for (int p = 0; hints && p < pl->np; p++) {
        int prev = in->prev ? in->prev[p] : -1, h = in->hint[p];
        if (next[p] != -2 || (prev >= 0 && pl->elig[prev]) || h < 0 || !pl->elig[h] || d[h] == 0)
            continue;
        next[p] = h;
        d[h]--;
    }
    /* From in->rotate round, as the extra slots (targets_compute). */
    int w = nw > 0 ? in->rotate % nw : 0, seen = 0;
    for (int p = 0; p < pl->np; p++) {
        if (next[p] != -2)
            continue;
        /* The free slots sum to the free partitions, so a worker with room
         * remains while one is unset and w never goes round twice. */
        while (seen < nw && d[w] == 0) {
            w = w + 1 < nw ? w + 1 : 0;
            seen++;
        }
        if (seen == nw) {
            next[p] = -1; /* unreachable by construction; stay defined */
            continue;
        }
        next[p] = w;
        d[w]--;
    }
}

/* Sticky: every worker keeps min(owned, free slots) of its free partitions,
 * those in its leader's rack first, then the lowest-numbered; the rest fill
 * the deficits. Keeping that many is exactly what targets_compute maximised. */
static void assign_sticky(const plan_t *pl, const int *f, int *next) {
    const baton_assign_input_t *in = pl->in;
    int nw = pl->nw, np = pl->np;
    int *start = xcalloc((size_t)nw + 2, sizeof(int));
    int *list = xmalloc(((size_t)pl->nfree + 1) * sizeof(int));
    int *d = xmalloc(((size_t)nw + 1) * sizeof(int));
    for (int w = 0; w < nw; w++)
        start[w + 1] = start[w] + pl->c[w];
    int *cur = xmalloc(((size_t)nw + 1) * sizeof(int));
    memcpy(cur, start, ((size_t)nw + 1) * sizeof(int));
    for (int p = 0; p < np; p++) {
        int prev = in->prev ? in->prev[p] : -1;
        if (pl->cls[p] == CLS_FREE && prev >= 0 && pl->elig[prev])
            list[cur[prev]++] = p;
    }
    for (int w = 0; w < nw; w++) {
        int keep = pl->c[w] < f[w] ? pl->c[w] : f[w];
        d[w] = pl->elig[w] ? f[w] - keep : 0;
        if (keep == pl->c[w]) {
            for (int k = start[w]; k < start[w + 1]; k++)
                next[list[k]] = w;
            continue;
        }
        for (int pass = 0; pass < 2 && keep > 0; pass++)
            for (int k = start[w]; k < start[w + 1] && keep > 0; k++) {
                int p = list[k];
                if (next[p] != -2 || (pass == 0 && !rack_match(in, p, w)))
                    continue;
                next[p] = w;
                keep--;
            }
    }
    pool_distribute(pl, d, next);
    free(cur);
    free(d);
    free(list);
    free(start);
}

/* A growable stack of partitions (realign's per-rack lists). */
typedef struct {
    int *a;
    int n, cap;
} pstack_t;

static void pstack_push(pstack_t *s, int p) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->a = xrealloc(s->a, (size_t)s->cap * sizeof(int));
    }
    s->a[s->n++] = p;
}

/* The top of s that is still outside its leader's rack (and, for rack >= 0,
 * owned in that rack), dropping the stale entries above it; -1 when none is
 * left. */
static int pstack_top(pstack_t *s, const baton_assign_input_t *in, const int *next, int rack) {
    while (s->n > 0) {
        int x = s->a[s->n - 1];
        int local = rack_match(in, x, next[x]);
        if (!local && (rack < 0 || in->workers[next[x]].rack == rack))
            return x;
        s->n--;
    }
    return -1;
}

/* Swaps the owners of p and q; returns the change in partitions whose
 * owner differs from the previous one. */
static int swap_owners(const baton_assign_input_t *in, int *next, int p, int q) {
    int a = next[p], b = next[q];
    int prev_p = in->prev ? in->prev[p] : -1, prev_q = in->prev ? in->prev[q] : -1;
    next[p] = b;
    next[q] = a;
    return (b != prev_p) - (a != prev_p) + (a != prev_q) - (b != prev_q);
}

/* Realignment's exchanges: a partition owned in rack s and led in rack r
 * and one owned in r and led in s swap owners, both becoming local (two
 * partitions for at most two moves, the best a swap can do). Partitions
 * are bucketed by (owner's rack, leader's rack), those that move anyway
 * first; skipped when the nr x nr buckets would outnumber the partitions
 * (many racks: the swaps in realign still reach the same placement).
 * Returns the moves added. */
static int realign_exchanges(const plan_t *pl, int nr, int *next) {
    const baton_assign_input_t *in = pl->in;
    size_t nb = (size_t)nr * (size_t)nr;
    if (nb > (size_t)pl->np + 1)
        return 0;
    size_t *start = xcalloc(nb + 1, sizeof(size_t));
    int *key = xmalloc(((size_t)pl->np + 1) * sizeof(int)); /* bucket of p, or -1 */
    for (int p = 0; p < pl->np; p++) {
        int w = next[p], r = in->leader_rack[p];
        int s = w >= 0 ? in->workers[w].rack : -1;
        key[p] = pl->cls[p] == CLS_FREE && s >= 0 && r >= 0 && r < nr && s != r ? s * nr + r : -1;
        if (key[p] >= 0)
            start[key[p] + 1]++;
    }
    for (size_t b = 0; b < nb; b++)
        start[b + 1] += start[b];
    size_t *cur = xmalloc((nb + 1) * sizeof(size_t));
    memcpy(cur, start, (nb + 1) * sizeof(size_t));
    int *list = xmalloc((start[nb] + 1) * sizeof(int));
    for (int moving = 1; moving >= 0; moving--)
        for (int p = 0; p < pl->np; p++)
            if (key[p] >= 0 && (next[p] != (in->prev ? in->prev[p] : -1)) == moving)
                list[cur[key[p]]++] = p;
    int added = 0;
    for (int s = 0; s < nr; s++)
        for (int r = s + 1; r < nr; r++) {
            size_t i = start[(size_t)s * nr + r], ie = start[(size_t)s * nr + r + 1];
            size_t j = start[(size_t)r * nr + s], je = start[(size_t)r * nr + s + 1];
            for (; i < ie && j < je; i++, j++)
                added += swap_owners(in, next, list[i], list[j]);
        }
    free(list);
    free(cur);
    free(key);
    free(start);
    return added;
}

/* Realignment (BATON_RACK_REALIGN, after sticky). While a free partition p
 * is outside its leader's rack r and a worker b of rack r holds a free
 * partition q that is outside its own leader's rack, p and q swap owners:
 * p becomes local, q was not local at b, and every worker keeps its count.
 * So balance holds, and no partition already in its leader's rack moves.
 * Per rack the swaps stop when either list is empty: every r partition is
 * local, or r's workers hold only local partitions; that is the most local
 * placement the counts allow (per rack, min(partitions led there, slots
 * there)). Neither list grows back, so one pass over the racks is enough:
 * a swap never makes a partition non-local, and q takes p's place among the
 * non-local partitions of p's old owner's rack. Partitions that move anyway
 * (next != prev) are taken first, so a swap costs 0, 1 or 2 moves; and
 * exchanges that make both partitions local go first (realign_exchanges).
 * Returns the moves the swaps added. */
static int realign(const plan_t *pl, int *next) {
    const baton_assign_input_t *in = pl->in;
    const baton_assign_worker_t *wk = in->workers;
    int nr = 0;
    for (int w = 0; w < pl->nw; w++)
        if (pl->elig[w] && wk[w].rack >= nr)
            nr = wk[w].rack + 1;
    if (!in->leader_rack || nr == 0)
        return 0;
    int added = realign_exchanges(pl, nr, next);
    pstack_t *want = xcalloc((size_t)nr, sizeof(*want)); /* r's partitions outside r */
    pstack_t *room = xcalloc((size_t)nr, sizeof(*room)); /* non-local partitions in r */
    for (int moving = 0; moving < 2; moving++)           /* those that move anyway on top */
        for (int p = 0; p < pl->np; p++) {
            int w = next[p], prev = in->prev ? in->prev[p] : -1;
            if (pl->cls[p] != CLS_FREE || w < 0 || (w != prev) != moving || rack_match(in, p, w))
                continue;
            int r = in->leader_rack[p];
            if (r >= 0 && r < nr)
                pstack_push(&want[r], p);
            if (wk[w].rack >= 0)
                pstack_push(&room[wk[w].rack], p);
        }
    for (int r = 0; r < nr; r++) {
        int p, q;
        while ((p = pstack_top(&want[r], in, next, -1)) >= 0 &&
               (q = pstack_top(&room[r], in, next, r)) >= 0) {
            want[r].n--;
            room[r].n--;
            int a = next[p];
            added += swap_owners(in, next, p, q);
            if (!rack_match(in, q, a) && wk[a].rack >= 0)
                pstack_push(&room[wk[a].rack], q);
        }
    }
    for (int r = 0; r < nr; r++) {
        free(want[r].a);
        free(room[r].a);
    }
    free(room);
    free(want);
    return added;
}

/* Kafka's RangeAssignor for one topic: contiguous blocks of the free
 * partitions in worker index order, each worker filling its free slots. */
static void assign_range(const plan_t *pl, const int *f, int *next) {
    int w = 0, used = 0;
    for (int p = 0; p < pl->np; p++) {
        if (next[p] != -2)
            continue;
        while (w < pl->nw && used >= f[w]) {
            w++;
            used = 0;
        }
        next[p] = w < pl->nw ? w : -1;
        used++;
    }
}

/* Kafka's RoundRobinAssignor for one topic: free partitions dealt one at a
 * time to the workers in index order, skipping those whose slots are full.
 * The ring links only workers with room, so a full one costs nothing later. */
static void assign_roundrobin(const plan_t *pl, const int *f, int *next) {
    int nw = pl->nw;
    int *ring = xmalloc(((size_t)nw + 1) * sizeof(int));
    int *left = xmalloc(((size_t)nw + 1) * sizeof(int));
    int first = -1, last = -1, n = 0;
    for (int w = 0; w < nw; w++) {
        left[w] = f[w];
        if (f[w] <= 0)
            continue;
        if (first < 0)
            first = w;
        else
            ring[last] = w;
        last = w;
        n++;
    }
    if (last >= 0)
        ring[last] = first;
    int prevw = last, w = first;
    for (int p = 0; p < pl->np; p++) {
        if (next[p] != -2)
            continue;
        if (n == 0) {
            next[p] = -1;
            continue;
        }
        next[p] = w;
        if (--left[w] == 0) {
            n--;
            ring[prevw] = ring[w]; /* unlink w */
        } else {
            prevw = w;
        }
        w = ring[w];
    }
    free(left);
    free(ring);
}

/* splitmix64's finaliser: a cheap, well-mixed 64-bit hash. */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hash_id(const char *id, int index) {
    if (!id)
        return mix64((uint64_t)index);
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (const unsigned char *s = (const unsigned char *)id; *s; s++)
        h = (h ^ *s) * 0x100000001b3ULL;
    return mix64(h);
}

/* Rendezvous (highest random weight): each free partition goes to the
 * eligible worker with the highest hash(worker, p), weighted by capacity as
 * capacity / -ln(u) with u the hash mapped into (0, 1). A worker's arrival or
 * departure moves only the partitions it wins or held; no state is needed.
 * Balance holds only in expectation. */
static void assign_rendezvous(const plan_t *pl, int *next) {
    const baton_assign_worker_t *wk = pl->in->workers;
    int nw = pl->nw, nel = 0, equal = 1;
    int *el = xmalloc(((size_t)nw + 1) * sizeof(int));
    uint64_t *wh = xmalloc(((size_t)nw + 1) * sizeof(uint64_t));
    for (int w = 0; w < nw; w++) {
        if (!pl->elig[w])
            continue;
        if (nel > 0 && wk[w].capacity != wk[el[0]].capacity)
            equal = 0;
        wh[nel] = hash_id(wk[w].id, w);
        el[nel++] = w;
    }
    for (int p = 0; p < pl->np; p++) {
        if (next[p] != -2)
            continue;
        if (nel == 0) {
            next[p] = -1;
            continue;
        }
        uint64_t ph = mix64((uint64_t)p * 0x9e3779b97f4a7c15ULL + 1);
        int best = -1;
        if (equal) {
            uint64_t top = 0;
            for (int k = 0; k < nel; k++) {
                uint64_t h = mix64(wh[k] ^ ph);
                if (best < 0 || h > top) {
                    top = h;
                    best = el[k];
                }
            }
        } else {
            double top = -1.0;
            for (int k = 0; k < nel; k++) {
                uint64_t h = mix64(wh[k] ^ ph);
                double u = ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
                double score = (double)wk[el[k]].capacity / -log(u);
                if (score > top) {
                    top = score;
                    best = el[k];
                }
            }
        }
        next[p] = best;
    }
    free(wh);
    free(el);
}

int baton_assign_compute(const baton_assign_input_t *in, int *next, baton_assign_stats_t *stats,
                         char *errstr, size_t errstr_size) {
    int err = input_check(in, next, errstr, errstr_size);
    if (err != BATON_OK)
        return err;
    plan_t pl;
    plan_init(&pl, in);
    shares_compute(&pl);
    int *f = xmalloc(((size_t)pl.nw + 1) * sizeof(int));
    int *f_gain = xmalloc(((size_t)pl.nw + 1) * sizeof(int));
    targets_compute(&pl, 1, f_gain);
    if (in->strategy != BATON_STRATEGY_STICKY)
        targets_compute(&pl, 0, f);
    else
        memcpy(f, f_gain, ((size_t)pl.nw + 1) * sizeof(int));

    baton_assign_stats_t st = {0};
    for (int p = 0; p < pl.np; p++) {
        switch (pl.cls[p]) {
        case CLS_PINNED:
            next[p] = in->pins[p];
            st.pinned++;
            break;
        case CLS_RESERVED:
            next[p] = in->prev[p];
            st.reserved++;
            break;
        default: next[p] = -2; /* free: the strategy decides */
        }
    }
    switch (in->strategy) {
    case BATON_STRATEGY_STICKY: assign_sticky(&pl, f, next); break;
    case BATON_STRATEGY_RANGE: assign_range(&pl, f, next); break;
    case BATON_STRATEGY_ROUNDROBIN: assign_roundrobin(&pl, f, next); break;
    case BATON_STRATEGY_RENDEZVOUS: assign_rendezvous(&pl, next); break;
    }
    if (in->strategy == BATON_STRATEGY_STICKY && in->rack_policy == BATON_RACK_REALIGN)
        st.realigned = realign(&pl, next);

    st.minimal = minimal_moves(&pl, f_gain);
    for (int p = 0; p < pl.np; p++) {
        if (next[p] == -2)
            next[p] = -1; /* defensive: every path sets it */
        if (next[p] != (in->prev ? in->prev[p] : -1))
            st.moved++;
        if (next[p] < 0)
            st.unassigned++;
        else if (rack_match(in, p, next[p]))
            st.rack_local++;
    }
    free(f_gain);
    free(f);
    plan_release(&pl);
    if (stats)
        *stats = st;
    return st.moved;
}

double baton_assign_imbalance(const baton_assign_input_t *in, const int *next) {
    char errstr[8];
    if (input_check(in, next, errstr, sizeof(errstr)) != BATON_OK)
        return -1.0;
    plan_t pl;
    plan_init(&pl, in);
    shares_compute(&pl);
    int *cnt = xcalloc((size_t)pl.nw + 1, sizeof(int));
    for (int p = 0; p < pl.np; p++)
        if (next[p] >= 0 && next[p] < pl.nw && pl.cls[p] != CLS_RESERVED)
            cnt[next[p]]++;
    double worst = 0.0;
    for (int w = 0; w < pl.nw; w++) {
        if (!pl.elig[w])
            continue;
        double share = pl.sh[w].fixed
                           ? (double)pl.pin_cnt[w]
                           : (double)pl.sh[w].lo + (double)pl.sh[w].frac / (double)pl.den;
        double dist = fabs((double)cnt[w] - share);
        if (dist > worst)
            worst = dist;
    }
    free(cnt);
    plan_release(&pl);
    return worst;
}

int baton_assign(baton_strategy_t strategy, int npartitions, const int *prev, int nworkers,
                 int *next) {
    if (nworkers < 0 || nworkers > 1000000)
        return BATON_INVALID;
    baton_assign_worker_t *workers = xmalloc(((size_t)nworkers + 1) * sizeof(*workers));
    for (int w = 0; w < nworkers; w++)
        workers[w] = (baton_assign_worker_t){.capacity = 1, .rack = -1};
    baton_assign_input_t in = {
        .strategy = strategy,
        .npartitions = npartitions,
        .prev = prev,
        .workers = workers,
        .nworkers = nworkers,
    };
    char errstr[128];
    int rc = baton_assign_compute(&in, next, NULL, errstr, sizeof(errstr));
    free(workers);
    return rc;
}
