/* baton_group.h: the operations on one group's ZooKeeper layout (its paths
 * and queue rules: baton_layout.h) that several programs share: reading the
 * config and initialising the permanent znodes. */
#ifndef BATON_GROUP_H
#define BATON_GROUP_H

#include "baton_codec.h"
#include "baton_resource.h"
#include "baton_zk.h"
#include "baton_zkbatch.h"

#define BATON_DEFAULT_ROOT "/baton"

/* Builds "<root>/<group>"; the caller frees. root has no trailing slash. */
char *baton_group_base(const char *root, const char *group);

/* Reads and validates <base>/config. BATON_NOTFOUND if the group was never
 * initialised; BATON_CORRUPT with a message if its data is malformed. */
int baton_group_config_read(baton_zk_t *zk, const char *base, int watch, baton_config_t *out,
                            char *errstr, size_t errstr_size);

/* Writes the group's config and permanent znodes. Idempotent for the same
 * values; growing the partition count is allowed (new partition nodes are
 * created); any other difference is BATON_CONFLICT with a message naming the
 * field. *created (may be NULL) is set to 1 if anything was written. */
int baton_group_init(baton_zk_t *zk, const char *base, const baton_config_t *config, int *changed,
                     char *errstr, size_t errstr_size);

/* Gives the group its random id (config "group_uuid") if it has none yet,
 * by a versioned set of <base>/config, so concurrent callers agree on one.
 * *out is the config as it now stands; *assigned (may be NULL) is 1 if this
 * call wrote the id. */
int baton_group_uuid_ensure(baton_zk_t *zk, const char *base, baton_config_t *out, int *assigned,
                            char *errstr, size_t errstr_size);

/* The group's sink binding, <base>/sink (baton_codec.h). BATON_NOTFOUND if
 * the group is bound to no sink yet; *version (may be NULL) is the node's
 * version for baton_group_sink_write. */
int baton_group_sink_read(baton_zk_t *zk, const char *base, baton_sink_binding_t *out,
                          int32_t *version, char *errstr, size_t errstr_size);
/* Writes the binding: version -1 creates <base>/sink (the first binder),
 * otherwise a set at exactly that version. BATON_CONFLICT if someone else
 * created or changed it meanwhile (read it again and compare). */
int baton_group_sink_write(baton_zk_t *zk, const char *base, const baton_sink_binding_t *b,
                           int32_t version, char *errstr, size_t errstr_size);

/* Named keys (batonctl keys): <base>/keys/<name>/claims/claim-...
 * (paths: baton_layout.h) */
/* Why baton_group_keys ignored a child of <base>/keys. */
typedef enum {
    BATON_BAD_KEY_NAME,     /* not a key name (made by hand): reason=not_a_key_name */
    BATON_BAD_KEY_OVER_MAX, /* a key name past BATON_KEYS_MAX: reason=over_keys_max */
} baton_bad_key_why_t;
/* The children of <base>/keys that baton_group_keys ignored, in name order.
 * name is as ZooKeeper gave it: anything a path may hold, never printed
 * raw. */
typedef struct {
    char *name;
    baton_bad_key_why_t why;
} baton_bad_key_t;
typedef struct {
    baton_bad_key_t *v;
    size_t n;
} baton_bad_keys_t;
void baton_bad_keys_free(baton_bad_keys_t *bad);
/* The reason word of event=bad_key for why. */
const char *baton_bad_key_reason(baton_bad_key_why_t why);

/* The sorted key names of the group (children of <base>/keys; none if that
 * does not exist). watch: leave a child watch (or an exists watch on a
 * missing directory). *names is freed with baton_zk_strings_free. A child
 * that is not a key name, or past BATON_KEYS_MAX, is left out, logged
 * (event=bad_key ... action=ignore) and, if ignored is not NULL, listed
 * there (free with baton_bad_keys_free, also after an error). */
int baton_group_keys(baton_zk_t *zk, const char *base, int watch, char ***names, size_t *count,
                     baton_bad_keys_t *ignored, char *errstr, size_t errstr_size);
