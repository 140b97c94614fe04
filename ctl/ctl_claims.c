/* ctl_claims.c: the claims queues of ctl_claims.h. */
#include "ctl_claims.h"

#include "baton_codec.h"
#include "baton_err.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_util.h"
#include "baton_zkbatch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How often a queue whose lowest claim vanished between the listing and the
 * read is looked at again before it is shown as it was listed. */
#define CTL_OWNER_RETRIES 5

void ctl_warning_add(json_t *warnings, const char *path, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *w = json_object();
    json_t *p = path ? json_string(path) : NULL, *m = json_string(msg);
    json_object_set_new(w, "path", p ? p : json_null());
    json_object_set_new(w, "problem", m ? m : json_null());
    json_array_append_new(warnings, w);
}

static int fail(char *errstr, size_t n, int err, const char *path) {
    return baton_seterr(errstr, n, err, "cannot read '%s': %s", path, baton_strerror(err));
}

/* Counts the claims among names and picks the lowest; with warnings, warns
 * about children that are not claims. */
static void queue_pick(json_t *warnings, const char *dir, char **names, size_t n, ctl_queue_t *q) {
    q->nclaims = 0;
    for (size_t i = 0; i < n; i++) {
        if (baton_claim_seq(names[i]) >= 0) {
            q->nclaims++;
        } else if (warnings) {
            char *path = baton_layout_child(dir, names[i]);
            ctl_warning_add(warnings, path,
                            "not a claim node (expected claim-<session>-<10 digits>)");
            free(path);
        }
    }
    const char *lowest = baton_claim_lowest(names, n);
    free(q->lowest);
    q->lowest = lowest ? xstrdup(lowest) : NULL;
}

/* The owner from the owner claim's data and stat. */
static void owner_set(json_t *warnings, const char *path, const char *data, size_t len,
                      const struct Stat *st, ctl_queue_t *q) {
    baton_claim_t claim;
    char why[256];
    q->epoch = st->czxid;
    q->ctime = st->ctime;
    q->have_epoch = 1;
    free(q->owner);
    q->owner = NULL;
    if (baton_claim_decode(data, len, &claim, why, sizeof(why)) == BATON_OK)
        q->owner = xstrdup(claim.worker);
    else
        ctl_warning_add(warnings, path, "%s", why);
}

/* The owner claim went between the listing and the read: list and read
 * again, synchronously (rare: a handoff in progress). */
static int owner_resolve_sync(baton_zk_t *zk, const char *dir, ctl_queue_t *q, json_t *warnings,
                              char *errstr, size_t en) {
    for (int attempt = 0; attempt < CTL_OWNER_RETRIES; attempt++) {
        char **names = NULL;
        size_t n = 0;
        int err = baton_zk_children(zk, dir, 0, &names, &n);
        if (err == BATON_NOTFOUND) {
            q->missing = 1;
            q->nclaims = 0;
            free(q->lowest);
            q->lowest = NULL;
            return BATON_OK;
        }
        if (err != BATON_OK)
            return fail(errstr, en, err, dir);
        queue_pick(NULL, dir, names, n, q);
        baton_zk_strings_free(names, n);
        if (!q->lowest)
            return BATON_OK;
        char *path = baton_layout_child(dir, q->lowest);
        char *data = NULL;
        size_t len = 0;
        struct Stat st;
        err = baton_zk_get(zk, path, 0, &data, &len, &st);
        if (err == BATON_OK)
            owner_set(warnings, path, data, len, &st, q);
        else if (err != BATON_NOTFOUND)
            fail(errstr, en, err, path);
        free(data);
        free(path);
        if (err != BATON_NOTFOUND)
            return err;
    }
    return BATON_OK; /* still churning: the queue as listed, owner unknown */
}

int ctl_claims_gather(baton_zk_t *zk, baton_res_table_t *t, ctl_queue_t *q, json_t *warnings,
                      char *errstr, size_t en) {
    size_t n = t->n, nowned = 0;
    memset(q, 0, n * sizeof(*q));
    char **dirs = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        dirs[i] = (char *)baton_res_claims(t, i); /* the table's; not freed here */
    int err = BATON_OK;
    baton_zkread_t *reads = baton_group_claims_children(zk, t);
    for (size_t i = 0; i < n; i++) {
        if (reads[i].err == BATON_NOTFOUND) {
            q[i].missing = 1;
            continue;
        }
        if (reads[i].err != BATON_OK) {
            err = fail(errstr, en, reads[i].err, dirs[i]);
            goto out;
        }
        queue_pick(warnings, dirs[i], reads[i].names, reads[i].count, &q[i]);
        nowned += q[i].lowest != NULL;
    }
    /* Second round: every owner claim. */
    char **opaths = xcalloc(nowned + 1, sizeof(char *));
    size_t *oidx = xcalloc(nowned + 1, sizeof(size_t));
    baton_zkread_t *oreads = xcalloc(nowned + 1, sizeof(*oreads));
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (q[i].lowest) {
            oidx[k] = i;
            opaths[k++] = baton_layout_child(dirs[i], q[i].lowest);
        }
    baton_zkbatch_get(zk, opaths, nowned, oreads);
    for (k = 0; k < nowned && err == BATON_OK; k++) {
        size_t i = oidx[k];
        if (oreads[k].err == BATON_OK)
            owner_set(warnings, opaths[k], oreads[k].data, oreads[k].len, &oreads[k].stat, &q[i]);
        else if (oreads[k].err == BATON_NOTFOUND)
            err = owner_resolve_sync(zk, dirs[i], &q[i], warnings, errstr, en);
        else
            err = fail(errstr, en, oreads[k].err, opaths[k]);
    }
    for (k = 0; k < nowned; k++) {
        free(opaths[k]);
        baton_zkread_release(&oreads[k]);
    }
    free(opaths);
    free(oidx);
    free(oreads);
    for (size_t i = 0; i < n && err == BATON_OK; i++) {
        if (!q[i].missing)
            continue;
        const baton_resource_t *r = baton_res_at(t, i);
        if (r->kind == BATON_RESOURCE_PARTITION)
            ctl_warning_add(warnings, dirs[i], "missing: partition %d has no claims node",
                            (int)r->partition);
        else
            ctl_warning_add(warnings, dirs[i],
                            "missing (key removed, or created by hand without claims/)");
    }
out:
    baton_group_claims_free(reads, n);
    free(dirs);
    return err;
}

void ctl_queues_release(ctl_queue_t *q, size_t n) {
    for (size_t i = 0; q && i < n; i++) {
        free(q[i].lowest);
        free(q[i].owner);
        q[i].lowest = q[i].owner = NULL;
    }
}

const char *ctl_queue_state(const ctl_queue_t *q, const char *assigned) {
    if (q->nclaims == 0)
        return "unowned";
    return q->owner && assigned && strcmp(q->owner, assigned) == 0 ? "active" : "handoff";
}
