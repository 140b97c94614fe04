/* baton_resource.h: the resources of a group (its topic's partitions and
 * its named keys) as rows of one table.
 *
 * Everything that handles ownership (the plan step, the coordinator, the
 * membership, batonctl) addresses a resource by its row in a table, never
 * by kind-specific parallel arrays:
 *
 *   rows [0, npartitions)        partition p is row p
 *   rows [npartitions, n)        named keys, in the order they were added
 *
 * A row holds the public form (baton_resource_t: kind, partition, key) and
 * its claims directory (baton_layout.h). Which members may take a row is
 * the plan's business (plan.h: baton_plan_member_takes), not the table's.
 *
 * Not thread-safe; owned by one thread. */
#ifndef BATON_RESOURCE_H
#define BATON_RESOURCE_H

#include "baton/baton.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    baton_resource_t res; /* res.key is owned by the table */
    char *claims;         /* the claims directory, built at first ask */
} baton_res_row_t;

typedef struct {
    char *base;          /* "<root>/<group>", or NULL: no claims directories */
    int32_t npartitions; /* rows [0, npartitions) are the partitions */
    baton_res_row_t *rows;
    size_t n, cap;
    size_t *by_key; /* the key rows, sorted by key: lookups */
    size_t nkeys;
} baton_res_table_t;

/* A table of npartitions partitions (>= 0) and no keys; base may be NULL
 * (then baton_res_claims returns NULL). */
void baton_res_table_init(baton_res_table_t *t, const char *base, int32_t npartitions);
void baton_res_table_free(baton_res_table_t *t);

/* The row of the key (added if it is new). Keys are never removed: a row
 * stays valid while the table lives. */
size_t baton_res_table_add_key(baton_res_table_t *t, const char *key);

/* The row of a key (len bytes of key, not NUL-terminated), or -1. */
long baton_res_table_find_key(const baton_res_table_t *t, const char *key, size_t len);
/* The row of r, or -1: NULL, a partition out of range, an unknown key, an
 * unknown kind. */
long baton_res_table_find(const baton_res_table_t *t, const baton_resource_t *r);

/* Row i's resource (i < t->n). A partition row's number is written here,
 * when it is first looked at, not when the table is made
 * (baton_res_table_init): so even a read writes the row, which is one
 * more reason the table belongs to one thread. */
static inline const baton_resource_t *baton_res_at(const baton_res_table_t *t, size_t i) {
    if (i < (size_t)t->npartitions)
        t->rows[i].res.partition = (int32_t)i;
    return &t->rows[i].res;
}
static inline int baton_res_is_key(const baton_res_table_t *t, size_t i) {
    return i >= (size_t)t->npartitions;
}

/* Row i's claims directory (<base>/partitions/<p>/claims or
 * <base>/keys/<key>/claims), cached in the row; NULL without a base. */
const char *baton_res_claims(baton_res_table_t *t, size_t i);

/* The claims directory of any resource (heap; the caller frees). */
char *baton_res_claims_of(const char *base, const baton_resource_t *r);

/* "partition=3" or "key=nightly": how log lines name a resource. Writes
 * into buf (BATON_RES_LABEL_SIZE always suffices) and returns it. */
#define BATON_RES_LABEL_SIZE 160
const char *baton_res_label(const baton_resource_t *r, char *buf, size_t size);

#endif
