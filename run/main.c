/* main.c: baton-run, a single runner for any command. It joins a group as
 * a member that takes one named key and runs the command only while it
 * owns that key, handing it the ownership's epoch (BATON_EPOCH) to fence
 * its effects with. Losing the key -- revoked, claim deleted, session
 * expired, self-suspended after 2/3 of the session timeout without hearing
 * from ZooKeeper, evicted -- stops the command (SIGTERM to its process
 * group, SIGKILL after --kill-after-ms). --once RUN_ID records a
 * successful run in ZooKeeper, fenced by the runner's claim, so it happens
 * once however many hosts start it. If baton-run itself dies (SIGKILL, the
 * OOM killer), the command dies with it (guard.h).
 *
 * One thread: the member library's callbacks, the child's signals (a
 * signalfd) and ZooKeeper events are all handled by this loop; a callback
 * blocks at most --kill-after-ms (stopping the command). */
#include <baton/baton.h>

#include "baton_codec.h"
#include "baton_conf.h"
#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_log.h"
#include "baton_opts.h"
#include "baton_util.h"
#include "baton_member_int.h"
#include "child.h"
#include "guard.h"
#include "run_zk.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

extern char **environ;

static const char *prog = "baton-run";

/* How often a runner without the key looks at the --once record besides
 * its watch (watches are lost with a session), and how soon a failed
 * ZooKeeper step is retried. */
#define ONCE_RECHECK_MS 2000
#define RETRY_MS 200
/* While the command runs: how often the loop checks that the member can
 * still write (self-suspension is measured, not announced). */
#define RUNNING_TICK_MS 50

static const char *zk_hosts, *zk_chroot, *group, *key, *id, *root = BATON_DEFAULT_ROOT;
static const char *once_id, *zk_auth, *zk_auth_file, *state_dir;
static int64_t member_wait_ms;
static const char *log_level = "info", *log_format = "text";
static int64_t session_timeout_ms = 10000, connect_timeout_ms = 10000, kill_after_ms = 10000,
               restart_delay_ms = 1000;
static int restart;

/* Flags only for what baton-run itself exports to its command (BATON_GROUP,
 * BATON_KEY...): a baton-run started by another one's command must not
 * silently inherit its key. */
