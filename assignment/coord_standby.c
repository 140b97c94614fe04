/* coord_standby.c: standbys, see coord_standby.h.
 *
 * The direct rule (sticky and range) answers "where would owner o's rows go
 * if o were drained, with the current assignment N as the previous one"
 * without running the assignor once per owner. With prev = N and o drained,
 * the assignor's inputs differ from the current ones only in o: o leaves the
 * eligible set, and the partitions pinned to o become free. So:
 *
 * - the capacity shares (water filling) depend on o only through o's
 *   capacity and pin count: they are computed once per class of owners with
 *   the same (capacity, pins), with one member of the class left out;
 * - every other worker w keeps its free partitions c[w] = what it holds
 *   unpinned, and its target is floor(share) - pins plus one extra when it is
 *   among the first R candidates (gain, then the share's fraction, then the
 *   index, as assignment.c orders them) other than o: one sorted candidate
 *   list per class, and per owner at most two workers differ from it (o,
 *   and the candidate the extra o gave up goes to) -- for range; sticky's
 *   candidates without gain go round from o's place (assignment.c's
 *   rotate), so per owner the zone of candidates alike in gain and
 *   fraction around position R takes its extras anew (zone_extras, O(k));
 * - sticky: the pool is o's partitions plus what a worker over its new
 *   target lets go (rack-matching kept first, then the lowest), handed to
 *   workers with room, first within the leader's rack, then o's partitions
 *   to their hint (the standby named before) if it has room, then by index
 *   from o's place round;
 *   range: o's partitions keep their rank among the free partitions, and
 *   the blocks are the new targets in worker order.
 *
 * That is O(P + workers x classes x log + owners x R) per rebalance where
 * the simulation is O(owners x P). tests/unit/test_coord_standby.c checks the rule against
 * coord_standby_simulate (kept for that, and for the strategies and keys it
 * still serves) and against the coordinator's next rebalance. */
#include "coord_standby.h"

#include "baton_err.h"
#include "baton_util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* --- the simulation: one assignment per owner ------------------------------ */

/* What each worker owns (1: partitions, 2: keys). */
static char *owned_kinds(const int *next, size_t nrows, int P, int nw) {
    char *owns = xcalloc((size_t)nw + 1, 1);
    for (size_t r = 0; r < nrows; r++)
        if (next[r] >= 0 && next[r] < nw)
            owns[next[r]] |= r < (size_t)P ? 1 : 2;
    return owns;
}

/* kinds: 1 partitions, 2 keys, 3 both. */
static int simulate(const baton_assign_input_t *in, char *const *keys, size_t nkeys,
                    const coord_key_worker_t *kw, const int *next, int *sb, int kinds, char *errstr,
                    size_t errstr_size) {
    int P = in->npartitions, nw = in->nworkers;
    size_t nrows = (size_t)P + nkeys;
    const int *knext = next + P;
    char *owns = owned_kinds(next, nrows, P, nw);
    baton_assign_worker_t *aw = xcalloc((size_t)nw + 1, sizeof(*aw));
    coord_key_worker_t *kw2 = xcalloc((size_t)nw + 1, sizeof(*kw2));
    memcpy(aw, in->workers, sizeof(*aw) * (size_t)nw);
    if (nkeys)
        memcpy(kw2, kw, sizeof(*kw2) * (size_t)nw);
    int *alt = xmalloc(sizeof(int) * (nrows + 1)); /* rows, as next */
    baton_assign_input_t sim = *in;
    sim.prev = next;
    sim.workers = aw;
    int err = 0;
    for (int o = 0; o < nw && err >= 0; o++) {
        /* Partitions and keys each by their own flags: a keys-only member
         * (baton-run) is drained for partitions, not for its keys. An
         * absent owner's resources stay reserved for it: no standby. */
        int saved = aw[o].flags;
        int psim = (kinds & 1) && (owns[o] & 1) && !(saved & BATON_ASSIGN_ABSENT);
        int ksim = (kinds & 2) && (owns[o] & 2) && !(kw2[o].flags & BATON_ASSIGN_ABSENT);
        if (psim) {
            aw[o].flags |= BATON_ASSIGN_DRAINED; /* what a leave mark does */
            sim.rotate = o;                      /* the extra slots go round from o's place */
            err = baton_assign_compute(&sim, alt, NULL, errstr, errstr_size);
            aw[o].flags = saved;
        }
        if (err >= 0 && ksim) {
            int ksaved = kw2[o].flags;
            kw2[o].flags |= BATON_ASSIGN_DRAINED;
            err = coord_keys_assign(in->strategy, keys, nkeys, kw2, (size_t)nw, knext, alt + P,
                                    errstr, errstr_size);
            kw2[o].flags = ksaved;
        }
        /* The rows o owns, of a kind just simulated, go to their successor. */
        for (size_t r = 0; err >= 0 && r < nrows; r++) {
            int simulated = r < (size_t)P ? psim : ksim;
            if (next[r] == o && simulated && alt[r] >= 0 && alt[r] != o)
                sb[r] = alt[r];
        }
    }
    free(alt);
    free(kw2);
    free(aw);
    free(owns);
    return err < 0 ? err : 0;
}

