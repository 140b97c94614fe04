/* member_leave.c: the graceful leave: mark our member node leaving, let go
 * of everything, delete our claims together, wait (briefly) for the
 * coordinator to name our successors, then remove our member node. */
#include "member_int.h"

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_layout.h"
#include "baton_log.h"
#include "baton_util.h"
#include "baton_zkbatch.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

/* Whether the assignment still gives us anything. */
static int assigned_any(baton_membership_t *m) {
    for (size_t row = 0; row < m->res.n; row++)
        if (mstate_assigned(m->st[row].state))
            return 1;
    return 0;
}

/* During a graceful leave: waits until the assignment without our
 * resources arrives (the coordinator rebalances at once on our mark and
 * names our successors, who queue their claims behind ours), at most
 * LEAVE_WAIT_MS: without a coordinator the wait simply expires. */
static void leave_wait(baton_membership_t *m) {
    int64_t t0 = baton_now_ms(), deadline = t0 + LEAVE_WAIT_MS;
    int again = 1; /* read once: the watch may have fired before we looked */
    while (assigned_any(m)) {
        if (again) {
            again = 0;
            if (mb_read_assignment(m) != BATON_OK)
                again = 1;
            if (!assigned_any(m))
                break;
        }
        int64_t left = deadline - baton_now_ms();
        if (left <= 0 || baton_zk_expired(m->zk)) {
            BLOG_INFO("event=leave_wait_expired waited_ms=%lld", (long long)(baton_now_ms() - t0));
            return;
        }
        struct pollfd pfd = {.fd = baton_zk_fd(m->zk), .events = POLLIN};
        poll(&pfd, 1, (int)(again && left > RETRY_MS ? RETRY_MS : left));
        baton_zk_event_t ev;
        while (baton_zk_next_event(m->zk, &ev)) {
            if (ev.type == ZOO_SESSION_EVENT && ev.state == ZOO_CONNECTED_STATE)
                again = 1; /* the watch may have been lost while disconnected */
            else if (ev.type != ZOO_SESSION_EVENT && ev.type != PROBE_EVENT && ev.path &&
                     strstr(ev.path, "/assignment/"))
                again = 1;
            baton_zk_event_release(&ev);
        }
    }
    BLOG_INFO("event=leave_reassigned waited_ms=%lld", (long long)(baton_now_ms() - t0));
}

/* Deletes every claim we hold, in as few multis as possible (one round
 * trip; the successors waiting behind them are woken together). A failed
 * multi (a claim already gone, a lost connection) falls back to one delete
 * per claim. */
static void claims_delete_all(baton_membership_t *m) {
    size_t total = m->res.n;
    size_t *rows = xmalloc(sizeof(size_t) * (total + 1));
    for (size_t start = 0; start < total;) {
        int32_t n = 0;
        for (; start < total && n < CLAIM_MULTI_MAX; start++)
            if (m->st[start].claim[0])
                rows[n++] = start;
        if (n == 0)
            break;
        zoo_op_t *ops = xcalloc((size_t)n, sizeof(*ops));
        zoo_op_result_t *res = xcalloc((size_t)n, sizeof(*res));
        char **paths = xcalloc((size_t)n, sizeof(char *));
        for (int32_t i = 0; i < n; i++) {
            const char *dir = baton_res_claims(&m->res, rows[i]);
            paths[i] = baton_layout_child(dir, m->st[rows[i]].claim);
            zoo_delete_op_init(&ops[i], paths[i], -1);
        }
        int rc = n > 1 ? baton_zk_multi(m->zk, n, ops, res) : ZAPIERROR;
        for (int32_t i = 0; i < n; i++) {
            mpart_t *mp = &m->st[rows[i]];
            if (rc == ZOK) {
                BLOG_INFO("event=released %s epoch=%lld", mb_row_label(m, rows[i]),
                          (long long)mp->czxid);
                mp->claim[0] = 0;
                mp->czxid = 0;
                mb_st_phase(m, rows[i], MPHASE_NONE, "left");
            } else {
                mb_delete_claim(m, rows[i], "left");
            }
            free(paths[i]);
        }
        free(paths);
        free(res);
        free(ops);
    }
    free(rows);
}

void mb_leave(baton_membership_t *m) {
    if (!m->zk)
        return;
    /* Say we are leaving before releasing anything, so the coordinator can
     * tell this departure (history reason "leave") from a crash, and
     * reassigns our resources at once (we count as drained). Sent without
     * waiting for the answer: ZooKeeper applies a session's requests in
     * order, so the mark lands before the claim deletes sent after it, and
     * the flush below runs during its round trip (one round trip less
     * before our claims go). */
    char *data = mb_member_body(m, 1);
    baton_zkbatch_t *mark = baton_zkbatch_new(m->zk, 1);
    baton_zkbatch_add_set(mark, 0, m->member_path, data, strlen(data), -1);
    free(data); /* serialised into the request by zoo_aset */
    /* Stop using everything (the application flushes in on_released) while
     * the coordinator reacts to the mark, then delete the claims at once:
     * we write nothing more, and our successors, named by the coordinator
     * meanwhile, find the way clear instead of waiting for our next round
     * trip (the graceful handoff's critical path). Nobody else claims a
     * resource before the coordinator assigns it elsewhere. */
    int owned_any = 0;
    for (size_t row = 0; row < m->res.n; row++) {
        mpart_t *mp = &m->st[row];
        if (mstate_owned(mp->state)) {
            mb_cb_released(m, row, BATON_RELEASE_LEAVE);
            mb_st_phase(m, row, MPHASE_CLAIMED, "leaving");
            owned_any = 1;
        }
    }
    if (owned_any)
        BATON_FAILPOINT("worker.before_release");
    claims_delete_all(m);
    /* Answered by now (before the deletes' answers) unless the connection
     * went. */
    int serr = BATON_CONNECTION;
    if (baton_zkbatch_wait(mark, baton_zk_session_timeout(m->zk) + 1000)) {
        serr = baton_zkbatch_slot(mark, 0)->err;
        baton_zkbatch_free(mark);
    } /* else its completion frees it */
    if (serr != BATON_OK)
        BLOG_WARN("event=leave_mark_failed member=%s error=%s", m->member_path,
                  baton_err_name(serr));
    /* The member node goes only once the coordinator has acted on the mark,
     * so it records this departure as a leave, not a crash. */
    if (serr == BATON_OK && baton_zk_connected(m->zk))
        leave_wait(m);
    baton_zk_delete(m->zk, m->member_path, -1);
    BLOG_INFO("event=left member=%s", m->member_path);
}
