/* baton_group.c: group layout and config operations shared by batonctl, the
 * coordinator and the worker. */
#include "baton_group.h"

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_layout.h"
#include "baton_log.h"
#include "baton_util.h"
#include "baton_zkbatch.h"

#include <stdlib.h>
#include <string.h>

char *baton_group_base(const char *root, const char *group) {
    return xasprintf("%s/%s", root, group);
}

int baton_root_valid(const char *root) {
    size_t n = strlen(root);
    if (n < 2 || root[0] != '/' || root[n - 1] == '/' || strstr(root, "//"))
        return -1;
    /* ZooKeeper refuses "." and ".." components and keeps /zookeeper for
     * itself; control characters would only confuse operators. */
    if (strcmp(root, "/zookeeper") == 0 || strncmp(root, "/zookeeper/", 11) == 0)
        return -1;
    for (const char *c = root; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return -1;
    for (const char *comp = root + 1; comp && *comp;
         comp = strchr(comp, '/') ? strchr(comp, '/') + 1 : NULL) {
        size_t len = strcspn(comp, "/");
        if ((len == 1 && comp[0] == '.') || (len == 2 && comp[0] == '.' && comp[1] == '.'))
            return -1;
    }
    return 0;
}

int baton_group_config_read(baton_zk_t *zk, const char *base, int watch, baton_config_t *out,
                            char *errstr, size_t n) {
    char *path = baton_layout_config(base);
    char *data = NULL;
    size_t len = 0;
    int err = baton_zk_get(zk, path, watch, &data, &len, NULL);
    if (err == BATON_NOTFOUND)
        baton_seterr(errstr, n, err,
                     "group not initialised: '%s' does not exist (run batonctl init)", path);
    else if (err != BATON_OK)
        baton_seterr(errstr, n, err, "cannot read '%s': %s", path, baton_strerror(err));
    else {
        char why[256];
        err = baton_config_decode(data, len, out, why, sizeof(why));
        if (err != BATON_OK)
            baton_seterr(errstr, n, err, "'%s': %s", path, why);
    }
    free(data);
    free(path);
    return err;
}

/* Creates the per-partition nodes for partitions [from, to) in multis of
 * CREATE_BATCH partitions (two creates each, well under the 1 MB request
 * cap), so a large group takes a few hundred round trips, not a few per
 * partition. A batch that meets an existing node (an earlier init that
 * stopped midway) is redone node by node. */
#define CREATE_BATCH 500

static int create_partition_batch(baton_zk_t *zk, const char *base, int32_t from, int32_t to) {
    int count = (int)(to - from) * 2;
    zoo_op_t *ops = xcalloc((size_t)count, sizeof(zoo_op_t));
    zoo_op_result_t *results = xcalloc((size_t)count, sizeof(zoo_op_result_t));
    char **paths = xcalloc((size_t)count, sizeof(char *));
    for (int32_t p = from; p < to; p++) {
        int i = (int)(p - from) * 2;
        paths[i] = baton_layout_partition(base, p);
        paths[i + 1] = baton_layout_partition_claims(base, p);
        zoo_create_op_init(&ops[i], paths[i], NULL, -1, baton_zk_acl(zk), 0, NULL, 0);
        zoo_create_op_init(&ops[i + 1], paths[i + 1], NULL, -1, baton_zk_acl(zk), 0, NULL, 0);
    }
    int rc = baton_zk_multi(zk, count, ops, results);
    for (int i = 0; i < count; i++)
        free(paths[i]);
    free(paths);
    free(ops);
    free(results);
    return rc;
}

static int create_partition_nodes(baton_zk_t *zk, const char *base, int32_t from, int32_t to,
                                  char *errstr, size_t n) {
    for (int32_t lo = from; lo < to; lo += CREATE_BATCH) {
        int32_t hi = to - lo > CREATE_BATCH ? lo + CREATE_BATCH : to;
        int rc = create_partition_batch(zk, base, lo, hi);
        if (rc == ZOK)
            continue;
        if (rc != ZNODEEXISTS)
            return baton_seterr(errstr, n, baton_zk_err(rc),
                                "cannot create partitions %d-%d under '%s/partitions': %s", lo,
                                hi - 1, base, zerror(rc));
        for (int32_t p = lo; p < hi; p++) {
            char *path = baton_layout_partition_claims(base, p);
            int err = baton_zk_mkdirs(zk, path);
            if (err != BATON_OK) {
                baton_seterr(errstr, n, err, "cannot create '%s': %s", path, baton_strerror(err));
                free(path);
                return err;
            }
            free(path);
        }
    }
    return BATON_OK;
}

int baton_group_init(baton_zk_t *zk, const char *base, const baton_config_t *config, int *changed,
                     char *errstr, size_t n) {
    /* pins and drains came later: a group initialised without them works,
     * readers treat a missing one as empty. */
    static char *(*const dirs[])(const char *) = {
        baton_layout_coordinators, baton_layout_workers, baton_layout_assignment,
        baton_layout_partitions,   baton_layout_pins,    baton_layout_drains,
        baton_layout_keys};
    if (changed)
        *changed = 0;
    int err = baton_zk_mkdirs(zk, base);
    if (err != BATON_OK)
        return baton_seterr(errstr, n, err, "cannot create '%s': %s", base, baton_strerror(err));

    char *cfg_path = baton_layout_config(base);
    /* A new group gets its random id here; an existing one keeps its own
     * (or gets one now if it predates them). */
    baton_config_t next = *config;
    if (!next.group_uuid[0] && baton_uuid_new(next.group_uuid) != 0) {
        free(cfg_path);
        return baton_seterr(errstr, n, BATON_INTERNAL, "no randomness for the group id");
    }
    char *encoded = baton_config_encode(&next);
    baton_config_t cur;
    struct Stat st;
    char *data = NULL;
    size_t len = 0;
    int32_t have_partitions = 0;
    err = baton_zk_get(zk, cfg_path, 0, &data, &len, &st);
    if (err == BATON_NOTFOUND) {
        /* The permanent children first, the config last: a config that exists
         * means the layout under it is complete. */
        for (size_t i = 0; i < BATON_ARRAY_SIZE(dirs); i++) {
            char *d = dirs[i](base);
            err = baton_zk_mkdirs(zk, d);
            free(d);
            if (err != BATON_OK)
                goto out_err;
        }
        if ((err = create_partition_nodes(zk, base, 0, config->partitions, errstr, n)))
            goto out;
        BATON_FAILPOINT("group.init.before_config");
        err = baton_zk_create(zk, cfg_path, encoded, strlen(encoded), 0, NULL, 0, NULL);
        if (err == BATON_EXISTS) {
            /* Another init raced us: compare with what it wrote. */
            err = baton_zk_get(zk, cfg_path, 0, &data, &len, &st);
            if (err != BATON_OK)
                goto out_err;
        } else if (err != BATON_OK) {
            goto out_err;
        } else {
            if (changed)
                *changed = 1;
            goto out;
        }
    } else if (err != BATON_OK) {
        goto out_err;
    }

    char why[256];
    if ((err = baton_config_decode(data, len, &cur, why, sizeof(why))) != BATON_OK) {
        baton_seterr(errstr, n, err, "existing '%s' is malformed: %s", cfg_path, why);
        goto out;
    }
    /* A keys-only group (no topic, 0 partitions) may take on a topic. */
    int adopt_topic = !cur.topic[0] && cur.partitions == 0 && config->topic[0];
    if (!adopt_topic && strcmp(cur.topic, config->topic) != 0) {
        err = baton_seterr(errstr, n, BATON_CONFLICT,
                           "group already initialised with topic '%s', not '%s'", cur.topic,
                           config->topic);
        goto out;
    }
    if (strcmp(cur.strategy, config->strategy) != 0) {
        err = baton_seterr(errstr, n, BATON_CONFLICT,
                           "group already initialised with strategy '%s', not '%s'", cur.strategy,
                           config->strategy);
        goto out;
    }
    if (config->partitions < cur.partitions) {
        err = baton_seterr(errstr, n, BATON_CONFLICT,
                           "group has %d partitions; shrinking to %d is not allowed",
                           cur.partitions, config->partitions);
        goto out;
    }
    have_partitions = cur.partitions;
    int add_uuid = !cur.group_uuid[0];
    if (!add_uuid) {
        memcpy(next.group_uuid, cur.group_uuid, sizeof(next.group_uuid));
        free(encoded);
        encoded = baton_config_encode(&next);
    }
    if (config->partitions > have_partitions || adopt_topic || add_uuid) {
        if ((err =
                 create_partition_nodes(zk, base, have_partitions, config->partitions, errstr, n)))
            goto out;
        /* Conditional on the version we read: a concurrent change is an error,
         * never a silent overwrite. */
        BATON_FAILPOINT("group.init.before_config");
        err = baton_zk_set(zk, cfg_path, encoded, strlen(encoded), st.version, NULL);
        if (err == BATON_CONFLICT) {
            baton_seterr(errstr, n, err, "'%s' changed while growing it; retry", cfg_path);
            goto out;
        }
        if (err != BATON_OK)
            goto out_err;
        if (changed && (config->partitions > have_partitions || adopt_topic))
            *changed = 1;
        if (add_uuid)
            BLOG_INFO("event=group_uuid_assigned group_uuid=%s", baton_log_v(next.group_uuid));
        if (config->partitions > have_partitions)
            BLOG_INFO("event=partitions_grown from=%d to=%d", have_partitions, config->partitions);
    }
    err = BATON_OK;
    goto out;
out_err:
    baton_seterr(errstr, n, err, "cannot initialise group at '%s': %s", base, baton_strerror(err));
out:
    free(data);
    free(encoded);
    free(cfg_path);
    return err;
}

int baton_group_uuid_ensure(baton_zk_t *zk, const char *base, baton_config_t *out, int *assigned,
                            char *errstr, size_t n) {
    char *path = baton_layout_config(base);
    int err = BATON_CONFLICT;
    if (assigned)
        *assigned = 0;
    /* A versioned set: whoever assigns first wins, the others read theirs. */
    for (int attempt = 0; attempt < 5 && err == BATON_CONFLICT; attempt++) {
        char *data = NULL;
        size_t len = 0;
        struct Stat st;
        char why[256];
        err = baton_zk_get(zk, path, 0, &data, &len, &st);
        if (err == BATON_OK && (err = baton_config_decode(data, len, out, why, sizeof(why))))
            baton_seterr(errstr, n, err, "'%s': %s", path, why);
        else if (err == BATON_NOTFOUND)
            baton_seterr(errstr, n, err,
                         "group not initialised: '%s' does not exist (run batonctl init)", path);
        else if (err != BATON_OK)
            baton_seterr(errstr, n, err, "cannot read '%s': %s", path, baton_strerror(err));
        free(data);
        if (err != BATON_OK || out->group_uuid[0])
            break;
        if (baton_uuid_new(out->group_uuid) != 0) {
            err = baton_seterr(errstr, n, BATON_INTERNAL, "no randomness for the group id");
            break;
        }
        char *enc = baton_config_encode(out);
        err = baton_zk_set(zk, path, enc, strlen(enc), st.version, NULL);
        free(enc);
        if (err == BATON_OK) {
            if (assigned)
                *assigned = 1;
            BLOG_INFO("event=group_uuid_assigned group_uuid=%s", baton_log_v(out->group_uuid));
        } else if (err != BATON_CONFLICT) {
            baton_seterr(errstr, n, err, "cannot write '%s': %s", path, baton_strerror(err));
        }
    }
    if (err == BATON_CONFLICT)
        baton_seterr(errstr, n, err, "'%s' kept changing while assigning the group id; retry",
                     path);
    free(path);
    return err;
}

int baton_group_sink_read(baton_zk_t *zk, const char *base, baton_sink_binding_t *out,
                          int32_t *version, char *errstr, size_t n) {
    char *path = baton_layout_sink(base);
    char *data = NULL;
    size_t len = 0;
    struct Stat st;
    memset(out, 0, sizeof(*out));
    int err = baton_zk_get(zk, path, 0, &data, &len, &st);
    if (err == BATON_OK) {
        char why[256];
        if ((err = baton_sink_binding_decode(data, len, out, why, sizeof(why))) != BATON_OK)
            baton_seterr(errstr, n, err, "'%s': %s", path, why);
        else if (version)
            *version = st.version;
    } else if (err == BATON_NOTFOUND) {
        baton_seterr(errstr, n, err, "'%s' does not exist: the group is bound to no sink yet",
                     path);
    } else {
        baton_seterr(errstr, n, err, "cannot read '%s': %s", path, baton_strerror(err));
    }
    free(data);
    free(path);
    return err;
}

int baton_group_sink_write(baton_zk_t *zk, const char *base, const baton_sink_binding_t *b,
                           int32_t version, char *errstr, size_t n) {
    char *path = baton_layout_sink(base);
    char *enc = baton_sink_binding_encode(b);
    int err = version < 0 ? baton_zk_create(zk, path, enc, strlen(enc), 0, NULL, 0, NULL)
                          : baton_zk_set(zk, path, enc, strlen(enc), version, NULL);
    if (err == BATON_EXISTS || err == BATON_CONFLICT || err == BATON_NOTFOUND)
        baton_seterr(errstr, n, BATON_CONFLICT, "'%s' changed meanwhile (another binder)", path);
    else if (err != BATON_OK)
        baton_seterr(errstr, n, err, "cannot write '%s': %s", path, baton_strerror(err));
    free(enc);
    free(path);
    return err == BATON_EXISTS || err == BATON_NOTFOUND ? BATON_CONFLICT : err;
}

/* ---- named keys ---------------------------------------------------------- */

void baton_bad_keys_free(baton_bad_keys_t *bad) {
    for (size_t i = 0; bad && i < bad->n; i++)
        free(bad->v[i].name);
    if (bad)
        free(bad->v);
}

const char *baton_bad_key_reason(baton_bad_key_why_t why) {
    return why == BATON_BAD_KEY_OVER_MAX ? "over_keys_max" : "not_a_key_name";
}

int baton_group_keys(baton_zk_t *zk, const char *base, int watch, char ***names, size_t *count,
                     baton_bad_keys_t *ignored, char *errstr, size_t n) {
    if (ignored)
        *ignored = (baton_bad_keys_t){0};
    char *dir = baton_layout_keys(base);
    int err = baton_zk_children(zk, dir, watch, names, count);
    if (err == BATON_NOTFOUND) {
        /* A group initialised before keys existed: none, but watch for the
         * directory's creation so the first `keys add` is seen. */
        *names = NULL;
        *count = 0;
        err = watch ? baton_zk_exists(zk, dir, 1, NULL) : BATON_NOTFOUND;
        if (err == BATON_NOTFOUND)
            err = BATON_OK;
        else if (err == BATON_OK)
            err = BATON_CONNECTION; /* created meanwhile: read again */
    }
    if (err != BATON_OK)
        baton_seterr(errstr, n, err, "cannot list '%s': %s", dir, baton_strerror(err));
    else if (*count)
        qsort(*names, *count, sizeof(char *), baton_strcmp_p);
    /* Only what `batonctl keys add` could have made: a child made by hand
     * ("bad key", over 128 characters) or past BATON_KEYS_MAX would be
     * published in assignments every worker's decoder refuses, and each
     * would keep its old assignment from then on. Such a key is ignored,
     * loudly, as a bad member node is. */
    size_t kept = 0;
    for (size_t i = 0; err == BATON_OK && i < *count; i++) {
        char *k = (*names)[i];
        int bad_name = baton_key_valid(k) != 0;
        if (bad_name || kept >= BATON_KEYS_MAX) {
            baton_bad_key_why_t why = bad_name ? BATON_BAD_KEY_NAME : BATON_BAD_KEY_OVER_MAX;
            BLOG_ERROR("event=bad_key path=\"%s/%s\" reason=%s action=ignore", baton_log_q(dir),
                       baton_log_q(k), baton_bad_key_reason(why));
            if (ignored) {
                ignored->v = xrealloc(ignored->v, sizeof(*ignored->v) * (ignored->n + 1));
                ignored->v[ignored->n++] = (baton_bad_key_t){.name = k, .why = why};
            } else {
                free(k);
            }
            continue;
        }
        (*names)[kept++] = k;
    }
    if (err == BATON_OK)
        *count = kept;
    free(dir);
    return err;
}

int baton_keys_room(char *const *children, size_t nchildren, char *const *keys, size_t nkeys,
                    size_t *have, size_t *fresh, char *errstr, size_t n) {
    *have = 0;
    *fresh = 0;
    for (size_t i = 0; i < nchildren; i++)
        *have += baton_key_valid(children[i]) == 0;
    /* Sorted, so a name asked for twice counts once. */
    char **sorted = xmalloc(sizeof(char *) * (nkeys + 1));
    for (size_t i = 0; i < nkeys; i++)
        sorted[i] = keys[i];
    qsort(sorted, nkeys, sizeof(char *), baton_strcmp_p);
    for (size_t i = 0; i < nkeys; i++)
        if ((i == 0 || strcmp(sorted[i - 1], sorted[i]) != 0) &&
            !(nchildren &&
              bsearch(&sorted[i], children, nchildren, sizeof(char *), baton_strcmp_p)))
            (*fresh)++;
    free(sorted);
    if (*fresh == 0 || *have + *fresh <= BATON_KEYS_MAX)
        return BATON_OK;
    if (*have >= BATON_KEYS_MAX)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "the group has %zu keys, the limit is %d: cannot add the %zu new "
                            "one(s) asked for (nothing added); remove keys first",
                            *have, BATON_KEYS_MAX, *fresh);
    return baton_seterr(errstr, n, BATON_INVALID,
                        "the group has %zu keys and %zu of those asked for are new: that would "
                        "pass the limit of %d keys (nothing added); add at most %zu, or remove "
                        "keys first",
                        *have, *fresh, BATON_KEYS_MAX, (size_t)BATON_KEYS_MAX - *have);
}

