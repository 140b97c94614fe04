/* baton/processor.h: the processor plugin interface of baton-worker (public).
 *
 * A processor turns each input record of a partition into zero or more
 * output records, which the worker writes to the fenced sink in the same
 * transaction that records the input offset as consumed. It is a shared
 * object loaded with `baton-worker --processor PATH.so` that exports ONE
 * table:
 *
 *     #include <baton/processor.h>
 *     BATON_PROCESSOR_EXPORT const baton_processor_v1_t baton_processor_v1 = {
 *         .abi_version = BATON_PROCESSOR_ABI_V1,
 *         .name = "upper",
 *         .init = my_init, .process = my_process, .flush = NULL, .close = my_close,
 *     };
 *
 * examples/processor_words.c is a complete one. This header needs only the
 * C standard library; a processor links nothing of baton.
 *
 * ABI versioning
 *   The exported symbol's name carries the ABI version ("baton_processor_v1")
 *   and so does the table's first member (abi_version, which must be
 *   BATON_PROCESSOR_ABI_V1). The worker reads abi_version before anything
 *   else and refuses to load a table whose abi_version it does not know,
 *   naming the file, the version found and the versions it knows. Version 1
 *   is frozen: no member of baton_processor_v1_t or baton_processor_record_t
 *   and no signature below will ever change or be appended to. A change
 *   makes version 2: new types, a new symbol "baton_processor_v2", and
 *   workers that still load v1 objects. A shared object may export both
 *   tables to load in older and newer workers.
 *
 * Lifecycle and state ownership
 *   - At start, before it joins its group, the worker calls
 *     init(config_json, -1, 0, &state) once and then close(state): a
 *     dry run so that a bad configuration is refused with exit status 2
 *     rather than found on the first partition. Validate the configuration
 *     in init; partition -1 means "no partition, just check".
 *   - Each time the worker acquires a partition (a new ownership, with a
 *     new epoch) it calls init(config_json, partition, epoch, &state): one
 *     state per owned partition, never shared between partitions or reused
 *     across ownerships. The state belongs to the processor (allocate it in
 *     init, free it in close); the worker only passes it back.
 *   - process(state, record, emit, ...) is called for each input record of
 *     that partition, in offset order, each offset at most once per state.
 *   - flush(state) (optional, may be NULL) is called after the sink has
 *     committed a batch of that partition: every output emitted so far is
 *     durable. It emits nothing: an output must belong to an input offset,
 *     since the sink's exactly-once progress is per input offset. A
 *     processor that aggregates emits on the input that completes the
 *     aggregate.
 *   - close(state) (optional) is called once when the partition is released,
 *     failed, or the worker stops; state is never used again. It is not
 *     called after a failed init: init frees what it allocated itself.
 *
 * Exactly once, and what it asks of a processor
 *   Outputs are exactly-once in the sink, not processing: if a worker dies
 *   (or loses the partition) after process() but before the sink committed
 *   the batch, the next owner processes the same records again, from the
 *   sink's next_offset, with a fresh state. So process() should compute its
 *   outputs from the record (and the state built from earlier records of
 *   the same ownership) only; side effects outside the sink are at least
 *   once.
 *
 * Threading
 *   Every function is called on the worker's one thread (the thread that
 *   runs ZooKeeper callbacks, Kafka polling and sink writes), never
 *   concurrently, for all partitions; no locking is needed unless the
 *   processor starts threads of its own. A slow process() delays every
 *   partition of the worker.
 *
 * Errors
 *   init, process and flush return 0 (BATON_PROCESSOR_OK) on success and
 *   any other value on failure, with a message in errstr (at least 256
 *   bytes, empty on entry, to be NUL-terminated; say what was wrong and
 *   where, e.g. "value is not a JSON object"). A failure fails the
 *   partition loudly: the worker logs event=processor_error with the
 *   partition, the offset and the message, writes the outputs of the
 *   records before that offset, discards any output of the failing record,
 *   and stops consuming the partition (it keeps its claim, so the
 *   partition is not bounced to other workers that would fail the same
 *   way). The record is never skipped: the sink's next_offset stays at its
 *   offset, and a restart after the cause is fixed resumes exactly there.
 *   A failed init stops the partition the same way at its next_offset.
 *
 *   A processor runs inside the worker process: a crash (SIGSEGV, abort)
 *   kills the worker. Nothing is lost: progress lives in the sink, so the
 *   next owner resumes from the sink's next_offset (and crashes in the same
 *   way if the record always crashes the processor).
 */
