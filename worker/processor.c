/* processor.c: loading processors (built-in or dlopen'ed), the ABI and
 * configuration checks, and running one process() call into sink outputs.
 * See processor.h; the contract with plugins is include/baton/processor.h. */
#include "processor.h"

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Large enough for any message a processor writes; processor.h promises at
 * least 256 bytes. */
#define PROC_ERRSTR_SIZE 512
/* A --processor-config file larger than this is refused. */
#define PROC_CONFIG_MAX_BYTES (1024 * 1024)

struct baton_processor_s {
    const baton_processor_v1_t *table; /* static in the binary or in the shared object */
    void *dl;                          /* dlopen handle, NULL for built-ins */
    char *config;                      /* JSON text given to init, or NULL */
    char *path;                        /* shared object path, for messages; NULL for built-ins */
};

/* The built-ins, by name. */
static const baton_processor_v1_t *const builtins[] = {
    &baton_processor_copy,
    &baton_processor_project,
};

/* "copy, project", for error messages. */
static void builtin_names(char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < BATON_ARRAY_SIZE(builtins) && n < size; i++) {
        int w = snprintf(buf + n, size - n, "%s%s", i ? ", " : "", builtins[i]->name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

/* Whether spec names a file rather than a built-in. */
static int spec_is_path(const char *spec) {
    size_t n = strlen(spec);
    return strchr(spec, '/') != NULL || (n > 3 && strcmp(spec + n - 3, ".so") == 0);
}

/* Reads --processor-config's "@FILE" into a heap string, or NULL with errstr. */
static char *config_read_file(const char *path, char *errstr, size_t errstr_size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        baton_seterr(errstr, errstr_size, BATON_INVALID, "--processor-config: cannot read '%s': %s",
                     path, strerror(errno));
        return NULL;
    }
    char *buf = xmalloc(PROC_CONFIG_MAX_BYTES + 1);
    size_t len = fread(buf, 1, PROC_CONFIG_MAX_BYTES + 1, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || len > PROC_CONFIG_MAX_BYTES) {
        baton_seterr(errstr, errstr_size, BATON_INVALID, "--processor-config: '%s': %s", path,
                     failed ? "read error" : "larger than 1 MiB");
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        baton_seterr(errstr, errstr_size, BATON_INVALID,
                     "--processor-config: '%s' contains a NUL byte: not a JSON file", path);
        free(buf);
        return NULL;
    }
    return buf;
}

/* Resolves --processor-config (NULL, JSON, or @FILE) and checks that it is
 * JSON. Returns BATON_OK with *out a heap copy (NULL when none). */
static int config_resolve(const char *config, char **out, char *errstr, size_t errstr_size) {
    *out = NULL;
    if (!config)
        return BATON_OK;
    const char *file = NULL;
    char *text = NULL;
    if (config[0] == '@') {
        if (!config[1])
            return baton_seterr(errstr, errstr_size, BATON_INVALID,
                                "--processor-config: '@' needs a file name (@FILE)");
        text = config_read_file(config + 1, errstr, errstr_size);
        if (!text)
            return BATON_INVALID;
        file = config + 1;
    } else {
        text = xstrdup(config);
    }
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j) {
        baton_seterr(errstr, errstr_size, BATON_INVALID,
                     "--processor-config: %s%s%s is not JSON: line %d column %d: %s",
                     file ? "file '" : "", file ? file : "the value", file ? "'" : "", jerr.line,
                     jerr.column, jerr.text);
        free(text);
        return BATON_INVALID;
    }
    json_decref(j);
    *out = text;
    return BATON_OK;
}

/* dlopens path and finds its v1 table, checking the ABI version first. */
static int load_shared(baton_processor_t *proc, const char *path, char *errstr,
                       size_t errstr_size) {
    /* RTLD_LOCAL: two processors' symbols never mix; RTLD_NOW: a missing
     * symbol fails here, at start, not on the first record. */
    proc->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!proc->dl) {
        const char *why = dlerror();
        return baton_seterr(errstr, errstr_size, BATON_INVALID,
                            "--processor '%s': cannot load it: %s", path,
                            why ? why : "dlopen failed");
    }
    dlerror();
    const baton_processor_v1_t *t = dlsym(proc->dl, BATON_PROCESSOR_V1_SYMBOL);
    const char *why = dlerror();
    if (why || !t)
        return baton_seterr(errstr, errstr_size, BATON_INVALID,
                            "--processor '%s': exports no '%s' table (a baton processor exports "
                            "one, see include/baton/processor.h)",
                            path, BATON_PROCESSOR_V1_SYMBOL);
    /* abi_version first: nothing else of a table of another version may be
     * read, its layout is not ours. */
    if (t->abi_version != BATON_PROCESSOR_ABI_V1)
        return baton_seterr(errstr, errstr_size, BATON_INVALID,
                            "--processor '%s': %s.abi_version is %u, but this worker knows only "
                            "ABI version %u (rebuild it against this baton's "
                            "include/baton/processor.h)",
                            path, BATON_PROCESSOR_V1_SYMBOL, (unsigned)t->abi_version,
                            (unsigned)BATON_PROCESSOR_ABI_V1);
    proc->table = t;
    return BATON_OK;
}

