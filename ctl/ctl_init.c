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

#include <poll.h>
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
            "done again once the session is back (waiting up to --timeout, at most 5\n"
            "times; an expired session is replaced), and init says so.\n"
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

/* One `init`, in steps that are each idempotent (0 read what is there, 1
 * write the config and permanent znodes, 2 add the keys), so that a step
 * whose answer was lost with the connection can simply run again. */
typedef struct {
    int stage;               /* the next step; 3 when done */
    int have;                /* a config was there at the first read */
    baton_config_t cur, cfg; /* what was there, what to write */
    char **before;           /* with keys: the keys there at the first read */
    size_t nbefore;
    int changed;              /* step 1 said it changed something */
    size_t added;             /* step 2's count of keys added */
    int init_lost, keys_lost; /* an answer of step 1 / 2 was lost */
} init_run_t;

/* How many lost connections one init rides out. */
#define INIT_RETRIES 5

/* Runs r's steps from r->stage on; a step that succeeds moves r->stage past
 * it. A lost connection (BATON_CONNECTION, BATON_EXPIRED) is returned with
 * the step left to run again. */
static int init_steps(const ctl_ctx_t *ctx, baton_zk_t *zk, const char *base, const char *topic,
                      int32_t partitions, const char *strategy_arg, baton_strategy_t strategy,
                      char *const *keys, size_t nkeys, init_run_t *r, char *errstr,
                      size_t errstr_size) {
    int err;
    if (r->stage == 0) {
        err = baton_group_config_read(zk, base, 0, &r->cur, errstr, errstr_size);
        if (err != BATON_OK && err != BATON_NOTFOUND && err != BATON_CORRUPT)
            return err; /* a malformed config is reported by baton_group_init */
        r->have = err == BATON_OK;
        /* Keys alone on an existing group leave its topic and partitions be. */
        baton_config_t *cfg = &r->cfg;
        *cfg = (baton_config_t){.partitions = partitions};
        snprintf(cfg->topic, sizeof(cfg->topic), "%s", topic ? topic : "");
        if (!topic && r->have) {
            cfg->partitions = r->cur.partitions;
            snprintf(cfg->topic, sizeof(cfg->topic), "%s", r->cur.topic);
        }
        snprintf(cfg->strategy, sizeof(cfg->strategy), "%s",
                 !strategy_arg && r->have ? r->cur.strategy : baton_strategy_name(strategy));
        if (nkeys) {
            /* A retry after a lost answer lists them again. */
            baton_zk_strings_free(r->before, r->nbefore);
            r->before = NULL;
            r->nbefore = 0;
            baton_bad_keys_t ignored;
            err = baton_group_keys(zk, base, 0, &r->before, &r->nbefore, &ignored, errstr,
                                   errstr_size);
            /* Keys past the limit are refused before step 1 writes anything
             * (step 2's add checks again, against what is there then), on
             * the same listing. */
            if (err == BATON_OK || err == BATON_NOTFOUND) /* NOTFOUND: no keys yet */
                err = baton_keys_room_listed(r->before, r->nbefore, &ignored, keys, nkeys, errstr,
                                             errstr_size);
            baton_bad_keys_free(&ignored);
            if (err != BATON_OK && err != BATON_NOTFOUND)
                return err;
        }
        r->stage = 1;
    }
    if (r->stage == 1) {
        BATON_FAILPOINT("ctl.init.before_write");
        int ch = 0;
        char why[512];
        err = baton_group_init(zk, base, &r->cfg, &ch, why, sizeof(why));
        if (err != BATON_OK) {
            r->init_lost |= err == BATON_CONNECTION || err == BATON_EXPIRED;
            return baton_seterr(errstr, errstr_size, err, "cannot initialise group %s: %s",
                                ctx->group, why);
        }
        r->changed |= ch;
        r->stage = 2;
    }
    if (r->stage == 2 && nkeys) {
        size_t a = 0;
        err = baton_group_keys_add(zk, base, keys, nkeys, &a, errstr, errstr_size);
        r->added += a;
        if (err != BATON_OK) {
            r->keys_lost |= err == BATON_CONNECTION || err == BATON_EXPIRED;
            return err;
        }
    }
    r->stage = 3;
    return BATON_OK;
}

