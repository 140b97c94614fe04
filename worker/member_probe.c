/* member_probe.c: the member's liveness probe: it measures the silence of
 * the ZooKeeper server itself and suspends writes before the session could
 * have expired (baton_membership_can_write). The clock and its probe are
 * common/baton_silence.c (the coordinator's leadership uses them too): an
 * exists on our member node every T/6; writes stop once the send time of
 * the latest answered probe is 2/3 T old and resume only when a probe of
 * the same session is answered. */
#include "member_int.h"

#include "baton_log.h"

/* Owner thread: the server answered a request sent at t. */
void mb_probe_heard(baton_membership_t *m, int64_t t) { baton_silence_heard(m->hb, t); }

/* Owner thread: a fresh session was just established at or after t0. */
void mb_probe_reset(baton_membership_t *m, int64_t t0) { baton_silence_reset(m->hb, m->zk, t0); }

/* Owner thread: sends a probe when one is due, logs suspension and
 * resumption, and returns how soon it wants to run again. */
int mb_probe_tick(baton_membership_t *m) {
    int64_t silent;
    int next;
    int change = baton_silence_tick(m->hb, m->member_path, &silent, &next);
    if (change == BATON_SILENCE_BEGAN)
        BLOG_WARN("event=zk_silent session=0x%s silent_ms=%lld limit_ms=%lld timeout_ms=%d "
                  "action=suspend_writes",
                  m->session_hex, (long long)silent, (long long)baton_silence_limit_ms(m->hb),
                  baton_zk_session_timeout(m->zk));
    else if (change == BATON_SILENCE_ENDED)
        BLOG_INFO("event=zk_heard session=0x%s action=resume_writes", m->session_hex);
    return next;
}
