/* main.c: baton-coordinator's command line: flags, BATON_* environment and a
 * --config properties file, resolved through one table (baton_conf.h). */
#include "coordinator.h"

#include "coord_racks.h"

#include "assignment.h"

#include "baton_codec.h"
#include "baton_conf.h"
#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_log.h"
#include "baton_metrics.h"
#include "baton_daemon.h"
#include "baton_metrics_http.h"
#include "baton_opts.h"
#include "baton_signal.h"
#include "baton_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *prog = "baton-coordinator";

/* The settings, with their defaults. */
static const char *zk_hosts, *group, *id, *root = BATON_DEFAULT_ROOT, *brokers;
static const char *log_level = "info", *log_format = "text";
static const char *metrics_addr;
static const char *rack_policy = "realign";
static int64_t session_timeout_ms = 10000, connect_timeout_ms = 15000, leave_grace_ms = 0,
               rebalance_delay_ms = 200, max_rebalance_delay_ms = 2000,
               initial_max_rebalance_delay_ms = 10000, initial_rebalance_delay_ms = 1000,
               racks_refresh_ms = 60000, max_multi_bytes = 256 * 1024;
static int64_t handoff_timeout_ms = 30000, leave_hold_ms = 50;

/* --zk-auth / --zk-auth-file (baton_zk_auth.h); the first is a secret. */
static const char *zk_auth, *zk_auth_file;
/* --zk-chroot, and the connect string with it applied (baton_conf_zk_chroot;
 * heap, lives until exit). */
static const char *zk_chroot;
static char *zk_connect;

