/* coordinator.c: election, membership watch and fenced publication of the
 * assignment (see coordinator.h and ARCHITECTURE.md). Everything runs on the
 * caller's thread; ZooKeeper's completion thread only queues events. */
#include "coordinator.h"

#include "assignment.h"
#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_log.h"
#include "baton_signal.h"
#include "baton_util.h"
#include "baton_zk.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A safety net: even if a watch were lost, the leader re-reads everything
 * this often. Watches do the real work. */
#define RESYNC_INTERVAL_MS 10000
#define RETRY_BACKOFF_MS 250

typedef struct {
    const baton_coord_conf_t *conf;
    baton_zk_t *zk;
    char *base;
    char my_node[512]; /* full path of our c- node; "" when we have none */
    int leader;
    int64_t epoch; /* czxid of our c- node while leading */
} coord_t;

/* The published assignment as read back from ZooKeeper. */
typedef struct {
    char *id;
    int32_t *partitions;
    size_t npartitions;
    int valid; /* 0 when its znode was malformed: it is rewritten */
} published_t;

static int coord_candidate_create(coord_t *c) {
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    baton_member_t me = {.pid = getpid(), .capacity = 1};
    snprintf(me.id, sizeof(me.id), "%s", c->conf->id);
    snprintf(me.host, sizeof(me.host), "%s", host);
    char *data = baton_member_encode(&me);
    char *prefix = xasprintf("%s/coordinators/c-", c->base);
    int err = baton_zk_create(c->zk, prefix, data, strlen(data), ZOO_EPHEMERAL_SEQUENTIAL,
                              c->my_node, sizeof(c->my_node), NULL);
    if (err == BATON_NOTFOUND)
        BLOG_ERROR("event=group_missing path=%s/coordinators msg=\"run batonctl init first\"",
                   c->base);
    else if (err == BATON_OK)
        BLOG_INFO("event=candidate node=%s", c->my_node);
    free(prefix);
    free(data);
    return err;
}

static void coord_step_down(coord_t *c, const char *why) {
    if (c->leader)
        BLOG_WARN("event=step_down reason=%s epoch=%lld", why, (long long)c->epoch);
    c->leader = 0;
    c->epoch = 0;
}

/* Evaluates the election; sets c->leader. Leaves a watch on the predecessor
 * (standby) or on our own node (leader). */
static int coord_elect(coord_t *c) {
    int err;
    if (!c->my_node[0] && (err = coord_candidate_create(c)) != BATON_OK)
        return err;
    char *dir = xasprintf("%s/coordinators", c->base);
    char **names = NULL;
    size_t n = 0;
    err = baton_zk_children(c->zk, dir, 0, &names, &n);
    if (err != BATON_OK)
        goto out;
    const char *mine = strrchr(c->my_node, '/') + 1;
    int64_t my_seq = baton_seq_of(mine);
    const char *pred = NULL, *lowest = NULL;
    int64_t pred_seq = -1, low_seq = INT64_MAX;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t s = baton_seq_of(names[i]);
        if (s < 0)
            continue; /* not a candidate node: ignore it */
        if (strcmp(names[i], mine) == 0)
            found = 1;
        if (s < low_seq) {
            low_seq = s;
            lowest = names[i];
        }
        if (s < my_seq && s > pred_seq) {
            pred_seq = s;
            pred = names[i];
        }
    }
    if (!found) {
        /* Our node is gone though our session lives (an operator removed it):
         * we are deposed; join again at the back of the queue. */
        coord_step_down(c, "candidate_node_removed");
        BLOG_WARN("event=candidate_lost node=%s", c->my_node);
        c->my_node[0] = 0;
        err = BATON_CONFLICT;
        goto out;
    }
    if (lowest && strcmp(lowest, mine) == 0) {
        struct Stat st;
        /* Watch our own node too: its deletion deposes us at once. */
        err = baton_zk_exists(c->zk, c->my_node, 1, &st);
        if (err != BATON_OK)
            goto out;
        if (!c->leader) {
            c->leader = 1;
            c->epoch = st.czxid;
            BLOG_INFO("event=elected node=%s epoch=%lld", c->my_node, (long long)c->epoch);
        }
    } else {
        coord_step_down(c, "not_lowest");
        char *pred_path = xasprintf("%s/%s", dir, pred);
        err = baton_zk_exists(c->zk, pred_path, 1, NULL);
        if (err == BATON_NOTFOUND)
            err = BATON_CONFLICT; /* predecessor vanished meanwhile: evaluate again */
        else if (err == BATON_OK)
            BLOG_DEBUG("event=standby watching=%s", pred_path);
        free(pred_path);
    }
