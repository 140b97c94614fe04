/* sink_sqlite.c: the embedded fenced sink, one SQLite file shared by every
 * process on a host. Each fence and write is one BEGIN IMMEDIATE transaction,
 * so processes serialise on SQLite's write lock and the fence check, the
 * output rows and next_offset commit together or not at all.
 *
 * The schema is fixed because external tools read it:
 *   baton_fence(grp, partition, epoch, next_offset, rejected)
 *   baton_output(grp, partition, offset, epoch, key, value)
 * and, for the second and later outputs of one input (processors that make
 * several outputs of a record; docs/sinks.md):
 *   baton_output_more(grp, partition, offset, seq, epoch, key, value)
 * and the sink's identity (sink_int.h):
 *   baton_meta(name, value), baton_groups(grp, group_uuid, bound_ms) */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "sink_int.h"
#include "sqlite_wait.h"

/* Opening (schema creation races) may wait long for the lock. A fence or a
 * write waits only briefly: the caller's loop also serves ZooKeeper, so it
 * must not sit in SQLite's busy handler for seconds. A writer frozen inside
 * a transaction (SIGSTOP) keeps the file's write lock until it resumes or
 * dies -- SQLite has no server to abort it -- so the others get BATON_BUSY
 * and retry; correctness is untouched (the frozen transaction either
 * commits before any newer fence or not at all). */
#define SQ_BUSY_TIMEOUT_MS 5000
#define SQ_OP_BUSY_TIMEOUT_MS 250

/* One connection and its cached statements. Every statement is reset right
 * after use, so none holds a read transaction open between calls. ?1 is the
 * group in every statement that has one; it is bound once at open and stays
 * bound (sqlite3_reset keeps bindings). */
typedef struct {
    sqlite3 *db;
    sqlite3_stmt *begin;           /* BEGIN IMMEDIATE */
    sqlite3_stmt *commit;          /* COMMIT */
    sqlite3_stmt *rollback;        /* ROLLBACK */
    sqlite3_stmt *fence_get;       /* ?2 partition -> epoch, next_offset, rejected */
    sqlite3_stmt *fence_insert;    /* ?2 partition, ?3 epoch */
    sqlite3_stmt *fence_set_epoch; /* ?2 partition, ?3 epoch */
    sqlite3_stmt *fence_reject;    /* ?2 partition: rejected += 1 */
    sqlite3_stmt *fence_set_next;  /* ?2 partition, ?3 next_offset */
    sqlite3_stmt *fence_list;      /* every row of ?1 by partition */
    sqlite3_stmt *output_insert;   /* ?2 partition, ?3 offset, ?4 epoch, ?5 key, ?6 value */
    sqlite3_stmt *more_insert;     /* the same and ?7 seq, into baton_output_more */
    sqlite3_stmt *groups_get;      /* the group's baton_groups row: group_uuid, bound_ms */
    sqlite3_stmt *groups_insert;   /* ?2 group_uuid, ?3 bound_ms */
    baton_sqlite_wait_t busy;      /* the wait for the write lock */
    /* sq_run's failed step's message: the reset after it can clear the
     * connection's (a statement whose re-preparation failed, for one, leaves
     * "not an error"), and sq_fail must name the error. */
    char step_err[256];
} sq_t;

/* SQLite's own busy handler (sqlite3_busy_timeout) sleeps 1, 2, 5, 10, 15,
 * 20, 25 ... ms between tries, so a writer behind a 1 ms commit often
 * sleeps 10-25 ms: with every worker of a host sharing the file, that was
 * most of a handoff's fence and a good part of the throughput lost to
 * contention. This one tries again after 100 us, then every 250 us, and
 * gives up after its timeout like the built-in one.
 *
 * SQLite's write lock has no queue: whoever tries first after the commit
 * gets it. The pause must not grow with the wait (it went up to 2 ms
 * here): behind a commit whose fsync stalls for hundreds of ms (a loaded
 * disk), a writer that had waited all along then tried 8 times less often
 * than one that had just arrived, lost to it, and ran out of its timeout
 * (six workers on one file in the rolling-restart bench: 250 ms busy, then
 * the retry). Every 250 us costs a waiter a few syscalls per try. */
#define SQ_BUSY_FIRST_US 100
#define SQ_BUSY_PAUSE_US 250
static int sq_busy(void *arg, int count) {
    baton_sqlite_wait_t *w = arg;
    int64_t now = baton_now_us();
    if (count == 0)
        w->since_us = now;
    if (now - w->since_us >= (int64_t)w->timeout_ms * 1000)
        return 0;
    baton_sleep_us(count < 20 ? SQ_BUSY_FIRST_US : SQ_BUSY_PAUSE_US);
    return 1;
}

void baton_sqlite_wait_set(sqlite3 *db, baton_sqlite_wait_t *w, int timeout_ms) {
    w->timeout_ms = timeout_ms;
    sqlite3_busy_handler(db, sq_busy, w);
}