int coord_standby_simulate(const baton_assign_input_t *in, char *const *keys, size_t nkeys,
                           const coord_key_worker_t *kw, const int *next, int *sb, char *errstr,
                           size_t errstr_size) {
    size_t nrows = (size_t)in->npartitions + nkeys;
    for (size_t r = 0; r < nrows; r++)
        sb[r] = -1;
    return simulate(in, keys, nkeys, kw, next, sb, 3, errstr, errstr_size);
}

/* --- the direct rule (sticky, range) --------------------------------------- */

/* A candidate for an extra slot, or an owner to group: sorted by a, b, then
 * the worker index. */
typedef struct {
    long long a, b;
    int w;
} sortkey_t;

typedef struct {
    const baton_assign_input_t *in;
    const int *N; /* the current owners: the simulated departure's prev */
    int P, nw, sticky;
    unsigned char *elig, *pinned; /* per worker; per partition: pinned to its eligible pin */
    int *pin_cnt, *c;             /* per worker: pinned partitions, free ones it holds */
    long long p_e;                /* partitions not reserved for an absent worker */
    int *ostart, *olist;          /* worker w's partitions: olist[ostart[w]..ostart[w+1]) */
    int *freepre;                 /* range: free partitions below p */
    int nr;                       /* racks 0..nr-1 have workers */
    /* One class's targets (all with the class's representative x left out). */
    long long *lo, *frac;
    unsigned char *fixed;
    int *f0;    /* floor(share) - pins, 0 when fixed */
    int *fk;    /* f0 + 1 for the first R candidates */
    int *rankL; /* position in the candidate list, or INT_MAX */
    int *L, nL;
    sortkey_t *keys;
    long long R;
    long long *pk; /* range: prefix sums of fk */
    /* sticky: workers that may have room (ascending), their deficits, racks */
    int *dlist, nd, *dk, *dwork, *rstart, *rlist, *rcur, *over, nover;
    /* sticky: the zone L[zs..ze) of candidates whose extra slot depends on
     * who departs (the groups alike in gain and fraction around position
     * R); tb[w], a worker's target without a zone extra; zt[w], whether the
     * departure now computed gives w a zone extra. */
    int zs, ze, *tb, *gend; /* gend[i], i in the zone: where L[i]'s group ends */
    unsigned char *zt;
    int *touched, ntouched, *pool, *got;
} direct_t;

static int rack_match(const direct_t *x, int p, int w) {
    const baton_assign_input_t *in = x->in;
    return in->leader_rack && in->leader_rack[p] >= 0 && in->leader_rack[p] == in->workers[w].rack;
}

