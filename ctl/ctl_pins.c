/* ctl_pins.c: `batonctl pin P WORKER`, `unpin P`, `drain WORKER`, `undrain
 * WORKER` (see ctl_pins.h). Each is one idempotent ZooKeeper write; the
 * pins/ and drains/ directories are created on first use, so groups made
 * before they existed work too. A pin or drain may name a worker that is not
 * live but known to the group (ctl_targets.h): it applies when that worker
 * joins. A worker id the group has never seen is refused (a typo would
 * otherwise be a silent standing instruction) unless --force says it is
 * about to start. */
#include "ctl_pins.h"
#include "ctl_targets.h"

#include "baton_codec.h"
#include "baton_err.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_opts.h"
#include "baton_util.h"

#include <stdlib.h>
#include <string.h>

typedef enum { OP_PIN, OP_UNPIN, OP_DRAIN, OP_UNDRAIN } pin_op_t;

static const struct {
    const char *name;
    const char *args;
    const char *text;
} op_help[] = {
    [OP_PIN] = {"pin", "PARTITION WORKER",
                "Pins PARTITION to WORKER: while WORKER is live (and not drained) it owns\n"
                "the partition, counted in its share. Re-pinning moves the pin.\n"},
    [OP_UNPIN] = {"unpin", "PARTITION",
                  "Removes PARTITION's pin; the assignor places it freely again (a sticky\n"
                  "assignor leaves it where it is unless balance needs it elsewhere).\n"},
    [OP_DRAIN] = {"drain", "WORKER",
                  "Drains WORKER: it is given nothing and hands back, gracefully, what it\n"
                  "has. It stays a member; undrain it to give it work again.\n"},
    [OP_UNDRAIN] = {"undrain", "WORKER",
                    "Ends WORKER's drain; the next rebalance gives it its share.\n"},
};

static void op_usage(pin_op_t op, FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G %s %s%s\n"
            "\n"
            "%s\n"
            "The leading coordinator applies the change at once. Exit 0 also when\n"
            "nothing had to change.%s\n"
            "\n"
            "example:\n"
            "  %s --zk 127.0.0.1:2181 --group orders %s %s\n",
            CTL_PROG, op_help[op].name, op_help[op].args, op == OP_UNPIN ? "" : " [--force]",
            op_help[op].text,
            op == OP_UNPIN ? ""
                           : "\n\nWORKER must be live or known to the group (assigned, drained,\n"
                             "pinned or in the history); any other id exits 1 naming the live\n"
                             "workers, and changes nothing.\n"
                             "  --force   accept a worker the group has not seen yet (one that is\n"
                             "            about to start)",
            CTL_PROG, op_help[op].name,
            op == OP_PIN     ? "3 worker-a"
            : op <= OP_UNPIN ? "3"
                             : "worker-a");
}

void ctl_pin_usage(FILE *f) { op_usage(OP_PIN, f); }
void ctl_unpin_usage(FILE *f) { op_usage(OP_UNPIN, f); }
void ctl_drain_usage(FILE *f) { op_usage(OP_DRAIN, f); }
void ctl_undrain_usage(FILE *f) { op_usage(OP_UNDRAIN, f); }

/* Creates or overwrites path with data (parents created). */
static int node_put(baton_zk_t *zk, const char *path, const char *data, int *changed) {
    char *parent = xstrdup(path);
    *strrchr(parent, '/') = 0;
    int err = baton_zk_mkdirs(zk, parent);
    free(parent);
    if (err != BATON_OK)
        return err;
    err = baton_zk_create(zk, path, data, strlen(data), 0, NULL, 0, NULL);
    if (err == BATON_OK) {
        *changed = 1;
    } else if (err == BATON_EXISTS) {
        char *cur = NULL;
        size_t len = 0;
        err = baton_zk_get(zk, path, 0, &cur, &len, NULL);
        if (err == BATON_OK && (len != strlen(data) || memcmp(cur, data, len) != 0)) {
            err = baton_zk_set(zk, path, data, strlen(data), -1, NULL);
            *changed = err == BATON_OK;
        }
        free(cur);
    }
    return err;
}

enum { OPT_FORCE = 1 };