static void sq_busy_set(sq_t *sq, int timeout_ms) {
    baton_sqlite_wait_set(sq->db, &sq->busy, timeout_ms);
}

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS baton_fence(grp TEXT, partition INTEGER, epoch INTEGER, "
    "next_offset INTEGER, rejected INTEGER, PRIMARY KEY(grp, partition));"
    "CREATE TABLE IF NOT EXISTS baton_output(grp TEXT, partition INTEGER, offset INTEGER, "
    "epoch INTEGER, key BLOB, value BLOB, PRIMARY KEY(grp, partition, offset));"
    "CREATE TABLE IF NOT EXISTS baton_output_more(grp TEXT, partition INTEGER, offset INTEGER, "
    "seq INTEGER, epoch INTEGER, key BLOB, value BLOB, "
    "PRIMARY KEY(grp, partition, offset, seq));"
    "CREATE TABLE IF NOT EXISTS baton_meta(name TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS baton_groups(grp TEXT PRIMARY KEY, group_uuid TEXT, "
    "bound_ms INTEGER);";

/* The expected shape of each table (sink_int.h). */
static const baton_sink_col_t fence_cols[] = {
    {"grp", "TEXT", 1},         {"partition", "INTEGER", 2},
    {"epoch", "INTEGER", 0},    {"next_offset", "INTEGER", 0},
    {"rejected", "INTEGER", 0},
};
static const baton_sink_col_t output_cols[] = {
    {"grp", "TEXT", 1},      {"partition", "INTEGER", 2}, {"offset", "INTEGER", 3},
    {"epoch", "INTEGER", 0}, {"key", "BLOB", 0},          {"value", "BLOB", 0},
};
static const baton_sink_col_t more_cols[] = {
    {"grp", "TEXT", 1},    {"partition", "INTEGER", 2}, {"offset", "INTEGER", 3},
    {"seq", "INTEGER", 4}, {"epoch", "INTEGER", 0},     {"key", "BLOB", 0},
    {"value", "BLOB", 0},
};
static const baton_sink_col_t meta_cols[] = {{"name", "TEXT", 1}, {"value", "TEXT", 0}};
static const baton_sink_col_t groups_cols[] = {
    {"grp", "TEXT", 1}, {"group_uuid", "TEXT", 0}, {"bound_ms", "INTEGER", 0}};

/* Maps an SQLite result to baton's bands. BUSY and LOCKED after the busy
 * timeout are retriable; a damaged or foreign file is CORRUPT; the rest
 * (disk full, I/O error, permissions...) is a backend failure. */
static int sq_map(int rc) {
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW: return BATON_OK;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return BATON_BUSY;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return BATON_CORRUPT;
    default: return BATON_IO;
    }
}

/* Ends any transaction still open on this connection. SQLite rolls back by
 * itself after some errors (I/O, full disk), so only roll back when one is
 * still open; a failed ROLLBACK is logged, and the next call retries it. */
static void sq_rollback(sq_t *sq) {
    if (sqlite3_get_autocommit(sq->db))
        return;
    int rc = sqlite3_step(sq->rollback);
    sqlite3_reset(sq->rollback);
    if (rc != SQLITE_DONE)
        BLOG_ERROR("event=sink_rollback_failed error=\"%s\"", baton_log_q(sqlite3_errmsg(sq->db)));
}

/* Records an SQLite failure of `what` (on partition, if >= 0) in the sink's errstr, rolls back and
 * returns the mapped error. The message is captured before the rollback,
 * which would overwrite it. */
static int sq_fail(baton_sink_t *sink, int rc, const char *what, int32_t partition) {
    sq_t *sq = sink->be;
    int err = sq_map(rc);
    if (err == BATON_OK) /* a step that returned an unexpected row */
        err = BATON_INTERNAL;
    char where[32] = "";
    if (partition >= 0)
        snprintf(where, sizeof(where), " partition %d", (int)partition);
    const char *msg = sqlite3_errcode(sq->db) == SQLITE_OK && sq->step_err[0]
                          ? sq->step_err
                          : sqlite3_errmsg(sq->db);
    baton_sink__seterr(sink, err, "sink '%s' group '%s'%s: %s: %s%s", sink->uri, sink->group, where,
                       what, msg, err == BATON_BUSY ? " (retriable)" : "");
    sq->step_err[0] = '\0';
    sq_rollback(sq);
    if (err == BATON_BUSY)
        BLOG_WARN("event=sink_busy uri=%s group=%s partition=%d op=%s", baton_log_v(sink->uri),
                  baton_log_v(sink->group), (int)partition, baton_log_v(what));
    else
        BLOG_ERROR("event=sink_failed uri=%s group=%s partition=%d op=%s error=\"%s\"",
                   baton_log_v(sink->uri), baton_log_v(sink->group), (int)partition,
                   baton_log_v(what), baton_log_q(sink->errstr));
    return err;
}

/* Runs a statement of sq that returns no rows; returns an SQLite code. */
static int sq_run(sq_t *sq, sqlite3_stmt *stmt) {
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE)
        sq->step_err[0] = '\0';
    else
        snprintf(sq->step_err, sizeof(sq->step_err), "%s", sqlite3_errmsg(sq->db));
    sqlite3_reset(stmt);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* A transaction that an earlier call could not roll back would make BEGIN
 * fail forever; end it first. */
static int sq_begin(sq_t *sq) {
    if (!sqlite3_get_autocommit(sq->db)) {
        BLOG_WARN("event=sink_stale_transaction action=rollback");
        sq_rollback(sq);
    }
    return sq_run(sq, sq->begin);
}

/* The stored fence of one partition. */
typedef struct {
    int64_t epoch;
    int64_t next_offset;
    int64_t rejected;
} sq_fence_t;

/* A stored fence value must be a non-negative integer: NULL, text or real
 * means someone else wrote the row, and guessing would break fencing. */
static int sq_column_i64(sqlite3_stmt *stmt, int col, int64_t *out) {
    if (sqlite3_column_type(stmt, col) != SQLITE_INTEGER)
        return -1;
    *out = sqlite3_column_int64(stmt, col);
    return *out < 0 ? -1 : 0;
}

/* Steps a statement that returns at most one row: BATON_OK with *found
 * (the statement stays on the row for the caller to read and reset; reset
 * already when there is none), or an SQLite failure (rolled back). */
static int sq_one_row(baton_sink_t *sink, sqlite3_stmt *st, const char *what, int32_t partition,
                      int *found) {
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW)
        return BATON_OK;
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? BATON_OK : sq_fail(sink, rc, what, partition);
}

/* Reads the fence row of partition inside the caller's transaction. Returns
 * BATON_OK with *found set, BATON_CORRUPT, or an SQLite failure (rolled back). */
static int sq_fence_get(baton_sink_t *sink, int32_t partition, sq_fence_t *f, int *found) {
    sq_t *sq = sink->be;
    sqlite3_stmt *st = sq->fence_get;
    sqlite3_bind_int(st, 2, partition);
    int err = sq_one_row(sink, st, "read fence", partition, found);
    if (err || !*found)
        return err;
    static const char *const names[] = {"epoch", "next_offset", "rejected"};
    int64_t *vals[] = {&f->epoch, &f->next_offset, &f->rejected};
    for (int i = 0; i < 3; i++) {
        if (sq_column_i64(st, i, vals[i]) == 0)
            continue;
        const char *type =
            sqlite3_column_type(st, i) == SQLITE_NULL ? "NULL" : "not a non-negative integer";
        sqlite3_reset(st);
        sq_rollback(sq);
        baton_sink__seterr(sink, BATON_CORRUPT,
                           "sink '%s' group '%s' partition %d: baton_fence.%s is %s", sink->uri,
                           sink->group, (int)partition, names[i], type);
        BLOG_ERROR("event=sink_corrupt uri=%s group=%s partition=%d column=%s",
                   baton_log_v(sink->uri), baton_log_v(sink->group), (int)partition,
                   baton_log_v(names[i]));
        return BATON_CORRUPT;
    }
    sqlite3_reset(st);
    *found = 1;
    return BATON_OK;
}

