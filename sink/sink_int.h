/* sink_int.h: the inside of a baton_sink_t. sink.c parses the URI, checks
 * arguments, builds the single-partition calls on the batched ones and
 * dispatches to a backend through baton_sink_ops_t; each backend
 * (sink_sqlite.c, sink_pg.c, sink_redis.c) is one file that fills in one ops table with
 * one fence path and one write path, applying the pure rules below.
 * docs/sinks.md says what a backend must guarantee, and the conformance
 * suite (tests/sink_conformance.c) checks it against any sink URI.
 *
 * Not installed: only sink.c, the backends and their tests include it. */
#ifndef BATON_SINK_INT_H
#define BATON_SINK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton_err.h"
#include "sink.h"

#define BATON_SINK_ERRSTR_SIZE 512

/* A backend. It has one fence path and one write path, both batched
 * (fence_many, write_many): sink.c builds baton_sink_fence and
 * baton_sink_fence_many on fence_many (without inputs) and
 * baton_sink_write / baton_sink_write_outputs on write_many with one
 * batch, so a backend cannot apply the rules differently for one
 * partition than for many.
 *
 * sink.c has already validated every argument (non-NULL pointers, n > 0,
 * partitions distinct and ascending for write_many, partition >= 0,
 * epoch >= 0, input offsets in [0, INT64_MAX), outputs present when
 * noutputs is non-zero, key/value pointers present when their length is
 * non-zero), opened a sink baton_sink_open_lazy deferred, and cleared
 * sink->errstr before calling fence_many, write_many or fences. Every call
 * that fails leaves a message in sink->errstr and no transaction open. */
typedef struct baton_sink_ops_s {
    const char *scheme; /* "sqlite": matched case-insensitively before ':' */
    const char *usage;  /* "sqlite:PATH", for error messages */
    /* Opens target (the URI after "scheme:") into sink->be. On failure frees
     * whatever it allocated, leaves sink->be NULL and writes errstr. */
    int (*open)(baton_sink_t *sink, const char *target, char *errstr, size_t errstr_size);
    /* Frees sink->be; never fails. */
    void (*close)(baton_sink_t *sink);
    /* baton_sink_fence_write, in one transaction (the group check of
     * sink->expect_group first): per partition the fence rule; a partition
     * refused as stale is counted in rejected in that transaction, gets
     * result BATON_STALE and leaves its message (baton_sink__stale) in
     * sink->errstr; the others get result BATON_OK and fenced_next. Then a
     * partition with inputs and from <= fenced_next is written as
     * write_many writes it (its epoch is now the stored one): written 1,
     * next_offset and applied set; and the commit asks
     * baton_sink__fence_gate first (a backend whose transaction is one
     * script asks baton_sink__gate_open before it, when the call carries
     * inputs). sink.c has set written, applied to 0 and next_offset to -1
     * before the call, and validated everything, inputs included. */
    int (*fence_many)(baton_sink_t *sink, baton_sink_fence_t *fences, size_t n);
    /* baton_sink_write_many, in one transaction. A batch refused as stale
     * (counted in rejected) or unfenced (nothing stored) gets its result
     * and leaves its message (baton_sink__stale, baton_sink__unfenced) in
     * sink->errstr; the other batches go on. */
    int (*write_many)(baton_sink_t *sink, baton_sink_batch_t *batches, size_t n);
    int (*fences)(baton_sink_t *sink, baton_fence_row_t **rows, size_t *nrows);
    /* baton_sink_fences_of, parts checked (n > 0, ascending, distinct):
     * reads only those rows. Rows in partition order. */
    int (*fences_of)(baton_sink_t *sink, const int32_t *parts, size_t n, baton_fence_row_t **rows,
                     size_t *nrows);
    /* How long a call waits for another process's lock before BATON_BUSY. */
    int (*set_busy_timeout)(baton_sink_t *sink, int timeout_ms);
    /* Reads this group's baton_groups row into out->group_uuid and
     * out->bound_ms (both left empty/0 when there is none); sink.c fills
     * out->sink_id. */
    int (*group_get)(baton_sink_t *sink, baton_sink_meta_t *out);
    /* Optional (NULL: none): a second spelling of the scheme, matched the
     * same way ("postgres" for "postgresql"). */
    const char *alias;
    /* Optional (NULL: the URI is shown as given): returns a heap copy of the
     * whole URI with every secret replaced by "***". sink.c stores that copy
     * in sink->uri, so logs and messages never carry a password. */
    char *(*redact)(const char *uri);
    /* Optional (NULL: never deferred), for baton_sink_open_lazy: 1 if
     * target does not exist yet and open would create it where it can (a
     * missing SQLite file in a writable directory), 0 if it exists (open it
     * now), or an error with errstr naming what is wrong (its directory is
     * missing). Creates nothing. */
    int (*missing)(baton_sink_t *sink, const char *target, char *errstr, size_t errstr_size);
    /* Optional (NULL: the scheme is all baton_sink_uri_check looks at):
     * checks the whole uri's syntax without connecting, BATON_OK or
     * BATON_INVALID with the message an open would give. */
    int (*check)(const char *uri, char *errstr, size_t errstr_size);
} baton_sink_ops_t;

