/* test_processor.c: the processor loader (worker/processor.c) and the
 * built-in processors (worker/processor_builtin.c): names and paths, the
 * ABI checks on real shared objects (tests/unit/processor_fixtures.c and
 * examples/processor_words.c, paths given by CMake), --processor-config
 * parsing and the dry-run init, and what project and words emit or refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "baton_err.h"
#include "baton_log.h"
#include "processor.h"

#ifndef FIXTURE_DIR
#error "FIXTURE_DIR (where processor_*.so are) must be defined"
#endif
#ifndef WORDS_SO
#error "WORDS_SO (examples/processor_words.so) must be defined"
#endif

static char errstr[512];

/* Loads spec with config; asserts the result and, on failure, that the
 * message contains want. Returns the processor (NULL on failure). */
static baton_processor_t *load(const char *spec, const char *config, int want_err,
                               const char *want) {
    baton_processor_t *proc = NULL;
    errstr[0] = '\0';
    int rc = baton_processor_load(spec, config, &proc, errstr, sizeof(errstr));
    if (rc != want_err)
        fail_msg("load '%s' config '%s': %s, wanted %s (%s)", spec ? spec : "(null)",
                 config ? config : "(null)", baton_err_name(rc), baton_err_name(want_err), errstr);
    if (want && !strstr(errstr, want))
        fail_msg("load '%s': message '%s' does not contain '%s'", spec ? spec : "(null)", errstr,
                 want);
    if (rc == BATON_OK)
        assert_non_null(proc);
    else
        assert_null(proc);
    return proc;
}

/* One record through proc for partition 0; returns the error and fills
 * *res (released by the caller). */
static int apply(baton_processor_t *proc, void *state, const char *key, const char *value,
                 baton_processor_result_t *res) {
    baton_processor_record_t r = {
        .partition = 0,
        .offset = 42,
        .timestamp_ms = -1,
        .key = key,
        .key_len = key ? strlen(key) : 0,
        .value = value,
        .value_len = value ? strlen(value) : 0,
    };
    errstr[0] = '\0';
    return baton_processor_apply(proc, state, &r, res, errstr, sizeof(errstr));
}

static void assert_output(const baton_processor_result_t *res, size_t i, const char *key,
                          const char *value) {
    assert_true(i < res->n);
    const baton_sink_output_t *o = &res->outputs[i];
    if (!key) {
        assert_null(o->key);
    } else {
        assert_non_null(o->key);
        assert_int_equal(o->key_len, strlen(key));
        assert_memory_equal(o->key, key, o->key_len);
    }
    if (!value) {
        assert_null(o->value);
    } else {
        assert_non_null(o->value);
        assert_int_equal(o->value_len, strlen(value));
        if (o->value_len && memcmp(o->value, value, o->value_len) != 0)
            fail_msg("output %zu: '%.*s', wanted '%s'", i, (int)o->value_len,
                     (const char *)o->value, value);
    }
}

static void test_names(void **state) {
    (void)state;
    baton_processor_t *p = load(NULL, NULL, BATON_OK, NULL);
    assert_string_equal(baton_processor_name(p), "copy");
    assert_true(baton_processor_is_copy(p));
    baton_processor_destroy(p);
    p = load("copy", "{}", BATON_OK, NULL);
    assert_true(baton_processor_is_copy(p));
    baton_processor_destroy(p);
    p = load("project", "{\"fields\":[\"a\"]}", BATON_OK, NULL);
    assert_string_equal(baton_processor_name(p), "project");
    assert_false(baton_processor_is_copy(p));
    baton_processor_destroy(p);
    /* Unknown names list the built-ins. */
    load("projekt", NULL, BATON_INVALID, "unknown processor 'projekt' (built-in: copy, project");
    /* copy refuses a configuration meant for another processor. */
    load("copy", "{\"fields\":[\"a\"]}", BATON_INVALID, "copy takes no configuration");
}

