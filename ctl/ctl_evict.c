/* ctl_evict.c: `batonctl evict WORKER`: removes a gray-failed worker from its
 * group now instead of waiting for its ZooKeeper session to expire: its
 * member node and every claim of its session go, so the coordinator moves
 * its partitions at once and their new owners fence the sink with higher
 * epochs. Whatever the evicted process still writes is rejected there; when
 * it wakes up it sees its member node gone and exits (worker/membership.c).
 *
 * A claim belongs to a session, not to a worker id (it is an ephemeral node
 * of the session that created it; a restarted worker reuses the id with a
 * new session): the worker's claims are found by the session id in their
 * names (claim-<16 hex session>-<seq>) and checked against their
 * ephemeralOwner. */
#include "ctl.h"
#include "ctl_status.h"
#include "ctl_targets.h"
#include "baton_zkbatch.h"

#include "baton_codec.h"
#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_opts.h"
#include "baton_util.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Ops per zoo_multi: well under the 1 MB request cap (a delete op of a
 * claim path is under 200 bytes). */
#define EVICT_MULTI_MAX 1000
/* Rounds of "list the session's claims, delete them" before giving up on a
 * worker that keeps creating claims (it cannot: its member node is gone and
 * it exits when it notices, but every loop is bounded). */
#define EVICT_ROUNDS 5

typedef struct {
    int32_t partition; /* -1 for a key */
    char *key;         /* the key's name, or NULL */
    char *path;
    char *name;
    int64_t epoch; /* czxid */
    int owner;     /* the lowest claim of its partition when listed */
} evict_claim_t;

typedef struct {
    evict_claim_t *v;
    size_t n, cap;
} claim_list_t;

static void claims_push(claim_list_t *l, evict_claim_t c) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = c;
}

static void claims_clear(claim_list_t *l) {
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].path);
        free(l->v[i].name);
        free(l->v[i].key);
    }
    l->n = 0;
}

/* Lists the claims of session in every partition of base (P of them) and
 * every named key (baton_group_session_claims): claims named with the
 * session whose ephemeralOwner is the session. */
static int claims_of_session(baton_zk_t *zk, const char *base, int32_t P, int64_t session,
                             claim_list_t *out, char *errstr, size_t n) {
    baton_res_table_t t;
    baton_res_table_init(&t, base, P);
    baton_session_claim_t *found = NULL;
    size_t nfound = 0;
    int err = baton_group_session_claims(zk, &t, session, &found, &nfound, errstr, n);
    if (err != BATON_OK)
        goto out;
    /* The name says whose it is; the stat proves it (and gives the epoch). */
    char **paths = xcalloc(nfound ? nfound : 1, sizeof(char *));
    baton_zkread_t *stats = xcalloc(nfound ? nfound : 1, sizeof(*stats));
    for (size_t i = 0; i < nfound; i++)
        paths[i] = found[i].path;
    baton_zkbatch_get(zk, paths, nfound, stats);
    for (size_t i = 0; i < nfound; i++) {
        baton_session_claim_t *c = &found[i];
        if (stats[i].err == BATON_OK && stats[i].stat.ephemeralOwner == session) {
            const baton_resource_t *r = baton_res_at(&t, c->row);
            int is_key = baton_res_is_key(&t, c->row);
            claims_push(out, (evict_claim_t){
                                 .partition = is_key ? -1 : r->partition,
                                 .key = is_key ? xstrdup(r->key) : NULL,
                                 .path = c->path,
                                 .name = c->name,
                                 .epoch = stats[i].stat.czxid,
                                 .owner = c->lowest,
                             });
            c->path = c->name = NULL; /* moved */
        } else if (stats[i].err != BATON_OK && stats[i].err != BATON_NOTFOUND && !err) {
            err = baton_seterr(errstr, n, stats[i].err, "cannot read '%s': %s", c->path,
                               baton_strerror(stats[i].err));
        }
        baton_zkread_release(&stats[i]);
    }
    free(paths);
    free(stats);
out:
    baton_session_claims_free(found, nfound);
    baton_res_table_free(&t);
    return err;
}