/* Every backend keeps, besides the fence tables, the sink's identity
 * (docs/sinks.md, "Which group a sink serves"):
 *   baton_meta(name, value): the row ('sink_id', a random UUID), inserted
 *     by open when missing, in the schema transaction;
 *   baton_groups(grp, group_uuid, bound_ms): per group name, the id of the
 *     group this sink serves.
 * open stores the sink id in sink->sink_id. While sink->expect_group is
 * set (baton_sink_expect_group), fence and fence_many first call the
 * backend's own check inside their transaction: no row for the group ->
 * insert (grp, expect_group, now); the same id -> nothing; another id ->
 * roll back and return BATON_CONFLICT (baton_sink__group_conflict's
 * message), nothing fenced. */
/* Opens a sink baton_sink_open_lazy deferred (creating it); BATON_OK at
 * once when it is open. */
int baton_sink__ready(baton_sink_t *sink);

struct baton_sink_s {
    const baton_sink_ops_t *ops;
    char *uri;     /* as given to baton_sink_open, secrets redacted; for messages */
    char *group;   /* non-empty */
    void *be;      /* the backend's own state */
    char *pending; /* baton_sink_open_lazy: the target still to open on first use, or NULL */
    char sink_id[BATON_SINK_ID_SIZE]; /* "" while pending */
    char *expect_group;               /* NULL, or the group id every fence records or checks */
    baton_sink_gate_fn gate;          /* NULL, or baton_sink_set_commit_gate's */
    void *gate_arg;
    char errstr[BATON_SINK_ERRSTR_SIZE];
};

/* The refusal of a fence whose group id differs from the one the sink
 * records for the group (found, bound at bound_ms): sets the message and
 * returns BATON_CONFLICT. */
int baton_sink__group_conflict(baton_sink_t *sink, const char *found, int64_t bound_ms);

/* The expected shape of a sink table, column by column: pk is the
 * column's 1-based position in the primary key, 0 if not in it; type as
 * the backend's catalog spells it (compared case-insensitively). */
typedef struct {
    const char *name;
    const char *type;
    int pk;
} baton_sink_col_t;

/* Compares column i (0-based) as the database reports it (name NULL: the
 * table has only i columns) with cols[i]. Returns BATON_OK, or
 * BATON_CORRUPT with a message naming the table and the column. */
int baton_sink__check_column(const baton_sink_t *sink, const char *table,
                             const baton_sink_col_t *cols, size_t ncols, size_t i, const char *name,
                             const char *type, int pk, char *errstr, size_t errstr_size);

extern const baton_sink_ops_t baton_sink_sqlite_ops;
extern const baton_sink_ops_t baton_sink_pg_ops;
extern const baton_sink_ops_t baton_sink_redis_ops;

/* The Redis backend's redaction (pure, for unit tests): the password of
 * redis://USER:PASS@HOST replaced by "***". Returns a heap string. */
