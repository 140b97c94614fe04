/* batonctl.c: the operator CLI's entry point: global flags, the command
 * table, help, and the ZooKeeper connection the commands share. The commands
 * themselves live in ctl_<command>.c. */
#include "ctl.h"
#include "ctl_status.h"
#include "ctl_keys.h"
#include "ctl_pins.h"
#include "ctl_history.h"

#include "baton_codec.h"
#include "baton_conf.h"
#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_kafka_topic.h"
#include "baton_log.h"
#include "baton_opts.h"
#include "baton_util.h"
#include "sink.h"

#include <stdlib.h>
#include <string.h>
#include <zookeeper.h>

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(ctl_ctx_t *ctx, int argc, char **argv);
    void (*usage)(FILE *f);
} ctl_command_t;

static const ctl_command_t commands[] = {
    {"init", "create a group's config and znodes, or grow its partition count", ctl_cmd_init,
     ctl_init_usage},
    {"status", "show coordinator, workers, assignment and partition owners", ctl_cmd_status,
     ctl_status_usage},
    {"pin", "pin a partition to a worker", ctl_cmd_pin, ctl_pin_usage},
    {"unpin", "remove a partition's pin", ctl_cmd_unpin, ctl_unpin_usage},
    {"drain", "give a worker nothing and move its partitions away", ctl_cmd_drain, ctl_drain_usage},
    {"undrain", "end a worker's drain", ctl_cmd_undrain, ctl_undrain_usage},
    {"workers", "list live workers: host, pid, capacity, partitions held, draining",
     ctl_cmd_workers, ctl_workers_usage},
    {"partitions", "the per-partition table: owner, epoch, state, age, lag", ctl_cmd_partitions,
     ctl_partitions_usage},
    {"fences", "the sink's fence per partition beside ZooKeeper's owner epoch", ctl_cmd_fences,
     ctl_fences_usage},
    {"watch", "a live status view, refreshed on every change (ZooKeeper watches)", ctl_cmd_watch,
     ctl_watch_usage},
    {"evict", "remove a frozen worker's claims and membership now", ctl_cmd_evict, ctl_evict_usage},
    {"history", "the last ownership changes: partition, from, to, epoch, reason", ctl_cmd_history,
     ctl_history_usage},
    {"keys", "add, remove or list named keys (single-runner jobs, baton-run)", ctl_cmd_keys,
     ctl_keys_usage},
    {"sink", "show the group's sink binding, or move it (rebind)", ctl_cmd_sink, ctl_sink_usage},
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G [--root PATH] [--timeout MS] COMMAND [ARGS]\n"
            "\n"
            "Operates a baton group: the ZooKeeper znodes under ROOT/G that say which\n"
            "worker owns which partition.\n"
            "\n"
            "global flags (also accepted after COMMAND):\n"
            "  --zk HOSTS        ZooKeeper connect string (host:port[,host:port...])\n"
            "  --group G         group name ([A-Za-z0-9._-], 1-128 chars)\n"
            "  --root PATH       ZooKeeper root (default %s)\n"
            "  --timeout MS      give up if ZooKeeper is unreachable for MS ms (default %d)\n"
            "  --verbose         also print the ZooKeeper client's and baton's log lines\n"
            "  --zk-auth SPEC    digest:USER:PASS: act as this ZooKeeper identity\n"
            "                    (or BATON_ZK_AUTH; writes to an ACL-protected group need it)\n"
            "  --zk-auth-file FILE  the same from a file's first line (or BATON_ZK_AUTH_FILE)\n"
            "  --zk-chroot PATH  ZooKeeper chroot appended to --zk, e.g. /tenant-a\n"
            "                    (or BATON_ZK_CHROOT; same as HOSTS/tenant-a)\n"
            "  --wide            tables never cut a cell (default: fit the terminal's width,\n"
            "                    or $COLUMNS; piped output is never cut)\n"
            "  --help            this text; 'COMMAND --help' for a command's own\n"
            "  --version         print the version and exit\n"
            "\n"
            "commands:\n",
            CTL_PROG, BATON_DEFAULT_ROOT, CTL_DEFAULT_TIMEOUT_MS);
    for (size_t i = 0; i < BATON_ARRAY_SIZE(commands); i++)
        fprintf(f, "  %-10s  %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\n"
            "exit status: 0 ok, 1 failure (message on stderr), 2 usage error\n"
            "\n"
            "examples:\n"
            "  %s --zk 127.0.0.1:2181 --group orders init --topic orders-in --partitions 12\n"
            "  %s --zk 127.0.0.1:2181 --group orders status\n"
            "  %s --zk zk1:2181,zk2:2181 --group orders status --json\n",
            CTL_PROG, CTL_PROG, CTL_PROG);
}

