/* processor_builtin.c: the processors linked into baton-worker, written
 * against the same public table as a plugin (include/baton/processor.h).
 *
 *   copy     the default: the output is the input, key and value unchanged.
 *            (The worker stores the input itself without calling process;
 *            the table exists so that copy is loaded, named and configured
 *            like any other processor.)
 *   project  a JSON field projection: {"fields": ["user", "amount"]} turns
 *            each value, a JSON object, into a compact JSON object with only
 *            those fields (in that order; a field the value lacks is left
 *            out), key unchanged. With "where": {"field": value, ...} only
 *            records whose fields equal every given value produce an output;
 *            the others produce none (and are consumed all the same). A value
 *            that is not a JSON object (not JSON, an array, a tombstone) is a
 *            processor error: the partition stops at that offset. */
#include "processor.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_util.h"

/* ---- copy --------------------------------------------------------------- */

static int copy_init(const char *config_json, int32_t partition, int64_t epoch, void **state,
                     char *errstr, size_t errstr_size) {
    (void)partition;
    (void)epoch;
    *state = NULL;
    if (!config_json)
        return BATON_PROCESSOR_OK;
    /* A configuration here is almost surely meant for another processor
     * (--processor forgotten): say so rather than ignore it. */
    json_t *j = json_loads(config_json, JSON_DECODE_ANY, NULL);
    int empty = j && (json_is_null(j) || (json_is_object(j) && json_object_size(j) == 0));
    json_decref(j);
    if (empty)
        return BATON_PROCESSOR_OK;
    snprintf(errstr, errstr_size, "copy takes no configuration (was --processor forgotten?)");
    return BATON_PROCESSOR_ERROR;
}

static int copy_process(void *state, const baton_processor_record_t *r, baton_processor_emit_t emit,
                        void *ctx, char *errstr, size_t errstr_size) {
    (void)state;
    if (emit(ctx, r->key, r->key_len, r->value, r->value_len) != 0) {
        snprintf(errstr, errstr_size, "offset %lld: the output is too large", (long long)r->offset);
        return BATON_PROCESSOR_ERROR;
    }
    return BATON_PROCESSOR_OK;
}

const baton_processor_v1_t baton_processor_copy = {
    .abi_version = BATON_PROCESSOR_ABI_V1,
    .name = "copy",
    .init = copy_init,
    .process = copy_process,
};

/* ---- project ------------------------------------------------------------ */

typedef struct {
    json_t *fields; /* array of unique non-empty strings, owned */
    json_t *where;  /* object, owned; NULL: every record passes */
} project_t;

static void project_close(void *state) {
    project_t *pj = state;
    if (!pj)
        return;
    json_decref(pj->fields);
    json_decref(pj->where);
    free(pj);
}

/* Parses and checks the configuration; every message names the setting. */
static int project_init(const char *config_json, int32_t partition, int64_t epoch, void **state,
                        char *errstr, size_t errstr_size) {
    (void)partition;
    (void)epoch;
    *state = NULL;
    static const char example[] = "e.g. {\"fields\": [\"user\", \"amount\"]}";
    if (!config_json) {
        snprintf(errstr, errstr_size,
                 "project needs --processor-config with the fields to keep, %s", example);
        return BATON_PROCESSOR_ERROR;
    }
    json_error_t jerr;
    json_t *cfg = json_loads(config_json, JSON_DECODE_ANY, &jerr);
    project_t *pj = xcalloc(1, sizeof(*pj));
    const char *key;
    json_t *val;
    if (!cfg || !json_is_object(cfg)) {
        snprintf(errstr, errstr_size, "project: the configuration must be a JSON object, %s",
                 example);
        goto fail;
    }
    json_object_foreach(cfg, key, val) {
        if (strcmp(key, "fields") != 0 && strcmp(key, "where") != 0) {
            snprintf(errstr, errstr_size, "project: unknown setting '%s' (known: fields, where)",
                     key);
            goto fail;
        }
    }
    json_t *fields = json_object_get(cfg, "fields");
    if (!fields || !json_is_array(fields) || json_array_size(fields) == 0) {
        snprintf(errstr, errstr_size,
                 "project: 'fields' must be a non-empty array of field "
                 "names, %s",
                 example);
        goto fail;
    }
    size_t i;
    json_array_foreach(fields, i, val) {
        const char *name = json_string_value(val);
        if (!name || !*name) {
            snprintf(errstr, errstr_size, "project: fields[%zu] is not a non-empty string", i);
            goto fail;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(name, json_string_value(json_array_get(fields, k))) == 0) {
                snprintf(errstr, errstr_size, "project: field '%s' is listed twice", name);
                goto fail;
            }
    }
    json_t *where = json_object_get(cfg, "where");
    if (where && !json_is_object(where)) {
        snprintf(errstr, errstr_size,
                 "project: 'where' must be an object of field: value, e.g. {\"country\": \"FR\"}");
        goto fail;
    }
    pj->fields = json_incref(fields);
    pj->where = where && json_object_size(where) ? json_incref(where) : NULL;
    json_decref(cfg);
    *state = pj;
    return BATON_PROCESSOR_OK;
fail:
    json_decref(cfg);
    project_close(pj);
    return BATON_PROCESSOR_ERROR;
}

static const char *json_kind(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    default: return "an object";
    }
}

static int project_process(void *state, const baton_processor_record_t *r,
                           baton_processor_emit_t emit, void *ctx, char *errstr,
                           size_t errstr_size) {
    project_t *pj = state;
    if (!r->value) {
        snprintf(errstr, errstr_size,
                 "project: offset %lld has no value (a tombstone), not a JSON object",
                 (long long)r->offset);
        return BATON_PROCESSOR_ERROR;
    }
    json_error_t jerr;
    json_t *in = json_loadb(r->value, r->value_len, JSON_DECODE_ANY, &jerr);
    if (!in) {
        snprintf(errstr, errstr_size, "project: offset %lld: value is not JSON: %s (column %d)",
                 (long long)r->offset, jerr.text, jerr.column);
        return BATON_PROCESSOR_ERROR;
    }
    if (!json_is_object(in)) {
        snprintf(errstr, errstr_size, "project: offset %lld: value is %s, not a JSON object",
                 (long long)r->offset, json_kind(in));
        json_decref(in);
        return BATON_PROCESSOR_ERROR;
    }
    int rc = BATON_PROCESSOR_OK;
    const char *key;
    json_t *want;
    if (pj->where) {
        json_object_foreach(pj->where, key, want) {
            if (!json_equal(json_object_get(in, key), want)) {
                json_decref(in); /* filtered out: no output */
                return BATON_PROCESSOR_OK;
            }
        }
    }
    json_t *out = json_object();
    size_t i;
    json_t *name;
    json_array_foreach(pj->fields, i, name) {
        json_t *v = json_object_get(in, json_string_value(name));
        if (v)
            json_object_set(out, json_string_value(name), v);
    }
    char *text = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!text || emit(ctx, r->key, r->key_len, text, strlen(text)) != 0) {
        snprintf(errstr, errstr_size, "project: offset %lld: %s", (long long)r->offset,
                 text ? "the output is too large" : "cannot encode the projection");
        rc = BATON_PROCESSOR_ERROR;
    }
    free(text);
    json_decref(out);
    json_decref(in);
    return rc;
}

const baton_processor_v1_t baton_processor_project = {
    .abi_version = BATON_PROCESSOR_ABI_V1,
    .name = "project",
    .init = project_init,
    .process = project_process,
    .close = project_close,
};
