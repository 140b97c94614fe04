/* ctl_init.c: `batonctl init`: writes a group's config and permanent znodes
 * (baton_group_init), idempotently, grows its partition count, and adds
 * named keys (--keys). */
#include "ctl.h"

#include "assignment.h"
#include "baton_codec.h"
#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_opts.h"
#include "baton_util.h"
#include "ctl_keys.h"
#include "ctl_lag.h"

#include <stdlib.h>
#include <string.h>

enum { OPT_TOPIC = 1, OPT_PARTITIONS, OPT_STRATEGY, OPT_KEYS, OPT_BROKERS, OPT_KAFKA };

void ctl_init_usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G init --topic T --partitions N [--strategy S]\n"
            "                [--keys K1,K2,...] [--brokers B [--kafka KEY=VALUE]...]\n"
            "       %s --zk HOSTS --group G init --keys K1,K2,... [--strategy S]\n"
            "\n"
            "Creates ROOT/G/config and the group's permanent znodes (coordinators,\n"
            "workers, assignment, partitions/0..N-1/claims). Running it again with the\n"
            "same values changes nothing; a larger N grows the group (new partition\n"
            "nodes are created; the coordinator assigns them). Changing the topic or\n"
            "the strategy, or shrinking, is refused (exit 1).\n"
            "\n"
            "Named keys (--keys) are resources like partitions, for jobs that must have\n"
            "one effective runner (baton-run, the member library): each is owned by one\n"
            "member at a time with a rising epoch. A group may have keys only (no\n"
            "--topic), partitions only, or both; a keys-only group may take a topic\n"
            "later. --keys adds the keys that are missing and never removes any (see\n"
            "'keys remove').\n"
            "\n"
            "Every step is idempotent: one that meets a lost connection to ZooKeeper is\n"
            "done again once the session is back (for up to --timeout), and init says so.\n"
            "\n"
            "With --brokers, the topic is checked on Kafka before anything is written:\n"
            "a topic Kafka does not have, or one with fewer than N partitions, is\n"
            "refused (exit 1); one with more is a warning. Nothing creates the topic.\n"
            "Without --brokers, init says that it could not check.\n"
            "\n"
            "  --topic T         Kafka topic the group consumes ([A-Za-z0-9._-], 1-249 chars)\n"
            "  --partitions N    partition count, 1-%d\n"
            "  --strategy S      sticky, range, roundrobin or rendezvous (default: the\n"
            "                    group's current strategy, or sticky for a new group)\n"
            "  --keys LIST       named keys, comma-separated; each 1-128 of [A-Za-z0-9._-]\n"
            "  --brokers B       Kafka bootstrap servers: check the topic there first\n"
            "  --kafka KEY=VALUE a librdkafka setting for --brokers (repeatable)\n"
            "\n"
            "examples:\n"
            "  %s --zk 127.0.0.1:2181 --group orders init --topic orders-in --partitions 12 \\\n"
            "      --brokers 127.0.0.1:9092\n"
            "  %s --zk 127.0.0.1:2181 --group orders init --topic orders-in --partitions 24\n"
            "  %s --zk 127.0.0.1:2181 --group clicks init --topic clicks --partitions 6 \\\n"
            "      --strategy range\n"
            "  %s --zk 127.0.0.1:2181 --group jobs init --keys nightly-report,compaction-a\n",
            CTL_PROG, CTL_PROG, BATON_PARTITIONS_MAX, CTL_PROG, CTL_PROG, CTL_PROG, CTL_PROG);
}

/* init's steps from *stage on (0 read what is there, 1 write the config
 * and permanent znodes, 2 add the keys), each idempotent; *stage moves past
 * each that succeeds, so after a lost connection the caller calls again
 * and the step that failed runs again. The first read fills *have, *cur
 * and *cfg (what to write); *changed and *added accumulate. */
