/* sink.h: the fenced sink, the resource that enforces single-writer
 * correctness. Per (group, partition) it stores epoch, next_offset and
 * rejected (docs/sinks.md, "What the worker sees"). Outputs go to
 * baton_output (one row per input offset) and, for processors that make
 * several outputs of one input, baton_output_more (docs/sinks.md).
 *
 * Threading: a baton_sink_t is used by one thread at a time. Several
 * processes may open the same sink; each call is one transaction. */
#ifndef BATON_SINK_H
#define BATON_SINK_H

#include <stddef.h>
#include <stdint.h>

typedef struct baton_sink_s baton_sink_t;

/* One input record to apply. The sink copies what it stores; pointers need
 * only live for the duration of the call. */
typedef struct {
    int64_t offset;
    const void *key; /* NULL for no key */
    size_t key_len;
    const void *value; /* NULL for no value */
    size_t value_len;
} baton_record_t;

/* Opens the sink named by uri ("sqlite:PATH", "postgresql://...",
 * "postgres://..." or "redis://...", see docs/sinks.md) for the consumer group `group`,
 * creating the schema if missing. On success *out owns the connection
 * (free with baton_sink_destroy). On failure returns an error and a message
 * naming what was wrong in errstr. */
int baton_sink_open(const char *uri, const char *group, baton_sink_t **out, char *errstr,
                    size_t errstr_size);
/* baton_sink_open, except that a sink that does not exist yet (a sqlite:
 * file not there) is not created now: its place is checked (a missing
 * directory is an error naming it) and the first call that needs it creates
 * it (a fence, a write; the worker's binding check as its loop starts).
 * Until then fences reads no rows and nothing is on disk, so a process that
 * fails before that leaves no new file behind. A sink that exists
 * is opened at once, as baton_sink_open does. */
int baton_sink_open_lazy(const char *uri, const char *group, baton_sink_t **out, char *errstr,
                         size_t errstr_size);
/* Checks that uri names a sink baton has (its scheme), without opening it:
 * BATON_OK, or BATON_INVALID with the message an open would give. */
int baton_sink_uri_check(const char *uri, char *errstr, size_t errstr_size);
/* uri as messages and output show it: every secret (a password in a
 * redis:// or postgresql:// URI) replaced by "***". A heap string the
 * caller frees. */
char *baton_sink_uri_redact(const char *uri);
void baton_sink_destroy(baton_sink_t *sink);

/* fence(p, e), one transaction: if the stored epoch is greater than epoch,
 * returns BATON_STALE (and counts it in rejected); otherwise stores epoch and
 * sets *next_offset to the first offset not yet applied (0 for a new
 * partition). */
int baton_sink_fence(baton_sink_t *sink, int32_t partition, int64_t epoch, int64_t *next_offset);

/* fence(p, e) for n partitions in ONE transaction (one commit, one fsync
 * instead of n): partitions[i] at epochs[i]. Returns BATON_OK when the
 * transaction committed; then results[i] is BATON_OK (next_offsets[i] set)
 * or BATON_STALE (counted in rejected, as fence counts it) for each i.
 * Any other error applied nothing (retriable ones may be retried whole).
 * Partitions must be distinct, and ascending (backends that lock rows take
 * them in this order, so overlapping calls cannot deadlock). Every
 * backend implements this call; baton_sink_fence is it with n = 1. */
int baton_sink_fence_many(baton_sink_t *sink, size_t n, const int32_t *partitions,
                          const int64_t *epochs, int64_t *next_offsets, int *results);

/* write(p, e, batch), one transaction: if the stored epoch is greater than
 * epoch, rejects the whole batch, counts it in rejected and returns
 * BATON_STALE; if it is lower (the writer never fenced), returns
 * BATON_UNFENCED and applies nothing. Records with offset < next_offset are
 * skipped as duplicates; the rest (which must be in ascending offset order;
 * gaps are allowed) are stored stamped with epoch, and next_offset becomes
 * the last applied offset + 1. *next_offset (may be NULL) receives the
 * resulting next_offset; *applied (may be NULL) how many records were stored.
 * Retriable failures (baton_err_is_retriable: BATON_BUSY for a lock held too
 * long, BATON_CONNECTION for a lost connection to a database server) ask the
 * caller to retry the same batch later. BUSY applied nothing; after
 * CONNECTION the batch may have committed (its COMMIT reply was lost), which
 * the retry handles by skipping offsets below next_offset. */