int baton_processor_load(const char *spec, const char *config, baton_processor_t **out,
                         char *errstr, size_t errstr_size) {
    if (errstr && errstr_size)
        errstr[0] = '\0';
    *out = NULL;
    if (!spec || !*spec)
        spec = "copy";
    baton_processor_t *proc = xcalloc(1, sizeof(*proc));
    int err = BATON_OK;
    if (spec_is_path(spec)) {
        proc->path = xstrdup(spec);
        err = load_shared(proc, spec, errstr, errstr_size);
    } else {
        for (size_t i = 0; i < BATON_ARRAY_SIZE(builtins); i++)
            if (strcmp(spec, builtins[i]->name) == 0)
                proc->table = builtins[i];
        if (!proc->table) {
            char names[128];
            builtin_names(names, sizeof(names));
            err = baton_seterr(errstr, errstr_size, BATON_INVALID,
                               "--processor: unknown processor '%s' (built-in: %s; or a path to "
                               "a shared object, e.g. ./my_processor.so)",
                               spec, names);
        }
    }
    if (err)
        goto fail;
    const baton_processor_v1_t *t = proc->table;
    const char *where = proc->path ? proc->path : t->name;
    if (!t->name || !*t->name || !t->init || !t->process) {
        err = baton_seterr(errstr, errstr_size, BATON_INVALID,
                           "--processor '%s': its table has no %s (name, init and process are "
                           "required)",
                           where,
                           !t->name || !*t->name ? "name"
                           : !t->init            ? "init"
                                                 : "process");
        goto fail;
    }
    err = config_resolve(config, &proc->config, errstr, errstr_size);
    if (err)
        goto fail;
    /* The dry run: a bad configuration is a usage error now, not a failed
     * partition later. */
    void *state = NULL;
    char perr[PROC_ERRSTR_SIZE] = "";
    if (t->init(proc->config, -1, 0, &state, perr, sizeof(perr)) != BATON_PROCESSOR_OK) {
        perr[sizeof(perr) - 1] = '\0';
        err = baton_seterr(errstr, errstr_size, BATON_INVALID,
                           "--processor-config: processor '%s' refused its configuration: %s",
                           t->name, perr[0] ? perr : "init failed without a message");
        goto fail;
    }
    if (t->close && state)
        t->close(state);
    *out = proc;
    return BATON_OK;
fail:
    baton_processor_destroy(proc);
    return err;
}

void baton_processor_destroy(baton_processor_t *proc) {
    if (!proc)
        return;
    if (proc->dl)
        dlclose(proc->dl);
    free(proc->config);
    free(proc->path);
    free(proc);
}

const char *baton_processor_name(const baton_processor_t *proc) { return proc->table->name; }

int baton_processor_is_copy(const baton_processor_t *proc) {
    return proc->table == &baton_processor_copy;
}

/* Copies a processor's message (which it may have left unterminated or
 * empty) into errstr. */
static int proc_fail(char *errstr, size_t errstr_size, char *perr, const char *what, int rc) {
    perr[PROC_ERRSTR_SIZE - 1] = '\0';
    if (perr[0])
        return baton_seterr(errstr, errstr_size, BATON_INTERNAL, "%s", perr);
    return baton_seterr(errstr, errstr_size, BATON_INTERNAL, "%s returned %d without a message",
                        what, rc);
}

int baton_processor_open(const baton_processor_t *proc, int32_t partition, int64_t epoch,
                         void **state, char *errstr, size_t errstr_size) {
    char perr[PROC_ERRSTR_SIZE] = "";
    *state = NULL;
    int rc = proc->table->init(proc->config, partition, epoch, state, perr, sizeof(perr));
    if (rc != BATON_PROCESSOR_OK) {
        *state = NULL;
        return proc_fail(errstr, errstr_size, perr, "init", rc);
    }
    return BATON_OK;
}