static int init_steps(const ctl_ctx_t *ctx, baton_zk_t *zk, const char *base, const char *topic,
                      int32_t partitions, const char *strategy_arg, baton_strategy_t strategy,
                      char *const *keys, size_t nkeys, int *stage, int *have, baton_config_t *cur,
                      baton_config_t *cfg, int *changed, size_t *added, char *errstr,
                      size_t errstr_size) {
    if (*stage == 0) {
        int err = baton_group_config_read(zk, base, 0, cur, errstr, errstr_size);
        if (err != BATON_OK && err != BATON_NOTFOUND && err != BATON_CORRUPT)
            return err; /* a malformed config is reported by baton_group_init */
        *have = err == BATON_OK;
        /* Keys alone on an existing group leave its topic and partitions be. */
        *cfg = (baton_config_t){.partitions = partitions};
        snprintf(cfg->topic, sizeof(cfg->topic), "%s", topic ? topic : "");
        if (!topic && *have) {
            cfg->partitions = cur->partitions;
            snprintf(cfg->topic, sizeof(cfg->topic), "%s", cur->topic);
        }
        snprintf(cfg->strategy, sizeof(cfg->strategy), "%s",
                 !strategy_arg && *have ? cur->strategy : baton_strategy_name(strategy));
        *stage = 1;
    }
    if (*stage == 1) {
        BATON_FAILPOINT("ctl.init.before_write");
        int ch = 0;
        char why[512];
        int err = baton_group_init(zk, base, cfg, &ch, why, sizeof(why));
        if (err != BATON_OK)
            return baton_seterr(errstr, errstr_size, err, "cannot initialise group %s: %s",
                                ctx->group, why);
        *changed |= ch;
        *stage = 2;
    }
    if (*stage == 2 && nkeys) {
        size_t a = 0;
        int err = baton_group_keys_add(zk, base, keys, nkeys, &a, errstr, errstr_size);
        *added += a;
        if (err != BATON_OK)
            return err;
    }
    *stage = 3;
    return BATON_OK;
}

