/* plan.c: the plan step of plan.h. */
#include "plan.h"

#include "baton_err.h"
#include "baton_util.h"
#include "coord_keys.h"
#include "coord_standby.h"

#include <stdlib.h>
#include <string.h>

static int member_cmp(const void *key, const void *elem) {
    return strcmp((const char *)key, ((const baton_plan_member_t *)elem)->id);
}

/* The index of member id, or -1. */
static int member_find(const baton_plan_snapshot_t *s, const char *id) {
    if (!id || !s->nmembers)
        return -1;
    const baton_plan_member_t *m =
        bsearch(id, s->members, s->nmembers, sizeof(*s->members), member_cmp);
    return m ? (int)(m - s->members) : -1;
}

/* Rack names to the assignor's indices: the members' racks get 0, 1, ...
 * in member order; a leader's rack no member is in is -1. */
static int rack_index(const char **names, size_t *n, const char *rack, int add) {
    if (!rack || !rack[0])
        return -1;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(names[i], rack) == 0)
            return (int)i;
    if (!add)
        return -1;
    names[*n] = rack;
    return (int)(*n)++;
}

static int same_list(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof(int32_t)) == 0);
}

static int same_keys(char *const *a, size_t na, char *const *b, size_t nb) {
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return 0;
    return 1;
}

static int op_cmp(const void *a, const void *b) {
    const baton_plan_op_t *x = a, *y = b;
    if (x->delta != y->delta)
        return x->delta < y->delta ? -1 : 1;
    return strcmp(x->id, y->id);
}

int baton_plan_member_takes(const baton_plan_member_t *m, const baton_resource_t *r) {
    if (r->kind == BATON_RESOURCE_PARTITION)
        return !m->no_partitions;
    return r->kind == BATON_RESOURCE_KEY && r->key &&
           coord_keys_takes(m->keys_filter, m->keys, r->key);
}

/* Every row's previous owner: the first published node that lists it
 * (prev_pub) and that node's member index (prev; -1 once it is gone).
 * Rows outside the snapshot (a partition out of range, a removed key)
 * are skipped; a row listed twice keeps the first. A partition's hint is
 * the live member whose published node names it standby for it (the
 * first such node). */
static void plan_previous(const baton_plan_snapshot_t *s, baton_plan_t *p) {
    for (size_t r = 0; r < p->nrows; r++)
        p->prev[r] = p->prev_pub[r] = p->pins[r] = p->hint[r] = -1;
    for (int32_t q = 0; q < s->npartitions; q++)
        p->pins[q] = s->pin_of && s->pin_of[q] ? member_find(s, s->pin_of[q]) : -1;
    for (size_t i = 0; i < s->npublished; i++) {
        const baton_plan_published_t *pub = &s->published[i];
        int k = member_find(s, pub->id); /* a departed worker's rows are up for grabs */
        for (size_t e = 0; k >= 0 && e < pub->nstandby; e++)
            for (size_t j = 0; j < pub->standby[e].npartitions; j++) {
                int32_t q = pub->standby[e].partitions[j];
                if (q >= 0 && q < s->npartitions && p->hint[q] == -1)
                    p->hint[q] = k;
            }
        size_t n = pub->npartitions + pub->nkeys;
        for (size_t j = 0; j < n; j++) {
            long r = -1;
            if (j < pub->npartitions) {
                int32_t q = pub->partitions[j];
                r = q >= 0 && q < s->npartitions ? q : -1;
            } else if (s->nkeys) {
                char *const *hit = bsearch(&pub->keys[j - pub->npartitions], s->keys, s->nkeys,
                                           sizeof(char *), baton_strcmp_p);
                r = hit ? (long)baton_plan_key_row(s, (size_t)(hit - s->keys)) : -1;
            }
            if (r < 0 || p->prev_pub[r] != -1)
                continue;
            p->prev_pub[r] = (int)i;
            p->prev[r] = k;
        }
    }
}