static baton_conf_opt_t opts[] = {
    {"zk", "zookeeper.connect", "BATON_ZK", BATON_CONF_STR, 0, 0, &zk_hosts, "HOSTS",
     "ZooKeeper connect string (host:port[,host:port...])", 0},
    {"zk-chroot", "zookeeper.chroot", "BATON_ZK_CHROOT", BATON_CONF_STR, 0, 0, &zk_chroot, "PATH",
     "ZooKeeper chroot appended to the connect string (a tenant)", 0},
    {"group", "group", "BATON_GROUP", BATON_CONF_STR, 0, 0, &group, "G",
     "group name ([A-Za-z0-9._-], 1-128 chars)", 0},
    {"id", "coordinator.id", "BATON_ID", BATON_CONF_STR, 0, 0, &id, "ID",
     "coordinator id (default: HOST-PID)", 0},
    {"root", "zookeeper.root", "BATON_ROOT", BATON_CONF_STR, 0, 0, &root, "PATH",
     "ZooKeeper root (default " BATON_DEFAULT_ROOT ")", 0},
    {"session-timeout-ms", "session.timeout.ms", "BATON_SESSION_TIMEOUT_MS", BATON_CONF_INT, 100,
     3600000, &session_timeout_ms, "MS", "ZooKeeper session timeout (default 10000)", 0},
    {"connect-timeout-ms", "connect.timeout.ms", "BATON_CONNECT_TIMEOUT_MS", BATON_CONF_INT, 100,
     3600000, &connect_timeout_ms, "MS", "give up if ZooKeeper is unreachable at start (15000)", 0},
    {"leave-grace-ms", "leave.grace.ms", "BATON_LEAVE_GRACE_MS", BATON_CONF_INT, 0, 86400000,
     &leave_grace_ms, "MS", "keep a vanished worker's partitions reserved this long (0)", 0},
    {"leave-hold-ms", "leave.hold.ms", "BATON_LEAVE_HOLD_MS", BATON_CONF_INT, 0, 1500,
     &leave_hold_ms, "MS",
     "a leave its standbys cover: rebalance this long after its mark (50; 0 = at once)", 0},
    {"rebalance-delay-ms", "rebalance.delay.ms", "BATON_REBALANCE_DELAY_MS", BATON_CONF_INT, 0,
     3600000, &rebalance_delay_ms, "MS", "coalesce membership churn within this (200; 0 = now)", 0},
    {"max-rebalance-delay-ms", "max.rebalance.delay.ms", "BATON_MAX_REBALANCE_DELAY_MS",
     BATON_CONF_INT, 0, 3600000, &max_rebalance_delay_ms, "MS",
     "but never wait longer after the first change (2000)", 0},
    {"initial-max-rebalance-delay-ms", "initial.max.rebalance.delay.ms",
     "BATON_INITIAL_MAX_REBALANCE_DELAY_MS", BATON_CONF_INT, 0, 3600000,
     &initial_max_rebalance_delay_ms, "MS",
     "while nothing is assigned yet, joins may hold the first rebalance this long (10000)", 0},
    {"initial-rebalance-delay-ms", "initial.rebalance.delay.ms", "BATON_INITIAL_REBALANCE_DELAY_MS",
     BATON_CONF_INT, 0, 3600000, &initial_rebalance_delay_ms, "MS",
     "while nothing is assigned yet, the quiet period after a join (1000; never below "
     "rebalance.delay.ms)",
     0},
    {"brokers", "bootstrap.servers", "BATON_BROKERS", BATON_CONF_STR, 0, 0, &brokers, "LIST",
     "Kafka bootstrap: prefer each partition's leader rack (default: off)", 0},
    {"rack-policy", "rack.policy", "BATON_RACK_POLICY", BATON_CONF_STR, 0, 0, &rack_policy, "P",
     "realign (move misaligned partitions into their leader's rack) or tiebreak (realign)", 0},
    {"racks-refresh-ms", "racks.refresh.ms", "BATON_RACKS_REFRESH_MS", BATON_CONF_INT, 100,
     86400000, &racks_refresh_ms, "MS", "re-read leader racks this often (60000)", 0},
    /* ZooKeeper refuses requests over jute.maxbuffer (1 MB by default). */
    {"max-multi-bytes", "max.multi.bytes", "BATON_MAX_MULTI_BYTES", BATON_CONF_INT, 256, 1000000,
     &max_multi_bytes, "N", "split a publish into multis of at most N bytes (262144)", 0},
    {"handoff-timeout-ms", "handoff.timeout.ms", "BATON_HANDOFF_TIMEOUT_MS", BATON_CONF_INT, 0,
     86400000, &handoff_timeout_ms, "MS",
     "delete a claim still blocking a moved partition after this (30000; 0 = never)", 0},
    {"metrics-addr", "metrics.addr", "BATON_METRICS_ADDR", BATON_CONF_STR, 0, 0, &metrics_addr,
     "HOST:PORT", "serve Prometheus metrics on http://HOST:PORT/metrics (default: off)", 0},
    {"zk-auth", "zookeeper.auth", "BATON_ZK_AUTH", BATON_CONF_STR, 0, 0, &zk_auth, "SPEC",
     "digest:USER:PASS: write as this ZooKeeper identity (secret)", 1},
    {"zk-auth-file", "zookeeper.auth.file", "BATON_ZK_AUTH_FILE", BATON_CONF_STR, 0, 0,
     &zk_auth_file, "FILE", "the same from a file's first line (off the command line)", 0},
    {"log-level", "log.level", "BATON_LOG_LEVEL", BATON_CONF_STR, 0, 0, &log_level, "L",
     "debug, info, warn, error (default info)", 0},
    {"log-format", "log.format", "BATON_LOG_FORMAT", BATON_CONF_STR, 0, 0, &log_format, "F",
     "text (key=value) or json (default text)", 0},
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G [--id ID] [options]\n"
            "       %s --config FILE [options]\n"
            "\n"
            "Elects one leader among the coordinators of group G; the leader assigns\n"
            "partitions to live workers and publishes the assignment in ZooKeeper.\n"
            "Settings come from flags, then BATON_* environment variables, then the\n"
            "--config properties file (keys in brackets), then the defaults.\n"
            "\n",
            prog, prog);
    baton_conf_print_help(opts, BATON_ARRAY_SIZE(opts), f);
    fprintf(f,
            "  --kafka KEY=VALUE          a librdkafka setting for the rack lookup: TLS and\n"
            "                             SASL/PLAIN (repeatable); in the file: kafka.KEY=VALUE\n"
            "  --config FILE              a Java-properties file [BATON_CONFIG]\n"
            "  --help                     this text\n"
            "  --version                  print the version and exit\n"
            "\n"
            "exit status: 0 after SIGTERM/SIGINT, 1 on a fatal error (ZooKeeper unreachable\n"
            "at start, --metrics-addr in use), 2 on bad flags or settings. SIGHUP is\n"
            "logged and otherwise ignored (logs go to stderr).\n"
            "\n"
            "examples:\n"
            "  %s --zk 127.0.0.1:2181 --group orders --id coord-a\n"
            "  %s --config /etc/baton/coordinator.properties --leave-grace-ms 30000\n",
            prog, prog);
}

