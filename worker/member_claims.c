/* member_claims.c: our claims: creating them (one by one, pipelined with
 * the queue check, or in multis), recovering a create whose reply was lost,
 * checking each claims queue (the lowest owns; a waiter watches its
 * predecessor), acquiring (on_acquired) and releasing. */
#include "member_int.h"

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_layout.h"
#include "baton_log.h"
#include "baton_metrics.h"
#include "baton_util.h"
#include "baton_zkbatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The path of the claim row holds (mp->claim, which must be set); freed by
 * the caller. */
static char *own_claim_path(baton_membership_t *m, size_t row) {
    return baton_layout_child(baton_res_claims(&m->res, row), m->st[row].claim);
}

/* Deletes our claim on row (only our own node, by its exact name); why
 * names the transition. The claim is forgotten only once it is known gone:
 * deleted, not found, or gone with our session. A delete that failed (a
 * lost connection: applied or not, we cannot tell) keeps the claim known,
 * not owned, and marks the row to look again after RETRY_MS: the next look
 * deletes it again (NOTFOUND then means the first one landed), or, if the
 * row is assigned to us meanwhile, checks its queue. Forgotten, a claim
 * left in ZooKeeper would stay as long as our session and block the next
 * owner until the coordinator's watchdog revokes it (never, with
 * --handoff-timeout-ms 0). Returns BATON_OK if the claim is gone, else the
 * delete's error. */
int mb_delete_claim(baton_membership_t *m, size_t row, const char *why) {
    mpart_t *mp = &m->st[row];
    if (!mp->claim[0])
        return BATON_OK;
    char *path = own_claim_path(m, row);
    BATON_FAILPOINT("worker.before_claim_delete");
    int err = baton_zk_delete(m->zk, path, -1);
    free(path);
    if (err != BATON_OK && err != BATON_NOTFOUND && err != BATON_EXPIRED) {
        BLOG_WARN("event=release_failed %s claim=%s error=%s action=retry", mb_row_label(m, row),
                  baton_log_v(mp->claim), baton_err_name(err));
        if (mstate_owned(mp->state))
            mb_st_phase(m, row, MPHASE_CLAIMED, "delete_failed");
        mb_mark_dirty(m, mp);
        mp->retry_at = baton_now_ms() + RETRY_MS;
        return err;
    }
    if (err == BATON_EXPIRED)
        BLOG_WARN("event=release_failed %s claim=%s error=%s action=forget (gone with the session)",
                  mb_row_label(m, row), baton_log_v(mp->claim), baton_err_name(err));
    else
        BLOG_INFO("event=released %s epoch=%lld", mb_row_label(m, row), (long long)mp->czxid);
    mp->claim[0] = 0;
    mp->czxid = 0;
    mb_st_phase(m, row, MPHASE_NONE, why);
    return BATON_OK;
}

/* Deletes the claims of rows[0..n-1] (those that have one) together, in
 * multis of up to CLAIM_MULTI_MAX: one round trip, where one delete each
 * took a round trip per resource (a rebalance that moved 60 of a member's
 * partitions held the last successor for 60 of them). A multi is all or
 * nothing: if it fails (a claim already gone, a lost connection), each of
 * its claims is deleted alone (mb_delete_claim, which sorts out each
 * error). why names the transition. */
void mb_claims_delete(baton_membership_t *m, const size_t *rows, size_t n, const char *why) {
    size_t *with = xmalloc(sizeof(size_t) * (n + 1));
    size_t nwith = 0;
    for (size_t i = 0; i < n; i++)
        if (m->st[rows[i]].claim[0])
            with[nwith++] = rows[i];
    for (size_t start = 0; start < nwith;) {
        int32_t k = (int32_t)(nwith - start < CLAIM_MULTI_MAX ? nwith - start : CLAIM_MULTI_MAX);
        const size_t *r = with + start;
        start += (size_t)k;
        if (k == 1) {
            mb_delete_claim(m, r[0], why);
            continue;
        }
        zoo_op_t *ops = xcalloc((size_t)k, sizeof(*ops));
        zoo_op_result_t *res = xcalloc((size_t)k, sizeof(*res));
        char **paths = xcalloc((size_t)k, sizeof(char *));
        for (int32_t i = 0; i < k; i++) {
            paths[i] = own_claim_path(m, r[i]);
            zoo_delete_op_init(&ops[i], paths[i], -1);
        }
        BATON_FAILPOINT("worker.before_claim_delete");
        int rc = baton_zk_multi(m->zk, k, ops, res);
        for (int32_t i = 0; i < k; i++) {
            mpart_t *mp = &m->st[r[i]];
            if (rc == ZOK) {
                BLOG_INFO("event=released %s epoch=%lld batch=%d", mb_row_label(m, r[i]),
                          (long long)mp->czxid, k);
                mp->claim[0] = 0;
                mp->czxid = 0;
                mb_st_phase(m, r[i], MPHASE_NONE, why);
            } else {
                mb_delete_claim(m, r[i], why);
            }
            free(paths[i]);
        }
        free(paths);
        free(res);
        free(ops);
    }
    free(with);
}

void mb_drop_row(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    BLOG_WARN("event=drop %s epoch=%lld reason=fenced", mb_row_label(m, row), (long long)mp->czxid);
    mb_delete_claim(m, row, "dropped");
    mb_mark_dirty(m, mp);
    mp->retry_at = baton_now_ms() + RETRY_MS;
}

/* Deletes dir/name, a second claim of our session beside keep (a create
 * whose reply was lost landed after all): waiting behind it would last as
 * long as our session, and left behind ours it would block the next owner. */