static baton_conf_opt_t opts[] = {
    {"zk", NULL, "BATON_ZK", BATON_CONF_STR, 0, 0, &zk_hosts, "HOSTS",
     "ZooKeeper connect string (host:port[,host:port...])", 0},
    {"zk-chroot", NULL, "BATON_ZK_CHROOT", BATON_CONF_STR, 0, 0, &zk_chroot, "PATH",
     "ZooKeeper chroot appended to the connect string (a tenant)", 0},
    {"group", NULL, NULL, BATON_CONF_STR, 0, 0, &group, "G", "group name", 0},
    {"key", NULL, NULL, BATON_CONF_STR, 0, 0, &key, "KEY",
     "the named key to own (1-128 of [A-Za-z0-9._-]; batonctl keys add)", 0},
    {"id", NULL, NULL, BATON_CONF_STR, 0, 0, &id, "ID",
     "member id, unique in the group (default: HOSTNAME-PID)", 0},
    {"root", NULL, "BATON_ROOT", BATON_CONF_STR, 0, 0, &root, "PATH",
     "ZooKeeper root (default " BATON_DEFAULT_ROOT ")", 0},
    {"session-timeout-ms", NULL, "BATON_SESSION_TIMEOUT_MS", BATON_CONF_INT, 100, 3600000,
     &session_timeout_ms, "MS", "ZooKeeper session timeout (default 10000)", 0},
    {"connect-timeout-ms", NULL, "BATON_CONNECT_TIMEOUT_MS", BATON_CONF_INT, 100, 3600000,
     &connect_timeout_ms, "MS", "exit 1 if ZooKeeper is unreachable this long at start (10000)", 0},
    {"kill-after-ms", NULL, NULL, BATON_CONF_INT, 0, 3600000, &kill_after_ms, "MS",
     "SIGKILL the command this long after SIGTERM (default 10000)", 0},
    {"once", NULL, NULL, BATON_CONF_STR, 0, 0, &once_id, "RUN_ID",
     "cron style: run unless RUN_ID is recorded done; record its success", 0},
    {"restart", NULL, NULL, BATON_CONF_BOOL, 0, 0, &restart, NULL,
     "re-run the command when it exits, while the key is ours", 0},
    {"restart-delay-ms", NULL, NULL, BATON_CONF_INT, 0, 3600000, &restart_delay_ms, "MS",
     "pause before a restart (default 1000)", 0},
    {"state-dir", NULL, "BATON_STATE_DIR", BATON_CONF_STR, 0, 0, &state_dir, "DIR",
     "host-local directory of the member lock (with --id: a restart takes over its dead self "
     "at once; default $STATE_DIRECTORY or /var/lib/baton)",
     0},
    {"member-wait-ms", NULL, "BATON_MEMBER_WAIT_MS", BATON_CONF_INT, 0, 3600000, &member_wait_ms,
     "MS", "wait this long for a live member holding our --id to go (3 session timeouts)", 0},
    {"zk-auth", NULL, "BATON_ZK_AUTH", BATON_CONF_STR, 0, 0, &zk_auth, "SPEC",
     "digest:USER:PASS: write as this ZooKeeper identity (secret)", 1},
    {"zk-auth-file", NULL, "BATON_ZK_AUTH_FILE", BATON_CONF_STR, 0, 0, &zk_auth_file, "FILE",
     "the same from a file's first line (off the command line)", 0},
    {"log-level", NULL, "BATON_LOG_LEVEL", BATON_CONF_STR, 0, 0, &log_level, "L",
     "debug, info, warn, error (default info)", 0},
    {"log-format", NULL, "BATON_LOG_FORMAT", BATON_CONF_STR, 0, 0, &log_format, "F",
     "text (key=value) or json (default text)", 0},
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G --key KEY [options] -- COMMAND [ARGS...]\n"
            "\n"
            "Joins group G as a member that takes only KEY, and runs COMMAND while it\n"
            "owns KEY -- on one host at a time however many run the same line. The\n"
            "command gets BATON_EPOCH (the ownership's fencing token: a later owner\n"
            "always has a higher one), BATON_KEY, BATON_GROUP and, with --once,\n"
            "BATON_RUN_ID in its environment. Ownership is a lease: a paused runner\n"
            "can overlap its successor for a moment, so the command must fence its\n"
            "effects with BATON_EPOCH (baton-fence-write, or a resource that keeps\n"
            "the highest epoch). When KEY is lost -- revoked, session expired, no\n"
            "answer from ZooKeeper for 2/3 of the session timeout, evicted -- the\n"
            "command's process group gets SIGTERM, then SIGKILL after\n"
            "--kill-after-ms, and baton-run waits to own KEY again. If baton-run\n"
            "dies (even by SIGKILL), the command's process group and session are\n"
            "killed with it (a descendant that left the session with setsid is\n"
            "not). When the command exits by itself, baton-run leaves the group and\n"
            "exits with its status (128+N if signal N killed it), unless --restart.\n"
            "\n"
            "--once RUN_ID: before running, the owner looks for\n"
            "ROOT/G/keys/KEY/runs/RUN_ID; if it exists, it exits 0 without running.\n"
            "A successful run (status 0) is recorded there in one ZooKeeper multi-op\n"
            "with a check that the runner still holds its claim, so a deposed runner\n"
            "never records. Every other instance exits 0 as soon as the record\n"
            "exists. A failed run records nothing: launch again to retry. A runner\n"
            "that dies mid-run is replaced by the next owner, which runs the job\n"
            "again with a higher epoch.\n"
            "\n",
            prog);
    baton_conf_print_help(opts, BATON_ARRAY_SIZE(opts), f);
    fprintf(f,
            "  --help                     this text\n"
            "  --version                  print the version and exit\n"
            "\n"
            "SIGTERM/SIGINT are forwarded to the command (SIGKILL after\n"
            "--kill-after-ms), then baton-run leaves gracefully; SIGHUP is forwarded.\n"
            "\n"
            "exit status: the command's (or 128+signal); 0 when --once found the run\n"
            "already done; 1 on errors (ZooKeeper unreachable, no such group or key,\n"
            "duplicate id, evicted); 2 on bad flags; 127 if COMMAND is not found.\n"
            "\n"
            "examples:\n"
            "  batonctl --zk 127.0.0.1:2181 --group jobs init --keys nightly-report\n"
            "  %s --zk 127.0.0.1:2181 --group jobs --key nightly-report \\\n"
            "      --once \"$(date +%%F)\" -- /usr/local/bin/nightly-report\n"
            "  %s --zk 127.0.0.1:2181 --group jobs --key compaction-a --restart -- \\\n"
            "      sh -c 'baton-fence-write --state /srv/c.state --append \"start $BATON_EPOCH\" "
            "&& exec compact'\n",
            prog, prog);
}

