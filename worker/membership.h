/* membership.h: a worker's side of a group, without Kafka or a sink: register
 * as a member, watch our own assignment, claim assigned partitions, learn
 * when a claim becomes the owner (and its epoch), release on revocation, and
 * rejoin as a fresh member after session expiry.
 *
 * Threading: a baton_membership_t belongs to the thread that created it; all
 * callbacks run on that thread from inside baton_membership_poll() or
 * baton_membership_leave(), never on ZooKeeper's threads, so a callback may
 * do blocking sink or Kafka I/O.
 *
 * Ownership: the epoch handed to on_acquired is the claim node's czxid. A
 * claim belongs to this process's current session; a claim left by an
 * earlier session (even of the same worker id) is never adopted. */
#ifndef BATON_MEMBERSHIP_H
#define BATON_MEMBERSHIP_H

#include <stddef.h>
#include <stdint.h>

typedef struct baton_membership_s baton_membership_t;

/* Why a partition stops being ours. */
typedef enum {
    BATON_RELEASE_REVOKED = 0, /* the assignment moved it: flush, then it is released */
    BATON_RELEASE_LOST = 1,    /* our claim vanished (deleted or session expired): drop at once */
    BATON_RELEASE_LEAVE = 2,   /* graceful leave: flush, then it is released */
} baton_release_reason_t;

typedef struct {
    /* Our claim on partition became the lowest: we own it with epoch.
     * Return BATON_OK to keep it; BATON_STALE to give the claim up (a higher
     * epoch already fenced the sink); a retriable error to be called again
     * later. */
    int (*on_acquired)(void *opaque, int32_t partition, int64_t epoch);
    /* We stop owning partition. For REVOKED and LEAVE the claim is deleted
     * right after this returns, so flush first; for LOST it is already gone. */
    void (*on_released)(void *opaque, int32_t partition, baton_release_reason_t reason);
    void *opaque;
} baton_membership_cbs_t;

typedef struct {
    const char *zk_hosts;
    const char *root;
    const char *group;
    const char *id;
    int capacity;
    const char *rack;
    int session_timeout_ms;
    int connect_timeout_ms;
} baton_membership_conf_t;

/* Connects, reads the group config and registers the member. A live member
 * with the same id is BATON_EXISTS after waiting one session timeout for a
 * previous incarnation's node to expire. The conf strings must outlive the
 * object. */
int baton_membership_new(const baton_membership_conf_t *conf, const baton_membership_cbs_t *cbs,
                         baton_membership_t **out, char *errstr, size_t errstr_size);
/* Closes the session without releasing anything gracefully. */
void baton_membership_destroy(baton_membership_t *m);

/* The topic and partition count from the group config. */
const char *baton_membership_topic(const baton_membership_t *m);
int32_t baton_membership_partitions(const baton_membership_t *m);

/* A descriptor readable when ZooKeeper has news; poll it with others. */
int baton_membership_fd(const baton_membership_t *m);
/* Processes ZooKeeper events and reconciles claims with the assignment,
 * calling the callbacks. Returns BATON_OK, or a fatal error with a message
 * in errstr: the member could not rejoin (duplicate id), or BATON_EVICTED with
 * a message starting "evicted:" when our workers/<id> node was deleted (or
 * taken by another session) while our session lived -- an operator's
 * `batonctl evict`. Then every owned partition has already been released
 * with BATON_RELEASE_LOST (no flush: the new owners fence us) and every
 * later poll returns the same error; the caller should exit so that a
 * supervisor starts a fresh process. *next_ms (may be NULL) receives how
 * soon it wants to be called again. */
int baton_membership_poll(baton_membership_t *m, int *next_ms, char *errstr, size_t errstr_size);

/* 1 while writes are safe to attempt: the session is connected, not
 * expired, and the server answered a probe sent less than 2/3 of the
 * session timeout ago (measured at this call, so a thread that was paused
 * does not write on old news). A disconnected or silent worker stops
 * writing at once; it resumes if the session survives. Owner thread. */
int baton_membership_can_write(const baton_membership_t *m);

/* 1 once we were evicted (see baton_membership_poll). */
int baton_membership_evicted(const baton_membership_t *m);

/* Gives up partition at once (the sink said STALE): the claim is deleted if
 * it still exists, on_released is NOT called. The partition is claimed
 * again only if it is still assigned to us. */
void baton_membership_drop(baton_membership_t *m, int32_t partition);

/* Graceful leave: on_released(LEAVE) for every owned partition, then every
 * claim and the member node are deleted. */
void baton_membership_leave(baton_membership_t *m);

#endif