static void claim_delete_duplicate(baton_membership_t *m, size_t row, const char *dir,
                                   const char *name, const char *keep) {
    char *path = baton_layout_child(dir, name);
    int e = baton_zk_delete(m->zk, path, -1);
    BLOG_WARN("event=duplicate_claim %s claim=%s kept=%s action=delete result=%s",
              mb_row_label(m, row), baton_log_v(name), baton_log_v(keep), baton_err_name(e));
    free(path);
}

/* After a create whose reply was lost: finds the claim it may have made,
 * by our session id in the name and as its ephemeral owner (a claim of an
 * earlier session, even with our worker id, is never ours). Sets mp->claim
 * if found and clears uncertain; an error keeps it uncertain. */
static int find_own_claim(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    const char *dir = baton_res_claims(&m->res, row);
    int err = BATON_OK;
    {
        char **names = NULL;
        size_t n = 0;
        /* The create may have gone through another server: catch up with
         * the leader first, or the listing can miss it (then we would
         * create a second claim, behind our own; queue_decide mends that
         * too). */
        if ((err = baton_zk_sync(m->zk, dir)) != BATON_OK ||
            (err = baton_zk_children(m->zk, dir, 0, &names, &n)) != BATON_OK)
            goto out;
        int found = 0;
        for (size_t i = 0; i < n; i++) {
            if (!baton_claim_of_session(names[i], m->session))
                continue;
            char *path = baton_layout_child(dir, names[i]);
            struct Stat st;
            int e = baton_zk_exists(m->zk, path, 0, &st);
            if (e == BATON_OK && st.ephemeralOwner == baton_zk_session_id(m->zk) && found) {
                /* Names sort by sequence: we keep the lowest, found first. */
                claim_delete_duplicate(m, row, dir, names[i], mp->claim);
            } else if (e == BATON_OK && st.ephemeralOwner == baton_zk_session_id(m->zk)) {
                found = 1;
                snprintf(mp->claim, sizeof(mp->claim), "%s", names[i]);
                mp->czxid = st.czxid;
                mb_st_phase(m, row, MPHASE_CLAIMED, "claim_recovered");
                BLOG_INFO("event=claim_recovered %s claim=%s", mb_row_label(m, row),
                          baton_log_v(mp->claim));
            } else if (e != BATON_OK && e != BATON_NOTFOUND) {
                err = e; /* cannot tell: stay uncertain rather than create twice */
            }
            free(path);
        }
        baton_zk_strings_free(names, n);
        /* A claim found is ours whatever another name's check said (a
         * second claim of ours beside it is deleted by queue_decide). */
        if (err == BATON_OK && !found)
            mb_st_phase(m, row, MPHASE_NONE, "no_claim_found");
    }
out:
    return err;
}

/* The first half of a queue check, given the claims listed in p's
 * directory: returns the path to watch (heap; our own claim when we are
 * lowest, else our predecessor's) and sets *waiting, or NULL when our claim
 * is gone (then p is marked to be claimed again). *adopted: our claim is now
 * another of our session (a duplicate was deleted): its stat is not known. */
static char *queue_decide(baton_membership_t *m, size_t row, char **names, size_t n, int *waiting,
                          int *adopted) {
    mpart_t *mp = &m->st[row];
    *adopted = 0;
    /* Every claim named with our session is ours (only our session creates
     * such names, as its ephemerals). More than one: a create whose reply
     * was lost landed after the listing that looked for it. Keep the
     * lowest, which no other claim of ours may wait behind, and delete the
     * others: one would block us, or block the next owner after we let go. */
    char **own = xcalloc(n ? n : 1, sizeof(char *));
    size_t nown = 0;
    for (size_t i = 0; i < n; i++)
        if (baton_claim_of_session(names[i], m->session))
            own[nown++] = names[i];
    const char *own_low = baton_claim_lowest(own, nown);
    free(own);
    if (nown > 1) {
        /* An owner keeps the claim its epoch came from (the lowest of all);
         * if that is gone, claim_lost below deals with it. */
        const char *keep = own_low;
        if (mstate_owned(mp->state)) {
            keep = NULL;
            for (size_t i = 0; i < n; i++)
                if (strcmp(names[i], mp->claim) == 0)
                    keep = names[i];
        }
        const char *dir = baton_res_claims(&m->res, row);
        for (size_t i = 0; keep && i < n; i++) {
            if (names[i] == keep || !baton_claim_of_session(names[i], m->session))
                continue;
            claim_delete_duplicate(m, row, dir, names[i], keep);
            if (strcmp(mp->claim, names[i]) == 0) { /* not owned: take the kept one */
                snprintf(mp->claim, sizeof(mp->claim), "%s", keep);
                mp->czxid = 0; /* learnt from its stat once it is lowest (queue_settle) */
                *adopted = 1;
            }
            names[i][0] = 0; /* not a claim any more, below */
        }
    }
    int found = 0;
    size_t below = 0;
    const char *pred = baton_claim_predecessor(names, n, mp->claim, &found, &below);
    if (!found) {
        /* Removed by someone else (an operator, or the coordinator's stuck
         * handoff revoke): claim again if still assigned. */
        BLOG_WARN("event=claim_lost %s claim=%s", mb_row_label(m, row), baton_log_v(mp->claim));
        if (mstate_owned(mp->state))
            mb_cb_released(m, row, BATON_RELEASE_LOST);
        mp->claim[0] = 0;
        mb_st_phase(m, row, MPHASE_NONE, "claim_lost");
        mb_mark_dirty(m, mp);
        return NULL;
    }
    *waiting = pred != NULL;
    if (pred)
        BLOG_DEBUG("event=waiting %s behind=%s", mb_row_label(m, row), baton_log_v(pred));
    /* Behind exactly one claim: remembered, so that its deletion settles
     * the queue without a read (pred_watched, once its watch is set). */
    mp->pred_for = 0;
    mp->pred_gone = 0;
    /* A listing is news of its own: a notice taken before it says nothing
     * about the deletions the watch set now will bring. */
    mp->noticed_seq1 = 0;
    if (pred && below == 1) {
        mp->pred_seq = baton_claim_seq(pred);
        mp->pred_for = baton_claim_seq(mp->claim) + 1;
    }
    const char *dir = baton_res_claims(&m->res, row);
    /* Leader: watch our own claim so its deletion reaches us. Waiter: watch
     * the predecessor only, so a release wakes one claimant, not a herd. */
    char *watch_path = baton_layout_child(dir, pred ? pred : mp->claim);
    return watch_path;
}