/* Counts a rejected fence or write of partition in baton_fence.rejected,
 * inside the caller's open transaction, so operators see zombies there, and
 * logs it with its message (baton_sink__stale). stored_epoch is the epoch
 * that owns the partition. Returns BATON_OK, or an SQLite failure with the
 * transaction rolled back. */
static int sq_count_stale(baton_sink_t *sink, const char *op, int32_t partition, int64_t epoch,
                          int64_t stored_epoch) {
    sq_t *sq = sink->be;
    sqlite3_bind_int(sq->fence_reject, 2, partition);
    int rc = sq_run(sq, sq->fence_reject);
    if (rc != SQLITE_OK)
        return sq_fail(sink, rc, "count rejection", partition);
    baton_sink__stale(sink, op, partition, epoch, stored_epoch);
    return BATON_OK;
}

/* Reads the group's baton_groups row (inside or outside a transaction):
 * BATON_OK with *found, and uuid/bound_ms when found; BATON_CORRUPT for a
 * row baton did not write; or an SQLite failure (rolled back). */
static int sq_group_row(baton_sink_t *sink, int *found, char *uuid, size_t size,
                        int64_t *bound_ms) {
    sq_t *sq = sink->be;
    sqlite3_stmt *st = sq->groups_get;
    int err = sq_one_row(sink, st, "read baton_groups", -1, found);
    if (err || !*found)
        return err;
    const char *u = (const char *)sqlite3_column_text(st, 0);
    int ok = u && baton_uuid_valid(u) == 0 && sq_column_i64(st, 1, bound_ms) == 0;
    if (ok)
        snprintf(uuid, size, "%s", u);
    sqlite3_reset(st);
    if (!ok) {
        sq_rollback(sq);
        return baton_sink__seterr(sink, BATON_CORRUPT,
                                  "sink '%s' group '%s': the baton_groups row is not a group id "
                                  "and a time",
                                  sink->uri, sink->group);
    }
    return BATON_OK;
}

/* Inside a fence's transaction: records sink->expect_group for the group,
 * or refuses (rolled back) if the sink records another (sink_int.h). */