int baton_keys_room_listed(char *const *names, size_t nnames, const baton_bad_keys_t *ignored,
                           char *const *keys, size_t nkeys, char *errstr, size_t n) {
    size_t nbad = ignored ? ignored->n : 0, have = 0, fresh = 0;
    /* Every child counts, the ignored ones too: a name past the limit is
     * still a key, and a name already there is not new. */
    char **all = xmalloc(sizeof(char *) * (nnames + nbad + 1));
    for (size_t i = 0; i < nnames; i++)
        all[i] = names[i];
    for (size_t i = 0; i < nbad; i++)
        all[nnames + i] = ignored->v[i].name;
    qsort(all, nnames + nbad, sizeof(char *), baton_strcmp_p);
    int err = baton_keys_room(all, nnames + nbad, keys, nkeys, &have, &fresh, errstr, n);
    free(all);
    return err;
}

int baton_group_keys_room(baton_zk_t *zk, const char *base, char *const *keys, size_t nkeys,
                          char *errstr, size_t n) {
    char *dir = baton_layout_keys(base);
    char **kids = NULL;
    size_t nk = 0;
    int err = baton_zk_children(zk, dir, 0, &kids, &nk);
    if (err == BATON_NOTFOUND)
        err = BATON_OK; /* no keys yet */
    if (err != BATON_OK)
        baton_seterr(errstr, n, err, "cannot list '%s': %s", dir, baton_strerror(err));
    else
        err = baton_keys_room_listed(kids, nk, NULL, keys, nkeys, errstr, n);
    baton_zk_strings_free(kids, nk);
    free(dir);
    return err;
}

