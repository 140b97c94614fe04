/* ctl_sink.c: `batonctl sink show [--sink URI]` and `batonctl sink rebind
 * --sink URI`: the group's sink binding (sink_bind.h). The group's side is
 * <root>/<group>/sink, the sink's its baton_groups row; a worker whose sink
 * or group does not match them writes nothing and exits 1. */
#include "ctl.h"
#include "ctl_lag.h"
#include "ctl_status.h"

#include "baton_err.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_opts.h"
#include "baton_util.h"
#include "sink_bind.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void ctl_sink_usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G sink show [--sink URI] [--json]\n"
            "       %s --zk HOSTS --group G sink rebind --sink URI\n"
            "\n"
            "A group is bound to one sink and a sink records the group it serves. The\n"
            "first worker to check binds them: ROOT/G/sink names the sink's id (its\n"
            "baton_meta table), and the sink's baton_groups row names the group's id\n"
            "(config group_uuid). A worker whose sink is not the group's, or whose\n"
            "sink serves another group of the same name (another root or cluster),\n"
            "writes nothing, leaves and exits 1.\n"
            "\n"
            "  show             the group's id and the sink it is bound to (id, URI, by\n"
            "                   whom, when); with --sink, that sink's id, the group id it\n"
            "                   records, and whether it is the group's sink. Reads only.\n"
            "  rebind           binds the group to the sink at --sink instead (a\n"
            "                   deliberate move: the new sink must hold the group's\n"
            "                   output from here on). Refused while any worker that takes\n"
            "                   partitions is live, and if the sink records another group\n"
            "                   of this name. Creates the sink if it does not exist.\n"
            "  --sink URI       a sink (sqlite:PATH, postgresql://..., redis://...)\n"
            "  --json           show: {\"group\", \"group_uuid\", \"binding\": {\"sink_id\",\n"
            "                   \"sink_uri\", \"bound_by\", \"bound_ms\"} | null, \"sink\":\n"
            "                   {\"uri\", \"sink_id\", \"group_uuid\", \"bound_ms\", \"bound\"}}\n"
            "                   (\"sink\" only with --sink)\n"
            "\n"
            "examples:\n"
            "  %s --zk 127.0.0.1:2181 --group orders sink show\n"
            "  %s --zk 127.0.0.1:2181 --group orders sink show --sink sqlite:w9.db\n"
            "  %s --zk 127.0.0.1:2181 --group orders sink rebind --sink sqlite:/srv/new.db\n",
            CTL_PROG, CTL_PROG, CTL_PROG, CTL_PROG, CTL_PROG);
}

/* The live members that take partitions (keys-only members, baton-run,
 * never write a sink), comma-joined into buf; returns how many. */
static int live_writers(baton_zk_t *zk, const char *base, char *buf, size_t size, int *err) {
    char *dir = baton_layout_workers(base);
    char **names = NULL;
    size_t n = 0, used = 0;
    int count = 0;
    buf[0] = '\0';
    *err = baton_zk_children(zk, dir, 0, &names, &n);
    if (*err == BATON_NOTFOUND)
        *err = BATON_OK;
    for (size_t i = 0; *err == BATON_OK && i < n; i++) {
        char *path = baton_layout_child(dir, names[i]);
        char *data = NULL, why[256];
        size_t len = 0;
        baton_member_t m;
        int e = baton_zk_get(zk, path, 0, &data, &len, NULL);
        /* A member node we cannot decode counts as a writer: be safe. */
        int writer =
            e == BATON_OK &&
            (baton_member_decode(data, len, &m, why, sizeof(why)) != BATON_OK || !m.no_partitions);
        if (e != BATON_OK && e != BATON_NOTFOUND)
            *err = e;
        if (writer) {
            int w = snprintf(buf + used, used < size ? size - used : 0, "%s%s", count ? ", " : "",
                             names[i]);
            used += w > 0 ? (size_t)w : 0;
            count++;
        }
        free(data);
        free(path);
    }
    baton_zk_strings_free(names, n);
    free(dir);
    return count;
}

static json_t *binding_json(const baton_sink_binding_t *b) {
    return json_pack("{s:s, s:s, s:s, s:I}", "sink_id", b->sink_id, "sink_uri", b->sink_uri,
                     "bound_by", b->bound_by, "bound_ms", (json_int_t)b->bound_ms);
}