static int sq_group_check(baton_sink_t *sink) {
    sq_t *sq = sink->be;
    if (!sink->expect_group)
        return BATON_OK;
    char uuid[BATON_SINK_ID_SIZE];
    int64_t bound_ms = 0;
    int found = 0;
    int err = sq_group_row(sink, &found, uuid, sizeof(uuid), &bound_ms);
    if (err)
        return err;
    if (found && strcasecmp(uuid, sink->expect_group) == 0)
        return BATON_OK;
    if (found) {
        sq_rollback(sq);
        return baton_sink__group_conflict(sink, uuid, bound_ms);
    }
    sqlite3_bind_text(sq->groups_insert, 2, sink->expect_group, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(sq->groups_insert, 3, baton_wall_ms());
    int rc = sq_run(sq, sq->groups_insert);
    if (rc != SQLITE_OK)
        return sq_fail(sink, rc, "insert baton_groups", -1);
    BLOG_INFO("event=sink_group_recorded uri=%s group=%s group_uuid=%s", baton_log_v(sink->uri),
              baton_log_v(sink->group), baton_log_v(sink->expect_group));
    return BATON_OK;
}

static int sq_group_get(baton_sink_t *sink, baton_sink_meta_t *out) {
    int found = 0;
    return sq_group_row(sink, &found, out->group_uuid, sizeof(out->group_uuid), &out->bound_ms);
}

static int sq_write_body(baton_sink_t *sink, int32_t partition, int64_t epoch,
                         const baton_sink_input_t *inputs, size_t ninputs, int64_t *next_offset,
                         size_t *applied, sq_fence_t *f, int *found);

/* fence(p, e) for every partition inside one BEGIN IMMEDIATE transaction,
 * one commit: the group check, then per partition a new row at
 * next_offset 0, or the fence rule against the stored epoch. A stale
 * partition is counted in rejected in the same transaction and reported in
 * its result. A fenced partition whose held inputs start at or before its
 * next_offset is written in the same transaction (sq_write_body: the
 * epoch it checks is the one just stored), the commit gated then. */
static int sq_fence_many(baton_sink_t *sink, baton_sink_fence_t *fences, size_t n) {
    sq_t *sq = sink->be;
    int rc = sq_begin(sq);
    if (rc != SQLITE_OK)
        return sq_fail(sink, rc, "begin fence", fences[0].partition);
    int gerr = sq_group_check(sink);
    if (gerr)
        return gerr;
    size_t stale = 0;
    for (size_t i = 0; i < n; i++) {
        baton_sink_fence_t *fi = &fences[i];
        int32_t p = fi->partition;
        sq_fence_t f;
        int found;
        int err = sq_fence_get(sink, p, &f, &found);
        if (err)
            return err;
        fi->result = BATON_OK;
        if (!found) {
            sqlite3_bind_int(sq->fence_insert, 2, p);
            sqlite3_bind_int64(sq->fence_insert, 3, fi->epoch);
            if ((rc = sq_run(sq, sq->fence_insert)) != SQLITE_OK)
                return sq_fail(sink, rc, "insert fence", p);
            f.next_offset = 0;
        } else if (baton_sink__fence_rule(f.epoch, fi->epoch) == BATON_STALE) {
            if ((err = sq_count_stale(sink, "fence", p, fi->epoch, f.epoch)))
                return err;
            fi->result = BATON_STALE;
            stale++;
            continue;
        } else if (f.epoch != fi->epoch) {
            sqlite3_bind_int(sq->fence_set_epoch, 2, p);
            sqlite3_bind_int64(sq->fence_set_epoch, 3, fi->epoch);
            if ((rc = sq_run(sq, sq->fence_set_epoch)) != SQLITE_OK)
                return sq_fail(sink, rc, "store epoch", p);
        }
        fi->fenced_next = f.next_offset;
        BLOG_DEBUG("event=sink_fenced uri=%s group=%s partition=%d epoch=%lld next_offset=%lld",
                   baton_log_v(sink->uri), baton_log_v(sink->group), (int)p, (long long)fi->epoch,
                   (long long)f.next_offset);
        if (fi->ninputs && fi->from <= fi->fenced_next) {
            err = sq_write_body(sink, p, fi->epoch, fi->inputs, fi->ninputs, &fi->next_offset,
                                &fi->applied, &f, &found);
            if (err == BATON_STALE || err == BATON_UNFENCED) {
                /* The epoch is the one just stored: not a refusal but a bug. */
                sq_rollback(sq);
                return baton_sink__fence_changed(sink, p);
            }
            if (err)
                return err; /* rolled back */
            fi->written = 1;
        }
    }
    if ((gerr = baton_sink__fence_gate(sink, fences, n)) != BATON_OK) {
        sq_rollback(sq);
        return gerr;
    }
    rc = sq_run(sq, sq->commit);
    if (rc != SQLITE_OK)
        return sq_fail(sink, rc, "commit fence", fences[0].partition);
    if (n > 1)
        BLOG_DEBUG("event=sink_fenced_many uri=%s group=%s partitions=%zu stale=%zu",
                   baton_log_v(sink->uri), baton_log_v(sink->group), n, stale);
    return BATON_OK;
}

/* Binds a key or value: NULL stays SQL NULL, anything else (even empty) is a
 * BLOB. SQLITE_STATIC is safe because the statement is stepped and reset
 * before baton_sink_write returns. */
static void sq_bind_blob(sqlite3_stmt *st, int idx, const void *p, size_t len) {
    if (!p)
        sqlite3_bind_null(st, idx);
    else
        sqlite3_bind_blob64(st, idx, len ? p : "", len, SQLITE_STATIC);
}

/* Inserts output seq of input offset: seq 0 into baton_output, the rest
 * into baton_output_more. Returns BATON_OK, or an error with everything
 * rolled back. */
static int sq_insert_output(baton_sink_t *sink, int32_t partition, int64_t offset, size_t seq,
                            const baton_sink_output_t *o, int64_t next_offset) {
    sq_t *sq = sink->be;
    sqlite3_stmt *ins = seq ? sq->more_insert : sq->output_insert;
    sqlite3_bind_int64(ins, 3, offset);
    sq_bind_blob(ins, 5, o->key, o->key_len);
    sq_bind_blob(ins, 6, o->value, o->value_len);
    if (seq)
        sqlite3_bind_int64(ins, 7, (int64_t)seq);
    int rc = sq_run(sq, ins);
    /* Drop the pointers into the caller's records. */
    sqlite3_bind_null(ins, 5);
    sqlite3_bind_null(ins, 6);
    if (rc == SQLITE_OK)
        return BATON_OK;
    /* A row at or above next_offset means baton_fence and the output
     * tables disagree: someone edited one without the other. */
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        const char *table = seq ? "baton_output_more" : "baton_output";
        sq_rollback(sq);
        BLOG_ERROR("event=sink_corrupt uri=%s group=%s partition=%d table=%s offset=%lld seq=%zu "
                   "next_offset=%lld",
                   baton_log_v(sink->uri), baton_log_v(sink->group), (int)partition,
                   baton_log_v(table), (long long)offset, seq, (long long)next_offset);
        return baton_sink__seterr(sink, BATON_CORRUPT,
                                  "sink '%s' group '%s' partition %d: offset %lld%s is already "
                                  "in %s but next_offset is %lld",
                                  sink->uri, sink->group, (int)partition, (long long)offset,
                                  seq ? " (a second or later output)" : "", table,
                                  (long long)next_offset);
    }
    return sq_fail(sink, rc, seq ? "insert output_more" : "insert output", partition);
}

/* One batch's steps inside an open transaction: read the fence row, apply
 * the write rule, insert the outputs of the inputs not yet applied, move
 * next_offset. Returns BATON_OK (*next_offset, *applied set), BATON_STALE
 * or BATON_UNFENCED (nothing written; *f and *found say why), or an error
 * with the transaction rolled back (sq_fail). */
static int sq_write_body(baton_sink_t *sink, int32_t partition, int64_t epoch,
                         const baton_sink_input_t *inputs, size_t ninputs, int64_t *next_offset,
                         size_t *applied, sq_fence_t *f, int *found) {
    sq_t *sq = sink->be;
    int err = sq_fence_get(sink, partition, f, found);
    if (err)
        return err;
    err = *found ? baton_sink__write_rule(f->epoch, epoch) : BATON_UNFENCED;
    if (err)
        return err;

    int64_t floor = f->next_offset;
    size_t n = 0;
    sqlite3_bind_int(sq->output_insert, 2, partition);
    sqlite3_bind_int64(sq->output_insert, 4, epoch);
    sqlite3_bind_int(sq->more_insert, 2, partition);
    sqlite3_bind_int64(sq->more_insert, 4, epoch);
    for (size_t i = 0; i < ninputs; i++) {
        const baton_sink_input_t *in = &inputs[i];
        if (!baton_sink__applies(floor, in->offset))
            continue;
        for (size_t j = 0; j < in->noutputs; j++) {
            err = sq_insert_output(sink, partition, in->offset, j, &in->outputs[j], f->next_offset);
            if (err)
                return err;
        }
        /* An input without outputs is consumed all the same. */
        floor = in->offset + 1;
        n++;
    }
    if (n) {
        sqlite3_bind_int(sq->fence_set_next, 2, partition);
        sqlite3_bind_int64(sq->fence_set_next, 3, floor);
        int rc = sq_run(sq, sq->fence_set_next);
        if (rc != SQLITE_OK)
            return sq_fail(sink, rc, "store next_offset", partition);
    }
    *next_offset = floor;
    *applied = n;
    return BATON_OK;
}