/* Whether candidates L[i] and L[j] are alike in gain and fraction (one
 * group of the extra slots' order). */
static int same_group(const direct_t *x, int i, int j) {
    return x->keys[i].a == x->keys[j].a && x->keys[i].b == x->keys[j].b;
}

/* The first position in a[lo..hi) (ascending) whose value is at least v;
 * hi if none. */
static int lower_bound(const int *a, int lo, int hi, int v) {
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (a[mid] >= v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* N is the assignor's output for in's workers and pins: pinned partitions at
 * their eligible pin, nothing at a drained worker, nothing unowned while a
 * worker is eligible. The rule relies on it; anything else is simulated. */
static int direct_init(direct_t *x, const baton_assign_input_t *in, const int *N) {
    memset(x, 0, sizeof(*x));
    x->in = in;
    x->N = N;
    x->P = in->npartitions;
    x->nw = in->nworkers;
    x->sticky = in->strategy == BATON_STRATEGY_STICKY;
    size_t nw1 = (size_t)x->nw + 1, np1 = (size_t)x->P + 1;
    x->elig = xcalloc(nw1, 1);
    x->pinned = xcalloc(np1, 1);
    x->pin_cnt = xcalloc(nw1, sizeof(int));
    x->c = xcalloc(nw1, sizeof(int));
    x->ostart = xcalloc(nw1 + 1, sizeof(int));
    x->olist = xmalloc(np1 * sizeof(int));
    x->freepre = xmalloc(np1 * sizeof(int));
    int any = 0;
    for (int w = 0; w < x->nw; w++) {
        const baton_assign_worker_t *wk = &in->workers[w];
        x->elig[w] = !(wk->flags & (BATON_ASSIGN_DRAINED | BATON_ASSIGN_ABSENT));
        any |= x->elig[w];
        if (wk->rack >= x->nr)
            x->nr = wk->rack + 1;
    }
    int nfree = 0;
    for (int p = 0; p < x->P; p++) {
        int o = N[p], pin = in->pins ? in->pins[p] : -1;
        x->freepre[p] = nfree;
        if (o < -1 || o >= x->nw || (o == -1 && any))
            return -1;
        if (pin >= 0 && x->elig[pin]) {
            if (o != pin)
                return -1;
            x->pinned[p] = 1;
            x->pin_cnt[pin]++;
            x->p_e++;
        } else if (o >= 0 && !x->elig[o]) {
            if (in->workers[o].flags & BATON_ASSIGN_DRAINED)
                return -1; /* reserved only for an absent, undrained worker */
        } else {
            x->p_e++;
            nfree++;
            if (o >= 0)
                x->c[o]++;
        }
        if (o >= 0)
            x->ostart[o + 1]++;
    }
    for (int w = 0; w < x->nw; w++)
        x->ostart[w + 1] += x->ostart[w];
    int *cur = xmalloc(nw1 * sizeof(int));
    memcpy(cur, x->ostart, nw1 * sizeof(int));
    for (int p = 0; p < x->P; p++)
        if (N[p] >= 0)
            x->olist[cur[N[p]]++] = p;
    free(cur);
    x->lo = xcalloc(nw1, sizeof(long long));
    x->frac = xcalloc(nw1, sizeof(long long));
    x->fixed = xcalloc(nw1, 1);
    x->f0 = xcalloc(nw1, sizeof(int));
    x->fk = xcalloc(nw1, sizeof(int));
    x->rankL = xcalloc(nw1, sizeof(int));
    x->L = xcalloc(nw1, sizeof(int));
    x->keys = xcalloc(nw1, sizeof(sortkey_t));
    x->pk = xcalloc(nw1, sizeof(long long));
    x->dlist = xcalloc(nw1, sizeof(int));
    x->dk = xcalloc(nw1, sizeof(int));
    x->dwork = xcalloc(nw1, sizeof(int));
    x->over = xcalloc(nw1, sizeof(int));
    x->rstart = xcalloc((size_t)x->nr + 2, sizeof(int));
    x->rcur = xcalloc((size_t)x->nr + 2, sizeof(int));
    x->rlist = xcalloc(nw1, sizeof(int));
    x->touched = xcalloc(np1 + 2 * nw1 + 4, sizeof(int)); /* o, the zone extras, each slot */
    x->tb = xcalloc(nw1, sizeof(int));
    x->gend = xcalloc(nw1, sizeof(int));
    x->zt = xcalloc(nw1, 1);
    x->pool = xmalloc(np1 * sizeof(int));
    x->got = xmalloc(np1 * sizeof(int));
    return 0;
}

static void direct_release(direct_t *x) {
    void *ps[] = {x->elig,    x->pinned, x->pin_cnt, x->c,     x->ostart,  x->olist,
                  x->freepre, x->lo,     x->frac,    x->fixed, x->f0,      x->fk,
                  x->rankL,   x->L,      x->pk,      x->dlist, x->dk,      x->dwork,
                  x->over,    x->rstart, x->rcur,    x->rlist, x->touched, x->pool,
                  x->got,     x->keys,   x->tb,      x->zt,    x->gend};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(ps); i++)
        free(ps[i]);
}

/* The water filling of assignment.c's shares, over the eligible workers but
 * skip. Returns 0 when nobody is left. */
static int shares_without(direct_t *x, int skip) {
    const baton_assign_worker_t *wk = x->in->workers;
    memset(x->fixed, 0, (size_t)x->nw);
    for (;;) {
        long long rem = x->p_e, cap = 0;
        for (int w = 0; w < x->nw; w++) {
            if (!x->elig[w] || w == skip)
                continue;
            if (x->fixed[w])
                rem -= x->pin_cnt[w];
            else
                cap += wk[w].capacity;
        }
        if (cap == 0)
            return 0;
        int changed = 0;
        for (int w = 0; w < x->nw; w++)
            if (x->elig[w] && w != skip && !x->fixed[w] &&
                (long long)x->pin_cnt[w] * cap > rem * wk[w].capacity) {
                x->fixed[w] = 1;
                changed = 1;
            }
        if (changed)
            continue;
        for (int w = 0; w < x->nw; w++) {
            if (!x->elig[w] || w == skip)
                continue;
            x->lo[w] = rem * wk[w].capacity / cap;
            x->frac[w] = rem * wk[w].capacity % cap;
        }
        return 1;
    }
}

static int sortkey_cmp(const void *p, const void *q) {
    const sortkey_t *x = p, *y = q;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    return (x->w > y->w) - (x->w < y->w);
}

/* The targets of the class of representative rep (mate: another owner of
 * the same capacity and pins, or -1): everything about a departure of any
 * class member but which member it is. Returns 0 when no worker is left. */
static int class_targets(direct_t *x, int rep, int mate) {
    if (!shares_without(x, rep))
        return 0;
    int nw = x->nw;
    if (mate >= 0) {
        x->lo[rep] = x->lo[mate];
        x->frac[rep] = x->frac[mate];
        x->fixed[rep] = x->fixed[mate];
    }
    long long base = 0, term = 0;
    x->nL = 0;
    for (int w = 0; w < nw; w++) {
        x->rankL[w] = INT_MAX;
        x->f0[w] = x->fk[w] = 0;
        if (!x->elig[w] || (w == rep && mate < 0))
            continue;
        long long t = x->fixed[w] ? x->pin_cnt[w] : x->lo[w];
        base += t;
        if (w == rep)
            term = t;
        if (x->fixed[w])
            continue;
        x->f0[w] = (int)(x->lo[w] - x->pin_cnt[w]);
        if (x->frac[w] > 0) /* assignment.c's order: gain, fraction, index */
            x->keys[x->nL++] =
                (sortkey_t){.a = -(x->sticky && x->c[w] > x->f0[w]), .b = -x->frac[w], .w = w};
    }
    qsort(x->keys, (size_t)x->nL, sizeof(sortkey_t), sortkey_cmp);
    for (int i = 0; i < x->nL; i++) {
        x->L[i] = x->keys[i].w;
        x->rankL[x->L[i]] = i;
    }
    x->R = x->p_e - base + term;
    for (int w = 0; w < nw; w++)
        x->fk[w] = x->f0[w] + (x->rankL[w] < x->R);
    long long s = 0;
    for (int w = 0; w < nw; w++)
        x->pk[w] = s += x->fk[w];
    if (!x->sticky)
        return 1;
    /* The zone: the groups (alike in gain and fraction) at positions R - 1
     * and R. A departure before it passes its extra on, so the first R of
     * L without the departed end inside it; which of its members get the
     * extras is decided per departure (zone_extras: without gain, round
     * from the departed worker's place, as assignment.c's rotate). */
    x->zs = x->ze = 0;
    if (x->nL > 0) {
        int a = x->R - 1 < 0 ? 0 : (int)(x->R - 1 < x->nL ? x->R - 1 : x->nL - 1);
        int b = x->R < x->nL ? (int)x->R : x->nL - 1;
        while (a > 0 && same_group(x, a - 1, a))
            a--;
        while (b + 1 < x->nL && same_group(x, b + 1, b))
            b++;
        x->zs = a;
        x->ze = b + 1;
        for (int i = x->ze - 1; i >= x->zs; i--)
            x->gend[i] = i + 1 < x->ze && same_group(x, i + 1, i) ? x->gend[i + 1] : i + 1;
    }
    /* Who may have room (any departure of the class): tb, or tb + 1 in the
     * zone. Who may be over its target. */
    x->nd = x->nover = 0;
    for (int w = 0; w < nw; w++) {
        if (!x->elig[w])
            continue;
        int inzone = x->rankL[w] >= x->zs && x->rankL[w] < x->ze;
        x->tb[w] = x->f0[w] + (x->rankL[w] < x->zs);
        int room = x->tb[w] + inzone - x->c[w];
        x->dk[w] = x->tb[w] > x->c[w] ? x->tb[w] - x->c[w] : 0;
        x->dwork[w] = x->dk[w];
        if (room > 0)
            x->dlist[x->nd++] = w;
        if (x->c[w] > x->tb[w])
            x->over[x->nover++] = w;
    }
    memset(x->rstart, 0, sizeof(int) * ((size_t)x->nr + 2));
    for (int i = 0; i < x->nd; i++)
        if (x->in->workers[x->dlist[i]].rack >= 0)
            x->rstart[x->in->workers[x->dlist[i]].rack + 1]++;
    for (int r = 0; r < x->nr; r++)
        x->rstart[r + 1] += x->rstart[r];
    memcpy(x->rcur, x->rstart, sizeof(int) * ((size_t)x->nr + 1));
    for (int i = 0; i < x->nd; i++) {
        int rk = x->in->workers[x->dlist[i]].rack;
        if (rk >= 0)
            x->rlist[x->rcur[rk]++] = x->dlist[i];
    }
    return 1;
}

/* Owner o's departure (range): its target slot's extra, if it had one,
 * goes to the candidate L[R]; -1 if none. */
static int bonus_of(const direct_t *x, int o) {
    return x->rankL[o] < x->R && x->R < x->nL ? x->L[x->R] : -1;
}

static void touch(direct_t *x, int w);

/* Sticky, owner o's departure: the zone's extras. The first R of L
 * without o take every group before the zone and k of the zone: a group
 * with gain in index order, one without from the first worker after o,
 * wrapping round (assignment.c's rotate = o's place). Marks them in zt,
 * their deficits in dwork (touched, so both are reset). */
static void zone_extras(direct_t *x, int o) {
    long long k = x->R - (x->zs - (x->rankL[o] < x->zs));
    for (int gs = x->zs, ge; gs < x->ze && k > 0; gs = ge) {
        ge = x->gend[gs];
        /* L[gs..ge) ascending by index: without gain, from the first past o */
        int start = x->keys[gs].a == 0 ? lower_bound(x->L, gs, ge, o + 1) : gs;
        for (int n = 0; n < ge - gs && k > 0; n++) {
            int i = start + n < ge ? start + n : start + n - (ge - gs);
            int w = x->L[i];
            if (w == o)
                continue;
            x->zt[w] = 1;
            int t = x->tb[w] + 1;
            x->dwork[w] = t > x->c[w] ? t - x->c[w] : 0;
            touch(x, w);
            k--;
        }
    }
}

static int target_of(const direct_t *x, int o, int w) {
    if (w == o)
        return 0;
    return x->tb[w] + x->zt[w];
}

static int int_cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void touch(direct_t *x, int w) { x->touched[x->ntouched++] = w; }

/* Sticky: o's partitions, with what others let go, over the room left. */
static void sticky_owner(direct_t *x, int o, int *sb) {
    const baton_assign_input_t *in = x->in;
    int npool = 0;
    x->ntouched = 0;
    x->dwork[o] = 0;
    touch(x, o);
    zone_extras(x, o);
    for (int i = x->ostart[o]; i < x->ostart[o + 1]; i++)
        x->pool[npool++] = x->olist[i];
    int sorted = 1;
    for (int i = 0; i < x->nover; i++) {
        int w = x->over[i], keep = target_of(x, o, w);
        if (w == o || x->c[w] <= keep)
            continue;
        /* Keeps the rack-matching first, then the lowest; the rest go. */
        int *list = x->olist + x->ostart[w], n = x->ostart[w + 1] - x->ostart[w];
        int nmatch = 0;
        for (int k = 0; k < n; k++)
            if (!x->pinned[list[k]] && rack_match(x, list[k], w))
                nmatch++;
        int keep_match = nmatch < keep ? nmatch : keep, keep_rest = keep - keep_match;
        for (int k = 0; k < n; k++) {
            int p = list[k];
            if (x->pinned[p])
                continue;
            if (rack_match(x, p, w) ? keep_match-- > 0 : keep_rest-- > 0)
                continue;
            x->pool[npool++] = p;
            sorted = 0;
        }
    }
    if (!sorted)
        qsort(x->pool, (size_t)npool, sizeof(int), int_cmp);
    for (int i = 0; i < npool; i++)
        x->got[i] = -1;
    if (in->leader_rack && x->nr > 0) {
        for (int i = 0; i < npool; i++) {
            int r = in->leader_rack[x->pool[i]];
            if (r < 0 || r >= x->nr)
                continue;
            int *cur = &x->rcur[r];
            if (*cur == INT_MIN) /* untouched this round: from the start */
                *cur = x->rstart[r];
            while (*cur < x->rstart[r + 1] && x->dwork[x->rlist[*cur]] == 0)
                (*cur)++;
            if (*cur == x->rstart[r + 1])
                continue;
            int w = x->rlist[*cur];
            x->got[i] = w;
            x->dwork[w]--;
            touch(x, w);
        }
    }
    /* o's partitions to their hint (the standby named before) if it has
     * room, as assignment.c's pool_distribute does between its rack and
     * index passes: a standby named once stays named. */
    for (int i = 0; in->hint && i < npool; i++) {
        int p = x->pool[i], h = in->hint[p];
        if (x->got[i] >= 0 || x->N[p] != o || h < 0 || h >= x->nw || !x->elig[h] ||
            x->dwork[h] == 0)
            continue;
        x->got[i] = h;
        x->dwork[h]--;
        touch(x, h);
    }
    /* By index from o's place round (assignment.c's rotate = o): the
     * first worker with room at or after o in dlist, wrapping. */
    int j = lower_bound(x->dlist, 0, x->nd, o), seen = 0;
    if (j == x->nd)
        j = 0;
    for (int i = 0; i < npool && x->nd > 0; i++) {
        if (x->got[i] >= 0)
            continue;
        while (seen < x->nd && x->dwork[x->dlist[j]] == 0) {
            j = j + 1 < x->nd ? j + 1 : 0;
            seen++;
        }
        if (seen == x->nd)
            break;
        x->got[i] = x->dlist[j];
        x->dwork[x->dlist[j]]--;
        touch(x, x->dlist[j]);
    }
    /* o's own partitions are the pool's before the releases were merged in:
     * find them back by their owner. */
    for (int i = 0; i < npool; i++)
        if (x->N[x->pool[i]] == o && x->got[i] >= 0 && x->got[i] != o)
            sb[x->pool[i]] = x->got[i];
    for (int i = 0; i < x->ntouched; i++) {
        x->dwork[x->touched[i]] = x->dk[x->touched[i]];
        x->zt[x->touched[i]] = 0;
    }
    for (int r = 0; r < x->nr; r++)
        x->rcur[r] = INT_MIN;
}

/* Range: o's partitions keep their rank among the free partitions (its
 * pinned ones join them); the blocks follow the new targets in worker
 * order. */
static void range_owner(direct_t *x, int o, int *sb) {
    int bonus = bonus_of(x, o), pins_below = 0;
    for (int i = x->ostart[o]; i < x->ostart[o + 1]; i++) {
        int p = x->olist[i];
        long long rank = x->freepre[p] + pins_below;
        if (x->pinned[p])
            pins_below++;
        /* The first worker whose block ends past rank. */
        int lo = 0, hi = x->nw;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            long long end =
                x->pk[mid] - (mid >= o ? x->fk[o] : 0) + (bonus >= 0 && mid >= bonus ? 1 : 0);
            if (end > rank)
                hi = mid;
            else
                lo = mid + 1;
        }
        if (lo < x->nw && lo != o)
            sb[p] = lo;
    }
}

