/* ctl.h: what batonctl's commands share: the global flags (which every
 * command also accepts after its name), the connection to ZooKeeper, and the
 * entry point of each command.
 *
 * Every command returns a process exit code: BATON_EXIT_OK, BATON_EXIT_FAILURE
 * (the message is already on stderr) or it exits with BATON_EXIT_USAGE
 * through baton_usage_error(). Single-threaded. */
#ifndef CTL_H
#define CTL_H

#include "baton_codec.h"
#include "baton_zk.h"

#include <getopt.h>
#include <stdio.h>

#define CTL_PROG "batonctl"
#define CTL_DEFAULT_TIMEOUT_MS 10000

typedef struct {
    const char *zk_hosts;
    const char *group;
    const char *root;
    int timeout_ms;
    int verbose;
    const char *zk_auth;      /* --zk-auth digest:USER:PASS (secret), or NULL */
    const char *zk_auth_file; /* --zk-auth-file FILE, or NULL */
    const char *zk_chroot;    /* --zk-chroot PATH (else BATON_ZK_CHROOT), or NULL */
} ctl_ctx_t;

/* getopt_long values of the global flags: above any short option. */
enum {
    CTL_OPT_ZK = 256,
    CTL_OPT_GROUP,
    CTL_OPT_ROOT,
    CTL_OPT_TIMEOUT,
    CTL_OPT_VERBOSE,
    CTL_OPT_ZK_AUTH,
    CTL_OPT_ZK_AUTH_FILE,
    CTL_OPT_ZK_CHROOT,
    CTL_OPT_WIDE,
    CTL_OPT_HELP,
    CTL_OPT_VERSION,
};

/* The global flags as getopt_long entries, for each command to append to its
 * own table. CTL_GLOBAL_OPTIONS_COUNT entries, no terminator. */
#define CTL_GLOBAL_OPTIONS                                               \
    {"zk", required_argument, NULL, CTL_OPT_ZK},                         \
        {"group", required_argument, NULL, CTL_OPT_GROUP},               \
        {"root", required_argument, NULL, CTL_OPT_ROOT},                 \
        {"timeout", required_argument, NULL, CTL_OPT_TIMEOUT},           \
        {"verbose", no_argument, NULL, CTL_OPT_VERBOSE},                 \
        {"zk-auth", required_argument, NULL, CTL_OPT_ZK_AUTH},           \
        {"zk-auth-file", required_argument, NULL, CTL_OPT_ZK_AUTH_FILE}, \
        {"zk-chroot", required_argument, NULL, CTL_OPT_ZK_CHROOT}, {     \
        "wide", no_argument, NULL, CTL_OPT_WIDE                          \
    }

/* Applies a global flag; returns 1 if opt was one, 0 if not. Exits 2 on a
 * bad value. */
int ctl_global_opt(ctl_ctx_t *ctx, int opt, const char *arg);
/* Exits 2 unless the flags every ZooKeeper command needs are there and
 * valid. */
void ctl_ctx_check(const ctl_ctx_t *ctx);
/* Exits 2 naming the flag that getopt_long rejected (argv[optind - 1]). */
void ctl_bad_option(int argc, char **argv) __attribute__((noreturn));

/* Exit 2 naming the flag unless uri names a sink baton has (--sink), or
 * unless librdkafka accepts the n KEY=VALUE settings (--kafka). */
void ctl_check_sink_uri(const char *uri);
void ctl_check_kafka_props(const char *const *kv, size_t n);

/* Connects within ctx->timeout_ms. On failure prints the reason and returns
 * NULL. The caller destroys the handle with baton_zk_destroy. */
baton_zk_t *ctl_connect(const ctl_ctx_t *ctx);

/* Reads the group's config at base. On failure writes the message every
 * command gives into errstr ("group G is not initialised: 'BASE/config'
 * does not exist (run 'batonctl init')", or "cannot read the group config:
 * ...") and returns the error. */
int ctl_config_read(baton_zk_t *zk, const char *group, const char *base, baton_config_t *cfg,
                    char *errstr, size_t errstr_size);

/* Prints "batonctl: warning: PATH: PROBLEM" on stderr. */
void ctl_warn(const char *path, const char *problem);

/* Commands: argv[0] is the command name; getopt state is fresh. */
int ctl_cmd_init(ctl_ctx_t *ctx, int argc, char **argv);
int ctl_cmd_status(ctl_ctx_t *ctx, int argc, char **argv);

void ctl_init_usage(FILE *f);
void ctl_status_usage(FILE *f);
/* `sink show|rebind` (ctl_sink.c): the group's sink binding. */
int ctl_cmd_sink(ctl_ctx_t *ctx, int argc, char **argv);
void ctl_sink_usage(FILE *f);

#endif