/* write(p, e, batch) for every batch inside one BEGIN IMMEDIATE
 * transaction, one commit (sq_write_body). A stale batch is counted in rejected in the same
 * transaction; an unfenced one writes nothing; both are reported in their
 * result and leave the other batches alone. */
static int sq_write_many(baton_sink_t *sink, baton_sink_batch_t *batches, size_t n) {
    sq_t *sq = sink->be;
    int rc = sq_begin(sq);
    if (rc != SQLITE_OK)
        return sq_fail(sink, rc, "begin write", batches[0].partition);
    for (size_t i = 0; i < n; i++) {
        baton_sink_batch_t *b = &batches[i];
        sq_fence_t f;
        int found;
        int err = sq_write_body(sink, b->partition, b->epoch, b->inputs, b->ninputs,
                                &b->next_offset, &b->applied, &f, &found);
        if (err == BATON_STALE) {
            int cerr = sq_count_stale(sink, "write", b->partition, b->epoch, f.epoch);
            if (cerr)
                return cerr;
        } else if (err == BATON_UNFENCED) {
            baton_sink__unfenced(sink, b->partition, b->epoch, found, f.epoch);
        } else if (err) {
            return err; /* rolled back: nothing of any batch applied */
        }
        b->result = err;
    }
    int gerr = baton_sink__commit_gate(sink, batches, n);
    if (gerr != BATON_OK) {
        sq_rollback(sq);
        for (size_t i = 0; i < n; i++)
            batches[i].applied = 0;
        return gerr;
    }
    rc = sq_run(sq, sq->commit);
    if (rc != SQLITE_OK) {
        for (size_t i = 0; i < n; i++)
            batches[i].applied = 0;
        return sq_fail(sink, rc, "commit write", batches[0].partition);
    }
    return BATON_OK;
}

static int sq_fences(baton_sink_t *sink, baton_fence_row_t **rows, size_t *nrows) {
    sq_t *sq = sink->be;
    sqlite3_stmt *st = sq->fence_list;
    baton_fence_row_t *out = NULL;
    size_t n = 0, cap = 0;
    int rc;
    /* One statement reads one snapshot, so no explicit transaction. */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            out = xrealloc(out, cap * sizeof(*out));
        }
        baton_fence_row_t *row = &out[n];
        int64_t part;
        if (sqlite3_column_type(st, 0) != SQLITE_INTEGER ||
            (part = sqlite3_column_int64(st, 0)) < 0 || part > INT32_MAX ||
            sq_column_i64(st, 1, &row->epoch) || sq_column_i64(st, 2, &row->next_offset) ||
            sq_column_i64(st, 3, &row->rejected)) {
            sqlite3_reset(st);
            free(out);
            BLOG_ERROR("event=sink_corrupt uri=%s group=%s op=fences", baton_log_v(sink->uri),
                       baton_log_v(sink->group));
            return baton_sink__seterr(sink, BATON_CORRUPT,
                                      "sink '%s' group '%s': a baton_fence row has a NULL or "
                                      "non-integer partition, epoch, next_offset or rejected",
                                      sink->uri, sink->group);
        }
        row->partition = (int32_t)part;
        n++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        free(out);
        return sq_fail(sink, rc, "list fences", -1);
    }
    *rows = out;
    *nrows = n;
    return BATON_OK;
}

/* fence_get per partition, in one read transaction (one snapshot). */
static int sq_fences_of(baton_sink_t *sink, const int32_t *parts, size_t n,
                        baton_fence_row_t **rows, size_t *nrows) {
    sq_t *sq = sink->be;
    if (!sqlite3_get_autocommit(sq->db)) {
        BLOG_WARN("event=sink_stale_transaction action=rollback");
        sq_rollback(sq);
    }
    /* deferred: a read takes no write lock */
    int rc = sqlite3_exec(sq->db, "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return sq_fail(sink, rc, "read fences", parts[0]);
    baton_fence_row_t *out = NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        sq_fence_t f;
        int found = 0;
        int err = sq_fence_get(sink, parts[i], &f, &found);
        if (err) {
            sq_rollback(sq); /* a no-op when sq_fence_get rolled back */
            free(out);
            return err;
        }
        if (!found)
            continue;
        if (!out)
            out = xcalloc(n - i, sizeof(*out));
        out[k++] = (baton_fence_row_t){.partition = parts[i],
                                       .epoch = f.epoch,
                                       .next_offset = f.next_offset,
                                       .rejected = f.rejected};
    }
    sq_rollback(sq); /* read only: nothing to commit */
    *rows = out;
    *nrows = k;
    return BATON_OK;
}

static int sq_set_busy_timeout(baton_sink_t *sink, int timeout_ms) {
    sq_t *sq = sink->be;
    sq_busy_set(sq, timeout_ms);
    return BATON_OK;
}

static void sq_close(baton_sink_t *sink) {
    sq_t *sq = sink->be;
    if (!sq)
        return;
    sqlite3_stmt *stmts[] = {sq->begin,         sq->commit,         sq->rollback,
                             sq->fence_get,     sq->fence_insert,   sq->fence_set_epoch,
                             sq->fence_reject,  sq->fence_set_next, sq->fence_list,
                             sq->output_insert, sq->more_insert,    sq->groups_get,
                             sq->groups_insert};
    if (sq->db && sq->rollback)
        sq_rollback(sq);
    for (size_t i = 0; i < BATON_ARRAY_SIZE(stmts); i++)
        sqlite3_finalize(stmts[i]);
    /* sqlite3_close_v2 also checkpoints the WAL when this is the last
     * connection; it cannot fail once every statement is finalised. */
    sqlite3_close_v2(sq->db);
    free(sq);
    sink->be = NULL;
}

/* Checks that `table` is a table with exactly the columns baton created, in
 * order, with the same types and primary key. A table of the same name made
 * by another program would otherwise fail later, mid-protocol. A missing
 * table is BATON_NOTFOUND (no message) unless `created`: then the schema
 * transaction just created it, and it is corrupt. */