/* What emit collects for one record: output spans into one byte buffer. */
typedef struct {
    size_t key_off, key_len, value_off, value_len;
    int has_key, has_value;
} span_t;

typedef struct {
    span_t *spans;
    size_t n, cap;
    char *data;
    size_t len, data_cap;
    int over; /* a limit was exceeded: the record fails */
} collect_t;

static size_t collect_bytes(collect_t *c, const void *p, size_t n) {
    size_t at = c->len;
    if (!p || !n)
        return at;
    if (c->len + n > c->data_cap) {
        size_t cap = c->data_cap ? c->data_cap : 256;
        while (cap < c->len + n)
            cap *= 2;
        c->data = xrealloc(c->data, cap);
        c->data_cap = cap;
    }
    memcpy(c->data + c->len, p, n);
    c->len += n;
    return at;
}

/* The baton_processor_emit_t the worker hands to process(). */
static int collect_emit(void *ctx, const void *key, size_t key_len, const void *value,
                        size_t value_len) {
    collect_t *c = ctx;
    if (c->over)
        return -1;
    /* A NULL pointer with a length is "no key"/"no value" of length 0. */
    if (!key)
        key_len = 0;
    if (!value)
        value_len = 0;
    if (c->n >= BATON_PROCESSOR_MAX_OUTPUTS || key_len > BATON_PROCESSOR_MAX_OUTPUT_BYTES ||
        value_len > BATON_PROCESSOR_MAX_OUTPUT_BYTES ||
        c->len + key_len + value_len > BATON_PROCESSOR_MAX_OUTPUT_BYTES) {
        c->over = 1;
        return -1;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4;
        c->spans = xrealloc(c->spans, sizeof(*c->spans) * c->cap);
    }
    span_t *s = &c->spans[c->n++];
    s->has_key = key != NULL;
    s->has_value = value != NULL;
    s->key_len = key_len;
    s->key_off = collect_bytes(c, key, key_len);
    s->value_len = value_len;
    s->value_off = collect_bytes(c, value, value_len);
    return 0;
}

int baton_processor_apply(const baton_processor_t *proc, void *state,
                          const baton_processor_record_t *record, baton_processor_result_t *result,
                          char *errstr, size_t errstr_size) {
    result->outputs = NULL;
    result->n = 0;
    collect_t c = {0};
    char perr[PROC_ERRSTR_SIZE] = "";
    int rc = proc->table->process(state, record, collect_emit, &c, perr, sizeof(perr));
    int err = BATON_OK;
    if (rc != BATON_PROCESSOR_OK)
        err = proc_fail(errstr, errstr_size, perr, "process", rc);
    else if (c.over)
        err = baton_seterr(errstr, errstr_size, BATON_INTERNAL,
                           "more than %u outputs or %u bytes of output for one record",
                           BATON_PROCESSOR_MAX_OUTPUTS, BATON_PROCESSOR_MAX_OUTPUT_BYTES);
    if (!err && c.n) {
        /* One block: the outputs array, then their bytes. */
        size_t head = sizeof(baton_sink_output_t) * c.n;
        char *block = xmalloc(head + c.len + 1);
        char *bytes = block + head;
        if (c.len)
            memcpy(bytes, c.data, c.len);
        baton_sink_output_t *outs = (baton_sink_output_t *)(void *)block;
        for (size_t i = 0; i < c.n; i++) {
            const span_t *s = &c.spans[i];
            /* An empty but present key or value must stay non-NULL. */
            outs[i].key = s->has_key ? bytes + s->key_off : NULL;
            outs[i].key_len = s->key_len;
            outs[i].value = s->has_value ? bytes + s->value_off : NULL;
            outs[i].value_len = s->value_len;
        }
        result->outputs = outs;
        result->n = c.n;
    }
    free(c.spans);
    free(c.data);
    return err;
}

void baton_processor_result_release(baton_processor_result_t *result) {
    free(result->outputs);
    result->outputs = NULL;
    result->n = 0;
}

int baton_processor_flush(const baton_processor_t *proc, void *state, char *errstr,
                          size_t errstr_size) {
    if (!proc->table->flush)
        return BATON_OK;
    char perr[PROC_ERRSTR_SIZE] = "";
    int rc = proc->table->flush(state, perr, sizeof(perr));
    return rc == BATON_PROCESSOR_OK ? BATON_OK : proc_fail(errstr, errstr_size, perr, "flush", rc);
}

void baton_processor_close(const baton_processor_t *proc, void *state) {
    if (proc->table->close && state)
        proc->table->close(state);
}
