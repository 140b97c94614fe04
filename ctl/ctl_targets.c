/* ctl_targets.c: is a worker id one the group knows (see ctl_targets.h)? A
 * handful of reads: the members, the id's assignment and drain nodes, the
 * pins and the history ring. */
#include "ctl_targets.h"
#include "ctl.h"
#include "baton_zkbatch.h"

#include "baton_codec.h"
#include "baton_err.h"
#include "baton_layout.h"
#include "baton_util.h"

#include <stdlib.h>
#include <string.h>

/* Names shown in the live list before "and N more". */
#define TARGET_LIST_MAX 20

static char *live_list(char **names, size_t n) {
    if (n == 0)
        return xstrdup("none");
    size_t cap = 64, len = 0;
    char *s = xmalloc(cap);
    s[0] = 0;
    for (size_t i = 0; i < n && i < TARGET_LIST_MAX; i++) {
        size_t need = len + strlen(names[i]) + 3;
        if (need > cap) {
            cap = need * 2;
            s = xrealloc(s, cap);
        }
        len += (size_t)snprintf(s + len, cap - len, "%s%s", i ? ", " : "", names[i]);
    }
    if (n > TARGET_LIST_MAX) {
        char *more = xasprintf("%s and %zu more", s, n - TARGET_LIST_MAX);
        free(s);
        s = more;
    }
    return s;
}

/* 1 if the node path_of(base, id) exists (baton_layout_assignment_of,
 * _drain...), 0 if not, or a negative error. */
static int node_there(baton_zk_t *zk, const char *base,
                      char *(*path_of)(const char *, const char *), const char *id, char *errstr,
                      size_t n) {
    char *path = path_of(base, id);
    int err = baton_zk_exists(zk, path, 0, NULL);
    int rc = err == BATON_OK ? 1 : err == BATON_NOTFOUND ? 0 : err;
    if (rc < 0)
        baton_seterr(errstr, n, err, "cannot read '%s': %s", path, baton_strerror(err));
    free(path);
    return rc;
}

/* 1 if a pin names id, 0 if none does, or a negative error. */
static int pinned_to(baton_zk_t *zk, const char *base, const char *id, char *errstr, size_t n) {
    char *dir = baton_layout_pins(base);
    baton_zkdir_t d;
    int err = baton_zkdir_read(zk, dir, &d), rc = 0;
    if (err != BATON_OK && err != BATON_NOTFOUND)
        rc = baton_seterr(errstr, n, err, "cannot list '%s': %s", dir, baton_strerror(err));
    for (size_t i = 0; err == BATON_OK && i < d.n && !rc; i++) {
        baton_pin_t pin;
        char why[256];
        rc =
            d.reads[i].err == BATON_OK &&
            baton_pin_decode(d.reads[i].data, d.reads[i].len, &pin, why, sizeof(why)) == BATON_OK &&
            strcmp(pin.worker, id) == 0;
    }
    baton_zkdir_release(&d);
    free(dir);
    return rc;
}

/* 1 if the history ring names id (from or to), 0 if not or there is none,
 * or a negative error. A malformed ring counts as none. */
static int in_history(baton_zk_t *zk, const char *base, const char *id, char *errstr, size_t n) {
    char *path = baton_layout_history(base), *data = NULL, why[256];
    size_t len = 0;
    baton_history_t h = {0};
    int rc = 0, err = baton_zk_get(zk, path, 0, &data, &len, NULL);
    if (err != BATON_OK && err != BATON_NOTFOUND)
        rc = baton_seterr(errstr, n, err, "cannot read '%s': %s", path, baton_strerror(err));
    else if (err == BATON_OK && len > 0 &&
             baton_history_decode(data, len, &h, why, sizeof(why)) == BATON_OK)
        for (size_t i = 0; i < h.n && !rc; i++)
            rc = strcmp(h.entries[i].from, id) == 0 || strcmp(h.entries[i].to, id) == 0;
    baton_history_release(&h);
    free(data);
    free(path);
    return rc;
}

int ctl_target_lookup(baton_zk_t *zk, const char *base, const char *id, ctl_target_t *t,
                      char *errstr, size_t errstr_size) {
    memset(t, 0, sizeof(*t));
    char *wdir = baton_layout_workers(base);
    char **names = NULL;
    size_t n = 0;
    int err = baton_zk_children(zk, wdir, 0, &names, &n);
    if (err == BATON_NOTFOUND)
        err = BATON_OK;
    if (err != BATON_OK) {
        baton_seterr(errstr, errstr_size, err, "cannot list '%s': %s", wdir, baton_strerror(err));
        goto out;
    }
    qsort(names, n, sizeof(char *), baton_strcmp_p);
    t->live_list = live_list(names, n);
    for (size_t i = 0; i < n; i++)
        t->live |= strcmp(names[i], id) == 0;
    if (t->live)
        goto out;
    static const struct {
        const char *why;
        int (*check)(baton_zk_t *, const char *, const char *, char *, size_t);
    } checks[] = {{"pinned", pinned_to}, {"in the history", in_history}};
    int rc = node_there(zk, base, baton_layout_assignment_of, id, errstr, errstr_size);
    if (rc == 1)
        t->known = "assigned";
    if (rc == 0 && (rc = node_there(zk, base, baton_layout_drain, id, errstr, errstr_size)) == 1)
        t->known = "drained";
    for (size_t i = 0; rc == 0 && i < BATON_ARRAY_SIZE(checks); i++)
        if ((rc = checks[i].check(zk, base, id, errstr, errstr_size)) == 1)
            t->known = checks[i].why;
    err = rc < 0 ? rc : BATON_OK;
out:
    baton_zk_strings_free(names, n);
    free(wdir);
    return err;
}

void ctl_target_release(ctl_target_t *t) {
    free(t->live_list);
    t->live_list = NULL;
}

int ctl_target_check(baton_zk_t *zk, const char *base, const char *group, const char *cmd,
                     const char *id, int force) {
    ctl_target_t t;
    char errstr[512];
    int err = ctl_target_lookup(zk, base, id, &t, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s: %s\n", CTL_PROG, cmd, errstr);
    } else if (!t.live && !t.known && !force) {
        fprintf(stderr,
                "%s: %s: worker '%s' is neither live nor known to group %s (live workers: %s); "
                "check the id, or pass --force for a worker that is about to start\n",
                CTL_PROG, cmd, id, group, t.live_list);
        err = BATON_NOTFOUND;
    } else if (!t.live && strcmp(cmd, "undrain") != 0) {
        fprintf(stderr, "%s: note: worker %s is not live now (%s); this applies when it joins\n",
                CTL_PROG, id, t.known ? t.known : "--force");
    }
    ctl_target_release(&t);
    return err;
}
