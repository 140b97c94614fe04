/* main.c: baton-worker's command line: flags, BATON_* environment and a
 * --config properties file, resolved through one table (baton_conf.h). */
#include "worker.h"

#include "baton_codec.h"
#include "baton_conf.h"
#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_kafka_topic.h"
#include "baton_log.h"
#include "baton_member_int.h"
#include "baton_daemon.h"
#include "baton_metrics_http.h"
#include "baton_opts.h"
#include "baton_signal.h"
#include "baton_util.h"
#include "processor.h"
#include "sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *prog = "baton-worker";

/* The settings, with their defaults. */
static const char *zk_hosts, *group, *id, *brokers, *sink_uri, *rack, *root = BATON_DEFAULT_ROOT;
static const char *log_level = "info", *log_format = "text";
static const char *metrics_addr;
/* --processor NAME|PATH.so and its --processor-config (JSON or @FILE). */
static const char *processor_spec = "copy", *processor_config;
static int64_t shutdown_timeout_ms = 30000;
static int64_t session_timeout_ms = 10000, connect_timeout_ms = 15000, capacity = 1,
               batch_size = 500, linger_ms = 20;

/* --zk-auth / --zk-auth-file (baton_zk_auth.h); the first is a secret. */
static const char *zk_auth, *zk_auth_file;
/* --state-dir (the member lock, baton_incarnation.h) and --member-wait-ms. */
static const char *state_dir;
static int64_t member_wait_ms;
/* --standby-prefetch on|off and its memory bounds (docs/configuration.md). */
static const char *standby_prefetch = "off";
/* --standby-claim ahead|takeover (docs/configuration.md). */
static const char *standby_claim = "takeover";
/* --standby-notice ip:port|off (docs/configuration.md). */
static const char *standby_notice = "off";
static int64_t standby_prefetch_bytes = 1 << 20, standby_prefetch_total_bytes = 64 << 20;
/* --zk-chroot, and the connect string with it applied (baton_conf_zk_chroot;
 * heap, lives until exit). */
static const char *zk_chroot;
static char *zk_connect;

