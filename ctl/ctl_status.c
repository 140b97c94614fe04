/* ctl_status.c: `batonctl status`: gathers a group's coordinator, workers,
 * assignment and partition owners into one JSON object (see ctl_status.h) and
 * renders it for people or for programs. */
#include "ctl_status.h"

#include "assignment.h"
#include "baton_codec.h"
#include "baton_err.h"
#include "baton_group.h"
#include "baton_opts.h"
#include "baton_util.h"
#include "ctl.h"
#include "ctl_zkbatch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* How often a partition whose lowest claim vanished between the listing and
 * the read is looked at again before it is shown as it was listed. */
#define CTL_OWNER_RETRIES 5

typedef struct {
    baton_zk_t *zk;
    const char *base;
    json_t *warnings;
    char errstr[512];
} gather_t;

/* ---- small helpers ---------------------------------------------------- */

/* A JSON string, or null for NULL, "" or text jansson refuses (not UTF-8). */
static json_t *str_or_null(const char *s) {
    json_t *j = s && s[0] ? json_string(s) : NULL;
    return j ? j : json_null();
}

static void gather_warn(gather_t *g, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void gather_warn(gather_t *g, const char *path, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *w = json_object();
    json_object_set_new(w, "path", str_or_null(path));
    json_object_set_new(w, "problem", str_or_null(msg));
    json_array_append_new(g->warnings, w);
}

static int gather_fail(gather_t *g, int err, const char *path) {
    return baton_seterr(g->errstr, sizeof(g->errstr), err, "cannot read '%s': %s", path,
                        baton_strerror(err));
}

/* ---- coordinator ------------------------------------------------------ */

typedef struct {
    int64_t seq;
    const char *name;
} seq_name_t;

static int cmp_seq(const void *a, const void *b) {
    int64_t x = ((const seq_name_t *)a)->seq, y = ((const seq_name_t *)b)->seq;
    return (x > y) - (x < y);
}

/* The leader is the candidate with the lowest sequence; if it vanishes
 * between the listing and the read, the next one is the leader by then. */
static int gather_coordinator(gather_t *g, json_t **out) {
    char *dir = xasprintf("%s/coordinators", g->base);
    char **names = NULL;
    size_t n = 0;
    seq_name_t *cands = NULL;
    *out = json_null();
    int err = baton_zk_children(g->zk, dir, 0, &names, &n);
    if (err == BATON_NOTFOUND) {
        gather_warn(g, dir, "missing (the group layout is incomplete)");
        err = BATON_OK;
        goto out;
    }
    if (err != BATON_OK) {
        gather_fail(g, err, dir);
        goto out;
    }
    cands = xcalloc(n ? n : 1, sizeof(*cands));
    size_t ncands = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t seq = baton_seq_of(names[i]);
        if (seq < 0) {
            char *path = xasprintf("%s/%s", dir, names[i]);
            gather_warn(g, path, "not a candidate node (no sequence suffix); ignored");
            free(path);
            continue;
        }
        cands[ncands++] = (seq_name_t){seq, names[i]};
    }
    qsort(cands, ncands, sizeof(*cands), cmp_seq);
    for (size_t i = 0; i < ncands; i++) {
        char *path = xasprintf("%s/%s", dir, cands[i].name);
        char *data = NULL;
        size_t len = 0;
        struct Stat st;
        err = baton_zk_get(g->zk, path, 0, &data, &len, &st);
        if (err == BATON_NOTFOUND) {
            free(path);
            err = BATON_OK;
            continue;
        }
        if (err != BATON_OK) {
            gather_fail(g, err, path);
            free(path);
            goto out;
        }
        baton_member_t m;
        char why[256];
        json_t *c = json_object();
        if (baton_member_decode(data, len, &m, why, sizeof(why)) == BATON_OK) {
            json_object_set_new(c, "id", str_or_null(m.id));
        } else {
            gather_warn(g, path, "%s", why);
            json_object_set_new(c, "id", json_null());
        }
        json_object_set_new(c, "epoch", json_integer(st.czxid));
        json_object_set_new(c, "node", str_or_null(cands[i].name));
        json_decref(*out);
        *out = c;
        free(data);
        free(path);
        break;
    }
out:
    free(cands);
    baton_zk_strings_free(names, n);
    free(dir);
    return err;
}

