/* member_standby.c: standing by for another member's resources: watching
 * its member node, taking its resources the moment it leaves or goes, and
 * giving them back if it turns out live. */
#include "member_int.h"

#include "baton_failpoint.h"
#include "baton_layout.h"
#include "baton_log.h"
#include "baton_metrics.h"
#include "baton_util.h"

#include <stdlib.h>
#include <string.h>

/* A completion's context: the client and the path it was about. */
static own_watch_t *own_watch_new(baton_membership_t *m, const char *path) {
    size_t len = strlen(path) + 1;
    own_watch_t *ow = xmalloc(sizeof(*ow) + len);
    ow->zk = m->zk;
    memcpy(ow->path, path, len);
    return ow;
}

/* Sets an exists-watch on path without waiting for the answer, which goes
 * to done (on ZooKeeper's completion thread; it frees the own_watch_t).
 * Returns ZOK, or the client's error when nothing was sent. */
int mb_watch_send(baton_membership_t *m, const char *path, stat_completion_t done) {
    own_watch_t *ow = own_watch_new(m, path);
    int rc = zoo_awexists(baton_zk_handle(m->zk), path, baton_zk_watcher, m->zk, done, ow);
    if (rc != ZOK)
        free(ow);
    return rc;
}

/* ---- standby -------------------------------------------------------------
 * The coordinator names, for each resource, the worker it would move it to
 * if its owner left (coordinator/coord_standby.h). That standby watches the
 * owner's member node, and when the node is marked leaving or deleted it
 * takes the resources at once, as if assigned: it claims them (queued
 * behind the owner's claims until those go) and fetches ahead, while the
 * coordinator is still reacting to the same news. Its later publish names
 * the same worker, so nothing moves twice; if it names another, we are
 * revoked as usual. Claims and the sink's fence stay the only gates. */

void mb_standby_clear(baton_membership_t *m) {
    for (size_t i = 0; i < m->nstandby; i++) {
        free(m->standby[i].owner);
        free(m->standby[i].rows);
    }
    free(m->standby);
    m->standby = NULL;
    m->nstandby = 0;
    m->standby_version++;
}

uint64_t baton_membership__standby_version(const baton_membership_t *m) {
    return m->standby_version;
}

void baton_membership__standby_partitions(const baton_membership_t *m, unsigned char *flags,
                                          int32_t n) {
    memset(flags, 0, (size_t)(n > 0 ? n : 0));
    for (size_t i = 0; i < m->nstandby; i++)
        for (size_t j = 0; j < m->standby[i].n; j++) {
            size_t row = m->standby[i].rows[j];
            if (row < (size_t)m->res.npartitions && row < (size_t)n)
                flags[row] = 1;
        }
}

static int standby_cmp(const void *a, const void *b) {
    return strcmp(((const mstandby_t *)a)->owner, ((const mstandby_t *)b)->owner);
}

/* Our entry for owner, or NULL. The list is sorted by owner (it keeps the
 * decoded assignment's order, baton_codec.c sorts it): a member can stand
 * by for every other member (999 at 1,000 workers, docs/benchmarks.md), and
 * a scan per owner made each assignment read a million comparisons. */
static mstandby_t *standby_find(baton_membership_t *m, const char *owner) {
    mstandby_t key = {.owner = (char *)owner};
    return m->nstandby ? bsearch(&key, m->standby, m->nstandby, sizeof(key), standby_cmp) : NULL;
}

/* ---- claims ahead of time (standby.claim=ahead) ---------------------------
 * With claim_ahead, a standby keeps a claim of each resource it stands by
 * for, queued behind the owner's claim, all along. When the owner leaves
 * (its mark, then its claims' delete) or dies (its session's ephemerals
 * go), the promotion finds our claim in the queue already and the
 * predecessor's deletion makes it lowest: no create, no round trip, on the
 * handoff's path. A claim made ahead of time never owns without the
 * assignment or a promotion: lowest while not assigned (the owner let go
 * without leaving, a move, a drop; or has not claimed yet), it yields
 * (ahead_yield, via mb_ahead_lowest) so whoever is next does not wait behind it. The claim's
 * epoch is its czxid, as for any claim: queued behind the owner's, it is
 * past the owner's epoch, and the queue's order is the epochs' order.
 * model/baton.pml checks this with -DAHEAD. */

