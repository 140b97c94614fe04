/* ctl_keys.c: `batonctl keys add|remove|list` and the keys part of `status`
 * (see ctl_keys.h). A key is <base>/keys/<name> with a claims/ directory;
 * its owner is the worker of the lowest claim, its epoch that claim's czxid,
 * exactly as for a partition. */
#include "ctl_keys.h"

#include "baton_codec.h"
#include "baton_err.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_opts.h"
#include "baton_util.h"
#include "ctl_claims.h"
#include "ctl_status.h"

#include <stdlib.h>
#include <string.h>

void ctl_keys_parse(const char *list, const char *flag, char ***keys, size_t *nkeys) {
    char *copy = xstrdup(list);
    char **out = NULL;
    size_t n = 0;
    char *save = NULL;
    for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        if (baton_key_valid(k) != 0)
            baton_usage_error(CTL_PROG, "%s: '%s' is not a key name (1-128 of [A-Za-z0-9._-])",
                              flag, k);
        int dup = 0;
        for (size_t i = 0; i < n; i++)
            dup |= strcmp(out[i], k) == 0;
        if (dup)
            continue;
        out = xrealloc(out, sizeof(char *) * (n + 1));
        out[n++] = xstrdup(k);
    }
    free(copy);
    if (n == 0)
        baton_usage_error(CTL_PROG, "%s: no key names in '%s'", flag, list);
    *keys = out;
    *nkeys = n;
}

/* key -> assigned worker, from every assignment/<worker> node. */
static int assigned_keys(baton_zk_t *zk, const char *base, char **keys, size_t nkeys,
                         char **assigned) {
    char *dir = baton_layout_assignment(base);
    char **names = NULL;
    size_t n = 0;
    int err = baton_zk_children(zk, dir, 0, &names, &n);
    if (err == BATON_NOTFOUND)
        err = BATON_OK;
    for (size_t i = 0; err == BATON_OK && i < n; i++) {
        char *path = baton_layout_child(dir, names[i]);
        char *data = NULL;
        size_t len = 0;
        int e = baton_zk_get(zk, path, 0, &data, &len, NULL);
        baton_worker_assignment_t wa = {0};
        char why[256];
        /* A malformed node is status's warning already (gather_assignment):
         * here it only assigns no key. */
        if (e == BATON_OK)
            baton_worker_assignment_decode(data, len, &wa, why, sizeof(why));
        else if (e != BATON_NOTFOUND)
            err = e;
        for (size_t j = 0; j < wa.nkeys; j++) {
            char **hit = bsearch(&wa.keys[j], keys, nkeys, sizeof(char *), baton_strcmp_p);
            if (hit && !assigned[hit - keys])
                assigned[hit - keys] = xstrdup(names[i]);
        }
        baton_worker_assignment_release(&wa);
        free(data);
        free(path);
    }
    baton_zk_strings_free(names, n);
    free(dir);
    return err;
}

/* Counts children of dir (0 if missing). */
static size_t count_children(baton_zk_t *zk, const char *dir) {
    char **names = NULL;
    size_t n = 0;
    if (baton_zk_children(zk, dir, 0, &names, &n) != BATON_OK)
        return 0;
    baton_zk_strings_free(names, n);
    return n;
}

/* The path of an ignored child of keys/, its name escaped (it may be
 * anything ZooKeeper takes: a right-to-left override, a look-alike). */
static char *bad_key_path(const char *base, const char *name) {
    char *dir = baton_layout_keys(base), *esc = ctl_escaped(name);
    char *path = baton_layout_child(dir, esc);
    free(esc);
    free(dir);
    return path;
}

void ctl_keys_warn_ignored(json_t *warnings, const char *base, const baton_bad_keys_t *bad) {
    for (size_t i = 0; bad && i < bad->n; i++) {
        char *path = bad_key_path(base, bad->v[i].name);
        if (bad->v[i].why == BATON_BAD_KEY_NAME)
            ctl_warning_add(warnings, path,
                            "ignored: not a key name (1-128 of [A-Za-z0-9._-]); remove it with "
                            "'%s keys remove --invalid' (and this command's --zk and --group)",
                            CTL_PROG);
        else
            ctl_warning_add(warnings, path,
                            "ignored: past the limit of %d keys; remove keys with '%s keys "
                            "remove KEY' to have it assigned",
                            BATON_KEYS_MAX, CTL_PROG);
        free(path);
    }
}