/* ---- the runner ------------------------------------------------------- */

typedef struct {
    baton_membership_t *m;
    run_zk_t *rz;         /* --once records; NULL without --once */
    baton_resource_t res; /* our key */
    const char *path;     /* the resolved command */
    char **argv;          /* the command's argv (points into ours) */
    run_child_t child;
    int owned;           /* on_acquired ... on_released */
    int64_t epoch;       /* the ownership's epoch while owned */
    int64_t child_epoch; /* the epoch the running command got */
    int64_t start_at;    /* don't (re)start before this */
    int record_pending;  /* --once: the command succeeded, not yet recorded */
    int64_t record_at;   /* next record attempt */
    int64_t check_at;    /* next look at the --once record */
    int finished;        /* leave and exit with exit_code */
    int exit_code;
    int leave; /* leave gracefully on the way out (not after eviction) */
} runner_t;

/* Stops the command (see run_child_stop) and says why. */
static void runner_stop_child(runner_t *rn, int sig, const char *why) {
    if (!run_child_running(&rn->child))
        return;
    pid_t pid = rn->child.pid;
    int code = run_child_stop(&rn->child, sig, kill_after_ms);
    BLOG_WARN("event=child_stopped pid=%d epoch=%lld reason=%s signal=%s code=%d", (int)pid,
              (long long)rn->child_epoch, baton_log_v(why), sigabbrev_np(sig), code);
    rn->exit_code = code;
    rn->start_at = baton_now_ms() + restart_delay_ms;
}

static int on_acquired(void *opaque, const baton_resource_t *r, int64_t epoch) {
    runner_t *rn = opaque;
    if (r->kind != BATON_RESOURCE_KEY || strcmp(r->key, key) != 0)
        return BATON_OK; /* not ours to run (the filter makes this impossible) */
    rn->owned = 1;
    rn->epoch = epoch;
    rn->start_at = baton_now_ms();
    BLOG_INFO("event=key_owned key=%s epoch=%lld", baton_log_v(key), (long long)epoch);
    return BATON_OK;
}

static void on_released(void *opaque, const baton_resource_t *r, baton_release_reason_t why) {
    runner_t *rn = opaque;
    if (r->kind != BATON_RESOURCE_KEY || strcmp(r->key, key) != 0)
        return;
    BLOG_INFO("event=key_released key=%s epoch=%lld reason=%s", baton_log_v(key),
              (long long)rn->epoch, baton_release_reason_name(why));
    rn->owned = 0;
    /* A success not yet recorded cannot be recorded without the claim: the
     * next owner runs the job again (its effects are fenced). */
    if (rn->record_pending)
        BLOG_WARN("event=run_not_recorded run_id=%s reason=key_lost", baton_log_v(once_id));
    rn->record_pending = 0;
    runner_stop_child(rn, SIGTERM, baton_release_reason_name(why));
}

/* The self-suspension rule: the command may run only while the member
 * has heard from ZooKeeper recently enough. */
static void runner_check_suspended(runner_t *rn) {
    if (run_child_running(&rn->child) && !baton_membership_can_write(rn->m)) {
        BLOG_WARN("event=suspended key=%s epoch=%lld action=stop_command", baton_log_v(key),
                  (long long)rn->child_epoch);
        runner_stop_child(rn, SIGTERM, "suspended");
    }
}

/* The environment of the command: ours without any BATON_EPOCH, BATON_KEY,
 * BATON_GROUP, BATON_RUN_ID, plus this ownership's. Heap; freed with
 * env_free. */
