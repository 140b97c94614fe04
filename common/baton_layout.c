/* baton_layout.c: group paths, claim names and queue rules; see baton_layout.h. */
#include "baton_layout.h"

#include "baton_codec.h"
#include "baton_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *baton_layout_config(const char *base) { return xasprintf("%s/config", base); }
char *baton_layout_sink(const char *base) { return xasprintf("%s/sink", base); }
char *baton_layout_history(const char *base) { return xasprintf("%s/history", base); }
char *baton_layout_coordinators(const char *base) { return xasprintf("%s/coordinators", base); }
char *baton_layout_workers(const char *base) { return xasprintf("%s/workers", base); }
char *baton_layout_assignment(const char *base) { return xasprintf("%s/assignment", base); }
char *baton_layout_partitions(const char *base) { return xasprintf("%s/partitions", base); }
char *baton_layout_keys(const char *base) { return xasprintf("%s/keys", base); }
char *baton_layout_drains(const char *base) { return xasprintf("%s/drains", base); }
char *baton_layout_pins(const char *base) { return xasprintf("%s/pins", base); }

char *baton_layout_candidate_create(const char *base) {
    return xasprintf("%s/coordinators/c-", base);
}
char *baton_layout_worker(const char *base, const char *id) {
    return xasprintf("%s/workers/%s", base, id);
}
char *baton_layout_assignment_of(const char *base, const char *id) {
    return xasprintf("%s/assignment/%s", base, id);
}
char *baton_layout_drain(const char *base, const char *id) {
    return xasprintf("%s/drains/%s", base, id);
}
char *baton_layout_pin(const char *base, int64_t partition) {
    return xasprintf("%s/pins/%lld", base, (long long)partition);
}

char *baton_layout_partition(const char *base, int64_t partition) {
    return xasprintf("%s/partitions/%lld", base, (long long)partition);
}
char *baton_layout_partition_claims(const char *base, int64_t partition) {
    return xasprintf("%s/partitions/%lld/claims", base, (long long)partition);
}
char *baton_layout_key(const char *base, const char *key) {
    return xasprintf("%s/keys/%s", base, key);
}
char *baton_layout_key_claims(const char *base, const char *key) {
    return xasprintf("%s/keys/%s/claims", base, key);
}
char *baton_layout_key_runs(const char *base, const char *key) {
    return xasprintf("%s/keys/%s/runs", base, key);
}

char *baton_layout_child(const char *dir, const char *name) {
    return xasprintf("%s/%s", dir, name);
}

/* ---- claim names ---------------------------------------------------------- */

#define PREFIX_LEN (sizeof(BATON_CLAIM_PREFIX) - 1)
#define SESSION_HEX 16
#define SEQ_DIGITS 10

void baton_claim_prefix(int64_t session, char out[BATON_CLAIM_PREFIX_SIZE]) {
    snprintf(out, BATON_CLAIM_PREFIX_SIZE, BATON_CLAIM_PREFIX "%016llx-",
             (unsigned long long)session);
}

char *baton_layout_claim_create(const char *dir, int64_t session) {
    char prefix[BATON_CLAIM_PREFIX_SIZE];
    baton_claim_prefix(session, prefix);
    return baton_layout_child(dir, prefix);
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* the prefix is written lower case: anything else is not ours */
}

int baton_claim_parse(const char *name, baton_claim_name_t *out) {
    if (strlen(name) != PREFIX_LEN + SESSION_HEX + 1 + SEQ_DIGITS ||
        strncmp(name, BATON_CLAIM_PREFIX, PREFIX_LEN) != 0 || name[PREFIX_LEN + SESSION_HEX] != '-')
        return -1;
    uint64_t session = 0;
    for (size_t i = 0; i < SESSION_HEX; i++) {
        int d = hex_digit(name[PREFIX_LEN + i]);
        if (d < 0)
            return -1;
        session = session << 4 | (uint64_t)d;
    }
    int64_t seq = baton_seq_of(name);
    if (seq < 0)
        return -1;
    out->session = (int64_t)session;
    out->seq = seq;
    return 0;
}

int64_t baton_claim_seq(const char *name) {
    return strncmp(name, BATON_CLAIM_PREFIX, PREFIX_LEN) == 0 ? baton_seq_of(name) : -1;
}