static int sink_show(baton_zk_t *zk, const ctl_ctx_t *ctx, const char *base,
                     const baton_config_t *cfg, const char *uri, int as_json) {
    char errstr[1024], when[32];
    baton_sink_binding_t b;
    int err = baton_group_sink_read(zk, base, &b, NULL, errstr, sizeof(errstr));
    if (err != BATON_OK && err != BATON_NOTFOUND) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        return BATON_EXIT_FAILURE;
    }
    int bound = err == BATON_OK;
    baton_sink_meta_t meta = {0};
    baton_sink_t *sink = NULL;
    char *shown = uri ? baton_sink_uri_redact(uri) : NULL;
    if (uri) {
        err = ctl_sink_open(uri, ctx->group, 0, &sink, errstr, sizeof(errstr));
        if (err == BATON_OK && (err = baton_sink_meta(sink, &meta)) != BATON_OK)
            snprintf(errstr, sizeof(errstr), "--sink '%s': %s", shown, baton_sink_errstr(sink));
        baton_sink_destroy(sink);
        if (err != BATON_OK) {
            fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
            free(shown);
            return BATON_EXIT_FAILURE;
        }
    }
    int same_sink = bound && uri && strcasecmp(b.sink_id, meta.sink_id) == 0;
    int other_group = uri && meta.group_uuid[0] && cfg->group_uuid[0] &&
                      strcasecmp(meta.group_uuid, cfg->group_uuid) != 0;
    if (as_json) {
        json_t *o = json_object();
        json_object_set_new(o, "group", json_string(ctx->group));
        json_object_set_new(o, "group_uuid",
                            cfg->group_uuid[0] ? json_string(cfg->group_uuid) : json_null());
        json_object_set_new(o, "binding", bound ? binding_json(&b) : json_null());
        if (uri) {
            json_t *s = json_pack("{s:s, s:s}", "uri", shown, "sink_id", meta.sink_id);
            json_object_set_new(s, "group_uuid",
                                meta.group_uuid[0] ? json_string(meta.group_uuid) : json_null());
            json_object_set_new(s, "bound_ms",
                                meta.bound_ms ? json_integer(meta.bound_ms) : json_null());
            /* true: the group's sink; false: another; null: the group has none yet */
            json_object_set_new(s, "bound",
                                bound ? json_boolean(same_sink && !other_group) : json_null());
            json_object_set_new(o, "sink", s);
        }
        ctl_status_print_json(o, stdout);
        json_decref(o);
        free(shown);
        return BATON_EXIT_OK;
    }
    printf("group:        %s\n", ctx->group);
    printf("group id:     %s\n", cfg->group_uuid[0]
                                     ? cfg->group_uuid
                                     : "none yet (init or the first coordinator assigns it)");
    if (bound) {
        baton_time_iso(b.bound_ms, when, sizeof(when));
        printf("bound to:     sink %s\n", b.sink_id);
        char pu[sizeof(b.sink_uri)], pb[sizeof(b.bound_by)];
        printf("sink uri:     %s\n",
               b.sink_uri[0] ? ctl_printable(b.sink_uri, pu, sizeof(pu)) : "-");
        printf("bound by:     %s at %s\n",
               b.bound_by[0] ? ctl_printable(b.bound_by, pb, sizeof(pb)) : "-", when);
    } else {
        printf("bound to:     no sink yet (the first worker to start binds it)\n");
    }
    if (uri) {
        baton_time_iso(meta.bound_ms, when, sizeof(when));
        printf("--sink:       %s is sink %s\n", shown, meta.sink_id);
        if (meta.group_uuid[0])
            printf("it records:   group '%s' with id %s since %s\n", ctx->group, meta.group_uuid,
                   when);
        else
            printf("it records:   nothing for group '%s' (never fenced by it)\n", ctx->group);
        printf("verdict:      %s\n",
               other_group ? "it serves ANOTHER group of this name: workers refuse it"
               : !bound    ? "the group has no sink yet: a worker on it would bind it"
               : same_sink ? "it is the group's sink"
                           : "it is NOT the group's sink: workers on it refuse to write");
    }
    free(shown);
    return BATON_EXIT_OK;
}