/* ---- workers ---------------------------------------------------------- */

static int gather_workers(gather_t *g, json_t *workers) {
    char *dir = xasprintf("%s/workers", g->base);
    char **names = NULL, **paths = NULL;
    size_t n = 0;
    ctl_zkread_t *reads = NULL;
    int err = baton_zk_children(g->zk, dir, 0, &names, &n);
    if (err == BATON_NOTFOUND) {
        gather_warn(g, dir, "missing (the group layout is incomplete)");
        err = BATON_OK;
        goto out;
    }
    if (err != BATON_OK) {
        gather_fail(g, err, dir);
        goto out;
    }
    paths = xcalloc(n ? n : 1, sizeof(char *));
    reads = xcalloc(n ? n : 1, sizeof(*reads));
    for (size_t i = 0; i < n; i++)
        paths[i] = xasprintf("%s/%s", dir, names[i]);
    ctl_zkbatch_get(g->zk, paths, n, reads);
    for (size_t i = 0; i < n; i++) {
        ctl_zkread_t *r = &reads[i];
        if (r->err == BATON_NOTFOUND)
            continue; /* left since the listing */
        if (r->err != BATON_OK) {
            err = gather_fail(g, r->err, paths[i]);
            goto out;
        }
        json_t *w = json_object();
        json_object_set_new(w, "id", str_or_null(names[i]));
        if (baton_id_valid(names[i]) != 0)
            gather_warn(g, paths[i], "not a valid worker id; the coordinator ignores it");
        baton_member_t m;
        char why[256];
        if (baton_member_decode(r->data, r->len, &m, why, sizeof(why)) == BATON_OK) {
            if (strcmp(m.id, names[i]) != 0)
                gather_warn(g, paths[i], "member id '%s' differs from the node name", m.id);
            json_object_set_new(w, "host", str_or_null(m.host));
            json_object_set_new(w, "pid", json_integer(m.pid));
            json_object_set_new(w, "capacity", json_integer(m.capacity));
            json_object_set_new(w, "rack", str_or_null(m.rack));
        } else {
            gather_warn(g, paths[i], "%s", why);
            json_object_set_new(w, "host", json_null());
            json_object_set_new(w, "pid", json_null());
            json_object_set_new(w, "capacity", json_null());
            json_object_set_new(w, "rack", json_null());
        }
        char session[32];
        snprintf(session, sizeof(session), "0x%016llx",
                 (unsigned long long)r->stat.ephemeralOwner);
        json_object_set_new(w, "session", json_string(session));
        if (r->stat.ephemeralOwner == 0)
            gather_warn(g, paths[i],
                        "not an ephemeral node: it will not go away when its worker dies");
        json_array_append_new(workers, w);
    }
out:
    for (size_t i = 0; reads && i < n; i++)
        ctl_zkread_release(&reads[i]);
    free(reads);
    for (size_t i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
    baton_zk_strings_free(names, n);
    free(dir);
    return err;
}

/* ---- assignment ------------------------------------------------------- */

/* Fills *generation and assigned[0..P): each entry points into *anames (the
 * assignment children, which the caller frees) or is NULL. */
static int gather_assignment(gather_t *g, int32_t P, json_t **generation, const char **assigned,
                             char ***anames, size_t *nanames) {
    char *dir = xasprintf("%s/assignment", g->base);
    char **names = NULL, **paths = NULL, *data = NULL;
    size_t n = 0, len = 0;
    ctl_zkread_t *reads = NULL;
    *generation = json_null();
    int err = baton_zk_get(g->zk, dir, 0, &data, &len, NULL);
    if (err == BATON_NOTFOUND) {
        gather_warn(g, dir, "missing (the group layout is incomplete)");
        err = BATON_OK;
        goto out;
    }
    if (err != BATON_OK) {
        gather_fail(g, err, dir);
        goto out;
    }
    if (len > 0) { /* empty until the first publication */
        baton_assignment_meta_t meta;
        char why[256];
        if (baton_assignment_meta_decode(data, len, &meta, why, sizeof(why)) == BATON_OK)
            *generation = json_integer(meta.generation);
        else
            gather_warn(g, dir, "%s", why);
    }

    err = baton_zk_children(g->zk, dir, 0, &names, &n);
    if (err == BATON_NOTFOUND) {
        err = BATON_OK; /* removed since the read above */
        goto out;
    }
    if (err != BATON_OK) {
        gather_fail(g, err, dir);
        goto out;
    }
    paths = xcalloc(n ? n : 1, sizeof(char *));
    reads = xcalloc(n ? n : 1, sizeof(*reads));
    for (size_t i = 0; i < n; i++)
        paths[i] = xasprintf("%s/%s", dir, names[i]);
    ctl_zkbatch_get(g->zk, paths, n, reads);
    for (size_t i = 0; i < n; i++) {
        ctl_zkread_t *r = &reads[i];
        if (r->err == BATON_NOTFOUND)
            continue;
        if (r->err != BATON_OK) {
            err = gather_fail(g, r->err, paths[i]);
            goto out;
        }
        baton_worker_assignment_t wa;
        char why[256];
        if (baton_worker_assignment_decode(r->data, r->len, &wa, why, sizeof(why)) != BATON_OK) {
            gather_warn(g, paths[i], "%s", why);
            continue;
        }
        for (size_t k = 0; k < wa.npartitions; k++) {
            int32_t p = wa.partitions[k];
            if (p >= P)
                gather_warn(g, paths[i], "lists partition %d but the group has %d partitions", p,
                            P);
            else if (assigned[p])
                gather_warn(g, paths[i], "partition %d is also assigned to '%s'", p, assigned[p]);
            else
                assigned[p] = names[i];
        }
        baton_worker_assignment_release(&wa);
    }
out:
    for (size_t i = 0; reads && i < n; i++)
        ctl_zkread_release(&reads[i]);
    free(reads);
    for (size_t i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
    free(data);
    free(dir);
    *anames = names;
    *nanames = n;
    return err;
}

/* ---- partitions ------------------------------------------------------- */

typedef struct {
    int missing;       /* no claims node */
    size_t nclaims;    /* valid claim nodes listed */
    char *lowest;      /* name of the lowest-sequence claim, heap, or NULL */
    char *owner;       /* the owner claim's worker, heap, or NULL */
    int64_t epoch;     /* the owner claim's czxid; valid with have_epoch */
    int have_epoch;
} part_t;

static int is_claim_name(const char *name) {
    return strncmp(name, "claim-", 6) == 0 && baton_seq_of(name) >= 0;
}

/* Counts the claims among names and picks the lowest sequence; with dir,
 * warns about children that are not claims. */
static void claims_pick(gather_t *g, const char *dir, char **names, size_t n, part_t *pt) {
    int64_t low = INT64_MAX;
    const char *lowest = NULL;
    pt->nclaims = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_claim_name(names[i])) {
            if (dir) {
                char *path = xasprintf("%s/%s", dir, names[i]);
                gather_warn(g, path, "not a claim node (expected claim-<session>-<10 digits>)");
                free(path);
            }
            continue;
        }
        pt->nclaims++;
        int64_t s = baton_seq_of(names[i]);
        if (s < low) {
            low = s;
            lowest = names[i];
        }
    }
    free(pt->lowest);
    pt->lowest = lowest ? xstrdup(lowest) : NULL;
}

