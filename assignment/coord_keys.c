/* coord_keys.c: named-key assignment; see coord_keys.h. */
#include "coord_keys.h"

#include "baton_err.h"
#include "baton_util.h"

#include <stdlib.h>
#include <string.h>

int coord_keys_has(const char *list, const char *key) {
    size_t kl = strlen(key);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == kl && memcmp(p, key, kl) == 0)
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

int coord_keys_takes(int keys_filter, const char *keys, const char *key) {
    return !keys_filter || coord_keys_has(keys, key);
}

static int eligible(const coord_key_worker_t *w, const char *key) {
    if (w->flags & (BATON_ASSIGN_DRAINED | BATON_ASSIGN_ABSENT))
        return 0;
    return coord_keys_takes(w->keys_filter, w->keys, key);
}

/* Keys sorted by their eligibility signature, then by index. */
typedef struct {
    const char *sig; /* one '0'/'1' per worker */
    size_t k;
} key_sig_t;

static int sig_cmp(const void *a, const void *b) {
    const key_sig_t *x = a, *y = b;
    int c = strcmp(x->sig, y->sig);
    return c ? c : (x->k > y->k) - (x->k < y->k);
}

int coord_keys_assign(baton_strategy_t strategy, char *const *keys, size_t nkeys,
                      const coord_key_worker_t *w, size_t nw, const int *prev, int *next,
                      char *errstr, size_t n) {
    int moved = 0, err = BATON_OK;
    char *sigs = xcalloc(nkeys * (nw + 1) + 1, 1);
    key_sig_t *order = xcalloc(nkeys + 1, sizeof(*order));
    size_t norder = 0;
    for (size_t k = 0; k < nkeys; k++) {
        next[k] = -1;
        if (prev[k] >= 0 && (size_t)prev[k] < nw && (w[prev[k]].flags & BATON_ASSIGN_ABSENT)) {
            next[k] = prev[k]; /* reserved for an absent worker within its grace */
            continue;
        }
        char *sig = sigs + k * (nw + 1);
        for (size_t i = 0; i < nw; i++)
            sig[i] = eligible(&w[i], keys[k]) ? '1' : '0';
        order[norder++] = (key_sig_t){.sig = sig, .k = k};
    }
    qsort(order, norder, sizeof(*order), sig_cmp);

    baton_assign_worker_t *aw = xcalloc(nw + 1, sizeof(*aw));
    int *widx = xcalloc(nw + 1, sizeof(int));
    int *gprev = xcalloc(norder + 1, sizeof(int));
    int *gnext = xcalloc(norder + 1, sizeof(int));
    for (size_t lo = 0, hi; lo < norder; lo = hi) {
        for (hi = lo + 1; hi < norder && strcmp(order[hi].sig, order[lo].sig) == 0; hi++) {
        }
        /* The group's members, and its keys' previous owners among them. */
        int gw = 0;
        for (size_t i = 0; i < nw; i++)
            if (order[lo].sig[i] == '1') {
                aw[gw] = (baton_assign_worker_t){
                    .id = w[i].id, .capacity = w[i].capacity > 0 ? w[i].capacity : 1, .rack = -1};
                widx[gw++] = (int)i;
            }
        if (gw == 0)
            continue; /* nobody may take these keys: unowned */
        for (size_t j = lo; j < hi; j++) {
            int p = prev[order[j].k];
            gprev[j - lo] = -1;
            for (int g = 0; p >= 0 && g < gw; g++)
                if (widx[g] == p)
                    gprev[j - lo] = g;
        }
        baton_assign_input_t in = {
            .strategy = strategy,
            .npartitions = (int)(hi - lo),
            .prev = gprev,
            .workers = aw,
            .nworkers = gw,
        };
        int rc = baton_assign_compute(&in, gnext, NULL, errstr, n);
        if (rc < 0) {
            err = rc;
            break;
        }
        for (size_t j = lo; j < hi; j++)
            next[order[j].k] = gnext[j - lo] >= 0 ? widx[gnext[j - lo]] : -1;
    }
    for (size_t k = 0; err == BATON_OK && k < nkeys; k++)
        if (next[k] != prev[k])
            moved++;
    free(gnext);
    free(gprev);
    free(widx);
    free(aw);
    free(order);
    free(sigs);
    return err == BATON_OK ? moved : err;
}
