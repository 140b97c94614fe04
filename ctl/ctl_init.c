/* ctl_init.c: `batonctl init`: writes a group's config and permanent znodes
 * (baton_group_init), idempotently, and grows its partition count. */
#include "ctl.h"

#include "assignment.h"
#include "baton_codec.h"
#include "baton_err.h"
#include "baton_group.h"
#include "baton_opts.h"

#include <stdlib.h>
#include <string.h>

enum { OPT_TOPIC = 1, OPT_PARTITIONS, OPT_STRATEGY };

void ctl_init_usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G init --topic T --partitions N [--strategy S]\n"
            "\n"
            "Creates ROOT/G/config and the group's permanent znodes (coordinators,\n"
            "workers, assignment, partitions/0..N-1/claims). Running it again with the\n"
            "same values changes nothing; a larger N grows the group (new partition\n"
            "nodes are created; the coordinator assigns them). Changing the topic or\n"
            "the strategy, or shrinking, is refused (exit 1).\n"
            "\n"
            "  --topic T         Kafka topic the group consumes ([A-Za-z0-9._-], 1-249 chars)\n"
            "  --partitions N    partition count, 1-%d\n"
            "  --strategy S      sticky, range or roundrobin (default: the group's current\n"
            "                    strategy, or sticky for a new group)\n"
            "\n"
            "examples:\n"
            "  %s --zk 127.0.0.1:2181 --group orders init --topic orders-in --partitions 12\n"
            "  %s --zk 127.0.0.1:2181 --group orders init --topic orders-in --partitions 24\n"
            "  %s --zk 127.0.0.1:2181 --group clicks init --topic clicks --partitions 6 \\\n"
            "      --strategy range\n",
            CTL_PROG, BATON_PARTITIONS_MAX, CTL_PROG, CTL_PROG, CTL_PROG);
}

int ctl_cmd_init(ctl_ctx_t *ctx, int argc, char **argv) {
    static const struct option longopts[] = {
        {"topic", required_argument, NULL, OPT_TOPIC},
        {"partitions", required_argument, NULL, OPT_PARTITIONS},
        {"strategy", required_argument, NULL, OPT_STRATEGY},
        {"help", no_argument, NULL, CTL_OPT_HELP},
        CTL_GLOBAL_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    const char *topic = NULL, *strategy_arg = NULL;
    int64_t partitions = 0;
    baton_strategy_t strategy = BATON_STRATEGY_STICKY;
    int opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ctl_global_opt(ctx, opt, optarg))
            continue;
        switch (opt) {
        case OPT_TOPIC: topic = optarg; break;
        case OPT_PARTITIONS:
            partitions = baton_opt_int(CTL_PROG, "partitions", optarg, 1, BATON_PARTITIONS_MAX);
            break;
        case OPT_STRATEGY:
            if (baton_strategy_parse(optarg, &strategy) != 0)
                baton_usage_error(CTL_PROG, "--strategy: '%s' is not sticky, range or roundrobin",
                                  optarg);
            strategy_arg = optarg;
            break;
        case CTL_OPT_HELP: ctl_init_usage(stdout); return BATON_EXIT_OK;
        default: ctl_bad_option(argc, argv);
        }
    }
    if (optind < argc)
        baton_usage_error(CTL_PROG, "init: unexpected argument '%s'", argv[optind]);
    if (!topic)
        baton_usage_error(CTL_PROG, "init: --topic is required");
    if (baton_topic_valid(topic) != 0)
        baton_usage_error(CTL_PROG, "--topic: '%s' is not a valid Kafka topic name", topic);
    if (partitions == 0)
        baton_usage_error(CTL_PROG, "init: --partitions is required");
    ctl_ctx_check(ctx);

    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk)
        return BATON_EXIT_FAILURE;
    char *base = baton_group_base(ctx->root, ctx->group);
    char errstr[512];
    int rc = BATON_EXIT_FAILURE;

    /* What is there now tells "created" from "grown", and supplies the
     * strategy when none is given so growing needs only --topic and N. */
    baton_config_t cur;
    int have = 0;
    int err = baton_group_config_read(zk, base, 0, &cur, errstr, sizeof(errstr));
    if (err == BATON_OK)
        have = 1;
    else if (err != BATON_NOTFOUND && err != BATON_CORRUPT) {
        /* A malformed config is reported by baton_group_init below. */
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        goto out;
    }

    baton_config_t cfg = {.partitions = (int32_t)partitions};
    snprintf(cfg.topic, sizeof(cfg.topic), "%s", topic);
    snprintf(cfg.strategy, sizeof(cfg.strategy), "%s",
             !strategy_arg && have ? cur.strategy : baton_strategy_name(strategy));

    int changed = 0;
    err = baton_group_init(zk, base, &cfg, &changed, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: cannot initialise group %s: %s\n", CTL_PROG, ctx->group, errstr);
        goto out;
    }
    if (!changed)
        printf("group %s already initialised (no change)\n", ctx->group);
    else if (have)
        printf("grew group %s to %d partitions (from %d)\n", ctx->group, cfg.partitions,
               cur.partitions);
    else
        printf("initialised group %s: topic %s, %d partitions, strategy %s, at %s\n", ctx->group,
               cfg.topic, cfg.partitions, cfg.strategy, base);
    rc = BATON_EXIT_OK;
out:
    free(base);
    baton_zk_destroy(zk);
    return rc;
}