out:
    baton_zk_strings_free(names, n);
    free(dir);
    return err;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int find_id(char **ids, size_t n, const char *id) {
    char **hit = bsearch(&id, ids, n, sizeof(char *), cmp_str);
    return hit ? (int)(hit - ids) : -1;
}

static void published_free(published_t *pub, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(pub[i].id);
        free(pub[i].partitions);
    }
    free(pub);
}

/* Reads assignment/<id> for every child. */
static int read_published(coord_t *c, published_t **out, size_t *nout) {
    char *dir = xasprintf("%s/assignment", c->base);
    char **names = NULL;
    size_t n = 0;
    int err = baton_zk_children(c->zk, dir, 0, &names, &n);
    if (err != BATON_OK) {
        free(dir);
        return err;
    }
    published_t *pub = xcalloc(n, sizeof(*pub));
    for (size_t i = 0; i < n; i++) {
        pub[i].id = xstrdup(names[i]);
        char *path = xasprintf("%s/%s", dir, names[i]);
        char *data = NULL;
        size_t len = 0;
        err = baton_zk_get(c->zk, path, 0, &data, &len, NULL);
        if (err == BATON_NOTFOUND) {
            err = BATON_OK; /* removed meanwhile: treat as empty */
        } else if (err == BATON_OK) {
            baton_worker_assignment_t wa;
            char why[256];
            if (baton_worker_assignment_decode(data, len, &wa, why, sizeof(why)) == BATON_OK) {
                pub[i].partitions = wa.partitions;
                pub[i].npartitions = wa.npartitions;
                pub[i].valid = 1;
            } else {
                BLOG_ERROR("event=corrupt_znode path=%s error=\"%s\" action=rewrite", path, why);
            }
        }
        free(data);
        free(path);
        if (err != BATON_OK)
            break;
    }
    baton_zk_strings_free(names, n);
    free(dir);
    if (err != BATON_OK) {
        published_free(pub, n);
        return err;
    }
    *out = pub;
    *nout = n;
    return BATON_OK;
}

static int same_list(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof(int32_t)) == 0);
}