/* Whether what row's pred_seq says is about the claim we hold now. */
static int pred_known(const mpart_t *mp) {
    return mp->pred_for && mp->claim[0] && !mstate_uncertain(mp->state) &&
           baton_claim_seq(mp->claim) + 1 == mp->pred_for;
}

/* The answer to the watch on row's predecessor, err: set (OK), or the
 * predecessor already gone (NOTFOUND: if it was the only claim below ours,
 * ours is lowest), else nothing is known. */
static void pred_watched(mpart_t *mp, int err) {
    if (err == BATON_NOTFOUND && pred_known(mp))
        mp->pred_gone = 1;
    else if (err != BATON_OK)
        mp->pred_for = 0;
}

/* Whether row waits behind one watched claim (nothing to ask while that
 * stays), and if that one is gone, whether its queue settles without a
 * read: the claim's epoch is known (a claim created in a multi learns it
 * from the queue check's watch on it; an adopted one only from its own
 * stat once lowest: the full check reads that). */
static int pred_waiting(const mpart_t *mp) {
    return pred_known(mp) && !(mp->pred_gone && !mp->czxid);
}
static int settle_ready(const mpart_t *mp) { return pred_waiting(mp) && mp->pred_gone; }

int mb_claims_more_coming(const baton_membership_t *m) {
    int freed = 0, waiting = 0;
    for (size_t i = 0; i < m->nbusy && !(freed && waiting); i++) {
        const mpart_t *mp = &m->st[m->busy_rows[i]];
        if (!pred_known(mp))
            continue;
        if (mp->pred_gone)
            freed = 1;
        else
            waiting = 1; /* assigned, or a claim made ahead (promoted later in this poll) */
    }
    return freed && waiting;
}

/* A watch fired on path, in row's part of the layout. The deletion of the
 * one claim ours waited behind makes ours lowest (pred_gone); any other
 * news (our own claim's deletion, say) asks for a full queue check. */
void mb_claim_news(baton_membership_t *m, size_t row, const char *path, int type) {
    mpart_t *mp = &m->st[row];
    const char *leaf = strrchr(path, '/');
    int64_t seq = leaf ? baton_claim_seq(leaf + 1) : -1;
    if (type == ZOO_DELETED_EVENT && seq >= 0 && seq + 1 == mp->noticed_seq1)
        return; /* a release notice told us first (mb_claim_noticed) */
    if (type == ZOO_DELETED_EVENT && seq >= 0 && pred_known(mp) && seq == mp->pred_seq)
        mp->pred_gone = 1;
    else
        mp->pred_for = 0;
    mb_mark_dirty(m, mp);
}

/* A release notice (member_notice.c): the claim of sequence seq in row's
 * directory will never write again. If it is the one claim ours waits
 * behind, it counts as deleted, as its deletion's event would (which,
 * when it comes, changes nothing). Returns 1 if so. */
int mb_claim_noticed(baton_membership_t *m, size_t row, int64_t seq) {
    mpart_t *mp = &m->st[row];
    if (!pred_known(mp) || mp->pred_gone || mp->pred_seq != seq)
        return 0;
    mp->pred_gone = 1;
    mp->noticed_seq1 = seq + 1;
    mb_mark_dirty(m, mp);
    return 1;
}

/* The second half: the watch was set (err, and st the watched node's
 * stat). The lowest claim owns p: take it (on_acquired). */
static int queue_settle(baton_membership_t *m, size_t row, int err, const struct Stat *st,
                        int waiting) {
    mpart_t *mp = &m->st[row];
    if (err == BATON_NOTFOUND) {
        mb_mark_dirty(m, mp); /* it went meanwhile: look again */
        return BATON_OK;
    }
    if (err != BATON_OK || waiting)
        return err;
    if (!mstate_assigned(mp->state)) {
        mb_ahead_lowest(m, row); /* a claim made ahead of time, lowest */
        if (!mstate_assigned(mp->state))
            return BATON_OK; /* it yielded */
    }
    /* Our own claim's stat: its czxid is the epoch (a batched create, see
     * claims_create_multi, learns it only here). */
    if (st && st->czxid)
        mp->czxid = st->czxid;
    if (!mstate_owned(mp->state)) {
        if (!baton_membership_can_write(m)) {
            mb_mark_dirty(m, mp);
            return BATON_OK;
        }
        /* Owned while on_acquired runs, so baton_epoch_valid() holds there
         * (an application fences its resource from inside the callback). */
        mb_st_phase(m, row, MPHASE_OWNED, "acquired");
        int rc = mb_cb_acquired(m, row, mp->czxid);
        if (rc != BATON_OK)
            mb_st_phase(m, row, MPHASE_CLAIMED, "acquire_refused");
        if (rc == BATON_OK) {
            if (mp->claimed_ms)
                baton_metric_observe(baton_metric_histogram(BATON_M_W_HANDOFF_SECONDS),
                                     (double)(baton_now_ms() - mp->claimed_ms) / 1000.0);
            mp->claimed_ms = 0;
            BLOG_INFO("event=acquired %s epoch=%lld generation=%lld", mb_row_label(m, row),
                      (long long)mp->czxid, (long long)m->generation);
        } else if (rc == BATON_STALE) {
            mb_drop_row(m, row);
        } else {
            mb_mark_dirty(m, mp);
            mp->retry_at = baton_now_ms() + RETRY_MS;
        }
    }
    return BATON_OK;
}

