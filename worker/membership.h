/* membership.h: the member library's API is the public header
 * include/baton/baton.h (the Kafka worker, baton-run and applications use
 * the same one); this name stays for the tree's own includes. */
#ifndef BATON_MEMBERSHIP_H
#define BATON_MEMBERSHIP_H
#include <baton/baton.h>

#include "baton_zk.h"

#include <stdint.h>

/* In-tree only (not in baton.h): the member's ZooKeeper session, for the
 * worker's one-off checks on the same session (its sink binding,
 * sink_bind.h). NULL while it has none. */
baton_zk_t *baton_membership__zk(const baton_membership_t *m);

/* In-tree only: what the assignment names us standby for (the worker's
 * standby prefetch, worker.c). The version changes whenever the standby
 * list is replaced or cleared; flags[p] (p < n) is set to 1 for every
 * partition we stand by for, 0 otherwise. */
uint64_t baton_membership__standby_version(const baton_membership_t *m);
void baton_membership__standby_partitions(const baton_membership_t *m, unsigned char *flags,
                                          int32_t n);

/* In-tree only: a hook run while the membership waits for ZooKeeper
 * (baton_zk_set_wait_hook), on every session it makes from now on. The
 * Kafka worker writes what it holds meanwhile (worker.c, poll_hook). */
void baton_membership__set_wait_hook(baton_membership_t *m, baton_zk_wait_hook_fn fn, void *arg);

/* In-tree only: 1 if r is ours (acquired) with the claim of this epoch,
 * whether or not we may write now (baton_epoch_valid also asks that). */
int baton_membership__holds(const baton_membership_t *m, const baton_resource_t *r, int64_t epoch);

/* In-tree only: how many standbys subscribed to our release notices
 * (standby.notice; 0 when off). A leaver with none writes its unwritten
 * records itself; with some, it asks baton_membership__notice_covers
 * per partition (worker.c, leave_hands_over). */
size_t baton_membership__notice_subscribers(const baton_membership_t *m);

/* In-tree only: 1 if a subscriber holds r ahead for us: its HLD named r,
 * or it sent none (a standby older than HLD: all of ours). A leaver hands
 * over the unwritten records of such a resource, and writes the others'
 * (worker.c, on_released). */
int baton_membership__notice_covers(const baton_membership_t *m, const baton_resource_t *r);
#endif