/* Back-off of a yield: AHEAD_RETRY_MS, doubled per yield, at most
 * AHEAD_TRIES_MAX tries between assignment reads (two standbys named by
 * nodes of different generations would yield to each other until the
 * coordinator's next publish). */
#define AHEAD_RETRY_MS 200
#define AHEAD_TRIES_MAX 4

/* Our claim of row, made ahead of time, is lowest while row is not
 * assigned to us: deletes it, and makes none again before the back-off
 * (or, past AHEAD_TRIES_MAX, the next assignment read). */
static void ahead_yield(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    int64_t now = baton_now_ms();
    mp->ahead_tries++;
    int64_t wait = mp->ahead_tries > AHEAD_TRIES_MAX
                       ? INT64_MAX / 2
                       : (int64_t)AHEAD_RETRY_MS << (mp->ahead_tries - 1);
    mp->ahead_at = now + wait;
    BLOG_INFO("event=standby_claim_yield %s claim=%s tries=%d retry_ms=%lld", mb_row_label(m, row),
              baton_log_v(mp->claim), mp->ahead_tries,
              (long long)(mp->ahead_tries > AHEAD_TRIES_MAX ? -1 : wait));
    baton_metric_inc(baton_metric_counter(BATON_M_W_STANDBY_CLAIM_YIELDS));
    mb_delete_claim(m, row, "ahead_yield"); /* a failure is retried: released */
    mb_mark_dirty(m, mp);
    if (mp->ahead_tries <= AHEAD_TRIES_MAX && mp->retry_at < mp->ahead_at)
        mp->retry_at = mp->ahead_at;
}

/* Row was let go of (its claim deleted) while we stand by for it: the
 * assignment moved it from us to an owner we are now the standby of. Its
 * claim ahead of time is made after AHEAD_RETRY_MS, behind the new
 * owner's claim (made now, one would be lowest and yield). */
void mb_ahead_after_release(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    if (!m->claim_ahead || !mp->ahead || mp->claim[0] || mstate_assigned(mp->state) ||
        mp->ahead_tries > AHEAD_TRIES_MAX)
        return;
    mp->ahead_at = baton_now_ms() + AHEAD_RETRY_MS;
    mb_mark_dirty(m, mp);
    if (mp->retry_at < mp->ahead_at)
        mp->retry_at = mp->ahead_at;
}

/* The standby list becomes next[0..n-1]: every row's ahead flag follows it;
 * a row whose flag changed, or one without a claim that should have one,
 * is looked at again (not assigned: the claims loop makes or keeps its
 * claim, the release loop deletes one no longer wanted), and a yield's
 * back-off starts over. */
static void ahead_update(baton_membership_t *m, const mstandby_t *next, size_t n) {
    if (!m->claim_ahead)
        return;
    for (size_t i = 0; i < m->nstandby; i++)
        for (size_t j = 0; j < m->standby[i].n; j++)
            m->st[m->standby[i].rows[j]].ahead = -1; /* was */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < next[i].n; j++) {
            mpart_t *mp = &m->st[next[i].rows[j]];
            mp->ahead = mp->ahead == -1 ? 1 : 2; /* kept : new */
        }
    for (int pass = 0; pass < 2; pass++) {
        const mstandby_t *list = pass ? next : m->standby;
        size_t nl = pass ? n : m->nstandby;
        for (size_t i = 0; i < nl; i++)
            for (size_t j = 0; j < list[i].n; j++) {
                mpart_t *mp = &m->st[list[i].rows[j]];
                int changed = mp->ahead != 1;
                if (mp->ahead == 2 || mp->ahead == -1)
                    mp->ahead = mp->ahead == 2;
                if (mstate_assigned(mp->state))
                    continue;
                if (changed || mp->ahead_tries || (mp->ahead && !mp->claim[0])) {
                    /* Not at once: the owner claims on this same news,
                     * and a claim of ours made first would be lowest and
                     * yield (a cold start's first claims). */
                    int64_t at = baton_now_ms() + AHEAD_RETRY_MS;
                    if (!mp->claim[0] && (mp->retry_at == mp->ahead_at || mp->retry_at < at))
                        mp->retry_at = at;
                    mp->ahead_tries = 0;
                    mp->ahead_at = at;
                    mb_mark_dirty(m, mp);
                }
            }
    }
}

