/* member_probe.c: the member's liveness probe: it measures the silence of
 * the ZooKeeper server itself and suspends writes before the session could
 * have expired (baton_membership_can_write). */
#include "member_int.h"

#include "baton_log.h"
#include "baton_util.h"

#include <stdatomic.h>

/* --- self-suspension --------------------------------------------------------
 * The server expires a session it has not heard from for the session
 * timeout T, and the C client only reports a disconnect after hearing
 * nothing for 2/3 T -- and our own thread may learn even that late (it may
 * have been paused, or busy in a slow sink write). So the member measures
 * silence itself: it sends a small asynchronous probe (an exists on its
 * member node) every T/6, and counts the server as heard at the *send* time
 * of the latest answered probe (the server renewed the session after that
 * moment, so the session lives until at least then + T). Writes stop once
 * that is 2/3 T old; they resume only when a probe of the same session is
 * answered; an expired session never answers one. Probing every T/6 keeps
 * the window between "suspended" and "possibly expired" at least T/6 wide
 * and replaces the client's own pings (it pings only an idle connection). */

int64_t mb_silence_limit_ms(const baton_membership_t *m) {
    return (int64_t)baton_zk_session_timeout(m->zk) * 2 / 3;
}

static int64_t probe_interval_ms(const baton_membership_t *m) {
    int64_t i = (int64_t)baton_zk_session_timeout(m->zk) / 6;
    return i < 20 ? 20 : i;
}

/* The server answered a request sent at t: heard_ms only rises, whichever
 * thread (owner or completion) stores. */
static void heard_max(heartbeat_t *hb, int64_t t) {
    int64_t cur = atomic_load(&hb->heard_ms);
    while (cur < t && !atomic_compare_exchange_weak(&hb->heard_ms, &cur, t)) {
    }
}

/* ZooKeeper's completion thread: only atomics and the event queue. */
static void probe_done(int rc, const struct Stat *st, const void *data) {
    (void)st;
    heartbeat_t *hb = (heartbeat_t *)data;
    if (rc == ZOK || rc == ZNONODE) {
        heard_max(hb, atomic_load(&hb->sent_ms));
        if (atomic_load(&hb->wake))
            baton_zk_watcher(NULL, PROBE_EVENT, 0, NULL, hb->zk);
    }
    atomic_store(&hb->inflight, 0);
}

/* Owner thread: the server answered a request sent at t. */
void mb_probe_heard(baton_membership_t *m, int64_t t) { heard_max(m->hb, t); }

/* Owner thread: a fresh session was just established at or after t0. */
void mb_probe_reset(baton_membership_t *m, int64_t t0) {
    heartbeat_t *hb = m->hb;
    hb->zk = m->zk;
    atomic_store(&hb->sent_ms, 0);
    atomic_store(&hb->heard_ms, t0);
    atomic_store(&hb->inflight, 0);
    atomic_store(&hb->wake, 0);
    m->silent = 0;
}

/* Owner thread: sends a probe when one is due, logs suspension and
 * resumption, and returns how soon it wants to run again. */
int mb_probe_tick(baton_membership_t *m) {
    heartbeat_t *hb = m->hb;
    int64_t now = baton_now_ms(), interval = probe_interval_ms(m);
    /* Silence first, then the next probe: measured after sending, a probe
     * answered before this thread looks again (it may be preempted right
     * after the send) would hide a stall it just woke from. */
    int64_t silent = now - atomic_load(&hb->heard_ms), limit = mb_silence_limit_ms(m);
    if (silent >= limit && !m->silent) {
        m->silent = 1;
        atomic_store(&hb->wake, 1);
        BLOG_WARN("event=zk_silent session=0x%s silent_ms=%lld limit_ms=%lld timeout_ms=%d "
                  "action=suspend_writes",
                  m->session_hex, (long long)silent, (long long)limit,
                  baton_zk_session_timeout(m->zk));
    } else if (silent < limit && m->silent) {
        m->silent = 0;
        atomic_store(&hb->wake, 0);
        BLOG_INFO("event=zk_heard session=0x%s action=resume_writes", m->session_hex);
    }
    if (baton_zk_connected(m->zk) && !atomic_load(&hb->inflight) &&
        now - atomic_load(&hb->sent_ms) >= interval) {
        atomic_store(&hb->sent_ms, now);
        atomic_store(&hb->inflight, 1);
        if (zoo_aexists(baton_zk_handle(m->zk), m->member_path, 0, probe_done, hb) != ZOK)
            atomic_store(&hb->inflight, 0);
    }
    int64_t next =
        atomic_load(&hb->inflight) ? interval : atomic_load(&hb->sent_ms) + interval - now;
    if (!m->silent && limit - silent < next)
        next = limit - silent;
    return next < 0 ? 0 : next > 1000 ? 1000 : (int)next;
}