/* Returns 0, or -1 when N is not the assignor's output for in (simulate). */
static int direct_partitions(const baton_assign_input_t *in, const int *N, int *sb) {
    direct_t x;
    if (direct_init(&x, in, N) < 0) {
        direct_release(&x);
        return -1;
    }
    /* Owners grouped by (capacity, pins): one set of targets per group. */
    sortkey_t *owners = xmalloc(sizeof(sortkey_t) * ((size_t)x.nw + 1));
    int no = 0;
    for (int w = 0; w < x.nw; w++)
        if (x.elig[w] && x.ostart[w + 1] > x.ostart[w])
            owners[no++] = (sortkey_t){.a = in->workers[w].capacity, .b = x.pin_cnt[w], .w = w};
    qsort(owners, (size_t)no, sizeof(sortkey_t), sortkey_cmp);
    for (int lo = 0, hi; lo < no; lo = hi) {
        for (hi = lo + 1; hi < no && owners[hi].a == owners[lo].a && owners[hi].b == owners[lo].b;
             hi++) {
        }
        int rep = owners[lo].w, mate = hi - lo > 1 ? owners[lo + 1].w : -1;
        if (!class_targets(&x, rep, mate))
            continue; /* nobody else eligible: no standby */
        for (int r = 0; r < x.nr; r++)
            x.rcur[r] = INT_MIN;
        for (int i = lo; i < hi; i++) {
            if (x.sticky)
                sticky_owner(&x, owners[i].w, sb);
            else
                range_owner(&x, owners[i].w, sb);
        }
    }
    free(owners);
    direct_release(&x);
    return 0;
}