/* Replaces our standby list with the assignment's, keeping what we know of
 * owners still in it (their watch, news not yet acted on). */
void mb_standby_update(baton_membership_t *m, const baton_worker_assignment_t *wa) {
    mstandby_t *next = xcalloc(wa->nstandby + 1, sizeof(*next));
    size_t n = 0;
    for (size_t i = 0; i < wa->nstandby; i++) {
        const baton_standby_t *s = &wa->standby[i];
        if (strcmp(s->owner, m->conf.id) == 0)
            continue;
        mstandby_t *e = &next[n];
        *e = (mstandby_t){.owner = xstrdup(s->owner)};
        e->rows = xmalloc(sizeof(size_t) * (s->npartitions + s->nkeys + 1));
        for (size_t j = 0; j < s->npartitions; j++)
            if (s->partitions[j] >= 0 && s->partitions[j] < m->res.npartitions)
                e->rows[e->n++] = (size_t)s->partitions[j];
        for (size_t j = 0; j < s->nkeys; j++)
            e->rows[e->n++] = mb_key_row(m, s->keys[j]);
        const mstandby_t *old = standby_find(m, s->owner);
        if (old) {
            /* Subscribed already (armed), to an owner that has not gone:
             * it hears what we hold of it now. */
            int told = 1;
            if (old->armed && !old->fired && !old->verify && !old->verify_due &&
                (old->n != e->n || memcmp(old->rows, e->rows, sizeof(size_t) * e->n) != 0))
                told = mb_notice_holds_changed(m, e);
            e->armed = old->armed && told; /* not told: the watch again, with a SUB */
            e->fired = old->fired;
            e->verify = old->verify;
            e->verify_due = old->verify_due;
            e->alive = old->alive;
        }
        n++;
    }
    /* Owners we no longer stand by for forget us as their subscriber;
     * not one that left or went, or that we took over from (its release
     * is decided: the publish after its leave drops it from every list). */
    for (size_t i = 0; i < m->nstandby; i++) {
        const mstandby_t *e = &m->standby[i];
        mstandby_t key = {.owner = e->owner};
        if (!e->fired && !e->verify && !e->verify_due &&
            !bsearch(&key, next, n, sizeof(key), standby_cmp))
            mb_notice_unsubscribe_owner(m, e->owner);
    }
    ahead_update(m, next, n);
    mb_standby_clear(m);
    m->standby = next;
    m->nstandby = n;
}

/* A member node's data: 1 if it is marked leaving, 0 if it is not, -1 if
 * it cannot be read as a member node (nothing is concluded from it). */
static int node_leaving(const char *value, size_t len) {
    baton_member_t mb;
    char why[128];
    if (baton_member_decode(value, len, &mb, why, sizeof(why)) != BATON_OK)
        return -1;
    return mb.leaving ? 1 : 0;
}

void mb_standby_armed(int rc, const char *value, int len, const char *path, baton_zk_t *zk) {
    if (rc == ZNONODE)
        baton_zk_watcher(NULL, ZOO_DELETED_EVENT, ZOO_CONNECTED_STATE, path, zk);
    else if (rc == ZOK && node_leaving(value, len > 0 ? (size_t)len : 0) == 1)
        baton_zk_watcher(NULL, ZOO_CHANGED_EVENT, ZOO_CONNECTED_STATE, path, zk);
}

/* ZooKeeper's completion thread: the answer to the read that set the
 * watch on an owner's member node (mb_standby_armed). Queues, nothing
 * else. */