/* ZooKeeper's completion thread: the answer to the watch set on a claim
 * taken in one round trip (claims_queue_batch; the create's reply named
 * the claim only then). A claim already gone (ZNONODE), or an answer lost
 * with the connection, is queued as that claim's deletion, so the owner's
 * next poll checks the queue again; a watch that was set reports a later
 * deletion itself. Queues, nothing else. */
static void own_watch_done(int rc, const struct Stat *st, const void *data) {
    (void)st;
    own_watch_t *ow = (own_watch_t *)data;
    if (rc != ZOK && rc != ZCLOSING)
        baton_zk_watcher(NULL, ZOO_DELETED_EVENT, ZOO_CONNECTED_STATE, ow->path, ow->zk);
    free(ow);
}

/* Sets the watch on our claim at path without waiting for the answer. */
static void own_watch_send(baton_membership_t *m, const char *path) {
    /* Not sent: as own_watch_done does for a failed answer, queue it as the
     * claim's deletion so the next poll looks at the queue again. */
    int rc = mb_watch_send(m, path, own_watch_done);
    if (rc != ZOK && rc != ZCLOSING)
        baton_zk_watcher(NULL, ZOO_DELETED_EVENT, ZOO_CONNECTED_STATE, path, m->zk);
}

/* Holds back row's own watch (first_settle) for delay_ms. */
static void own_watch_later(baton_membership_t *m, size_t row, int64_t delay_ms) {
    if (m->nlater == m->latercap) {
        m->latercap = m->latercap ? 2 * m->latercap : 64;
        m->later = xrealloc(m->later, sizeof(*m->later) * m->latercap);
    }
    if (m->nlater == 0)
        m->later_at = baton_now_ms() + delay_ms;
    m->later[m->nlater++] = (mlater_t){.row = row, .czxid = m->st[row].czxid};
}

/* Settles row's claim, known lowest without a read of it (st: a stat
 * bringing its czxid, or NULL: known already), then sets its own watch:
 * sent now without waiting when delay_ms is negative (gone already, its
 * NONODE answer is queued as its deletion, and the next poll's full check
 * finds it lost), else held back that long (own_watch_later). Returns
 * queue_settle's error. */
static int settle_then_watch(baton_membership_t *m, size_t row, const struct Stat *st,
                             int64_t delay_ms) {
    int err = queue_settle(m, row, BATON_OK, st, 0); /* marks the row again on a failure */
    if (!m->st[row].claim[0])                        /* it yielded */
        return err;
    if (delay_ms >= 0) {
        own_watch_later(m, row, delay_ms);
    } else {
        char *path = own_claim_path(m, row);
        own_watch_send(m, path);
        free(path);
    }
    return err;
}

/* Sends the own watches held back, once their time has come: for each
 * claim still ours (the same czxid; one released or lost meanwhile needs
 * none, and one gone unseen answers NONODE, queued as its deletion, as
 * own_watch_send says). */
void mb_own_watches_send(baton_membership_t *m) {
    if (!m->nlater || baton_now_ms() < m->later_at)
        return;
    size_t sent = 0;
    for (size_t i = 0; i < m->nlater; i++) {
        const mlater_t *l = &m->later[i];
        const mpart_t *mp = &m->st[l->row];
        if (!mp->claim[0] || mp->czxid != l->czxid)
            continue;
        char *path = own_claim_path(m, l->row);
        own_watch_send(m, path);
        free(path);
        sent++;
    }
    BLOG_DEBUG("event=own_watches_sent claims=%zu held=%zu", sent, m->nlater);
    m->nlater = 0;
}

/* The one claim row's claim waited behind is gone (pred_gone): ours is
 * lowest, settled without a read (settle_then_watch). */
static void settle_known(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    mp->pred_for = 0;
    BLOG_DEBUG("event=queue_checked %s claim=%s listed=0 reason=predecessor_deleted",
               mb_row_label(m, row), baton_log_v(mp->claim));
    settle_then_watch(m, row, NULL, -1);
}

/* Before the poll reads its assignment (a read, which a single ZooKeeper
 * server answers only after the writes it has not synced yet: on a leave,
 * the coordinator's publish): acquires every assigned resource whose
 * claim the predecessor's deletion made lowest. The handoff's successor
 * fences on the deletion's event alone. */
void mb_claims_settle_known(baton_membership_t *m) {
    int64_t now = baton_now_ms();
    size_t total = m->ndirty; /* settle_known may list rows: they wait */
    for (size_t i = 0; i < total; i++) {
        size_t row = m->dirty_rows[i];
        mpart_t *mp = &m->st[row];
        if (!mp->dirty || mp->retry_at > now || !mstate_assigned(mp->state) || !settle_ready(mp))
            continue;
        mp->dirty = 0;
        settle_known(m, row);
    }
}

