/* member_int.h: the member library's internals, shared by membership.c
 * (the entry points) and the member_*.c files beside it, one per job. Not
 * installed; every name here is hidden in libbaton.so (mb_ prefixed: the
 * static archive exposes them to the programs that link it). */
#ifndef BATON_WORKER_MEMBER_INT_H
#define BATON_WORKER_MEMBER_INT_H

#include "membership.h"

#include "baton_codec.h"
#include "baton_incarnation.h"
#include "baton_member_int.h"
#include "baton_resource.h"
#include "baton_silence.h"
#include "baton_zk.h"
#include "member_state.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define RETRY_MS 200
/* A graceful leave waits at most this long for the coordinator to name
 * its successors before it releases its claims anyway. */
#define LEAVE_WAIT_MS 2000
/* Claim creates or deletes per multi (well under jute.maxbuffer). */
#define CLAIM_MULTI_MAX 500
/* New claims created one by one, pipelined with their queue checks, so a
 * handoff's claim costs one round trip; more than this go in a multi. */
#define CLAIM_PIPELINE_MAX 16
/* The own watches of claims owned in bulk wait this many times the round
 * trip that owned them, and at most OWN_WATCH_LATER_MAX_MS
 * (mb_own_watches_send). */
#define OWN_WATCH_LATER_RTTS 4
#define OWN_WATCH_LATER_MAX_MS 5000

/* One resource's state. Where it is in its life is `state` (member_state.h:
 * assigned or not, and what we hold of its claims queue), changed only by
 * mb_st_set; the other fields are what is scheduled or remembered about it in
 * any state (member_state.h says why they stay apart). */
typedef struct {
    mstate_t state;
    char claim[64];     /* our claim's node name: "" unless mstate_claimed(state) */
    int64_t czxid;      /* our claim's creation zxid: the epoch once it owns */
    int dirty;          /* re-examine this resource */
    int listed;         /* its row is in m->dirty_rows */
    int inbusy;         /* its row is in m->busy_rows */
    int64_t retry_at;   /* don't re-examine before this (backoff after errors) */
    int64_t claimed_ms; /* when we created the claim (handoff metric); 0: unknown */
    /* Taken as a standby (mb_standby_promote) before the coordinator named us:
     * assigned until an assignment newer than promoted_gen decides. */
    int promoted;
    int64_t promoted_gen;
    /* standby.claim=ahead: we stand by for this resource (mb_standby_update),
     * so while not assigned it keeps a claim queued behind its owner's. A
     * claim of ours that found itself lowest without a promotion yielded
     * (deleted; ahead_yield): none is made again before ahead_at, or the
     * next assignment read. ahead_tries doubles the back-off. */
    int ahead;
    int ahead_tries;
    int64_t ahead_at;
    /* Waiting behind exactly one claim, whose watch is set: pred_seq is
     * its sequence, pred_for our claim's sequence + 1 when that was seen
     * (0: nothing known; it speaks for that claim of ours only). No claim
     * below ours is ever made again (ZooKeeper's sequence only grows), so
     * that claim's deletion (pred_gone) makes ours lowest: the queue check
     * needs no read then, and none while it stays (mb_claim_news). */
    int64_t pred_seq, pred_for;
    int pred_gone;
    /* The sequence + 1 of the claim a release notice took as deleted
     * (mb_claim_noticed; 0: none): its deletion's event, when it comes, is
     * old news. */
    int64_t noticed_seq1;
} mpart_t;

/* What we stand by for (assignment "standby"): owner's resources, which we
 * take the moment its member node is marked leaving or deleted. */
typedef struct {
    char *owner;
    size_t *rows; /* rows of m->res */
    size_t n;
    int armed;  /* a watch is set on workers/<owner> */
    int fired;  /* the owner's node changed or went: take rows (mb_standby_promote) */
    int verify; /* we took rows: the next watch also asks whether the owner lives */
    /* We took rows on a release notice (no read then, MB_FIRED_NOTICE):
     * the owner's next event (its mark applied, or its node gone) arms
     * the verify read. */
    int verify_due;
    int alive; /* the owner is live and not leaving (a new incarnation): give
                * back what we took from it that no newer assignment gave us */
} mstandby_t;

