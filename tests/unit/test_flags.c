/* test_flags.c: unit tests for flag and config parsing: baton_parse_i64,
 * baton_opt_int (exit 2 naming the flag), baton_root_valid, and the error
 * enum's names, descriptions and bands (baton_err.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton_err.h"
#include "baton_group.h"
#include "baton_opts.h"
#include "baton_util.h"

/* ---- baton_parse_i64 ------------------------------------------------------ */

static void expect_i64(const char *s, int64_t min, int64_t max, int64_t want) {
    int64_t v = 0x5a5a;
    if (baton_parse_i64(s, min, max, &v) != 0)
        fail_msg("'%s' in [%lld, %lld] rejected", s, (long long)min, (long long)max);
    if (v != want)
        fail_msg("'%s' parsed as %lld, want %lld", s, (long long)v, (long long)want);
}

static void expect_i64_bad(const char *s, int64_t min, int64_t max) {
    int64_t v = 0x5a5a;
    if (baton_parse_i64(s, min, max, &v) == 0)
        fail_msg("'%s' in [%lld, %lld] accepted as %lld", s ? s : "(null)", (long long)min,
                 (long long)max, (long long)v);
    if (v != 0x5a5a)
        fail_msg("'%s' rejected but wrote %lld", s ? s : "(null)", (long long)v);
}

static void test_parse_i64_valid(void **state) {
    (void)state;
    expect_i64("0", 0, 10, 0);
    expect_i64("7", 0, 10, 7);
    expect_i64("-5", -10, 10, -5);
    expect_i64("007", 0, 10, 7); /* decimal, not octal */
    expect_i64("010", 0, 100, 10);
    /* Both bounds are inclusive. */
    expect_i64("1", 1, 5, 1);
    expect_i64("5", 1, 5, 5);
    expect_i64("9223372036854775807", INT64_MIN, INT64_MAX, INT64_MAX);
    expect_i64("-9223372036854775808", INT64_MIN, INT64_MAX, INT64_MIN);
}

static void test_parse_i64_invalid(void **state) {
    (void)state;
    expect_i64_bad(NULL, 0, 10);
    expect_i64_bad("", 0, 10);
    expect_i64_bad("0", 1, 5);
    expect_i64_bad("6", 1, 5);
    expect_i64_bad("-1", 0, 10);
    /* Trailing junk. */
    expect_i64_bad("12x", 0, 100);
    expect_i64_bad("1 ", 0, 100);
    expect_i64_bad("1\n", 0, 100);
    expect_i64_bad("1.5", 0, 100);
    expect_i64_bad("1e3", 0, 10000);
    expect_i64_bad("0x10", 0, 100);
    /* Not a number at all. */
    expect_i64_bad("abc", 0, 100);
    expect_i64_bad("-", -10, 10);
    expect_i64_bad("+", 0, 10);
    expect_i64_bad(" ", 0, 10);
    /* Overflow is an error, not a clamp to the limit. */
    expect_i64_bad("9223372036854775808", INT64_MIN, INT64_MAX);
    expect_i64_bad("-9223372036854775809", INT64_MIN, INT64_MAX);
    expect_i64_bad("99999999999999999999999", INT64_MIN, INT64_MAX);
    expect_i64_bad("4294967296", 0, INT32_MAX);
}

/* "The whole string must be a number": leading blanks are not part of it. */
static void test_parse_i64_leading_space(void **state) {
    (void)state;
    expect_i64_bad(" 5", 0, 10);
    expect_i64_bad("\t5", 0, 10);
    expect_i64_bad("\n5", 0, 10);
}

/* ---- baton_opt_int -------------------------------------------------------- */

static void test_opt_int_valid(void **state) {
    (void)state;
    assert_int_equal(baton_opt_int("baton-worker", "capacity", "3", 1, 100), 3);
    assert_int_equal(baton_opt_int("baton-worker", "capacity", "1", 1, 100), 1);
    assert_int_equal(baton_opt_int("baton-worker", "capacity", "100", 1, 100), 100);
    assert_int_equal(baton_opt_int("p", "n", "-7", -10, 0), -7);
}

/* Runs baton_opt_int in a child with stderr on a pipe; returns the wait
 * status and the child's stderr (heap string, caller frees). */
