/* ctl_status.c: `batonctl status`: gathers a group's coordinator, workers,
 * assignment and partition owners into one JSON object (see ctl_status.h) and
 * renders it for people or for programs. */
#include "ctl_status.h"

#include "assignment.h"
#include "baton_codec.h"
#include "baton_err.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_opts.h"
#include "baton_util.h"
#include "ctl.h"
#include "ctl_claims.h"
#include "ctl_keys.h"
#include "baton_zkbatch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

typedef struct {
    baton_zk_t *zk;
    const char *base;
    json_t *warnings;
    int64_t now_ms; /* wall clock of the gather, for ages */
    char errstr[512];
} gather_t;

/* ---- small helpers ---------------------------------------------------- */

/* A JSON string, or null for NULL, "" or text jansson refuses (not UTF-8). */
static json_t *str_or_null(const char *s) {
    json_t *j = s && s[0] ? json_string(s) : NULL;
    return j ? j : json_null();
}

/* A warning about path, kept in the status's "warnings". */
#define gather_warn(g, path, ...) ctl_warning_add((g)->warnings, (path), __VA_ARGS__)

static int64_t age_ms(const gather_t *g, int64_t since_ms) {
    return g->now_ms > since_ms ? g->now_ms - since_ms : 0;
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
    char *dir = baton_layout_coordinators(g->base);
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
            char *path = baton_layout_child(dir, names[i]);
            gather_warn(g, path, "not a candidate node (no sequence suffix); ignored");
            free(path);
            continue;
        }
        cands[ncands++] = (seq_name_t){seq, names[i]};
    }
    qsort(cands, ncands, sizeof(*cands), cmp_seq);
    for (size_t i = 0; i < ncands; i++) {
        char *path = baton_layout_child(dir, cands[i].name);
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
    char *dir = baton_layout_workers(g->base);
    baton_zkdir_t d;
    int err = baton_zkdir_read(g->zk, dir, &d);
    char **names = d.names, **paths = d.paths;
    size_t n = d.n;
    baton_zkread_t *reads = d.reads;
    if (err == BATON_NOTFOUND) {
        gather_warn(g, dir, "missing (the group layout is incomplete)");
        err = BATON_OK;
        goto out;
    }
    if (err != BATON_OK) {
        gather_fail(g, err, dir);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        baton_zkread_t *r = &reads[i];
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
        snprintf(session, sizeof(session), "0x%016llx", (unsigned long long)r->stat.ephemeralOwner);
        json_object_set_new(w, "session", json_string(session));
        /* The member node's ctime is when this session registered. Ages
         * compare ZooKeeper's clock with ours: keep them in sync (NTP). */
        json_object_set_new(w, "joined_ms", json_integer(r->stat.ctime));
        json_object_set_new(w, "session_age_ms", json_integer(age_ms(g, r->stat.ctime)));
        json_object_set_new(w, "owned", json_integer(0));
        json_object_set_new(w, "assigned", json_integer(0));
        json_object_set_new(w, "draining", json_false());
        if (r->stat.ephemeralOwner == 0)
            gather_warn(g, paths[i],
                        "not an ephemeral node: it will not go away when its worker dies");
        json_array_append_new(workers, w);
    }
out:
    baton_zkdir_release(&d);
    free(dir);
    return err;
}

/* ---- assignment ------------------------------------------------------- */

/* Fills *generation, assigned[row] for every row of t (partitions and
 * keys) and standby[p] for the partitions (the worker whose node names it
 * as standby): each entry points into *anames (the assignment children,
 * which the caller frees) or is NULL. */
static int gather_assignment(gather_t *g, const baton_res_table_t *t, json_t **generation,
                             const char **assigned, const char **standby, char ***anames,
                             size_t *nanames) {
    int32_t P = t->npartitions;
    char *dir = baton_layout_assignment(g->base);
    char *data = NULL;
    size_t len = 0;
    baton_zkdir_t d = {0};
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

    err = baton_zkdir_read(g->zk, dir, &d);
    char **names = d.names, **paths = d.paths;
    baton_zkread_t *reads = d.reads;
    if (err == BATON_NOTFOUND) {
        err = BATON_OK; /* removed since the read above */
        goto out;
    }
    if (err != BATON_OK) {
        gather_fail(g, err, dir);
        goto out;
    }
    for (size_t i = 0; i < d.n; i++) {
        baton_zkread_t *r = &reads[i];
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
        for (size_t k = 0; k < wa.nkeys; k++) {
            /* a key removed since, or listed twice: the first node wins */
            long row = baton_res_table_find_key(t, wa.keys[k], strlen(wa.keys[k]));
            if (row >= 0 && !assigned[row])
                assigned[row] = names[i];
        }
        for (size_t s = 0; s < wa.nstandby; s++)
            for (size_t k = 0; k < wa.standby[s].npartitions; k++)
                if (wa.standby[s].partitions[k] < P)
                    standby[wa.standby[s].partitions[k]] = names[i];
        baton_worker_assignment_release(&wa);
    }
out:
    /* The names stay with the caller: assigned[] points into them. */
    *anames = d.names;
    *nanames = d.n;
    d.names = NULL;
    baton_zkdir_release(&d);
    free(data);
    free(dir);
    return err;
}

/* ---- pins and drains -------------------------------------------------- */

/* Operator intents kept beside the assignment (written by `batonctl pin` and
 * `drain`): <base>/pins/<partition> {"worker": W} and <base>/drains/<id>.
 * A missing directory means none (a group made before they existed). */

/* Fills *drains with the drained worker ids (a JSON array of strings). */
static int gather_drains(gather_t *g, json_t *drains) {
    char *dir = baton_layout_drains(g->base);
    char **names = NULL;
    size_t n = 0;
    int err = baton_zk_children(g->zk, dir, 0, &names, &n);
    if (err == BATON_NOTFOUND)
        err = BATON_OK;
    else if (err != BATON_OK)
        gather_fail(g, err, dir);
    else
        for (size_t i = 0; i < n; i++)
            json_array_append_new(drains, json_string(names[i]));
    baton_zk_strings_free(names, n);
    free(dir);
    return err;
}

/* Decodes a pin's {"worker": W}; returns a heap copy of W or NULL. */
static char *pin_decode(const char *data, size_t len, char *why, size_t whylen) {
    json_error_t jerr;
    json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *w = json_string_value(json_object_get(j, "worker"));
    char *out = NULL;
    if (!j)
        snprintf(why, whylen, "pin: not JSON: %s", jerr.text);
    else if (!w || baton_id_valid(w) != 0)
        snprintf(why, whylen, "pin: \"worker\" is missing or not a valid worker id");
    else
        out = xstrdup(w);
    json_decref(j);
    return out;
}

