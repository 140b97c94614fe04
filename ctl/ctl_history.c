/* ctl_history.c: `batonctl history`: the last ownership changes, as the
 * leading coordinator recorded them in the bounded ring <base>/history
 * (coordinator/coord_history.h), oldest first. A read command: it changes
 * nothing. */
#include "ctl.h"
#include "ctl_history.h"
#include "ctl_status.h"

#include "baton_codec.h"
#include "baton_err.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_opts.h"
#include "baton_util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void ctl_history_usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G history [--partition LIST] [--worker W] [--json]\n"
            "\n"
            "The last ownership changes (at most %d), oldest first, as the leading\n"
            "coordinator recorded them with each assignment it published: the\n"
            "partition, the worker it moved from and to ('-': none), the new owner's\n"
            "epoch once known (the current owner's claim czxid, for the latest change\n"
            "of a partition whose new owner holds it now; '-' otherwise), the\n"
            "generation and the reason:\n"
            "  new        first placed on a worker already in the group (partitions\n"
            "             added; a new group's first placement is a join)\n"
            "  join       moved to (or first placed on) a worker that just joined\n"
            "  leave      its worker left gracefully (SIGTERM: it marked itself leaving)\n"
            "  crash      its worker vanished without leaving: a crash, a session\n"
            "             expiry or an eviction\n"
            "  drain      its worker is draining (batonctl drain)\n"
            "  pin        pinned to its new worker (batonctl pin)\n"
            "  rebalance  moved to even out the load\n"
            "  forced     the coordinator deleted a claim its worker held past\n"
            "             --handoff-timeout-ms after the partition moved away\n"
            "\n"
            "  --partition LIST   only these partitions: 7, 0-9 or 1,5,8\n"
            "  --worker W         only changes from or to W\n"
            "  --json             {\"group\", \"entries\": [{\"partition\", \"key\", \"from\", "
            "\"to\",\n"
            "                     \"epoch\", \"generation\", \"time_ms\", \"reason\"}]}\n"
            "                     (from, to, epoch: null where none or unknown)\n"
            "\n"
            "examples:\n"
            "  %s --zk 127.0.0.1:2181 --group orders history --partition 7\n"
            "  %s --zk 127.0.0.1:2181 --group orders history --json | jq -c '.entries[-1]'\n",
            CTL_PROG, BATON_HISTORY_MAX, CTL_PROG, CTL_PROG);
}

static const char *cell_time(const json_t *row, const char *key, char *buf, size_t n) {
    json_t *v = json_object_get(row, key);
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
        return "-";
    int64_t ms = json_integer_value(v);
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char t[32];
    strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, n, "%s.%03dZ", t, (int)(ms % 1000));
    return buf;
}

static int wanted(const ctl_view_opts_t *o, const baton_history_entry_t *e) {
    if (o->partitions) {
        int in = 0;
        for (size_t i = 0; i < o->npartitions && !in; i++)
            in = o->partitions[i] == e->partition;
        if (!in)
            return 0;
    }
    return !o->worker || strcmp(e->from, o->worker) == 0 || strcmp(e->to, o->worker) == 0;
}

/* The current owner and epoch of p from a status object; NULL if none. */
static const json_t *status_row(const json_t *st, int32_t p) {
    const json_t *rows = json_object_get(st, "partitions");
    const json_t *row = json_array_get(rows, (size_t)p);
    if (row && json_integer_value(json_object_get(row, "partition")) == p)
        return row;
    size_t i;
    json_array_foreach(rows, i, row) {
        if (json_integer_value(json_object_get(row, "partition")) == p)
            return row;
    }
    return NULL;
}

/* For the last entry of its key in h: the key's row of the status object
 * (owner, epoch now); NULL otherwise. */
static const json_t *key_row(const json_t *st, const baton_history_t *h, size_t i) {
    const char *key = h->entries[i].key;
    for (size_t j = i + 1; j < h->n; j++)
        if (strcmp(h->entries[j].key, key) == 0)
            return NULL;
    size_t k;
    const json_t *row;
    json_array_foreach(json_object_get(st, "keys"), k, row) {
        const char *name = json_string_value(json_object_get(row, "key"));
        if (name && strcmp(name, key) == 0)
            return row;
    }
    return NULL;
}