void baton_plan_node(const baton_plan_snapshot_t *s, const baton_plan_t *p, size_t k,
                     baton_worker_assignment_t *wa) {
    size_t cnt = (size_t)(p->start[k + 1] - p->start[k]), kcnt = 0;
    int32_t *list = xmalloc(sizeof(int32_t) * (cnt + 1));
    for (size_t i = 0; i < cnt; i++)
        list[i] = p->order[p->start[k] + (int)i];
    char **klist = xcalloc(s->nkeys + 1, sizeof(char *));
    for (size_t j = 0; j < s->nkeys; j++)
        if (p->next[baton_plan_key_row(s, j)] == (int)k)
            klist[kcnt++] = s->keys[j]; /* sorted, as keys is */
    *wa = (baton_worker_assignment_t){.generation = p->generation,
                                      .partitions = list,
                                      .npartitions = cnt,
                                      .keys = klist,
                                      .nkeys = kcnt,
                                      .standby = p->standby[k],
                                      .nstandby = p->nstandby[k]};
}

/* The place of the one owner whose partitions are moving because it left
 * (drained: its member index; gone: where its id would sort among the
 * members, wrapping to 0 past the last), or 0 when no or several owners
 * left: the assignor's rotate, as coord_standby.c's simulation of that
 * departure used it (the standbys it named are the workers after it). */
static int plan_rotate(const baton_plan_snapshot_t *s, const baton_plan_t *p,
                       const baton_assign_worker_t *aw) {
    int drained = -1, gone = -1, n = 0;
    for (int32_t q = 0; q < s->npartitions && n < 2; q++) {
        int k = p->prev[q], i = p->prev_pub[q];
        if (k >= 0 && (aw[k].flags & BATON_ASSIGN_DRAINED) &&
            !(aw[k].flags & BATON_ASSIGN_ABSENT) && k != drained) {
            drained = k;
            n++;
        } else if (k < 0 && i >= 0 && i != gone) {
            gone = i;
            n++;
        }
    }
    if (n != 1)
        return 0;
    if (drained >= 0)
        return drained;
    size_t at = 0;
    while (at < s->nmembers && strcmp(s->members[at].id, s->published[gone].id) < 0)
        at++;
    return at < s->nmembers ? (int)at : 0;
}

/* Partitions: the assignor over the members that take partitions, from
 * what is published (rows [0, npartitions)). */
static int plan_partitions(const baton_plan_snapshot_t *s, baton_plan_t *p,
                           baton_assign_worker_t *aw, baton_assign_input_t *in, char *errstr,
                           size_t n) {
    int32_t P = s->npartitions;
    size_t P1 = (size_t)P + 1, nracks = 0;
    const char **rack_names = xcalloc(s->nmembers + 1, sizeof(char *));
    const baton_resource_t partition = {.kind = BATON_RESOURCE_PARTITION};
    for (size_t i = 0; i < s->nmembers; i++) {
        const baton_plan_member_t *m = &s->members[i];
        int takes = baton_plan_member_takes(m, &partition);
        aw[i] = (baton_assign_worker_t){.id = m->id,
                                        .capacity = m->capacity,
                                        .rack = rack_index(rack_names, &nracks, m->rack, 1),
                                        .flags = m->flags | (takes ? 0 : BATON_ASSIGN_DRAINED)};
    }
    int *lrack = NULL;
    if (s->leader_rack && nracks > 0) {
        lrack = xmalloc(sizeof(int) * P1);
        for (int32_t q = 0; q < P; q++)
            lrack[q] = rack_index(rack_names, &nracks, s->leader_rack[q], 0);
    }
    *in = (baton_assign_input_t){
        .strategy = s->strategy,
        .npartitions = P,
        .prev = p->prev,
        .workers = aw,
        .nworkers = (int)s->nmembers,
        .pins = p->pins,
        .leader_rack = lrack,
        .rack_policy = s->rack_policy,
        .hint = p->hint,
    };
    in->rotate = plan_rotate(s, p, aw);
    int rc = baton_assign_compute(in, p->next, &p->stats, errstr, n);
    free(rack_names);
    /* in->leader_rack stays set for the standbys; freed by the caller. */
    return rc < 0 ? rc : 0;
}

/* Named keys (rows [npartitions, nrows)): the same strategy over the
 * members that may take each. */
static int plan_keys(const baton_plan_snapshot_t *s, baton_plan_t *p, coord_key_worker_t *kw,
                     char *errstr, size_t n) {
    size_t k0 = baton_plan_key_row(s, 0);
    for (size_t i = 0; i < s->nmembers; i++)
        kw[i] = (coord_key_worker_t){.id = s->members[i].id,
                                     .capacity = s->members[i].capacity,
                                     .flags = s->members[i].flags,
                                     .keys_filter = s->members[i].keys_filter,
                                     .keys = s->members[i].keys};
    int rc = coord_keys_assign(s->strategy, s->keys, s->nkeys, kw, s->nmembers, p->prev + k0,
                               p->next + k0, errstr, n);
    return rc < 0 ? rc : 0;
}

