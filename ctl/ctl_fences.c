/* ctl_fences.c: `batonctl fences --sink URI`: the sink's view of every
 * partition (the epoch it fences at, next_offset, writes rejected) beside
 * ZooKeeper's current owner, and whether the two agree. The sink is the
 * resource that enforces single-writer correctness; this is how an operator
 * sees it doing so. */
#include "ctl.h"
#include "ctl_lag.h"
#include "ctl_status.h"

#include "baton_err.h"
#include "baton_group.h"
#include "baton_opts.h"
#include "baton_util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* How the sink's epoch compares with ZooKeeper's owner epoch. */
static const char *agreement(const json_t *owner_epoch, int have_row, int64_t sink_epoch) {
    if (!json_is_integer(owner_epoch))
        return "no_owner"; /* nobody to agree with */
    int64_t zk = json_integer_value(owner_epoch);
    if (!have_row || sink_epoch < zk)
        return "sink_behind"; /* the owner has not fenced (yet) */
    if (sink_epoch > zk)
        return "sink_ahead"; /* a newer owner fenced and is gone already */
    return "agree";
}

/* Builds {"group", "sink", "summary", "partitions"} from a status object
 * and the sink's rows. */
static json_t *fences_build(const json_t *st, const char *uri, const baton_fence_row_t *rows,
                            size_t nrows) {
    json_t *out = json_object(), *parts = json_array();
    json_int_t n_agree = 0, n_behind = 0, n_ahead = 0, n_none = 0, rejected = 0;
    size_t i;
    const json_t *row;
    json_array_foreach(json_object_get(st, "partitions"), i, row) {
        json_int_t p = json_integer_value(json_object_get(row, "partition"));
        const baton_fence_row_t *fr = NULL;
        for (size_t k = 0; k < nrows && !fr; k++) /* rows are ordered by partition */
            if (rows[k].partition == p)
                fr = &rows[k];
        json_t *owner_epoch = json_object_get(row, "epoch");
        const char *a = agreement(owner_epoch, fr != NULL, fr ? fr->epoch : 0);
        n_agree += strcmp(a, "agree") == 0;
        n_behind += strcmp(a, "sink_behind") == 0;
        n_ahead += strcmp(a, "sink_ahead") == 0;
        n_none += strcmp(a, "no_owner") == 0;
        rejected += fr ? fr->rejected : 0;
        json_t *o = json_object();
        json_object_set_new(o, "partition", json_integer(p));
        json_object_set(o, "owner", json_object_get(row, "owner"));
        json_object_set(o, "owner_epoch", owner_epoch);
        json_object_set(o, "state", json_object_get(row, "state"));
        json_object_set_new(o, "epoch", fr ? json_integer(fr->epoch) : json_null());
        json_object_set_new(o, "next_offset", fr ? json_integer(fr->next_offset) : json_null());
        json_object_set_new(o, "rejected", json_integer(fr ? fr->rejected : 0));
        json_object_set_new(o, "agreement", json_string(a));
        json_array_append_new(parts, o);
    }
    json_object_set(out, "group", json_object_get(st, "group"));
    json_object_set_new(out, "sink", json_string(uri));
    json_t *sum = json_object();
    json_object_set_new(sum, "agree", json_integer(n_agree));
    json_object_set_new(sum, "sink_behind", json_integer(n_behind));
    json_object_set_new(sum, "sink_ahead", json_integer(n_ahead));
    json_object_set_new(sum, "no_owner", json_integer(n_none));
    json_object_set_new(sum, "rejected", json_integer(rejected));
    json_object_set_new(out, "summary", sum);
    json_object_set_new(out, "partitions", parts);
    json_object_set(out, "warnings", json_object_get(st, "warnings"));
    return out;
}