/* A subscriber of our release notices (member_notice.c): a standby, by
 * id, at the address its SUB came from. watched: an exists watch on its
 * member node is set in this session; checking: its node's deletion was
 * seen and is being confirmed (forgotten if the node is still gone).
 * What it holds of ours (HLD): rows[0..nrows), sorted, unique (none: it
 * holds nothing), or, rows NULL, all (its SUB alone, as from a standby
 * older than HLD). */
typedef struct {
    char id[BATON_ID_MAX + 1];
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int64_t heard_ms;
    int watched;
    int checking;
    size_t *rows;
    size_t nrows;
    int hld_seen; /* it sent an HLD since it took this slot: a SUB keeps its rows */
} msub_t;

/* standby.notice (member_notice.c). fd < 0: off. */
typedef struct {
    int fd;             /* the datagram socket */
    int epfd;           /* baton_membership_fd: the socket and the session's descriptor */
    int ep_zkfd;        /* the session's descriptor as registered in epfd, -1 none */
    int64_t ep_session; /* the session it was registered for */
    char *buf;          /* a datagram (65,536 bytes) */
    char addr[64];      /* the bound address, advertised in our member node */
    msub_t *subs;       /* who stands by for us and subscribed */
    size_t nsubs;
    int left;  /* our leave told every owner we stand by for (mb_notice_unsubscribe) */
    int holds; /* baton_membership_ext_t.notice_holds */
} mnotice_t;

/* mstandby_t.fired: taken on a release notice (mb_standby_noticed): a
 * promotion that reads nothing, since the mark it follows may not be
 * applied yet (the mark's own event or the node's deletion reads later). */
#define MB_FIRED_NOTICE 100

/* A claim whose own watch waits (mb_own_watches_send). */
typedef struct {
    size_t row;
    int64_t czxid;
} mlater_t;

struct baton_membership_s {
    baton_membership_conf_t conf;
    baton_membership_cbs_t cbs;
    /* Every resource we heard of (partitions, then keys) and its state:
     * m->st[row], stcap >= res.n. */
    baton_res_table_t res;
    mpart_t *st;
    size_t stcap;
    char label[BATON_RES_LABEL_SIZE]; /* mb_row_label's buffer */
    int next_ms;                      /* what the last poll asked for */
    int64_t rejoin_at;                /* no session (it expired): next attempt to rejoin */
    baton_zk_t *zk;
    char *base;
    char *member_path;
    char session_hex[17];
    int64_t session; /* the session id session_hex spells (our claims carry it) */
    baton_config_t config;
    int assignment_dirty;
    int64_t generation;
    int all_dirty;
    /* The rows marked dirty (mb_mark_dirty), each listed once: a poll
     * visits these, not every row (at 100,000 partitions, three passes
     * over 12 MB per poll per member were a third of a cold start's CPU).
     * A row looked at and no longer dirty stays listed until soon_of
     * drops it. */
    size_t *dirty_rows;
    size_t ndirty, dirtycap;
    /* Every row not MSTATE_IDLE (mb_st_set lists it), each listed once: a
     * member holds ~100 of 100,000 partitions, and what looks at every
     * resource we hold (an assignment read, a reconnection) looks here.
     * A row gone idle stays listed until mb_busy_compact drops it. */
    size_t *busy_rows;
    size_t nbusy, busycap;
    int disconnected;    /* we saw the connection drop and have not heard back */
    int member_dirty;    /* look at workers/<id> again (and re-arm its watch) */
    int evicted;         /* our member node went while our session lived: fatal */
    baton_silence_t *hb; /* liveness probe (member_probe.c) */
    /* Newly assigned resources not yet told to on_assigned (mb_assigned_flush):
     * told while their claims are in flight. */
    size_t *added; /* rows */
    size_t nadded, addedcap;
    mstandby_t *standby; /* sorted by owner */
    size_t nstandby;
    uint64_t standby_version;    /* bumped whenever the standby list is replaced or cleared */
    baton_zk_auth_t *auth;       /* ZooKeeper identity (copy), or NULL */
    baton_log_sink_t *log;       /* log sink (copy; set by every entry point), or NULL */
    baton_membership_ext_t keep; /* its keep and keep_free only */
    baton_incarnation_t inc;     /* the member lock; inc.fd < 0: none */
    int member_wait_ms;          /* ext->member_wait_ms */
    baton_zk_wait_hook_fn hook;  /* baton_membership__set_wait_hook, set on every session */
    void *hook_arg;
    int claim_ahead; /* ext->claim_ahead: standby.claim=ahead */
    /* Own watches held back (mb_own_watches_send): claims a multi made
     * first in their directories, owned on one read, each with the czxid
     * it was owned at; sent once later_at has passed. */
    mlater_t *later;
    size_t nlater, latercap;
    int64_t later_at;
    mnotice_t notice; /* standby.notice */
};