static int gather_pins(gather_t *g, int32_t P, char **pinned) {
    char *dir = baton_layout_pins(g->base);
    baton_zkdir_t d;
    int err = baton_zkdir_read(g->zk, dir, &d);
    char **names = d.names, **paths = d.paths;
    size_t n = d.n;
    baton_zkread_t *reads = d.reads;
    if (err == BATON_NOTFOUND) {
        err = BATON_OK;
        goto out;
    }
    if (err != BATON_OK) {
        gather_fail(g, err, dir);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t p;
        if (reads[i].err == BATON_NOTFOUND)
            continue;
        if (reads[i].err != BATON_OK) {
            err = gather_fail(g, reads[i].err, paths[i]);
            goto out;
        }
        if (baton_parse_i64(names[i], 0, BATON_PARTITIONS_MAX - 1, &p) != 0 || p >= P) {
            gather_warn(g, paths[i], "not a partition of this group (0..%d)", P - 1);
            continue;
        }
        char why[256];
        char *w = pin_decode(reads[i].data, reads[i].len, why, sizeof(why));
        if (!w) {
            gather_warn(g, paths[i], "%s", why);
            continue;
        }
        free(pinned[p]);
        pinned[p] = w;
    }
out:
    baton_zkdir_release(&d);
    free(dir);
    return err;
}

/* ---- the object ------------------------------------------------------- */

int ctl_status_gather(baton_zk_t *zk, const char *root, const char *group, json_t **out,
                      char *errstr, size_t errstr_size) {
    gather_t g = {.zk = zk, .warnings = json_array(), .now_ms = baton_wall_ms()};
    char *base = baton_group_base(root, group);
    g.base = base;
    json_t *obj = NULL, *coordinator = NULL, *generation = NULL;
    json_t *workers = json_array();
    json_t *drains = json_array();
    const char **assigned = NULL, **standby = NULL;
    char **anames = NULL;
    size_t nanames = 0;
    baton_res_table_t t = {0};
    ctl_queue_t *q = NULL;
    char **pinned = NULL, **keynames = NULL;
    size_t nkeynames = 0;
    int32_t P = 0;

    baton_config_t cfg;
    int err = ctl_config_read(zk, group, base, &cfg, errstr, errstr_size);
    if (err != BATON_OK)
        goto out;
    baton_strategy_t strategy;
    if (baton_strategy_parse(cfg.strategy, &strategy) != 0) {
        char *path = baton_layout_config(base);
        gather_warn(&g, path, "unknown strategy '%s'", cfg.strategy);
        free(path);
    }
    P = cfg.partitions;

    if ((err = gather_coordinator(&g, &coordinator)) != BATON_OK)
        goto fail;
    if ((err = gather_workers(&g, workers)) != BATON_OK)
        goto fail;
    /* Partitions and keys: rows of one table, read in one pass. */
    baton_res_table_init(&t, base, P);
    baton_bad_keys_t bad;
    err = baton_group_keys(zk, base, 0, &keynames, &nkeynames, &bad, g.errstr, sizeof(g.errstr));
    ctl_keys_warn_ignored(g.warnings, base, &bad);
    baton_bad_keys_free(&bad);
    if (err != BATON_OK)
        goto fail;
    for (size_t k = 0; k < nkeynames; k++)
        baton_res_table_add_key(&t, keynames[k]);
    assigned = xcalloc(t.n + 1, sizeof(char *));
    standby = xcalloc((size_t)P + 1, sizeof(char *));
    if ((err = gather_assignment(&g, &t, &generation, assigned, standby, &anames, &nanames)) !=
        BATON_OK)
        goto fail;
    q = xcalloc(t.n + 1, sizeof(*q));
    if ((err = ctl_claims_gather(zk, &t, q, g.warnings, g.errstr, sizeof(g.errstr))) != BATON_OK)
        goto fail;
    pinned = xcalloc((size_t)P + 1, sizeof(char *));
    if ((err = gather_pins(&g, P, pinned)) != BATON_OK)
        goto fail;
    if ((err = gather_drains(&g, drains)) != BATON_OK)
        goto fail;
    json_t *keys = ctl_keys_rows(zk, &t, q, assigned, g.now_ms);

    json_t *partitions = json_array();
    int64_t active = 0, handoff = 0, unowned = 0, npinned = 0;
    for (int32_t p = 0; p < P; p++) {
        const ctl_queue_t *pt = &q[p];
        const char *state = ctl_queue_state(pt, assigned[p]);
        active += strcmp(state, "active") == 0;
        handoff += strcmp(state, "handoff") == 0;
        unowned += strcmp(state, "unowned") == 0;
        json_t *po = json_object();
        json_object_set_new(po, "partition", json_integer(p));
        json_object_set_new(po, "assigned", str_or_null(assigned[p]));
        json_object_set_new(po, "owner", pt->nclaims ? str_or_null(pt->owner) : json_null());
        json_object_set_new(po, "epoch",
                            pt->nclaims && pt->have_epoch ? json_integer(pt->epoch) : json_null());
        json_object_set_new(po, "state", json_string(state));
        json_object_set_new(po, "claims", json_integer((json_int_t)pt->nclaims));
        /* In its state since the owner claim's creation (for a handoff, the
         * claim that still holds the partition); unowned: unknown. */
        int timed = pt->nclaims && pt->have_epoch;
        json_object_set_new(po, "since_ms", timed ? json_integer(pt->ctime) : json_null());
        json_object_set_new(po, "state_age_ms",
                            timed ? json_integer(age_ms(&g, pt->ctime)) : json_null());
        json_object_set_new(po, "pinned", str_or_null(pinned[p]));
        npinned += pinned[p] != NULL;
        /* Filled by ctl_status_add_lag when Kafka and the sink are given. */
        json_object_set_new(po, "next_offset", json_null());
        json_object_set_new(po, "high_watermark", json_null());
        json_object_set_new(po, "lag", json_null());
        json_object_set_new(po, "standby", str_or_null(standby[p]));
        json_array_append_new(partitions, po);
    }
    /* Per worker: partitions it owns and is assigned, and whether it drains. */
    int64_t draining = 0;
    size_t wi;
    json_t *wrow;
    json_array_foreach(workers, wi, wrow) {
        const char *id = json_string_value(json_object_get(wrow, "id"));
        json_int_t owned_n = 0, assigned_n = 0;
        for (int32_t p = 0; id && p < P; p++) {
            owned_n += q[p].nclaims && q[p].owner && strcmp(q[p].owner, id) == 0;
            assigned_n += assigned[p] && strcmp(assigned[p], id) == 0;
        }
        json_object_set_new(wrow, "owned", json_integer(owned_n));
        json_object_set_new(wrow, "assigned", json_integer(assigned_n));
        int d = 0;
        size_t di;
        json_t *drow;
        json_array_foreach(drains, di, drow) d |= id && strcmp(json_string_value(drow), id) == 0;
        json_object_set_new(wrow, "draining", json_boolean(d));
        draining += d;
    }

    obj = json_object();
    json_object_set_new(obj, "group", json_string(group));
    json_t *config = json_object();
    json_object_set_new(config, "topic", str_or_null(cfg.topic));
    json_object_set_new(config, "partitions", json_integer(cfg.partitions));
    json_object_set_new(config, "strategy", str_or_null(cfg.strategy));
    json_object_set_new(config, "group_uuid", str_or_null(cfg.group_uuid));
    json_object_set_new(obj, "config", config);
    json_object_set_new(obj, "generation", generation);
    json_object_set_new(obj, "coordinator", coordinator);
    generation = coordinator = NULL;
    json_t *summary = json_object();
    json_object_set_new(summary, "workers", json_integer((json_int_t)json_array_size(workers)));
    json_object_set_new(summary, "active", json_integer(active));
    json_object_set_new(summary, "handoff", json_integer(handoff));
    json_object_set_new(summary, "unowned", json_integer(unowned));
    json_object_set_new(summary, "draining", json_integer(draining));
    json_object_set_new(summary, "pinned", json_integer(npinned));
    json_object_set_new(summary, "lag", json_null());
    json_object_set_new(obj, "summary", summary);
    json_object_set_new(obj, "workers", workers);
    json_object_set_new(obj, "partitions", partitions);
    json_object_set_new(obj, "drains", drains);
    drains = NULL;
    json_object_set_new(obj, "keys", keys);
    json_object_set_new(obj, "time_ms", json_integer(g.now_ms));
    json_object_set_new(obj, "warnings", g.warnings);
    workers = g.warnings = NULL;
    *out = obj;
    err = BATON_OK;
    goto out;
fail:
    baton_seterr(errstr, errstr_size, err, "%s", g.errstr);
out:
    ctl_queues_release(q, t.n);
    free(q);
    for (int32_t p = 0; pinned && p < P; p++)
        free(pinned[p]);
    free(pinned);
    baton_res_table_free(&t);
    baton_zk_strings_free(keynames, nkeynames);
    free(assigned);
    free(standby);
    baton_zk_strings_free(anames, nanames);
    json_decref(generation);
    json_decref(coordinator);
    json_decref(workers);
    json_decref(drains);
    json_decref(g.warnings);
    free(base);
    return err;
}

