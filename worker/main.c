/* main.c: baton-worker's command line. */
#include "worker.h"

#include "baton_codec.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_log.h"
#include "baton_opts.h"
#include "baton_signal.h"
#include "baton_util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *prog = "baton-worker";

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G --id ID --brokers BOOTSTRAP --sink URI [options]\n"
            "\n"
            "Joins group G, consumes the Kafka partitions assigned to it from the offset\n"
            "the sink has recorded, and writes epoch-stamped batches to the fenced sink.\n"
            "\n"
            "  --zk HOSTS                ZooKeeper connect string\n"
            "  --group G                 group name\n"
            "  --id ID                   worker id, unique among live workers ([A-Za-z0-9._-])\n"
            "  --brokers BOOTSTRAP       Kafka bootstrap servers (host:port[,...])\n"
            "  --sink URI                fenced sink: sqlite:PATH\n"
            "  --root PATH               ZooKeeper root (default %s)\n"
            "  --session-timeout-ms N    ZooKeeper session timeout (default 10000)\n"
            "  --connect-timeout-ms N    give up if ZooKeeper is unreachable at start (default 15000)\n"
            "  --capacity N              relative capacity published with membership (default 1)\n"
            "  --rack R                  rack published with membership\n"
            "  --batch-size N            records per sink transaction (default 500)\n"
            "  --linger-ms N             longest wait before a partial batch is written (default 20)\n"
            "  --kafka KEY=VALUE         a librdkafka setting, passed unchanged (repeatable)\n"
            "  --log-level L             debug, info, warn, error (default info)\n"
            "  --help                    this text\n"
            "\n"
            "example:\n"
            "  %s --zk 127.0.0.1:2181 --group orders --id w1 \\\n"
            "      --brokers 127.0.0.1:9092 --sink sqlite:/var/lib/baton/out.db\n",
            prog, BATON_DEFAULT_ROOT, prog);
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"zk", required_argument, NULL, 'z'},
        {"group", required_argument, NULL, 'g'},
        {"id", required_argument, NULL, 'i'},
        {"brokers", required_argument, NULL, 'b'},
        {"sink", required_argument, NULL, 'o'},
        {"root", required_argument, NULL, 'r'},
        {"session-timeout-ms", required_argument, NULL, 's'},
        {"connect-timeout-ms", required_argument, NULL, 'c'},
        {"capacity", required_argument, NULL, 'C'},
        {"rack", required_argument, NULL, 'R'},
        {"batch-size", required_argument, NULL, 'B'},
        {"linger-ms", required_argument, NULL, 'L'},
        {"kafka", required_argument, NULL, 'X'},
        {"log-level", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    baton_worker_conf_t conf = {.root = BATON_DEFAULT_ROOT,
                                .capacity = 1,
                                .session_timeout_ms = 10000,
                                .connect_timeout_ms = 15000,
                                .batch_size = 500,
                                .linger_ms = 20};
    const char **props = xcalloc((size_t)argc, sizeof(char *));
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case 'z': conf.zk_hosts = optarg; break;
        case 'g': conf.group = optarg; break;
        case 'i': conf.id = optarg; break;
        case 'b': conf.brokers = optarg; break;
        case 'o': conf.sink_uri = optarg; break;
        case 'r': conf.root = optarg; break;
        case 'R': conf.rack = optarg; break;
        case 's':
            conf.session_timeout_ms = (int)baton_opt_int(prog, "session-timeout-ms", optarg, 100, 3600000);
            break;
        case 'c':
            conf.connect_timeout_ms = (int)baton_opt_int(prog, "connect-timeout-ms", optarg, 100, 3600000);
            break;
        case 'C': conf.capacity = (int)baton_opt_int(prog, "capacity", optarg, 1, 1000000); break;
        case 'B': conf.batch_size = (int)baton_opt_int(prog, "batch-size", optarg, 1, 1000000); break;
        case 'L': conf.linger_ms = (int)baton_opt_int(prog, "linger-ms", optarg, 0, 600000); break;
        case 'X': props[conf.nkafka_props++] = optarg; break;
        case 'l':
            if (baton_log_level_parse(optarg, &baton_log_level) != 0)
                baton_usage_error(prog, "--log-level: '%s' is not debug, info, warn or error", optarg);
            break;
        case 'h': usage(stdout); return BATON_EXIT_OK;
        default:
            baton_usage_error(prog, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    conf.kafka_props = props;
    if (optind < argc)
        baton_usage_error(prog, "unexpected argument '%s'", argv[optind]);
    if (!conf.zk_hosts)
        baton_usage_error(prog, "--zk is required");
    if (!conf.group || baton_id_valid(conf.group) != 0)
        baton_usage_error(prog, "--group: '%s' is not a valid group name", conf.group ? conf.group : "");
    if (!conf.id || baton_id_valid(conf.id) != 0)
        baton_usage_error(prog, "--id: '%s' is not a valid worker id ([A-Za-z0-9._-], 1-128 chars)",
                          conf.id ? conf.id : "");
    if (!conf.brokers || !*conf.brokers)
        baton_usage_error(prog, "--brokers is required");
    if (!conf.sink_uri)
        baton_usage_error(prog, "--sink is required");
    if (baton_root_valid(conf.root) != 0)
        baton_usage_error(prog, "--root: '%s' is not a valid ZooKeeper path", conf.root);
    if (conf.rack && (baton_id_valid(conf.rack) != 0 || strlen(conf.rack) >= 64))
        baton_usage_error(prog, "--rack: '%s' is not a valid rack name", conf.rack);

    baton_log_init(prog, conf.id);
    char errstr[256];
    if (baton_failpoints_init(errstr, sizeof(errstr)) != 0) {
        fprintf(stderr, "%s: BATON_FAILPOINTS: %s\n", prog, errstr);
        return BATON_EXIT_USAGE;
    }
    int stop_fd = baton_signal_init();
    int rc = baton_worker_run(&conf, stop_fd);
    free(props);
    return rc == 0 ? BATON_EXIT_OK : BATON_EXIT_FAILURE;
}
