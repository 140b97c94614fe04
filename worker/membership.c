/* membership.c: the member library (include/baton/baton.h): its entry
 * points, registration (joining, rejoining after an expiry) and the poll
 * that drives the rest. Single-threaded: ZooKeeper's completion thread only
 * queues events through baton_zk; everything here runs on the owner's
 * thread. The jobs live beside it (member_int.h):
 *
 *   member_resources.c  the resource table, each resource's state and its one setter
 *   member_probe.c      the liveness probe and self-suspension
 *   member_assign.c     reading our assignment, telling on_assigned
 *   member_claims.c     creating claims, checking queues, acquiring, releasing
 *   member_standby.c    standing by for another member's resources
 *   member_leave.c      the graceful leave
 */
#include "member_int.h"

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_log.h"
#include "baton_metrics.h"
#include "baton_util.h"
#include "baton_member_int.h"
#include "baton_zk_auth.h"
#include "baton_zkbatch.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void session_hex(baton_membership_t *m) {
    m->session = baton_zk_session_id(m->zk);
    snprintf(m->session_hex, sizeof(m->session_hex), "%016llx", (unsigned long long)m->session);
}

const char *baton_release_reason_name(baton_release_reason_t r) {
    switch (r) {
    case BATON_RELEASE_REVOKED: return "revoked";
    case BATON_RELEASE_LOST: return "lost";
    case BATON_RELEASE_LEAVE: return "leave";
    }
    return "unknown";
}

/* Our member node's body; leaving marks a graceful leave. */
char *mb_member_body(const baton_membership_t *m, int leaving) {
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    baton_member_t me = {.pid = getpid(), .capacity = m->conf.capacity, .leaving = leaving};
    snprintf(me.id, sizeof(me.id), "%s", m->conf.id);
    snprintf(me.host, sizeof(me.host), "%s", host);
    snprintf(me.rack, sizeof(me.rack), "%s", m->conf.rack ? m->conf.rack : "");
    me.no_partitions = m->conf.no_partitions;
    if (m->inc.fd >= 0)
        snprintf(me.incarnation, sizeof(me.incarnation), "%s", m->inc.current);
    snprintf(me.notice, sizeof(me.notice), "%s", m->notice.addr);
    if (m->conf.keys) {
        me.keys_filter = 1;
        size_t used = 0;
        for (size_t i = 0; i < m->conf.nkeys; i++)
            used += (size_t)snprintf(me.keys + used, sizeof(me.keys) - used, "%s%s", i ? "," : "",
                                     m->conf.keys[i]);
    }
    return baton_member_encode(&me);
}

/* The member lock (baton_incarnation.h): taken before we join, held until
 * destroy. Another process of this host holding it is refused at once; a
 * lock file that is not one is refused; a default state directory that
 * cannot be used costs only the takeover (a warning), one given is an
 * error. */
int baton_membership__lock(baton_incarnation_t *inc, const char *state_dir, const char *group,
                           const char *id, char *errstr, size_t n) {
    char why[768];
    int err = baton_incarnation_open(inc, state_dir, group, id, why, sizeof(why));
    if (err == BATON_OK) {
        BLOG_DEBUG("event=member_lock path=%s incarnation=%s previous=%s", baton_log_v(inc->path),
                   baton_log_v(inc->current), baton_log_v(inc->previous[0] ? inc->previous : "-"));
        return BATON_OK;
    }
    if (err == BATON_IO && !inc->dir_chosen) {
        BLOG_WARN("event=member_lock_unavailable error=\"%s\" msg=\"no takeover of a dead "
                  "incarnation: a restart waits for its old session to expire (set --state-dir)\"",
                  baton_log_q(why));
        return BATON_OK;
    }
    return baton_seterr(errstr, n, err, "%s", why);
}

/* Our own dead incarnation holds workers/<id> (st: its stat): we hold the
 * lock it held, and its node carries the incarnation our lock file names.
 * Delete its claims (found by its session in their names, in every claims
 * directory of the group) and swap its member node for ours (body), so we
 * are joined and claim at once with new, higher epochs. The sink's fence
 * still refuses whatever it had in flight. Returns BATON_OK (our node is
 * created) or an error (then we wait for the session's expiry as without a
 * lock). */
