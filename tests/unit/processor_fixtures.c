/* processor_fixtures.c: broken and odd processor plugins for the loader's
 * tests (test_processor.c, it_processor.sh). One file, built as one shared
 * object per FIXTURE_* definition (tests/unit/CMakeLists.txt):
 *   FIXTURE_BAD_ABI   processor_bad_abi.so: a table with abi_version 99
 *   FIXTURE_NO_TABLE  processor_no_table.so: exports no baton_processor_v1
 *   FIXTURE_NO_PROCESS   processor_no_process.so: a v1 table without process
 *   FIXTURE_FLOOD     processor_flood.so: emits one output more than
 *                     allowed for a value "flood", and for any other value
 *                     an output with no key and an empty (not NULL) value
 *   FIXTURE_CRASH     processor_crash.so: copies each record, but raises
 *                     SIGSEGV on a value "crash" (a processor that crashes
 *                     takes the worker with it; the test shows nothing is
 *                     lost) */
#include <baton/processor.h>

#include <signal.h>
#include <string.h>

static int fx_init(const char *config_json, int32_t partition, int64_t epoch, void **state,
                   char *errstr, size_t errstr_size) {
    (void)config_json;
    (void)partition;
    (void)epoch;
    (void)errstr;
    (void)errstr_size;
    *state = NULL;
    return BATON_PROCESSOR_OK;
}

__attribute__((unused)) static int fx_process(void *state, const baton_processor_record_t *r,
                                              baton_processor_emit_t emit, void *ctx, char *errstr,
                                              size_t errstr_size) {
    (void)state;
    (void)errstr;
    (void)errstr_size;
    if (r->value && r->value_len == 5 && memcmp(r->value, "flood", 5) == 0) {
        /* Ignores emit's refusal on purpose: the worker must fail the
         * record anyway. */
        for (unsigned i = 0; i <= BATON_PROCESSOR_MAX_OUTPUTS; i++)
            emit(ctx, NULL, 0, "x", 1);
        return BATON_PROCESSOR_OK;
    }
    return emit(ctx, NULL, 0, "", 0) == 0 ? BATON_PROCESSOR_OK : BATON_PROCESSOR_ERROR;
}

#if defined(FIXTURE_BAD_ABI)
BATON_PROCESSOR_EXPORT const baton_processor_v1_t baton_processor_v1 = {
    .abi_version = 99,
    .name = "bad_abi",
    .init = fx_init,
    .process = fx_process,
};
#elif defined(FIXTURE_NO_TABLE)
BATON_PROCESSOR_EXPORT const baton_processor_v1_t baton_processor_v0 = {
    .abi_version = BATON_PROCESSOR_ABI_V1,
    .name = "no_table",
    .init = fx_init,
    .process = fx_process,
};
#elif defined(FIXTURE_NO_PROCESS)
BATON_PROCESSOR_EXPORT const baton_processor_v1_t baton_processor_v1 = {
    .abi_version = BATON_PROCESSOR_ABI_V1,
    .name = "no_process",
    .init = fx_init,
};
#elif defined(FIXTURE_FLOOD)
BATON_PROCESSOR_EXPORT const baton_processor_v1_t baton_processor_v1 = {
    .abi_version = BATON_PROCESSOR_ABI_V1,
    .name = "flood",
    .init = fx_init,
    .process = fx_process,
};
#elif defined(FIXTURE_CRASH)
static int crash_process(void *state, const baton_processor_record_t *r,
                         baton_processor_emit_t emit, void *ctx, char *errstr, size_t errstr_size) {
    (void)state;
    (void)errstr;
    (void)errstr_size;
    if (r->value && r->value_len == 5 && memcmp(r->value, "crash", 5) == 0)
        raise(SIGSEGV);
    return emit(ctx, r->key, r->key_len, r->value, r->value_len) == 0 ? BATON_PROCESSOR_OK
                                                                      : BATON_PROCESSOR_ERROR;
}
BATON_PROCESSOR_EXPORT const baton_processor_v1_t baton_processor_v1 = {
    .abi_version = BATON_PROCESSOR_ABI_V1,
    .name = "crash",
    .init = fx_init,
    .process = crash_process,
};
#else
#error "define one FIXTURE_*"
#endif