static void standby_watch_done(int rc, const char *value, int len, const struct Stat *st,
                               const void *data) {
    (void)st;
    own_watch_t *ow = (own_watch_t *)data;
    mb_standby_armed(rc, value, len, ow->path, ow->zk);
    free(ow);
}

/* The owner's node as the watch set after a promotion found it: live and
 * not leaving (another incarnation under its id, or a spurious event) is
 * queued as its creation, which makes us give back what we took (an owner
 * that restarted with its id while the coordinator did not publish, say).
 * Gone: an exists watch waits for its next incarnation. Queues, nothing
 * else (on ZooKeeper's completion thread). */
static void standby_reborn_done(int rc, const struct Stat *st, const void *data) {
    (void)st;
    own_watch_t *ow = (own_watch_t *)data;
    if (rc == ZOK) /* created meanwhile: the watch is on the new node */
        baton_zk_watcher(NULL, ZOO_CREATED_EVENT, ZOO_CONNECTED_STATE, ow->path, ow->zk);
    free(ow);
}

static void standby_verify_done(int rc, const char *value, int len, const struct Stat *st,
                                const void *data) {
    (void)st;
    own_watch_t *ow = (own_watch_t *)data;
    if (rc == ZOK) {
        if (node_leaving(value, len > 0 ? (size_t)len : 0) == 0)
            baton_zk_watcher(NULL, ZOO_CREATED_EVENT, ZOO_CONNECTED_STATE, ow->path, ow->zk);
        free(ow);
    } else if (rc == ZNONODE) {
        /* getData leaves no watch on a missing node; exists does. */
        if (zoo_awexists(baton_zk_handle(ow->zk), ow->path, baton_zk_watcher, ow->zk,
                         standby_reborn_done, ow) != ZOK)
            free(ow);
    } else {
        free(ow);
    }
}

/* Reads path with a data watch, without waiting: done gets the answer
 * (and frees the own_watch_t it is given). */
static int standby_read_send(baton_membership_t *m, const char *path, data_completion_t done) {
    own_watch_t *ow = own_watch_new(m, path);
    int rc = zoo_awget(baton_zk_handle(m->zk), path, baton_zk_watcher, m->zk, done, ow);
    if (rc != ZOK)
        free(ow);
    return rc;
}

/* Sets the watch on every owner's member node not watched yet, with a read
 * whose answer is not waited for (off the handoff's path): whether the
 * owner is gone or leaving already (mb_standby_armed), or, after a
 * departure was acted on, whether it is still what we took over from
 * (standby_verify_done). */
void mb_standby_arm(baton_membership_t *m) {
    int hit = 0;
    for (size_t i = 0; i < m->nstandby; i++) {
        mstandby_t *e = &m->standby[i];
        if (e->armed)
            continue;
        if (!hit++)
            BATON_FAILPOINT("worker.before_standby_arm");
        char *path = baton_layout_worker(m->base, e->owner);
        if (e->verify) {
            e->armed = standby_read_send(m, path, standby_verify_done) == ZOK;
            e->verify = !e->armed;
        } else if (m->notice.fd >= 0) {
            /* standby.notice: a read with its watch, whose answer
             * subscribes us to the owner's release notices. */
            e->armed = mb_notice_watch_send(m, e, path) == ZOK;
        } else {
            /* A read with its watch: the mark may be there already.
             * Not sent: armed stays 0, tried again next poll. */
            e->armed = standby_read_send(m, path, standby_watch_done) == ZOK;
        }
        free(path);
    }
}

/* A watch fired on workers/<id>: if we stand by for id, its node changed
 * (a member rewrites its node only to mark its leave) or went. Watches are
 * one-shot: after a change or a (re)creation the node is watched again
 * (the next poll's mb_standby_arm), so its deletion is seen too; after a
 * deletion it is not (a watch set on a missing node would answer ZNONODE,
 * which is queued as a deletion again: a loop). A new incarnation's
 * creation is seen by the exists watch the verify read leaves on the
 * missing node (standby_verify_done). */