static int takeover(baton_membership_t *m, const struct Stat *st, const char *body) {
    int64_t old = st->ephemeralOwner;
    baton_res_table_t t;
    baton_res_table_init(&t, m->base, m->config.partitions);
    baton_session_claim_t *claims = NULL;
    size_t nclaims = 0;
    char why[512] = "";
    int err = baton_group_session_claims(m->zk, &t, old, &claims, &nclaims, why, sizeof(why));
    /* The claims one by one (one already gone, its session having just
     * expired after all, is fine); then, in one multi, the old member node
     * (only if it is still that one) swapped for ours: the group never sees
     * the id gone, so the assignment stays ours and only the epochs change. */
    for (size_t i = 0; i < nclaims && err == BATON_OK; i++) {
        int e = baton_zk_delete(m->zk, claims[i].path, -1);
        if (e != BATON_OK && e != BATON_NOTFOUND)
            err = e;
    }
    if (err == BATON_OK) {
        zoo_op_t ops[2];
        zoo_op_result_t res[2];
        zoo_delete_op_init(&ops[0], m->member_path, st->version);
        zoo_create_op_init(&ops[1], m->member_path, body, (int)strlen(body), baton_zk_acl(m->zk),
                           ZOO_EPHEMERAL, NULL, 0);
        int rc = baton_zk_multi(m->zk, 2, ops, res);
        err = rc == ZOK                            ? BATON_OK
              : rc == ZNONODE || rc == ZBADVERSION ? BATON_NOTFOUND
                                                   : BATON_CONNECTION;
    }
    if (err == BATON_OK)
        BLOG_INFO("event=incarnation_takeover old_session=0x%llx claims=%zu incarnation=%s",
                  (unsigned long long)old, nclaims, baton_log_v(m->inc.previous));
    else if (why[0])
        BLOG_WARN("event=incarnation_takeover_failed old_session=0x%llx error=%s msg=\"%s\" "
                  "action=wait_for_expiry",
                  (unsigned long long)old, baton_err_name(err), baton_log_q(why));
    else
        BLOG_WARN("event=incarnation_takeover_failed old_session=0x%llx error=%s "
                  "action=wait_for_expiry",
                  (unsigned long long)old, baton_err_name(err));
    baton_session_claims_free(claims, nclaims);
    baton_res_table_free(&t);
    return err;
}

/* Whether the live node under our id (data, st) is our own dead
 * incarnation: we hold the lock, and it carries the incarnation our lock
 * file recorded (or ours, after our session expired). */
static int own_dead_incarnation(const baton_membership_t *m, const char *data, size_t len) {
    if (m->inc.fd < 0 || !data)
        return 0;
    baton_member_t node;
    char why[256];
    if (baton_member_decode(data, len, &node, why, sizeof(why)) != BATON_OK || !node.incarnation[0])
        return 0;
    return baton_incarnation_known(&m->inc, node.incarnation);
}

/* Registers workers/<id> (ephemeral), carrying our incarnation (recorded
 * in the lock file first). A node of another session with our id is our
 * own dead incarnation (own_dead_incarnation: taken over at once), or a
 * previous incarnation whose session has not expired yet, or a true
 * duplicate elsewhere: wait up to member_wait_ms (default three session
 * timeouts, enough to outlast an ensemble's election) for it to go before
 * calling the id taken. */
static int register_member(baton_membership_t *m, char *errstr, size_t n) {
    if (m->inc.fd >= 0) {
        int e = baton_incarnation_commit(&m->inc, errstr, n);
        if (e != BATON_OK)
            return e;
    }
    BATON_FAILPOINT("member.before_register");
    char *data = mb_member_body(m, 0);
    int64_t wait_ms =
        m->member_wait_ms > 0 ? m->member_wait_ms : 3 * (int64_t)baton_zk_session_timeout(m->zk);
    int64_t start = baton_now_ms(), deadline = start + wait_ms, next_note = 0;
    int tried_takeover = 0;
    int err;
    for (;;) {
        int64_t sent = baton_now_ms();
        err = baton_zk_create(m->zk, m->member_path, data, strlen(data), ZOO_EPHEMERAL, NULL, 0,
                              NULL);
        if (err != BATON_CONNECTION && err != BATON_EXPIRED)
            mb_probe_heard(m, sent); /* the server answered: waiting here is not silence */
        if (err == BATON_CONNECTION) {
            baton_sleep_ms(RETRY_MS);
            continue; /* the create may have landed: the EXISTS path below adopts it */
        }
        if (err != BATON_EXISTS)
            break;
        struct Stat st;
        char *cur = NULL;
        size_t len = 0;
        int e2 = baton_zk_get(m->zk, m->member_path, 0, &cur, &len, &st);
        if (e2 == BATON_OK && st.ephemeralOwner == baton_zk_session_id(m->zk)) {
            free(cur);
            err = BATON_OK; /* our own create whose reply was lost */
            break;
        }
        if (e2 != BATON_OK && e2 != BATON_NOTFOUND) {
            free(cur);
            err = e2;
            break;
        }
        if (e2 == BATON_OK && !tried_takeover && own_dead_incarnation(m, cur, len)) {
            tried_takeover = 1;
            free(cur);
            if (takeover(m, &st, data) == BATON_OK) {
                err = BATON_OK; /* ours is created */
                break;
            }
            continue; /* look again: gone, or changed */
        }
        baton_member_t other = {0};
        char why[256];
        if (cur)
            baton_member_decode(cur, len, &other, why, sizeof(why));
        free(cur);
        int64_t now = baton_now_ms();
        if (now > deadline) {
            err = baton_seterr(errstr, n, BATON_EXISTS,
                               "worker id '%s' is held by a live member (session 0x%llx, pid %lld "
                               "on %s) that is not this host's dead incarnation of it; waited %lld "
                               "ms; choose another --id",
                               m->conf.id, (unsigned long long)st.ephemeralOwner,
                               (long long)other.pid, other.host[0] ? other.host : "?",
                               (long long)(now - start));
            free(data);
            return err;
        }
        /* A line when the wait starts and at each doubling of it. */
        if (now - start >= next_note) {
            BLOG_WARN("event=member_id_busy id=%s session=0x%llx pid=%lld host=%s waited_ms=%lld "
                      "wait_ms=%lld action=wait_for_expiry",
                      baton_log_v(m->conf.id), (unsigned long long)st.ephemeralOwner,
                      (long long)other.pid, baton_log_v(other.host[0] ? other.host : "?"),
                      (long long)(now - start), (long long)wait_ms);
            next_note = next_note ? next_note * 2 : 500;
        }
        baton_sleep_ms(RETRY_MS);
    }
    free(data);
    if (err != BATON_OK)
        return baton_seterr(errstr, n, err, "cannot register '%s': %s", m->member_path,
                            baton_strerror(err));
    BLOG_INFO("event=joined member=%s session=0x%s standby_claim=%s", baton_log_v(m->member_path),
              m->session_hex, m->claim_ahead ? "ahead" : "takeover");
    char why[256];
    if (m->inc.fd >= 0 && baton_incarnation_confirm(&m->inc, why, sizeof(why)) != BATON_OK)
        BLOG_WARN("event=member_lock_write_failed error=\"%s\"",
                  baton_log_q(why)); /* the list stays: safe */
    return BATON_OK;
}