static int sq_check_table(baton_sink_t *sink, const char *table, const baton_sink_col_t *cols,
                          size_t ncols, int created, char *errstr, size_t errstr_size) {
    sq_t *sq = sink->be;
    sqlite3_stmt *st = NULL;
    int err = BATON_OK;
    int rc = sqlite3_prepare_v2(
        sq->db, "SELECT type FROM sqlite_master WHERE name = ?1 COLLATE NOCASE", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const char *type = (const char *)sqlite3_column_text(st, 0);
            if (!type || strcmp(type, "table") != 0)
                err = baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                                   "sink '%s': '%s' is a %s, not a table", sink->uri, table,
                                   type ? type : "NULL");
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            err = created ? baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                                         "sink '%s': table '%s' is missing after creating it",
                                         sink->uri, table)
                          : BATON_NOTFOUND;
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_OK || err)
        goto out;

    rc = sqlite3_prepare_v2(sq->db, "SELECT name, type, pk FROM pragma_table_info(?1) ORDER BY cid",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    size_t i = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const char *type = (const char *)sqlite3_column_text(st, 1);
        int pk = sqlite3_column_int(st, 2);
        name = name ? name : "";
        type = type ? type : "";
        err = baton_sink__check_column(sink, table, cols, ncols, i, name, type, pk, errstr,
                                       errstr_size);
        if (err)
            break;
        i++;
    }
    if (!err && rc == SQLITE_DONE && i < ncols)
        err = baton_sink__check_column(sink, table, cols, ncols, i, NULL, NULL, 0, errstr,
                                       errstr_size);
    if (err || rc == SQLITE_DONE)
        rc = SQLITE_OK;
out:
    if (!err && rc != SQLITE_OK)
        err = baton_seterr(errstr, errstr_size, sq_map(rc) ? sq_map(rc) : BATON_IO,
                           "sink '%s': checking table '%s': %s", sink->uri, table,
                           sqlite3_errmsg(sq->db));
    sqlite3_finalize(st);
    return err;
}

/* Inside the schema transaction: gives the sink its id if it has none
 * (a new file, or one from before ids; only when `create`, else a missing
 * id is BATON_NOTFOUND) and reads it into sink->sink_id. */