/* Whether keys[i] is a name that was not there before and not earlier in
 * keys (what step 2 added, counted after a lost answer). */
static int key_new(const init_run_t *r, char *const *keys, size_t i) {
    for (size_t j = 0; j < i; j++)
        if (!strcmp(keys[j], keys[i]))
            return 0;
    for (size_t j = 0; j < r->nbefore; j++)
        if (!strcmp(r->before[j], keys[i]))
            return 0;
    return 1;
}

/* After a lost connection: waits (up to --timeout) until the session is
 * back. A session ZooKeeper expired meanwhile is replaced by a new one:
 * init holds no ephemeral node, so nothing of the old one is missed.
 * Returns BATON_OK when connected again, or an error with errstr set. */
static int init_reconnect(const ctl_ctx_t *ctx, baton_zk_t **zk, char *errstr, size_t n) {
    int64_t deadline = baton_now_ms() + ctx->timeout_ms;
    while (!baton_zk_connected(*zk) && !baton_zk_expired(*zk) && baton_now_ms() < deadline) {
        struct pollfd pfd = {.fd = baton_zk_fd(*zk), .events = POLLIN};
        int64_t left = deadline - baton_now_ms();
        poll(&pfd, 1, left > 100 ? 100 : (int)(left > 0 ? left : 0));
        baton_zk_event_t ev;
        while (baton_zk_next_event(*zk, &ev))
            baton_zk_event_release(&ev); /* the state is what we wait on */
    }
    if (baton_zk_connected(*zk))
        return BATON_OK;
    if (!baton_zk_expired(*zk))
        return baton_seterr(errstr, n, BATON_TIMEOUT,
                            "cannot initialise group %s: ZooKeeper did not answer again within "
                            "--timeout (%d ms)",
                            ctx->group, ctx->timeout_ms);
    fprintf(stderr, "%s: ZooKeeper expired our session meanwhile; starting a new one\n", CTL_PROG);
    baton_zk_destroy(*zk);
    *zk = ctl_connect(ctx); /* says why itself when it fails */
    errstr[0] = '\0';
    return *zk ? BATON_OK : BATON_CONNECTION;
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
    init_run_t run = {0};
    int rc = BATON_EXIT_FAILURE;

    /* What is there now tells "created" from "grown", and supplies the
     * strategy when none is given so growing needs only --topic and N.
     * A step that meets a lost connection runs again once the session is
     * back (init_steps, init_reconnect). */
    for (int losses = 0;;) {
        int err = init_steps(ctx, zk, base, topic, (int32_t)partitions, strategy_arg, strategy,
                             keys, nkeys, &run, errstr, sizeof(errstr));
        if (err == BATON_OK)
            break;
        if ((err != BATON_CONNECTION && err != BATON_EXPIRED) || ++losses > INIT_RETRIES) {
            fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
            goto out;
        }
        fprintf(stderr,
                "%s: lost the connection to ZooKeeper mid-command (%s); trying again when it "
                "answers (init is idempotent)\n",
                CTL_PROG, errstr);
        if ((err = init_reconnect(ctx, &zk, errstr, sizeof(errstr))) != BATON_OK) {
            if (errstr[0])
                fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
            goto out;
        }
    }
    /* After a lost answer the step may have been applied already: what
     * changed is then what was there at the first read against what is. */
    const baton_config_t cur = run.cur, cfg = run.cfg;
    int have = run.have, changed = run.changed;
    size_t added = run.added;
    if (run.init_lost && !changed)
        changed = !have || cfg.partitions != cur.partitions || strcmp(cfg.topic, cur.topic) != 0;
    if (run.keys_lost) {
        added = 0;
        for (size_t i = 0; i < nkeys; i++)
            added += key_new(&run, keys, i);
    }
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
    for (size_t i = 0; i < run.nbefore; i++)
        free(run.before[i]);
    free(run.before);
    free(kafka_props);
    for (size_t i = 0; i < nkeys; i++)
        free(keys[i]);
    free(keys);
    free(base);
    baton_zk_destroy(zk);
    return rc;
}
