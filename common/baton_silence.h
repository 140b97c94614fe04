/* baton_silence.h: the session-silence clock, shared by the worker's
 * self-suspension (worker/member_probe.c) and the coordinator's leadership
 * (coordinator.c).
 *
 * The server expires a session it has not heard from for the session
 * timeout T, and the C client only reports a disconnect after hearing
 * nothing for 2/3 T -- and the owner thread may learn even that late (it may
 * have been paused, or blocked in a slow call). So the owner measures
 * silence itself: it sends a small asynchronous probe (an exists on a node
 * of its own) every T/6, and counts the server as heard at the *send* time
 * of the latest answered probe, or of any other request of the session
 * the server answered (baton_zk_answered_ms: a coordinator's long
 * rebalance sends no probe but many requests) -- the server renewed the
 * session after that moment, so it lives until at least then + T. Once that is
 * 2/3 T old the owner is silent: a worker stops writing, a coordinator stops
 * leading. It is heard again only when a probe of the same session is
 * answered; an expired session never answers one. Probing every T/6 keeps
 * the window between "silent" and "possibly expired" at least T/6 wide and
 * replaces the client's own pings (it pings only an idle connection).
 *
 * The clock is heap-allocated and shared with ZooKeeper's completion
 * thread, which only stores into its atomics and queues
 * BATON_SILENCE_EVENT; free it only after the handle is closed
 * (baton_zk_destroy joins the completion thread). Everything else is
 * called from the owner thread. */
#ifndef BATON_SILENCE_H
#define BATON_SILENCE_H

#include "baton_zk.h"

#include <stdint.h>

/* An event type ZooKeeper never uses: a probe answered while silent, queued
 * on the session's event queue so the owner's poll wakes and resumes at
 * once. Owners skip it when they drain events. */
#define BATON_SILENCE_EVENT 0x6272

typedef struct baton_silence_s baton_silence_t;

baton_silence_t *baton_silence_new(void);
/* Frees the clock: only after its session's handle is destroyed. */
void baton_silence_free(baton_silence_t *s);

/* A fresh session zk was established at or after t0 (ms, baton_now_ms):
 * heard at t0, not silent, no probe in flight. */
void baton_silence_reset(baton_silence_t *s, baton_zk_t *zk, int64_t t0);
/* The server answered a request sent at t: heard_ms only rises. */
void baton_silence_heard(baton_silence_t *s, int64_t t);
/* The session reconnected: probe at the next tick. */
void baton_silence_reconnected(baton_silence_t *s);

/* 2/3 of the session timeout; and how long since the server was heard. */
int64_t baton_silence_limit_ms(const baton_silence_t *s);
int64_t baton_silence_ms(const baton_silence_t *s, int64_t now);
/* Heard within the limit, computed now (not at the last tick): a thread
 * that was paused must not act on what it heard before the pause. */
int baton_silence_heard_recently(const baton_silence_t *s);
/* Silent as of the last tick. */
int baton_silence_silent(const baton_silence_t *s);

/* Sends a probe (an exists on probe_path) when one is due, none is in
 * flight and the session is connected. Owner thread, also from inside a
 * call's wait (baton_zk_set_wait_hook): the answers the call itself gets
 * may be noted only when it ends (a batch notes its answers at its end,
 * stamped with its start), and a long call on a busy but healthy server
 * must not read as silence. */
void baton_silence_probe(baton_silence_t *s, const char *probe_path);

/* What a tick changed. */
enum { BATON_SILENCE_SAME = 0, BATON_SILENCE_BEGAN = 1, BATON_SILENCE_ENDED = 2 };
/* Owner thread, every loop: notes a silence beginning or ending (returned,
 * with the silence so far in *silent_ms), sends a probe (an exists on
 * probe_path) when one is due and the session is connected, and sets
 * *next_ms to how soon it wants to run again (0..1000). */
int baton_silence_tick(baton_silence_t *s, const char *probe_path, int64_t *silent_ms,
                       int *next_ms);

#endif
