/* wpart_state.c: the worker's partition states' names and the table of
 * expected transitions (wpart_state.h). */
#include "wpart_state.h"

#include <stddef.h>

static const char *const names[WPART_NSTATES] = {
    [WPART_NONE] = "none",       [WPART_PREFETCHING] = "prefetching",
    [WPART_FENCING] = "fencing", [WPART_FENCING_PREFETCHED] = "fencing_prefetched",
    [WPART_FENCED] = "fenced",   [WPART_ACTIVE] = "active",
    [WPART_FAILED] = "failed",   [WPART_RELEASING] = "releasing",
};

/* ok[from] is the set of states `from` may go to, one bit per state. */
#define TO(s) (1u << (s))
static const unsigned ok[WPART_NSTATES] = {
    /* assigned (fetch ahead), or acquired */
    [WPART_NONE] = TO(WPART_PREFETCHING) | TO(WPART_FENCING),
    /* no longer assigned or the Kafka assign failed; or acquired */
    [WPART_PREFETCHING] = TO(WPART_NONE) | TO(WPART_FENCING_PREFETCHED),
    /* released before the fence or a stale fence; or fenced */
    [WPART_FENCING] = TO(WPART_NONE) | TO(WPART_FENCED),
    /* released before the fence (still assigned: fetching ahead goes on),
     * a stale fence; or fenced */
    [WPART_FENCING_PREFETCHED] = TO(WPART_PREFETCHING) | TO(WPART_NONE) | TO(WPART_FENCED),
    /* the first write; a processor error; a release; a stale write */
    [WPART_FENCED] = TO(WPART_ACTIVE) | TO(WPART_FAILED) | TO(WPART_RELEASING) | TO(WPART_NONE),
    [WPART_ACTIVE] = TO(WPART_FAILED) | TO(WPART_RELEASING) | TO(WPART_NONE),
    /* a release; a stale write of the records before the failure */
    [WPART_FAILED] = TO(WPART_RELEASING) | TO(WPART_NONE),
    /* let go; or the processor failed while the last batches were written */
    [WPART_RELEASING] = TO(WPART_NONE) | TO(WPART_FAILED),
};

const char *wpart_state_name(wpart_state_t s) {
    return (unsigned)s < WPART_NSTATES ? names[s] : "unknown";
}

int wpart_transition_ok(wpart_state_t from, wpart_state_t to) {
    if ((unsigned)from >= WPART_NSTATES || (unsigned)to >= WPART_NSTATES)
        return 0;
    return (ok[from] & TO(to)) != 0;
}