int baton_group_keys_add(baton_zk_t *zk, const char *base, char *const *keys, size_t nkeys,
                         size_t *added, char *errstr, size_t n) {
    if (added)
        *added = 0;
    for (size_t i = 0; i < nkeys; i++)
        if (baton_key_valid(keys[i]) != 0)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "'%s' is not a key name (1-128 of [A-Za-z0-9._-])", keys[i]);
    /* Past the limit the coordinator would ignore the new keys: refused
     * before anything is created. Two adds at once may each find room and
     * pass it together; the coordinator's ignore-with-warning
     * (baton_group_keys) is the backstop for that race. */
    int err = baton_group_keys_room(zk, base, keys, nkeys, errstr, n);
    if (err != BATON_OK)
        return err;
    char *dir = baton_layout_keys(base);
    err = baton_zk_mkdirs(zk, dir);
    free(dir);
    if (err != BATON_OK)
        return baton_seterr(errstr, n, err, "cannot create '%s/keys': %s", base,
                            baton_strerror(err));
    for (size_t i = 0; i < nkeys; i++) {
        /* The key and its claims directory together: a key node always has one. */
        char *key = baton_layout_key(base, keys[i]);
        char *claims = baton_layout_key_claims(base, keys[i]);
        zoo_op_t ops[2];
        zoo_op_result_t res[2];
        zoo_create_op_init(&ops[0], key, NULL, -1, baton_zk_acl(zk), 0, NULL, 0);
        zoo_create_op_init(&ops[1], claims, NULL, -1, baton_zk_acl(zk), 0, NULL, 0);
        BATON_FAILPOINT("group.keys.before_create");
        int rc = baton_zk_multi(zk, 2, ops, res);
        free(key);
        free(claims);
        if (rc == ZOK) {
            if (added)
                (*added)++;
            BLOG_INFO("event=key_added key=%s", baton_log_v(keys[i]));
        } else if (rc != ZNODEEXISTS) {
            return baton_seterr(errstr, n, baton_zk_err(rc), "cannot add key '%s': %s", keys[i],
                                zerror(rc));
        }
    }
    return BATON_OK;
}