/* ---- filters ---------------------------------------------------------- */

static int partition_wanted(const ctl_view_opts_t *o, json_int_t p) {
    if (!o->partitions)
        return 1;
    for (size_t i = 0; i < o->npartitions; i++)
        if (o->partitions[i] == p)
            return 1;
    return 0;
}

static int str_is(const json_t *v, const char *s) {
    return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

int ctl_status_filter(json_t *status, const ctl_view_opts_t *o, char *errstr, size_t n) {
    json_t *parts = json_object_get(status, "partitions");
    json_t *workers = json_object_get(status, "workers");
    json_int_t P =
        json_integer_value(json_object_get(json_object_get(status, "config"), "partitions"));
    for (size_t i = 0; o->partitions && i < o->npartitions; i++)
        if (o->partitions[i] >= P)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "--partition %d: group %s has %" JSON_INTEGER_FORMAT
                                " partitions (0-%" JSON_INTEGER_FORMAT ")",
                                o->partitions[i],
                                json_string_value(json_object_get(status, "group")), P, P - 1);
    /* Whole-group facts for the summary, before the filter removes rows. */
    json_t *summary = json_object_get(status, "summary");
    json_t *na = json_object(), *handoff = json_array(), *unowned = json_array();
    json_t *worst = NULL;
    size_t k;
    json_t *row;
    json_array_foreach(parts, k, row) {
        json_t *p = json_object_get(row, "partition");
        const json_t *lag = json_object_get(row, "lag");
        if (str_is(json_object_get(row, "state"), "handoff"))
            json_array_append(handoff, p);
        else if (str_is(json_object_get(row, "state"), "unowned"))
            json_array_append(unowned, p);
        if (json_is_integer(lag) &&
            (!worst || json_integer_value(lag) > json_integer_value(json_object_get(worst, "lag"))))
            worst = row;
    }
    json_object_set_new(na, "handoff", handoff);
    json_object_set_new(na, "unowned", unowned);
    json_object_set_new(summary, "not_active", na);
    if (worst) {
        json_t *w = json_object();
        json_object_set(w, "partition", json_object_get(worst, "partition"));
        json_object_set(w, "lag", json_object_get(worst, "lag"));
        json_object_set_new(summary, "max_lag", w);
    } else {
        json_object_set_new(summary, "max_lag", json_null());
    }

    int known = !o->worker;
    for (size_t i = json_array_size(parts); i-- > 0;) {
        json_t *row = json_array_get(parts, i);
        json_int_t p = json_integer_value(json_object_get(row, "partition"));
        int mine = !o->worker || str_is(json_object_get(row, "owner"), o->worker) ||
                   str_is(json_object_get(row, "assigned"), o->worker) ||
                   str_is(json_object_get(row, "pinned"), o->worker);
        known |= o->worker && mine;
        if (!partition_wanted(o, p) || !mine)
            json_array_remove(parts, i);
    }
    if (o->worker) {
        for (size_t i = json_array_size(workers); i-- > 0;) {
            if (str_is(json_object_get(json_array_get(workers, i), "id"), o->worker))
                known = 1;
            else
                json_array_remove(workers, i);
        }
        if (!known)
            return baton_seterr(errstr, n, BATON_NOTFOUND,
                                "--worker '%s': no such worker in group %s (not live, "
                                "assigned, owning or pinned anything)",
                                o->worker, json_string_value(json_object_get(status, "group")));
    }
    return BATON_OK;
}

/* ---- rendering -------------------------------------------------------- */

#define CTL_LINE_WIDTH 100
#define CTL_VALUE_WIDTH 72

static const char *jstr(const json_t *o, const char *key) {
    return json_string_value(json_object_get(o, key));
}

const char *ctl_printable(const char *s, char *buf, size_t bufsz) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p && *p >= 0x20 && *p < 0x7f)
        p++;
    if (!*p || bufsz == 0)
        return s; /* printable ASCII: as it is */
    size_t i = 0, n = strlen(s);
    for (const unsigned char *q = (const unsigned char *)s, *end = q + n;
         q < end && i + 1 < bufsz;) {
        size_t len;
        if (baton_text_unit(q, (size_t)(end - q), &len) != BATON_TEXT_SHOWN) {
            buf[i++] = '?'; /* one '?' per bad byte, or per character */
            q += len;
        } else if (i + len < bufsz) {
            memcpy(buf + i, q, len);
            i += len;
            q += len;
        } else {
            break; /* a character that does not fit whole is left out */
        }
    }
    buf[i] = 0;
    return buf;
}