json_t *ctl_keys_rows(baton_zk_t *zk, const baton_res_table_t *t, const ctl_queue_t *q,
                      const char *const *assigned, int64_t now_ms) {
    json_t *arr = json_array();
    for (size_t i = (size_t)t->npartitions; i < t->n; i++) {
        const char *key = baton_res_at(t, i)->key;
        const ctl_queue_t *k = &q[i];
        int timed = k->nclaims && k->have_epoch;
        char *runs = baton_layout_key_runs(t->base, key);
        json_t *row = json_object();
        json_object_set_new(row, "key", json_string(key));
        json_object_set_new(row, "assigned", assigned[i] ? json_string(assigned[i]) : json_null());
        json_object_set_new(row, "owner",
                            k->nclaims && k->owner ? json_string(k->owner) : json_null());
        json_object_set_new(row, "epoch", timed ? json_integer(k->epoch) : json_null());
        json_object_set_new(row, "state", json_string(ctl_queue_state(k, assigned[i])));
        json_object_set_new(row, "claims", json_integer((json_int_t)k->nclaims));
        json_object_set_new(row, "since_ms", timed ? json_integer(k->ctime) : json_null());
        json_object_set_new(row, "state_age_ms",
                            timed ? json_integer(now_ms > k->ctime ? now_ms - k->ctime : 0)
                                  : json_null());
        json_object_set_new(row, "runs", json_integer((json_int_t)count_children(zk, runs)));
        free(runs);
        json_array_append_new(arr, row);
    }
    return arr;
}

int ctl_keys_gather(baton_zk_t *zk, const char *base, int64_t now_ms, json_t *warnings,
                    json_t **out, char *errstr, size_t n) {
    char **keys = NULL;
    size_t nkeys = 0;
    baton_bad_keys_t bad;
    int err = baton_group_keys(zk, base, 0, &keys, &nkeys, &bad, errstr, n);
    ctl_keys_warn_ignored(warnings, base, &bad);
    baton_bad_keys_free(&bad);
    if (err != BATON_OK)
        return err;
    baton_res_table_t t;
    baton_res_table_init(&t, base, 0);
    for (size_t i = 0; i < nkeys; i++)
        baton_res_table_add_key(&t, keys[i]);
    char **assigned = xcalloc(nkeys + 1, sizeof(char *));
    ctl_queue_t *q = xcalloc(nkeys + 1, sizeof(*q));
    char why[512] = "";
    err = assigned_keys(zk, base, keys, nkeys, assigned);
    if (err == BATON_OK)
        err = ctl_claims_gather(zk, &t, q, warnings, why, sizeof(why));
    if (err != BATON_OK)
        baton_seterr(errstr, n, err, "cannot read the keys of '%s': %s", base,
                     why[0] ? why : baton_strerror(err));
    else
        *out = ctl_keys_rows(zk, &t, q, (const char *const *)assigned, now_ms);
    ctl_queues_release(q, nkeys);
    free(q);
    for (size_t i = 0; i < nkeys; i++)
        free(assigned[i]);
    free(assigned);
    baton_res_table_free(&t);
    baton_zk_strings_free(keys, nkeys);
    return err;
}

void ctl_keys_print(const json_t *status, FILE *f) {
    static const ctl_col_t cols[] = {
        {"KEY", "key", 8, CTL_COL_ID, 0, ctl_cell_text},
        {"ASSIGNED", "assigned", 8, CTL_COL_ID, 0, ctl_cell_text},
        {"OWNER", "owner", 8, CTL_COL_ID, 0, ctl_cell_text},
        {"EPOCH", "epoch", 5, 20, 1, ctl_cell_text},
        {"STATE", "state", 7, 7, 0, ctl_cell_text},
        {"FOR", "state_age_ms", 6, 6, 1, ctl_cell_age},
        {"CLAIMS", "claims", 6, 6, 1, ctl_cell_text},
        {"RUNS", "runs", 4, 6, 1, ctl_cell_text},
    };
    const json_t *rows = json_object_get(status, "keys");
    if (json_array_size(rows) == 0)
        return;
    ctl_print_table(f, rows, cols, BATON_ARRAY_SIZE(cols));
}

/* ---- batonctl keys ---------------------------------------------------------- */