static void test_shared_objects(void **state) {
    (void)state;
    load("./no/such/processor.so", NULL, BATON_INVALID, "cannot load it");
    load(FIXTURE_DIR "/processor_no_table.so", NULL, BATON_INVALID,
         "exports no 'baton_processor_v1' table");
    load(FIXTURE_DIR "/processor_bad_abi.so", NULL, BATON_INVALID,
         "baton_processor_v1.abi_version is 99, but this worker knows only ABI version 1");
    load(FIXTURE_DIR "/processor_no_process.so", NULL, BATON_INVALID, "has no process");
    /* A file that is not a shared object at all. */
    char path[] = "/tmp/baton-test-proc-XXXXXX.so";
    int fd = mkstemps(path, 3);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
    close(fd);
    load(path, NULL, BATON_INVALID, "cannot load it");
    unlink(path);

    baton_processor_t *p = load(WORDS_SO, "{\"upper\":true}", BATON_OK, NULL);
    assert_string_equal(baton_processor_name(p), "words");
    void *st = NULL;
    assert_int_equal(baton_processor_open(p, 3, 77, &st, errstr, sizeof(errstr)), BATON_OK);
    baton_processor_result_t res;
    assert_int_equal(apply(p, st, "k", "  the quick\tfox ", &res), BATON_OK);
    assert_int_equal(res.n, 3);
    assert_output(&res, 0, "k", "THE");
    assert_output(&res, 1, "k", "QUICK");
    assert_output(&res, 2, "k", "FOX");
    baton_processor_result_release(&res);
    /* Blank and missing values: zero outputs. */
    assert_int_equal(apply(p, st, "k", "   ", &res), BATON_OK);
    assert_int_equal(res.n, 0);
    assert_null(res.outputs);
    assert_int_equal(apply(p, st, NULL, NULL, &res), BATON_OK);
    assert_int_equal(res.n, 0);
    assert_int_equal(baton_processor_flush(p, st, errstr, sizeof(errstr)), BATON_OK);
    baton_processor_close(p, st);
    baton_processor_destroy(p);

    /* words' fail_on: the error comes back with its message. */
    p = load(WORDS_SO, "{\"fail_on\":\"poison\"}", BATON_OK, NULL);
    assert_int_equal(baton_processor_open(p, 0, 1, &st, errstr, sizeof(errstr)), BATON_OK);
    assert_int_equal(apply(p, st, NULL, "poison", &res), BATON_INTERNAL);
    assert_non_null(strstr(errstr, "offset 42"));
    assert_non_null(strstr(errstr, "poison"));
    assert_int_equal(res.n, 0);
    baton_processor_close(p, st);
    baton_processor_destroy(p);
    load(WORDS_SO, "{\"upper\":\"yes\"}", BATON_INVALID, "'upper' is not a setting");

    /* Output limits, enforced even when the processor ignores emit's -1;
     * a present empty value stays non-NULL, a NULL key stays NULL. */
    p = load(FIXTURE_DIR "/processor_flood.so", NULL, BATON_OK, NULL);
    assert_int_equal(baton_processor_open(p, 0, 1, &st, errstr, sizeof(errstr)), BATON_OK);
    assert_int_equal(apply(p, st, "k", "flood", &res), BATON_INTERNAL);
    assert_non_null(strstr(errstr, "more than 100000 outputs"));
    assert_int_equal(res.n, 0);
    assert_int_equal(apply(p, st, "k", "fine", &res), BATON_OK);
    assert_int_equal(res.n, 1);
    assert_output(&res, 0, NULL, "");
    baton_processor_result_release(&res);
    baton_processor_close(p, st);
    baton_processor_destroy(p);
}