static int connect_and_join(baton_membership_t *m, char *errstr, size_t n) {
    int64_t t0 = baton_now_ms(); /* the session cannot have been renewed before this */
    int err = baton_zk_connect(m->conf.zk_hosts, m->conf.session_timeout_ms,
                               m->conf.connect_timeout_ms, m->auth, &m->zk, errstr, n);
    if (err != BATON_OK)
        return err;
    baton_zk_set_wait_hook(m->zk, m->hook, m->hook_arg);
    mb_probe_reset(m, t0);
    session_hex(m);
    BLOG_INFO("event=zk_connected session=0x%s timeout_ms=%d", m->session_hex,
              baton_zk_session_timeout(m->zk));
    baton_config_t cfg;
    if ((err = baton_group_config_read(m->zk, m->base, 1, &cfg, errstr, n)) != BATON_OK)
        return err;
    if (m->config.topic[0] && strcmp(cfg.topic, m->config.topic) != 0)
        return baton_seterr(errstr, n, BATON_CONFLICT, "group topic changed from '%s' to '%s'",
                            m->config.topic, cfg.topic);
    m->config = cfg;
    mb_grow_parts(m, cfg.partitions);
    if ((err = register_member(m, errstr, n)) != BATON_OK)
        return err;
    m->assignment_dirty = 1;
    m->all_dirty = 1;
    m->member_dirty = 1;
    return BATON_OK;
}

/* The first join. A session that expires while we join (the process
 * frozen there past its session timeout, or an ensemble election longer
 * than it) is no reason to exit: a new session and again, as a rejoin
 * would; bounded, each try having had a session. Refused credentials are
 * not retried. */
#define JOIN_EXPIRED_TRIES 5
static int join_first(baton_membership_t *m, char *errstr, size_t n) {
    for (int attempt = 1;; attempt++) {
        int err = connect_and_join(m, errstr, n);
        if (err != BATON_EXPIRED || attempt == JOIN_EXPIRED_TRIES || !m->zk ||
            zoo_state(baton_zk_handle(m->zk)) == ZOO_AUTH_FAILED_STATE)
            return err;
        BLOG_WARN("event=join_session_expired session=0x%s attempt=%d error=\"%s\" "
                  "action=new_session",
                  m->session_hex, attempt, baton_log_q(errstr));
        baton_zk_destroy(m->zk);
        m->zk = NULL;
    }
}

/* Checks what the application gave (it is input: a clear error, no crash). */
static int conf_check(baton_membership_conf_t *c, char *errstr, size_t n) {
    if (!c->zk_hosts || !c->zk_hosts[0])
        return baton_seterr(errstr, n, BATON_INVALID, "zk_hosts is required");
    if (!c->root)
        c->root = BATON_DEFAULT_ROOT;
    if (baton_root_valid(c->root) != 0)
        return baton_seterr(errstr, n, BATON_INVALID, "root '%s' is not a valid znode path",
                            c->root);
    if (!c->group || baton_id_valid(c->group) != 0)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "group '%s' is not a valid name (1-128 of [A-Za-z0-9._-])",
                            c->group ? c->group : "");
    if (!c->id || baton_id_valid(c->id) != 0)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "id '%s' is not a valid member id (1-128 of [A-Za-z0-9._-])",
                            c->id ? c->id : "");
    if (c->capacity == 0)
        c->capacity = 1;
    if (c->capacity < 0 || c->capacity > 1000000)
        return baton_seterr(errstr, n, BATON_INVALID, "capacity %d is not in 1..1000000",
                            c->capacity);
    if (c->session_timeout_ms <= 0)
        c->session_timeout_ms = 10000;
    if (c->connect_timeout_ms <= 0)
        c->connect_timeout_ms = 10000;
    if (c->rack && strlen(c->rack) >= 64)
        return baton_seterr(errstr, n, BATON_INVALID, "rack is longer than 63 bytes");
    size_t total = 0;
    for (size_t i = 0; c->keys && i < c->nkeys; i++) {
        if (!c->keys[i] || baton_key_valid(c->keys[i]) != 0)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "key '%s' is not a key name (1-128 of [A-Za-z0-9._-])",
                                c->keys[i] ? c->keys[i] : "");
        total += strlen(c->keys[i]) + 1;
    }
    if (total >= BATON_MEMBER_KEYS_MAX)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "the key filter is over %d bytes: take every key instead",
                            BATON_MEMBER_KEYS_MAX);
    return BATON_OK;
}