/* A watch's path and handle, for its completion (own_watch_done,
 * standby_watch_done). */
typedef struct {
    baton_zk_t *zk;
    char path[];
} own_watch_t;

/* A probe answered while we were silent (baton_silence.h). */
#define PROBE_EVENT BATON_SILENCE_EVENT

void mb_dirty_list(baton_membership_t *m, size_t row);

/* Marks a row to be looked at again by the next poll. */
static inline void mb_mark_dirty(baton_membership_t *m, mpart_t *mp) {
    mp->dirty = 1;
    if (!mp->listed)
        mb_dirty_list(m, (size_t)(mp - m->st));
}

/* standby.claim=ahead: whether row, not assigned, keeps a claim queued
 * behind its owner's (one it holds), or makes one now (not before ahead_at;
 * member_standby.c, "claims ahead"). */
static inline int mb_want_ahead(const baton_membership_t *m, const mpart_t *mp, int64_t now) {
    return m->claim_ahead && mp->ahead && !mstate_assigned(mp->state) && !mstate_owned(mp->state) &&
           (mp->claim[0] || now >= mp->ahead_at);
}

/* membership.c */
char *mb_member_body(const baton_membership_t *m, int leaving);

/* member_resources.c */
const char *mb_row_label(baton_membership_t *m, size_t row);
void mb_st_set(baton_membership_t *m, size_t row, mstate_t to, const char *why);
void mb_busy_list(baton_membership_t *m, size_t row);
void mb_busy_compact(baton_membership_t *m);
void mb_st_phase(baton_membership_t *m, size_t row, mphase_t phase, const char *why);
void mb_st_assign(baton_membership_t *m, size_t row, int assigned, const char *why);
size_t mb_key_row(baton_membership_t *m, const char *name);
int mb_cb_acquired(baton_membership_t *m, size_t row, int64_t epoch);
void mb_cb_released(baton_membership_t *m, size_t row, baton_release_reason_t why);
int mb_grow_parts(baton_membership_t *m, int32_t nparts);

/* member_probe.c */
void mb_probe_heard(baton_membership_t *m, int64_t t);
void mb_probe_reset(baton_membership_t *m, int64_t t0);
int mb_probe_tick(baton_membership_t *m);

/* member_assign.c */
void mb_assigned_note(baton_membership_t *m, size_t row);
void mb_assigned_flush(baton_membership_t *m);
int mb_read_assignment(baton_membership_t *m);

/* member_claims.c */
int mb_delete_claim(baton_membership_t *m, size_t row, const char *why);
void mb_drop_row(baton_membership_t *m, size_t row);
int mb_claims_reconcile(baton_membership_t *m, const size_t *rows, int32_t n);
void mb_claims_delete(baton_membership_t *m, const size_t *rows, size_t n, const char *why);
int mb_claim_let_go(baton_membership_t *m, size_t row);
void mb_claim_news(baton_membership_t *m, size_t row, const char *path, int type);
void mb_claims_settle_known(baton_membership_t *m);
/* Whether a claim of ours was just freed by its predecessor's deletion
 * while another of ours still waits behind a known claim: the rest of the
 * same multi may be on its way (baton_membership_poll waits for it). */
