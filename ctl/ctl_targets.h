/* ctl_targets.h: whether a worker id that an operator command names (drain,
 * undrain, pin, evict) is one the group knows, so that a typo is refused
 * instead of becoming a standing instruction for a worker that never comes.
 *
 * A worker is known to the group when it is live (workers/<id>), has an
 * assignment node (assignment/<id>), a drain (drains/<id>) or a pin
 * (pins/<p> {"worker": id}), or appears in the coordinator's history ring
 * (history: from or to). */
#ifndef CTL_TARGETS_H
#define CTL_TARGETS_H

#include "baton_zk.h"

#include <stddef.h>

/* What the group knows of one worker id. */
typedef struct {
    int live;          /* workers/<id> exists */
    const char *known; /* why it is known when not live ("assigned", "drained",
                        * "pinned", "in the history"), or NULL */
    char *live_list;   /* heap: "w1, w2" (at most 20 names, then "and N more"),
                        * or "none" */
} ctl_target_t;

/* Fills *t for id in the group at base. Returns BATON_OK or a ZooKeeper
 * error with a message in errstr. Release with ctl_target_release. */
int ctl_target_lookup(baton_zk_t *zk, const char *base, const char *id, ctl_target_t *t,
                      char *errstr, size_t errstr_size);
void ctl_target_release(ctl_target_t *t);

/* For drain, undrain and pin: BATON_OK when id is live or known, or force is
 * set (for drain and pin a note then says it is not live); otherwise prints the refusal
 * ("batonctl: CMD: worker 'ID' is neither live nor known to group G (live
 * workers: ...); ...") and returns BATON_NOTFOUND. ZooKeeper errors are
 * printed and returned. */
int ctl_target_check(baton_zk_t *zk, const char *base, const char *group, const char *cmd,
                     const char *id, int force);

#endif
