/* baton_resource.c: the resource table of baton_resource.h. */
#include "baton_resource.h"

#include "baton_layout.h"
#include "baton_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void baton_res_table_init(baton_res_table_t *t, const char *base, int32_t npartitions) {
    memset(t, 0, sizeof(*t));
    t->base = base ? xstrdup(base) : NULL;
    t->npartitions = npartitions > 0 ? npartitions : 0;
    t->cap = (size_t)t->npartitions + 8;
    /* Zeroed is a partition row but for its number, which baton_res_at
     * writes when the row is looked at: a member of a group of 100,000
     * partitions holds about 100, and filling every row here wrote 2.4 MB
     * per table (a page fault per 4 kB: in the 1,000-member scale
     * benchmark, 2.4 GB and 600,000 faults in one process). */
    t->rows = xcalloc(t->cap, sizeof(*t->rows));
    t->n = (size_t)t->npartitions;
}

void baton_res_table_free(baton_res_table_t *t) {
    for (size_t i = 0; i < t->n; i++) {
        free(t->rows[i].claims);
        free((char *)t->rows[i].res.key);
    }
    free(t->rows);
    free(t->by_key);
    free(t->base);
    memset(t, 0, sizeof(*t));
}

/* The first position in by_key whose key is >= key[0..len). */
static size_t key_lower_bound(const baton_res_table_t *t, const char *key, size_t len) {
    size_t lo = 0, hi = t->nkeys;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *k = t->rows[t->by_key[mid]].res.key;
        size_t klen = strlen(k);
        int c = memcmp(k, key, klen < len ? klen : len);
        if (c == 0)
            c = klen < len ? -1 : klen > len ? 1 : 0;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

long baton_res_table_find_key(const baton_res_table_t *t, const char *key, size_t len) {
    if (!key)
        return -1;
    size_t at = key_lower_bound(t, key, len);
    if (at == t->nkeys)
        return -1;
    const char *k = t->rows[t->by_key[at]].res.key;
    return strlen(k) == len && memcmp(k, key, len) == 0 ? (long)t->by_key[at] : -1;
}

size_t baton_res_table_add_key(baton_res_table_t *t, const char *key) {
    size_t len = strlen(key);
    long found = baton_res_table_find_key(t, key, len);
    if (found >= 0)
        return (size_t)found;
    if (t->n == t->cap) {
        t->cap = t->cap * 2 + 8;
        t->rows = xrealloc(t->rows, t->cap * sizeof(*t->rows));
    }
    size_t row = t->n++;
    t->rows[row] = (baton_res_row_t){
        .res = {.kind = BATON_RESOURCE_KEY, .partition = -1, .key = xstrdup(key)}};
    size_t at = key_lower_bound(t, key, len);
    t->by_key = xrealloc(t->by_key, (t->nkeys + 1) * sizeof(*t->by_key));
    memmove(&t->by_key[at + 1], &t->by_key[at], (t->nkeys - at) * sizeof(*t->by_key));
    t->by_key[at] = row;
    t->nkeys++;
    return row;
}

long baton_res_table_find(const baton_res_table_t *t, const baton_resource_t *r) {
    if (!r)
        return -1;
    if (r->kind == BATON_RESOURCE_PARTITION)
        return r->partition >= 0 && r->partition < t->npartitions ? (long)r->partition : -1;
    if (r->kind == BATON_RESOURCE_KEY && r->key)
        return baton_res_table_find_key(t, r->key, strlen(r->key));
    return -1;
}

char *baton_res_claims_of(const char *base, const baton_resource_t *r) {
    if (r->kind == BATON_RESOURCE_PARTITION)
        return baton_layout_partition_claims(base, r->partition);
    return baton_layout_key_claims(base, r->key);
}

const char *baton_res_claims(baton_res_table_t *t, size_t i) {
    if (!t->base || i >= t->n)
        return NULL;
    if (!t->rows[i].claims)
        t->rows[i].claims = baton_res_claims_of(t->base, baton_res_at(t, i));
    return t->rows[i].claims;
}

const char *baton_res_label(const baton_resource_t *r, char *buf, size_t size) {
    if (r->kind == BATON_RESOURCE_PARTITION)
        snprintf(buf, size, "partition=%d", (int)r->partition);
    else
        snprintf(buf, size, "key=%s", r->key ? r->key : "");
    return buf;
}