/* Sets the owner of pt from the owner claim's data and stat. */
static void owner_set(gather_t *g, const char *path, const char *data, size_t len,
                      const struct Stat *st, part_t *pt) {
    baton_claim_t claim;
    char why[256];
    pt->epoch = st->czxid;
    pt->have_epoch = 1;
    if (baton_claim_decode(data, len, &claim, why, sizeof(why)) == BATON_OK)
        pt->owner = xstrdup(claim.worker);
    else
        gather_warn(g, path, "%s", why);
}

/* The owner claim went away between the listing and the read: list and read
 * again, synchronously (this is rare: a handoff in progress). */
static int owner_resolve_sync(gather_t *g, const char *dir, part_t *pt) {
    for (int attempt = 0; attempt < CTL_OWNER_RETRIES; attempt++) {
        char **names = NULL;
        size_t n = 0;
        int err = baton_zk_children(g->zk, dir, 0, &names, &n);
        if (err == BATON_NOTFOUND) {
            pt->missing = 1;
            pt->nclaims = 0;
            free(pt->lowest);
            pt->lowest = NULL;
            return BATON_OK;
        }
        if (err != BATON_OK)
            return gather_fail(g, err, dir);
        claims_pick(g, NULL, names, n, pt);
        baton_zk_strings_free(names, n);
        if (!pt->lowest)
            return BATON_OK;
        char *path = xasprintf("%s/%s", dir, pt->lowest);
        char *data = NULL;
        size_t len = 0;
        struct Stat st;
        err = baton_zk_get(g->zk, path, 0, &data, &len, &st);
        if (err == BATON_OK)
            owner_set(g, path, data, len, &st, pt);
        else if (err != BATON_NOTFOUND)
            gather_fail(g, err, path);
        free(data);
        free(path);
        if (err != BATON_NOTFOUND)
            return err;
    }
    /* Still churning: show the queue as listed, owner unknown. */
    return BATON_OK;
}

