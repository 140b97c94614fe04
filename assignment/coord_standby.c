/* coord_standby.c: standbys, see coord_standby.h. */
#include "coord_standby.h"

#include "baton_err.h"
#include "baton_util.h"

#include <stdlib.h>
#include <string.h>

int coord_standby_compute(const baton_assign_input_t *in, char *const *keys, size_t nkeys,
                          const coord_key_worker_t *kw, const int *next, int *sb, char *errstr,
                          size_t errstr_size) {
    int P = in->npartitions, nw = in->nworkers;
    size_t nrows = (size_t)P + nkeys;
    const int *knext = next + P;
    for (size_t r = 0; r < nrows; r++)
        sb[r] = -1;
    if ((size_t)nw * nrows > COORD_STANDBY_BUDGET)
        return 1;
    /* What each worker owns (1: partitions, 2: keys): only those
     * departures are simulated, and only for what the owner has. */
    char *owns = xcalloc((size_t)nw + 1, 1);
    for (size_t r = 0; r < nrows; r++)
        if (next[r] >= 0 && next[r] < nw)
            owns[next[r]] |= r < (size_t)P ? 1 : 2;
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
        if ((owns[o] & 1) && !(saved & BATON_ASSIGN_ABSENT)) {
            aw[o].flags |= BATON_ASSIGN_DRAINED; /* what a leave mark does */
            err = baton_assign_compute(&sim, alt, NULL, errstr, errstr_size);
            aw[o].flags = saved;
        }
        if (err >= 0 && (owns[o] & 2) && !(kw2[o].flags & BATON_ASSIGN_ABSENT)) {
            int ksaved = kw2[o].flags;
            kw2[o].flags |= BATON_ASSIGN_DRAINED;
            err = coord_keys_assign(in->strategy, keys, nkeys, kw2, (size_t)nw, knext, alt + P,
                                    errstr, errstr_size);
            kw2[o].flags = ksaved;
        }
        /* The rows o owns, of a kind just simulated, go to their successor. */
        for (size_t r = 0; err >= 0 && r < nrows; r++) {
            int kind = r < (size_t)P ? 1 : 2;
            int simulated =
                kind == 1 ? !(saved & BATON_ASSIGN_ABSENT) : !(kw2[o].flags & BATON_ASSIGN_ABSENT);
            if (next[r] == o && (owns[o] & kind) && simulated && alt[r] >= 0 && alt[r] != o)
                sb[r] = alt[r];
        }
    }
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