static int sink_rebind(baton_zk_t *zk, const ctl_ctx_t *ctx, const char *base, const char *uri) {
    char errstr[1024], live[512];
    baton_config_t cfg;
    int err = baton_group_uuid_ensure(zk, base, &cfg, NULL, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        return BATON_EXIT_FAILURE;
    }
    int nlive = live_writers(zk, base, live, sizeof(live), &err);
    if (err != BATON_OK) {
        fprintf(stderr, "%s: cannot list %s/workers: %s\n", CTL_PROG, base, baton_strerror(err));
        return BATON_EXIT_FAILURE;
    }
    if (nlive > 0) {
        fprintf(stderr,
                "%s: refusing to rebind group '%s' while %d worker(s) are live (%s): stop them "
                "first, so that no worker writes the old sink after the move\n",
                CTL_PROG, ctx->group, nlive, live);
        return BATON_EXIT_FAILURE;
    }
    baton_sink_t *sink = NULL;
    baton_sink_meta_t meta;
    err = ctl_sink_open(uri, ctx->group, 1, &sink, errstr, sizeof(errstr));
    if (err == BATON_OK && (err = baton_sink_meta(sink, &meta)) != BATON_OK)
        snprintf(errstr, sizeof(errstr), "--sink '%s': %s", baton_sink_uri(sink),
                 baton_sink_errstr(sink));
    char shown[512];
    snprintf(shown, sizeof(shown), "%s", sink ? baton_sink_uri(sink) : uri);
    baton_sink_destroy(sink);
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        return BATON_EXIT_FAILURE;
    }
    if (meta.group_uuid[0] && strcasecmp(meta.group_uuid, cfg.group_uuid) != 0) {
        fprintf(stderr,
                "%s: sink %s (id %s) serves another group named '%s' (group id %s; this "
                "group's is %s): refusing to bind this group to it\n",
                CTL_PROG, shown, meta.sink_id, ctx->group, meta.group_uuid, cfg.group_uuid);
        return BATON_EXIT_FAILURE;
    }
    baton_sink_binding_t old, b = {0};
    int32_t version = -1;
    err = baton_group_sink_read(zk, base, &old, &version, errstr, sizeof(errstr));
    if (err != BATON_OK && err != BATON_NOTFOUND) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        return BATON_EXIT_FAILURE;
    }
    int had = err == BATON_OK;
    if (had && strcasecmp(old.sink_id, meta.sink_id) == 0) {
        printf("group %s is already bound to sink %s (%s)\n", ctx->group, meta.sink_id, shown);
        return BATON_EXIT_OK;
    }
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    memcpy(b.sink_id, meta.sink_id, sizeof(b.sink_id));
    snprintf(b.sink_uri, sizeof(b.sink_uri), "%s", shown);
    snprintf(b.bound_by, sizeof(b.bound_by), "batonctl sink rebind on %s", host[0] ? host : "?");
    b.bound_ms = baton_wall_ms();
    err = baton_group_sink_write(zk, base, &b, had ? version : -1, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        return BATON_EXIT_FAILURE;
    }
    /* A worker that registered meanwhile checks the binding again before
     * its first fence, so it sees the new one; say so if there is one. */
    if (live_writers(zk, base, live, sizeof(live), &err) > 0)
        fprintf(stderr, "%s: warning: worker(s) %s joined during the rebind\n", CTL_PROG, live);
    if (had)
        printf("group %s: bound to sink %s (%s), was %s (%s)\n", ctx->group, b.sink_id, shown,
               old.sink_id, old.sink_uri[0] ? old.sink_uri : "uri unknown");
    else
        printf("group %s: bound to sink %s (%s)\n", ctx->group, b.sink_id, shown);
    return BATON_EXIT_OK;
}

int ctl_cmd_sink(ctl_ctx_t *ctx, int argc, char **argv) {
    enum { OPT_JSON = 1, OPT_SINK };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"sink", required_argument, NULL, OPT_SINK},
        {"help", no_argument, NULL, CTL_OPT_HELP},
        CTL_GLOBAL_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int as_json = 0, opt;
    const char *uri = NULL;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ctl_global_opt(ctx, opt, optarg))
            continue;
        switch (opt) {
        case OPT_JSON: as_json = 1; break;
        case OPT_SINK:
            ctl_check_sink_uri(optarg);
            uri = optarg;
            break;
        case CTL_OPT_HELP: ctl_sink_usage(stdout); return BATON_EXIT_OK;
        default: ctl_bad_option(argc, argv);
        }
    }
    if (optind >= argc)
        baton_usage_error(CTL_PROG, "sink: show or rebind is required");
    const char *sub = argv[optind++];
    int is_show = strcmp(sub, "show") == 0, is_rebind = strcmp(sub, "rebind") == 0;
    if (!is_show && !is_rebind)
        baton_usage_error(CTL_PROG, "sink: unknown subcommand '%s' (show or rebind)", sub);
    if (optind < argc)
        baton_usage_error(CTL_PROG, "sink %s: unexpected argument '%s'", sub, argv[optind]);
    if (is_rebind && !uri)
        baton_usage_error(CTL_PROG, "sink rebind: --sink URI is required");
    if (is_rebind && as_json)
        baton_usage_error(CTL_PROG, "sink rebind: --json is for show");
    ctl_ctx_check(ctx);

    int rc = BATON_EXIT_FAILURE;
    char errstr[512];
    char *base = baton_group_base(ctx->root, ctx->group);
    baton_zk_t *zk = ctl_connect(ctx);
    baton_config_t cfg;
    if (!zk)
        goto out;
    if (ctl_config_read(zk, ctx->group, base, &cfg, errstr, sizeof(errstr)) != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        goto out;
    }
    rc = is_show ? sink_show(zk, ctx, base, &cfg, uri, as_json) : sink_rebind(zk, ctx, base, uri);
out:
    free(base);
    baton_zk_destroy(zk);
    return rc;
}
