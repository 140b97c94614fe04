/* bench_out.h: the comparators' sink. It writes the same SQLite schema as
 * baton's sink (baton_output, baton_fence) with the same pragmas (WAL,
 * synchronous=FULL) and the same transactions (every due partition's batch
 * in one, as baton-worker writes them), but with no fence check: what a plain librdkafka consumer
 * storing its progress with its output would do. Only the benchmarks use it.
 *
 * Threading: one bench_out_t per thread. */
#ifndef BATON_BENCH_OUT_H
#define BATON_BENCH_OUT_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bench_out_s bench_out_t;

/* Opens (creating the schema if missing) PATH for group. NULL with a
 * message in errstr on failure. */
bench_out_t *bench_out_open(const char *path, const char *group, char *errstr, size_t errstr_size);
void bench_out_close(bench_out_t *o);

/* Takes partition p for `owner` (stored in the epoch column so a watcher
 * sees who writes) and returns the offset to resume from in *next. No fence
 * rule: the row is simply overwritten. 0 on success, -1 on failure. */
int bench_out_take(bench_out_t *o, int32_t p, int64_t owner, int64_t *next);

/* One transaction: inserts msgs (all of partition p, ascending offsets) and
 * stores next_offset = last offset + 1. Does not take ownership of msgs.
 * 0 on success, -1 on failure (nothing applied; message on stderr). */
int bench_out_write(bench_out_t *o, int32_t p, int64_t owner, rd_kafka_message_t *const *msgs,
                    size_t n);

/* Per-partition batches of consumed messages, flushed when full
 * (batch_size) or old (linger_ms): the same policy as baton-worker. The
 * batcher owns the messages it was given and destroys them once written or
 * dropped. */
typedef struct {
    rd_kafka_message_t **msgs;
    size_t n, cap;
    int64_t first_ms; /* when the oldest buffered message arrived */
    int64_t expect;   /* next offset wanted: older ones are duplicates */
    int active;
} bench_part_t;

typedef struct {
    bench_part_t *parts;
    int32_t nparts;
    int batch_size, linger_ms;
    int64_t written;
} bench_batcher_t;

bench_batcher_t *bench_batcher_new(int32_t nparts, int batch_size, int linger_ms);
void bench_batcher_destroy(bench_batcher_t *b);
/* p is ours from offset next on. */
void bench_batcher_start(bench_batcher_t *b, int32_t p, int64_t next);
/* p is no longer ours: its buffered messages are discarded. */
void bench_batcher_drop(bench_batcher_t *b, int32_t p);
/* Takes ownership of m (destroyed if its partition is not ours). */
void bench_batcher_add(bench_batcher_t *b, rd_kafka_message_t *m);
/* Writes p's batch now; 0 on success (or nothing to write). */
int bench_batcher_flush(bench_batcher_t *b, bench_out_t *o, int32_t p, int64_t owner);
/* Writes every batch that is full or old (all of them with force), in one
 * transaction, as baton-worker does. */
void bench_batcher_flush_due(bench_batcher_t *b, bench_out_t *o, int64_t owner, int force);

#endif
