/* ctl_keys.h: named keys in batonctl: `keys add|remove|list`, the keys
 * part of `status`, and the --keys list parser `init` shares. */
#ifndef CTL_KEYS_H
#define CTL_KEYS_H

#include "baton_group.h"
#include "baton_resource.h"
#include "baton_zk.h"
#include "ctl.h"
#include "ctl_claims.h"

#include <jansson.h>
#include <stdio.h>

/* Splits a comma-separated key list into heap strings (the caller frees
 * each and the array); exits 2 naming flag and the bad name if one is not a
 * key name or the list is empty. Duplicates are dropped. */
void ctl_keys_parse(const char *list, const char *flag, char ***keys, size_t *nkeys);

/* The group's keys as a JSON array, sorted by name:
 *   [{"key": "nightly", "assigned": "w1" | null, "owner": "w1" | null,
 *     "epoch": 4294967320 | null, "state": "active" | "handoff" | "unowned",
 *     "claims": 1, "since_ms": 1700000000000 | null,
 *     "state_age_ms": 5000 | null, "runs": 2}]
 * runs counts the --once runs recorded under keys/<key>/runs. Malformed
 * data is appended to warnings ({"path", "problem"}), never an error. */
int ctl_keys_gather(baton_zk_t *zk, const char *base, int64_t now_ms, json_t *warnings,
                    json_t **out, char *errstr, size_t errstr_size);

/* One warning ({"path", "problem"}) per child of <base>/keys that
 * baton_group_keys ignored: its path (the name escaped: ctl_escaped), why,
 * and how to remove it. */
void ctl_keys_warn_ignored(json_t *warnings, const char *base, const baton_bad_keys_t *bad);

/* The key rows of t (from t->npartitions on) as ctl_keys_gather returns
 * them, from their queues q[] and assigned members (both indexed by row). */
json_t *ctl_keys_rows(baton_zk_t *zk, const baton_res_table_t *t, const ctl_queue_t *q,
                      const char *const *assigned, int64_t now_ms);

/* The KEYS table of `status` (nothing when the group has no keys). */
void ctl_keys_print(const json_t *status, FILE *f);

int ctl_cmd_keys(ctl_ctx_t *ctx, int argc, char **argv);
void ctl_keys_usage(FILE *f);

#endif