int baton_claim_of_session(const char *name, int64_t session) {
    char prefix[BATON_CLAIM_PREFIX_SIZE];
    baton_claim_prefix(session, prefix);
    return strncmp(name, prefix, strlen(prefix)) == 0 && baton_claim_seq(name) >= 0;
}

/* ---- queues ------------------------------------------------------------- */

typedef int64_t (*seq_fn)(const char *);

static const char *lowest(char *const *names, size_t n, seq_fn seq) {
    const char *low = NULL;
    int64_t low_seq = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        int64_t s = seq(names[i]);
        if (s >= 0 && s < low_seq) {
            low_seq = s;
            low = names[i];
        }
    }
    return low;
}

static const char *predecessor(char *const *names, size_t n, const char *mine, int *found,
                               size_t *below, seq_fn seq) {
    int64_t my_seq = seq(mine), pred_seq = -1;
    const char *pred = NULL;
    int have = 0;
    size_t lower = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t s = seq(names[i]);
        if (s < 0)
            continue;
        if (strcmp(names[i], mine) == 0)
            have = 1;
        else if (s < my_seq) {
            lower++;
            if (s > pred_seq) {
                pred_seq = s;
                pred = names[i];
            }
        }
    }
    if (found)
        *found = have && my_seq >= 0;
    if (below)
        *below = lower;
    return pred;
}

const char *baton_claim_lowest(char *const *names, size_t n) {
    return lowest(names, n, baton_claim_seq);
}
const char *baton_claim_predecessor(char *const *names, size_t n, const char *mine, int *found,
                                    size_t *below) {
    return predecessor(names, n, mine, found, below, baton_claim_seq);
}
/* The claim sequence of a path's last component (qsort, highest first). */
static int64_t path_claim_seq(const char *path) {
    const char *leaf = strrchr(path, '/');
    return baton_claim_seq(leaf ? leaf + 1 : path);
}
static int claim_path_desc(const void *a, const void *b) {
    int64_t sx = path_claim_seq(*(char *const *)a), sy = path_claim_seq(*(char *const *)b);
    return sx < sy ? 1 : sx > sy ? -1 : 0;
}
void baton_claim_sort_for_delete(char **paths, size_t n) {
    if (n > 1)
        qsort(paths, n, sizeof(char *), claim_path_desc);
}
const char *baton_seq_lowest(char *const *names, size_t n) {
    return lowest(names, n, baton_seq_of);
}
const char *baton_seq_predecessor(char *const *names, size_t n, const char *mine, int *found,
                                  size_t *below) {
    return predecessor(names, n, mine, found, below, baton_seq_of);
}

/* ---- watch events ------------------------------------------------------- */

/* rest starts with prefix: what follows it, else NULL. */
static const char *after(const char *rest, const char *prefix) {
    size_t n = strlen(prefix);
    return strncmp(rest, prefix, n) == 0 ? rest + n : NULL;
}

baton_path_kind_t baton_layout_classify(const char *base, const char *path, baton_path_t *out) {
    *out = (baton_path_t){.kind = BATON_PATH_OTHER, .partition = -1};
    size_t blen = base ? strlen(base) : 0;
    if (!path || !base || strncmp(path, base, blen) != 0)
        return out->kind;
    const char *rest = path + blen, *tail;
    if (strcmp(rest, "/config") == 0) {
        out->kind = BATON_PATH_CONFIG;
    } else if ((tail = after(rest, "/partitions/")) != NULL) {
        size_t digits = strspn(tail, "0123456789");
        if (digits == 0 || digits > 10 || (tail[digits] && tail[digits] != '/'))
            return out->kind;
        long long p = strtoll(tail, NULL, 10);
        if (p > INT32_MAX)
            return out->kind;
        out->kind = BATON_PATH_PARTITION;
        out->partition = (int32_t)p;
    } else if ((tail = after(rest, "/keys/")) != NULL) {
        size_t len = strcspn(tail, "/");
        if (len == 0)
            return out->kind;
        out->kind = BATON_PATH_KEY;
        out->name = tail;
        out->name_len = len;
    } else if (after(rest, "/assignment/") != NULL) {
        out->kind = BATON_PATH_ASSIGNMENT;
    } else if ((tail = after(rest, "/workers/")) != NULL && !strchr(tail, '/')) {
        out->kind = BATON_PATH_WORKER;
        out->name = tail;
        out->name_len = strlen(tail);
    }
    return out->kind;
}
