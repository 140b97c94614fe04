/* assignment.h: the pure partition assignor. No I/O, no clock, deterministic:
 * the same input always yields the same output.
 *
 * next = assign(previous, workers (capacity, rack, drained/absent), partitions,
 * pins, leader racks, strategy), plus the diff and the figures a caller or a
 * benchmark reports (moves, the minimum possible, imbalance).
 *
 * Workers are identified by their index in the caller's array (the
 * coordinator sorts worker ids so indices are stable for a given set).
 *
 * Balance, for sticky, range and roundrobin: let E be the eligible workers
 * (neither drained nor absent) and P_E the partitions not reserved for an
 * absent worker. A worker's share is P_E * capacity / (total capacity of E),
 * except that a worker pinned more partitions than its share keeps exactly its
 * pins and the others share the rest ("water filling": repeated until no
 * remaining worker is over-pinned). Every other eligible worker ends with
 * floor(share) or ceil(share) partitions: within 1 of its share. With equal
 * capacities and no pins that is floor(P/W) or ceil(P/W).
 *
 * Sticky moves exactly the minimum number of partitions that reaches that
 * balance; rendezvous (highest random weight, capacity-weighted) is stateless
 * and only balanced in expectation.
 *
 * Racks (leader_rack): with BATON_RACK_TIEBREAK they only steer partitions
 * that move anyway. With BATON_RACK_REALIGN (sticky only; KIP-881's
 * behaviour) sticky then also moves misaligned partitions into their
 * leader's rack by swapping them with partitions that are not in their own
 * leader's rack either, so every worker keeps its count (balance is never
 * traded) and no partition already in its leader's rack moves for it. It
 * stops at the most rack-local placement those counts allow. */
#ifndef BATON_ASSIGNMENT_H
#define BATON_ASSIGNMENT_H

#include <stddef.h>

typedef enum {
    BATON_STRATEGY_STICKY = 0,     /* balanced, moves only what balance needs */
    BATON_STRATEGY_RANGE = 1,      /* Kafka's range: contiguous blocks */
    BATON_STRATEGY_ROUNDROBIN = 2, /* Kafka's roundrobin: p -> p mod W */
    BATON_STRATEGY_RENDEZVOUS = 3, /* stateless highest-random-weight hashing */
} baton_strategy_t;

#define BATON_STRATEGY_COUNT 4

/* What racks may cost (the coordinator's rack.policy). */
typedef enum {
    BATON_RACK_TIEBREAK = 0, /* racks only break ties: never a move of their own */
    BATON_RACK_REALIGN = 1,  /* sticky also moves misaligned partitions into their
                              * leader's rack where balance allows */
} baton_rack_policy_t;

#define BATON_RACK_POLICY_COUNT 2

/* Parses "tiebreak", "realign"; returns 0 or BATON_INVALID. */
int baton_rack_policy_parse(const char *s, baton_rack_policy_t *out);
/* The policy's name as baton_rack_policy_parse() reads it. */
const char *baton_rack_policy_name(baton_rack_policy_t p);
/* The largest capacity a worker may declare (baton-worker --capacity). */
#define BATON_ASSIGN_CAPACITY_MAX 1000000

/* Parses "sticky", "range", "roundrobin", "rendezvous"; returns 0 or
 * BATON_INVALID. */
int baton_strategy_parse(const char *s, baton_strategy_t *out);
/* The strategy's name as baton_strategy_parse() reads it. */
const char *baton_strategy_name(baton_strategy_t s);

/* Worker flags. */
/* DRAINED: gets nothing and loses what it has. ABSENT: vanished within its
 * leave grace: keeps exactly its previous partitions (reserved), gets
 * nothing new, takes no part in balance. */
#define BATON_ASSIGN_DRAINED 0x1
#define BATON_ASSIGN_ABSENT 0x2