int baton_membership__new(const baton_membership_conf_t *conf, const baton_membership_cbs_t *cbs,
                          const baton_membership_ext_t *ext, baton_membership_t **out, char *errstr,
                          size_t n) {
    BATON_LOG_SCOPE(ext ? ext->log : NULL);
    baton_membership_conf_t c = *conf;
    int cerr = conf_check(&c, errstr, n);
    if (cerr != BATON_OK) {
        if (ext && ext->lock)
            baton_incarnation_close(ext->lock); /* adopted, and released */
        return cerr;
    }
    baton_membership_t *m = xcalloc(1, sizeof(*m));
    m->notice.fd = m->notice.epfd = m->notice.ep_zkfd = -1;
    m->notice.holds = ext ? ext->notice_holds : 0;
    m->conf = c;
    m->cbs = *cbs;
    m->base = baton_group_base(m->conf.root, m->conf.group); /* defaults applied */
    m->member_path = baton_layout_worker(m->base, m->conf.id);
    baton_res_table_init(&m->res, m->base, 0);
    m->hb = baton_silence_new();
    m->inc.fd = -1;
    m->auth = baton_zk_auth_dup(ext ? ext->zk_auth : NULL);
    m->log = baton_log_sink_dup(ext ? ext->log : NULL);
    baton_log_enter(m->log); /* restored on return */
    m->member_wait_ms = ext ? ext->member_wait_ms : 0;
    m->claim_ahead = ext ? ext->claim_ahead : 0;
    int err = BATON_OK;
    if (ext && ext->lock) {
        m->inc = *ext->lock; /* adopted: the caller's is left closed */
        ext->lock->fd = -1;
        ext->lock->path = NULL;
    } else {
        err = baton_membership__lock(&m->inc, ext ? ext->state_dir : NULL, m->conf.group,
                                     m->conf.id, errstr, n);
    }
    if (err == BATON_OK)
        err = mb_notice_open(m, ext ? ext->notice : NULL, errstr, n);
    if (err == BATON_OK)
        err = join_first(m, errstr, n);
    if (err != BATON_OK) {
        baton_membership_destroy(m);
        return err;
    }
    m->keep = ext ? *ext : (baton_membership_ext_t){0};
    m->keep.lock = NULL; /* adopted above */
    *out = m;
    return BATON_OK;
}

void baton_membership_destroy(baton_membership_t *m) {
    if (!m)
        return;
    BATON_LOG_SCOPE(m->log);
    baton_zk_destroy(m->zk);          /* joins the completion thread: no probe_done after this */
    mb_notice_close(m);               /* after: a completion may still send a SUB */
    baton_incarnation_close(&m->inc); /* our session is closed: the id is free */
    baton_zk_auth_destroy(m->auth);
    baton_silence_free(m->hb);
    free(m->added);
    mb_standby_clear(m);
    free(m->st);
    free(m->dirty_rows);
    free(m->busy_rows);
    free(m->later);
    baton_res_table_free(&m->res);
    free(m->member_path);
    free(m->base);
    free(m->log);
    if (m->keep.keep_free)
        m->keep.keep_free(m->keep.keep);
    free(m);
}

void baton_membership__set_wait_hook(baton_membership_t *m, baton_zk_wait_hook_fn fn, void *arg) {
    m->hook = fn;
    m->hook_arg = arg;
    if (m->zk)
        baton_zk_set_wait_hook(m->zk, fn, arg);
}

const char *baton_membership_topic(const baton_membership_t *m) { return m->config.topic; }
baton_zk_t *baton_membership__zk(const baton_membership_t *m) { return m->zk; }
int32_t baton_membership_partitions(const baton_membership_t *m) { return m->res.npartitions; }
int baton_membership_fd(const baton_membership_t *m) {
    /* -1 between sessions (poll ignores it), unless standby.notice's set
     * (the notice socket and the session's descriptor) is ours: the sync
     * of that set writes only it (mb_notice_fd). */
    return mb_notice_fd((baton_membership_t *)m);
}

int baton_membership_can_write(const baton_membership_t *m) {
    if (!m->zk || m->evicted || !baton_zk_connected(m->zk) || baton_zk_expired(m->zk))
        return 0;
    /* Computed now, not at the last poll: a thread that was paused must not
     * write on the strength of what it heard before the pause. */
    return baton_silence_heard_recently(m->hb);
}