int coord_standby_compute(const baton_assign_input_t *in, char *const *keys, size_t nkeys,
                          const coord_key_worker_t *kw, const int *next, int *sb, char *errstr,
                          size_t errstr_size) {
    int P = in->npartitions, nw = in->nworkers;
    size_t nrows = (size_t)P + nkeys;
    for (size_t r = 0; r < nrows; r++)
        sb[r] = -1;
    char *owns = owned_kinds(next, nrows, P, nw);
    size_t powners = 0, kowners = 0;
    for (int o = 0; o < nw; o++) {
        powners += (owns[o] & 1) != 0;
        kowners += (owns[o] & 2) != 0;
    }
    free(owns);
    int kinds = 0, skipped = 0;
    /* The direct rule follows sticky's keep-and-hand-out, not its rack
     * realignment (assignment.c): with realign and known leader racks the
     * departure is simulated, so the standby is still what the next
     * rebalance names (test_coord_standby draws both policies). */
    int realign = in->strategy == BATON_STRATEGY_STICKY && in->rack_policy == BATON_RACK_REALIGN &&
                  in->leader_rack;
    int direct =
        !realign && (in->strategy == BATON_STRATEGY_STICKY || in->strategy == BATON_STRATEGY_RANGE);
    if (P > 0 && !(direct && direct_partitions(in, next, sb) == 0)) {
        if (powners * ((size_t)P + (size_t)nw) <= COORD_STANDBY_BUDGET)
            kinds |= 1;
        else
            skipped = 1;
    }
    if (nkeys) {
        if (kowners * nkeys * ((size_t)nw + 1) <= COORD_STANDBY_BUDGET)
            kinds |= 2;
        else
            skipped = 1;
    }
    int err = kinds ? simulate(in, keys, nkeys, kw, next, sb, kinds, errstr, errstr_size) : 0;
    if (err < 0)
        return err;
    return skipped;
}
/* The entry of lists[s] for owner o, appended when it is not the last one
 * (owners are visited in ascending order, so the lists stay sorted). */
