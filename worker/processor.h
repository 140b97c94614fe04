/* processor.h: baton-worker's side of processor plugins (the plugin side is
 * the public include/baton/processor.h). Loads a processor by built-in name
 * ("copy", "project") or from a shared object, checks its ABI and its
 * configuration, and runs it for one partition at a time, collecting what
 * it emits into outputs the sink can store (sink.h's baton_sink_output_t).
 *
 * Threading: everything here runs on the worker's one thread, as the
 * plugin interface promises the processor. */
#ifndef BATON_WORKER_PROCESSOR_H
#define BATON_WORKER_PROCESSOR_H

#include <stddef.h>
#include <stdint.h>

#include "baton/processor.h"
#include "sink.h"

typedef struct baton_processor_s baton_processor_t;

/* Loads the processor named by spec and checks it, without joining
 * anything: spec NULL or "" is "copy"; a spec containing '/' or ending in
 * ".so" is a shared object (dlopen); anything else a built-in name.
 * config is NULL (none), JSON text, or "@FILE" (JSON read from FILE); it
 * must parse as JSON. The processor's init is then called once with
 * partition -1 to check the configuration. Every failure is BATON_INVALID
 * with a message naming the file, symbol, version or setting that was wrong
 * (the caller exits 2). On success *out owns the loaded object (free with
 * baton_processor_destroy, after every state was closed). */
int baton_processor_load(const char *spec, const char *config, baton_processor_t **out,
                         char *errstr, size_t errstr_size);
void baton_processor_destroy(baton_processor_t *proc);

/* The table's name ("copy", "project", or what the shared object says). */
const char *baton_processor_name(const baton_processor_t *proc);
/* 1 for the built-in copy: the worker then stores the input as its output
 * without calling the processor (and without copying it). */
int baton_processor_is_copy(const baton_processor_t *proc);

/* What one process() call emitted: n outputs whose keys and values point
 * into one heap block that also holds the outputs array. */
typedef struct {
    baton_sink_output_t *outputs; /* heap block; NULL when n is 0 */
    size_t n;
} baton_processor_result_t;

/* init for one owned partition. On success *state is the processor's
 * state (close it with baton_processor_close). On failure returns
 * BATON_INTERNAL with the processor's message in errstr. */
int baton_processor_open(const baton_processor_t *proc, int32_t partition, int64_t epoch,
                         void **state, char *errstr, size_t errstr_size);
/* Processes one record. On success *result owns what was emitted (free
 * with baton_processor_result_release). On failure (the processor's error,
 * or its outputs over the limits) returns BATON_INTERNAL with a message,
 * and *result is empty: outputs of a failed call are discarded. */
int baton_processor_apply(const baton_processor_t *proc, void *state,
                          const baton_processor_record_t *record, baton_processor_result_t *result,
                          char *errstr, size_t errstr_size);
void baton_processor_result_release(baton_processor_result_t *result);
/* flush (if the processor has one): BATON_OK or BATON_INTERNAL. */
int baton_processor_flush(const baton_processor_t *proc, void *state, char *errstr,
                          size_t errstr_size);
/* close; state may be NULL (nothing to do). */
void baton_processor_close(const baton_processor_t *proc, void *state);

/* The built-in tables (processor_builtin.c). */
extern const baton_processor_v1_t baton_processor_copy;
extern const baton_processor_v1_t baton_processor_project;

#endif