static void test_config(void **state) {
    (void)state;
    load("project", NULL, BATON_INVALID, "project needs --processor-config");
    load("project", "{\"fields\":", BATON_INVALID, "--processor-config: the value is not JSON");
    load("project", "[1,2]", BATON_INVALID, "must be a JSON object");
    load("project", "{\"fields\":[]}", BATON_INVALID, "'fields' must be a non-empty array");
    load("project", "{\"fields\":[\"a\",\"\"]}", BATON_INVALID, "fields[1] is not a non-empty");
    load("project", "{\"fields\":[\"a\",\"a\"]}", BATON_INVALID, "field 'a' is listed twice");
    load("project", "{\"fields\":[\"a\"],\"filds\":1}", BATON_INVALID, "unknown setting 'filds'");
    load("project", "{\"fields\":[\"a\"],\"where\":[1]}", BATON_INVALID,
         "'where' must be an object");
    load("project", "@", BATON_INVALID, "needs a file name");
    load("project", "@/no/such/file.json", BATON_INVALID, "cannot read '/no/such/file.json'");

    char path[] = "/tmp/baton-test-proc-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *cfg = "{\"fields\": [\"user\"]}\n";
    assert_int_equal(write(fd, cfg, strlen(cfg)), (ssize_t)strlen(cfg));
    close(fd);
    char arg[64];
    snprintf(arg, sizeof(arg), "@%s", path);
    baton_processor_destroy(load("project", arg, BATON_OK, NULL));
    /* A bad file names the file. */
    FILE *f = fopen(path, "w");
    fputs("{oops", f);
    fclose(f);
    load("project", arg, BATON_INVALID, path);
    unlink(path);
}

static void test_project(void **state) {
    (void)state;
    baton_processor_t *p =
        load("project", "{\"fields\":[\"user\",\"amount\",\"missing\"]}", BATON_OK, NULL);
    void *st = NULL;
    assert_int_equal(baton_processor_open(p, 0, 5, &st, errstr, sizeof(errstr)), BATON_OK);
    baton_processor_result_t res;
    /* Only the fields, in the configured order, compact; the key unchanged;
     * a field the value lacks is left out. */
    assert_int_equal(apply(p, st, "key1",
                           "{\"x\": [1, 2], \"amount\": 12, \"user\": \"ann\", \"y\": null}", &res),
                     BATON_OK);
    assert_int_equal(res.n, 1);
    assert_output(&res, 0, "key1", "{\"user\":\"ann\",\"amount\":12}");
    baton_processor_result_release(&res);
    assert_int_equal(apply(p, st, NULL, "{\"other\": 1}", &res), BATON_OK);
    assert_int_equal(res.n, 1);
    assert_output(&res, 0, NULL, "{}");
    baton_processor_result_release(&res);
    /* Not a JSON object: a processor error naming the offset and why. */
    assert_int_equal(apply(p, st, "k", "not json", &res), BATON_INTERNAL);
    assert_non_null(strstr(errstr, "offset 42: value is not JSON"));
    assert_int_equal(res.n, 0);
    assert_int_equal(apply(p, st, "k", "[1, 2]", &res), BATON_INTERNAL);
    assert_non_null(strstr(errstr, "value is an array, not a JSON object"));
    assert_int_equal(apply(p, st, "k", "\"s\"", &res), BATON_INTERNAL);
    assert_non_null(strstr(errstr, "value is a string"));
    assert_int_equal(apply(p, st, "k", NULL, &res), BATON_INTERNAL);
    assert_non_null(strstr(errstr, "tombstone"));
    baton_processor_close(p, st);
    baton_processor_destroy(p);

    /* where: records that do not match produce nothing. */
    p = load("project", "{\"fields\":[\"user\"],\"where\":{\"country\":\"FR\",\"vip\":true}}",
             BATON_OK, NULL);
    assert_int_equal(baton_processor_open(p, 0, 5, &st, errstr, sizeof(errstr)), BATON_OK);
    assert_int_equal(apply(p, st, "k", "{\"user\":\"a\",\"country\":\"FR\",\"vip\":true}", &res),
                     BATON_OK);
    assert_int_equal(res.n, 1);
    assert_output(&res, 0, "k", "{\"user\":\"a\"}");
    baton_processor_result_release(&res);
    assert_int_equal(apply(p, st, "k", "{\"user\":\"b\",\"country\":\"FR\",\"vip\":false}", &res),
                     BATON_OK);
    assert_int_equal(res.n, 0);
    assert_int_equal(apply(p, st, "k", "{\"user\":\"c\"}", &res), BATON_OK);
    assert_int_equal(res.n, 0);
    /* Filtered or not, a non-object is still an error. */
    assert_int_equal(apply(p, st, "k", "7", &res), BATON_INTERNAL);
    baton_processor_close(p, st);
    baton_processor_destroy(p);
}

int main(void) {
    baton_log_level = BATON_LOG_ERROR;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_shared_objects),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_project),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