void ctl_keys_usage(FILE *f) {
    fprintf(
        f,
        "usage: %s --zk HOSTS --group G keys add KEY...\n"
        "       %s --zk HOSTS --group G keys remove KEY...\n"
        "       %s --zk HOSTS --group G keys remove --invalid\n"
        "       %s --zk HOSTS --group G keys list [--json]\n"
        "\n"
        "Named keys are resources like partitions, owned by one member at a time\n"
        "with a rising epoch (the fencing token baton-run hands its command as\n"
        "BATON_EPOCH). Names: 1-128 of [A-Za-z0-9._-]; KEY may also be a\n"
        "comma-separated list.\n"
        "\n"
        "  add      creates the keys that are missing; the coordinator assigns them.\n"
        "           A group has at most %d keys: an add that would pass that\n"
        "           creates none (exit 1)\n"
        "  remove   deletes keys with their claims: a member holding one loses it at\n"
        "           once (whatever it still writes is fenced by the next owner's epoch)\n"
        "  list     each key's assigned member, owner, epoch, state, claims, runs\n"
        "  --json   (list) {\"group\", \"keys\": [{\"key\", \"assigned\", \"owner\", \"epoch\",\n"
        "           \"state\", \"claims\", \"since_ms\", \"state_age_ms\", \"runs\"}]};\n"
        "           (add, remove KEY...) {\"group\", \"action\", \"keys\": [as given],\n"
        "           \"changed\": how many were added or removed}\n"
        "  --invalid  (remove, without KEY) deletes every node under keys/ whose name\n"
        "             is not a key name (made by hand), with all below it, naming each;\n"
        "             never a key. The coordinator ignores such nodes; list and status\n"
        "             warn of each on stderr\n"
        "\n"
        "examples:\n"
        "  %s --zk 127.0.0.1:2181 --group jobs keys add nightly-report compaction-a\n"
        "  %s --zk 127.0.0.1:2181 --group jobs keys remove compaction-a\n"
        "  %s --zk 127.0.0.1:2181 --group jobs keys remove --invalid\n"
        "  %s --zk 127.0.0.1:2181 --group jobs keys list --json | jq '.keys[].owner'\n",
        CTL_PROG, CTL_PROG, CTL_PROG, CTL_PROG, BATON_KEYS_MAX, CTL_PROG, CTL_PROG, CTL_PROG,
        CTL_PROG);
}

/* Each of warnings ({"path", "problem"}) on stderr. */
static void warn_all(const json_t *warnings) {
    size_t i;
    const json_t *w;
    json_array_foreach(warnings, i, w) ctl_warn(json_string_value(json_object_get(w, "path")),
                                                json_string_value(json_object_get(w, "problem")));
}

/* keys remove --invalid: every child of keys/ that is not a key name goes,
 * each named on stdout; a key past BATON_KEYS_MAX, which is a key, stays
 * (warned of). Errors carry the node's name: printed escaped. */
static int remove_invalid(baton_zk_t *zk, const char *group, const char *base) {
    char **keys = NULL;
    size_t nkeys = 0, removed = 0;
    baton_bad_keys_t bad;
    char errstr[512];
    int err = baton_group_keys(zk, base, 0, &keys, &nkeys, &bad, errstr, sizeof(errstr));
    baton_zk_strings_free(keys, nkeys);
    json_t *warnings = json_array();
    for (size_t i = 0; err == BATON_OK && i < bad.n; i++) {
        baton_bad_keys_t one = {.v = &bad.v[i], .n = 1};
        if (bad.v[i].why != BATON_BAD_KEY_NAME) {
            ctl_keys_warn_ignored(warnings, base, &one);
            continue;
        }
        err = baton_group_bad_key_remove(zk, base, bad.v[i].name, errstr, sizeof(errstr));
        if (err == BATON_OK) {
            char *path = bad_key_path(base, bad.v[i].name);
            printf("removed %s: not a key name\n", path);
            free(path);
            removed++;
        } else if (err == BATON_NOTFOUND) {
            err = BATON_OK; /* someone else removed it meanwhile */
        }
    }
    warn_all(warnings);
    json_decref(warnings);
    baton_bad_keys_free(&bad);
    if (err != BATON_OK) {
        char *msg = ctl_escaped(errstr);
        fprintf(stderr, "%s: %s (removed %zu before)\n", CTL_PROG, msg, removed);
        free(msg);
        return BATON_EXIT_FAILURE;
    }
    printf("removed %zu invalid key node(s) from group %s%s\n", removed, group,
           removed ? "" : " (there were none)");
    return BATON_EXIT_OK;
}