static char **env_build(int64_t epoch) {
    static const char *ours[] = {"BATON_EPOCH=", "BATON_KEY=", "BATON_GROUP=", "BATON_RUN_ID="};
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = xcalloc(n + 5, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int skip = 0;
        for (size_t j = 0; j < BATON_ARRAY_SIZE(ours); j++)
            skip |= strncmp(environ[i], ours[j], strlen(ours[j])) == 0;
        if (!skip)
            env[k++] = xstrdup(environ[i]);
    }
    env[k++] = xasprintf("BATON_EPOCH=%lld", (long long)epoch);
    env[k++] = xasprintf("BATON_KEY=%s", key);
    env[k++] = xasprintf("BATON_GROUP=%s", group);
    if (once_id)
        env[k++] = xasprintf("BATON_RUN_ID=%s", once_id);
    env[k] = NULL;
    return env;
}

static void env_free(char **env) {
    for (size_t i = 0; env[i]; i++)
        free(env[i]);
    free(env);
}

/* --once: is the run recorded? Sets finished if so. Returns BATON_OK or
 * the (retriable) error that kept us from knowing. */
static int runner_check_record(runner_t *rn, int watch) {
    int done = 0;
    int64_t e = 0;
    char errstr[512];
    int err = run_zk_run_done(rn->rz, watch, &done, &e, errstr, sizeof(errstr));
    rn->check_at = baton_now_ms() + (err == BATON_OK ? ONCE_RECHECK_MS : RETRY_MS);
    if (err != BATON_OK) {
        BLOG_WARN("event=run_check_failed run_id=%s error=\"%s\" action=retry",
                  baton_log_v(once_id), baton_log_q(errstr));
        return err;
    }
    if (done) {
        BLOG_INFO("event=run_already_done run_id=%s path=%s epoch=%lld action=exit",
                  baton_log_v(once_id), baton_log_v(run_zk_run_path(rn->rz)), (long long)e);
        rn->finished = 1;
        rn->exit_code = 0;
    }
    return BATON_OK;
}

static void runner_start(runner_t *rn) {
    if (rn->rz) {
        /* Fresh, without a watch: the owner must not run a recorded job. */
        if (runner_check_record(rn, 0) != BATON_OK || rn->finished) {
            rn->start_at = rn->check_at; /* done, or could not tell: not now */
            return;
        }
    }
    char **env = env_build(rn->epoch);
    char errstr[256];
    int rc = run_child_start(&rn->child, rn->path, rn->argv, env, errstr, sizeof(errstr));
    env_free(env);
    if (rc != 0) {
        BLOG_ERROR("event=child_start_failed error=\"%s\" action=retry", baton_log_q(errstr));
        rn->start_at = baton_now_ms() + restart_delay_ms + RETRY_MS;
        return;
    }
    rn->child_epoch = rn->epoch;
    if (once_id)
        BLOG_INFO("event=child_started pid=%d key=%s epoch=%lld run_id=%s", (int)rn->child.pid,
                  baton_log_v(key), (long long)rn->epoch, baton_log_v(once_id));
    else
        BLOG_INFO("event=child_started pid=%d key=%s epoch=%lld", (int)rn->child.pid,
                  baton_log_v(key), (long long)rn->epoch);
}

/* The command exited by itself, code being its status. */
static void runner_child_exited(runner_t *rn, pid_t pid, int code) {
    int64_t ran = baton_now_ms() - rn->child.started_ms;
    BLOG_INFO("event=child_exited pid=%d epoch=%lld code=%d runtime_ms=%lld", (int)pid,
              (long long)rn->child_epoch, code, (long long)ran);
    rn->exit_code = code;
    if (once_id && code == 0) {
        rn->record_pending = 1;
        rn->record_at = 0;
        return;
    }
    if (restart) {
        rn->start_at = baton_now_ms() + restart_delay_ms;
        return;
    }
    if (once_id)
        BLOG_WARN("event=run_failed run_id=%s code=%d recorded=no "
                  "hint=\"launch again to retry\"",
                  baton_log_v(once_id), code);
    rn->finished = 1;
}