int mb_claims_more_coming(const baton_membership_t *m);
void mb_own_watches_send(baton_membership_t *m);
int mb_claim_noticed(baton_membership_t *m, size_t row, int64_t seq);

/* member_standby.c */
int mb_watch_send(baton_membership_t *m, const char *path, stat_completion_t done);
/* The answer (rc, value) to a read that set the watch on the member node
 * at path of an owner we stand by for, on ZooKeeper's completion thread:
 * the node gone is queued as its deletion, a leave mark already in it as
 * the mark's event (the watch was set after the mark: its event never
 * comes, and the coordinator, counting on us, holds its rebalance), for
 * the next poll to act on. Queues, nothing else. */
void mb_standby_armed(int rc, const char *value, int len, const char *path, baton_zk_t *zk);
void mb_standby_clear(baton_membership_t *m);
void mb_standby_update(baton_membership_t *m, const baton_worker_assignment_t *wa);
void mb_standby_arm(baton_membership_t *m);
void mb_standby_note(baton_membership_t *m, const char *id, int type);
void mb_standby_promote(baton_membership_t *m);
void mb_ahead_lowest(baton_membership_t *m, size_t row);
void mb_ahead_after_release(baton_membership_t *m, size_t row);
int mb_standby_noticed(baton_membership_t *m, const char *owner, size_t row, int64_t seq);
/* A graceful leaver that stands by for others tells each such owner to
 * forget it as a subscriber (UNS): one read of each owner's member node
 * for its address, best effort. */
void mb_notice_unsubscribe(baton_membership_t *m);
void mb_notice_member_event(baton_membership_t *m, const char *id, int type);
void mb_notice_session_reset(baton_membership_t *m);

/* member_notice.c */
int mb_notice_open(baton_membership_t *m, const char *spec, char *errstr, size_t n);
void mb_notice_close(baton_membership_t *m);
int mb_notice_fd(baton_membership_t *m);
/* Sets the data watch on the member node at path of the owner e stands by
 * for, and subscribes us to its notices (SUB, then HLD: what of e we hold
 * ahead), without waiting. Returns ZOK, or the client's error. */
int mb_notice_watch_send(baton_membership_t *m, const mstandby_t *e, const char *path);
/* What we stand by for of e's owner changed (a new assignment, the owner
 * kept): it is told again (SUB and HLD, one read without a watch), so
 * that its leave hands over exactly what we hold. Best effort, without
 * waiting; only with notice_holds (without, our HLD is empty whatever
 * the list). Returns 0 if nothing could be sent (the caller arms the
 * owner's watch again, which subscribes anew), else 1. */
int mb_notice_holds_changed(baton_membership_t *m, const mstandby_t *e);
/* We no longer stand by for owner (a new assignment dropped it from our
 * standby list): it is told to forget us as a subscriber (UNS), so that it
 * writes its own tail at its leave rather than hand it over to us, who no
 * longer hold it. One read of its member node for its address, without
 * waiting; best effort (a lost UNS leaves a handover that a cold successor
 * reads again from Kafka). */
void mb_notice_unsubscribe_owner(baton_membership_t *m, const char *owner);
void mb_notice_release(baton_membership_t *m, const size_t *rows, size_t n);
void mb_notice_drain(baton_membership_t *m);
/* One datagram of len bytes from `from`, in buf (buf[len] is a NUL, and
 * the handling writes NULs into it): what mb_notice_drain does with each
 * one it reads. A NUL inside makes it malformed. Exposed for
 * tests/fuzz/fuzz_notice.c: its bytes come from anyone on the network. */
void mb_notice_feed(baton_membership_t *m, char *buf, size_t len,
                    const struct sockaddr_storage *from, socklen_t fromlen);

/* member_leave.c */
void mb_leave(baton_membership_t *m);

#endif