int baton_membership_evicted(const baton_membership_t *m) { return m->evicted; }

/* The state of a public resource, or NULL if we never heard of it. */
static mpart_t *st_of(const baton_membership_t *m, const baton_resource_t *r, long *row) {
    *row = baton_res_table_find(&m->res, r);
    return *row >= 0 ? &m->st[*row] : NULL;
}

void baton_membership_drop(baton_membership_t *m, const baton_resource_t *r) {
    BATON_LOG_SCOPE(m->log);
    long row;
    if (st_of(m, r, &row))
        mb_drop_row(m, (size_t)row);
}

int baton_membership__holds(const baton_membership_t *m, const baton_resource_t *r, int64_t epoch) {
    long row;
    const mpart_t *mp = st_of(m, r, &row);
    return mp && mstate_owned(mp->state) && mp->czxid == epoch;
}

int baton_epoch_valid(const baton_membership_t *m, const baton_resource_t *r, int64_t epoch) {
    return baton_membership__holds(m, r, epoch) && baton_membership_can_write(m);
}

int baton_membership_assigned(const baton_membership_t *m, const baton_resource_t *r) {
    long row;
    const mpart_t *mp = st_of(m, r, &row);
    return mp ? mstate_assigned(mp->state) : 0;
}

int baton_membership_claim_path(const baton_membership_t *m, const baton_resource_t *r, char *buf,
                                size_t size) {
    long row;
    const mpart_t *mp = st_of(m, r, &row);
    if (!mp || !buf || size == 0)
        return BATON_INVALID;
    if (!mp->claim[0])
        return BATON_NOTFOUND;
    char *dir = baton_res_claims_of(m->base, baton_res_at(&m->res, (size_t)row));
    int w = snprintf(buf, size, "%s/%s", dir, mp->claim);
    free(dir);
    return w >= 0 && (size_t)w < size ? BATON_OK : BATON_INVALID;
}

/* Drops everything without flushing: our session is gone, so are our
 * claims, and a successor may already be writing. */
static void lose_all(baton_membership_t *m, const char *why) {
    static const mpart_t idle; /* MSTATE_IDLE is 0 */
    for (size_t row = 0; row < m->res.n; row++) {
        mpart_t *mp = &m->st[row];
        if (memcmp(mp, &idle, sizeof(*mp)) == 0)
            continue; /* nothing to drop; a row never used stays unwritten */
        if (mstate_owned(mp->state))
            mb_cb_released(m, row, BATON_RELEASE_LOST);
        mb_st_set(m, row, MSTATE_IDLE, why);
        memset(mp, 0, sizeof(*mp)); /* MSTATE_IDLE is 0 */
    }
    /* The lists, afresh: an on_released above may have dropped (marked) a
     * row the loop had cleared already. */
    m->ndirty = m->nbusy = 0;
    for (size_t row = 0; row < m->res.n; row++) {
        mpart_t *mp = &m->st[row];
        if (!mp->listed && !mp->inbusy)
            continue;
        mp->listed = mp->inbusy = 0;
        if (mp->dirty)
            mb_dirty_list(m, row);
        if (mp->state != MSTATE_IDLE)
            mb_busy_list(m, row);
    }
    /* A new session has none of our watches, and what we stood by for is
     * decided anew by the assignment we read then. */
    mb_standby_clear(m);
    mb_notice_session_reset(m);
    m->nlater = 0; /* held-back own watches: their claims went with the session */
}

/* Reacts to a watch on a path: mark what it concerns. */
static void note_event(baton_membership_t *m, const char *path, int type) {
    baton_path_t at;
    long row = -1;
    switch (baton_layout_classify(m->base, path, &at)) {
    case BATON_PATH_PARTITION:
        if (at.partition < m->res.npartitions)
            row = at.partition;
        break;
    case BATON_PATH_KEY: row = baton_res_table_find_key(&m->res, at.name, at.name_len); break;
    case BATON_PATH_ASSIGNMENT: m->assignment_dirty = 1; return;
    case BATON_PATH_WORKER:
        if (strcmp(path, m->member_path) == 0) {
            m->member_dirty = 1;
        } else if (at.name_len <= BATON_ID_MAX) { /* longer is no member id */
            char id[BATON_ID_MAX + 1];
            snprintf(id, sizeof(id), "%.*s", (int)at.name_len, at.name);
            mb_standby_note(m, id, type);
            mb_notice_member_event(m, id, type);
        }
        return;
    case BATON_PATH_CONFIG:
    case BATON_PATH_OTHER: break;
    }
    if (row >= 0)
        mb_claim_news(m, (size_t)row, path, type);
    else
        m->all_dirty = 1; /* the config, or nothing we know: look at everything */
}