/* ---- creating claims -------------------------------------------------------
 * One poll may have many resources to claim (a cold start, a failover, a
 * join). A few (up to CLAIM_PIPELINE_MAX, a handoff) are created pipelined,
 * in the same flight as their queue checks (baton_zkbatch.h), each create
 * answered with its own result: one round trip when lowest. More go first
 * in multis of up to CLAIM_MULTI_MAX (one write transaction each, all or
 * nothing), then their queue checks (list the claims, set one watch),
 * pipelined: two round trips, not three per resource. Claims made ahead
 * of time go in a multi whenever there are two or more. A claim that waits
 * costs one more (the watch on its predecessor). claim_create_send is the
 * only place a claim create is built and sent, in either mode;
 * claim_created the only place its result is read. */

/* How one claim create goes out. */
typedef struct {
    baton_zkbatch_t *batch; /* pipelined: the batch, */
    size_t slot;            /* and the slot its reply goes to */
    zoo_op_t *op;           /* else one op of a multi the caller sends: */
    char *path, *data;      /* what the op points to, until claim_send_release */
    char created[512];      /* where the multi's reply names the node */
} claim_send_t;

/* Builds row's claim create (<claims dir>/claim-<session>-, ephemeral and
 * sequential, its body our id and the generation) and sends it, or fills
 * how->op with it. */
static void claim_create_send(baton_membership_t *m, size_t row, claim_send_t *how) {
    baton_claim_t claim = {.generation = m->generation};
    snprintf(claim.worker, sizeof(claim.worker), "%s", m->conf.id);
    how->data = baton_claim_encode(&claim);
    how->path = baton_layout_claim_create(baton_res_claims(&m->res, row), m->session);
    if (how->batch)
        baton_zkbatch_add_create(how->batch, how->slot, how->path, how->data, strlen(how->data),
                                 ZOO_EPHEMERAL_SEQUENTIAL);
    else
        zoo_create_op_init(how->op, how->path, how->data, (int)strlen(how->data),
                           baton_zk_acl(m->zk), ZOO_EPHEMERAL_SEQUENTIAL, how->created,
                           sizeof(how->created));
}

/* Frees what a sent create kept (a pipelined one: at once; a multi's op:
 * once the multi is sent). */
static void claim_send_release(claim_send_t *how) {
    free(how->path);
    free(how->data);
    how->path = how->data = NULL;
}

/* Reads the result of row's claim create: err, and for BATON_OK the path
 * created and its stat (NULL after a multi, whose reply has none: the
 * czxid comes with the queue check, queue_settle; batch, the multi's size,
 * is logged then). A lost reply (BATON_CONNECTION) makes row uncertain: its
 * claim is looked for (find_own_claim) before one is created again.
 * Returns err. */
static int claim_created(baton_membership_t *m, size_t row, int err, const char *path,
                         const struct Stat *st, int batch) {
    mpart_t *mp = &m->st[row];
    if (err == BATON_OK) {
        const char *slash = path ? strrchr(path, '/') : NULL;
        snprintf(mp->claim, sizeof(mp->claim), "%s", slash ? slash + 1 : path ? path : "");
        mp->czxid = st ? st->czxid : 0;
        mp->claimed_ms = baton_now_ms();
        mb_st_phase(m, row, MPHASE_CLAIMED, "claimed");
        if (st)
            BLOG_INFO("event=claimed %s claim=%s czxid=%lld", mb_row_label(m, row),
                      baton_log_v(mp->claim), (long long)mp->czxid);
        else
            BLOG_INFO("event=claimed %s claim=%s batch=%d", mb_row_label(m, row),
                      baton_log_v(mp->claim), batch);
    } else if (err == BATON_CONNECTION) {
        mb_st_phase(m, row, MPHASE_UNCERTAIN, "reply_lost");
    } else if (err == BATON_NOTFOUND) {
        BLOG_ERROR("event=claim_failed %s error=\"'%s' does not exist\"", mb_row_label(m, row),
                   baton_log_q(baton_res_claims(&m->res, row)));
    }
    return err;
}

/* Creates claims for rows[0..n-1] (none has one, none is uncertain) in one
 * multi; errs[i] gets each one's result. A multi is all or nothing: a lost
 * reply makes every one uncertain (lost-create recovery then looks for each
 * by our session id); another failure (a missing directory) leaves them
 * without a claim and errs[i] BATON_OK: claims_queue_batch then creates
 * each pipelined, so each gets its own error. The czxid of a claim made here
 * is learned by the queue check (queue_settle), from our own claim's stat. */
static void claims_create_multi(baton_membership_t *m, const size_t *rows, int32_t n, int *errs) {
    zoo_op_t *ops = xcalloc((size_t)n, sizeof(*ops));
    zoo_op_result_t *res = xcalloc((size_t)n, sizeof(*res));
    claim_send_t *how = xcalloc((size_t)n, sizeof(*how));
    for (int32_t i = 0; i < n; i++) {
        how[i].op = &ops[i];
        claim_create_send(m, rows[i], &how[i]);
    }
    int err = baton_zk_err(baton_zk_multi(m->zk, n, ops, res));
    for (int32_t i = 0; i < n; i++) {
        if (err == BATON_OK || err == BATON_CONNECTION)
            errs[i] = claim_created(m, rows[i], err, how[i].created, NULL, n);
        else
            errs[i] = err == BATON_EXPIRED ? err : BATON_OK;
        claim_send_release(&how[i]);
    }
    free(how);
    free(res);
    free(ops);
}