static int opt_int_child(const char *flag, const char *val, int64_t min, int64_t max,
                         char **stderr_out) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        if (dup2(fds[1], STDERR_FILENO) < 0)
            _exit(10);
        close(fds[1]);
        baton_opt_int("batonctl", flag, val, min, max);
        _exit(0); /* accepted */
    }
    close(fds[1]);
    size_t cap = 256, len = 0;
    char *out = xmalloc(cap);
    ssize_t n;
    for (;;) {
        if (len + 1 == cap)
            out = xrealloc(out, cap *= 2);
        n = read(fds[0], out + len, cap - len - 1);
        if (n > 0)
            len += (size_t)n;
        else if (n == 0 || errno != EINTR)
            break;
    }
    out[len] = 0;
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        assert_int_equal(errno, EINTR);
    *stderr_out = out;
    return st;
}

static void test_opt_int_exits_2(void **state) {
    (void)state;
    struct {
        const char *flag, *val;
        int64_t min, max;
    } cases[] = {
        {"partitions", "12x", 1, 1000000}, {"partitions", "0", 1, 1000000},
        {"capacity", "", 1, 100},          {"capacity", "101", 1, 100},
        {"timeout-ms", "-1", 0, 60000},    {"timeout-ms", "99999999999999999999", 0, 60000},
        {"timeout-ms", "1.5", 0, 60000},
    };
    for (size_t i = 0; i < BATON_ARRAY_SIZE(cases); i++) {
        char *err = NULL;
        int st = opt_int_child(cases[i].flag, cases[i].val, cases[i].min, cases[i].max, &err);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != BATON_EXIT_USAGE)
            fail_msg("--%s '%s': status 0x%x, want exit %d; stderr: %s", cases[i].flag,
                     cases[i].val, st, BATON_EXIT_USAGE, err);
        char *flag = xasprintf("--%s", cases[i].flag);
        char *val = xasprintf("'%s'", cases[i].val);
        char *range = xasprintf("[%lld, %lld]", (long long)cases[i].min, (long long)cases[i].max);
        if (strncmp(err, "batonctl: ", 10) != 0 || !strstr(err, flag) || !strstr(err, val) ||
            !strstr(err, range) || !strstr(err, "--help"))
            fail_msg("--%s '%s': stderr '%s' does not name prog, flag, value, range and --help",
                     cases[i].flag, cases[i].val, err);
        free(range);
        free(val);
        free(flag);
        free(err);
    }

    /* A good value does not exit with a usage error or print anything. */
    char *err = NULL;
    int st = opt_int_child("capacity", "5", 1, 100, &err);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_string_equal(err, "");
    free(err);
}

/* ---- baton_root_valid ----------------------------------------------------- */

static void test_root_valid(void **state) {
    (void)state;
    const char *good[] = {"/baton",           "/a/b",  "/a",          "/a/b/c",
                          "/baton-prod.eu_1", "/a/.b", "/zookeeper2", "/x/zookeeper"};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(good); i++)
        if (baton_root_valid(good[i]) != 0)
            fail_msg("root '%s' rejected", good[i]);
    const char *bad[] = {"",      "baton",      "a/b",          "/",      "//",      "/a/",   "//a",
                         "/a//b", "/a/b/",      "/a///b",       "/a/./b", "/a/../b", "/.",    "/..",
                         "/a/.",  "/zookeeper", "/zookeeper/x", "/a\tb",  "/a\nb",   "/a\x7f"};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(bad); i++)
        if (baton_root_valid(bad[i]) == 0)
            fail_msg("root '%s' accepted", bad[i]);
}

/* ---- errors --------------------------------------------------------------- */

typedef struct {
    int code;
    const char *name; /* compared case-insensitively */
    int band;         /* 0 ok, 1 input, 2 retriable, 3 fatal */
} err_case_t;