static baton_conf_opt_t opts[] = {
    {"zk", "zookeeper.connect", "BATON_ZK", BATON_CONF_STR, 0, 0, &zk_hosts, "HOSTS",
     "ZooKeeper connect string (host:port[,host:port...])", 0},
    {"zk-chroot", "zookeeper.chroot", "BATON_ZK_CHROOT", BATON_CONF_STR, 0, 0, &zk_chroot, "PATH",
     "ZooKeeper chroot appended to the connect string (a tenant)", 0},
    {"group", "group", "BATON_GROUP", BATON_CONF_STR, 0, 0, &group, "G", "group name", 0},
    {"id", "worker.id", "BATON_ID", BATON_CONF_STR, 0, 0, &id, "ID",
     "worker id, unique among live workers ([A-Za-z0-9._-])", 0},
    {"brokers", "bootstrap.servers", "BATON_BROKERS", BATON_CONF_STR, 0, 0, &brokers, "LIST",
     "Kafka bootstrap servers (host:port[,...])", 0},
    {"sink", "sink", "BATON_SINK", BATON_CONF_STR, 0, 0, &sink_uri, "URI",
     "fenced sink: sqlite:PATH, postgresql://... or redis://...", 0},
    {"root", "zookeeper.root", "BATON_ROOT", BATON_CONF_STR, 0, 0, &root, "PATH",
     "ZooKeeper root (default " BATON_DEFAULT_ROOT ")", 0},
    {"session-timeout-ms", "session.timeout.ms", "BATON_SESSION_TIMEOUT_MS", BATON_CONF_INT, 100,
     3600000, &session_timeout_ms, "MS", "ZooKeeper session timeout (default 10000)", 0},
    {"connect-timeout-ms", "connect.timeout.ms", "BATON_CONNECT_TIMEOUT_MS", BATON_CONF_INT, 100,
     3600000, &connect_timeout_ms, "MS", "give up if ZooKeeper is unreachable at start (15000)", 0},
    {"capacity", "capacity", "BATON_CAPACITY", BATON_CONF_INT, 1, 1000000, &capacity, "N",
     "relative capacity published with membership (default 1)", 0},
    {"rack", "rack", "BATON_RACK", BATON_CONF_STR, 0, 0, &rack, "R",
     "rack published with membership", 0},
    {"batch-size", "batch.size", "BATON_BATCH_SIZE", BATON_CONF_INT, 1, 1000000, &batch_size, "N",
     "records per sink transaction, at most (default 500)", 0},
    {"linger-ms", "linger.ms", "BATON_LINGER_MS", BATON_CONF_INT, 0, 600000, &linger_ms, "MS",
     "longest wait before a partial batch is written (default 20)", 0},
    {"metrics-addr", "metrics.addr", "BATON_METRICS_ADDR", BATON_CONF_STR, 0, 0, &metrics_addr,
     "HOST:PORT", "serve Prometheus metrics on http://HOST:PORT/metrics (default: off)", 0},
    {"shutdown-timeout-ms", "shutdown.timeout.ms", "BATON_SHUTDOWN_TIMEOUT_MS", BATON_CONF_INT, 1,
     3600000, &shutdown_timeout_ms, "MS",
     "SIGTERM: exit 1 if the graceful leave takes longer (30000)", 0},
    {"state-dir", "state.dir", "BATON_STATE_DIR", BATON_CONF_STR, 0, 0, &state_dir, "DIR",
     "host-local directory of the member lock: a restart with the same id takes over its dead "
     "self at once (default $STATE_DIRECTORY or /var/lib/baton)",
     0},
    {"member-wait-ms", "member.wait.ms", "BATON_MEMBER_WAIT_MS", BATON_CONF_INT, 0, 3600000,
     &member_wait_ms, "MS",
     "wait this long for a live member holding our id to go (default 3 session timeouts)", 0},
    {"standby-prefetch", "standby.prefetch", "BATON_STANDBY_PREFETCH", BATON_CONF_STR, 0, 0,
     &standby_prefetch, "on|off",
     "fetch ahead the partitions we are named standby for, so a handoff to us writes at once "
     "(default off)",
     0},
    {"standby-claim", "standby.claim", "BATON_STANDBY_CLAIM", BATON_CONF_STR, 0, 0, &standby_claim,
     "ahead|takeover",
     "ahead: keep a claim of the partitions we are named standby for queued behind the owner's, "
     "so a handoff to us needs no create; takeover: claim them when we take them (default)",
     0},
    {"standby-notice", "standby.notice", "BATON_STANDBY_NOTICE", BATON_CONF_STR, 0, 0,
     &standby_notice, "IP:PORT|off",
     "take release notices on this datagram address (port 0: any) and send ours to our "
     "standbys, so a graceful handoff does not wait for ZooKeeper (default off)",
     0},
    {"standby-prefetch-bytes", "standby.prefetch.bytes", "BATON_STANDBY_PREFETCH_BYTES",
     BATON_CONF_INT, 1024, INT64_C(1) << 40, &standby_prefetch_bytes, "BYTES",
     "keys and values a standby holds ahead per partition, at most (default 1048576)", 0},
    {"standby-prefetch-total-bytes", "standby.prefetch.total.bytes",
     "BATON_STANDBY_PREFETCH_TOTAL_BYTES", BATON_CONF_INT, 1024, INT64_C(1) << 40,
     &standby_prefetch_total_bytes, "BYTES",
     "the same over all standby partitions (default 67108864)", 0},
    {"zk-auth", "zookeeper.auth", "BATON_ZK_AUTH", BATON_CONF_STR, 0, 0, &zk_auth, "SPEC",
     "digest:USER:PASS: write as this ZooKeeper identity (secret)", 1},
    {"zk-auth-file", "zookeeper.auth.file", "BATON_ZK_AUTH_FILE", BATON_CONF_STR, 0, 0,
     &zk_auth_file, "FILE", "the same from a file's first line (off the command line)", 0},
    {"processor", "processor", "BATON_PROCESSOR", BATON_CONF_STR, 0, 0, &processor_spec,
     "NAME|PATH", "copy (default), project, or a processor .so (see docs/processors.md)", 0},
    {"processor-config", "processor.config", "BATON_PROCESSOR_CONFIG", BATON_CONF_STR, 0, 0,
     &processor_config, "JSON", "the processor's configuration: JSON text, or @FILE", 0},
    {"log-level", "log.level", "BATON_LOG_LEVEL", BATON_CONF_STR, 0, 0, &log_level, "L",
     "debug, info, warn, error (default info)", 0},
    {"log-format", "log.format", "BATON_LOG_FORMAT", BATON_CONF_STR, 0, 0, &log_format, "F",
     "text (key=value) or json (default text)", 0},
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G --id ID --brokers BOOTSTRAP --sink URI [options]\n"
            "       %s --config FILE [options]\n"
            "\n"
            "Joins group G, consumes the Kafka partitions assigned to it from the offset\n"
            "the sink has recorded, and writes epoch-stamped batches to the fenced sink.\n"
            "Settings come from flags, then BATON_* environment variables, then the\n"
            "--config properties file (keys in brackets), then the defaults.\n"
            "\n",
            prog, prog);
    baton_conf_print_help(opts, BATON_ARRAY_SIZE(opts), f);
    fprintf(
        f,
        "  --kafka KEY=VALUE          a librdkafka setting, passed unchanged (repeatable);\n"
        "                             in the file: kafka.KEY=VALUE\n"
        "  --config FILE              a Java-properties file [BATON_CONFIG]\n"
        "  --help                     this text\n"
        "  --version                  print the version and exit\n"
        "\n"
        "exit status: 0 after a graceful leave (SIGTERM/SIGINT), 1 on a fatal error\n"
        "(ZooKeeper or the sink unreachable at start, duplicate id, --metrics-addr\n"
        "in use) or when --shutdown-timeout-ms cut the leave short, 2 on bad flags.\n"
        "SIGHUP is logged and otherwise ignored (logs go to stderr).\n"
        "\n"
        "examples:\n"
        "  %s --zk 127.0.0.1:2181 --group orders --id w1 \\\n"
        "      --brokers 127.0.0.1:9092 --sink sqlite:/var/lib/baton/out.db\n"
        "  %s --config /etc/baton/worker.properties --id w1\n"
        "  %s ... --processor project --processor-config '{\"fields\":[\"user\",\"amount\"]}'\n",
        prog, prog, prog);
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
    if (!id || !*id)
        baton_usage_error(prog, "--id is required");
    if (baton_id_valid(id) != 0)
        baton_usage_error(prog, "--id: '%s' is not a valid worker id ([A-Za-z0-9._-], 1-128 chars)",
                          id);
    if (!brokers)
        baton_usage_error(prog, "--brokers (bootstrap.servers) is required");
    if (!sink_uri)
        baton_usage_error(prog, "--sink is required");
    if (baton_sink_uri_check(sink_uri, errstr, sizeof(errstr)) != 0)
        baton_usage_error(prog, "--sink: %s", errstr);
    if (baton_kafka_props_check((const char *const *)parsed.kafka, parsed.nkafka, errstr,
                                sizeof(errstr)) != 0)
        baton_usage_error(prog, "%s", errstr);
    if (baton_root_valid(root) != 0)
        baton_usage_error(prog, "--root: '%s' is not a valid ZooKeeper path", root);
    /* --zk-auth: every session authenticates, every create gets its ACL. */
    baton_zk_auth_t *auth = NULL;
    if (baton_zk_auth_new(zk_auth, zk_auth_file, root, 1, NULL, &auth, errstr, sizeof(errstr)) != 0)
        baton_usage_error(prog, "%s", errstr);
    if (rack && (baton_id_valid(rack) != 0 || strlen(rack) >= 64))
        baton_usage_error(prog, "--rack: '%s' is not a valid rack name", rack);
    int prefetch_on;
    if (strcmp(standby_prefetch, "on") == 0 || strcmp(standby_prefetch, "true") == 0)
        prefetch_on = 1;
    else if (strcmp(standby_prefetch, "off") == 0 || strcmp(standby_prefetch, "false") == 0)
        prefetch_on = 0;
    else
        baton_usage_error(prog, "--standby-prefetch: '%s' is not on or off", standby_prefetch);
    int claim_ahead = 0;
    if (strcmp(standby_claim, "ahead") == 0)
        claim_ahead = 1;
    else if (strcmp(standby_claim, "takeover") != 0)
        baton_usage_error(prog, "--standby-claim: '%s' is not ahead or takeover", standby_claim);
    if (baton_membership__notice_check(standby_notice, errstr, sizeof(errstr)) != BATON_OK)
        baton_usage_error(prog, "--standby-notice: %s", errstr);
    baton_daemon_opts_t daemon = {log_level, log_format, metrics_addr};
    baton_daemon_check(prog, &daemon);
    /* The processor is loaded and its configuration checked before joining
     * the group: a bad one is a usage error, never a failed partition. */
    baton_processor_t *processor = NULL;
    if (baton_processor_load(processor_spec, processor_config, &processor, errstr,
                             sizeof(errstr)) != 0)
        baton_usage_error(prog, "%s", errstr);

    baton_worker_conf_t conf = {
        .zk_hosts = zk_hosts,
        .root = root,
        .group = group,
        .id = id,
        .brokers = brokers,
        .sink_uri = sink_uri,
        .rack = rack,
        .capacity = (int)capacity,
        .session_timeout_ms = (int)session_timeout_ms,
        .connect_timeout_ms = (int)connect_timeout_ms,
        .batch_size = (int)batch_size,
        .linger_ms = (int)linger_ms,
        .kafka_props = (const char **)parsed.kafka,
        .nkafka_props = parsed.nkafka,
        .processor = processor,
        .zk_auth = auth,
        .state_dir = state_dir,
        .member_wait_ms = (int)member_wait_ms,
        .standby_prefetch = prefetch_on,
        .standby_claim_ahead = claim_ahead,
        .standby_notice = standby_notice,
        .standby_prefetch_bytes = standby_prefetch_bytes,
        .standby_prefetch_total_bytes = standby_prefetch_total_bytes,
    };
    int stop_fd = -1;
    baton_metrics_server_t *metrics = NULL;
    int start = baton_daemon_start(prog, id, &daemon, &stop_fd, &metrics);
    if (start != BATON_EXIT_OK) {
        baton_processor_destroy(processor);
        baton_zk_auth_destroy(auth);
        baton_conf_release(&parsed);
        return start;
    }
    if (parsed.config_path)
        BLOG_INFO("event=config_loaded path=%s kafka_settings=%zu", baton_log_v(parsed.config_path),
                  parsed.nkafka);
    if (baton_signal_stop_deadline((int)shutdown_timeout_ms, "graceful_leave") != 0)
        BLOG_WARN("event=shutdown_deadline_unavailable");
    int rc = baton_worker_run(&conf, stop_fd);
    baton_metrics_server_stop(metrics);
    baton_processor_destroy(processor);
    baton_zk_auth_destroy(auth);
    baton_conf_release(&parsed);
    return rc == 0 ? BATON_EXIT_OK : BATON_EXIT_FAILURE;
}