/* Per-member lists by one counting pass: start[k]..start[k+1] in order
 * holds member k's partitions, ascending. */
static void plan_layout(const baton_plan_snapshot_t *s, baton_plan_t *p) {
    int32_t P = s->npartitions;
    size_t nw = s->nmembers;
    p->start = xcalloc(nw + 2, sizeof(int));
    p->order = xmalloc(sizeof(int) * ((size_t)P + 1));
    for (int32_t q = 0; q < P; q++)
        if (p->next[q] >= 0)
            p->start[p->next[q] + 1]++;
    for (size_t k = 0; k < nw; k++)
        p->start[k + 1] += p->start[k];
    int *cur = xmalloc(sizeof(int) * (nw + 1));
    memcpy(cur, p->start, sizeof(int) * (nw + 1));
    for (int32_t q = 0; q < P; q++)
        if (p->next[q] >= 0)
            p->order[cur[p->next[q]]++] = q;
    free(cur);
}

/* Standbys: who takes each row when its owner leaves. */
static int plan_standbys(const baton_plan_snapshot_t *s, baton_plan_t *p,
                         const baton_assign_input_t *in, const coord_key_worker_t *kw, char *errstr,
                         size_t n) {
    size_t nw = s->nmembers;
    int *sb = xmalloc(sizeof(int) * (p->nrows + 1));
    int64_t t0 = baton_now_ms();
    int rc = 0;
    p->standby_deferred = s->standbys && s->standbys_unless_moved && (p->moved || p->kmoved);
    if (!s->standbys || p->standby_deferred) {
        for (size_t r = 0; r < p->nrows; r++)
            sb[r] = -1;
    } else {
        rc = coord_standby_compute(in, s->keys, s->nkeys, kw, p->next, sb, errstr, n);
    }
    if (rc >= 0) {
        p->standby_skipped = rc == 1;
        const char **ids = xcalloc(nw + 1, sizeof(char *));
        for (size_t k = 0; k < nw; k++)
            ids[k] = s->members[k].id;
        coord_standby_lists(p->start, p->order, s->npartitions, s->keys, s->nkeys, p->next, sb, ids,
                            nw, &p->standby, &p->nstandby);
        free(ids);
    }
    free(sb);
    p->standby_ms = baton_now_ms() - t0;
    return rc < 0 ? rc : 0;
}

/* What moved, by kind: the rows whose owner changed (newly owned
 * included), as the assignors count them. */
static void plan_moves(const baton_plan_snapshot_t *s, baton_plan_t *p) {
    p->moved = p->kmoved = 0;
    for (size_t r = 0; r < p->nrows; r++) {
        if (p->next[r] == p->prev[r])
            continue;
        if (baton_plan_row_is_key(s, r))
            p->kmoved++;
        else
            p->moved++;
    }
}

static int published_cmp(const void *a, const void *b) {
    const baton_plan_published_t *x = *(const baton_plan_published_t *const *)a,
                                 *y = *(const baton_plan_published_t *const *)b;
    int c = strcmp(x->id, y->id);
    /* The same id twice: the later entry wins, as the scan it replaces did. */
    return c ? c : (x < y ? -1 : x > y);
}

/* The node diff against what is published. The published nodes sorted by
 * id are walked beside the members (sorted too): one pass, not a scan of
 * the published nodes per member (1,000 members: a million strcmp). */