static int run_op(pin_op_t op, ctl_ctx_t *ctx, int argc, char **argv) {
    static const struct option longopts[] = {
        {"force", no_argument, NULL, OPT_FORCE},
        {"help", no_argument, NULL, CTL_OPT_HELP},
        CTL_GLOBAL_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int opt, force = 0;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ctl_global_opt(ctx, opt, optarg))
            continue;
        if (opt == OPT_FORCE && op != OP_UNPIN) {
            force = 1;
            continue;
        }
        if (opt == CTL_OPT_HELP) {
            op_usage(op, stdout);
            return BATON_EXIT_OK;
        }
        ctl_bad_option(argc, argv);
    }
    const char *name = op_help[op].name;
    int want = op == OP_PIN ? 2 : 1;
    if (argc - optind < want)
        baton_usage_error(CTL_PROG, "%s: expected %s", name, op_help[op].args);
    if (argc - optind > want)
        baton_usage_error(CTL_PROG, "%s: unexpected argument '%s'", name, argv[optind + want]);
    int64_t partition = -1;
    const char *worker = NULL;
    if (op == OP_PIN || op == OP_UNPIN) {
        if (baton_parse_i64(argv[optind], 0, BATON_PARTITIONS_MAX - 1, &partition) != 0)
            baton_usage_error(CTL_PROG, "%s: partition '%s' is not a number in 0..%d", name,
                              argv[optind], BATON_PARTITIONS_MAX - 1);
        if (op == OP_PIN)
            worker = argv[optind + 1];
    } else {
        worker = argv[optind];
    }
    if (worker && baton_id_valid(worker) != 0)
        baton_usage_error(CTL_PROG,
                          "%s: '%s' is not a valid worker id ([A-Za-z0-9._-], 1-128 chars)", name,
                          worker);
    ctl_ctx_check(ctx);

    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk)
        return BATON_EXIT_FAILURE;
    char *base = baton_group_base(ctx->root, ctx->group);
    char errstr[512], *path = NULL;
    int rc = BATON_EXIT_FAILURE, changed = 0, err;
    baton_config_t cfg;
    /* The group must exist: a pin in a typo'd group would silently do
     * nothing. */
    if (baton_group_config_read(zk, base, 0, &cfg, errstr, sizeof(errstr)) != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        goto out;
    }
    if (partition >= cfg.partitions) {
        fprintf(stderr, "%s: %s: partition %lld is not in group %s (0..%d)\n", CTL_PROG, name,
                (long long)partition, ctx->group, cfg.partitions - 1);
        goto out;
    }
    /* Before any write: a refused target changes nothing. */
    if (worker && ctl_target_check(zk, base, ctx->group, name, worker, force) != BATON_OK)
        goto out;
    if (op == OP_PIN || op == OP_UNPIN)
        path = baton_layout_pin(base, partition);
    else
        path = baton_layout_drain(base, worker);

    if (op == OP_PIN) {
        baton_pin_t pin;
        snprintf(pin.worker, sizeof(pin.worker), "%s", worker);
        char *data = baton_pin_encode(&pin);
        err = node_put(zk, path, data, &changed);
        free(data);
    } else if (op == OP_DRAIN) {
        err = node_put(zk, path, "{}", &changed);
    } else {
        err = baton_zk_delete(zk, path, -1);
        changed = err == BATON_OK;
        if (err == BATON_NOTFOUND)
            err = BATON_OK;
    }
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s: cannot write '%s': %s\n", CTL_PROG, name, path,
                baton_strerror(err));
        goto out;
    }
    switch (op) {
    case OP_PIN:
        printf(changed ? "pinned partition %lld to %s\n" : "partition %lld already pinned to %s\n",
               (long long)partition, worker);
        break;
    case OP_UNPIN:
        printf(changed ? "unpinned partition %lld\n" : "partition %lld was not pinned\n",
               (long long)partition);
        break;
    case OP_DRAIN: printf(changed ? "draining %s\n" : "%s already draining\n", worker); break;
    case OP_UNDRAIN: printf(changed ? "undrained %s\n" : "%s was not draining\n", worker); break;
    }
    rc = BATON_EXIT_OK;
out:
    free(path);
    free(base);
    baton_zk_destroy(zk);
    return rc;
}

int ctl_cmd_pin(ctl_ctx_t *ctx, int argc, char **argv) { return run_op(OP_PIN, ctx, argc, argv); }
int ctl_cmd_unpin(ctl_ctx_t *ctx, int argc, char **argv) {
    return run_op(OP_UNPIN, ctx, argc, argv);
}
int ctl_cmd_drain(ctl_ctx_t *ctx, int argc, char **argv) {
    return run_op(OP_DRAIN, ctx, argc, argv);
}
int ctl_cmd_undrain(ctl_ctx_t *ctx, int argc, char **argv) {
    return run_op(OP_UNDRAIN, ctx, argc, argv);
}
