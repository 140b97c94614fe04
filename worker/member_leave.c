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
            if (mstate_owned(mp->state)) /* unless the callback dropped it */
                mb_st_phase(m, row, MPHASE_CLAIMED, "leaving");
            owned_any = 1;
        }
    }
    if (owned_any)
        BATON_FAILPOINT("worker.before_release");
    /* Every claim we hold, together (one round trip: the successors
     * waiting behind them are woken together). */
    size_t *rows = xmalloc(sizeof(size_t) * (m->res.n + 1));
    size_t n = 0;
    for (size_t row = 0; row < m->res.n; row++)
        if (m->st[row].claim[0])
            rows[n++] = row;
    /* standby.notice: released (flushed or handed over), we write nothing
     * more; our standbys hear it
     * now rather than from ZooKeeper once the multi below commits
     * (member_notice.c). */
    mb_notice_release(m, rows, n);
    if (owned_any && m->notice.fd >= 0)
        BATON_FAILPOINT("worker.after_notice");
    mb_claims_delete(m, rows, n, "left");
    free(rows);
    /* Answered by now (before the deletes' answers) unless the connection
     * went. */
    int serr = BATON_CONNECTION;
    if (baton_zkbatch_wait(mark, baton_zk_session_timeout(m->zk) + 1000)) {
        serr = baton_zkbatch_slot(mark, 0)->err;
        baton_zkbatch_free(mark);
    } /* else its completion frees it */
    if (serr != BATON_OK)
        BLOG_WARN("event=leave_mark_failed member=%s error=%s", baton_log_v(m->member_path),
                  baton_err_name(serr));
    /* The member node goes only once the coordinator has acted on the mark,
     * so it records this departure as a leave, not a crash. Before that,
     * standby.notice: the owners we stood by for forget us as a subscriber
     * (one read of their member nodes, off the handoff's path: our claims
     * are gone), so one left alone writes its own tail when it leaves
     * (worker.c). */
    if (serr == BATON_OK && baton_zk_connected(m->zk)) {
        mb_notice_unsubscribe(m);
        leave_wait(m);
    }
    baton_zk_delete(m->zk, m->member_path, -1);
    BLOG_INFO("event=left member=%s", baton_log_v(m->member_path));
}