int main(int argc, char **argv) {
    char errstr[512];
    baton_conf_parsed_t parsed;
    if (baton_conf_parse(opts, BATON_ARRAY_SIZE(opts), 1, argc, argv, NULL, &parsed, errstr,
                         sizeof(errstr)) != 0)
        baton_usage_error(prog, "%s", errstr);
    if (parsed.version)
        baton_version_exit(prog);
    if (parsed.help) {
        usage(stdout);
        baton_conf_release(&parsed);
        return BATON_EXIT_OK;
    }
    if (!zk_hosts)
        baton_usage_error(prog, "--zk (zookeeper.connect) is required");
    if (baton_conf_zk_chroot(zk_hosts, zk_chroot, &zk_connect, errstr, sizeof(errstr)) != 0)
        baton_usage_error(prog, "%s", errstr);
    zk_hosts = zk_connect;
    if (!group || !*group)
        baton_usage_error(prog, "--group is required");
    if (baton_id_valid(group) != 0)
        baton_usage_error(prog, "--group: '%s' is not a valid group name", group);
    if (baton_root_valid(root) != 0)
        baton_usage_error(prog, "--root: '%s' is not a valid ZooKeeper path", root);
    /* --zk-auth: every session authenticates, every create gets its ACL. */
    baton_zk_auth_t *auth = NULL;
    if (baton_zk_auth_new(zk_auth, zk_auth_file, root, 1, NULL, &auth, errstr, sizeof(errstr)) != 0)
        baton_usage_error(prog, "%s", errstr);
    char default_id[300];
    if (!id) {
        char host[256] = "host";
        gethostname(host, sizeof(host) - 1);
        snprintf(default_id, sizeof(default_id), "%.200s-%d", host, (int)getpid());
        id = default_id;
    }
    if (baton_id_valid(id) != 0)
        baton_usage_error(prog, "--id: '%s' is not a valid id ([A-Za-z0-9._-], 1-128 chars)", id);
    baton_daemon_opts_t daemon = {log_level, log_format, metrics_addr};
    baton_daemon_check(prog, &daemon);
    /* The rack lookup connects as the kafka.* settings say, or not at all. */
    char racks_off[256] = "";
    if (coord_racks_setup(parsed.kafka, parsed.nkafka, racks_off, sizeof(racks_off), errstr,
                          sizeof(errstr)) != BATON_OK)
        baton_usage_error(prog, "%s", errstr);
    baton_rack_policy_t policy;
    if (baton_rack_policy_parse(rack_policy, &policy) != BATON_OK)
        baton_usage_error(prog, "--rack-policy (rack.policy): '%s' is not realign or tiebreak",
                          rack_policy);
    if (rebalance_delay_ms > max_rebalance_delay_ms)
        rebalance_delay_ms = max_rebalance_delay_ms; /* the bound wins */
    if (initial_max_rebalance_delay_ms < max_rebalance_delay_ms)
        initial_max_rebalance_delay_ms = max_rebalance_delay_ms; /* never below the bound */
    if (initial_rebalance_delay_ms < rebalance_delay_ms)
        initial_rebalance_delay_ms = rebalance_delay_ms; /* never shorter than a formed group's */
    if (initial_rebalance_delay_ms > initial_max_rebalance_delay_ms)
        initial_rebalance_delay_ms = initial_max_rebalance_delay_ms; /* the bound wins */

    baton_coord_conf_t conf = {
        .zk_hosts = zk_hosts,
        .root = root,
        .group = group,
        .id = id,
        .session_timeout_ms = (int)session_timeout_ms,
        .connect_timeout_ms = (int)connect_timeout_ms,
        .leave_grace_ms = (int)leave_grace_ms,
        .leave_hold_ms = (int)leave_hold_ms,
        .rebalance_delay_ms = (int)rebalance_delay_ms,
        .max_rebalance_delay_ms = (int)max_rebalance_delay_ms,
        .initial_max_rebalance_delay_ms = (int)initial_max_rebalance_delay_ms,
        .initial_rebalance_delay_ms = (int)initial_rebalance_delay_ms,
        .brokers = brokers,
        .racks_refresh_ms = (int)racks_refresh_ms,
        .rack_policy = (int)policy,
        .max_multi_bytes = (int)max_multi_bytes,
        .handoff_timeout_ms = (int)handoff_timeout_ms,
        .zk_auth = auth,
    };
    int stop_fd = -1;
    baton_metrics_server_t *metrics = NULL;
    int start = baton_daemon_start(prog, id, &daemon, &stop_fd, &metrics);
    if (start != BATON_EXIT_OK) {
        baton_zk_auth_destroy(auth);
        baton_conf_release(&parsed);
        return start;
    }
    if (parsed.config_path)
        BLOG_INFO("event=config_loaded path=%s", baton_log_v(parsed.config_path));
    if (brokers && racks_off[0]) {
        BLOG_WARN("event=racks_off brokers=%s reason=\"%s\"", baton_log_v(brokers),
                  baton_log_q(racks_off));
        conf.brokers = NULL;
    }
    /* Every coordinator metric exists from the start: a scrape shows zeros,
     * not gaps. */
    baton_metric_gauge(BATON_M_C_LEADER);
    baton_metric_gauge(BATON_M_C_SUSPENDED);
    baton_metric_gauge(BATON_M_C_EPOCH);
    baton_metric_gauge(BATON_M_C_GENERATION);
    baton_metric_gauge(BATON_M_C_PARTITIONS);
    baton_metric_counter(BATON_M_C_REBALANCES);
    baton_metric_counter(BATON_M_C_MOVES);
    baton_metric_histogram(BATON_M_C_REBALANCE_SECONDS);
    baton_metric_gauge(BATON_M_ZK_CONNECTED);
    baton_metric_counter(BATON_M_ZK_RECONNECTS);
    baton_metric_counter(BATON_M_ZK_EXPIRATIONS);
    int rc = baton_coord_run(&conf, stop_fd);
    baton_metrics_server_stop(metrics);
    baton_zk_auth_destroy(auth);
    baton_conf_release(&parsed);
    return rc == 0 ? BATON_EXIT_OK : BATON_EXIT_FAILURE;
}