void mb_standby_note(baton_membership_t *m, const char *id, int type) {
    mstandby_t *e = standby_find(m, id);
    if (!e)
        return;
    if (type != ZOO_DELETED_EVENT)
        e->armed = 0;
    if (type == ZOO_DELETED_EVENT || type == ZOO_CHANGED_EVENT)
        e->fired = type;
    if (type == ZOO_CREATED_EVENT) /* a new incarnation, or found live */
        e->alive = 1;
}

/* Whether workers/<owner> exists now: a deletion event may be an earlier
 * incarnation's, drained together with an assignment that already names
 * the next one (then it is not a departure). An error counts as gone: the
 * claims queue and the sink's fence still decide. */
static int standby_owner_exists(baton_membership_t *m, const char *owner) {
    char *path = baton_layout_worker(m->base, owner);
    int err = baton_zk_exists(m->zk, path, 0, NULL);
    free(path);
    return err == BATON_OK;
}

/* The owner is live and not leaving: gives back what we took from it as
 * its standby and no assignment since has given us (promoted_gen is still
 * the current generation). Its own claims then become lowest; the
 * coordinator's republish (event=member_incarnation) and its watchdog end
 * any promotion this misses. */
static void standby_give_back(baton_membership_t *m, mstandby_t *e) {
    size_t gave = 0;
    for (size_t j = 0; j < e->n; j++) {
        mpart_t *mp = &m->st[e->rows[j]];
        if (!mp->promoted || mp->promoted_gen != m->generation)
            continue;
        mp->promoted = 0;
        mb_st_assign(m, e->rows[j], 0, "standby_given_back");
        mb_mark_dirty(m, mp);
        mp->retry_at = 0;
        gave++;
    }
    if (gave)
        BLOG_INFO("event=standby_given_back owner=%s reason=owner_live resources=%zu "
                  "generation=%lld",
                  baton_log_v(e->owner), gave, (long long)m->generation);
}

/* Takes what the owners that left stand us by for: marks it assigned (the
 * claims loop claims it, on_assigned fetches ahead). */
void mb_standby_promote(baton_membership_t *m) {
    for (size_t i = 0; i < m->nstandby; i++) {
        mstandby_t *e = &m->standby[i];
        if (e->alive) {
            e->alive = 0;
            standby_give_back(m, e);
        }
        if (!e->fired)
            continue;
        if (e->verify_due && e->fired != MB_FIRED_NOTICE) {
            e->verify_due = 0; /* the owner's news after a notice: now read */
            e->verify = 1;
            e->armed = 0;
        }
        if (e->fired == ZOO_DELETED_EVENT && standby_owner_exists(m, e->owner)) {
            /* Back already, as another incarnation: not a departure. Watch
             * the new node (a watch on it is safe: it exists). */
            BLOG_INFO("event=standby_skipped_promotion owner=%s reason=owner_live",
                      baton_log_v(e->owner));
            e->fired = 0;
            e->armed = 0;
            continue;
        }
        size_t took = 0;
        for (size_t j = 0; j < e->n; j++) {
            mpart_t *mp = &m->st[e->rows[j]];
            if (mstate_assigned(mp->state))
                continue;
            mb_st_assign(m, e->rows[j], 1, "standby_promoted");
            mp->promoted = 1;
            mp->promoted_gen = m->generation;
            mb_mark_dirty(m, mp);
            mp->retry_at = 0;
            mb_assigned_note(m, e->rows[j]);
            took++;
        }
        /* After a leave mark or a deletion, taken or not: the next watch
         * reads the owner's node only to give back if it turns out live (a
         * restart). Not the plain read of mb_standby_arm: a mark still
         * there would be queued as its event again, and again, every poll
         * until the owner's node goes. Not on a release notice: the leave
         * mark sent before it may not be applied yet, and the read would
         * take the owner for live; the mark's event or the node's deletion
         * comes next, and reads. */
        int notice = e->fired == MB_FIRED_NOTICE;
        if (!notice) {
            e->verify = 1;
            e->armed = 0;
        }
        if (notice && took)
            e->verify_due = 1;
        if (took) { /* none: taken already (the mark, then the deletion) */
            baton_metric_add(baton_metric_counter(BATON_M_W_STANDBY_PROMOTIONS), (double)took);
            BLOG_INFO("event=standby_promoted owner=%s reason=%s resources=%zu generation=%lld",
                      baton_log_v(e->owner),
                      e->fired == ZOO_DELETED_EVENT ? "gone"
                      : notice                      ? "notice"
                                                    : "leaving",
                      took, (long long)m->generation);
        }
        e->fired = 0;
    }
}