char *ctl_escaped(const char *s) {
    char *out = xmalloc(4 * strlen(s) + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\')
            o += sprintf(o, "\\\\");
        else if (*p < 0x20 || *p > 0x7e)
            o += sprintf(o, "\\x%02x", *p);
        else
            *o++ = (char)*p;
    }
    *o = 0;
    return out;
}

/* Text of a string-or-null field, or of an integer-or-null field; "-" for
 * null. buf holds the result when it must be formatted. */
static const char *jtext(const json_t *o, const char *key, char *buf, size_t bufsz) {
    const json_t *v = json_object_get(o, key);
    if (json_is_string(v))
        return ctl_printable(json_string_value(v), buf, bufsz);
    if (json_is_integer(v)) {
        snprintf(buf, bufsz, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return buf;
    }
    if (json_is_boolean(v))
        return json_is_true(v) ? "yes" : "no";
    return "-";
}

/* A duration for people: 850ms, 42s, 12m03s, 5h07m, 3d04h. */
static const char *fmt_age(json_int_t ms, char *buf, size_t n) {
    json_int_t s = ms / 1000;
    if (ms < 1000)
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT "ms", ms);
    else if (s < 60)
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT "s", s);
    else if (s < 3600)
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT "m%02" JSON_INTEGER_FORMAT "s", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT "h%02" JSON_INTEGER_FORMAT "m", s / 3600,
                 s / 60 % 60);
    else
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT "d%02" JSON_INTEGER_FORMAT "h", s / 86400,
                 s / 3600 % 24);
    return buf;
}

static const char *cell_age(const json_t *row, const char *key, char *buf, size_t n) {
    const json_t *v = json_object_get(row, key);
    return json_is_integer(v) ? fmt_age(json_integer_value(v), buf, n) : "-";
}

const char *ctl_cell_age(const json_t *row, const char *key, char *buf, size_t n) {
    return cell_age(row, key, buf, n);
}

static const char *cell_text(const json_t *row, const char *key, char *buf, size_t n) {
    return jtext(row, key, buf, n);
}

typedef ctl_col_t col_t;

#define CTL_CELL 160

const char *ctl_cell_text(const json_t *row, const char *key, char *buf, size_t n) {
    return jtext(row, key, buf, n);
}

static int table_wide;

void ctl_table_set_wide(int wide) { table_wide = wide; }

/* The width a table must fit, or 0 for none. */
static int table_width(FILE *f) {
    if (table_wide)
        return 0;
    const char *env = getenv("COLUMNS");
    if (env && env[0]) {
        char *end = NULL;
        long v = strtol(env, &end, 10);
        if (!*end && v >= 20 && v <= 100000)
            return (int)v;
    }
    struct winsize ws;
    if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 0;
}

/* v in at most w characters: whole, or its head and tail around "..". */
static const char *cut_cell(const char *v, int w, char *out, size_t n) {
    int len = (int)strlen(v);
    if (len <= w)
        return v;
    int keep = w > 2 ? w - 2 : 0, head = (keep + 1) / 2;
    snprintf(out, n, "%.*s..%s", head, v, v + len - (keep - head));
    return out;
}

typedef struct {
    char cut[CTL_CELL];
    char full[CTL_CELL];
} cut_pair_t;

static int cut_pair_cmp(const void *a, const void *b) {
    const cut_pair_t *x = a, *y = b;
    int c = strcmp(x->cut, y->cut);
    return c ? c : strcmp(x->full, y->full);
}

/* 1 if column c cut to width w still tells every two different values
 * apart. */
static int cuts_distinct(const json_t *rows, const ctl_col_t *col, int w) {
    size_t nrows = json_array_size(rows);
    cut_pair_t *p = xcalloc(nrows + 1, sizeof(*p));
    for (size_t r = 0; r < nrows; r++) {
        char buf[CTL_CELL];
        const char *v = col->fn(json_array_get(rows, r), col->key, buf, sizeof(buf));
        snprintf(p[r].full, sizeof(p[r].full), "%s", v);
        snprintf(p[r].cut, sizeof(p[r].cut), "%s", cut_cell(v, w, buf, sizeof(buf)));
    }
    qsort(p, nrows, sizeof(*p), cut_pair_cmp);
    int ok = 1;
    for (size_t r = 1; r < nrows && ok; r++)
        ok = strcmp(p[r].cut, p[r - 1].cut) != 0 || strcmp(p[r].full, p[r - 1].full) == 0;
    free(p);
    return ok;
}

void ctl_print_table(FILE *f, const json_t *rows, const ctl_col_t *cols, size_t ncols) {
    int w[CTL_TABLE_MAX_COLS], fixed[CTL_TABLE_MAX_COLS] = {0};
    ncols = ncols < CTL_TABLE_MAX_COLS ? ncols : CTL_TABLE_MAX_COLS;
    size_t nrows = json_array_size(rows);
    int total = 0;
    for (size_t c = 0; c < ncols; c++) {
        w[c] = (int)strlen(cols[c].header);
        for (size_t r = 0; r < nrows; r++) {
            char buf[CTL_CELL];
            int len =
                (int)strlen(cols[c].fn(json_array_get(rows, r), cols[c].key, buf, sizeof(buf)));
            w[c] = len > w[c] ? len : w[c];
        }
        w[c] = w[c] < cols[c].max ? w[c] : cols[c].max;
        total += w[c] + (c ? 2 : 0);
    }
    /* Too wide: take a column from the widest shrinkable one at a time; a
     * column whose next cut would make two values alike stays as it is. */
    int width = table_width(f);
    while (width && total > width) {
        size_t widest = ncols;
        for (size_t c = 0; c < ncols; c++)
            if (!fixed[c] && w[c] > cols[c].min && (widest == ncols || w[c] > w[widest]))
                widest = c;
        if (widest == ncols)
            break;
        if (!cuts_distinct(rows, &cols[widest], w[widest] - 1)) {
            fixed[widest] = 1;
            continue;
        }
        w[widest]--;
        total--;
    }
    for (long r = -1; r < (long)nrows; r++) {
        char line[4096];
        size_t used = 0;
        for (size_t c = 0; c < ncols; c++) {
            char buf[CTL_CELL], cut[CTL_CELL];
            const char *v =
                r < 0 ? cols[c].header
                      : cols[c].fn(json_array_get(rows, (size_t)r), cols[c].key, buf, sizeof(buf));
            v = cut_cell(v, w[c], cut, sizeof(cut));
            int last = c + 1 == ncols;
            int k = snprintf(line + used, sizeof(line) - used, "%s%*s%s", c ? "  " : "",
                             cols[c].right ? w[c] : (last ? 0 : -w[c]), v, "");
            if (k > 0)
                used += (size_t)k < sizeof(line) - used ? (size_t)k : sizeof(line) - used - 1;
        }
        fprintf(f, "%s\n", line);
    }
}