int baton_sink_write(baton_sink_t *sink, int32_t partition, int64_t epoch,
                     const baton_record_t *records, size_t nrecords, int64_t *next_offset,
                     size_t *applied);

/* One row of the sink's fence table. */
typedef struct {
    int32_t partition;
    int64_t epoch;
    int64_t next_offset;
    int64_t rejected;
} baton_fence_row_t;

/* One output record a processor made of an input record. Pointers need
 * only live for the duration of the write call. */
typedef struct {
    const void *key; /* NULL for no key */
    size_t key_len;
    const void *value; /* NULL for no value */
    size_t value_len;
} baton_sink_output_t;

/* One input offset and its outputs (any number, zero included). */
typedef struct {
    int64_t offset;
    const baton_sink_output_t *outputs; /* may be NULL when noutputs is 0 */
    size_t noutputs;
} baton_sink_input_t;

/* write(p, e, batch) for processed records: the fence rules, the
 * duplicate rule, the retry rules and the results are baton_sink_write's,
 * applied per input offset, all in one transaction. For each applied input,
 * outputs[0] is stored in baton_output at the input's offset and
 * outputs[1..n-1] in baton_output_more with seq 1..n-1; an input with no
 * output stores no row but is consumed all the same: next_offset moves past
 * it. *applied counts the inputs applied (not the rows). baton_sink_write is
 * this call with exactly one output per input. */
int baton_sink_write_outputs(baton_sink_t *sink, int32_t partition, int64_t epoch,
                             const baton_sink_input_t *inputs, size_t ninputs, int64_t *next_offset,
                             size_t *applied);

/* One partition's batch for baton_sink_write_many: the arguments of
 * baton_sink_write_outputs, and its results. */
typedef struct {
    int32_t partition;
    int64_t epoch;
    const baton_sink_input_t *inputs;
    size_t ninputs;
    int result;          /* out: BATON_OK, BATON_STALE (counted in rejected) or BATON_UNFENCED */
    int64_t next_offset; /* out, when result is BATON_OK */
    size_t applied;      /* out, when result is BATON_OK */
} baton_sink_batch_t;

/* write_outputs for n batches of distinct partitions, ascending, in ONE
 * transaction (one commit, one fsync instead of n: a worker writes every
 * partition that is due at once). Returns BATON_OK when the transaction
 * committed; then batches[i].result says what happened to each: BATON_OK
 * (applied, next_offset and applied set), BATON_STALE (refused and counted
 * in rejected, as write counts it) or BATON_UNFENCED (refused, nothing
 * stored). One partition's refusal does not affect the others: each is
 * checked against its own fence row inside the transaction. Any other
 * error applied nothing to any partition; retriable ones may be retried
 * whole. Every backend implements this call; baton_sink_write_outputs is
 * it with n = 1. Input validation is baton_sink_write_outputs's, for every
 * batch, before anything is written. */
int baton_sink_write_many(baton_sink_t *sink, baton_sink_batch_t *batches, size_t n);

/* One partition of baton_sink_fence_write: a fence, and the first batch
 * the caller already holds for the partition (a hot standby's records,
 * fetched ahead from `from` before it owned the partition). */
typedef struct {
    int32_t partition;
    int64_t epoch;
    /* The held inputs: every input of the partition from offset `from` on,
     * ascending, up to the last of them (Kafka's own gaps allowed, none of
     * the caller's). ninputs 0: a fence alone. */
    int64_t from;
    const baton_sink_input_t *inputs;
    size_t ninputs;
    int result;          /* out: BATON_OK or BATON_STALE (counted in rejected) */
    int64_t fenced_next; /* out (OK): next_offset as the fence found it */
    int written;         /* out (OK): 1 if the inputs went in (from <= fenced_next) */
    int64_t next_offset; /* out (OK): next_offset after the call */
    size_t applied;      /* out (OK): inputs applied (those at or past fenced_next) */
} baton_sink_fence_t;