static int gather_partitions(gather_t *g, int32_t P, part_t *parts) {
    size_t np = (size_t)P;
    char **dirs = xcalloc(np ? np : 1, sizeof(char *));
    ctl_zkread_t *reads = xcalloc(np ? np : 1, sizeof(*reads));
    char **opaths = NULL;
    size_t *oidx = NULL;
    ctl_zkread_t *oreads = NULL;
    size_t nowned = 0;
    int err = BATON_OK;
    for (size_t p = 0; p < np; p++)
        dirs[p] = xasprintf("%s/partitions/%zu/claims", g->base, p);

    ctl_zkbatch_children(g->zk, dirs, np, reads);
    for (size_t p = 0; p < np; p++) {
        ctl_zkread_t *r = &reads[p];
        if (r->err == BATON_NOTFOUND) {
            parts[p].missing = 1;
            continue;
        }
        if (r->err != BATON_OK) {
            err = gather_fail(g, r->err, dirs[p]);
            goto out;
        }
        claims_pick(g, dirs[p], r->names, r->count, &parts[p]);
        if (parts[p].lowest)
            nowned++;
    }

    /* Second round: the owner claim of every partition that has one. */
    opaths = xcalloc(nowned ? nowned : 1, sizeof(char *));
    oidx = xcalloc(nowned ? nowned : 1, sizeof(size_t));
    oreads = xcalloc(nowned ? nowned : 1, sizeof(*oreads));
    size_t k = 0;
    for (size_t p = 0; p < np; p++)
        if (parts[p].lowest) {
            oidx[k] = p;
            opaths[k++] = xasprintf("%s/%s", dirs[p], parts[p].lowest);
        }
    ctl_zkbatch_get(g->zk, opaths, nowned, oreads);
    for (k = 0; k < nowned; k++) {
        size_t p = oidx[k];
        ctl_zkread_t *r = &oreads[k];
        if (r->err == BATON_OK) {
            owner_set(g, opaths[k], r->data, r->len, &r->stat, &parts[p]);
        } else if (r->err == BATON_NOTFOUND) {
            if ((err = owner_resolve_sync(g, dirs[p], &parts[p])) != BATON_OK)
                goto out;
        } else {
            err = gather_fail(g, r->err, opaths[k]);
            goto out;
        }
    }
    for (size_t p = 0; p < np; p++)
        if (parts[p].missing)
            gather_warn(g, dirs[p], "missing: partition %zu has no claims node", p);
out:
    for (size_t i = 0; i < nowned && opaths; i++) {
        free(opaths[i]);
        ctl_zkread_release(&oreads[i]);
    }
    free(opaths);
    free(oidx);
    free(oreads);
    for (size_t p = 0; p < np; p++) {
        ctl_zkread_release(&reads[p]);
        free(dirs[p]);
    }
    free(reads);
    free(dirs);
    return err;
}