/* The "not active" line: which partitions are in handoff or unowned (of the
 * whole group), the first few of each, so a 1,000-partition group's trouble
 * fits one line. */
static void print_not_active(const json_t *st, FILE *f) {
    static const char *const states[] = {"handoff", "unowned"};
    const json_t *na = json_object_get(json_object_get(st, "summary"), "not_active");
    char line[CTL_LINE_WIDTH * 2] = "";
    size_t used = 0;
    for (size_t s = 0; s < 2; s++) {
        const json_t *list = json_object_get(na, states[s]);
        size_t count = json_array_size(list);
        if (!count)
            continue;
        int k = snprintf(line + used, sizeof(line) - used, "%s%zu %s:", used ? "; " : "", count,
                         states[s]);
        if (k > 0 && (size_t)k < sizeof(line) - used)
            used += (size_t)k;
        for (size_t i = 0; i < count && i < 8; i++) {
            k = snprintf(line + used, sizeof(line) - used, " %" JSON_INTEGER_FORMAT,
                         json_integer_value(json_array_get(list, i)));
            if (k > 0 && (size_t)k < sizeof(line) - used)
                used += (size_t)k;
        }
        if (count > 8 && used + 4 < sizeof(line))
            used += (size_t)snprintf(line + used, sizeof(line) - used, " ..");
    }
    if (used)
        fprintf(f, "not active:   %.*s\n", CTL_LINE_WIDTH - 14, line);
}

static void print_lag(const json_t *st, FILE *f) {
    const json_t *sum = json_object_get(st, "summary");
    const json_t *total = json_object_get(sum, "lag");
    const json_t *worst = json_object_get(sum, "max_lag");
    if (json_is_integer(total) && json_integer_value(total) == 0)
        fprintf(f, "lag:          0 (every partition is caught up)\n");
    else if (json_is_integer(total) && json_is_object(worst))
        fprintf(f,
                "lag:          %" JSON_INTEGER_FORMAT
                " records in total, most %" JSON_INTEGER_FORMAT
                " on partition %" JSON_INTEGER_FORMAT "\n",
                json_integer_value(total), json_integer_value(json_object_get(worst, "lag")),
                json_integer_value(json_object_get(worst, "partition")));
    else if (json_is_object(worst))
        fprintf(f, "lag:          partial (some high watermarks are unknown)\n");
    else
        fprintf(f, "lag:          unknown (give --brokers and --sink)\n");
}

/* 1 if id is a live worker of st. */
static int is_live(const json_t *st, const char *id) {
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(st, "workers"), i, w) {
        const char *wid = jstr(w, "id");
        if (wid && strcmp(wid, id) == 0)
            return 1;
    }
    return 0;
}

/* Appends to a line of at most CTL_VALUE_WIDTH characters; a cut line
 * ends in "..". */
static void line_add(char *line, const char *fmt, const char *a, const char *b) {
    size_t len = strlen(line);
    if (len >= CTL_VALUE_WIDTH)
        return;
    int w = snprintf(line + len, CTL_VALUE_WIDTH + 1 - len, fmt, a, b);
    if (w > 0 && len + (size_t)w > CTL_VALUE_WIDTH)
        memcpy(line + CTL_VALUE_WIDTH - 2, "..", 3);
}

/* "not live:" the drains and pins that name workers not live now (they
 * apply when those join): "w9: drained; w7: pinned 0,3". Nothing if none. */
static void print_absent(const json_t *st, FILE *f) {
    char line[CTL_VALUE_WIDTH + 1] = "";
    const json_t *drains = json_object_get(st, "drains"),
                 *parts = json_object_get(st, "partitions");
    size_t i, j;
    const json_t *d, *p;
    json_array_foreach(drains, i, d) {
        const char *id = json_string_value(d);
        if (id && !is_live(st, id))
            line_add(line, "%s%s: drained", *line ? "; " : "", id);
    }
    /* Each absent pinned worker once, with its partitions. */
    json_array_foreach(parts, i, p) {
        const char *id = jstr(p, "pinned");
        int first = id && !is_live(st, id);
        for (j = 0; first && j < i; j++) {
            const char *prev = jstr(json_array_get(parts, j), "pinned");
            first = !prev || strcmp(prev, id) != 0;
        }
        if (!first)
            continue;
        line_add(line, "%s%s: pinned ", *line ? "; " : "", id);
        const char *sep = "";
        for (j = i; j < json_array_size(parts); j++) {
            const json_t *q = json_array_get(parts, j);
            const char *qid = jstr(q, "pinned");
            if (!qid || strcmp(qid, id) != 0)
                continue;
            char num[24];
            snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
                     json_integer_value(json_object_get(q, "partition")));
            line_add(line, "%s%s", sep, num);
            sep = ",";
        }
    }
    if (*line)
        fprintf(f, "not live:     %s\n", line);
}

void ctl_status_print_summary(const json_t *st, FILE *f) {
    const json_t *cfg = json_object_get(st, "config");
    const json_t *coord = json_object_get(st, "coordinator");
    const json_t *sum = json_object_get(st, "summary");
    char b1[CTL_VALUE_WIDTH + 8], b2[32], b3[32], b4[32];
    const char *group = jstr(st, "group");
    fprintf(f, "group:        %.*s\n", CTL_VALUE_WIDTH, group ? group : "-");
    fprintf(f, "topic:        %.*s\n", CTL_VALUE_WIDTH, jtext(cfg, "topic", b1, sizeof(b1)));
    fprintf(f, "partitions:   %s (strategy %s)\n", jtext(cfg, "partitions", b2, sizeof(b2)),
            jtext(cfg, "strategy", b3, sizeof(b3)));
    if (json_is_object(coord))
        fprintf(f, "coordinator:  %.*s (epoch %s)\n", CTL_VALUE_WIDTH - 30,
                jtext(coord, "id", b2, sizeof(b2)), jtext(coord, "epoch", b3, sizeof(b3)));
    else
        fprintf(f, "coordinator:  none\n");
    const json_t *gen = json_object_get(st, "generation");
    fprintf(f, "generation:   %s\n",
            json_is_integer(gen) ? jtext(st, "generation", b2, sizeof(b2))
                                 : "none (no assignment published)");
    fprintf(f, "workers:      %s live, %s draining\n", jtext(sum, "workers", b2, sizeof(b2)),
            jtext(sum, "draining", b3, sizeof(b3)));
    fprintf(f, "states:       %s active, %s handoff, %s unowned; %s pinned\n",
            jtext(sum, "active", b1, sizeof(b1)), jtext(sum, "handoff", b2, sizeof(b2)),
            jtext(sum, "unowned", b3, sizeof(b3)), jtext(sum, "pinned", b4, sizeof(b4)));
    print_absent(st, f);
    const json_t *keys = json_object_get(st, "keys");
    if (json_array_size(keys)) {
        size_t i, act = 0, ho = 0, un = 0;
        const json_t *k;
        json_array_foreach(keys, i, k) {
            const char *state = jstr(k, "state");
            act += state && !strcmp(state, "active");
            ho += state && !strcmp(state, "handoff");
            un += state && !strcmp(state, "unowned");
        }
        fprintf(f, "keys:         %zu: %zu active, %zu handoff, %zu unowned\n",
                json_array_size(keys), act, ho, un);
    }
    print_not_active(st, f);
    print_lag(st, f);
    size_t nwarn = json_array_size(json_object_get(st, "warnings"));
    if (nwarn)
        fprintf(f, "warnings:     %zu (on stderr)\n", nwarn);
}