/* Children of dir as full paths appended to *paths (a missing dir adds
 * nothing and sets *exists to 0). */
static int child_paths(baton_zk_t *zk, const char *dir, char ***paths, size_t *n, int *exists) {
    char **kids = NULL;
    size_t nk = 0;
    int err = baton_zk_children(zk, dir, 0, &kids, &nk);
    *exists = err != BATON_NOTFOUND;
    if (err == BATON_NOTFOUND)
        return BATON_OK;
    if (err != BATON_OK)
        return err;
    *paths = xrealloc(*paths, sizeof(char *) * (*n + nk + 1));
    for (size_t k = 0; k < nk; k++)
        (*paths)[(*n)++] = baton_layout_child(dir, kids[k]);
    baton_zk_strings_free(kids, nk);
    return BATON_OK;
}

/* One attempt at deleting a key with its claims and its --once run records
 * (runs/), children first, in one multi. The claims go highest first
 * (baton_claim_sort_for_delete: a waiting member must see its own claim's
 * deletion before its predecessor's). */
static int key_remove_once(baton_zk_t *zk, const char *base, const char *name) {
    char *key = baton_layout_key(base, name);
    char *claims = baton_layout_key_claims(base, name);
    char *runs = baton_layout_key_runs(base, name);
    char **paths = NULL;
    size_t np = 0;
    int have_claims = 0, have_runs = 0;
    int err = child_paths(zk, claims, &paths, &np, &have_claims);
    if (err == BATON_OK)
        baton_claim_sort_for_delete(paths, np);
    if (err == BATON_OK)
        err = child_paths(zk, runs, &paths, &np, &have_runs);
    if (err == BATON_OK) {
        paths = xrealloc(paths, sizeof(char *) * (np + 3));
        if (have_claims)
            paths[np++] = xstrdup(claims);
        if (have_runs)
            paths[np++] = xstrdup(runs);
        paths[np++] = xstrdup(key);
        zoo_op_t *ops = xcalloc(np, sizeof(zoo_op_t));
        zoo_op_result_t *res = xcalloc(np, sizeof(zoo_op_result_t));
        for (size_t k = 0; k < np; k++)
            zoo_delete_op_init(&ops[k], paths[k], -1);
        int rc = baton_zk_multi(zk, (int)np, ops, res);
        free(ops);
        free(res);
        /* A claim or run created meanwhile: not empty; the caller retries. */
        err = rc == ZOK ? BATON_OK : rc == ZNOTEMPTY ? BATON_CONFLICT : baton_zk_err(rc);
        if (rc == ZNONODE)
            err = BATON_CONFLICT; /* something went meanwhile: look again */
    }
    for (size_t k = 0; k < np; k++)
        free(paths[k]);
    free(paths);
    free(runs);
    free(claims);
    free(key);
    return err;
}

