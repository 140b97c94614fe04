/* processor_words.c: an example baton-worker processor plugin. It splits
 * each record's value into words (runs of non-blank bytes) and emits one
 * output per word, key unchanged: a value of three words becomes three
 * outputs (the first lands in the sink's baton_output, the others in
 * baton_output_more), an empty or blank value becomes none.
 *
 * Build: CMake builds it as build/lib/processor_words.so (examples/
 * CMakeLists.txt); by hand:
 *   cc -shared -fPIC -I include examples/processor_words.c -ljansson -o processor_words.so
 * Run:
 *   baton-worker ... --processor ./processor_words.so \
 *       --processor-config '{"upper": true}'
 *
 * Configuration (JSON, every setting optional):
 *   "upper": true        uppercase the words (ASCII)
 *   "fail_on": "TEXT"    fail on a record whose value is exactly TEXT: shows
 *                        (and tests) what a failing processor does -- the
 *                        worker logs event=processor_error and stops that
 *                        partition at that offset, never skipping it.
 *
 * Everything it needs from baton is include/baton/processor.h. */
#include <baton/processor.h>

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One state per owned partition (the worker calls init for each). */
typedef struct {
    int upper;
    char *fail_on; /* NULL: never fail */
    size_t fail_on_len;
    int64_t records; /* seen by this state: a per-ownership counter */
} words_t;

static void words_close(void *state) {
    words_t *ws = state;
    if (!ws)
        return;
    free(ws->fail_on);
    free(ws);
}

static int words_init(const char *config_json, int32_t partition, int64_t epoch, void **state,
                      char *errstr, size_t errstr_size) {
    (void)partition; /* -1 for the worker's start-up check of the config */
    (void)epoch;
    words_t *ws = calloc(1, sizeof(*ws));
    if (!ws) {
        snprintf(errstr, errstr_size, "words: out of memory");
        return BATON_PROCESSOR_ERROR;
    }
    if (config_json) {
        json_error_t jerr;
        json_t *cfg = json_loads(config_json, JSON_DECODE_ANY, &jerr);
        const char *key;
        json_t *val;
        if (!json_is_object(cfg)) {
            snprintf(errstr, errstr_size, "words: the configuration must be a JSON object");
            goto fail_cfg;
        }
        json_object_foreach(cfg, key, val) {
            if (strcmp(key, "upper") == 0 && json_is_boolean(val)) {
                ws->upper = json_is_true(val);
            } else if (strcmp(key, "fail_on") == 0 && json_is_string(val)) {
                ws->fail_on_len = json_string_length(val);
                ws->fail_on = malloc(ws->fail_on_len + 1);
                if (!ws->fail_on) {
                    snprintf(errstr, errstr_size, "words: out of memory");
                    goto fail_cfg;
                }
                memcpy(ws->fail_on, json_string_value(val), ws->fail_on_len + 1);
            } else {
                snprintf(errstr, errstr_size,
                         "words: '%s' is not a setting (\"upper\": true|false, \"fail_on\": "
                         "\"TEXT\")",
                         key);
                goto fail_cfg;
            }
        }
        json_decref(cfg);
        goto done;
    fail_cfg:
        json_decref(cfg);
        words_close(ws);
        return BATON_PROCESSOR_ERROR;
    }
done:
    *state = ws;
    return BATON_PROCESSOR_OK;
}

static int words_process(void *state, const baton_processor_record_t *r,
                         baton_processor_emit_t emit, void *ctx, char *errstr, size_t errstr_size) {
    words_t *ws = state;
    ws->records++;
    const char *v = r->value;
    size_t n = r->value ? r->value_len : 0;
    if (ws->fail_on && n == ws->fail_on_len && memcmp(v, ws->fail_on, n) == 0) {
        snprintf(errstr, errstr_size, "words: offset %lld: refusing the value '%s' (fail_on)",
                 (long long)r->offset, ws->fail_on);
        return BATON_PROCESSOR_ERROR;
    }
    char word[256];
    size_t i = 0;
    while (i < n) {
        while (i < n && isspace((unsigned char)v[i]))
            i++;
        size_t start = i;
        while (i < n && !isspace((unsigned char)v[i]))
            i++;
        size_t len = i - start;
        if (!len)
            break;
        if (len > sizeof(word)) {
            snprintf(errstr, errstr_size, "words: offset %lld: a word longer than %zu bytes",
                     (long long)r->offset, sizeof(word));
            return BATON_PROCESSOR_ERROR;
        }
        for (size_t k = 0; k < len; k++)
            word[k] = ws->upper ? (char)toupper((unsigned char)v[start + k]) : v[start + k];
        /* emit copies the bytes: word can be reused at once. */
        if (emit(ctx, r->key, r->key_len, word, len) != 0) {
            snprintf(errstr, errstr_size, "words: offset %lld: too many words",
                     (long long)r->offset);
            return BATON_PROCESSOR_ERROR;
        }
    }
    return BATON_PROCESSOR_OK;
}

/* The one symbol the worker looks up. */
BATON_PROCESSOR_EXPORT const baton_processor_v1_t baton_processor_v1 = {
    .abi_version = BATON_PROCESSOR_ABI_V1,
    .name = "words",
    .init = words_init,
    .process = words_process,
    .flush = NULL,
    .close = words_close,
};
