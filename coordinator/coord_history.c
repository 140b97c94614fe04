/* coord_history.c: collects one publish's moves and appends them to the
 * <base>/history ring; see coord_history.h. */
#include "coord_history.h"

#include "baton_codec.h"
#include "baton_err.h"
#include "baton_layout.h"
#include "baton_log.h"
#include "baton_util.h"

#include <stdlib.h>
#include <string.h>

struct coord_history_s {
    char **prev; /* workers of the previous publication */
    size_t nprev, capprev;
    int prev_sorted; /* prev is sorted (for bsearch) */
    baton_history_entry_t *add;
    size_t nadd, capadd;
};

coord_history_t *coord_history_new(void) { return xcalloc(1, sizeof(coord_history_t)); }

const baton_history_entry_t *coord_history_pending(const coord_history_t *h, size_t *n) {
    *n = h->nadd;
    return h->add;
}

void coord_history_destroy(coord_history_t *h) {
    if (!h)
        return;
    for (size_t i = 0; i < h->nprev; i++)
        free(h->prev[i]);
    free(h->prev);
    free(h->add);
    free(h);
}

void coord_history_prev_worker(coord_history_t *h, const char *id) {
    if (h->nprev == h->capprev) {
        h->capprev = h->capprev ? h->capprev * 2 : 16;
        h->prev = xrealloc(h->prev, sizeof(char *) * h->capprev);
    }
    h->prev[h->nprev++] = xstrdup(id);
    h->prev_sorted = 0;
}

static int str_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted once, searched per move: a big first placement makes many. */
static int was_published(coord_history_t *h, const char *id) {
    if (h->nprev == 0)
        return 0;
    if (!h->prev_sorted) {
        qsort(h->prev, h->nprev, sizeof(char *), str_cmp);
        h->prev_sorted = 1;
    }
    return bsearch(&id, h->prev, h->nprev, sizeof(char *), str_cmp) != NULL;
}

static void add_reserve(coord_history_t *h, size_t more) {
    if (h->nadd + more <= h->capadd)
        return;
    while (h->capadd < h->nadd + more)
        h->capadd = h->capadd ? h->capadd * 2 : 64;
    h->add = xrealloc(h->add, sizeof(*h->add) * h->capadd);
}

void coord_history_add(coord_history_t *h, int32_t p, const char *key, const char *from,
                       const char *to, int64_t gen, const char *reason) {
    add_reserve(h, 1);
    baton_history_entry_t *e = &h->add[h->nadd];
    memset(e, 0, sizeof(*e));
    e->partition = key ? -1 : p;
    if (key)
        snprintf(e->key, sizeof(e->key), "%s", key);
    /* Not a worker id ("?": a corrupt claim's holder) is none: one bad
     * entry makes the whole ring undecodable, and its next flush would
     * start it again from empty. */
    if (from && strcmp(from, "-") != 0 && baton_id_valid(from) == 0)
        snprintf(e->from, sizeof(e->from), "%s", from);
    if (to && strcmp(to, "-") != 0 && baton_id_valid(to) == 0)
        snprintf(e->to, sizeof(e->to), "%s", to);
    e->epoch = -1; /* the new owner's claim, hence its epoch, comes later */
    e->generation = gen;
    e->time_ms = baton_wall_ms();
    if (e->to[0] && (strcmp(reason, "new") == 0 || strcmp(reason, "rebalance") == 0) &&
        !was_published(h, e->to))
        reason = "join";
    snprintf(e->reason, sizeof(e->reason), "%s",
             baton_history_reason_valid(reason) == 0 ? reason : "rebalance");
    h->nadd++;
}

void coord_history_merge(coord_history_t *into, coord_history_t *from) {
    if (from->nadd == 0)
        return; /* from->add may be NULL: memcpy must not see it */
    add_reserve(into, from->nadd);
    memcpy(into->add + into->nadd, from->add, sizeof(*from->add) * from->nadd);
    into->nadd += from->nadd;
    from->nadd = 0;
}

int coord_history_flush(coord_history_t *h, baton_zk_t *zk, const char *base,
                        const char *fence_node) {
    if (h->nadd == 0)
        return BATON_OK;
    char *path = baton_layout_history(base);
    int err = BATON_CONFLICT;
    for (int attempt = 0; attempt < 3 && err == BATON_CONFLICT; attempt++) {
        char *data = NULL, errstr[256];
        size_t len = 0;
        struct Stat st;
        baton_history_t old = {0};
        int exists = 1;
        err = baton_zk_get(zk, path, 0, &data, &len, &st);
        if (err == BATON_NOTFOUND) {
            exists = 0;
        } else if (err != BATON_OK) {
            break;
        } else if (len > 0 && baton_history_decode(data, len, &old, errstr, sizeof(errstr)) != 0) {
            BLOG_ERROR("event=corrupt_znode path=%s error=\"%s\" action=rewrite", baton_log_v(path),
                       baton_log_q(errstr));
        }
        free(data);
        size_t n = old.n + h->nadd;
        baton_history_entry_t *all = xmalloc(sizeof(*all) * n);
        if (old.n)
            memcpy(all, old.entries, sizeof(*all) * old.n);
        memcpy(all + old.n, h->add, sizeof(*all) * h->nadd);
        baton_history_release(&old);
        char *body = baton_history_encode(all, n);
        free(all);
        zoo_op_t ops[2];
        zoo_op_result_t res[2];
        memset(res, 0, sizeof(res));
        zoo_check_op_init(&ops[0], fence_node, -1);
        if (exists)
            zoo_set_op_init(&ops[1], path, body, (int)strlen(body), st.version, NULL);
        else
            zoo_create_op_init(&ops[1], path, body, (int)strlen(body), baton_zk_acl(zk), 0, NULL,
                               0);
        int rc = baton_zk_multi(zk, 2, ops, res);
        free(body);
        if (rc == ZOK)
            err = BATON_OK;
        else if (res[0].err == ZNONODE)
            err = BATON_DEPOSED;
        else if (res[1].err == ZBADVERSION || res[1].err == ZNODEEXISTS)
            err = BATON_CONFLICT; /* someone else wrote it since we read: again */
        else
            err = baton_zk_err(rc);
    }
    if (err == BATON_OK)
        BLOG_DEBUG("event=history_appended entries=%zu", h->nadd);
    else
        BLOG_WARN("event=history_append_failed entries=%zu error=%s", h->nadd, baton_err_name(err));
    free(path);
    h->nadd = 0;
    return err;
}