void ctl_status_print_workers(const json_t *st, FILE *f, int with_session) {
    static const col_t cols[] = {
        {"WORKER", "id", 8, CTL_COL_ID, 0, cell_text},
        {"HOST", "host", 6, CTL_COL_ID, 0, cell_text},
        {"PID", "pid", 3, 10, 1, cell_text},
        {"CAP", "capacity", 3, 7, 1, cell_text},
        {"RACK", "rack", 4, CTL_COL_ID, 0, cell_text},
        {"OWNED", "owned", 5, 7, 1, cell_text},
        {"ASSIGNED", "assigned", 8, 8, 1, cell_text},
        {"DRAINING", "draining", 8, 8, 0, cell_text},
        {"SESSION AGE", "session_age_ms", 11, 11, 1, cell_age},
        {"SESSION", "session", 18, 18, 0, cell_text},
    };
    const json_t *rows = json_object_get(st, "workers");
    if (json_array_size(rows) == 0) {
        fprintf(f, "no workers\n");
        return;
    }
    ctl_print_table(f, rows, cols, BATON_ARRAY_SIZE(cols) - (with_session ? 0 : 1));
}

/* 1 if some row has a string at key. */
static int any_string(const json_t *rows, const char *key) {
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        if (json_is_string(json_object_get(row, key)))
            return 1;
    }
    return 0;
}

void ctl_status_print_partitions(const json_t *st, FILE *f) {
    static const col_t cols[] = {
        {"PARTITION", "partition", 9, 9, 1, cell_text},
        {"ASSIGNED", "assigned", 8, CTL_COL_ID, 0, cell_text},
        {"OWNER", "owner", 8, CTL_COL_ID, 0, cell_text},
        {"EPOCH", "epoch", 5, 20, 1, cell_text},
        {"STATE", "state", 7, 7, 0, cell_text},
        {"FOR", "state_age_ms", 6, 6, 1, cell_age},
        {"CLAIMS", "claims", 6, 6, 1, cell_text},
        {"LAG", "lag", 3, 12, 1, cell_text},
        {"STANDBY", "standby", 7, CTL_COL_ID, 0, cell_text},
        {"PINNED", "pinned", 6, CTL_COL_ID, 0, cell_text},
    };
    const json_t *rows = json_object_get(st, "partitions");
    if (json_array_size(rows) == 0) {
        fprintf(f, "no partitions\n");
        return;
    }
    /* The standby and pin columns only when some partition has one. */
    col_t shown[BATON_ARRAY_SIZE(cols)];
    size_t n = 0;
    for (size_t c = 0; c < BATON_ARRAY_SIZE(cols); c++) {
        int optional = strcmp(cols[c].key, "standby") == 0 || strcmp(cols[c].key, "pinned") == 0;
        if (!optional || any_string(rows, cols[c].key))
            shown[n++] = cols[c];
    }
    ctl_print_table(f, rows, shown, n);
}

void ctl_status_print_human(const json_t *status, FILE *f) {
    ctl_status_print_summary(status, f);
    fputc('\n', f);
    ctl_status_print_workers(status, f, 0);
    fputc('\n', f);
    ctl_status_print_partitions(status, f);
    if (json_array_size(json_object_get(status, "keys"))) {
        fputc('\n', f);
        ctl_keys_print(status, f);
    }
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

/* ---- options shared by the view commands ------------------------------ */

enum {
    OPT_JSON = 1,
    OPT_BROKERS,
    OPT_SINK,
    OPT_KAFKA,
    OPT_PARTITION,
    OPT_WORKER,
    OPT_MAX_UPDATES,
    OPT_DURATION,
};

/* Parses "P", "P-Q" and comma lists of them into o->partitions. */
static void parse_partitions(ctl_view_opts_t *o, const char *arg) {
    char *copy = xstrdup(arg), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int64_t lo, hi;
        char *dash = strchr(tok, '-');
        int bad;
        if (dash) {
            *dash = 0;
            bad = baton_parse_i64(tok, 0, BATON_PARTITIONS_MAX - 1, &lo) != 0 ||
                  baton_parse_i64(dash + 1, 0, BATON_PARTITIONS_MAX - 1, &hi) != 0 || hi < lo;
            *dash = '-';
        } else {
            bad = baton_parse_i64(tok, 0, BATON_PARTITIONS_MAX - 1, &lo) != 0;
            hi = lo;
        }
        if (bad || hi - lo >= BATON_PARTITIONS_MAX) {
            free(copy);
            baton_usage_error(CTL_PROG,
                              "--partition: '%s' is not a partition number, range or list "
                              "(e.g. 7, 0-9, 1,5,8)",
                              arg);
        }
        for (int64_t p = lo; p <= hi; p++) {
            o->partitions = xrealloc(o->partitions, (o->npartitions + 1) * sizeof(int32_t));
            o->partitions[o->npartitions++] = (int32_t)p;
        }
    }
    free(copy);
    if (!o->npartitions)
        baton_usage_error(CTL_PROG, "--partition: '%s' names no partition", arg);
}