int baton_group_keys_remove(baton_zk_t *zk, const char *base, char *const *keys, size_t nkeys,
                            size_t *removed, char *errstr, size_t n) {
    if (removed)
        *removed = 0;
    for (size_t i = 0; i < nkeys; i++)
        if (baton_key_valid(keys[i]) != 0)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "'%s' is not a key name (1-128 of [A-Za-z0-9._-])", keys[i]);
    for (size_t i = 0; i < nkeys; i++) {
        char *key = baton_layout_key(base, keys[i]);
        int err = baton_zk_exists(zk, key, 0, NULL);
        /* Live claims go with the key (their holders see them vanish: LOST,
         * and anything they still write is fenced by whoever owns next). */
        for (int attempt = 0; err == BATON_OK && attempt < 10; attempt++) {
            err = key_remove_once(zk, base, keys[i]);
            if (err != BATON_CONFLICT)
                break;
            int e2 = baton_zk_exists(zk, key, 0, NULL);
            if (e2 != BATON_OK) {
                err = e2; /* NOTFOUND: someone else removed it */
                break;
            }
            err = attempt + 1 < 10 ? BATON_OK : BATON_CONFLICT;
        }
        if (err == BATON_OK) {
            if (removed)
                (*removed)++;
            BLOG_INFO("event=key_removed key=%s", baton_log_v(keys[i]));
        }
        free(key);
        if (err != BATON_OK && err != BATON_NOTFOUND)
            return baton_seterr(errstr, n, err, "cannot remove key '%s': %s", keys[i],
                                baton_strerror(err));
    }
    return BATON_OK;
}