static int reread_config(baton_membership_t *m) {
    char errstr[256];
    baton_config_t cfg;
    int err = baton_group_config_read(m->zk, m->base, 1, &cfg, errstr, sizeof(errstr));
    if (err == BATON_CORRUPT) {
        BLOG_ERROR("event=config_error error=\"%s\" action=keep_current", baton_log_q(errstr));
        return BATON_OK;
    }
    if (err != BATON_OK)
        return err;
    if (cfg.partitions > m->res.npartitions) {
        BLOG_INFO("event=partitions_grown from=%d to=%d", m->res.npartitions, cfg.partitions);
        mb_grow_parts(m, cfg.partitions);
        m->config.partitions = cfg.partitions;
    }
    return BATON_OK;
}

/* Looks at our own member node and re-arms the watch on it. Gone, or
 * recreated by another session (a new process with our id), while our
 * session lives means an operator evicted us (`batonctl evict`): our claims
 * were deleted with it and the coordinator is moving our partitions to
 * others, whose higher epochs fence anything we still write. Returns
 * BATON_OK, BATON_EVICTED (evicted) or a ZooKeeper error (retry). */
static int check_member(baton_membership_t *m) {
    struct Stat st;
    int err = baton_zk_exists(m->zk, m->member_path, 1, &st);
    if (err == BATON_OK && st.ephemeralOwner == baton_zk_session_id(m->zk))
        return BATON_OK;
    if (err != BATON_OK && err != BATON_NOTFOUND)
        return err;
    return BATON_EVICTED;
}