/* ---- the object ------------------------------------------------------- */

int ctl_status_gather(baton_zk_t *zk, const char *root, const char *group, json_t **out,
                      char *errstr, size_t errstr_size) {
    gather_t g = {.zk = zk, .warnings = json_array()};
    char *base = baton_group_base(root, group);
    g.base = base;
    json_t *obj = NULL, *coordinator = NULL, *generation = NULL;
    json_t *workers = json_array();
    const char **assigned = NULL;
    char **anames = NULL;
    size_t nanames = 0;
    part_t *parts = NULL;
    int32_t P = 0;

    baton_config_t cfg;
    char why[512];
    int err = baton_group_config_read(zk, base, 0, &cfg, why, sizeof(why));
    if (err == BATON_NOTFOUND) {
        baton_seterr(errstr, errstr_size, err,
                     "group %s is not initialised: '%s/config' does not exist (run '%s init')",
                     group, base, CTL_PROG);
        goto out;
    }
    if (err != BATON_OK) {
        baton_seterr(errstr, errstr_size, err, "cannot read the group config: %s", why);
        goto out;
    }
    baton_strategy_t strategy;
    if (baton_strategy_parse(cfg.strategy, &strategy) != 0) {
        char *path = xasprintf("%s/config", base);
        gather_warn(&g, path, "unknown strategy '%s'", cfg.strategy);
        free(path);
    }
    P = cfg.partitions;

    if ((err = gather_coordinator(&g, &coordinator)) != BATON_OK)
        goto fail;
    if ((err = gather_workers(&g, workers)) != BATON_OK)
        goto fail;
    assigned = xcalloc((size_t)P, sizeof(char *));
    if ((err = gather_assignment(&g, P, &generation, assigned, &anames, &nanames)) != BATON_OK)
        goto fail;
    parts = xcalloc((size_t)P, sizeof(*parts));
    if ((err = gather_partitions(&g, P, parts)) != BATON_OK)
        goto fail;

    json_t *partitions = json_array();
    int64_t active = 0, handoff = 0, unowned = 0;
    for (int32_t p = 0; p < P; p++) {
        part_t *pt = &parts[p];
        const char *state;
        if (pt->nclaims == 0) {
            state = "unowned";
            unowned++;
        } else if (pt->owner && assigned[p] && strcmp(pt->owner, assigned[p]) == 0) {
            state = "active";
            active++;
        } else {
            state = "handoff";
            handoff++;
        }
        json_t *po = json_object();
        json_object_set_new(po, "partition", json_integer(p));
        json_object_set_new(po, "assigned", str_or_null(assigned[p]));
        json_object_set_new(po, "owner", pt->nclaims ? str_or_null(pt->owner) : json_null());
        json_object_set_new(po, "epoch",
                            pt->nclaims && pt->have_epoch ? json_integer(pt->epoch) : json_null());
        json_object_set_new(po, "state", json_string(state));
        json_object_set_new(po, "claims", json_integer((json_int_t)pt->nclaims));
        json_array_append_new(partitions, po);
    }

    obj = json_object();
    json_object_set_new(obj, "group", json_string(group));
    json_t *config = json_object();
    json_object_set_new(config, "topic", str_or_null(cfg.topic));
    json_object_set_new(config, "partitions", json_integer(cfg.partitions));
    json_object_set_new(config, "strategy", str_or_null(cfg.strategy));
    json_object_set_new(obj, "config", config);
    json_object_set_new(obj, "generation", generation);
    json_object_set_new(obj, "coordinator", coordinator);
    generation = coordinator = NULL;
    json_t *summary = json_object();
    json_object_set_new(summary, "workers", json_integer((json_int_t)json_array_size(workers)));
    json_object_set_new(summary, "active", json_integer(active));
    json_object_set_new(summary, "handoff", json_integer(handoff));
    json_object_set_new(summary, "unowned", json_integer(unowned));
    json_object_set_new(obj, "summary", summary);
    json_object_set_new(obj, "workers", workers);
    json_object_set_new(obj, "partitions", partitions);
    json_object_set_new(obj, "warnings", g.warnings);
    workers = g.warnings = NULL;
    *out = obj;
    err = BATON_OK;
    goto out;
fail:
    baton_seterr(errstr, errstr_size, err, "%s", g.errstr);
out:
    for (int32_t p = 0; parts && p < P; p++) {
        free(parts[p].lowest);
        free(parts[p].owner);
    }
    free(parts);
    free(assigned);
    baton_zk_strings_free(anames, nanames);
    json_decref(generation);
    json_decref(coordinator);
    json_decref(workers);
    json_decref(g.warnings);
    free(base);
    return err;
}