void ctl_view_parse(ctl_ctx_t *ctx, ctl_view_opts_t *o, int argc, char **argv, unsigned flags,
                    void (*usage)(FILE *f)) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"brokers", required_argument, NULL, OPT_BROKERS},
        {"sink", required_argument, NULL, OPT_SINK},
        {"kafka", required_argument, NULL, OPT_KAFKA},
        {"partition", required_argument, NULL, OPT_PARTITION},
        {"worker", required_argument, NULL, OPT_WORKER},
        {"max-updates", required_argument, NULL, OPT_MAX_UPDATES},
        {"duration-ms", required_argument, NULL, OPT_DURATION},
        {"help", no_argument, NULL, CTL_OPT_HELP},
        CTL_GLOBAL_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    const char *cmd = argv[0];
    memset(o, 0, sizeof(*o));
    o->kafka_props = xcalloc((size_t)argc + 1, sizeof(char *));
    int opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ctl_global_opt(ctx, opt, optarg))
            continue;
        unsigned need = opt == OPT_BROKERS || opt == OPT_KAFKA          ? CTL_VIEW_KAFKA
                        : opt == OPT_SINK                               ? CTL_VIEW_SINK
                        : opt == OPT_PARTITION || opt == OPT_WORKER     ? CTL_VIEW_FILTER
                        : opt == OPT_MAX_UPDATES || opt == OPT_DURATION ? CTL_VIEW_WATCH
                                                                        : 0;
        if (need && !(flags & need)) {
            const char *name = "?";
            for (const struct option *lo = longopts; lo->name; lo++)
                if (lo->val == opt)
                    name = lo->name;
            baton_usage_error(CTL_PROG, "%s: option '--%s' does not apply to this command", cmd,
                              name);
        }
        switch (opt) {
        case OPT_JSON: o->as_json = 1; break;
        case OPT_BROKERS:
            if (!optarg[0])
                baton_usage_error(CTL_PROG, "--brokers: empty bootstrap server list");
            o->kafka.brokers = optarg;
            break;
        case OPT_SINK:
            ctl_check_sink_uri(optarg);
            o->sink = optarg;
            break;
        case OPT_KAFKA:
            if (!strchr(optarg, '=') || optarg[0] == '=')
                baton_usage_error(CTL_PROG, "--kafka: '%s' is not KEY=VALUE", optarg);
            o->kafka_props[o->kafka.nprops++] = optarg;
            break;
        case OPT_PARTITION: parse_partitions(o, optarg); break;
        case OPT_WORKER:
            if (baton_id_valid(optarg) != 0)
                baton_usage_error(CTL_PROG, "--worker: '%s' is not a valid worker id", optarg);
            o->worker = optarg;
            break;
        case OPT_MAX_UPDATES:
            o->max_updates = baton_opt_int(CTL_PROG, "max-updates", optarg, 1, INT64_MAX);
            break;
        case OPT_DURATION:
            o->duration_ms = baton_opt_int(CTL_PROG, "duration-ms", optarg, 1, INT64_MAX);
            break;
        case CTL_OPT_HELP: usage(stdout); exit(BATON_EXIT_OK);
        default: ctl_bad_option(argc, argv);
        }
    }
    o->kafka.props = o->kafka_props;
    if (o->kafka.nprops && !o->kafka.brokers)
        baton_usage_error(CTL_PROG, "%s: --kafka needs --brokers", cmd);
    ctl_check_kafka_props(o->kafka_props, o->kafka.nprops);
    if (optind < argc)
        baton_usage_error(CTL_PROG, "%s: unexpected argument '%s'", cmd, argv[optind]);
    if ((flags & CTL_VIEW_NEEDS_SINK) && !o->sink)
        baton_usage_error(CTL_PROG, "%s: --sink URI is required", cmd);
    ctl_ctx_check(ctx);
}

void ctl_view_opts_release(ctl_view_opts_t *o) {
    free(o->partitions);
    free(o->kafka_props);
    memset(o, 0, sizeof(*o));
}

int ctl_view_gather(baton_zk_t *zk, const ctl_ctx_t *ctx, const ctl_view_opts_t *o, json_t **out,
                    char *errstr, size_t n) {
    json_t *st = NULL;
    int err = ctl_status_gather(zk, ctx->root, ctx->group, &st, errstr, n);
    if (err != BATON_OK)
        return err;
    if (o->kafka.brokers || o->sink) {
        err = ctl_status_add_lag(st, o->kafka.brokers ? &o->kafka : NULL, o->sink, ctx->timeout_ms,
                                 errstr, n);
        if (err != BATON_OK) {
            json_decref(st);
            return err;
        }
    }
    if ((err = ctl_status_filter(st, o, errstr, n)) != BATON_OK) {
        json_decref(st);
        return err;
    }
    *out = st;
    return BATON_OK;
}

/* Connects, gathers, renders with print (or as JSON), prints warnings. */
static int view_run(ctl_ctx_t *ctx, const ctl_view_opts_t *o,
                    void (*print)(const json_t *st, FILE *f), const char *json_key) {
    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk)
        return BATON_EXIT_FAILURE;
    json_t *st = NULL;
    char errstr[1024];
    int err = ctl_view_gather(zk, ctx, o, &st, errstr, sizeof(errstr));
    baton_zk_destroy(zk);
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        return BATON_EXIT_FAILURE;
    }
    if (o->as_json && json_key) {
        /* The table alone, with the keys that identify what it is of. */
        json_t *sub = json_object();
        json_object_set(sub, "group", json_object_get(st, "group"));
        json_object_set(sub, "generation", json_object_get(st, "generation"));
        json_object_set(sub, json_key, json_object_get(st, json_key));
        json_object_set(sub, "warnings", json_object_get(st, "warnings"));
        ctl_status_print_json(sub, stdout);
        json_decref(sub);
    } else if (o->as_json) {
        ctl_status_print_json(st, stdout);
    } else {
        print(st, stdout);
    }
    fflush(stdout);
    ctl_status_print_warnings(st);
    json_decref(st);
    return BATON_EXIT_OK;
}

/* ---- the commands ----------------------------------------------------- */

#define CTL_LAG_HELP                                                                   \
    "  --brokers B        Kafka bootstrap servers: adds each partition's high\n"       \
    "                     watermark (one ListOffsets round, bounded by --timeout)\n"   \
    "  --sink URI         the group's fenced sink (sqlite:PATH, postgresql://... or\n" \
    "                     redis://...): adds next_offset; with --brokers, lag =\n"     \
    "                     high watermark - next_offset\n"                              \
    "  --kafka KEY=VALUE  a librdkafka setting for --brokers (repeatable), e.g.\n"     \
    "                     security.protocol=SASL_SSL\n"
#define CTL_FILTER_HELP                                                            \
    "  --partition LIST   only these partitions: 7, 0-9 or 1,5,8\n"                \
    "  --worker W         only partitions W owns, is assigned or pinned to (and\n" \
    "                     only W in the workers table); exit 1 if W is unknown\n"

