/* test_conf.c: settings from flags, environment and properties files
 * (common/baton_conf.h): parsing, precedence and the errors' wording. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "baton_conf.h"
#include "baton_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_props(const char *text, baton_prop_t **p, size_t *n, char *err) {
    return baton_props_parse("f.properties", text, strlen(text), p, n, err, 256);
}

static void test_props_forms(void **state) {
    (void)state;
    baton_prop_t *p;
    size_t n;
    char err[256];
    const char *text = "# comment\n"
                       "! another\n"
                       "\n"
                       "a=1\n"
                       "b: two\n"
                       "c three\n"
                       "d = spaced = value\n"
                       "  e\t=\tx  \n"
                       "long = first \\\n"
                       "       second\n"
                       "esc\\=key = tab\\there\n"
                       "empty=\n"
                       "crlf=yes\r\n";
    assert_int_equal(parse_props(text, &p, &n, err), BATON_OK);
    assert_int_equal(n, 9);
    assert_string_equal(p[0].key, "a");
    assert_string_equal(p[0].value, "1");
    assert_int_equal(p[0].line, 4);
    assert_string_equal(p[1].value, "two");
    assert_string_equal(p[2].key, "c");
    assert_string_equal(p[2].value, "three");
    assert_string_equal(p[3].key, "d");
    assert_string_equal(p[3].value, "spaced = value");
    assert_string_equal(p[4].key, "e");
    assert_string_equal(p[4].value, "x");
    assert_string_equal(p[5].key, "long");
    assert_string_equal(p[5].value, "first second");
    assert_int_equal(p[5].line, 9);
    assert_string_equal(p[6].key, "esc=key");
    assert_string_equal(p[6].value, "tab\there");
    assert_string_equal(p[7].value, "");
    assert_string_equal(p[8].value, "yes");
    baton_props_free(p, n);
}

static void test_props_errors(void **state) {
    (void)state;
    baton_prop_t *p = NULL;
    size_t n = 0;
    char err[256];
    assert_int_equal(parse_props("a=1\nb=2\na=3\n", &p, &n, err), BATON_INVALID);
    assert_non_null(strstr(err, "f.properties:3"));
    assert_non_null(strstr(err, "'a'"));
    assert_non_null(strstr(err, "line 1"));
    assert_int_equal(parse_props("=value\n", &p, &n, err), BATON_INVALID);
    assert_non_null(strstr(err, "f.properties:1"));
    const char nul[] = "a=1\0b=2\n";
    assert_int_equal(baton_props_parse("x", nul, sizeof(nul) - 1, &p, &n, err, sizeof(err)),
                     BATON_INVALID);
    assert_non_null(strstr(err, "NUL"));
    assert_int_equal(parse_props("", &p, &n, err), BATON_OK);
    assert_int_equal(n, 0);
    baton_props_free(p, n);
}

/* A daemon-like table: a string, an int, a bool. */
typedef struct {
    const char *zk;
    int64_t timeout;
    int verbose;
} settings_t;

static size_t table(settings_t *s, baton_conf_opt_t *o) {
    o[0] = (baton_conf_opt_t){"zk",
                              "zookeeper.connect",
                              "BATON_TEST_ZK",
                              BATON_CONF_STR,
                              0,
                              0,
                              &s->zk,
                              "HOSTS",
                              "ZooKeeper",
                              0};
    o[1] = (baton_conf_opt_t){"session-timeout-ms",
                              "session.timeout.ms",
                              "BATON_TEST_TIMEOUT",
                              BATON_CONF_INT,
                              100,
                              60000,
                              &s->timeout,
                              "MS",
                              "timeout",
                              0};
    o[2] = (baton_conf_opt_t){"verbose", "verbose",   NULL, BATON_CONF_BOOL, 0,
                              0,         &s->verbose, NULL, "chatty",        0};
    return 3;
}