/* ---- rendering -------------------------------------------------------- */

#define CTL_ID_WIDTH 24
#define CTL_HOST_WIDTH 20
#define CTL_RACK_WIDTH 12
#define CTL_VALUE_WIDTH 72

static const char *jstr(const json_t *o, const char *key) {
    return json_string_value(json_object_get(o, key));
}

/* Text of a string-or-null field, or of an integer-or-null field; "-" for
 * null. buf holds the result when it must be formatted. */
static const char *jtext(const json_t *o, const char *key, char *buf, size_t bufsz) {
    const json_t *v = json_object_get(o, key);
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, bufsz, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return buf;
    }
    return "-";
}

/* s cut to width columns, ending in ".." when cut. */
static const char *fit(const char *s, int width, char *buf, size_t bufsz) {
    if ((int)strlen(s) <= width)
        return s;
    snprintf(buf, bufsz, "%.*s..", width - 2, s);
    return buf;
}

/* The width of a column: the widest of its header and values, capped. */
static int col_width(const json_t *rows, const char *key, const char *header, int cap) {
    int w = (int)strlen(header);
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        char buf[32];
        int len = (int)strlen(jtext(row, key, buf, sizeof(buf)));
        if (len > w)
            w = len;
    }
    return w < cap ? w : cap;
}