/* Deletes path and everything below it, children first. A node that goes
 * meanwhile is fine; one created meanwhile (ZNOTEMPTY) makes it list again,
 * a bounded number of times. */
static int delete_tree(baton_zk_t *zk, const char *path, int depth) {
    if (depth > 1000)
        return BATON_INVALID; /* nothing baton writes is this deep: not recursed into */
    int err = BATON_CONFLICT;
    for (int attempt = 0; attempt < 5 && err == BATON_CONFLICT; attempt++) {
        char **kids = NULL;
        size_t nk = 0;
        err = baton_zk_children(zk, path, 0, &kids, &nk);
        for (size_t k = 0; err == BATON_OK && k < nk; k++) {
            char *child = baton_layout_child(path, kids[k]);
            err = delete_tree(zk, child, depth + 1);
            free(child);
        }
        baton_zk_strings_free(kids, nk);
        if (err != BATON_OK)
            break; /* a child's own retries are spent: no more here */
        err = baton_zk_delete(zk, path, -1);
    }
    return err == BATON_NOTFOUND && depth > 0 ? BATON_OK : err;
}

int baton_group_bad_key_remove(baton_zk_t *zk, const char *base, const char *name, char *errstr,
                               size_t n) {
    if (baton_key_valid(name) == 0)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "'%s' is a key name: remove it with batonctl keys remove", name);
    char *dir = baton_layout_keys(base);
    char *path = baton_layout_child(dir, name);
    int err = delete_tree(zk, path, 0);
    if (err == BATON_OK)
        BLOG_INFO("event=bad_key_removed path=\"%s\"", baton_log_q(path));
    else if (err != BATON_NOTFOUND)
        baton_seterr(errstr, n, err, "cannot remove '%s': %s", path, baton_strerror(err));
    free(path);
    free(dir);
    return err;
}