/* Whether owner has departed, as its member node says now: ZOO_DELETED_EVENT
 * (no node), ZOO_CHANGED_EVENT (marked leaving: its mark's event may still
 * be on its way to us), else 0 -- live and not leaving, or an error (then
 * nothing is promoted on a guess: the caller yields). */
static int owner_departed(baton_membership_t *m, const char *owner) {
    char *path = baton_layout_worker(m->base, owner);
    char *data = NULL;
    size_t len = 0;
    int err = baton_zk_get(m->zk, path, 0, &data, &len, NULL);
    free(path);
    int fired = 0;
    if (err == BATON_NOTFOUND) {
        fired = ZOO_DELETED_EVENT;
    } else if (err == BATON_OK && node_leaving(data, len) == 1) {
        fired = ZOO_CHANGED_EVENT;
    }
    free(data);
    return fired;
}

/* A release notice from owner names its claim of sequence seq on row
 * (member_notice.c). Row assigned to us, or stood by for owner: if our
 * claim waits right behind that one, it counts as deleted
 * (mb_claim_noticed), and from the owner we stand by for the notice is
 * also its leave mark (promoted by the poll, MB_FIRED_NOTICE). Returns 1
 * if our claim was freed. */
int mb_standby_noticed(baton_membership_t *m, const char *owner, size_t row, int64_t seq) {
    mstandby_t *e = standby_find(m, owner);
    int ours = 0;
    for (size_t j = 0; e && j < e->n && !ours; j++)
        ours = e->rows[j] == row;
    /* A datagram is not ordered after the coordinator's publish as
     * ZooKeeper's events are: a publish that moved our standby duty for row
     * elsewhere may still be on its way to us. Then we take row on a stale
     * list and give it up at that publish's read (promoted_keep): an extra
     * move, never a second writer. The notice's generation (the leaver's
     * node's, logged by rel_apply) cannot tell: each member's node keeps
     * the generation it was last written at. */
    if (!ours && !mstate_assigned(m->st[row].state))
        return 0;
    if (!mb_claim_noticed(m, row, seq))
        return 0;
    if (ours && !e->fired)
        e->fired = MB_FIRED_NOTICE;
    return 1;
}

/* The entry of the owner we stand by for row for, or NULL. */
static mstandby_t *standby_of_row(baton_membership_t *m, size_t row) {
    for (size_t i = 0; i < m->nstandby; i++)
        for (size_t j = 0; j < m->standby[i].n; j++)
            if (m->standby[i].rows[j] == row)
                return &m->standby[i];
    return NULL;
}

/* Our claim of row, made ahead of time, is lowest and row is not assigned
 * to us. If the owner we stand by for is gone (a crash: its session took
 * its claims and its member node in one transaction, whose events can
 * reach us in two polls, the claim's first), this is the departure the
 * member node's event will report: promote now, and the claim made ahead
 * is ours (row is then assigned; the caller acquires it). Otherwise the
 * owner let go without leaving, or has not claimed yet: yield. */
void mb_ahead_lowest(baton_membership_t *m, size_t row) {
    mstandby_t *e = standby_of_row(m, row);
    int fired = e ? owner_departed(m, e->owner) : 0;
    if (fired) {
        BLOG_INFO("event=standby_claim_lowest %s owner=%s owner_state=%s action=promote",
                  mb_row_label(m, row), baton_log_v(e->owner),
                  fired == ZOO_DELETED_EVENT ? "gone" : "leaving");
        e->fired = fired;
        mb_standby_promote(m);
        if (mstate_assigned(m->st[row].state))
            return;
    }
    ahead_yield(m, row);
}