static char *write_tmp(const char *text) {
    char *path = strdup("/tmp/baton-test-conf-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static int run(settings_t *s, baton_conf_parsed_t *c, char *err, int argc, char **argv) {
    baton_conf_opt_t o[3];
    size_t n = table(s, o);
    return baton_conf_parse(o, n, 1, argc, argv, NULL, c, err, 256);
}

static void test_precedence(void **state) {
    (void)state;
    char *path = write_tmp("zookeeper.connect = file:1\nsession.timeout.ms=3000\nverbose=true\n"
                           "kafka.security.protocol=ssl\nkafka.client.id=from-file\n");
    char cfg[300];
    snprintf(cfg, sizeof(cfg), "%s", path);
    char err[256];
    settings_t s = {.zk = "default", .timeout = 10000};
    baton_conf_parsed_t c;

    /* file only */
    unsetenv("BATON_TEST_ZK");
    unsetenv("BATON_TEST_TIMEOUT");
    char *a1[] = {"prog", "--config", cfg, NULL};
    assert_int_equal(run(&s, &c, err, 3, a1), BATON_OK);
    assert_string_equal(s.zk, "file:1");
    assert_int_equal(s.timeout, 3000);
    assert_int_equal(s.verbose, 1);
    assert_int_equal(c.nkafka, 2);
    assert_string_equal(c.kafka[0], "security.protocol=ssl");
    baton_conf_release(&c);

    /* env beats file; flag beats env; --kafka comes after the file's keys */
    setenv("BATON_TEST_ZK", "env:2", 1);
    setenv("BATON_TEST_TIMEOUT", "4000", 1);
    s = (settings_t){.zk = "default", .timeout = 10000};
    char *a2[] = {
        "prog", "--config", cfg, "--session-timeout-ms", "5000", "--kafka", "client.id=from-flag",
        NULL};
    assert_int_equal(run(&s, &c, err, 7, a2), BATON_OK);
    assert_string_equal(s.zk, "env:2");
    assert_int_equal(s.timeout, 5000);
    assert_int_equal(c.nkafka, 3);
    assert_string_equal(c.kafka[2], "client.id=from-flag");
    baton_conf_release(&c);

    /* a bad environment value is named by its variable */
    setenv("BATON_TEST_TIMEOUT", "soon", 1);
    char *a3[] = {"prog", NULL};
    assert_int_equal(run(&s, &c, err, 1, a3), BATON_INVALID);
    assert_non_null(strstr(err, "BATON_TEST_TIMEOUT"));
    unsetenv("BATON_TEST_ZK");
    unsetenv("BATON_TEST_TIMEOUT");
    unlink(path);
    free(path);
}

static void test_file_errors(void **state) {
    (void)state;
    char err[256];
    settings_t s = {0};
    baton_conf_parsed_t c;
    char *path = write_tmp("zookeeper.connect=x\nsesion.timeout.ms=3000\n");
    char *a1[] = {"prog", "--config", path, NULL};
    assert_int_equal(run(&s, &c, err, 3, a1), BATON_INVALID);
    assert_non_null(strstr(err, ":2: unknown key 'sesion.timeout.ms'"));
    unlink(path);
    free(path);

    path = write_tmp("session.timeout.ms=12\n");
    char *a2[] = {"prog", "--config", path, NULL};
    assert_int_equal(run(&s, &c, err, 3, a2), BATON_INVALID);
    assert_non_null(strstr(err, ":1: session.timeout.ms: '12' is not an integer in [100, 60000]"));
    unlink(path);
    free(path);

    char *a3[] = {"prog", "--config", "/nonexistent/baton.properties", NULL};
    assert_int_equal(run(&s, &c, err, 3, a3), BATON_INVALID);
    assert_non_null(strstr(err, "cannot open '/nonexistent/baton.properties'"));
}

static void test_flag_errors(void **state) {
    (void)state;
    char err[256];
    settings_t s = {0};
    baton_conf_parsed_t c;
    char *a1[] = {"prog", "--bogus", NULL};
    assert_int_equal(run(&s, &c, err, 2, a1), BATON_INVALID);
    assert_non_null(strstr(err, "'--bogus'"));
    char *a2[] = {"prog", "--session-timeout-ms", "abc", NULL};
    assert_int_equal(run(&s, &c, err, 3, a2), BATON_INVALID);
    assert_non_null(strstr(err, "--session-timeout-ms: 'abc'"));
    char *a3[] = {"prog", "stray", NULL};
    assert_int_equal(run(&s, &c, err, 2, a3), BATON_INVALID);
    assert_non_null(strstr(err, "unexpected argument 'stray'"));
    char *a4[] = {"prog", "--kafka", "novalue", NULL};
    assert_int_equal(run(&s, &c, err, 3, a4), BATON_INVALID);
    assert_non_null(strstr(err, "KEY=VALUE"));
    char *a5[] = {"prog", "--zk", NULL};
    assert_int_equal(run(&s, &c, err, 2, a5), BATON_INVALID);
    assert_non_null(strstr(err, "'--zk'"));
    char *a6[] = {"prog", "--help", NULL};
    assert_int_equal(run(&s, &c, err, 2, a6), BATON_OK);
    assert_int_equal(c.help, 1);
    baton_conf_release(&c);
}

static void test_secret_not_echoed(void **state) {
    (void)state;
    const char *pass = NULL;
    baton_conf_opt_t o[1] = {
        {"zk-auth", "zookeeper.auth", NULL, BATON_CONF_STR, 0, 0, &pass, "SCHEME:CRED", "auth", 1}};
    int64_t dummy = 0;
    baton_conf_opt_t oi[1] = {{"pin", "pin", NULL, BATON_CONF_INT, 0, 9, &dummy, "N", "x", 1}};
    char err[256];
    baton_conf_parsed_t c;
    char *a[] = {"prog", "--pin", "hunter2", NULL};
    assert_int_equal(baton_conf_parse(oi, 1, 0, 3, a, NULL, &c, err, sizeof(err)), BATON_INVALID);
    assert_null(strstr(err, "hunter2"));
    assert_non_null(strstr(err, "(secret)"));
    char *b[] = {"prog", "--zk-auth", "digest:u:p", NULL};
    assert_int_equal(baton_conf_parse(o, 1, 0, 3, b, NULL, &c, err, sizeof(err)), BATON_OK);
    assert_string_equal(pass, "digest:u:p");
    baton_conf_release(&c);
}

static void test_positionals(void **state) {
    (void)state;
    settings_t s = {0};
    baton_conf_opt_t o[3];
    size_t n = table(&s, o);
    baton_conf_parsed_t c;
    char err[256];
    int npos = 0;
    char *a[] = {"prog", "--zk", "h:1", "--", "cmd", "--zk", "x", NULL};
    assert_int_equal(baton_conf_parse(o, n, 0, 7, a, &npos, &c, err, sizeof(err)), BATON_OK);
    assert_int_equal(npos, 3);
    assert_string_equal(a[7 - npos], "cmd");
    assert_string_equal(s.zk, "h:1");
    baton_conf_release(&c);
}

/* A table without property keys (baton-run's) has no config file: --config
 * is an unknown flag and BATON_CONFIG, exported for the other programs, is
 * not read; a table with them reads it. */
static void test_no_file_without_properties(void **state) {
    (void)state;
    const char *zk = NULL;
    baton_conf_opt_t o[1] = {{"zk", NULL, NULL, BATON_CONF_STR, 0, 0, &zk, "HOSTS", "zk", 0}};
    char err[256];
    baton_conf_parsed_t c;
    char *a[] = {"prog", "--config", "/nonexistent/baton.properties", NULL};
    assert_int_equal(baton_conf_parse(o, 1, 0, 3, a, NULL, &c, err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "unknown option '--config'"));
    baton_conf_release(&c);
    char *file = write_tmp("unknown.key = 1\n");
    setenv("BATON_CONFIG", file, 1);
    char *b[] = {"prog", "--zk", "h:1", NULL};
    assert_int_equal(baton_conf_parse(o, 1, 0, 3, b, NULL, &c, err, sizeof(err)), BATON_OK);
    assert_null(c.config_path);
    assert_string_equal(zk, "h:1");
    baton_conf_release(&c);
    /* The same file through a table with property keys: read, and refused. */
    settings_t s = {0};
    char *d[] = {"prog", NULL};
    assert_int_equal(run(&s, &c, err, 1, d), BATON_INVALID);
    assert_non_null(strstr(err, "unknown key 'unknown.key'"));
    baton_conf_release(&c);
    unsetenv("BATON_CONFIG");
    unlink(file);
    free(file);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_props_forms), cmocka_unit_test(test_props_errors),
        cmocka_unit_test(test_precedence),  cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_flag_errors), cmocka_unit_test(test_secret_not_echoed),
        cmocka_unit_test(test_positionals), cmocka_unit_test(test_no_file_without_properties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