/* Deletes ops[0..n) in one multi. Returns the ZooKeeper code; *failed gets
 * the index of the op that failed (or n). */
static int multi_delete(baton_zk_t *zk, char **paths, const int *versions, size_t n,
                        size_t *failed) {
    zoo_op_t *ops = xcalloc(n ? n : 1, sizeof(*ops));
    zoo_op_result_t *res = xcalloc(n ? n : 1, sizeof(*res));
    for (size_t i = 0; i < n; i++)
        zoo_delete_op_init(&ops[i], paths[i], versions[i]);
    int rc = baton_zk_multi(zk, (int)n, ops, res);
    *failed = n;
    for (size_t i = 0; rc != ZOK && i < n; i++)
        if (res[i].err != ZOK && res[i].err != ZRUNTIMEINCONSISTENCY) {
            *failed = i;
            break;
        }
    free(ops);
    free(res);
    return rc;
}

void ctl_evict_usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G evict WORKER [--json]\n"
            "\n"
            "Removes a gray-failed worker (frozen, partitioned, stuck in I/O) now instead\n"
            "of waiting for its ZooKeeper session to expire: deletes its member node\n"
            "workers/WORKER and every claim of its session (claim-<session>-N under each\n"
            "partition), the member node and the first claims in one atomic multi. The\n"
            "coordinator then moves its partitions at once; their new owners fence the\n"
            "sink with higher epochs, so anything the evicted process still writes is\n"
            "rejected. A live baton-worker that notices its member node gone drops every\n"
            "partition and exits 1 (\"evicted\") for its supervisor to restart it fresh.\n"
            "\n"
            "Prints what was removed: the member node, then each claim with its\n"
            "partition, epoch and whether it was the owner or a queued claim.\n"
            "Exit 1 if WORKER is not a live member of the group, naming the live ones.\n"
            "\n"
            "  --json    print {\"worker\", \"session\", \"member\", \"claims\": [{\"partition\",\n"
            "            \"claim\", \"epoch\", \"owner\"}]} instead\n"
            "\n"
            "examples:\n"
            "  %s --zk 127.0.0.1:2181 --group orders evict w2\n"
            "  %s --zk 127.0.0.1:2181 --group orders evict w2 --json | jq '.claims | length'\n",
            CTL_PROG, CTL_PROG, CTL_PROG);
}

enum { OPT_JSON = 1 };