/* fence(p, e) for n partitions (distinct, ascending) and, for each whose
 * held inputs start at or before the next_offset its fence finds (from <=
 * fenced_next: nothing between is missing), write(p, e, inputs) of the
 * inputs at or past it, in the same transaction: one commit where a fence
 * and a first write took two (issue 16, the hot handoff). A partition whose
 * inputs start past fenced_next is fenced alone (written 0); its caller
 * reads from fenced_next as after any fence. Returns BATON_OK when the
 * fences committed, with fences[i].result as baton_sink_fence_many's
 * results[i]. The writes are gated as writes are (baton_sink_set_commit_gate,
 * asked once, before the commit, when an input would go in): a closed gate
 * returns BATON_CONNECTION with no input applied (retry the call: a fence
 * at the same epoch again is harmless). Any
 * other error is a write's or a fence's. Input checks are
 * baton_sink_write_outputs's, before anything is stored.
 * SQLite and PostgreSQL do it all in one transaction, Redis in one script
 * (which asks the gate before it whenever the call carries inputs). */
int baton_sink_fence_write(baton_sink_t *sink, baton_sink_fence_t *fences, size_t n);

/* Reads every fence row of the group, ordered by partition. *rows is a heap
 * array the caller frees. */
int baton_sink_fences(baton_sink_t *sink, baton_fence_row_t **rows, size_t *nrows);

/* The fence rows of the partitions parts[0..n) (ascending, distinct,
 * non-negative) that have one, ordered by partition: baton_sink_fences
 * restricted to them, without reading the others (a worker's standby
 * partitions among a group's thousands). *rows is a heap array the caller
 * frees (NULL when none). */
int baton_sink_fences_of(baton_sink_t *sink, const int32_t *parts, size_t n,
                         baton_fence_row_t **rows, size_t *nrows);

/* Which group a sink serves (docs/sinks.md). Every sink has a random id,
 * made the first time baton opens it; per group name it records the id of
 * the group (ZooKeeper's config "group_uuid") it serves, written in the
 * same transaction as that group's first fence once the caller asked for
 * it with baton_sink_expect_group. */
#define BATON_SINK_ID_SIZE 37
typedef struct {
    char sink_id[BATON_SINK_ID_SIZE];    /* this sink's id */
    char group_uuid[BATON_SINK_ID_SIZE]; /* the id recorded for the group; "" if none */
    int64_t bound_ms;                    /* when it was recorded (wall clock ms); 0 if none */
} baton_sink_meta_t;

/* Reads the sink's id and what it records for the sink's group. */
int baton_sink_meta(baton_sink_t *sink, baton_sink_meta_t *out);

/* From now on every fence (baton_sink_fence, baton_sink_fence_many) also
 * checks, in its transaction, that the sink records group_uuid for the
 * group, recording it if it records none; if it records another id the
 * fence applies nothing and returns BATON_CONFLICT (a message naming both
 * ids). group_uuid must be a UUID; NULL stops the check. Writes are
 * unchanged: a partition is written only after its fence. */
int baton_sink_expect_group(baton_sink_t *sink, const char *group_uuid);

/* A writer's last word before a write commits. With a gate set, every
 * write (baton_sink_write, _write_outputs, _write_many) calls gate(arg)
 * after its statements and just before its COMMIT (or, for Redis, before
 * the script that is its transaction); a 0 rolls the whole write back and
 * returns BATON_CONNECTION, nothing applied. A worker's gate is "may I
 * still write" computed at that moment (docs/design.md, self-suspension),
 * so a transaction that began before the worker's ZooKeeper silence
 * passed its limit does not commit after it. NULL removes the gate.
 * Fences are not gated: they only raise an epoch; except that
 * baton_sink_fence_write, when an input it carries would apply (Redis:
 * whenever it carries inputs), asks the gate once before its commit, and a refusal rolls back the
 * whole call, its fences included (BATON_CONNECTION): send no inputs while refusals come, so the
 * fences themselves go through. */
typedef int (*baton_sink_gate_fn)(void *arg);
void baton_sink_set_commit_gate(baton_sink_t *sink, baton_sink_gate_fn gate, void *arg);

/* The last error message of this connection (static until the next call). */
const char *baton_sink_errstr(const baton_sink_t *sink);

#endif