int ctl_cmd_keys(ctl_ctx_t *ctx, int argc, char **argv) {
    enum { OPT_JSON = 1, OPT_INVALID };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"invalid", no_argument, NULL, OPT_INVALID},
        {"help", no_argument, NULL, CTL_OPT_HELP},
        CTL_GLOBAL_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int as_json = 0, invalid = 0, opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ctl_global_opt(ctx, opt, optarg))
            continue;
        switch (opt) {
        case OPT_JSON: as_json = 1; break;
        case OPT_INVALID: invalid = 1; break;
        case CTL_OPT_HELP: ctl_keys_usage(stdout); return BATON_EXIT_OK;
        default: ctl_bad_option(argc, argv);
        }
    }
    if (optind >= argc)
        baton_usage_error(CTL_PROG, "keys: add, remove or list is required");
    const char *sub = argv[optind++];
    int is_add = strcmp(sub, "add") == 0, is_remove = strcmp(sub, "remove") == 0;
    int is_list = strcmp(sub, "list") == 0;
    if (!is_add && !is_remove && !is_list)
        baton_usage_error(CTL_PROG, "keys: unknown subcommand '%s' (add, remove or list)", sub);
    if (is_list && optind < argc)
        baton_usage_error(CTL_PROG, "keys list: unexpected argument '%s'", argv[optind]);
    if (invalid && !is_remove)
        baton_usage_error(CTL_PROG, "keys %s: --invalid is for keys remove only", sub);
    if (invalid && as_json)
        baton_usage_error(CTL_PROG, "keys remove: --json is for keys list only");
    if (invalid && optind < argc)
        baton_usage_error(CTL_PROG,
                          "keys remove: --invalid takes no KEY (it removes only nodes that are "
                          "not keys; remove keys by name in a command of their own)");
    if (is_remove && !invalid && optind >= argc)
        baton_usage_error(CTL_PROG, "keys remove: at least one KEY (or --invalid) is required");
    if (is_add && optind >= argc)
        baton_usage_error(CTL_PROG, "keys %s: at least one KEY is required", sub);
    char **keys = NULL;
    size_t nkeys = 0;
    for (int i = optind; i < argc; i++) {
        char **part = NULL;
        size_t np = 0;
        ctl_keys_parse(argv[i], "KEY", &part, &np);
        keys = xrealloc(keys, sizeof(char *) * (nkeys + np));
        memcpy(keys + nkeys, part, sizeof(char *) * np);
        nkeys += np;
        free(part);
    }
    ctl_ctx_check(ctx);

    int rc = BATON_EXIT_FAILURE;
    char errstr[512];
    char *base = baton_group_base(ctx->root, ctx->group);
    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk)
        goto out;
    baton_config_t cfg;
    int err = ctl_config_read(zk, ctx->group, base, &cfg, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        goto out;
    }
    size_t changed = 0;
    if (invalid) {
        rc = remove_invalid(zk, ctx->group, base);
        goto out;
    }
    if (is_add || is_remove) {
        err = is_add ? baton_group_keys_add(zk, base, keys, nkeys, &changed, errstr, sizeof(errstr))
                     : baton_group_keys_remove(zk, base, keys, nkeys, &changed, errstr,
                                               sizeof(errstr));
        if (err != BATON_OK) {
            fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
            goto out;
        }
        if (as_json) {
            /* {"group", "action": "add"|"remove", "keys": [as given], "changed"} */
            json_t *names = json_array();
            for (size_t i = 0; i < nkeys; i++)
                json_array_append_new(names, json_string(keys[i]));
            json_t *obj = json_pack("{s:s, s:s, s:o, s:I}", "group", ctx->group, "action", sub,
                                    "keys", names, "changed", (json_int_t)changed);
            json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            fputc('\n', stdout);
            json_decref(obj);
        } else {
            printf("%s %zu key(s) %s group %s%s\n", is_add ? "added" : "removed", changed,
                   is_add ? "to" : "from", ctx->group,
                   changed < nkeys
                       ? (is_add ? " (the others exist)" : " (the others did not exist)")
                       : "");
        }
        rc = BATON_EXIT_OK;
        goto out;
    }
    json_t *warnings = json_array(), *rows = NULL;
    err = ctl_keys_gather(zk, base, baton_wall_ms(), warnings, &rows, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        json_decref(warnings);
        goto out;
    }
    warn_all(warnings);
    if (as_json) {
        /* An object with the group at top level, like every other --json. */
        json_t *obj = json_pack("{s:s, s:O}", "group", ctx->group, "keys", rows);
        json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
        json_decref(obj);
    } else if (json_array_size(rows) == 0) {
        printf("group %s has no keys\n", ctx->group);
    } else {
        json_t *st = json_pack("{s:O}", "keys", rows);
        ctl_keys_print(st, stdout);
        json_decref(st);
    }
    json_decref(rows);
    json_decref(warnings);
    rc = BATON_EXIT_OK;
out:
    for (size_t k = 0; k < nkeys; k++)
        free(keys[k]);
    free(keys);
    free(base);
    baton_zk_destroy(zk);
    return rc;
}
