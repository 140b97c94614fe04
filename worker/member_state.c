/* member_state.c: the member library's resource states' names and the
 * table of expected transitions (member_state.h). */
#include "member_state.h"

#include <stddef.h>

static const char *const names[MSTATE_NSTATES] = {
    [MSTATE_IDLE] = "idle",           [MSTATE_ORPHAN_CHECK] = "orphan_check",
    [MSTATE_RELEASING] = "releasing", [MSTATE_REVOKING] = "revoking",
    [MSTATE_WANTED] = "wanted",       [MSTATE_LOOKING] = "looking",
    [MSTATE_QUEUED] = "queued",       [MSTATE_OWNED] = "owned",
};

/* ok[from] is the set of phases `from` may go to, one bit per phase, for
 * a change of the phase alone. */
#define TO(p) (1u << (p))
static const unsigned phase_ok[] = {
    /* a create (or a claim found) ; its reply lost */
    [MPHASE_NONE] = TO(MPHASE_CLAIMED) | TO(MPHASE_UNCERTAIN),
    /* our claim found; or none found */
    [MPHASE_UNCERTAIN] = TO(MPHASE_CLAIMED) | TO(MPHASE_NONE),
    /* lowest and on_acquired accepted; deleted, lost, dropped */
    [MPHASE_CLAIMED] = TO(MPHASE_OWNED) | TO(MPHASE_NONE),
    /* on_acquired refused, or a leave let it go; deleted, lost, dropped */
    [MPHASE_OWNED] = TO(MPHASE_CLAIMED) | TO(MPHASE_NONE),
};

const char *mstate_name(mstate_t s) { return (unsigned)s < MSTATE_NSTATES ? names[s] : "unknown"; }

int mstate_transition_ok(mstate_t from, mstate_t to) {
    if ((unsigned)from >= MSTATE_NSTATES || (unsigned)to >= MSTATE_NSTATES || from == to)
        return 0;
    if (to == MSTATE_IDLE)
        return 1; /* the session is gone (or the state was idle-bound anyway) */
    mphase_t pf = mstate_phase(from), pt = mstate_phase(to);
    int af = mstate_assigned(from), at = mstate_assigned(to);
    if (pf == pt)
        return 1; /* the assignment alone */
    if (af != at)
        return 0; /* both at once: never made */
    if (!at && (pt == MPHASE_OWNED || (pf == MPHASE_NONE)))
        return 0; /* creating and acquiring only while assigned */
    return (phase_ok[pf] & TO(pt)) != 0;
}

int mstate_transition_ok_ahead(mstate_t from, mstate_t to) {
    if (mstate_transition_ok(from, to))
        return 1;
    return from == MSTATE_IDLE && (to == MSTATE_RELEASING || to == MSTATE_ORPHAN_CHECK);
}
