/* baton_layout.h: the ZooKeeper layout of a group, in one place.
 *
 * Every znode path of a group is built here from its base ("<root>/<group>",
 * baton_group_base), and so are the rules that read the ephemeral sequential
 * queues in it:
 *
 *   <base>/config                       the group's config (baton_codec.h)
 *   <base>/sink                         the sink binding
 *   <base>/history                      the assignment history
 *   <base>/coordinators/c-<seq>         coordinator candidates (the lowest leads)
 *   <base>/workers/<id>                 members
 *   <base>/assignment/<id>              what the leader published to each member
 *   <base>/partitions/<p>/claims/...    claims on partition p
 *   <base>/keys/<key>/claims/...        claims on named key <key>
 *   <base>/keys/<key>/runs              baton-run --once records
 *   <base>/drains/<id>, <base>/pins/<p> operator drains and pins
 *
 * A claim is named claim-<16 hex digits: the creator's session id>-<10
 * digits: the sequence ZooKeeper appended>. In a claims directory the claim
 * with the lowest sequence owns the resource; every other claimant watches
 * its predecessor (the next lower claim) only, so a release wakes one. Nodes
 * in a claims directory that are not claims are ignored by every reader.
 *
 * Every path function returns a heap string the caller frees. */
#ifndef BATON_LAYOUT_H
#define BATON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* <base>/config, /sink, /history, /coordinators, /workers, /assignment,
 * /partitions, /keys, /drains, /pins. */
char *baton_layout_config(const char *base);
char *baton_layout_sink(const char *base);
char *baton_layout_history(const char *base);
char *baton_layout_coordinators(const char *base);
char *baton_layout_workers(const char *base);
char *baton_layout_assignment(const char *base);
char *baton_layout_partitions(const char *base);
char *baton_layout_keys(const char *base);
char *baton_layout_drains(const char *base);
char *baton_layout_pins(const char *base);

/* The path a coordinator candidate is created at: <base>/coordinators/c-
 * (ZOO_EPHEMERAL_SEQUENTIAL). */
char *baton_layout_candidate_create(const char *base);
/* <base>/workers/<id>, <base>/assignment/<id>, <base>/drains/<id>. */
char *baton_layout_worker(const char *base, const char *id);
char *baton_layout_assignment_of(const char *base, const char *id);
char *baton_layout_drain(const char *base, const char *id);
/* <base>/pins/<p>. */
char *baton_layout_pin(const char *base, int64_t partition);

/* <base>/partitions/<p> and its claims directory. */
char *baton_layout_partition(const char *base, int64_t partition);
char *baton_layout_partition_claims(const char *base, int64_t partition);
/* <base>/keys/<key>, its claims directory and its --once run records. */
char *baton_layout_key(const char *base, const char *key);
char *baton_layout_key_claims(const char *base, const char *key);
char *baton_layout_key_runs(const char *base, const char *key);

/* <dir>/<name>: a node in a directory (a claim, a candidate, a member). */
char *baton_layout_child(const char *dir, const char *name);

/* ---- claim names ---------------------------------------------------------- */

#define BATON_CLAIM_PREFIX "claim-"
/* "claim-" + 16 hex + "-" + NUL */
#define BATON_CLAIM_PREFIX_SIZE 24

/* The name prefix of the claims of session: "claim-<16 hex>-" (ZooKeeper
 * appends the sequence). */
void baton_claim_prefix(int64_t session, char out[BATON_CLAIM_PREFIX_SIZE]);
/* The path a claim of session in dir is created at ("<dir>/claim-<hex>-",
 * ZOO_EPHEMERAL_SEQUENTIAL). */
char *baton_layout_claim_create(const char *dir, int64_t session);

/* A claim name, parsed. */
typedef struct {
    int64_t session; /* the creator's session id */
    int64_t seq;     /* the sequence ZooKeeper appended */
} baton_claim_name_t;

/* Parses exactly claim-<16 hex digits>-<10 digits>. Returns 0, or -1 (and
 * leaves *out alone) for any other name. */
int baton_claim_parse(const char *name, baton_claim_name_t *out);
/* The sequence of a claim: the name starts with "claim-" and ends with 10
 * digits; -1 for a name that is no claim. This is what every reader counts
 * as a claim of a queue. */
int64_t baton_claim_seq(const char *name);
/* Whether name is a claim (baton_claim_seq) created by session. */
int baton_claim_of_session(const char *name, int64_t session);

/* ---- queues: the lowest owns, the others watch their predecessor ----------
 * names are a directory's children in any order; names that are not queue
 * entries are skipped. Claims directories use the claim functions; the
 * coordinators' election (c-<seq>) the seq ones, which take any name with a
 * 10-digit sequence suffix (baton_seq_of). */

/* The claim with the lowest sequence, or NULL if there is none. */
const char *baton_claim_lowest(char *const *names, size_t n);
/* The claim just before mine (the highest sequence below it), or NULL when
 * mine is the lowest. *found (may be NULL): whether mine is among names;
 * *below (may be NULL): how many claims sort before mine. */
const char *baton_claim_predecessor(char *const *names, size_t n, const char *mine, int *found,
                                    size_t *below);
/* Sorts paths[0..n) (one queue's claims, full paths or bare names) for a
 * multi that deletes them together: highest sequence first, names that are
 * no claim last. A member waiting behind exactly one claim acquires on that
 * claim's deletion event without a read (docs/design.md, "A claim behind
 * exactly one other"), so the deletion of its own claim, if it is in the
 * same multi, must reach it first. Every multi that deletes claims of
 * other sessions from one queue sorts them with this. */
void baton_claim_sort_for_delete(char **paths, size_t n);
/* The same over any sequential names. */
const char *baton_seq_lowest(char *const *names, size_t n);
const char *baton_seq_predecessor(char *const *names, size_t n, const char *mine, int *found,
                                  size_t *below);

/* ---- watch events: which part of the layout a path is ---------------------
 * What a watch event's path concerns, for the member's event loop. name
 * points into path (not NUL-terminated: name_len bytes). */
typedef enum {
    BATON_PATH_OTHER,      /* not under base, or nothing below names */
    BATON_PATH_CONFIG,     /* <base>/config */
    BATON_PATH_PARTITION,  /* <base>/partitions/<p> or below: partition */
    BATON_PATH_KEY,        /* <base>/keys/<key> or below: name */
    BATON_PATH_ASSIGNMENT, /* <base>/assignment/ and below */
    BATON_PATH_WORKER,     /* exactly <base>/workers/<id>: name (may be empty) */
} baton_path_kind_t;

typedef struct {
    baton_path_kind_t kind;
    int32_t partition; /* BATON_PATH_PARTITION: decimal digits, <= INT32_MAX */
    const char *name;  /* BATON_PATH_KEY, BATON_PATH_WORKER: into path */
    size_t name_len;
} baton_path_t;

/* Classifies path (NULL: other) against base; fills *out and returns its
 * kind. A partition that is not all digits up to the next '/' or the end
 * is other; so is a key with an empty name. */
baton_path_kind_t baton_layout_classify(const char *base, const char *path, baton_path_t *out);

#endif