#ifndef BATON_PROCESSOR_H
#define BATON_PROCESSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BATON_PROCESSOR_ABI_V1 1u
/* The name of the symbol a version 1 processor exports. */
#define BATON_PROCESSOR_V1_SYMBOL "baton_processor_v1"

/* Marks the exported table visible in a shared object built with
 * -fvisibility=hidden (the table should be the only symbol it exports). */
#if defined(__GNUC__) || defined(__clang__)
#define BATON_PROCESSOR_EXPORT __attribute__((visibility("default")))
#else
#define BATON_PROCESSOR_EXPORT
#endif

#define BATON_PROCESSOR_OK 0
#define BATON_PROCESSOR_ERROR (-1)

/* The most outputs (and their bytes, keys and values together) one input
 * record may have; emit fails beyond them and the record's processing fails
 * even if process returns 0. */
#define BATON_PROCESSOR_MAX_OUTPUTS 100000u
#define BATON_PROCESSOR_MAX_OUTPUT_BYTES (64u * 1024u * 1024u)

/* One input record. Every pointer is owned by the worker and valid only
 * during the process() call. */
typedef struct {
    int32_t partition;
    int64_t offset;
    int64_t timestamp_ms; /* the Kafka timestamp, -1 if none */
    const void *key;      /* NULL: the record has no key */
    size_t key_len;
    const void *value; /* NULL: the record has no value (a tombstone) */
    size_t value_len;
} baton_processor_record_t;

/* Emits one output record for the input being processed. The worker copies
 * key and value before returning, so they may point at the processor's
 * stack or at the input. NULL is "no key" / "no value" (stored as NULL);
 * a non-NULL pointer with length 0 is an empty key or value. Outputs are
 * stored in emit order: the first in the sink's baton_output table at the
 * input's offset, the others in baton_output_more with seq 1, 2, ...
 * Returns 0, or -1 once the record's output limits are exceeded (then
 * return an error from process). Only valid during the process() call it
 * was passed to. */
typedef int (*baton_processor_emit_t)(void *emit_ctx, const void *key, size_t key_len,
                                      const void *value, size_t value_len);

typedef struct {
    /* BATON_PROCESSOR_ABI_V1; read first, before any other member. */
    uint32_t abi_version;
    /* A short name for logs ("upper"), non-NULL, static. */
    const char *name;
    /* Creates the state for one partition (or checks the configuration when
     * partition is -1). config_json is the --processor-config text, valid
     * JSON, or NULL when none was given; it is owned by the worker and
     * valid only during the call (copy what you keep). epoch is the
     * ownership's fencing token (0 for the check). Required. */
    int (*init)(const char *config_json, int32_t partition, int64_t epoch, void **state,
                char *errstr, size_t errstr_size);
    /* Processes one record: calls emit(emit_ctx, ...) zero or more times.
     * Required. */
    int (*process)(void *state, const baton_processor_record_t *record, baton_processor_emit_t emit,
                   void *emit_ctx, char *errstr, size_t errstr_size);
    /* After each committed batch of the partition. Optional (NULL). */
    int (*flush)(void *state, char *errstr, size_t errstr_size);
    /* Frees the state. Optional (NULL: nothing to free). Never fails. Not
     * called when init left *state NULL. */
    void (*close)(void *state);
} baton_processor_v1_t;

#ifdef __cplusplus
}
#endif

#endif