/* A claim made in a multi that is the first node of its directory: lowest
 * without a listing (mb_claims_reconcile). lw is the answer to the watch
 * on the multi's first such claim (is_lead: this one), whose stat brings
 * the epoch of every claim of that multi (one transaction, one zxid). A
 * claim other than the lead is then owned at once. Its own watch is held
 * back (own_watch_later) for OWN_WATCH_LATER_RTTS times this batch's round
 * trip, at most OWN_WATCH_LATER_MAX_MS: these are a cold start's or a big
 * failover's claims, and one watch request per claim landing among the
 * other members' claims on a server that answers slowly cost the cold
 * start more than a late watch costs. (Claims held back while others wait
 * go with them, at the first batch's time.) It only tells us of a deletion
 * by someone else (batonctl evict, batonctl keys remove, the coordinator's
 * handoff watchdog); until it is
 * set the sink's fence covers us, and a claim deleted before it is set
 * answers NONODE, queued as its deletion: the next poll checks its queue
 * again. The lead gone meanwhile (NOTFOUND) says
 * nothing of the others: each is looked at again, with a listing. Returns
 * the row's error. */
static int first_settle(baton_membership_t *m, size_t row, int is_lead, const baton_zkread_t *lw,
                        int64_t rtt_ms) {
    mpart_t *mp = &m->st[row];
    if (!is_lead && (lw->err == BATON_NOTFOUND || (lw->err == BATON_OK && !lw->stat.czxid))) {
        mb_mark_dirty(m, mp);
        return BATON_OK;
    }
    if (!is_lead && lw->err != BATON_OK)
        return lw->err;
    BLOG_DEBUG("event=queue_checked %s claim=%s listed=0 reason=first_in_directory%s",
               mb_row_label(m, row), baton_log_v(mp->claim), is_lead ? "" : " epoch_from=multi");
    if (is_lead) /* its watch is set (OK), or the claim is gone: look again */
        return queue_settle(m, row, lw->err, &lw->stat, 0);
    int64_t delay = OWN_WATCH_LATER_RTTS * rtt_ms;
    return settle_then_watch(m, row, &lw->stat,
                             delay < OWN_WATCH_LATER_MAX_MS ? delay : OWN_WATCH_LATER_MAX_MS);
}

/* Claims and queue checks for rows[0..n-1], pipelined; create[i] says
 * row i has no claim yet. Round one sends, per resource, either a create
 * (its reply carries the claim's name and czxid, the epoch) and then a
 * list of the claims directory, or, for a claim we hold, the list and a
 * watch on that claim (its stat carries the czxid). ZooKeeper answers a
 * session's requests in order, so the list already shows our create. When
 * our claim is the lowest, the usual case, that is the whole check: one
 * round trip, and a claim created here gets its watch without waiting for
 * the answer (own_watch_send). Round two watches the predecessor of each
 * claim that waits. The spare watch on our own claim of a waiting one is
 * harmless (its deletion is ours, or an operator's, which we must notice
 * anyway). A create whose reply is lost makes its resource uncertain
 * (mb_claims_reconcile looks for the claim by our session id before creating
 * again). The completions only store into the batch; past a bound (a
 * server that stops answering) the batch is left to them and every
 * resource here counts as a lost reply. */
static void claims_queue_batch(baton_membership_t *m, const size_t *rows, int32_t n,
                               const int *create, const int *first, int *errs) {
    int timeout = baton_zk_session_timeout(m->zk) + 1000;
    char **watch = xcalloc((size_t)n, sizeof(char *));
    int *waiting = xcalloc((size_t)n, sizeof(int));
    baton_zkbatch_t *b = baton_zkbatch_new(m->zk, (size_t)n * 2);
    int64_t t0 = baton_now_us();
    /* The first claims of their directories all came from one multi (one
     * per mb_claims_reconcile pass), one transaction, whose zxid is the
     * czxid of every node it made: the watch on the first of them
     * (lead) brings the epoch of all. */
    int32_t lead = -1;
    for (int32_t i = 0; i < n; i++) {
        const char *dir = baton_res_claims(&m->res, rows[i]);
        if (create[i]) {
            claim_send_t how = {.batch = b, .slot = (size_t)(n + i)};
            claim_create_send(m, rows[i], &how);
            claim_send_release(&how);
        }
        if (!first[i])
            baton_zkbatch_add_children(b, (size_t)i, dir, 0);
        else if (lead < 0)
            lead = i;
        else
            continue; /* its watch goes once it is owned (first_settle) */
        if (!create[i]) {
            char *path = own_claim_path(m, rows[i]);
            baton_zkbatch_add_exists(b, (size_t)(n + i), path, 1);
            free(path);
        }
    }
    /* While the claims are in flight: the application prepares. */
    mb_assigned_flush(m);
    if (!baton_zkbatch_wait(b, timeout)) {
        for (int32_t i = 0; i < n; i++)
            errs[i] = create[i] ? claim_created(m, rows[i], BATON_CONNECTION, NULL, NULL, 0)
                                : BATON_CONNECTION;
        b = NULL; /* its last completion frees it */
        goto out;
    }
    int64_t rtt_us = baton_now_us() - t0, rtt_ms = rtt_us / 1000;
    BLOG_DEBUG("event=claims_answered resources=%d round_trip_us=%lld", n, (long long)rtt_us);
    int nwait = 0;
    for (int32_t i = 0; i < n; i++) {
        const baton_zkread_t *list = baton_zkbatch_slot(b, (size_t)i);
        const baton_zkread_t *own = baton_zkbatch_slot(b, (size_t)(n + i));
        if (create[i] && (errs[i] = claim_created(m, rows[i], own->err, own->created, &own->stat,
                                                  0)) != BATON_OK)
            continue;
        if (first[i]) {
            errs[i] = first_settle(m, rows[i], i == lead, baton_zkbatch_slot(b, (size_t)(n + lead)),
                                   rtt_ms);
            continue;
        }
        int adopted = 0;
        if ((errs[i] = list->err) == BATON_OK)
            watch[i] = queue_decide(m, rows[i], list->names, list->count, &waiting[i], &adopted);
        /* A claim a multi made, waiting: the watch on it brought its
         * czxid, which lets its predecessor's deletion settle it with no
         * read (pred_waiting); claims made ahead of time go in multis. */
        mpart_t *mp = &m->st[rows[i]];
        if (watch[i] && waiting[i] && !adopted && !create[i] && !mp->czxid &&
            own->err == BATON_OK && own->stat.czxid)
            mp->czxid = own->stat.czxid;
        /* An adopted claim's stat is not the one in flight: its watch
         * (below) brings it. */
        if (watch[i] && !waiting[i] && !adopted) {
            /* Lowest: our own claim's stat (the create's or the watch's)
             * settles it; a claim created here still needs its watch. */
            errs[i] = queue_settle(m, rows[i], create[i] ? BATON_OK : own->err, &own->stat, 0);
            if (create[i] && m->st[rows[i]].claim[0]) /* not if it yielded */
                own_watch_send(m, watch[i]);
            free(watch[i]);
            watch[i] = NULL;
        } else if (watch[i] && create[i] && pred_known(&m->st[rows[i]])) {
            /* Waiting behind one claim, to be settled on its deletion
             * without a read: a claim created here has no watch of its
             * own yet. Sent before the predecessor's watch, so that our
             * claim's deletion, if it comes first (an operator's, batonctl
             * keys remove), reaches us first (ZooKeeper's order) and the
             * full check finds it lost. */
            char *own_path = own_claim_path(m, rows[i]);
            own_watch_send(m, own_path);
            free(own_path);
        }
        nwait += watch[i] != NULL;
    }
    baton_zkbatch_free(b);
    b = baton_zkbatch_new(m->zk, (size_t)n);
    for (int32_t i = 0; i < n; i++)
        if (watch[i])
            baton_zkbatch_add_exists(b, (size_t)i, watch[i], 1);
    if (nwait > 0 && !baton_zkbatch_wait(b, timeout)) {
        for (int32_t i = 0; i < n; i++)
            if (watch[i]) {
                m->st[rows[i]].pred_for = 0;
                errs[i] = BATON_CONNECTION;
            }
        b = NULL; /* its last completion frees it */
        goto out;
    }
    for (int32_t i = 0; i < n; i++) {
        const baton_zkread_t *w = baton_zkbatch_slot(b, (size_t)i);
        if (!watch[i])
            continue;
        if (waiting[i])
            pred_watched(&m->st[rows[i]], w->err);
        errs[i] = queue_settle(m, rows[i], w->err, &w->stat, waiting[i]);
    }
out:
    baton_zkbatch_free(b); /* every request completed (NULL: left to them) */
    for (int32_t i = 0; i < n; i++)
        free(watch[i]);
    free(watch);
    free(waiting);
}