static void print_summary(const json_t *st, FILE *f) {
    const json_t *cfg = json_object_get(st, "config");
    const json_t *coord = json_object_get(st, "coordinator");
    const json_t *sum = json_object_get(st, "summary");
    char b1[CTL_VALUE_WIDTH + 8], b2[32], b3[32];
    const char *group = jstr(st, "group");
    fprintf(f, "group:        %s\n", fit(group ? group : "-", CTL_VALUE_WIDTH, b1, sizeof(b1)));
    fprintf(f, "topic:        %s\n",
            fit(jtext(cfg, "topic", b2, sizeof(b2)), CTL_VALUE_WIDTH, b1, sizeof(b1)));
    fprintf(f, "partitions:   %s (strategy %s)\n", jtext(cfg, "partitions", b2, sizeof(b2)),
            jtext(cfg, "strategy", b3, sizeof(b3)));
    if (json_is_object(coord))
        fprintf(f, "coordinator:  %s (epoch %s)\n",
                fit(jtext(coord, "id", b2, sizeof(b2)), CTL_VALUE_WIDTH - 30, b1, sizeof(b1)),
                jtext(coord, "epoch", b3, sizeof(b3)));
    else
        fprintf(f, "coordinator:  none\n");
    const json_t *gen = json_object_get(st, "generation");
    fprintf(f, "generation:   %s\n",
            json_is_integer(gen) ? jtext(st, "generation", b2, sizeof(b2))
                                 : "none (no assignment published)");
    fprintf(f, "workers:      %s\n", jtext(sum, "workers", b2, sizeof(b2)));
    fprintf(f, "states:       %s active, ", jtext(sum, "active", b2, sizeof(b2)));
    fprintf(f, "%s handoff, ", jtext(sum, "handoff", b2, sizeof(b2)));
    fprintf(f, "%s unowned\n", jtext(sum, "unowned", b2, sizeof(b2)));
    size_t nwarn = json_array_size(json_object_get(st, "warnings"));
    if (nwarn)
        fprintf(f, "warnings:     %zu (on stderr)\n", nwarn);
}

static void print_workers(const json_t *st, FILE *f) {
    const json_t *rows = json_object_get(st, "workers");
    if (json_array_size(rows) == 0) {
        fprintf(f, "no workers\n");
        return;
    }
    int wid = col_width(rows, "id", "WORKER", CTL_ID_WIDTH);
    int whost = col_width(rows, "host", "HOST", CTL_HOST_WIDTH);
    int wpid = col_width(rows, "pid", "PID", 19);
    int wcap = col_width(rows, "capacity", "CAP", 7);
    int wrack = col_width(rows, "rack", "RACK", CTL_RACK_WIDTH);
    fprintf(f, "%-*s  %-*s  %*s  %*s  %-*s  %s\n", wid, "WORKER", whost, "HOST", wpid, "PID",
            wcap, "CAP", wrack, "RACK", "SESSION");
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        char a[160], b[160], c[160], d[32], e[32], t[32], u[32], v[32], w[32];
        fprintf(f, "%-*s  %-*s  %*s  %*s  %-*s  %s\n", wid,
                fit(jtext(row, "id", t, sizeof(t)), wid, a, sizeof(a)), whost,
                fit(jtext(row, "host", u, sizeof(u)), whost, b, sizeof(b)), wpid,
                jtext(row, "pid", d, sizeof(d)), wcap, jtext(row, "capacity", e, sizeof(e)), wrack,
                fit(jtext(row, "rack", v, sizeof(v)), wrack, c, sizeof(c)),
                jtext(row, "session", w, sizeof(w)));
    }
}

static void print_partitions(const json_t *st, FILE *f) {
    const json_t *rows = json_object_get(st, "partitions");
    if (json_array_size(rows) == 0)
        return;
    int wpart = col_width(rows, "partition", "PARTITION", 9);
    int wasg = col_width(rows, "assigned", "ASSIGNED", CTL_ID_WIDTH);
    int wown = col_width(rows, "owner", "OWNER", CTL_ID_WIDTH);
    int wep = col_width(rows, "epoch", "EPOCH", 20);
    int wstate = col_width(rows, "state", "STATE", 7);
    fprintf(f, "%*s  %-*s  %-*s  %*s  %-*s  %s\n", wpart, "PARTITION", wasg, "ASSIGNED", wown,
            "OWNER", wep, "EPOCH", wstate, "STATE", "CLAIMS");
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        char a[160], b[160], p[32], s[32], t[32], e[32], c[32], x[32];
        fprintf(f, "%*s  %-*s  %-*s  %*s  %-*s  %s\n", wpart,
                jtext(row, "partition", p, sizeof(p)), wasg,
                fit(jtext(row, "assigned", s, sizeof(s)), wasg, a, sizeof(a)), wown,
                fit(jtext(row, "owner", t, sizeof(t)), wown, b, sizeof(b)), wep,
                jtext(row, "epoch", e, sizeof(e)), wstate, jtext(row, "state", x, sizeof(x)),
                jtext(row, "claims", c, sizeof(c)));
    }
}