static void fences_print_human(const json_t *fx, FILE *f) {
    static const ctl_col_t cols[] = {
        {"PARTITION", "partition", 9, 9, 1, ctl_cell_text},
        {"OWNER", "owner", 8, CTL_COL_ID, 0, ctl_cell_text},
        {"OWNER EPOCH", "owner_epoch", 11, 20, 1, ctl_cell_text},
        {"SINK EPOCH", "epoch", 10, 20, 1, ctl_cell_text},
        {"NEXT OFFSET", "next_offset", 11, 20, 1, ctl_cell_text},
        {"REJECTED", "rejected", 8, 12, 1, ctl_cell_text},
        {"AGREEMENT", "agreement", 11, 11, 0, ctl_cell_text},
    };
    const json_t *sum = json_object_get(fx, "summary");
#define SUMI(k) json_integer_value(json_object_get(sum, k))
    fprintf(f, "group:        %s\n", json_string_value(json_object_get(fx, "group")));
    fprintf(f, "sink:         %s\n", json_string_value(json_object_get(fx, "sink")));
    fprintf(f,
            "agreement:    %" JSON_INTEGER_FORMAT " agree, %" JSON_INTEGER_FORMAT
            " sink_behind, %" JSON_INTEGER_FORMAT " sink_ahead, %" JSON_INTEGER_FORMAT
            " no_owner\n",
            SUMI("agree"), SUMI("sink_behind"), SUMI("sink_ahead"), SUMI("no_owner"));
    fprintf(f, "rejected:     %" JSON_INTEGER_FORMAT " stale fences and writes in total\n",
            SUMI("rejected"));
#undef SUMI
    fputc('\n', f);
    const json_t *rows = json_object_get(fx, "partitions");
    if (json_array_size(rows))
        ctl_print_table(f, rows, cols, BATON_ARRAY_SIZE(cols));
    else
        fprintf(f, "no partitions\n");
}

/* The message for a sink that holds no fence row of the group: its id,
 * and the sink the group is bound to, if any. */
static void no_rows(baton_zk_t *zk, const ctl_ctx_t *ctx, const char *uri) {
    char errstr[512], bound[700] = "";
    char *shown = baton_sink_uri_redact(uri);
    baton_sink_t *sink = NULL;
    baton_sink_meta_t meta = {0};
    if (ctl_sink_open(uri, ctx->group, 0, &sink, errstr, sizeof(errstr)) == BATON_OK)
        baton_sink_meta(sink, &meta);
    baton_sink_destroy(sink);
    char *base = baton_group_base(ctx->root, ctx->group);
    baton_sink_binding_t b;
    int err = baton_group_sink_read(zk, base, &b, NULL, errstr, sizeof(errstr));
    if (err == BATON_OK && strcasecmp(b.sink_id, meta.sink_id) != 0)
        snprintf(bound, sizeof(bound), "; group '%s' is bound to another sink, %s (%s)", ctx->group,
                 b.sink_id, b.sink_uri[0] ? b.sink_uri : "uri unknown");
    else if (err == BATON_OK)
        snprintf(bound, sizeof(bound), "; it is the group's sink, and no owner fenced it yet");
    else if (err == BATON_NOTFOUND)
        snprintf(bound, sizeof(bound), "; group '%s' is bound to no sink yet", ctx->group);
    free(base);
    fprintf(stderr,
            "%s: sink %s (id %s) holds no rows of group '%s': nothing of this group was ever "
            "fenced there%s (batonctl sink show --sink URI)\n",
            CTL_PROG, shown, meta.sink_id[0] ? meta.sink_id : "unknown", ctx->group, bound);
    free(shown);
}

