/* member_state.h: the state of one resource (a partition or a named key) in
 * the member library (membership.c) and which transitions between states
 * are expected. Pure (no I/O, no membership): tests/unit/test_member_state.c
 * checks the table. membership.c changes a resource's state only through
 * its one setter (st_set), which logs every transition (event=member_state,
 * debug; not partition_state, which baton-worker logs for its own
 * partitions, often in the same log) and an unexpected one at warn.
 *
 * A state is two things the flags of mpart_t said before (assigned, claim
 * "" or not, owned, uncertain), in every combination that occurs:
 *
 *   assigned  claim  owned  uncertain   state
 *   no        no     no     no          idle
 *   no        no     no     yes         orphan_check   a lost create may have left a claim: find,
 * delete no        yes    no     -           releasing      our claim is to be deleted no yes yes
 * -           revoking       on_released(revoked), then delete yes       no     no     no wanted
 * create a claim yes       no     no     yes         looking        a lost create: find our claim
 * before creating yes       yes    no     -           queued         behind a predecessor, or
 * lowest and not acquired yet yes       yes    yes    -           owned          on_acquired
 * accepted; the epoch is the claim's czxid
 *
 * owned implies a claim; uncertain is only looked at without a claim (a
 * claim found ends it). So a state is a phase of our claim (none,
 * uncertain, claimed, owned) and whether the assignment gives us the
 * resource: mstate_make / mstate_phase / mstate_assigned.
 *
 * Kept out of the state, as fields of their own, because they are not
 * where the resource is in its life but what is scheduled or remembered
 * about it, in any state: dirty and retry_at (re-examine, not before),
 * claimed_ms (the handoff metric's start), czxid (the claim's epoch), and
 * promoted / promoted_gen (the assignment came from standing by, not from
 * the coordinator: it says why the resource is assigned, not whether). */
#ifndef BATON_MEMBER_STATE_H
#define BATON_MEMBER_STATE_H

/* What we hold of the resource's claims queue. */
typedef enum {
    MPHASE_NONE,      /* no claim */
    MPHASE_UNCERTAIN, /* a create's reply was lost: we may hold a claim */
    MPHASE_CLAIMED,   /* a claim, not acquired */
    MPHASE_OWNED,     /* the lowest claim, acquired */
} mphase_t;

typedef enum {
    MSTATE_IDLE,
    MSTATE_ORPHAN_CHECK,
    MSTATE_RELEASING,
    MSTATE_REVOKING,
    MSTATE_WANTED,
    MSTATE_LOOKING,
    MSTATE_QUEUED,
    MSTATE_OWNED,
    MSTATE_NSTATES
} mstate_t;

/* The state's name in logs ("idle", "orphan_check", ...); "unknown" for a
 * value out of range. */
const char *mstate_name(mstate_t s);

/* 1 if from -> to is a transition the membership makes, 0 if not (from ==
 * to included). Expected: a change of the phase alone (the claim's life:
 * none -> claimed -> owned, none <-> uncertain -> claimed, back to none
 * from any, owned -> claimed when on_acquired refuses or we leave), with
 * creating and acquiring only while assigned; a change of the assignment
 * alone, in any phase; and idle from any state (the session is gone).
 * Values out of range are never ok. */
int mstate_transition_ok(mstate_t from, mstate_t to);

/* The same for a member with standby.claim=ahead, which also creates a
 * claim while not assigned (idle -> releasing, or -> orphan_check when the
 * create's reply is lost): a standby's claim made ahead of time, queued
 * behind the owner's. Acquiring still needs the assignment. */
int mstate_transition_ok_ahead(mstate_t from, mstate_t to);

static inline mstate_t mstate_make(int assigned, mphase_t phase) {
    return (mstate_t)((assigned ? MSTATE_WANTED : MSTATE_IDLE) + (int)phase);
}
static inline mphase_t mstate_phase(mstate_t s) { return (mphase_t)((int)s % (int)MSTATE_WANTED); }
static inline int mstate_assigned(mstate_t s) { return s >= MSTATE_WANTED; }
/* on_acquired accepted it and on_released has not been told yet. */
static inline int mstate_owned(mstate_t s) { return mstate_phase(s) == MPHASE_OWNED; }
/* We hold a claim (its name is in mpart_t.claim). */
static inline int mstate_claimed(mstate_t s) { return mstate_phase(s) >= MPHASE_CLAIMED; }
/* A lost create: look for our claim before creating, or to delete it. */
static inline int mstate_uncertain(mstate_t s) { return mstate_phase(s) == MPHASE_UNCERTAIN; }

#endif