int ctl_global_opt(ctl_ctx_t *ctx, int opt, const char *arg) {
    switch (opt) {
    case CTL_OPT_ZK: ctx->zk_hosts = arg; return 1;
    case CTL_OPT_GROUP: ctx->group = arg; return 1;
    case CTL_OPT_ROOT: ctx->root = arg; return 1;
    case CTL_OPT_TIMEOUT:
        ctx->timeout_ms = (int)baton_opt_int(CTL_PROG, "timeout", arg, 100, 3600000);
        return 1;
    case CTL_OPT_VERBOSE: ctx->verbose = 1; return 1;
    case CTL_OPT_ZK_AUTH: ctx->zk_auth = arg; return 1;
    case CTL_OPT_ZK_AUTH_FILE: ctx->zk_auth_file = arg; return 1;
    case CTL_OPT_ZK_CHROOT: ctx->zk_chroot = arg; return 1;
    case CTL_OPT_WIDE: ctl_table_set_wide(1); return 1;
    default: return 0;
    }
}

void ctl_ctx_check(const ctl_ctx_t *ctx) {
    if (!ctx->zk_hosts || !ctx->zk_hosts[0])
        baton_usage_error(CTL_PROG, "--zk is required");
    if (!ctx->group)
        baton_usage_error(CTL_PROG, "--group is required");
    if (baton_id_valid(ctx->group) != 0)
        baton_usage_error(CTL_PROG,
                          "--group: '%s' is not a valid group name ([A-Za-z0-9._-], 1-128 chars)",
                          ctx->group);
    if (baton_root_valid(ctx->root) != 0)
        baton_usage_error(CTL_PROG, "--root: '%s' is not a valid ZooKeeper path", ctx->root);
}

void ctl_bad_option(int argc, char **argv) { baton_usage_bad_option(CTL_PROG, argc, argv); }

void ctl_check_sink_uri(const char *uri) {
    char errstr[512];
    if (baton_sink_uri_check(uri, errstr, sizeof(errstr)) != BATON_OK)
        baton_usage_error(CTL_PROG, "--sink: %s", errstr);
}

void ctl_check_kafka_props(const char *const *kv, size_t n) {
    char errstr[512];
    if (baton_kafka_props_check(kv, n, errstr, sizeof(errstr)) != BATON_OK)
        baton_usage_error(CTL_PROG, "%s", errstr);
}

int ctl_config_read(baton_zk_t *zk, const char *group, const char *base, baton_config_t *cfg,
                    char *errstr, size_t errstr_size) {
    char why[512];
    int err = baton_group_config_read(zk, base, 0, cfg, why, sizeof(why));
    if (err == BATON_NOTFOUND)
        return baton_seterr(errstr, errstr_size, err,
                            "group %s is not initialised: '%s/config' does not exist (run '%s "
                            "init')",
                            group, base, CTL_PROG);
    if (err != BATON_OK)
        return baton_seterr(errstr, errstr_size, err, "cannot read the group config: %s", why);
    return BATON_OK;
}

baton_zk_t *ctl_connect(const ctl_ctx_t *ctx) {
    baton_zk_t *zk = NULL;
    char errstr[512];
    /* The identity: flags first, then the environment (which keeps the
     * secret off the command line). A bad one is a usage error. Without
     * one, batonctl may still read a protected group (anyone may), so the
     * root's ACL is checked only when an identity is given. */
    const char *auth = ctx->zk_auth, *auth_file = ctx->zk_auth_file;
    if (!auth && !auth_file) {
        auth = getenv("BATON_ZK_AUTH");
        auth_file = getenv("BATON_ZK_AUTH_FILE");
    }
    baton_zk_auth_t *za = NULL;
    if (baton_zk_auth_new(auth && *auth ? auth : NULL, auth_file && *auth_file ? auth_file : NULL,
                          ctx->root, (auth && *auth) || (auth_file && *auth_file), NULL, &za,
                          errstr, sizeof(errstr)) != BATON_OK)
        baton_usage_error(CTL_PROG, "%s", errstr);
    /* The session only lives as long as the command; its timeout doubles as
     * the bound on a connection lost mid-command. */
    const char *chroot = ctx->zk_chroot ? ctx->zk_chroot : getenv("BATON_ZK_CHROOT");
    char *hosts = NULL;
    if (baton_conf_zk_chroot(ctx->zk_hosts, chroot && *chroot ? chroot : NULL, &hosts, errstr,
                             sizeof(errstr)) != BATON_OK)
        baton_usage_error(CTL_PROG, "%s", errstr);
    int err =
        baton_zk_connect(hosts, ctx->timeout_ms, ctx->timeout_ms, za, &zk, errstr, sizeof(errstr));
    baton_zk_auth_destroy(za);
    free(hosts);
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        return NULL;
    }
    return zk;
}