/* ---- a session's claims -------------------------------------------------- */

baton_zkread_t *baton_group_claims_children(baton_zk_t *zk, baton_res_table_t *t) {
    char **dirs = xcalloc(t->n + 1, sizeof(char *));
    baton_zkread_t *reads = xcalloc(t->n + 1, sizeof(*reads));
    for (size_t i = 0; i < t->n; i++)
        dirs[i] = (char *)baton_res_claims(t, i); /* the table's */
    baton_zkbatch_children(zk, dirs, t->n, reads);
    free(dirs);
    return reads;
}

void baton_group_claims_free(baton_zkread_t *reads, size_t n) {
    for (size_t i = 0; reads && i < n; i++)
        baton_zkread_release(&reads[i]);
    free(reads);
}

int baton_group_session_claims(baton_zk_t *zk, baton_res_table_t *t, int64_t session,
                               baton_session_claim_t **claims, size_t *count, char *errstr,
                               size_t n) {
    *claims = NULL;
    *count = 0;
    char **keys = NULL;
    size_t nkeys = 0;
    int err = baton_group_keys(zk, t->base, 0, &keys, &nkeys, NULL, errstr, n);
    if (err != BATON_OK)
        return err;
    for (size_t k = 0; k < nkeys; k++)
        baton_res_table_add_key(t, keys[k]);
    baton_zk_strings_free(keys, nkeys);
    baton_zkread_t *reads = baton_group_claims_children(zk, t);
    size_t cap = 0;
    for (size_t i = 0; i < t->n && err == BATON_OK; i++) {
        baton_zkread_t *r = &reads[i];
        const char *dir = baton_res_claims(t, i);
        if (r->err == BATON_NOTFOUND)
            continue;
        if (r->err != BATON_OK) {
            err = baton_seterr(errstr, n, r->err, "cannot list '%s': %s", dir,
                               baton_strerror(r->err));
            break;
        }
        const char *lowest = baton_claim_lowest(r->names, r->count);
        for (size_t k = 0; k < r->count; k++) {
            if (!baton_claim_of_session(r->names[k], session))
                continue;
            if (*count == cap)
                *claims = xrealloc(*claims, (cap = cap ? cap * 2 : 16) * sizeof(**claims));
            (*claims)[(*count)++] = (baton_session_claim_t){
                .row = i,
                .path = baton_layout_child(dir, r->names[k]),
                .name = xstrdup(r->names[k]),
                .lowest = r->names[k] == lowest,
            };
        }
    }
    baton_group_claims_free(reads, t->n);
    return err;
}

void baton_session_claims_free(baton_session_claim_t *claims, size_t n) {
    for (size_t i = 0; claims && i < n; i++) {
        free(claims[i].path);
        free(claims[i].name);
    }
    free(claims);
}