/* --once: records the success, fenced by our claim. */
static void runner_record(runner_t *rn) {
    char claim[512], errstr[512];
    int err = baton_membership_claim_path(rn->m, &rn->res, claim, sizeof(claim));
    if (err == BATON_OK && !baton_epoch_valid(rn->m, &rn->res, rn->child_epoch))
        err = baton_membership_can_write(rn->m) ? BATON_STALE : BATON_CONNECTION;
    if (err == BATON_OK)
        err = run_zk_run_record(rn->rz, claim, rn->child_epoch, 0, id, errstr, sizeof(errstr));
    else if (err == BATON_NOTFOUND || err == BATON_STALE)
        snprintf(errstr, sizeof(errstr), "we no longer own key '%s' with epoch %lld", key,
                 (long long)rn->child_epoch);
    else
        snprintf(errstr, sizeof(errstr), "ZooKeeper is silent: waiting to hear from it");
    if (err == BATON_OK || err == BATON_EXISTS) {
        BLOG_INFO("event=%s run_id=%s path=%s epoch=%lld",
                  err == BATON_OK ? "run_recorded" : "run_already_done", baton_log_v(once_id),
                  baton_log_v(run_zk_run_path(rn->rz)), (long long)rn->child_epoch);
        rn->record_pending = 0;
        rn->finished = 1;
        rn->exit_code = 0;
    } else if (err == BATON_STALE || err == BATON_NOTFOUND) {
        /* Deposed: whoever owns the key now runs the job again. */
        BLOG_WARN("event=run_not_recorded run_id=%s reason=deposed error=\"%s\"",
                  baton_log_v(once_id), baton_log_q(errstr));
        rn->record_pending = 0;
        rn->start_at = baton_now_ms() + restart_delay_ms;
    } else {
        BLOG_WARN("event=run_record_failed run_id=%s error=\"%s\" action=retry",
                  baton_log_v(once_id), baton_log_q(errstr));
        rn->record_at = baton_now_ms() + RETRY_MS;
    }
}

/* Reads every pending signal: SIGCHLD reaps, SIGTERM/SIGINT stop. */
static void runner_signals(runner_t *rn, int sfd) {
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGTERM || sig == SIGINT) {
            BLOG_INFO("event=signal signal=%s action=stop_and_leave", sigabbrev_np(sig));
            rn->exit_code = 0;
            runner_stop_child(rn, sig, "signal");
            if (rn->record_pending)
                runner_record(rn);
            rn->finished = 1;
        } else if (sig == SIGHUP && run_child_running(&rn->child)) {
            kill(-rn->child.pid, SIGHUP);
        }
    }
    pid_t pid = rn->child.pid;
    int code;
    if (run_child_reap(&rn->child, &code, kill_after_ms))
        runner_child_exited(rn, pid, code);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static int runner_loop(runner_t *rn, int sfd) {
    int next_ms = 0;
    char errstr[512];
    rn->leave = 1;
    while (!rn->finished) {
        runner_check_suspended(rn);
        int64_t now = baton_now_ms();
        int running = run_child_running(&rn->child);
        if (!running && rn->owned && !rn->record_pending && now >= rn->start_at &&
            baton_epoch_valid(rn->m, &rn->res, rn->epoch)) {
            runner_start(rn);
            continue;
        }
        if (rn->record_pending && now >= rn->record_at) {
            runner_record(rn);
            continue;
        }
        if (rn->rz && !running && !rn->record_pending && now >= rn->check_at) {
            runner_check_record(rn, 1);
            continue;
        }

        int64_t t = next_ms;
        if (running)
            t = min64(t, RUNNING_TICK_MS);
        if (!running && rn->owned && !rn->record_pending)
            t = min64(t, rn->start_at > now ? rn->start_at - now : RETRY_MS);
        if (rn->record_pending)
            t = min64(t, rn->record_at - now);
        if (rn->rz && !running)
            t = min64(t, rn->check_at - now);
        struct pollfd pfd[3] = {{.fd = baton_membership_fd(rn->m), .events = POLLIN},
                                {.fd = sfd, .events = POLLIN},
                                {.fd = rn->rz ? run_zk_fd(rn->rz) : -1, .events = POLLIN}};
        poll(pfd, 3, t < 0 ? 0 : (int)t);
        /* First: a process that was paused must not let its command run on
         * old news, not even while it reads its signals. */
        runner_check_suspended(rn);
        runner_signals(rn, sfd);
        if (rn->finished)
            break;
        int err = baton_membership_poll(rn->m, &next_ms, errstr, sizeof(errstr));
        if (err != BATON_OK) {
            /* Fatal (evicted, or cannot rejoin): the library released the
             * key already (on_released stopped the command). */
            runner_stop_child(rn, SIGTERM, "fatal");
            fprintf(stderr, "%s: %s\n", prog, errstr);
            BLOG_ERROR("event=fatal error=\"%s\" action=exit", baton_log_q(errstr));
            rn->leave = 0;
            return BATON_EXIT_FAILURE;
        }
        if (rn->rz && run_zk_events(rn->rz))
            rn->check_at = 0;
    }
    return rn->exit_code;
}