static const err_case_t err_cases[] = {
    {BATON_OK, "ok", 0},
    {BATON_INVALID, "invalid", 1},
    {BATON_CORRUPT, "corrupt", 1},
    {BATON_CONFLICT, "conflict", 1},
    {BATON_NOTFOUND, "notfound", 1},
    {BATON_EXISTS, "exists", 1},
    {BATON_CONNECTION, "connection", 2},
    {BATON_BUSY, "busy", 2},
    {BATON_TIMEOUT, "timeout", 2},
    {BATON_STALE, "stale", 3},
    {BATON_EXPIRED, "expired", 3},
    {BATON_DEPOSED, "deposed", 3},
    {BATON_UNFENCED, "unfenced", 3},
    {BATON_IO, "io", 3},
    {BATON_INTERNAL, "internal", 3},
    {BATON_EVICTED, "evicted", 3},
    {BATON_DENIED, "denied", 3},
};

static void test_err_names(void **state) {
    (void)state;
    /* The table above lists every code of the X-macro. */
    int ncodes = 0;
#define COUNT_(name, val, msg) ncodes++;
    BATON_ERR_MAP(COUNT_)
#undef COUNT_
    assert_int_equal(ncodes, (int)BATON_ARRAY_SIZE(err_cases));

    for (size_t i = 0; i < BATON_ARRAY_SIZE(err_cases); i++) {
        const err_case_t *c = &err_cases[i];
        const char *name = baton_err_name(c->code);
        const char *msg = baton_strerror(c->code);
        assert_non_null(name);
        assert_non_null(msg);
        if (strcasecmp(name, c->name) != 0)
            fail_msg("baton_err_name(%d) = '%s', want '%s'", c->code, name, c->name);
        assert_string_not_equal(msg, "unknown error");
        assert_true(strlen(msg) > 3);
        /* Names and descriptions are distinct. */
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal(name, baton_err_name(err_cases[j].code));
            assert_string_not_equal(msg, baton_strerror(err_cases[j].code));
        }
    }
    assert_string_equal(baton_strerror(BATON_OK), "success");
    assert_non_null(strstr(baton_strerror(BATON_STALE), "fenced"));
    assert_non_null(strstr(baton_strerror(BATON_EXPIRED), "expired"));

    /* Codes outside the table. */
    int unknown[] = {1, -6, -99, -103, -199, -208, -299, -1000, 12345};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(unknown); i++) {
        assert_string_equal(baton_err_name(unknown[i]), "UNKNOWN");
        assert_string_equal(baton_strerror(unknown[i]), "unknown error");
    }
}

static void test_err_bands(void **state) {
    (void)state;
    assert_true(baton_err_is_retriable(BATON_CONNECTION));
    assert_true(baton_err_is_fatal(BATON_STALE));
    assert_true(baton_err_is_input(BATON_INVALID));
    assert_false(baton_err_is_fatal(BATON_CONNECTION));
    assert_false(baton_err_is_retriable(BATON_STALE));
    assert_false(baton_err_is_retriable(BATON_INVALID));

    for (size_t i = 0; i < BATON_ARRAY_SIZE(err_cases); i++) {
        const err_case_t *c = &err_cases[i];
        int in = baton_err_is_input(c->code), re = baton_err_is_retriable(c->code),
            fa = baton_err_is_fatal(c->code);
        if (in != (c->band == 1) || re != (c->band == 2) || fa != (c->band == 3))
            fail_msg("%s (%d): input=%d retriable=%d fatal=%d, want band %d", c->name, c->code, in,
                     re, fa, c->band);
    }

    /* Band edges. */
    assert_false(baton_err_is_input(0));
    assert_true(baton_err_is_input(-1));
    assert_true(baton_err_is_input(-99));
    assert_false(baton_err_is_input(-100));
    assert_true(baton_err_is_retriable(-100));
    assert_true(baton_err_is_retriable(-199));
    assert_false(baton_err_is_retriable(-200));
    assert_true(baton_err_is_fatal(-200));
    assert_true(baton_err_is_fatal(-299));
    assert_false(baton_err_is_fatal(-199));
    assert_false(baton_err_is_fatal(1));
    assert_false(baton_err_is_input(1));
    assert_false(baton_err_is_retriable(1));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_i64_valid),
        cmocka_unit_test(test_parse_i64_invalid),
        cmocka_unit_test(test_parse_i64_leading_space),
        cmocka_unit_test(test_opt_int_valid),
        cmocka_unit_test(test_opt_int_exits_2),
        cmocka_unit_test(test_root_valid),
        cmocka_unit_test(test_err_names),
        cmocka_unit_test(test_err_bands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