/* Computes the next assignment and publishes it if anything changed. */
static int coord_rebalance(coord_t *c) {
    char errstr[256];
    baton_config_t cfg;
    int err = baton_group_config_read(c->zk, c->base, 1, &cfg, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        BLOG_ERROR("event=config_error error=\"%s\"", errstr);
        return err;
    }
    baton_strategy_t strategy;
    if (baton_strategy_parse(cfg.strategy, &strategy) != BATON_OK) {
        BLOG_ERROR("event=config_error error=\"unknown strategy '%s'\"", cfg.strategy);
        return BATON_CORRUPT;
    }

    char *wdir = xasprintf("%s/workers", c->base);
    char *adir = xasprintf("%s/assignment", c->base);
    char **ids = NULL, **raw = NULL;
    size_t nraw = 0, nids = 0;
    published_t *pub = NULL;
    size_t npub = 0;
    int *prev = NULL, *next = NULL, *prev_pub = NULL;
    char **payloads = NULL;
    char **paths = NULL;
    zoo_op_t *ops = NULL;
    zoo_op_result_t *results = NULL;
    char *meta_data = NULL, *meta_new = NULL;

    if ((err = baton_zk_children(c->zk, wdir, 1, &raw, &nraw)) != BATON_OK)
        goto out;
    ids = xcalloc(nraw, sizeof(char *));
    for (size_t i = 0; i < nraw; i++) {
        if (baton_id_valid(raw[i]) != 0) {
            BLOG_ERROR("event=bad_member path=%s/%s action=ignore", wdir, raw[i]);
            continue;
        }
        ids[nids++] = raw[i];
    }
    /* children come sorted, so ids is sorted: indices are stable for a set */

    struct Stat meta_st;
    size_t meta_len = 0;
    baton_assignment_meta_t meta = {0};
    if ((err = baton_zk_get(c->zk, adir, 0, &meta_data, &meta_len, &meta_st)) != BATON_OK)
        goto out;
    if (meta_len > 0) {
        char why[256];
        if (baton_assignment_meta_decode(meta_data, meta_len, &meta, why, sizeof(why)) != 0) {
            BLOG_ERROR("event=corrupt_znode path=%s error=\"%s\" action=rewrite", adir, why);
            meta.generation = 0;
        }
    }
    if ((err = read_published(c, &pub, &npub)) != BATON_OK)
        goto out;

    int32_t P = cfg.partitions;
    prev = xmalloc(sizeof(int) * (size_t)(P ? P : 1));
    next = xmalloc(sizeof(int) * (size_t)(P ? P : 1));
    /* prev_pub[p]: who the published assignment names, live or not (for
     * the log); prev[p]: that owner's index if it is still live. */
    prev_pub = xmalloc(sizeof(int) * (size_t)(P ? P : 1));
    for (int32_t p = 0; p < P; p++)
        prev[p] = prev_pub[p] = -1;
    for (size_t i = 0; i < npub; i++) {
        int w = find_id(ids, nids, pub[i].id);
        for (size_t k = 0; k < pub[i].npartitions; k++) {
            int32_t p = pub[i].partitions[k];
            if (p >= P || prev_pub[p] != -1)
                continue;
            prev_pub[p] = (int)i;
            /* a departed worker's partitions are up for grabs */
            prev[p] = w;
        }
    }
    int moved = baton_assign(strategy, P, prev, (int)nids, next);
    if (moved < 0) {
        err = moved;
        goto out;
    }

    /* Build the multi: fence ops first, then only the nodes that change. */
    size_t max_ops = 2 + nids + npub;
    ops = xcalloc(max_ops, sizeof(zoo_op_t));
    results = xcalloc(max_ops, sizeof(zoo_op_result_t));
    payloads = xcalloc(max_ops, sizeof(char *));
    paths = xcalloc(max_ops, sizeof(char *));
    size_t nops = 0;
    int64_t gen = meta.generation + 1;
    zoo_check_op_init(&ops[nops++], c->my_node, -1);
    baton_assignment_meta_t new_meta = {.generation = gen, .coordinator_epoch = c->epoch};
    snprintf(new_meta.strategy, sizeof(new_meta.strategy), "%s", baton_strategy_name(strategy));
    meta_new = baton_assignment_meta_encode(&new_meta);
    zoo_set_op_init(&ops[nops++], adir, meta_new, (int)strlen(meta_new), meta_st.version, NULL);

    int32_t *list = xmalloc(sizeof(int32_t) * (size_t)(P ? P : 1));
    for (size_t w = 0; w < nids; w++) {
        size_t cnt = 0;
        for (int32_t p = 0; p < P; p++)
            if (next[p] == (int)w)
                list[cnt++] = p;
        published_t *old = NULL;
        for (size_t i = 0; i < npub; i++)
            if (strcmp(pub[i].id, ids[w]) == 0)
                old = &pub[i];
        if (old && old->valid && same_list(old->partitions, old->npartitions, list, cnt))
            continue;
        baton_worker_assignment_t wa = {.generation = gen, .partitions = list, .npartitions = cnt};
        payloads[nops] = baton_worker_assignment_encode(&wa);
        paths[nops] = xasprintf("%s/%s", adir, ids[w]);
        if (old)
            zoo_set_op_init(&ops[nops], paths[nops], payloads[nops], (int)strlen(payloads[nops]),
                            -1, NULL);
        else
            zoo_create_op_init(&ops[nops], paths[nops], payloads[nops],
                               (int)strlen(payloads[nops]), &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        nops++;
    }
    free(list);
    for (size_t i = 0; i < npub; i++) {
        if (find_id(ids, nids, pub[i].id) >= 0)
            continue;
        paths[nops] = xasprintf("%s/%s", adir, pub[i].id);
        zoo_delete_op_init(&ops[nops], paths[nops], -1);
        nops++;
    }
    if (nops == 2) {
        err = BATON_OK; /* nothing changed: publish nothing */
        goto out;
    }

    BATON_FAILPOINT("coordinator.before_publish");
    int rc = zoo_multi(baton_zk_handle(c->zk), (int)nops, ops, results);
    if (rc == ZOK) {
        BLOG_INFO("event=published generation=%lld epoch=%lld workers=%zu partitions=%d moved=%d "
                  "ops=%zu",
                  (long long)gen, (long long)c->epoch, nids, P, moved, nops);
        for (int32_t p = 0; p < P; p++) {
            if (prev[p] == next[p])
                continue;
            const char *from = prev_pub[p] >= 0 ? pub[prev_pub[p]].id : "-";
            const char *reason = prev_pub[p] < 0 ? "new" : prev[p] < 0 ? "leave" : "rebalance";
            BLOG_INFO("event=assign partition=%d from=%s to=%s generation=%lld reason=%s", p, from,
                      next[p] >= 0 ? ids[next[p]] : "-", (long long)gen, reason);
        }
        err = BATON_OK;
    } else if (results[0].err == ZNONODE || results[1].err == ZBADVERSION ||
               results[1].err == ZNONODE) {
        /* The fence held: either our candidate node is gone or someone else
         * published since we read. Either way we are not the leader we
         * thought we were; nothing was written. */
        BLOG_WARN("event=deposed reason=%s epoch=%lld generation=%lld",
                  results[0].err == ZNONODE ? "candidate_node_gone" : "assignment_changed",
                  (long long)c->epoch, (long long)gen);
        coord_step_down(c, "publish_refused");
        err = BATON_DEPOSED;
    } else {
        err = baton_zk_err(rc);
        BLOG_WARN("event=publish_failed error=%s zerror=\"%s\"", baton_err_name(err), zerror(rc));
    }
out:
    if (payloads)
        for (size_t i = 0; i < max_ops; i++) {
            free(payloads[i]);
            free(paths[i]);
        }
    free(payloads);
    free(paths);
    free(ops);
    free(results);
    free(meta_data);
    free(meta_new);
    free(prev);
    free(prev_pub);
    free(next);
    published_free(pub, npub);
    free(ids);
    baton_zk_strings_free(raw, nraw);
    free(wdir);
    free(adir);
    return err;
}

static int coord_step(coord_t *c) {
    int err = coord_elect(c);
    if (err != BATON_OK)
        return err;
    if (!c->leader)
        return BATON_OK;
    err = coord_rebalance(c);
    if (err == BATON_DEPOSED) {
        /* If our node still exists someone else published: yield to them by
         * rejoining the queue at its back. */
        if (c->my_node[0] && baton_zk_delete(c->zk, c->my_node, -1) == BATON_OK)
            BLOG_INFO("event=candidate_withdrawn node=%s", c->my_node);
        c->my_node[0] = 0;
    }
    return err;
}

static int coord_connect(coord_t *c, int first) {
    char errstr[256];
    int err = baton_zk_connect(c->conf->zk_hosts, c->conf->session_timeout_ms,
                               c->conf->connect_timeout_ms, &c->zk, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        BLOG_ERROR("event=zk_connect_failed error=\"%s\"%s", errstr, first ? " action=exit" : "");
        return err;
    }
    BLOG_INFO("event=zk_connected session=0x%llx timeout_ms=%d",
              (unsigned long long)baton_zk_session_id(c->zk), baton_zk_session_timeout(c->zk));
    return BATON_OK;
}

int baton_coord_run(const baton_coord_conf_t *conf, int stop_fd) {
    coord_t c = {.conf = conf};
    c.base = baton_group_base(conf->root, conf->group);
    if (coord_connect(&c, 1) != BATON_OK) {
        free(c.base);
        return 1;
    }
    int dirty = 1;
    int64_t next_resync = baton_now_ms() + RESYNC_INTERVAL_MS;
    while (!baton_signal_stop_requested()) {
        if (!c.zk) {
            if (coord_connect(&c, 0) != BATON_OK) {
                baton_sleep_ms(1000);
                continue;
            }
            dirty = 1;
        }
        baton_zk_event_t ev;
        int expired = 0;
        while (baton_zk_next_event(c.zk, &ev)) {
            if (ev.type == ZOO_SESSION_EVENT) {
                if (ev.state == ZOO_EXPIRED_SESSION_STATE || ev.state == ZOO_AUTH_FAILED_STATE)
                    expired = 1;
                else if (ev.state == ZOO_CONNECTED_STATE)
                    dirty = 1; /* watches may have been missed: re-read */
            } else {
                BLOG_DEBUG("event=zk_watch type=%d path=%s", ev.type, ev.path);
                dirty = 1;
            }
            baton_zk_event_release(&ev);
        }
        if (expired || baton_zk_expired(c.zk)) {
            coord_step_down(&c, "session_expired");
            BLOG_WARN("event=session_expired action=reconnect");
            baton_zk_destroy(c.zk);
            c.zk = NULL;
            c.my_node[0] = 0;
            continue;
        }
        if (baton_now_ms() >= next_resync) {
            dirty = 1;
            next_resync = baton_now_ms() + RESYNC_INTERVAL_MS;
        }
        int wait_ms = 1000;
        if (dirty && baton_zk_connected(c.zk)) {
            dirty = 0;
            int err = coord_step(&c);
            if (err != BATON_OK) {
                /* Retry soon: connection loss, a vanished predecessor, a
                 * refused publish or a group not yet initialised. */
                dirty = 1;
                wait_ms = err == BATON_CONFLICT || err == BATON_DEPOSED ? 0 : RETRY_BACKOFF_MS;
                if (err == BATON_NOTFOUND || err == BATON_CORRUPT)
                    wait_ms = 1000;
            }
        }
        struct pollfd pfds[2] = {{.fd = baton_zk_fd(c.zk), .events = POLLIN},
                                 {.fd = stop_fd, .events = POLLIN}};
        poll(pfds, 2, wait_ms);
    }
    BLOG_INFO("event=stopping leader=%d", c.leader);
    if (c.zk) {
        if (c.my_node[0])
            baton_zk_delete(c.zk, c.my_node, -1);
        baton_zk_destroy(c.zk);
    }
    free(c.base);
    return 0;
}
