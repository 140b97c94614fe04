/* main.c: baton-coordinator's command line. */
#include "coordinator.h"

#include "baton_codec.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_log.h"
#include "baton_opts.h"
#include "baton_signal.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *prog = "baton-coordinator";

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G [--id ID] [options]\n"
            "\n"
            "Elects one leader among the coordinators of group G; the leader assigns\n"
            "partitions to live workers and publishes the assignment in ZooKeeper.\n"
            "\n"
            "  --zk HOSTS                ZooKeeper connect string (host:port[,host:port...])\n"
            "  --group G                 group name ([A-Za-z0-9._-], 1-128 chars)\n"
            "  --id ID                   coordinator id (default: HOST-PID)\n"
            "  --root PATH               ZooKeeper root (default %s)\n"
            "  --session-timeout-ms N    ZooKeeper session timeout (default 10000)\n"
            "  --connect-timeout-ms N    give up if ZooKeeper is unreachable at start (default 15000)\n"
            "  --log-level L             debug, info, warn, error (default info)\n"
            "  --help                    this text\n"
            "\n"
            "example:\n"
            "  %s --zk 127.0.0.1:2181 --group orders --id coord-a\n",
            prog, BATON_DEFAULT_ROOT, prog);
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"zk", required_argument, NULL, 'z'},
        {"group", required_argument, NULL, 'g'},
        {"id", required_argument, NULL, 'i'},
        {"root", required_argument, NULL, 'r'},
        {"session-timeout-ms", required_argument, NULL, 's'},
        {"connect-timeout-ms", required_argument, NULL, 'c'},
        {"log-level", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    baton_coord_conf_t conf = {.root = BATON_DEFAULT_ROOT,
                               .session_timeout_ms = 10000,
                               .connect_timeout_ms = 15000};
    char default_id[300];
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case 'z': conf.zk_hosts = optarg; break;
        case 'g': conf.group = optarg; break;
        case 'i': conf.id = optarg; break;
        case 'r': conf.root = optarg; break;
        case 's':
            conf.session_timeout_ms = (int)baton_opt_int(prog, "session-timeout-ms", optarg, 100, 3600000);
            break;
        case 'c':
            conf.connect_timeout_ms = (int)baton_opt_int(prog, "connect-timeout-ms", optarg, 100, 3600000);
            break;
        case 'l':
            if (baton_log_level_parse(optarg, &baton_log_level) != 0)
                baton_usage_error(prog, "--log-level: '%s' is not debug, info, warn or error", optarg);
            break;
        case 'h': usage(stdout); return BATON_EXIT_OK;
        default:
            baton_usage_error(prog, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        baton_usage_error(prog, "unexpected argument '%s'", argv[optind]);
    if (!conf.zk_hosts)
        baton_usage_error(prog, "--zk is required");
    if (!conf.group || baton_id_valid(conf.group) != 0)
        baton_usage_error(prog, "--group: '%s' is not a valid group name", conf.group ? conf.group : "");
    if (baton_root_valid(conf.root) != 0)
        baton_usage_error(prog, "--root: '%s' is not a valid ZooKeeper path", conf.root);
    if (!conf.id) {
        char host[256] = "host";
        gethostname(host, sizeof(host) - 1);
        snprintf(default_id, sizeof(default_id), "%.200s-%d", host, (int)getpid());
        conf.id = default_id;
    }
    if (baton_id_valid(conf.id) != 0)
        baton_usage_error(prog, "--id: '%s' is not a valid id ([A-Za-z0-9._-], 1-128 chars)", conf.id);

    baton_log_init(prog, conf.id);
    char errstr[256];
    if (baton_failpoints_init(errstr, sizeof(errstr)) != 0) {
        fprintf(stderr, "%s: BATON_FAILPOINTS: %s\n", prog, errstr);
        return BATON_EXIT_USAGE;
    }
    int stop_fd = baton_signal_init();
    return baton_coord_run(&conf, stop_fd) == 0 ? BATON_EXIT_OK : BATON_EXIT_FAILURE;
}