typedef struct {
    const char *id; /* hashed by rendezvous; may be NULL (the index is hashed) */
    int capacity;   /* 1..BATON_ASSIGN_CAPACITY_MAX */
    int rack;       /* rack index in [0, nworkers + npartitions), or -1 */
    int flags;      /* BATON_ASSIGN_DRAINED | BATON_ASSIGN_ABSENT */
} baton_assign_worker_t;

/* The input. Arrays are borrowed for the duration of the call only. */
typedef struct {
    baton_strategy_t strategy;
    int npartitions;                      /* partitions 0..npartitions-1 */
    const int *prev;                      /* prev[p]: owner index or -1; NULL: none */
    const baton_assign_worker_t *workers; /* nworkers entries */
    int nworkers;
    const int *pins;                 /* pins[p]: worker index or -1; NULL: no pins. A pin
                                      * to a drained or absent worker is ignored. */
    const int *leader_rack;          /* leader_rack[p]: rack index (same numbering as
                                      * workers' racks, below nworkers + npartitions) of
                                      * the partition's leader broker, or -1; NULL: unknown.
                                      * They never cost balance; movement only as
                                      * rack_policy allows. */
    baton_rack_policy_t rack_policy; /* BATON_RACK_TIEBREAK (0) or BATON_RACK_REALIGN */
    const int *hint; /* hint[p]: the worker index to hand p to if p must move because
                      * its previous owner is gone or drained (sticky only: the
                      * standby the coordinator named for p), or -1; NULL: none.
                      * Taken when that worker is eligible and has room after the
                      * rack-local placements; it never costs balance or moves.
                      * Ignored under BATON_RACK_REALIGN with leader racks. Keeps
                      * standbys stable (coord_standby.h). */
    int rotate;      /* sticky: the extra slots (one partition above a worker's floor
                      * share) go, among workers without gain and alike in share,
                      * first to index rotate, rotate + 1, ... wrapping round,
                      * instead of from index 0: the coordinator passes a lone
                      * departed worker's place, so its partitions go to the
                      * workers after it (coord_standby.c names the standbys the
                      * same way). 0 (the default): from index 0; 0..nworkers-1. */
} baton_assign_input_t;

typedef struct {
    int moved;      /* partitions whose owner changed (newly owned included) */
    int minimal;    /* the fewest changes any balanced assignment needs */
    int reserved;   /* partitions kept for absent workers */
    int pinned;     /* partitions placed by a pin */
    int unassigned; /* partitions left without an owner (no eligible worker) */
    int rack_local; /* owned partitions whose owner is in the leader's rack */
    int realigned;  /* moves realignment added (BATON_RACK_REALIGN): moved -
                     * realigned is what balance alone needed */
} baton_assign_stats_t;

/* Computes the next assignment into next (caller-allocated, npartitions
 * entries; -1 = no owner, only when no worker is eligible). stats may be NULL.
 *
 * Pinned partitions go to their (eligible) worker and count in its share;
 * partitions of absent workers stay with them; everything else is assigned
 * by the strategy over the eligible workers.
 *
 * Returns the number of partitions whose owner changed (stats->moved), or
 * BATON_INVALID with a message in errstr naming the bad field; next is
 * untouched then. */
int baton_assign_compute(const baton_assign_input_t *in, int *next, baton_assign_stats_t *stats,
                         char *errstr, size_t errstr_size);

/* The largest distance of an eligible worker's partition count in next from
 * its share (see above; a worker over-pinned counts from its pins). Below 1
 * means balanced. 0 when no worker is eligible. in must have passed
 * baton_assign_compute(). */
double baton_assign_imbalance(const baton_assign_input_t *in, const int *next);

/* The original simple entry point: equal capacities, no pins, drains or
 * racks. prev[p] is the live previous owner's index or -1 (prev may be NULL).
 * Returns the number of partitions whose owner changed, or BATON_INVALID. */
int baton_assign(baton_strategy_t strategy, int npartitions, const int *prev, int nworkers,
                 int *next);

#endif