void ctl_warn(const char *path, const char *problem) {
    /* Both can quote what a znode held: no escape sequence reaches the terminal. */
    char pp[512], pr[1024];
    fprintf(stderr, "%s: warning: %s: %s\n", CTL_PROG, ctl_printable(path, pp, sizeof(pp)),
            ctl_printable(problem, pr, sizeof(pr)));
}

static const ctl_command_t *command_find(const char *name) {
    for (size_t i = 0; i < BATON_ARRAY_SIZE(commands); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        CTL_GLOBAL_OPTIONS,
        {"help", no_argument, NULL, CTL_OPT_HELP},
        {"version", no_argument, NULL, CTL_OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    ctl_ctx_t ctx = {.root = BATON_DEFAULT_ROOT, .timeout_ms = CTL_DEFAULT_TIMEOUT_MS};
    int help = 0, opt;
    opterr = 0;
    /* "+": stop at the command; its own flags are parsed by the command. */
    while ((opt = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
        if (ctl_global_opt(&ctx, opt, optarg))
            continue;
        if (opt == CTL_OPT_HELP)
            help = 1;
        else if (opt == CTL_OPT_VERSION)
            baton_version_exit(CTL_PROG);
        else
            ctl_bad_option(argc, argv);
    }
    char fperr[512];
    if (baton_failpoints_init(fperr, sizeof(fperr)) != 0) {
        fprintf(stderr, "%s: BATON_FAILPOINTS: %s\n", CTL_PROG, fperr);
        return BATON_EXIT_USAGE;
    }
    if (optind >= argc) {
        if (help) {
            usage(stdout);
            return BATON_EXIT_OK;
        }
        baton_usage_error(CTL_PROG, "no command given");
    }
    const char *name = argv[optind];
    if (strcmp(name, "help") == 0) {
        const ctl_command_t *c = optind + 1 < argc ? command_find(argv[optind + 1]) : NULL;
        if (optind + 1 < argc && !c)
            baton_usage_error(CTL_PROG, "unknown command '%s'", argv[optind + 1]);
        if (c)
            c->usage(stdout);
        else
            usage(stdout);
        return BATON_EXIT_OK;
    }
    const ctl_command_t *cmd = command_find(name);
    if (!cmd)
        baton_usage_error(CTL_PROG, "unknown command '%s'", name);
    if (help) {
        cmd->usage(stdout);
        return BATON_EXIT_OK;
    }

    /* Quiet by default: an operator reads the command's own output, one
     * message per failure. Log lines (the sink's, the ZooKeeper and Kafka
     * clients' line per failed connection attempt) only with --verbose.
     * Tests that arm failpoints (BATON_FAILPOINTS) wait for their warnings.
     * BATON_LOG_LEVEL (read by baton_log_init) counts only with --verbose:
     * exported for the workers of a shell, it must not make batonctl chatty. */
    const char *fp = getenv("BATON_FAILPOINTS");
    baton_log_level = ctx.verbose ? BATON_LOG_INFO : fp && *fp ? BATON_LOG_WARN : BATON_LOG_OFF;
    if (!ctx.verbose)
        unsetenv("BATON_LOG_LEVEL"); /* not read, not even to say it is malformed */
    baton_log_lib_quiet(!ctx.verbose);
    baton_log_init(CTL_PROG, NULL);

    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    optind = 0; /* glibc: a full re-initialisation for the command's table */
    int rc = cmd->run(&ctx, sub_argc, sub_argv);
    fflush(stdout);
    return rc;
}