/* What mb_claims_reconcile did to each row's claim so far. */
enum { KEPT, MADE_NOW, WAS_UNCERTAIN, SETTLED_BY_EVENT };

/* mb_claims_reconcile's state for one call: per row i of rows[0..n-1],
 * errs[i] and made[i]; the rest is room for claims_make_check. */
typedef struct {
    const size_t *rows;
    int *errs;
    unsigned char *made;
    size_t *r;
    int32_t *sub;
    int *suberr, *create, *first;
} reconcile_t;

/* Claims and queue checks for the rows rc->rows[idx[0..k-1]]: those
 * without a claim are created, in one multi when `multi` (then the queue
 * checks follow), else pipelined in the checks' own round trip. */
static void claims_make_check(baton_membership_t *m, reconcile_t *rc, const int32_t *idx, int32_t k,
                              int multi) {
    int32_t nsub = 0;
    if (multi) {
        for (int32_t j = 0; j < k; j++)
            if (!m->st[rc->rows[idx[j]]].claim[0]) {
                rc->sub[nsub] = idx[j];
                rc->r[nsub++] = rc->rows[idx[j]];
            }
        claims_create_multi(m, rc->r, nsub, rc->suberr);
        for (int32_t j = 0; j < nsub; j++) {
            int32_t i = rc->sub[j];
            rc->errs[i] = rc->suberr[j];
            if (rc->made[i] == KEPT && rc->suberr[j] == BATON_OK && m->st[rc->r[j]].claim[0])
                rc->made[i] = MADE_NOW;
        }
        nsub = 0;
    }
    for (int32_t j = 0; j < k; j++) {
        int32_t i = idx[j];
        if (rc->errs[i] != BATON_OK)
            continue;
        rc->create[nsub] = !m->st[rc->rows[i]].claim[0];
        /* A claim the multi just made with sequence 0 is the first node
         * ever created in its directory: ZooKeeper numbers a sequential
         * node with its parent's child version, which every create below
         * it raises (it_claims_first). Nothing was before it, whatever
         * comes after sorts after it: it is lowest, and the queue check
         * needs no listing (first_settle: a cold start on fresh
         * directories, one read for the whole multi). */
        rc->first[nsub] = rc->made[i] == MADE_NOW && baton_claim_seq(m->st[rc->rows[i]].claim) == 0;
        rc->r[nsub] = rc->rows[i];
        rc->sub[nsub++] = i;
    }
    if (nsub == 0)
        return;
    claims_queue_batch(m, rc->r, nsub, rc->create, rc->first, rc->suberr);
    for (int32_t j = 0; j < nsub; j++) {
        rc->errs[rc->sub[j]] = rc->suberr[j];
        /* Uncertain before: a create of ours still in flight could land
         * behind the claim just listed; only a listing shows it (and
         * deletes it), so its queue is never settled without one. */
        if (rc->made[rc->sub[j]] == WAS_UNCERTAIN)
            m->st[rc->r[j]].pred_for = 0;
    }
}