int ctl_cmd_history(ctl_ctx_t *ctx, int argc, char **argv) {
    ctl_view_opts_t o;
    ctl_view_parse(ctx, &o, argc, argv, CTL_VIEW_FILTER, ctl_history_usage);
    int rc = BATON_EXIT_FAILURE;
    char errstr[1024];
    json_t *st = NULL, *out = NULL;
    char *data = NULL, *path = NULL, *base = NULL;
    baton_history_t h = {0};
    int32_t *latest = NULL;
    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk)
        goto out;
    int err = ctl_status_gather(zk, ctx->root, ctx->group, &st, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        goto out;
    }
    int64_t nparts =
        json_integer_value(json_object_get(json_object_get(st, "config"), "partitions"));
    for (size_t i = 0; i < o.npartitions; i++)
        if (o.partitions[i] >= nparts) {
            fprintf(stderr, "%s: --partition: %d is not a partition of group %s (0..%lld)\n",
                    CTL_PROG, o.partitions[i], ctx->group, (long long)nparts - 1);
            rc = BATON_EXIT_USAGE;
            goto out;
        }
    base = baton_group_base(ctx->root, ctx->group);
    path = baton_layout_history(base);
    size_t len = 0;
    err = baton_zk_get(zk, path, 0, &data, &len, NULL);
    if (err == BATON_OK && len > 0) {
        if (baton_history_decode(data, len, &h, errstr, sizeof(errstr)) != BATON_OK) {
            fprintf(stderr, "%s: %s: %s\n", CTL_PROG, path, errstr);
            goto out;
        }
    } else if (err != BATON_OK && err != BATON_NOTFOUND) {
        fprintf(stderr, "%s: cannot read '%s': %s\n", CTL_PROG, path, baton_strerror(err));
        goto out;
    }
    /* The latest entry of each partition: only it can name the current
     * owner's epoch. */
    latest = xmalloc(sizeof(int32_t) * (nparts > 0 ? (size_t)nparts : 1));
    for (int64_t p = 0; p < nparts; p++)
        latest[p] = -1;
    for (size_t i = 0; i < h.n; i++)
        if (h.entries[i].partition >= 0 && h.entries[i].partition < nparts)
            latest[h.entries[i].partition] = (int32_t)i;
    int any_key = 0;
    json_t *entries = json_array();
    for (size_t i = 0; i < h.n; i++) {
        baton_history_entry_t *e = &h.entries[i];
        if (!wanted(&o, e))
            continue;
        int64_t epoch = e->epoch;
        const json_t *row =
            e->key[0] ? key_row(st, &h, i)
            : e->partition >= 0 && e->partition < nparts && latest[e->partition] == (int32_t)i
                ? status_row(st, e->partition)
                : NULL;
        const char *owner = row ? json_string_value(json_object_get(row, "owner")) : NULL;
        if (epoch < 0 && owner && e->to[0] && strcmp(owner, e->to) == 0 &&
            json_is_integer(json_object_get(row, "epoch")))
            epoch = json_integer_value(json_object_get(row, "epoch"));
        any_key |= e->key[0] != 0;
        json_array_append_new(entries,
                              json_pack("{s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:s}", "partition",
                                        e->key[0] ? json_null() : json_integer(e->partition), "key",
                                        e->key[0] ? json_string(e->key) : json_null(), "from",
                                        e->from[0] ? json_string(e->from) : json_null(), "to",
                                        e->to[0] ? json_string(e->to) : json_null(), "epoch",
                                        epoch >= 0 ? json_integer(epoch) : json_null(),
                                        "generation", (json_int_t)e->generation, "time_ms",
                                        (json_int_t)e->time_ms, "reason", e->reason));
    }
    out = json_pack("{s:O, s:o}", "group", json_object_get(st, "group"), "entries", entries);
    if (o.as_json) {
        ctl_status_print_json(out, stdout);
    } else if (json_array_size(entries) == 0) {
        printf("no ownership changes recorded%s\n", h.n ? " that match the filters"
                                                        : " (none published yet, or a coordinator "
                                                          "older than the history ring)");
    } else {
        static const ctl_col_t cols[] = {
            {"TIME (UTC)", "time_ms", 24, 24, 0, cell_time},
            {"PARTITION", "partition", 9, 9, 1, ctl_cell_text},
            {"KEY", "key", 3, CTL_COL_ID, 0, ctl_cell_text},
            {"FROM", "from", 4, CTL_COL_ID, 0, ctl_cell_text},
            {"TO", "to", 4, CTL_COL_ID, 0, ctl_cell_text},
            {"EPOCH", "epoch", 5, 20, 1, ctl_cell_text},
            {"GENERATION", "generation", 10, 12, 1, ctl_cell_text},
            {"REASON", "reason", 9, 9, 0, ctl_cell_text},
        };
        /* The KEY column only when a key moved. */
        ctl_col_t shown[BATON_ARRAY_SIZE(cols)];
        size_t ns = 0;
        for (size_t c = 0; c < BATON_ARRAY_SIZE(cols); c++)
            if (any_key || strcmp(cols[c].key, "key") != 0)
                shown[ns++] = cols[c];
        ctl_print_table(stdout, entries, shown, ns);
    }
    fflush(stdout);
    ctl_status_print_warnings(st);
    rc = BATON_EXIT_OK;
out:
    free(latest);
    baton_history_release(&h);
    free(data);
    free(path);
    free(base);
    json_decref(out);
    json_decref(st);
    baton_zk_destroy(zk);
    ctl_view_opts_release(&o);
    return rc;
}