void ctl_status_usage(FILE *f) {
    fprintf(
        f,
        "usage: %s --zk HOSTS --group G status [--json] [--brokers B --sink URI]\n"
        "                [--partition LIST] [--worker W]\n"
        "\n"
        "Shows the group's coordinator (leader and its epoch), the assignment\n"
        "generation, the live workers, and for every partition its assigned worker,\n"
        "its owner (the worker holding the lowest claim), the owner's epoch, a\n"
        "state: active (owner = assigned), handoff (owner differs, or claims queued\n"
        "without an owner) or unowned (no claim), how long it has been in it (since\n"
        "the owner claim's creation), and with --brokers and --sink its lag. A\n"
        "summary comes first (the partitions not active, the total and worst lag),\n"
        "then the workers and partitions tables, which fit $COLUMNS or the\n"
        "terminal (cutting an id's middle, never into another id's text; piped or\n"
        "with --wide, nothing is cut). Filters\n"
        "narrow the tables, not the summary. Reads only; leaves no watches.\n"
        "\n"
        "Malformed znode data is shown as '-' (null) with a warning on stderr naming\n"
        "the znode; the exit status is still 0. An uninitialised group, an\n"
        "unreadable config, an unreachable Kafka or sink exit 1.\n"
        "\n"
        "  --json             print one JSON object instead of tables:\n"
        "    {\"group\", \"config\": {\"topic\", \"partitions\", \"strategy\",\n"
        "     \"group_uuid\"},\n"
        "     \"generation\", \"coordinator\": {\"id\", \"epoch\", \"node\"} | null,\n"
        "     \"summary\": {\"workers\", \"active\", \"handoff\", \"unowned\", \"draining\",\n"
        "                 \"pinned\", \"lag\", \"not_active\": {\"handoff\": [partitions],\n"
        "                 \"unowned\": [partitions]}, \"max_lag\": {\"partition\", \"lag\"}\n"
        "                 | null},\n"
        "     \"workers\": [{\"id\", \"host\", \"pid\", \"capacity\", \"rack\", \"session\",\n"
        "                  \"joined_ms\", \"session_age_ms\", \"owned\", \"assigned\",\n"
        "                  \"draining\"}],\n"
        "     \"partitions\": [{\"partition\", \"assigned\", \"owner\", \"epoch\", \"state\",\n"
        "                     \"claims\", \"since_ms\", \"state_age_ms\", \"pinned\",\n"
        "                     \"next_offset\", \"high_watermark\", \"lag\", \"standby\"}],\n"
        "     \"drains\": [ids],\n"
        "     \"keys\": [{\"key\", \"assigned\", \"owner\", \"epoch\", \"state\", \"claims\",\n"
        "               \"since_ms\", \"state_age_ms\", \"runs\"}],\n"
        "     \"time_ms\", \"warnings\": [{\"path\", \"problem\"}]}\n"
        "    with null where there is none (lag without --brokers and --sink).\n"
        "    *_ms times are milliseconds since the Unix epoch (ZooKeeper's clock).\n" CTL_LAG_HELP
            CTL_FILTER_HELP "\n"
        "examples:\n"
        "  %s --zk 127.0.0.1:2181 --group orders status\n"
        "  %s --zk 127.0.0.1:2181 --group orders status --partition 7\n"
        "  %s --zk 127.0.0.1:2181 --group orders status --worker w2 --json\n"
        "  %s --zk 127.0.0.1:2181 --group orders status \\\n"
        "      --brokers 127.0.0.1:9092 --sink sqlite:/var/lib/baton/out.db\n",
        CTL_PROG, CTL_PROG, CTL_PROG, CTL_PROG, CTL_PROG);
}

int ctl_cmd_status(ctl_ctx_t *ctx, int argc, char **argv) {
    ctl_view_opts_t o;
    ctl_view_parse(ctx, &o, argc, argv, CTL_VIEW_KAFKA | CTL_VIEW_SINK | CTL_VIEW_FILTER,
                   ctl_status_usage);
    int rc = view_run(ctx, &o, ctl_status_print_human, NULL);
    ctl_view_opts_release(&o);
    return rc;
}

void ctl_workers_usage(FILE *f) {
    fprintf(
        f,
        "usage: %s --zk HOSTS --group G workers [--json] [--worker W]\n"
        "\n"
        "Lists the live workers: id, host, pid, capacity, rack, how many partitions\n"
        "each owns (holds the lowest claim of) and is assigned, whether it is being\n"
        "drained (a node drains/<id> exists), how long its ZooKeeper session has\n"
        "been registered, and the session id (its claims are claim-<session>-N).\n"
        "\n"
        "  --json        {\"group\", \"generation\", \"workers\": [{\"id\", \"host\", \"pid\",\n"
        "                \"capacity\", \"rack\", \"session\", \"joined_ms\", \"session_age_ms\",\n"
        "                \"owned\", \"assigned\", \"draining\"}], \"warnings\"}\n"
        "  --worker W    only W (exit 1 if W is unknown)\n"
        "\n"
        "examples:\n"
        "  %s --zk 127.0.0.1:2181 --group orders workers\n"
        "  %s --zk 127.0.0.1:2181 --group orders workers --json | jq '.workers[].owned'\n",
        CTL_PROG, CTL_PROG, CTL_PROG);
}

static void print_workers_only(const json_t *st, FILE *f) { ctl_status_print_workers(st, f, 1); }

int ctl_cmd_workers(ctl_ctx_t *ctx, int argc, char **argv) {
    ctl_view_opts_t o;
    ctl_view_parse(ctx, &o, argc, argv, CTL_VIEW_FILTER, ctl_workers_usage);
    if (o.partitions)
        baton_usage_error(CTL_PROG, "workers: --partition does not apply (use partitions)");
    int rc = view_run(ctx, &o, print_workers_only, "workers");
    ctl_view_opts_release(&o);
    return rc;
}

void ctl_partitions_usage(FILE *f) {
    fprintf(
        f,
        "usage: %s --zk HOSTS --group G partitions [--json] [--brokers B --sink URI]\n"
        "                [--partition LIST] [--worker W]\n"
        "\n"
        "The per-partition table of 'status' alone: assigned worker, owner, epoch,\n"
        "state, time in that state, claims queued, lag, pin.\n"
        "\n"
        "  --json             {\"group\", \"generation\", \"partitions\": [...], \"warnings\"}\n"
        "                     (the partition objects of 'status --json')\n" CTL_LAG_HELP
            CTL_FILTER_HELP "\n"
        "examples:\n"
        "  %s --zk 127.0.0.1:2181 --group orders partitions --partition 7\n"
        "  %s --zk 127.0.0.1:2181 --group orders partitions --json \\\n"
        "      | jq '.partitions[] | select(.state != \"active\")'\n",
        CTL_PROG, CTL_PROG, CTL_PROG);
}

int ctl_cmd_partitions(ctl_ctx_t *ctx, int argc, char **argv) {
    ctl_view_opts_t o;
    ctl_view_parse(ctx, &o, argc, argv, CTL_VIEW_KAFKA | CTL_VIEW_SINK | CTL_VIEW_FILTER,
                   ctl_partitions_usage);
    int rc = view_run(ctx, &o, ctl_status_print_partitions, "partitions");
    ctl_view_opts_release(&o);
    return rc;
}
