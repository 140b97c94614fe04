/* coord_standby.c: standbys, see coord_standby.h. */
#include "coord_standby.h"

#include "baton_util.h"
#include "baton_err.h"

#include <stdlib.h>
#include <string.h>

int coord_standby_compute(const baton_assign_input_t *in, const int *next, char *const *keys,
                          size_t nkeys, const coord_key_worker_t *kw, const int *knext, int *sb,
                          int *ksb, char *errstr, size_t errstr_size) {
    int P = in->npartitions, nw = in->nworkers;
    for (int p = 0; p < P; p++)
        sb[p] = -1;
    for (size_t k = 0; k < nkeys; k++)
        ksb[k] = -1;
    if ((size_t)nw * ((size_t)P + nkeys) > COORD_STANDBY_BUDGET)
        return 1;
    /* What each worker owns (1: partitions, 2: keys): only those
     * departures are simulated, and only for what the owner has. */
    char *owns = xcalloc((size_t)nw + 1, 1);
    for (int p = 0; p < P; p++)
        if (next[p] >= 0 && next[p] < nw)
            owns[next[p]] |= 1;
    for (size_t k = 0; k < nkeys; k++)
        if (knext[k] >= 0 && knext[k] < nw)
            owns[knext[k]] |= 2;
    baton_assign_worker_t *aw = xcalloc((size_t)nw + 1, sizeof(*aw));
    coord_key_worker_t *kw2 = xcalloc((size_t)nw + 1, sizeof(*kw2));
    memcpy(aw, in->workers, sizeof(*aw) * (size_t)nw);
    if (nkeys)
        memcpy(kw2, kw, sizeof(*kw2) * (size_t)nw);
    int *alt = xmalloc(sizeof(int) * ((size_t)P + 1));
    int *kalt = xmalloc(sizeof(int) * (nkeys + 1));
    baton_assign_input_t sim = *in;
    sim.prev = next;
    sim.workers = aw;
    int err = 0;
    for (int o = 0; o < nw && err >= 0; o++) {
        /* Partitions and keys each by their own flags: a keys-only member
         * (baton-run) is drained for partitions, not for its keys. An
         * absent owner's resources stay reserved for it: no standby. */
        int saved = aw[o].flags;
        if ((owns[o] & 1) && !(saved & BATON_ASSIGN_ABSENT)) {
            aw[o].flags |= BATON_ASSIGN_DRAINED; /* what a leave mark does */
            if ((err = baton_assign_compute(&sim, alt, NULL, errstr, errstr_size)) >= 0)
                for (int p = 0; p < P; p++)
                    if (next[p] == o && alt[p] >= 0 && alt[p] != o)
                        sb[p] = alt[p];
            aw[o].flags = saved;
        }
        if (err >= 0 && (owns[o] & 2) && !(kw2[o].flags & BATON_ASSIGN_ABSENT)) {
            int ksaved = kw2[o].flags;
            kw2[o].flags |= BATON_ASSIGN_DRAINED;
            err = coord_keys_assign(in->strategy, keys, nkeys, kw2, (size_t)nw, knext, kalt, errstr,
                                    errstr_size);
            kw2[o].flags = ksaved;
            for (size_t k = 0; err >= 0 && k < nkeys; k++)
                if (knext[k] == o && kalt[k] >= 0 && kalt[k] != o)
                    ksb[k] = kalt[k];
        }
    }
    free(kalt);
    free(alt);
    free(kw2);
    free(aw);
    free(owns);
    return err < 0 ? err : 0;
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

void coord_standby_lists(const int *start, const int *order, const int *sb, char *const *keys,
                         size_t nkeys, const int *knext, const int *ksb, const char *const *ids,
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
            if (knext[k] != (int)o || ksb[k] < 0)
                continue;
            baton_standby_t *e = entry_for(lists, nlists, caps, ksb[k], ids[o]);
            e->keys = xrealloc(e->keys, sizeof(char *) * (e->nkeys + 1));
            e->keys[e->nkeys++] = xstrdup(keys[k]);
        }
    }
    free(caps);
    *lists_out = lists;
    *nlists_out = nlists;
}
