/* baton_silence.c: the session-silence clock (see baton_silence.h). */
#include "baton_silence.h"

#include "baton_util.h"

#include <stdatomic.h>
#include <stdlib.h>

struct baton_silence_s {
    _Atomic int64_t sent_ms;  /* when the probe in flight was sent */
    _Atomic int64_t heard_ms; /* send time of the latest answered probe */
    _Atomic int inflight;     /* a probe is outstanding */
    _Atomic int wake;         /* queue a BATON_SILENCE_EVENT when one is answered */
    baton_zk_t *zk;           /* the session probed; its queue gets the event */
    int silent;               /* owner thread: silent as of the last tick */
};

baton_silence_t *baton_silence_new(void) { return xcalloc(1, sizeof(baton_silence_t)); }

void baton_silence_free(baton_silence_t *s) { free(s); }

int64_t baton_silence_limit_ms(const baton_silence_t *s) {
    return s->zk ? (int64_t)baton_zk_session_timeout(s->zk) * 2 / 3 : 0;
}

static int64_t probe_interval_ms(const baton_silence_t *s) {
    int64_t i = s->zk ? (int64_t)baton_zk_session_timeout(s->zk) / 6 : 0;
    return i < 20 ? 20 : i;
}

/* heard_ms only rises, whichever thread (owner or completion) stores. */
static void heard_max(baton_silence_t *s, int64_t t) {
    int64_t cur = atomic_load(&s->heard_ms);
    while (cur < t && !atomic_compare_exchange_weak(&s->heard_ms, &cur, t)) {
    }
}

/* ZooKeeper's completion thread: only atomics and the event queue. */
static void probe_done(int rc, const struct Stat *st, const void *data) {
    (void)st;
    baton_silence_t *s = (baton_silence_t *)data;
    if (rc == ZOK || rc == ZNONODE) {
        heard_max(s, atomic_load(&s->sent_ms));
        if (atomic_load(&s->wake))
            baton_zk_watcher(NULL, BATON_SILENCE_EVENT, 0, NULL, s->zk);
    }
    atomic_store(&s->inflight, 0);
}

void baton_silence_heard(baton_silence_t *s, int64_t t) { heard_max(s, t); }

void baton_silence_reset(baton_silence_t *s, baton_zk_t *zk, int64_t t0) {
    s->zk = zk;
    atomic_store(&s->sent_ms, 0);
    atomic_store(&s->heard_ms, t0);
    atomic_store(&s->inflight, 0);
    atomic_store(&s->wake, 0);
    s->silent = 0;
}

void baton_silence_reconnected(baton_silence_t *s) { atomic_store(&s->sent_ms, 0); }

/* Heard: the latest answered probe's send time, or any other request's
 * the session's owner made since (a long rebalance makes many, and sends
 * no probe meanwhile). */
int64_t baton_silence_ms(const baton_silence_t *s, int64_t now) {
    int64_t h = atomic_load(&s->heard_ms), a = s->zk ? baton_zk_answered_ms(s->zk) : 0;
    return now - (a > h ? a : h);
}

int baton_silence_heard_recently(const baton_silence_t *s) {
    return baton_silence_ms(s, baton_now_ms()) < baton_silence_limit_ms(s);
}

int baton_silence_silent(const baton_silence_t *s) { return s->silent; }

void baton_silence_probe(baton_silence_t *s, const char *probe_path) {
    int64_t now = baton_now_ms();
    if (s->zk && baton_zk_connected(s->zk) && !atomic_load(&s->inflight) &&
        now - atomic_load(&s->sent_ms) >= probe_interval_ms(s)) {
        atomic_store(&s->sent_ms, now);
        atomic_store(&s->inflight, 1);
        if (zoo_aexists(baton_zk_handle(s->zk), probe_path, 0, probe_done, s) != ZOK)
            atomic_store(&s->inflight, 0);
    }
}

int baton_silence_tick(baton_silence_t *s, const char *probe_path, int64_t *silent_ms,
                       int *next_ms) {
    int64_t now = baton_now_ms(), interval = probe_interval_ms(s);
    int change = BATON_SILENCE_SAME;
    /* Silence first, then the next probe: measured after sending, a probe
     * answered before this thread looks again (it may be preempted right
     * after the send) would hide a stall it just woke from. */
    int64_t silent = baton_silence_ms(s, now), limit = baton_silence_limit_ms(s);
    if (silent >= limit && !s->silent) {
        s->silent = 1;
        atomic_store(&s->wake, 1);
        change = BATON_SILENCE_BEGAN;
    } else if (silent < limit && s->silent) {
        s->silent = 0;
        atomic_store(&s->wake, 0);
        change = BATON_SILENCE_ENDED;
    }
    *silent_ms = silent;
    baton_silence_probe(s, probe_path);
    int64_t next = atomic_load(&s->inflight) ? interval : atomic_load(&s->sent_ms) + interval - now;
    if (!s->silent && limit - silent < next)
        next = limit - silent;
    *next_ms = next < 0 ? 0 : next > 1000 ? 1000 : (int)next;
    return change;
}