int ctl_cmd_init(ctl_ctx_t *ctx, int argc, char **argv) {
    static const struct option longopts[] = {
        {"topic", required_argument, NULL, OPT_TOPIC},
        {"partitions", required_argument, NULL, OPT_PARTITIONS},
        {"strategy", required_argument, NULL, OPT_STRATEGY},
        {"keys", required_argument, NULL, OPT_KEYS},
        {"brokers", required_argument, NULL, OPT_BROKERS},
        {"kafka", required_argument, NULL, OPT_KAFKA},
        {"help", no_argument, NULL, CTL_OPT_HELP},
        CTL_GLOBAL_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    const char *topic = NULL, *strategy_arg = NULL, *keys_arg = NULL;
    int64_t partitions = 0;
    const char **kafka_props = xcalloc((size_t)argc + 1, sizeof(char *));
    ctl_kafka_conf_t kc = {.props = kafka_props};
    baton_strategy_t strategy = BATON_STRATEGY_STICKY;
    int opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ctl_global_opt(ctx, opt, optarg))
            continue;
        switch (opt) {
        case OPT_TOPIC: topic = optarg; break;
        case OPT_KEYS: keys_arg = optarg; break;
        case OPT_BROKERS:
            if (!optarg[0])
                baton_usage_error(CTL_PROG, "--brokers: empty bootstrap server list");
            kc.brokers = optarg;
            break;
        case OPT_KAFKA:
            if (!strchr(optarg, '=') || optarg[0] == '=')
                baton_usage_error(CTL_PROG, "--kafka: '%s' is not KEY=VALUE", optarg);
            kafka_props[kc.nprops++] = optarg;
            break;
        case OPT_PARTITIONS:
            partitions = baton_opt_int(CTL_PROG, "partitions", optarg, 1, BATON_PARTITIONS_MAX);
            break;
        case OPT_STRATEGY:
            if (baton_strategy_parse(optarg, &strategy) != 0)
                baton_usage_error(CTL_PROG,
                                  "--strategy: '%s' is not sticky, range, roundrobin or rendezvous",
                                  optarg);
            strategy_arg = optarg;
            break;
        case CTL_OPT_HELP:
            ctl_init_usage(stdout);
            free(kafka_props);
            return BATON_EXIT_OK;
        default: ctl_bad_option(argc, argv);
        }
    }
    if (optind < argc)
        baton_usage_error(CTL_PROG, "init: unexpected argument '%s'", argv[optind]);
    ctl_check_kafka_props(kafka_props, kc.nprops);
    char **keys = NULL;
    size_t nkeys = 0;
    if (keys_arg)
        ctl_keys_parse(keys_arg, "--keys", &keys, &nkeys);
    if (!topic && !keys_arg)
        baton_usage_error(CTL_PROG, "init: --topic is required (with --partitions), or --keys "
                                    "for a keys-only group");
    if (topic && baton_topic_valid(topic) != 0)
        baton_usage_error(CTL_PROG, "--topic: '%s' is not a valid Kafka topic name", topic);
    if (topic && partitions == 0)
        baton_usage_error(CTL_PROG, "init: --partitions is required with --topic");
    if (!topic && partitions != 0)
        baton_usage_error(CTL_PROG, "init: --partitions needs --topic");
    if (!topic && kc.brokers)
        baton_usage_error(CTL_PROG, "init: --brokers checks the --topic: give --topic");
    if (kc.nprops && !kc.brokers)
        baton_usage_error(CTL_PROG, "init: --kafka needs --brokers");
    ctl_ctx_check(ctx);

    /* The topic is checked before anything is written (nor is it created). */
    if (topic && kc.brokers) {
        char warn[512], why[1024];
        int terr = ctl_kafka_topic_check(&kc, topic, (int32_t)partitions, ctx->timeout_ms, warn,
                                         sizeof(warn), why, sizeof(why));
        if (terr != BATON_OK) {
            fprintf(stderr, "%s: init: %s; group %s not changed\n", CTL_PROG, why, ctx->group);
            free(kafka_props);
            for (size_t i = 0; i < nkeys; i++)
                free(keys[i]);
            free(keys);
            return BATON_EXIT_FAILURE;
        }
        if (warn[0])
            fprintf(stderr, "%s: warning: %s\n", CTL_PROG, warn);
    } else if (topic) {
        fprintf(stderr,
                "%s: note: topic '%s' not checked on Kafka (give --brokers B to check that it "
                "exists with at least %d partitions)\n",
                CTL_PROG, topic, (int)partitions);
    }

    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk) {
        free(kafka_props);
        return BATON_EXIT_FAILURE;
    }
    char *base = baton_group_base(ctx->root, ctx->group);
    char errstr[512];
    int rc = BATON_EXIT_FAILURE;

    /* What is there now tells "created" from "grown", and supplies the
     * strategy when none is given so growing needs only --topic and N.
     * Every step is idempotent, so one that meets a lost connection is
     * tried again once the session is back (init_steps). */
    baton_config_t cur, cfg;
    int have = 0, changed = 0, retried = 0;
    size_t added = 0;
    int64_t deadline = 0;
    for (int stage = 0;;) {
        int err =
            init_steps(ctx, zk, base, topic, (int32_t)partitions, strategy_arg, strategy, keys,
                       nkeys, &stage, &have, &cur, &cfg, &changed, &added, errstr, sizeof(errstr));
        if (err == BATON_OK)
            break;
        if (err != BATON_CONNECTION || baton_zk_expired(zk)) {
            fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
            goto out;
        }
        /* The connection went mid-command: the request may have been
         * applied or not. Wait (up to --timeout from the first loss) for
         * the session to come back and do the step again. */
        if (!deadline)
            deadline = baton_now_ms() + ctx->timeout_ms;
        fprintf(stderr, "%s: %s; trying again when ZooKeeper answers (init is idempotent)\n",
                CTL_PROG, errstr);
        while (!baton_zk_connected(zk) && !baton_zk_expired(zk) && baton_now_ms() < deadline)
            baton_sleep_ms(50);
        if (!baton_zk_connected(zk)) {
            fprintf(stderr, "%s: cannot initialise group %s: ZooKeeper %s\n", CTL_PROG, ctx->group,
                    baton_zk_expired(zk) ? "expired our session" : "did not answer again in time");
            goto out;
        }
        retried = 1;
    }
    /* After a lost step the first answer may have been applied already:
     * whether anything changed is what was there against what is. */
    if (retried && !changed)
        changed = !have || cfg.partitions != cur.partitions || strcmp(cfg.topic, cur.topic) != 0;
    if (!changed && !added)
        printf("group %s already initialised (no change)\n", ctx->group);
    else if (!have && cfg.topic[0])
        printf("initialised group %s: topic %s, %d partitions, strategy %s, at %s\n", ctx->group,
               cfg.topic, cfg.partitions, cfg.strategy, base);
    else if (!have)
        printf("initialised group %s: keys only, strategy %s, at %s\n", ctx->group, cfg.strategy,
               base);
    else if (changed && !cur.topic[0])
        printf("group %s now consumes topic %s (%d partitions)\n", ctx->group, cfg.topic,
               cfg.partitions);
    else if (changed)
        printf("grew group %s to %d partitions (from %d)\n", ctx->group, cfg.partitions,
               cur.partitions);
    if (added)
        printf("added %zu key(s) to group %s\n", added, ctx->group);
    rc = BATON_EXIT_OK;
out:
    free(kafka_props);
    for (size_t i = 0; i < nkeys; i++)
        free(keys[i]);
    free(keys);
    free(base);
    baton_zk_destroy(zk);
    return rc;
}