/* ---- start-up --------------------------------------------------------- */

/* HOSTNAME-PID with anything outside [A-Za-z0-9._-] replaced. */
static char *default_id(void) {
    char host[128] = "";
    if (gethostname(host, 64) != 0 || !host[0])
        snprintf(host, sizeof(host), "run");
    host[64] = 0;
    for (char *h = host; *h; h++)
        if (!((*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') || (*h >= '0' && *h <= '9') ||
              *h == '.' || *h == '_' || *h == '-'))
            *h = '-';
    return xasprintf("%s-%ld", host, (long)getpid());
}

int main(int argc, char **argv) {
    /* Everything after "--" is the command. */
    int dd = 1;
    while (dd < argc && strcmp(argv[dd], "--") != 0)
        dd++;
    int has_help = 0;
    for (int i = 1; i < dd; i++) {
        has_help |= strcmp(argv[i], "--help") == 0;
        if (strcmp(argv[i], "--version") == 0)
            baton_version_exit(prog);
    }
    if (has_help) {
        usage(stdout);
        return BATON_EXIT_OK;
    }
    if (dd >= argc)
        baton_usage_error(prog, "missing '-- COMMAND [ARGS...]': the command to run");
    char errstr[512];
    baton_conf_parsed_t parsed;
    if (baton_conf_parse(opts, BATON_ARRAY_SIZE(opts), 0, dd, argv, NULL, &parsed, errstr,
                         sizeof(errstr)) != 0)
        baton_usage_error(prog, "%s", errstr);
    if (dd + 1 >= argc)
        baton_usage_error(prog, "missing COMMAND after '--'");
    if (!zk_hosts)
        baton_usage_error(prog, "--zk is required");
    char *zk_connect = NULL;
    if (baton_conf_zk_chroot(zk_hosts, zk_chroot, &zk_connect, errstr, sizeof(errstr)) != 0)
        baton_usage_error(prog, "%s", errstr);
    if (!group || !*group)
        baton_usage_error(prog, "--group is required");
    if (baton_id_valid(group) != 0)
        baton_usage_error(prog, "--group: '%s' is not a valid group name (1-128 of [A-Za-z0-9._-])",
                          group);
    if (!key || !*key)
        baton_usage_error(prog, "--key is required");
    if (baton_key_valid(key) != 0)
        baton_usage_error(prog, "--key: '%s' is not a key name (1-128 of [A-Za-z0-9._-])", key);
    char *gen_id = NULL;
    if (!id)
        id = gen_id = default_id();
    if (baton_id_valid(id) != 0)
        baton_usage_error(prog, "--id: '%s' is not a valid member id (1-128 of [A-Za-z0-9._-])",
                          id);
    if (once_id && baton_key_valid(once_id) != 0)
        baton_usage_error(prog, "--once: '%s' is not a run id (1-128 of [A-Za-z0-9._-])", once_id);
    if (baton_root_valid(root) != 0)
        baton_usage_error(prog, "--root: '%s' is not a valid ZooKeeper path", root);
    baton_log_level_t level;
    baton_log_format_t format;
    if (baton_log_level_parse(log_level, &level) != 0)
        baton_usage_error(prog, "--log-level: '%s' is not debug, info, warn or error", log_level);
    if (baton_log_format_parse(log_format, &format) != 0)
        baton_usage_error(prog, "--log-format: '%s' is not text or json", log_format);
    baton_zk_auth_t *auth = NULL;
    if (baton_zk_auth_new(zk_auth, zk_auth_file, root, 1, NULL, &auth, errstr, sizeof(errstr)) != 0)
        baton_usage_error(prog, "%s", errstr);
    char *path = run_child_resolve(argv[dd + 1]);
    if (!path) {
        fprintf(stderr, "%s: command '%s' not found%s\n", prog, argv[dd + 1],
                strchr(argv[dd + 1], '/') ? " or not executable" : " in PATH");
        free(gen_id);
        free(zk_connect);
        baton_zk_auth_destroy(auth);
        baton_conf_release(&parsed);
        return 127;
    }

    baton_log_init(prog, id);
    baton_log_level = level;
    baton_log_set_format(format);
    if (baton_failpoints_init(errstr, sizeof(errstr)) != 0) {
        fprintf(stderr, "%s: BATON_FAILPOINTS: %s\n", prog, errstr);
        baton_zk_auth_destroy(auth);
        return BATON_EXIT_USAGE;
    }
    /* The guardian first, while we have no thread and no other child: it
     * kills the command if we die without stopping it (guard.h). */
    if (run_guard_start(errstr, sizeof(errstr)) != 0) {
        fprintf(stderr, "%s: %s\n", prog, errstr);
        baton_zk_auth_destroy(auth);
        return BATON_EXIT_FAILURE;
    }
    /* Signals arrive through a signalfd: blocked here, before ZooKeeper
     * starts its threads (they inherit the mask), so none is delivered
     * elsewhere; the command gets them unblocked (child.c). */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Orphans of the command's process group are reparented to us, not to
     * init: we reap them, so a stopped group is really empty (child.c). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) {
        fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
        return BATON_EXIT_FAILURE;
    }

    int rc = BATON_EXIT_FAILURE;
    runner_t rn = {.res = {.kind = BATON_RESOURCE_KEY, .partition = -1, .key = key},
                   .path = path,
                   .argv = argv + dd + 1};
    char *base = baton_group_base(root, group);
    /* The member: this one key, no partitions (values checked above). */
    baton_conf_t *conf = baton_conf_new();
    char st[32], ct[32], mw[32];
    snprintf(mw, sizeof(mw), "%d", (int)member_wait_ms);
    snprintf(st, sizeof(st), "%d", (int)session_timeout_ms);
    snprintf(ct, sizeof(ct), "%d", (int)connect_timeout_ms);
    const char *settings[][2] = {{"zookeeper.connect", zk_connect},
                                 {"zookeeper.root", root},
                                 {"group", group},
                                 {"worker.id", id},
                                 {"session.timeout.ms", st},
                                 {"connect.timeout.ms", ct},
                                 {"keys", key},
                                 {"no.partitions", "true"},
                                 {"state.dir", state_dir},
                                 {"member.wait.ms", mw}};
    int err = BATON_OK;
    for (size_t i = 0; i < BATON_ARRAY_SIZE(settings) && err == BATON_OK; i++)
        err = baton_conf_set(conf, settings[i][0], settings[i][1], errstr, sizeof(errstr));
    baton_conf__set_zk_auth(conf, auth);
    baton_conf_set_acquired_cb(conf, on_acquired);
    baton_conf_set_released_cb(conf, on_released);
    baton_conf_set_opaque(conf, &rn);
    /* The key must exist: a runner for a key nobody added would wait forever. */
    if (err == BATON_OK)
        err = run_zk_new(zk_connect, (int)session_timeout_ms, (int)connect_timeout_ms, auth, base,
                         key, once_id, &rn.rz, errstr, sizeof(errstr));
    if (err == BATON_OK)
        err = run_zk_key_check(rn.rz, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", prog, errstr);
        goto out;
    }
    if (!once_id) {
        run_zk_destroy(rn.rz);
        rn.rz = NULL;
    }
    if ((err = baton_membership_new_conf(conf, &rn.m, errstr, sizeof(errstr))) != BATON_OK) {
        fprintf(stderr, "%s: %s\n", prog, errstr);
        goto out;
    }
    if (once_id)
        BLOG_INFO("event=started group=%s key=%s run_id=%s restart=%d command=%s",
                  baton_log_v(group), baton_log_v(key), baton_log_v(once_id), restart,
                  baton_log_v(path));
    else
        BLOG_INFO("event=started group=%s key=%s restart=%d command=%s", baton_log_v(group),
                  baton_log_v(key), restart, baton_log_v(path));
    rc = runner_loop(&rn, sfd);
    if (rn.leave)
        baton_membership_leave(rn.m);
    BLOG_INFO("event=exit code=%d", rc);
out:
    baton_membership_destroy(rn.m);
    baton_conf_destroy(conf);
    baton_zk_auth_destroy(auth);
    run_zk_destroy(rn.rz);
    free(base);
    free(path);
    free(gen_id);
    free(zk_connect);
    baton_conf_release(&parsed);
    close(sfd);
    return rc;
}