static int sq_sink_id(baton_sink_t *sink, int create, char *errstr, size_t errstr_size) {
    sq_t *sq = sink->be;
    char fresh[BATON_SINK_ID_SIZE];
    if (baton_uuid_new(fresh) != 0)
        return baton_seterr(errstr, errstr_size, BATON_INTERNAL,
                            "sink '%s': no randomness for the sink id", sink->uri);
    sqlite3_stmt *st = NULL;
    int err = BATON_OK;
    int rc = SQLITE_OK;
    if (create) {
        rc = sqlite3_prepare_v2(
            sq->db, "INSERT OR IGNORE INTO baton_meta(name, value) VALUES ('sink_id', ?1)", -1, &st,
            NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_text(st, 1, fresh, -1, SQLITE_STATIC);
            rc = sqlite3_step(st);
            rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(sq->db, "SELECT value FROM baton_meta WHERE name = 'sink_id'", -1,
                                &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_DONE && !create) {
        err = BATON_NOTFOUND; /* a file from before ids: the write pass gives it one */
        rc = SQLITE_OK;
    } else if (rc == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (id && baton_uuid_valid(id) == 0)
            snprintf(sink->sink_id, sizeof(sink->sink_id), "%s", id);
        else
            err = baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                               "sink '%s': baton_meta's sink_id '%s' is not a UUID", sink->uri,
                               id ? id : "NULL");
        rc = SQLITE_OK;
    }
    if (!err && rc != SQLITE_OK)
        err = baton_seterr(errstr, errstr_size, sq_map(rc) ? sq_map(rc) : BATON_IO,
                           "sink '%s': reading the sink id: %s", sink->uri, sqlite3_errmsg(sq->db));
    sqlite3_finalize(st);
    return err;
}

/* One pass over the schema in one transaction. create = 0: a read
 * transaction that checks the tables' shape and reads the sink id, and
 * returns BATON_NOTFOUND if a table or the id is missing. create = 1: a
 * write transaction that creates what is missing, then checks the same. */
static int sq_schema_pass(baton_sink_t *sink, int create, char *errstr, size_t errstr_size) {
    static const struct {
        const char *table;
        const baton_sink_col_t *cols;
        size_t ncols;
    } tables[] = {
        {"baton_fence", fence_cols, BATON_ARRAY_SIZE(fence_cols)},
        {"baton_output", output_cols, BATON_ARRAY_SIZE(output_cols)},
        {"baton_output_more", more_cols, BATON_ARRAY_SIZE(more_cols)},
        {"baton_meta", meta_cols, BATON_ARRAY_SIZE(meta_cols)},
        {"baton_groups", groups_cols, BATON_ARRAY_SIZE(groups_cols)},
    };
    sq_t *sq = sink->be;
    int rc = sqlite3_exec(sq->db, create ? "BEGIN IMMEDIATE" : "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return baton_seterr(errstr, errstr_size, sq_map(rc), "sink '%s': locking the schema: %s",
                            sink->uri, sqlite3_errmsg(sq->db));
    int err = BATON_OK;
    if (create && (rc = sqlite3_exec(sq->db, schema_sql, NULL, NULL, NULL)) != SQLITE_OK) {
        err = baton_seterr(errstr, errstr_size, sq_map(rc), "sink '%s': creating the schema: %s",
                           sink->uri, sqlite3_errmsg(sq->db));
        goto fail;
    }
    for (size_t i = 0; !err && i < BATON_ARRAY_SIZE(tables); i++)
        err = sq_check_table(sink, tables[i].table, tables[i].cols, tables[i].ncols, create, errstr,
                             errstr_size);
    if (!err)
        err = sq_sink_id(sink, create, errstr, errstr_size);
    if (err)
        goto fail;
    rc = sqlite3_exec(sq->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        err = baton_seterr(errstr, errstr_size, sq_map(rc), "sink '%s': creating the schema: %s",
                           sink->uri, sqlite3_errmsg(sq->db));
        goto fail;
    }
    return BATON_OK;
fail:
    if (!sqlite3_get_autocommit(sq->db))
        sqlite3_exec(sq->db, "ROLLBACK", NULL, NULL, NULL);
    return err;
}

/* Checks the schema, creating what is missing. Most opens find all of it
 * there and check it in a read transaction, which in WAL mode neither
 * waits for the other processes writing this file nor makes them wait: a
 * worker's start held the write lock for 0.4-12 ms while it read the
 * schema (measured in the rolling-restart benchmark), and every other
 * worker on the host stalled behind it. A file that lacks a table or the
 * sink id (a new one, or one from an older baton) takes the write lock:
 * processes that open a new file at once queue on it (busy timeout), and
 * the later ones find the tables already there. */
static int sq_schema(baton_sink_t *sink, char *errstr, size_t errstr_size) {
    int err = sq_schema_pass(sink, 0, errstr, errstr_size);
    return err == BATON_NOTFOUND ? sq_schema_pass(sink, 1, errstr, errstr_size) : err;
}

static int sq_prepare(sq_t *sq, const char *sql, sqlite3_stmt **out) {
    return sqlite3_prepare_v3(sq->db, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL);
}

static int sq_prepare_all(baton_sink_t *sink, char *errstr, size_t errstr_size) {
    sq_t *sq = sink->be;
    struct {
        sqlite3_stmt **stmt;
        const char *sql;
        int has_group;
    } defs[] = {
        {&sq->begin, "BEGIN IMMEDIATE", 0},
        {&sq->commit, "COMMIT", 0},
        {&sq->rollback, "ROLLBACK", 0},
        {&sq->fence_get,
         "SELECT epoch, next_offset, rejected FROM baton_fence WHERE grp = ?1 AND partition = ?2",
         1},
        {&sq->fence_insert,
         "INSERT INTO baton_fence(grp, partition, epoch, next_offset, rejected) "
         "VALUES (?1, ?2, ?3, 0, 0)",
         1},
        {&sq->fence_set_epoch,
         "UPDATE baton_fence SET epoch = ?3 WHERE grp = ?1 AND partition = ?2", 1},
        {&sq->fence_reject,
         "UPDATE baton_fence SET rejected = rejected + 1 WHERE grp = ?1 AND partition = ?2", 1},
        {&sq->fence_set_next,
         "UPDATE baton_fence SET next_offset = ?3 WHERE grp = ?1 AND partition = ?2", 1},
        {&sq->fence_list,
         "SELECT partition, epoch, next_offset, rejected FROM baton_fence WHERE grp = ?1 "
         "ORDER BY partition",
         1},
        {&sq->output_insert,
         "INSERT INTO baton_output(grp, partition, offset, epoch, key, value) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
         1},
        {&sq->more_insert,
         "INSERT INTO baton_output_more(grp, partition, offset, seq, epoch, key, value) "
         "VALUES (?1, ?2, ?3, ?7, ?4, ?5, ?6)",
         1},
        {&sq->groups_get, "SELECT group_uuid, bound_ms FROM baton_groups WHERE grp = ?1", 1},
        {&sq->groups_insert,
         "INSERT INTO baton_groups(grp, group_uuid, bound_ms) VALUES (?1, ?2, ?3)", 1},
    };
    for (size_t i = 0; i < BATON_ARRAY_SIZE(defs); i++) {
        int rc = sq_prepare(sq, defs[i].sql, defs[i].stmt);
        if (rc != SQLITE_OK)
            return baton_seterr(errstr, errstr_size, sq_map(rc) ? sq_map(rc) : BATON_IO,
                                "sink '%s': preparing '%s': %s", sink->uri, defs[i].sql,
                                sqlite3_errmsg(sq->db));
        /* The group string lives as long as the sink. */
        if (defs[i].has_group)
            sqlite3_bind_text(*defs[i].stmt, 1, sink->group, -1, SQLITE_STATIC);
    }
    return BATON_OK;
}

/* Turns the part after "sqlite:" into a file name for sqlite3_open_v2, or
 * explains why it cannot be one. Returns a heap string or NULL. */
static char *sq_path(const baton_sink_t *sink, const char *target, char *errstr,
                     size_t errstr_size) {
    const char *path = target;
    /* "sqlite:///abs/path" is accepted as the URL spelling of "sqlite:/abs/path".
     * "sqlite://name" is refused: URL readers take "name" as a host, path
     * readers as "//name"; neither guess is safe for the file that fences. */
    if (strncmp(path, "//", 2) == 0) {
        if (path[2] != '/') {
            baton_seterr(errstr, errstr_size, BATON_INVALID,
                         "sink '%s': ambiguous path; write sqlite:%s for a relative path or "
                         "sqlite:///%s for an absolute one",
                         sink->uri, path + 2, path + 2);
            return NULL;
        }
        path += 2;
    }
    if (!*path) {
        baton_seterr(errstr, errstr_size, BATON_INVALID, "sink '%s': empty path (use sqlite:PATH)",
                     sink->uri);
        return NULL;
    }
    /* An in-memory or temporary database is private to one connection, so
     * it could not fence another process. */
    if (strcmp(path, ":memory:") == 0) {
        baton_seterr(errstr, errstr_size, BATON_INVALID,
                     "sink '%s': an in-memory database cannot fence other processes; "
                     "use a file path",
                     sink->uri);
        return NULL;
    }
    /* Debian builds SQLite with URI file names on, so "file:..." would be
     * parsed for options such as nolock=1 or vfs=unix-none, which switch
     * off the locking fencing depends on. Keep PATH a plain file name. */
    if (strncmp(path, "file:", 5) == 0)
        return xasprintf("./%s", path);
    return xstrdup(path);
}

/* Switches the file to WAL, which lets readers (batonctl) run beside the one
 * writer and is persistent in the file; it needs every process on one host,
 * which the embedded sink assumes anyway. This is the first statement, so a
 * file that is not a database fails here with SQLITE_NOTADB.
 *
 * SQLite returns SQLITE_BUSY from this pragma without calling the busy
 * handler while another process is switching the same new file (8 processes
 * opening a fresh file at once: about one in ten failed), so it is retried
 * here for as long as the busy timeout would have waited. */
int baton_sqlite_wal(sqlite3 *db, int timeout_ms, char *mode, size_t n) {
    int64_t deadline = baton_now_ms() + timeout_ms;
    for (int64_t pause_ms = 1;; pause_ms = pause_ms < 32 ? pause_ms * 2 : 50) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const char *m = (const char *)sqlite3_column_text(st, 0);
            snprintf(mode, n, "%s", m ? m : "?");
            rc = SQLITE_OK;
        }
        sqlite3_finalize(st);
        if ((rc & 0xff) != SQLITE_BUSY || baton_now_ms() >= deadline)
            return rc;
        baton_sleep_ms(pause_ms);
    }
}