void ctl_fences_usage(FILE *f) {
    fprintf(
        f,
        "usage: %s --zk HOSTS --group G fences --sink URI [--json] [--partition LIST]\n"
        "                [--worker W]\n"
        "\n"
        "The sink's fence per partition -- the epoch it accepts writes from,\n"
        "next_offset (where the next owner resumes reading Kafka) and how many\n"
        "stale fences and writes it rejected -- beside ZooKeeper's current owner\n"
        "and its epoch (the owner claim's czxid), with their agreement:\n"
        "  agree        the sink fences at the owner's epoch: the owner is writing\n"
        "  sink_behind  the owner has not fenced the sink yet (just acquired, or\n"
        "               stuck before its fence); the previous owner's epoch still\n"
        "               rules there\n"
        "  sink_ahead   the sink fences at a higher epoch than the owner's: a newer\n"
        "               owner fenced and is gone, or ZooKeeper's claims were reset;\n"
        "               the current owner's writes are being rejected\n"
        "  no_owner     no claim in ZooKeeper\n"
        "Reads only (a sink that does not exist is an error, never created). A sink\n"
        "that holds no row of the group is an error (exit 1) saying so, and which\n"
        "sink the group is bound to (see 'sink show').\n"
        "\n"
        "  --sink URI         the group's fenced sink (sqlite:PATH, postgresql://... or\n"
        "                     redis://...);\n"
        "                     required\n"
        "  --json             {\"group\", \"sink\", \"summary\": {\"agree\", \"sink_behind\",\n"
        "                     \"sink_ahead\", \"no_owner\", \"rejected\"}, \"partitions\":\n"
        "                     [{\"partition\", \"owner\", \"owner_epoch\", \"state\", \"epoch\",\n"
        "                     \"next_offset\", \"rejected\", \"agreement\"}], \"warnings\"}\n"
        "                     (epoch, next_offset: the sink's; null without a row)\n"
        "  --partition LIST   only these partitions: 7, 0-9 or 1,5,8\n"
        "  --worker W         only partitions W owns, is assigned or pinned to\n"
        "\n"
        "examples:\n"
        "  %s --zk 127.0.0.1:2181 --group orders fences --sink sqlite:/var/lib/baton/out.db\n"
        "  %s --zk 127.0.0.1:2181 --group orders fences --sink sqlite:out.db --json \\\n"
        "      | jq '.partitions[] | select(.agreement != \"agree\")'\n",
        CTL_PROG, CTL_PROG, CTL_PROG);
}

int ctl_cmd_fences(ctl_ctx_t *ctx, int argc, char **argv) {
    ctl_view_opts_t o;
    ctl_view_parse(ctx, &o, argc, argv, CTL_VIEW_SINK | CTL_VIEW_NEEDS_SINK | CTL_VIEW_FILTER,
                   ctl_fences_usage);
    int rc = BATON_EXIT_FAILURE;
    char errstr[1024];
    json_t *st = NULL, *fx = NULL;
    baton_fence_row_t *rows = NULL;
    size_t nrows = 0;
    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk)
        goto out;
    /* ZooKeeper first, then the sink: an owner that fences in between
     * shows as agree, never as sink_ahead. */
    int err = ctl_status_gather(zk, ctx->root, ctx->group, &st, errstr, sizeof(errstr));
    if (err == BATON_OK)
        err = ctl_status_filter(st, &o, errstr, sizeof(errstr));
    if (err == BATON_OK)
        err = ctl_sink_fences(o.sink, ctx->group, &rows, &nrows, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        goto out;
    }
    if (nrows == 0) {
        /* Not sink_behind: nothing of the group was ever fenced there. */
        no_rows(zk, ctx, o.sink);
        goto out;
    }
    char *shown = baton_sink_uri_redact(o.sink);
    fx = fences_build(st, shown, rows, nrows);
    free(shown);
    if (o.as_json)
        ctl_status_print_json(fx, stdout);
    else
        fences_print_human(fx, stdout);
    fflush(stdout);
    ctl_status_print_warnings(st);
    rc = BATON_EXIT_OK;
out:
    free(rows);
    json_decref(fx);
    json_decref(st);
    baton_zk_destroy(zk);
    ctl_view_opts_release(&o);
    return rc;
}
