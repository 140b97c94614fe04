/* sink_bind.c: the binding check of sink_bind.h. */
#include "sink_bind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "baton_err.h"
#include "baton_group.h"
#include "baton_log.h"
#include "baton_util.h"
#include "sink_int.h"

const char *baton_sink_uri(const baton_sink_t *sink) { return sink ? sink->uri : ""; }

/* The refusal when the group is bound to another sink than ours; ours is
 * described by what (its id, or that it does not exist yet). */
static int bound_elsewhere(char *errstr, size_t n, const char *group, const baton_sink_binding_t *b,
                           const char *uri, const char *what) {
    char when[32];
    baton_time_iso(b->bound_ms, when, sizeof(when));
    return baton_seterr(errstr, n, BATON_CONFLICT,
                        "group '%s' is bound to sink %s (%s, bound by %s at %s); this worker's "
                        "sink %s %s: refusing to write (batonctl sink show; a deliberate move: "
                        "batonctl sink rebind)",
                        group, b->sink_id, b->sink_uri[0] ? b->sink_uri : "uri unknown",
                        b->bound_by[0] ? b->bound_by : "?", when, uri, what);
}

int baton_sink_bind_check(baton_zk_t *zk, const char *root, const char *group, baton_sink_t *sink,
                          const char *member, char *errstr, size_t n) {
    char *base = baton_group_base(root, group);
    baton_config_t cfg;
    baton_sink_meta_t meta;
    baton_sink_binding_t b;
    char when[32];
    int err = baton_group_uuid_ensure(zk, base, &cfg, NULL, errstr, n);
    if (err != BATON_OK)
        goto out;
    if ((err = baton_sink_meta(sink, &meta)) != BATON_OK) {
        baton_seterr(errstr, n, err, "%s", baton_sink_errstr(sink));
        goto out;
    }
    if (!meta.sink_id[0]) {
        /* A sink not created yet (baton_sink_open_lazy: a new SQLite file)
         * has no id: a bound group is bound to another sink, and refuses it
         * before anything is created; an unbound group binds it, so create
         * it now (the worker checks as it starts; its fences follow). */
        err = baton_group_sink_read(zk, base, &b, NULL, errstr, n);
        if (err == BATON_OK) {
            err = bound_elsewhere(errstr, n, group, &b, sink->uri,
                                  "does not exist yet (a new sink, nothing created)");
            goto out;
        }
        if (err != BATON_NOTFOUND)
            goto out;
        if ((err = baton_sink__ready(sink)) != BATON_OK ||
            (err = baton_sink_meta(sink, &meta)) != BATON_OK) {
            baton_seterr(errstr, n, err, "%s", baton_sink_errstr(sink));
            goto out;
        }
    }
    if (meta.group_uuid[0] && strcasecmp(meta.group_uuid, cfg.group_uuid) != 0) {
        baton_time_iso(meta.bound_ms, when, sizeof(when));
        err = baton_seterr(errstr, n, BATON_CONFLICT,
                           "sink %s (id %s) serves another group named '%s': it records group id "
                           "%s (since %s), but group '%s' at %s has id %s (another deployment, "
                           "root or cluster?): refusing to write (batonctl sink show; use another "
                           "sink or another group name)",
                           sink->uri, meta.sink_id, group, meta.group_uuid, when, group, base,
                           cfg.group_uuid);
        goto out;
    }
    for (int attempt = 0;; attempt++) {
        int32_t version = -1;
        err = baton_group_sink_read(zk, base, &b, &version, errstr, n);
        if (err == BATON_OK) {
            if (strcasecmp(b.sink_id, meta.sink_id) == 0)
                break;
            char what[64];
            snprintf(what, sizeof(what), "is %s", meta.sink_id);
            err = bound_elsewhere(errstr, n, group, &b, sink->uri, what);
            goto out;
        }
        if (err != BATON_NOTFOUND || attempt >= 3)
            goto out;
        /* Unbound: bind it to our sink. A create: of two first binders one
         * wins, the other reads the winner's binding and compares. */
        memset(&b, 0, sizeof(b));
        memcpy(b.sink_id, meta.sink_id, sizeof(b.sink_id));
        snprintf(b.sink_uri, sizeof(b.sink_uri), "%s", sink->uri);
        snprintf(b.bound_by, sizeof(b.bound_by), "%s", member);
        b.bound_ms = baton_wall_ms();
        err = baton_group_sink_write(zk, base, &b, -1, errstr, n);
        if (err == BATON_OK) {
            BLOG_INFO("event=sink_bound group=%s sink_id=%s sink=%s by=%s", baton_log_v(group),
                      baton_log_v(b.sink_id), baton_log_v(sink->uri), baton_log_v(member));
            break;
        }
        if (err != BATON_CONFLICT)
            goto out;
    }
    if ((err = baton_sink_expect_group(sink, cfg.group_uuid)) != BATON_OK)
        baton_seterr(errstr, n, err, "%s", baton_sink_errstr(sink));
    else
        BLOG_INFO("event=sink_binding_checked group=%s group_uuid=%s sink_id=%s",
                  baton_log_v(group), baton_log_v(cfg.group_uuid), baton_log_v(meta.sink_id));
out:
    free(base);
    return err;
}