static int sq_set_wal(baton_sink_t *sink, const char *path, char *errstr, size_t errstr_size) {
    sq_t *sq = sink->be;
    char mode[16];
    int rc = baton_sqlite_wal(sq->db, SQ_BUSY_TIMEOUT_MS, mode, sizeof(mode));
    if (rc != SQLITE_OK)
        return baton_seterr(errstr, errstr_size, sq_map(rc) ? sq_map(rc) : BATON_IO,
                            "sink '%s': '%s' is not a usable SQLite database: %s", sink->uri, path,
                            sqlite3_errmsg(sq->db));
    if (strcasecmp(mode, "wal") != 0)
        BLOG_WARN("event=sink_no_wal uri=%s journal_mode=%s", baton_log_v(sink->uri),
                  baton_log_v(mode));
    return BATON_OK;
}

/* 1 if path does not exist and its directory is one this process may
 * create it in, 0 if path exists, or an error naming the directory (or the
 * path) that is wrong: SQLite's own "unable to open database file" names
 * neither. */
static int sq_place(const baton_sink_t *sink, const char *path, char *errstr, size_t errstr_size) {
    struct stat st;
    if (stat(path, &st) == 0)
        return 0;
    if (errno != ENOENT)
        return baton_seterr(errstr, errstr_size, BATON_IO, "sink '%s': cannot reach '%s': %s",
                            sink->uri, path, strerror(errno));
    const char *slash = strrchr(path, '/');
    char *dir =
        slash ? xasprintf("%.*s", (int)(slash == path ? 1 : slash - path), path) : xstrdup(".");
    int err = 1;
    if (stat(dir, &st) != 0)
        err = baton_seterr(errstr, errstr_size, BATON_NOTFOUND,
                           "sink '%s': directory '%s' %s; create it first", sink->uri, dir,
                           errno == ENOENT ? "does not exist" : strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        err = baton_seterr(errstr, errstr_size, BATON_INVALID, "sink '%s': '%s' is not a directory",
                           sink->uri, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        err = baton_seterr(errstr, errstr_size, BATON_IO,
                           "sink '%s': cannot create '%s' in directory '%s': %s", sink->uri, path,
                           dir, strerror(errno));
    free(dir);
    return err;
}

static int sq_missing(baton_sink_t *sink, const char *target, char *errstr, size_t errstr_size) {
    char *path = sq_path(sink, target, errstr, errstr_size);
    if (!path)
        return BATON_INVALID;
    int rc = sq_place(sink, path, errstr, errstr_size);
    free(path);
    return rc;
}

static int sq_open(baton_sink_t *sink, const char *target, char *errstr, size_t errstr_size) {
    int place = sq_missing(sink, target, errstr, errstr_size);
    if (place < 0)
        return place;
    char *path = sq_path(sink, target, errstr, errstr_size);

    sq_t *sq = xcalloc(1, sizeof(*sq));
    sink->be = sq;
    int err;
    /* NOMUTEX: a baton_sink_t is used by one thread at a time (sink.h), so
     * SQLite's per-connection mutex would only cost. */
    int rc = sqlite3_open_v2(
        path, &sq->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        err = baton_seterr(errstr, errstr_size, sq_map(rc) ? sq_map(rc) : BATON_IO,
                           "sink '%s': cannot open '%s': %s", sink->uri, path,
                           sq->db ? sqlite3_errmsg(sq->db) : sqlite3_errstr(rc));
        goto err;
    }
    sqlite3_extended_result_codes(sq->db, 1);
    sq_busy_set(sq, SQ_BUSY_TIMEOUT_MS);

    err = sq_set_wal(sink, path, errstr, errstr_size);
    if (err)
        goto err;

    /* Durability: synchronous=FULL fsyncs the WAL at every commit, so a
     * fence or write that returned OK survives power loss and kernel
     * crashes, not only process crashes. NORMAL would keep the fence itself
     * sound here: a crash loses a suffix of commits, output and next_offset
     * together, every process on this host dies with it, and the new owners
     * get higher epochs and re-read Kafka from the surviving next_offset.
     * But output that readers of baton_output may already have acted on
     * would vanish and be recomputed, perhaps differently, and a stored
     * epoch would go back down, against "epochs only go up". FULL costs one
     * fsync per transaction (measured on these machines: about 0.4 ms
     * against 0.06 ms for NORMAL), which batches amortise. */
    rc = sqlite3_exec(sq->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        err = baton_seterr(errstr, errstr_size, sq_map(rc) ? sq_map(rc) : BATON_IO,
                           "sink '%s': setting synchronous=FULL: %s", sink->uri,
                           sqlite3_errmsg(sq->db));
        goto err;
    }
    if (sqlite3_db_readonly(sq->db, "main") == 1) {
        err = baton_seterr(errstr, errstr_size, BATON_IO,
                           "sink '%s': '%s' opened read-only; fencing needs write access",
                           sink->uri, path);
        goto err;
    }
    err = sq_schema(sink, errstr, errstr_size);
    if (err)
        goto err;
    err = sq_prepare_all(sink, errstr, errstr_size);
    if (err)
        goto err;
    sq_busy_set(sq, SQ_OP_BUSY_TIMEOUT_MS);
    free(path);
    return BATON_OK;

err:
    /* Not logged here: the caller reports errstr, once. */
    free(path);
    sq_close(sink);
    return err;
}

const baton_sink_ops_t baton_sink_sqlite_ops = {
    .scheme = "sqlite",
    .usage = "sqlite:PATH",
    .open = sq_open,
    .close = sq_close,
    .fences = sq_fences,
    .fences_of = sq_fences_of,
    .set_busy_timeout = sq_set_busy_timeout,
    .write_many = sq_write_many,
    .fence_many = sq_fence_many,
    .missing = sq_missing,
    .group_get = sq_group_get,
};