void ctl_status_print_human(const json_t *status, FILE *f) {
    print_summary(status, f);
    fputc('\n', f);
    print_workers(status, f);
    fputc('\n', f);
    print_partitions(status, f);
}

void ctl_status_print_json(const json_t *status, FILE *f) {
    json_dumpf(status, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
}

void ctl_status_print_warnings(const json_t *status) {
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(status, "warnings"), i, w) {
        const char *path = jstr(w, "path"), *problem = jstr(w, "problem");
        ctl_warn(path ? path : "?", problem ? problem : "?");
    }
}

/* ---- the command ------------------------------------------------------ */

enum { OPT_JSON = 1 };

void ctl_status_usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G status [--json]\n"
            "\n"
            "Shows the group's coordinator (leader and its epoch), the assignment\n"
            "generation, the live workers, and for every partition its assigned worker,\n"
            "its owner (the worker holding the lowest claim), the owner's epoch and a\n"
            "state: active (owner = assigned), handoff (owner differs, or claims queued\n"
            "without an owner) or unowned (no claim). Reads only; leaves no watches.\n"
            "\n"
            "Malformed znode data is shown as '-' (null) with a warning on stderr naming\n"
            "the znode; the exit status is still 0. An uninitialised group or an\n"
            "unreadable config exits 1.\n"
            "\n"
            "  --json    print one JSON object instead of tables:\n"
            "            {\"group\", \"config\": {\"topic\", \"partitions\", \"strategy\"},\n"
            "             \"generation\", \"coordinator\": {\"id\", \"epoch\", \"node\"} | null,\n"
            "             \"summary\": {\"workers\", \"active\", \"handoff\", \"unowned\"},\n"
            "             \"workers\": [{\"id\", \"host\", \"pid\", \"capacity\", \"rack\",\n"
            "                          \"session\"}],\n"
            "             \"partitions\": [{\"partition\", \"assigned\", \"owner\", \"epoch\",\n"
            "                             \"state\", \"claims\"}],\n"
            "             \"warnings\": [{\"path\", \"problem\"}]}\n"
            "            with null where there is none.\n"
            "\n"
            "examples:\n"
            "  %s --zk 127.0.0.1:2181 --group orders status\n"
            "  %s --zk 127.0.0.1:2181 --group orders status --json\n",
            CTL_PROG, CTL_PROG, CTL_PROG);
}

int ctl_cmd_status(ctl_ctx_t *ctx, int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, CTL_OPT_HELP},
        CTL_GLOBAL_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int as_json = 0, opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ctl_global_opt(ctx, opt, optarg))
            continue;
        switch (opt) {
        case OPT_JSON: as_json = 1; break;
        case CTL_OPT_HELP: ctl_status_usage(stdout); return BATON_EXIT_OK;
        default: ctl_bad_option(argc, argv);
        }
    }
    if (optind < argc)
        baton_usage_error(CTL_PROG, "status: unexpected argument '%s'", argv[optind]);
    ctl_ctx_check(ctx);

    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk)
        return BATON_EXIT_FAILURE;
    json_t *st = NULL;
    char errstr[1024];
    int err = ctl_status_gather(zk, ctx->root, ctx->group, &st, errstr, sizeof(errstr));
    baton_zk_destroy(zk);
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        return BATON_EXIT_FAILURE;
    }
    if (as_json)
        ctl_status_print_json(st, stdout);
    else
        ctl_status_print_human(st, stdout);
    fflush(stdout);
    ctl_status_print_warnings(st);
    json_decref(st);
    return BATON_EXIT_OK;
}