int ctl_cmd_evict(ctl_ctx_t *ctx, int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, CTL_OPT_HELP},
        CTL_GLOBAL_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int as_json = 0, opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ctl_global_opt(ctx, opt, optarg))
            continue;
        switch (opt) {
        case OPT_JSON: as_json = 1; break;
        case CTL_OPT_HELP: ctl_evict_usage(stdout); return BATON_EXIT_OK;
        default: ctl_bad_option(argc, argv);
        }
    }
    if (optind >= argc)
        baton_usage_error(CTL_PROG, "evict: which worker? (evict WORKER)");
    const char *id = argv[optind];
    if (optind + 1 < argc)
        baton_usage_error(CTL_PROG, "evict: unexpected argument '%s'", argv[optind + 1]);
    if (baton_id_valid(id) != 0)
        baton_usage_error(CTL_PROG,
                          "evict: '%s' is not a valid worker id ([A-Za-z0-9._-], 1-128 chars)", id);
    ctl_ctx_check(ctx);

    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk)
        return BATON_EXIT_FAILURE;
    int rc = BATON_EXIT_FAILURE;
    char errstr[1024];
    char *base = baton_group_base(ctx->root, ctx->group);
    char *member = baton_layout_worker(base, id);
    claim_list_t claims = {0}, removed = {0};
    json_t *out = NULL;

    baton_config_t cfg;
    int err = ctl_config_read(zk, ctx->group, base, &cfg, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        goto out;
    }
    struct Stat mst;
    err = baton_zk_exists(zk, member, 0, &mst);
    if (err == BATON_NOTFOUND) {
        /* Name the live workers, and say whether the id is a typo. */
        ctl_target_t t;
        if (ctl_target_lookup(zk, base, id, &t, errstr, sizeof(errstr)) != BATON_OK) {
            fprintf(stderr, "%s: evict: %s\n", CTL_PROG, errstr);
            goto out;
        }
        fprintf(stderr,
                "%s: evict: worker '%s' is not a live member of group %s ('%s' does not "
                "exist%s); live workers: %s\n",
                CTL_PROG, id, ctx->group, member, t.known ? "" : "; the group has never known it",
                t.live_list);
        ctl_target_release(&t);
        goto out;
    }
    if (err != BATON_OK) {
        fprintf(stderr, "%s: cannot read '%s': %s\n", CTL_PROG, member, baton_strerror(err));
        goto out;
    }
    int64_t session = mst.ephemeralOwner;
    char hex[17], session_str[24];
    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)session);
    snprintf(session_str, sizeof(session_str), "0x%s", hex);

    /* Round 1: the member node and its claims in one multi, so the group
     * never sees the worker gone with its claims still holding partitions
     * (or the reverse). A claim that went meanwhile (released, or the
     * worker's session ended) fails the multi: list again. */
    int member_gone = 0;
    BATON_FAILPOINT("ctl.evict_before_multi");
    for (int attempt = 0; attempt < EVICT_ROUNDS && !member_gone; attempt++) {
        /* The member node's version cannot tell incarnations apart (every
         * new ephemeral node has version 0), and a multi can check nothing
         * else: look at its session again right before each multi, so a
         * worker that left and came back meanwhile is not evicted in its
         * old self's place. (A member with claims is safe anyway: the
         * multi deletes the old session's claims, which died with it.) */
        struct Stat now;
        err = baton_zk_exists(zk, member, 0, &now);
        if (err == BATON_OK && now.ephemeralOwner != session) {
            fprintf(stderr,
                    "%s: evict: worker '%s' re-registered while being evicted (session %s is "
                    "gone, the node now belongs to 0x%016llx); nothing removed\n",
                    CTL_PROG, id, session_str, (unsigned long long)now.ephemeralOwner);
            goto out;
        }
        if (err == BATON_NOTFOUND) {
            fprintf(stderr, "%s: evict: worker '%s' left while being evicted; nothing removed\n",
                    CTL_PROG, id);
            goto out;
        }
        if (err != BATON_OK) {
            fprintf(stderr, "%s: cannot read '%s': %s\n", CTL_PROG, member, baton_strerror(err));
            goto out;
        }
        mst = now;
        claims_clear(&claims);
        if (session != 0 && (err = claims_of_session(zk, base, cfg.partitions, session, &claims,
                                                     errstr, sizeof(errstr))) != BATON_OK) {
            fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
            goto out;
        }
        size_t nops = 1 + (claims.n < EVICT_MULTI_MAX - 1 ? claims.n : EVICT_MULTI_MAX - 1);
        char **paths = xcalloc(nops, sizeof(char *));
        int *versions = xcalloc(nops, sizeof(int));
        paths[0] = member;
        versions[0] = mst.version; /* the very node we looked at */
        for (size_t i = 1; i < nops; i++) {
            paths[i] = claims.v[i - 1].path;
            versions[i] = -1;
        }
        size_t failed;
        int zrc = multi_delete(zk, paths, versions, nops, &failed);
        free(paths);
        free(versions);
        if (zrc == ZOK) {
            member_gone = 1;
            for (size_t i = 0; i + 1 < nops; i++) {
                claims_push(&removed, claims.v[i]);
                claims.v[i].path = claims.v[i].name = claims.v[i].key = NULL;
            }
            break;
        }
        if (failed == 0 || (zrc != ZNONODE && zrc != ZBADVERSION)) {
            if (failed == 0)
                fprintf(stderr,
                        "%s: evict: worker '%s' left or re-registered while being evicted "
                        "(%s); nothing removed\n",
                        CTL_PROG, id, zerror(zrc));
            else
                fprintf(stderr, "%s: evict: deleting '%s' and its claims: %s\n", CTL_PROG, member,
                        zerror(zrc));
            goto out;
        }
    }
    if (!member_gone) {
        fprintf(stderr, "%s: evict: the claims of worker '%s' kept changing; nothing removed\n",
                CTL_PROG, id);
        goto out;
    }
    /* Later rounds: claims beyond the first multi, and any the worker made
     * between our listing and the multi. One by one; gone already is fine. */
    for (int round = 0; round < EVICT_ROUNDS && session != 0; round++) {
        claims_clear(&claims);
        if ((err = claims_of_session(zk, base, cfg.partitions, session, &claims, errstr,
                                     sizeof(errstr))) != BATON_OK) {
            fprintf(stderr, "%s: %s (the member node is already removed)\n", CTL_PROG, errstr);
            goto out;
        }
        if (claims.n == 0)
            break;
        for (size_t i = 0; i < claims.n; i++) {
            err = baton_zk_delete(zk, claims.v[i].path, -1);
            if (err == BATON_OK) {
                claims_push(&removed, claims.v[i]);
                claims.v[i].path = claims.v[i].name = claims.v[i].key = NULL;
            } else if (err != BATON_NOTFOUND) {
                fprintf(stderr, "%s: cannot delete '%s': %s (the member node is already removed)\n",
                        CTL_PROG, claims.v[i].path, baton_strerror(err));
                goto out;
            }
        }
    }

    size_t owned = 0;
    for (size_t i = 0; i < removed.n; i++)
        owned += removed.v[i].owner != 0;
    if (as_json) {
        out = json_object();
        json_object_set_new(out, "worker", json_string(id));
        json_object_set_new(out, "session", json_string(session_str));
        json_object_set_new(out, "member", json_string(member));
        json_t *arr = json_array();
        for (size_t i = 0; i < removed.n; i++) {
            json_t *c = json_object();
            json_object_set_new(c, "partition",
                                removed.v[i].key ? json_null()
                                                 : json_integer(removed.v[i].partition));
            if (removed.v[i].key)
                json_object_set_new(c, "key", json_string(removed.v[i].key));
            json_object_set_new(c, "claim", json_string(removed.v[i].name));
            json_object_set_new(c, "epoch", json_integer(removed.v[i].epoch));
            json_object_set_new(c, "owner", json_boolean(removed.v[i].owner));
            json_array_append_new(arr, c);
        }
        json_object_set_new(out, "claims", arr);
        json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
    } else {
        printf("evicted worker %s (session %s)\n", id, session_str);
        printf("removed member  %s\n", member);
        for (size_t i = 0; i < removed.n; i++) {
            char what[160];
            if (removed.v[i].key)
                snprintf(what, sizeof(what), "key %s", removed.v[i].key);
            else
                snprintf(what, sizeof(what), "partition %d", removed.v[i].partition);
            printf("removed claim   %-16s epoch %-20" PRId64 " %-6s %s\n", what, removed.v[i].epoch,
                   removed.v[i].owner ? "owner" : "queued", removed.v[i].name);
        }
        printf("%zu claims removed (%zu owned partitions); the coordinator reassigns them now,\n"
               "and the sink rejects whatever %s still writes with its old epochs\n",
               removed.n, owned, id);
    }
    rc = BATON_EXIT_OK;
out:
    json_decref(out);
    claims_clear(&claims);
    free(claims.v);
    claims_clear(&removed);
    free(removed.v);
    free(member);
    free(base);
    baton_zk_destroy(zk);
    return rc;
}