/* Brings the claims of assigned resources rows[0..n-1] in line: recover
 * uncertain creates, then claim and check the queues. Up to
 * CLAIM_PIPELINE_MAX new claims are created in the queue check's own round
 * trip, one create each (a handoff's few partitions: one round trip in
 * all); more go first in a multi (a cold start's hundreds: one write
 * transaction, not one per claim), then the check. Two or more claims
 * made ahead of time go in a multi of their own (a failover hands each
 * member a few new standby duties, which would otherwise be a write
 * transaction each), after the assigned rows' claims and checks, which
 * may be a handoff's and must not wait behind that multi's round trip. A
 * resource that failed is marked to retry after RETRY_MS. Returns
 * BATON_EXPIRED if the session is gone (stop: the next poll rejoins),
 * else BATON_OK. */
int mb_claims_reconcile(baton_membership_t *m, const size_t *rows, int32_t n) {
    size_t n1 = (size_t)n + 1;
    reconcile_t rc = {.rows = rows,
                      .errs = xcalloc(n1, sizeof(int)),
                      .made = xcalloc(n1, 1),
                      .r = xmalloc(sizeof(size_t) * n1),
                      .sub = xmalloc(sizeof(int32_t) * n1),
                      .suberr = xcalloc(n1, sizeof(int)),
                      .create = xcalloc(n1, sizeof(int)),
                      .first = xcalloc(n1, sizeof(int))};
    /* A claim waiting behind one watched claim: nothing to ask while that
     * stays; once it is gone ours is lowest, settled without a read (a
     * handoff's successor fences on the predecessor's deletion event, not
     * on a read queued behind whatever ZooKeeper commits next). */
    for (int32_t i = 0; i < n; i++) {
        mpart_t *mp = &m->st[rows[i]];
        if (!pred_waiting(mp))
            continue;
        rc.made[i] = SETTLED_BY_EVENT;
        if (settle_ready(mp))
            settle_known(m, rows[i]);
    }
    /* Lost replies first, one by one (rare): find before creating. A row
     * that was uncertain never takes the first-claim shortcut: a create of
     * ours still in flight could land behind the new claim, and only a
     * listing shows it (queue_decide deletes it). */
    for (int32_t i = 0; i < n; i++) {
        if (mstate_uncertain(m->st[rows[i]].state)) {
            rc.errs[i] = find_own_claim(m, rows[i]);
            rc.made[i] = WAS_UNCERTAIN;
        }
    }
    /* The rows to claim or check: the assigned ones, then those claimed
     * ahead of time (rows not assigned to us), each list in row order. */
    int32_t *idx = xmalloc(sizeof(int32_t) * n1);
    int32_t nassigned = 0, nahead = 0, need = 0, need_ahead = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int32_t i = 0; i < n; i++) {
            int ahead = !mstate_assigned(m->st[rows[i]].state);
            if (ahead != pass || rc.errs[i] != BATON_OK || rc.made[i] == SETTLED_BY_EVENT)
                continue;
            idx[nassigned + nahead] = i;
            if (ahead)
                nahead++;
            else
                nassigned++;
            if (!m->st[rows[i]].claim[0]) {
                need++;
                need_ahead += ahead;
            }
        }
    if (need > CLAIM_PIPELINE_MAX) {
        claims_make_check(m, &rc, idx, nassigned + nahead, 1);
    } else if (need_ahead > 1) {
        claims_make_check(m, &rc, idx, nassigned, 0);
        claims_make_check(m, &rc, idx + nassigned, nahead, 1);
    } else {
        claims_make_check(m, &rc, idx, nassigned + nahead, 0);
    }
    free(idx);
    int expired = 0;
    int64_t now = baton_now_ms();
    for (int32_t i = 0; i < n; i++) {
        if (rc.errs[i] == BATON_OK)
            continue;
        mpart_t *mp = &m->st[rows[i]];
        mb_mark_dirty(m, mp);
        mp->retry_at = now + RETRY_MS;
        expired |= rc.errs[i] == BATON_EXPIRED;
    }
    free(rc.first);
    free(rc.create);
    free(rc.suberr);
    free(rc.sub);
    free(rc.r);
    free(rc.made);
    free(rc.errs);
    return expired ? BATON_EXPIRED : BATON_OK;
}

/* Lets go of an unassigned resource: on_released if we owned it, and for
 * a create whose reply was lost, the claim it may have left. Its claim, if
 * any, is deleted by the caller (mb_claims_delete, all of a poll's
 * together). Returns BATON_OK, or the error of the look for a lost
 * create's claim (the row stays uncertain: look again). */
int mb_claim_let_go(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    if (mstate_assigned(mp->state))
        return BATON_OK; /* an assigned one is claimed by mb_claims_reconcile */
    if (mstate_owned(mp->state)) {
        mb_cb_released(m, row, BATON_RELEASE_REVOKED);
        /* Ours no more; the claim goes next. Unless the callback dropped
         * the row itself (a flush found a newer epoch: claim deleted). */
        if (mstate_owned(mp->state))
            mb_st_phase(m, row, MPHASE_CLAIMED, "revoked");
    }
    /* A create whose reply was lost may have left a claim of ours: find and
     * delete it, or it would block the next owner for as long as our
     * session lives. */
    if (mstate_uncertain(mp->state)) {
        int err = find_own_claim(m, row);
        if (err != BATON_OK)
            return err; /* still uncertain: look again */
        if (mp->claim[0])
            BLOG_INFO("event=orphan_claim %s claim=%s action=delete", mb_row_label(m, row),
                      baton_log_v(mp->claim));
    }
    return BATON_OK;
}
