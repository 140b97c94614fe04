/* coordinator.h: one coordinator candidate of a group. It runs on the
 * caller's thread: baton_coord_run() loops until a stop is requested.
 *
 * Election: every candidate creates coordinators/c-N (ephemeral sequential);
 * the lowest N leads and its czxid is the coordinator epoch; every other
 * candidate watches only its predecessor. The leader watches membership and
 * config, computes the next assignment with assignment/ and publishes it in
 * one zoo_multi that begins with a check on its own c- node and a version
 * check on /assignment, so a deposed leader's write fails whole (split into
 * several such multis when it would not fit in one; see coordinator.c). */
#ifndef BATON_COORDINATOR_H
#define BATON_COORDINATOR_H

#include <stddef.h>

struct baton_zk_auth_s;

typedef struct {
    const char *zk_hosts;
    const char *root;
    const char *group;
    const char *id;
    int session_timeout_ms;
    int connect_timeout_ms;
    /* A vanished worker's partitions stay reserved (not reassigned) this
     * long, so a restart with the same id moves nothing; 0: reassign at once. */
    int leave_grace_ms;
    /* When every resource of a leaver has a live standby, the rebalance
     * after its leave mark waits this long (the standbys take them over by
     * themselves); 0: rebalance at once. At most 1500, under the leaver's
     * own wait for it (LEAVE_WAIT_MS, 2 s). */
    int leave_hold_ms;
    /* Membership churn within this quiet period coalesces into one
     * rebalance; 0: rebalance on every change. */
    int rebalance_delay_ms;
    /* No rebalance waits longer than this after the first change. */
    int max_rebalance_delay_ms;
    /* ... except while nothing is assigned yet (the group forms): then
     * joins that keep coming within rebalance_delay_ms of each other hold
     * the first assignment up to this long (at least max_rebalance_delay_ms),
     * as Kafka's group.initial.rebalance.delay.ms does. */
    int initial_max_rebalance_delay_ms;
    /* ... and the quiet period then (at least rebalance_delay_ms, at most
     * initial_max_rebalance_delay_ms): a lull in a fleet's joins shorter
     * than this (a server's collection pause, a busy host) does not
     * publish to a half-formed group. Unused with rebalance_delay_ms 0. */
    int initial_rebalance_delay_ms;
    /* Largest multi request a publish builds; bigger publishes are split. */
    int max_multi_bytes;
    /* Kafka bootstrap servers for the partition leaders' racks; NULL: rack
     * preference is off. Refreshed every racks_refresh_ms and at election. */
    const char *brokers;
    int racks_refresh_ms;
    /* rack.policy: 0 tiebreak (racks only steer what moves anyway), 1
     * realign (baton_rack_policy_t: misaligned partitions also move into
     * their leader's rack where balance allows). */
    int rack_policy;
    /* A partition's lowest claim held by anyone but its assigned worker's
     * current session (a stuck handoff) is deleted by the leader after this
     * long; the sink fences the old holder. 0: never. */
    int handoff_timeout_ms;
    /* The ZooKeeper identity of every session (--zk-auth); NULL: none. */
    const struct baton_zk_auth_s *zk_auth;
} baton_coord_conf_t;

/* Runs until stop_fd becomes readable (SIGTERM). Returns 0 on a clean stop,
 * non-zero (with a logged reason) when ZooKeeper cannot be reached at start. */
int baton_coord_run(const baton_coord_conf_t *conf, int stop_fd);

#endif