/* The keys limit's arithmetic, apart from ZooKeeper. children: the names
 * under <base>/keys, sorted as baton_strcmp_p sorts; keys: valid key names,
 * in any order, repeats allowed. *have: the children that are key names
 * (one past the limit counts: it is a key); *fresh: the distinct keys not
 * among children. BATON_INVALID, with a message naming the limit and both
 * counts, if the fresh ones would take the group past BATON_KEYS_MAX; never
 * when none is fresh (nothing would be created). */
int baton_keys_room(char *const *children, size_t nchildren, char *const *keys, size_t nkeys,
                    size_t *have, size_t *fresh, char *errstr, size_t errstr_size);
/* baton_keys_room on a listing of <base>/keys, in any order: the children
 * as ZooKeeper gave them (ignored NULL), or what baton_group_keys split
 * into kept names and ignored children (either may be empty), so that a
 * caller that needs that listing anyway does not list the keys twice. */
int baton_keys_room_listed(char *const *names, size_t nnames, const baton_bad_keys_t *ignored,
                           char *const *keys, size_t nkeys, char *errstr, size_t errstr_size);
/* baton_keys_room on the group's keys as they are now (one listing). */
int baton_group_keys_room(baton_zk_t *zk, const char *base, char *const *keys, size_t nkeys,
                          char *errstr, size_t errstr_size);
/* Adds keys (key node + claims directory, atomically each); existing ones
 * are left alone. Every name is validated first: one bad name adds nothing.
 * So is the limit: keys that would take the group past BATON_KEYS_MAX
 * (baton_group_keys_room) add nothing, BATON_INVALID. A concurrent add may
 * still pass it; the coordinator then ignores what is past it (event=bad_key
 * reason=over_keys_max). */
int baton_group_keys_add(baton_zk_t *zk, const char *base, char *const *keys, size_t nkeys,
                         size_t *added, char *errstr, size_t errstr_size);
/* Removes keys with whatever claims they have (their holders lose them);
 * missing ones are fine. */
int baton_group_keys_remove(baton_zk_t *zk, const char *base, char *const *keys, size_t nkeys,
                            size_t *removed, char *errstr, size_t errstr_size);
/* Removes the child <base>/keys/<name> that is not a key name (one
 * baton_group_keys ignores as BATON_BAD_KEY_NAME), with everything below
 * it. BATON_INVALID, removing nothing, if name is a key name: this never
 * takes a key. BATON_NOTFOUND if it was not there. */
int baton_group_bad_key_remove(baton_zk_t *zk, const char *base, const char *name, char *errstr,
                               size_t errstr_size);

/* The children of every row's claims directory (baton_res_claims), read in
 * one batch: reads[i] is row i's (BATON_NOTFOUND for a directory that is
 * not there). Free with baton_group_claims_free(reads, t->n). */
baton_zkread_t *baton_group_claims_children(baton_zk_t *zk, baton_res_table_t *t);
void baton_group_claims_free(baton_zkread_t *reads, size_t n);

/* One claim of a session (baton_group_session_claims). */
typedef struct {
    size_t row; /* its resource's row in the table given */
    char *path; /* <claims directory>/<name> */
    char *name; /* claim-<16 hex session>-<seq> */
    int lowest; /* the lowest claim of its directory when listed: the owner's */
} baton_session_claim_t;

/* Every claim of session in every claims directory of the group: those of
 * t's partitions and of every named key of the group (read here and added
 * to t; t's base is the group's). A claim is the session's by its name
 * (baton_claim_of_session); a caller that must be sure reads its
 * ephemeralOwner. A directory that does not exist is skipped. *claims
 * (partitions first, then keys in name order) is freed with
 * baton_session_claims_free, also after an error. BATON_OK, or the first
 * error with a message naming what could not be listed. */
int baton_group_session_claims(baton_zk_t *zk, baton_res_table_t *t, int64_t session,
                               baton_session_claim_t **claims, size_t *n, char *errstr,
                               size_t errstr_size);
void baton_session_claims_free(baton_session_claim_t *claims, size_t n);

/* Validates a ZooKeeper root path: starts with '/', no trailing '/', no empty
 * components. */
int baton_root_valid(const char *root);

#endif