static baton_standby_t *entry_for(baton_standby_t **lists, size_t *nlists, size_t *caps, int s,
                                  const char *owner) {
    if (nlists[s] && strcmp(lists[s][nlists[s] - 1].owner, owner) == 0)
        return &lists[s][nlists[s] - 1];
    if (nlists[s] == caps[s]) {
        caps[s] = caps[s] ? caps[s] * 2 : 4;
        lists[s] = xrealloc(lists[s], sizeof(baton_standby_t) * caps[s]);
    }
    baton_standby_t *e = &lists[s][nlists[s]++];
    *e = (baton_standby_t){.owner = xstrdup(owner)};
    return e;
}

void coord_standby_lists(const int *start, const int *order, int32_t npartitions, char *const *keys,
                         size_t nkeys, const int *next, const int *sb, const char *const *ids,
                         size_t nw, baton_standby_t ***lists_out, size_t **nlists_out) {
    baton_standby_t **lists = xcalloc(nw + 1, sizeof(*lists));
    size_t *nlists = xcalloc(nw + 1, sizeof(size_t)), *caps = xcalloc(nw + 1, sizeof(size_t));
    for (size_t o = 0; o < nw; o++) {
        for (int i = start[o]; i < start[o + 1]; i++) {
            int p = order[i], s = sb[p];
            if (s < 0)
                continue;
            baton_standby_t *e = entry_for(lists, nlists, caps, s, ids[o]);
            e->partitions = xrealloc(e->partitions, sizeof(int32_t) * (e->npartitions + 1));
            e->partitions[e->npartitions++] = p;
        }
        for (size_t k = 0; k < nkeys; k++) {
            size_t r = (size_t)npartitions + k;
            if (next[r] != (int)o || sb[r] < 0)
                continue;
            baton_standby_t *e = entry_for(lists, nlists, caps, sb[r], ids[o]);
            e->keys = xrealloc(e->keys, sizeof(char *) * (e->nkeys + 1));
            e->keys[e->nkeys++] = xstrdup(keys[k]);
        }
    }
    free(caps);
    *lists_out = lists;
    *nlists_out = nlists;
}