static void plan_diff(const baton_plan_snapshot_t *s, baton_plan_t *p) {
    size_t nw = s->nmembers, np = s->npublished, j = 0;
    p->ops = xcalloc(nw + np + 1, sizeof(*p->ops));
    const baton_plan_published_t **byid = xcalloc(np + 1, sizeof(*byid));
    for (size_t i = 0; i < np; i++)
        byid[i] = &s->published[i];
    qsort(byid, np, sizeof(*byid), published_cmp);
    for (size_t k = 0; k < nw; k++) {
        const baton_plan_published_t *old = NULL;
        while (j < np && strcmp(byid[j]->id, s->members[k].id) < 0)
            j++;
        while (j < np && strcmp(byid[j]->id, s->members[k].id) == 0)
            old = byid[j++];
        baton_worker_assignment_t wa;
        baton_plan_node(s, p, k, &wa);
        int same = old && old->valid &&
                   same_list(old->partitions, old->npartitions, wa.partitions, wa.npartitions) &&
                   same_keys(old->keys, old->nkeys, wa.keys, wa.nkeys) &&
                   baton_standby_equal(old->standby, old->nstandby, wa.standby, wa.nstandby);
        if (!same || s->republish) {
            baton_plan_op_t *o = &p->ops[p->nops++];
            o->kind = old ? BATON_PLAN_SET : BATON_PLAN_CREATE;
            o->id = s->members[k].id;
            o->payload = baton_worker_assignment_encode(&wa);
            o->delta =
                (long)(wa.npartitions + wa.nkeys) - (long)(old ? old->npartitions + old->nkeys : 0);
        }
        free(wa.partitions);
        free(wa.keys);
    }
    free(byid);
    for (size_t i = 0; i < s->npublished; i++) {
        const baton_plan_published_t *pub = &s->published[i];
        if (member_find(s, pub->id) >= 0)
            continue;
        baton_plan_op_t *o = &p->ops[p->nops++];
        o->kind = BATON_PLAN_DELETE;
        o->id = pub->id;
        o->delta = -(long)(pub->npartitions + pub->nkeys);
    }
    qsort(p->ops, p->nops, sizeof(*p->ops), op_cmp);
}

int baton_plan_compute(const baton_plan_snapshot_t *s, baton_plan_t *out, char *errstr, size_t n) {
    memset(out, 0, sizeof(*out));
    if (s->npartitions < 0 || (s->nmembers && !s->members) || (s->nkeys && !s->keys) ||
        (s->npublished && !s->published))
        return baton_seterr(errstr, n, BATON_INVALID, "plan: an inconsistent snapshot");
    for (size_t i = 1; i < s->nmembers; i++)
        if (strcmp(s->members[i - 1].id, s->members[i].id) >= 0)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "plan: members not sorted or not unique ('%s', '%s')",
                                s->members[i - 1].id, s->members[i].id);
    /* Never a generation already written: a leader that died between
     * publish chunks left nodes at generation + 1 while /assignment still
     * says generation. */
    out->generation = s->generation;
    for (size_t i = 0; i < s->npublished; i++)
        if (s->published[i].generation > out->generation)
            out->generation = s->published[i].generation;
    out->generation++;

    baton_assign_worker_t *aw = xcalloc(s->nmembers + 1, sizeof(*aw));
    coord_key_worker_t *kw = xcalloc(s->nmembers + 1, sizeof(*kw));
    baton_assign_input_t in = {0};
    out->nrows = (size_t)s->npartitions + s->nkeys;
    out->next = xmalloc(sizeof(int) * (out->nrows + 1));
    out->prev = xmalloc(sizeof(int) * (out->nrows + 1));
    out->prev_pub = xmalloc(sizeof(int) * (out->nrows + 1));
    out->pins = xmalloc(sizeof(int) * (out->nrows + 1));
    out->hint = xmalloc(sizeof(int) * (out->nrows + 1));
    for (size_t r = 0; r < out->nrows; r++)
        out->next[r] = -1;
    plan_previous(s, out);
    int err = plan_partitions(s, out, aw, &in, errstr, n);
    if (err)
        out->failed = "partitions";
    if (!err && (err = plan_keys(s, out, kw, errstr, n)) != 0)
        out->failed = "keys";
    if (!err) {
        plan_layout(s, out);
        plan_moves(s, out); /* before the standbys: standbys_unless_moved */
        if ((err = plan_standbys(s, out, &in, kw, errstr, n)) != 0)
            out->failed = "standby";
    }
    if (!err) {
        int64_t t0 = baton_now_ms();
        plan_diff(s, out);
        out->diff_ms = baton_now_ms() - t0;
    }
    free((void *)in.leader_rack);
    free(aw);
    free(kw);
    return err;
}

void baton_plan_release(baton_plan_t *p, size_t nmembers) {
    for (size_t i = 0; i < p->nops; i++)
        free(p->ops[i].payload);
    free(p->ops);
    for (size_t k = 0; p->standby && k < nmembers; k++)
        baton_standby_free(p->standby[k], p->nstandby[k]);
    free(p->standby);
    free(p->nstandby);
    free(p->next);
    free(p->prev);
    free(p->prev_pub);
    free(p->pins);
    free(p->hint);
    free(p->start);
    free(p->order);
    memset(p, 0, sizeof(*p));
}