static int cmp_row(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* How soon the owner should poll again: a dirty resource's retry time, a
 * pending re-read, or the liveness probe. */
static int soon_of(baton_membership_t *m, int err, int probe_ms) {
    int soon = 1000;
    int64_t t = baton_now_ms();
    size_t k = 0; /* the rows still dirty stay listed */
    for (size_t i = 0; i < m->ndirty; i++) {
        size_t row = m->dirty_rows[i];
        mpart_t *mp = &m->st[row];
        if (!mp->dirty) {
            mp->listed = 0;
            continue;
        }
        int64_t d = mp->retry_at - t;
        soon = d < soon ? (d < 0 ? 0 : (int)d) : soon;
        m->dirty_rows[k++] = row;
    }
    m->ndirty = k;
    if (m->assignment_dirty || m->all_dirty || m->member_dirty || err != BATON_OK)
        soon = soon < RETRY_MS ? soon : RETRY_MS;
    if (m->nlater) { /* held-back own watches; past due, this poll could not send them */
        int64_t d = m->later_at > t ? m->later_at - t : RETRY_MS;
        soon = d < soon ? (int)d : soon;
    }
    return soon < probe_ms ? soon : probe_ms;
}

/* Between sessions (ours expired): one attempt to connect and register
 * again per call, at most every REJOIN_MS, so the caller's own loop keeps
 * running (a SIGTERM is seen while ZooKeeper is down). */
#define REJOIN_MS 1000
static int rejoin(baton_membership_t *m, int *next_ms, char *errstr, size_t n) {
    int64_t now = baton_now_ms();
    if (now >= m->rejoin_at) {
        int err = connect_and_join(m, errstr, n);
        if (err == BATON_OK) {
            m->next_ms = 0;
            if (next_ms)
                *next_ms = 0;
            return BATON_OK;
        }
        /* Refused credentials (the root's ACL no longer lets our identity
         * write, or the server failed our authentication) do not get better
         * by retrying: fatal, like at start. */
        if (err == BATON_EXISTS || err == BATON_DENIED || baton_err_is_input(err))
            return err;
        BLOG_WARN("event=rejoin_failed error=\"%s\" action=retry in_ms=%d", baton_log_q(errstr),
                  REJOIN_MS);
        baton_zk_destroy(m->zk);
        m->zk = NULL;
        m->rejoin_at = now + REJOIN_MS;
    }
    int64_t left = m->rejoin_at - baton_now_ms();
    m->next_ms = left < 0 ? 0 : (int)left;
    if (next_ms)
        *next_ms = m->next_ms;
    return BATON_OK;
}

/* How long a poll waits for the rest of a multi's deletions, per wait, and
 * how many waits at most (baton_membership_poll). */
#define COALESCE_US 300
#define COALESCE_MAX 4

/* Takes every queued event: session changes into *expired and
 * *reconnected, the rest noted. Returns how many were deletions. */
static int drain_events(baton_membership_t *m, int *expired, int *reconnected) {
    int deleted = 0;
    baton_zk_event_t ev;
    while (baton_zk_next_event(m->zk, &ev)) {
        if (ev.type == ZOO_SESSION_EVENT) {
            if (ev.state == ZOO_EXPIRED_SESSION_STATE || ev.state == ZOO_AUTH_FAILED_STATE)
                *expired = 1;
            else if (ev.state == ZOO_CONNECTED_STATE) {
                if (m->disconnected) {
                    *reconnected = 1;
                    baton_metric_inc(baton_metric_counter(BATON_M_ZK_RECONNECTS));
                }
                m->disconnected = 0;
            } else if (ev.state == ZOO_CONNECTING_STATE && !m->disconnected) {
                m->disconnected = 1;
                BLOG_WARN("event=zk_disconnected action=suspend_writes");
            }
        } else if (ev.type != PROBE_EVENT) {
            deleted += ev.type == ZOO_DELETED_EVENT;
            note_event(m, ev.path, ev.type);
        }
        baton_zk_event_release(&ev);
    }
    return deleted;
}

int baton_membership_poll(baton_membership_t *m, int *next_ms, char *errstr, size_t n) {
    BATON_LOG_SCOPE(m->log);
    if (m->evicted)
        return baton_seterr(errstr, n, BATON_EVICTED, "evicted: '%s' was deleted", m->member_path);
    mb_notice_drain(m); /* a release notice: before the claims settle below */
    if (!m->zk)
        return rejoin(m, next_ms, errstr, n);
    int expired = 0, reconnected = 0;
    /* A leaver deletes its claims in one multi, but each of our watches on
     * them fires on its own, handed over by the client's thread one after
     * another: a poll that took the first alone acquired, fenced and wrote
     * that resource, and only then the next (5-6 ms apart in a traced hot
     * handoff, docs/benchmarks.md, session 29). So while a deletion has
     * just freed one of our claims and another of ours still waits behind
     * a known claim (a claim made ahead counts: its promotion on the leave
     * mark may come later in this poll), wait a moment for more events (any arrival
     * starts the next wait, at most COALESCE_MAX of them): resources freed
     * together are acquired and fenced together, in one transaction. No
     * wait once nothing waits, nor for deletions that free nothing of ours
     * (a member's poll runs on its caller's thread: baton.h). */
    if (drain_events(m, &expired, &reconnected)) {
        for (int i = 0; !expired && i < COALESCE_MAX && mb_claims_more_coming(m); i++) {
            struct pollfd pfd = {.fd = baton_zk_fd(m->zk), .events = POLLIN};
            struct timespec ts = {0, COALESCE_US * 1000L};
            if (ppoll(&pfd, 1, &ts, NULL) <= 0)
                break;
            drain_events(m, &expired, &reconnected);
        }
    }
    if ((expired || baton_zk_expired(m->zk)) &&
        zoo_state(baton_zk_handle(m->zk)) == ZOO_AUTH_FAILED_STATE) {
        /* The server failed our authentication mid-session: a new session
         * would present the same credentials. Fatal, not a rejoin loop. */
        lose_all(m, "auth_failed");
        return baton_seterr(errstr, n, BATON_DENIED,
                            "ZooKeeper authentication failed for session 0x%s (check --zk-auth); "
                            "every partition dropped",
                            m->session_hex);
    }
    if (expired || baton_zk_expired(m->zk)) {
        BLOG_WARN("event=session_expired session=0x%s action=drop_all_and_rejoin", m->session_hex);
        baton_metric_inc(baton_metric_counter(BATON_M_ZK_EXPIRATIONS));
        lose_all(m, "session_expired");
        m->disconnected = 0;
        baton_zk_destroy(m->zk);
        m->zk = NULL;
        m->rejoin_at = 0;
        return rejoin(m, next_ms, errstr, n);
    }
    if (reconnected) {
        /* Writes resume once a probe on this connection is answered. */
        baton_silence_reconnected(m->hb);
        BLOG_INFO("event=zk_reconnected session=0x%s action=resume_writes", m->session_hex);
        m->all_dirty = 1; /* re-read instead of trusting missed events */
        m->member_dirty = 1;
    }
    int err = BATON_OK;
    int probe_ms = mb_probe_tick(m);
    baton_metric_set(baton_metric_gauge(BATON_M_ZK_CONNECTED), baton_zk_connected(m->zk) ? 1 : 0);
    if (!baton_zk_connected(m->zk))
        goto done;
    /* Before any claim work: an evicted member must not claim again. */
    if (m->member_dirty) {
        m->member_dirty = 0;
        err = check_member(m);
        if (err == BATON_EVICTED) {
            BLOG_ERROR("event=evicted member=%s session=0x%s action=drop_all_and_exit",
                       baton_log_v(m->member_path), m->session_hex);
            m->evicted = 1;
            lose_all(m, "evicted");
            return baton_seterr(errstr, n, BATON_EVICTED,
                                "evicted: our member node '%s' was deleted while our session "
                                "0x%s lived (batonctl evict); every partition dropped",
                                m->member_path, m->session_hex);
        }
        if (err != BATON_OK) {
            m->member_dirty = 1;
            goto done;
        }
    }
    if (m->all_dirty) {
        if ((err = reread_config(m)) != BATON_OK)
            goto done;
        m->all_dirty = 0;
        m->assignment_dirty = 1;
        for (size_t i = 0; i < m->nstandby; i++) {
            mstandby_t *e = &m->standby[i];
            e->armed = 0; /* watches may have been lost: set them again */
            /* ... and the look at the owner after a promotion, which a
             * connection loss may have cut short */
            for (size_t j = 0; j < e->n && !e->verify; j++)
                e->verify = m->st[e->rows[j]].promoted;
        }
        /* An idle row has nothing to look at. */
        mb_busy_compact(m);
        for (size_t i = 0; i < m->nbusy; i++) {
            mpart_t *mp = &m->st[m->busy_rows[i]];
            mp->pred_for = 0; /* events may have been missed: read the queue */
            mb_mark_dirty(m, mp);
        }
    }
    mb_claims_settle_known(m); /* before the assignment's read: no wait on the handoff's path */
    if (m->assignment_dirty) {
        m->assignment_dirty = 0;
        if ((err = mb_read_assignment(m)) != BATON_OK) {
            m->assignment_dirty = 1;
            goto done;
        }
    }
    /* Only on a current assignment: one the coordinator published before
     * an owner's departure reaches us first (ZooKeeper delivers events in
     * order), so a move it already made elsewhere is never undone here. */
    mb_standby_promote(m);
    int64_t now = baton_now_ms();
    /* Releases first, so partitions we give up reach their new owners before
     * we spend time claiming new ones. */
    {
        /* Every application first (on_released: each flushes), then every
         * claim let go of in one round trip (mb_claims_delete). */
        size_t *gone = NULL, ngone = 0, cap = 0;
        int expired = 0;
        for (size_t i = 0; i < m->ndirty && !expired; i++) {
            size_t row = m->dirty_rows[i];
            mpart_t *mp = &m->st[row];
            if (!mp->dirty || mp->retry_at > now || mstate_assigned(mp->state) ||
                mb_want_ahead(m, mp, now))
                continue;
            mp->dirty = 0;
            int e = mb_claim_let_go(m, row);
            if (e != BATON_OK) {
                mb_mark_dirty(m, mp);
                mp->retry_at = now + RETRY_MS;
                expired = e == BATON_EXPIRED;
            } else if (mp->claim[0]) {
                if (ngone == cap)
                    gone = xrealloc(gone, sizeof(size_t) * (cap = cap ? 2 * cap : 16));
                gone[ngone++] = row;
            }
        }
        if (ngone > 0 && !expired) {
            BATON_FAILPOINT("worker.before_release");
            mb_claims_delete(m, gone, ngone, "released");
            for (size_t i = 0; i < ngone; i++)
                mb_ahead_after_release(m, gone[i]);
        }
        for (size_t i = 0; expired && i < ngone; i++) {
            /* Not deleted: look again (an expiry drops them all anyway;
             * an error mapped like one, say a moved session, must not
             * leave them behind). */
            mb_mark_dirty(m, &m->st[gone[i]]);
            m->st[gone[i]].retry_at = now + RETRY_MS;
        }
        free(gone);
        if (expired) {
            err = BATON_OK; /* picked up by the next poll's expiry path */
            goto done;
        }
    }
    /* Then claims, in batches of CLAIM_MULTI_MAX (mb_claims_reconcile). */
    {
        size_t *batch = xmalloc(sizeof(size_t) * CLAIM_MULTI_MAX);
        int32_t nb = 0;
        /* In row order (mb_claims_reconcile takes the assigned rows of a
         * batch before those claimed ahead, each in this order). */
        if (m->ndirty > 1)
            qsort(m->dirty_rows, m->ndirty, sizeof(size_t), cmp_row);
        size_t total = m->ndirty; /* rows listed during the claims wait for the next poll */
        for (size_t i = 0; i <= total; i++) {
            if (i < total) {
                size_t row = m->dirty_rows[i];
                mpart_t *mp = &m->st[row];
                if (!mp->dirty || mp->retry_at > now ||
                    (!mstate_assigned(mp->state) && !mb_want_ahead(m, mp, now)))
                    continue;
                mp->dirty = 0;
                batch[nb++] = row;
            }
            if (nb > 0 && (nb == CLAIM_MULTI_MAX || i == total)) {
                int e = mb_claims_reconcile(m, batch, nb);
                nb = 0;
                if (e == BATON_EXPIRED) {
                    free(batch);
                    err = BATON_OK; /* picked up by the next poll's expiry path */
                    goto done;
                }
            }
        }
        free(batch);
    }
    mb_standby_arm(m);
    mb_own_watches_send(m);
done:
    mb_assigned_flush(m); /* if no claim was sent this time */
    m->next_ms = soon_of(m, err, probe_ms);
    if (next_ms)
        *next_ms = m->next_ms;
    if (err != BATON_OK && !baton_err_is_fatal(err) && !baton_err_is_input(err))
        err = BATON_OK; /* retriable: try again on the next poll */
    if (err == BATON_EXPIRED)
        err = BATON_OK;
    return err;
}

void baton_membership_leave(baton_membership_t *m) {
    BATON_LOG_SCOPE(m->log);
    if (!m->zk)
        return;
    mb_leave(m);
}

int baton_membership_wait(baton_membership_t *m, int timeout_ms, char *errstr, size_t n) {
    int wait = m->next_ms;
    if (timeout_ms >= 0 && timeout_ms < wait)
        wait = timeout_ms;
    if (!m->evicted) {
        /* Without a session (rejoining) there is no descriptor: just wait. */
        struct pollfd pfd = {.fd = baton_membership_fd(m), .events = POLLIN};
        poll(&pfd, 1, wait < 0 ? 0 : wait);
    }
    return baton_membership_poll(m, NULL, errstr, n);
}
