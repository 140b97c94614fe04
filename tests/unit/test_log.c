/* test_log.c: the logging facade's two formats (common/baton_log.h): the
 * key=value text line and the --log-format json object, read back from a
 * redirected stderr; and level filtering without evaluating arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "baton_log.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs fn with stderr sent to a temp file; returns what it wrote. */
static char *capture(void (*fn)(void)) {
    char path[] = "/tmp/baton-test-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    char *buf = calloc(1, 65536);
    ssize_t n = read(fd, buf, 65535);
    assert_true(n >= 0);
    close(fd);
    unlink(path);
    return buf;
}

static void emit(void) {
    BLOG_INFO("event=acquired partition=%d epoch=%lld note=\"a \\\"quoted\\\" value\" 007", 3,
              4294967301LL);
}

static void test_text(void **state) {
    (void)state;
    baton_log_init("baton-worker", "w1");
    baton_log_set_format(BATON_LOG_FORMAT_TEXT);
    char *out = capture(emit);
    assert_non_null(strstr(out, "level=info proc=baton-worker id=w1 event=acquired partition=3 "
                                "epoch=4294967301"));
    assert_non_null(strstr(out, "ts="));
    assert_int_equal(out[strlen(out) - 1], '\n');
    free(out);
}

static void test_json(void **state) {
    (void)state;
    baton_log_init("baton-worker", "42");
    baton_log_set_format(BATON_LOG_FORMAT_JSON);
    char *out = capture(emit);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "level")), "info");
    assert_string_equal(json_string_value(json_object_get(j, "proc")), "baton-worker");
    assert_string_equal(json_string_value(json_object_get(j, "id")), "42"); /* ids stay strings */
    assert_string_equal(json_string_value(json_object_get(j, "event")), "acquired");
    assert_int_equal(json_integer_value(json_object_get(j, "partition")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "epoch")), 4294967301LL);
    assert_true(json_is_string(json_object_get(j, "note")));
    assert_string_equal(json_string_value(json_object_get(j, "msg")), "007");
    json_decref(j);
    free(out);
    baton_log_set_format(BATON_LOG_FORMAT_TEXT);
}

static int evaluated = 0;
static int side_effect(void) { return ++evaluated; }
static void emit_debug(void) { BLOG_DEBUG("event=x n=%d", side_effect()); }

static void test_filtering(void **state) {
    (void)state;
    baton_log_level = BATON_LOG_INFO;
    char *out = capture(emit_debug);
    assert_string_equal(out, "");
    assert_int_equal(evaluated, 0);
    free(out);
    baton_log_level = BATON_LOG_DEBUG;
    out = capture(emit_debug);
    assert_non_null(strstr(out, "event=x n=1"));
    free(out);
    baton_log_level = BATON_LOG_INFO;
}

static void test_parse(void **state) {
    (void)state;
    baton_log_format_t f;
    assert_int_equal(baton_log_format_parse("json", &f), 0);
    assert_int_equal(f, BATON_LOG_FORMAT_JSON);
    assert_int_equal(baton_log_format_parse("text", &f), 0);
    assert_int_equal(f, BATON_LOG_FORMAT_TEXT);
    assert_int_equal(baton_log_format_parse("xml", &f), -1);
    baton_log_level_t l;
    assert_int_equal(baton_log_level_parse("warn", &l), 0);
    assert_int_equal(l, BATON_LOG_WARN);
    assert_int_equal(baton_log_level_parse("loud", &l), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_filtering),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