char *baton_sink__redis_redact(const char *uri);

/* The PostgreSQL backend's redaction (pure, for unit tests): a libpq URI or
 * key=value conninfo with any password replaced by "***". Returns a heap
 * string the caller frees. */
char *baton_sink__pg_redact(const char *uri);

/* Sets how long each call waits for another process's lock before returning
 * BATON_BUSY (the SQLite backend's default is 5000 ms). Internal for now:
 * tests use it to see BUSY without waiting 5 s; promote it to sink.h if an
 * operator ever needs the knob. */
int baton_sink__set_busy_timeout(baton_sink_t *sink, int timeout_ms);

/* A write's check just before its commit (baton_sink_set_commit_gate):
 * BATON_OK, or BATON_CONNECTION with the message set; the backend then
 * rolls back (the message names batches[0]'s partition). A transaction in
 * which no batch is BATON_OK (their results set) applies nothing but the
 * fence's refusals (rejected counts): it commits without asking, so a
 * zombie's stale batch is still refused and counted at the sink. */
int baton_sink__commit_gate(baton_sink_t *sink, const baton_sink_batch_t *batches, size_t n);
/* The same check for a fence_write's transaction (fence_many with
 * its inputs): asked only when an input would apply (applied > 0);
 * BATON_OK, or BATON_CONNECTION with the message set (the backend then
 * rolls back). */
int baton_sink__fence_gate(baton_sink_t *sink, const baton_sink_fence_t *fences, size_t n);
/* Its two halves, for a backend whose transaction is one script (Redis):
 * whether the gate lets writes apply now (1) or not (0), asked before the
 * script (for a fence_write, only when the call carries inputs); and the
 * refusal (log, message, BATON_CONNECTION) once the script says a batch,
 * or a fence's input, would have applied. */
int baton_sink__gate_open(baton_sink_t *sink);
int baton_sink__withheld(baton_sink_t *sink, int32_t partition);
/* A fence_write's write refused by the fence it just stored (stale or
 * unfenced): not a refusal but a bug, BATON_INTERNAL with the message. */
int baton_sink__fence_changed(baton_sink_t *sink, int32_t partition);

/* Writes a message into sink->errstr and returns err. */
int baton_sink__seterr(baton_sink_t *sink, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Logs a fence or write (op) of partition at epoch refused because
 * stored_epoch owns it, after the backend counted it in rejected, and
 * sets the message; returns BATON_STALE. */
int baton_sink__stale(baton_sink_t *sink, const char *op, int32_t partition, int64_t epoch,
                      int64_t stored_epoch);

/* Logs a write refused as unfenced (no fence row: found 0; or one at a lower
 * stored_epoch) and sets the message; returns BATON_UNFENCED. */
int baton_sink__unfenced(baton_sink_t *sink, int32_t partition, int64_t epoch, int found,
                         int64_t stored_epoch);

/* The fence rules, pure so every backend applies the same ones.
 *
 * fence(p, e) against a stored epoch: a higher stored epoch means a newer
 * owner exists, so the caller is stale; equal is a retry of the same fence. */
static inline int baton_sink__fence_rule(int64_t stored_epoch, int64_t epoch) {
    return stored_epoch > epoch ? BATON_STALE : BATON_OK;
}

/* write(p, e, ...) against a stored epoch: only the fenced epoch may write.
 * A lower stored epoch means the writer skipped fence(p, e): its offsets were
 * never agreed with the sink, so nothing may be applied. */
static inline int baton_sink__write_rule(int64_t stored_epoch, int64_t epoch) {
    if (stored_epoch > epoch)
        return BATON_STALE;
    if (stored_epoch < epoch)
        return BATON_UNFENCED;
    return BATON_OK;
}

/* Whether a record is applied: `floor` starts at the stored next_offset and
 * becomes offset + 1 after each applied record, so offsets below next_offset
 * (already applied) and out-of-order repeats within a batch are skipped, and
 * gaps are allowed. */
static inline bool baton_sink__applies(int64_t floor, int64_t offset) { return offset >= floor; }

#endif
