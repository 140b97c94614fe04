/* test_lib_conf.c: baton_conf_t, the member library's configuration
 * (include/baton/baton.h), without a server: every setting (and alias)
 * set and read back, the defaults, unknown names, bad values (which leave
 * the configuration unchanged), NULL handling, the typed setters, copies,
 * the password never read back, and baton_membership_new_conf's checks of
 * what is required. Several memberships in one process against a real
 * ZooKeeper: tests/integration/it_libbaton_conf.sh. */
#include <baton/baton.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static const char *get(const baton_conf_t *c, const char *name) {
    static char buf[8192];
    assert_int_equal(baton_conf_get(c, name, buf, sizeof(buf)), BATON_OK);
    return buf;
}

static void set_ok(baton_conf_t *c, const char *name, const char *value) {
    char err[512] = "";
    int rc = baton_conf_set(c, name, value, err, sizeof(err));
    if (rc != BATON_OK)
        fail_msg("%s=%s: %s", name, value ? value : "(null)", err);
}

/* Refused with BATON_INVALID, a message containing want, and c unchanged. */
static void set_bad(baton_conf_t *c, const char *name, const char *value, const char *want) {
    char err[512] = "", before[8192] = "";
    int known = baton_conf_get(c, name, before, sizeof(before)) == BATON_OK;
    assert_int_equal(baton_conf_set(c, name, value, err, sizeof(err)), BATON_INVALID);
    if (!strstr(err, want))
        fail_msg("%s=%s: message '%s' does not say '%s'", name, value, err, want);
    if (known)
        assert_string_equal(get(c, name), before);
}

static void test_defaults(void **state) {
    (void)state;
    baton_conf_t *c = baton_conf_new();
    assert_non_null(c);
    static const char *const defaults[][2] = {
        {"zookeeper.connect", ""},
        {"zookeeper.root", "/baton"},
        {"group", ""},
        {"worker.id", ""},
        {"capacity", "1"},
        {"rack", ""},
        {"session.timeout.ms", "10000"},
        {"connect.timeout.ms", "10000"},
        {"keys", ""},
        {"no.partitions", "false"},
        {"zookeeper.auth", ""},
        {"zookeeper.auth.file", ""},
        {"log.level", "info"},
        {"state.dir", ""},
        {"member.wait.ms", "0"},
        {"standby.claim", "takeover"},
        {"standby.notice", "off"},
    };
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
        assert_string_equal(get(c, defaults[i][0]), defaults[i][1]);
    baton_conf_destroy(c);
    baton_conf_destroy(NULL);
    assert_null(baton_conf_dup(NULL));
}

static void test_every_setting(void **state) {
    (void)state;
    char path[] = "/tmp/test_lib_conf.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "digest:carol:pw\n", 16), 16);
    close(fd);
    const struct {
        const char *name, *value, *read; /* read: what get says (NULL: value) */
    } cases[] = {
        {"zookeeper.connect", "zk1:2181,zk2:2181/tenant", NULL},
        {"zookeeper.hosts", "zk3:2181", NULL},
        {"zookeeper.root", "/other/root", NULL},
        {"group", "jobs.v2", NULL},
        {"worker.id", "host-1_a", NULL},
        {"id", "host-2", NULL},
        {"capacity", "1", NULL},
        {"capacity", "1000000", NULL},
        {"rack", "eu-west-1a", NULL},
        {"rack", "", NULL},
        {"session.timeout.ms", "100", NULL},
        {"zookeeper.session.timeout.ms", "3600000", NULL},
        {"connect.timeout.ms", "2500", NULL},
        {"zookeeper.connect.timeout.ms", "100", NULL},
        {"keys", "nightly,report.x", NULL},
        {"keys", "", NULL},
        {"no.partitions", "true", NULL},
        {"no.partitions", "0", "false"},
        {"no.partitions", "1", "true"},
        {"zookeeper.auth", "digest:alice:s3cret", "digest:alice:***"},
        {"zookeeper.auth.file", path, NULL},
        {"log.level", "debug", NULL},
        {"log.level", "off", NULL},
        {"log.level", "error", NULL},
        {"state.dir", "/var/lib/baton-test", NULL},
        {"member.wait.ms", "0", NULL},
        {"member.wait.ms", "3600000", NULL},
        {"standby.claim", "ahead", NULL},
        {"standby.claim", "takeover", NULL},
        {"standby.notice", "127.0.0.1:0", NULL},
        {"standby.notice", "[::1]:7000", NULL},
        {"standby.notice", "off", NULL},
        {"standby.notice", "", "off"},
    };
    baton_conf_t *c = baton_conf_new();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        set_ok(c, cases[i].name, cases[i].value);
        assert_string_equal(get(c, cases[i].name), cases[i].read ? cases[i].read : cases[i].value);
    }
    /* An alias and its name are one setting. */
    assert_string_equal(get(c, "zookeeper.connect"), "zk3:2181");
    assert_string_equal(get(c, "worker.id"), "host-2");
    assert_string_equal(get(c, "session.timeout.ms"), "3600000");
    /* NULL: back to the default. */
    set_ok(c, "capacity", NULL);
    assert_string_equal(get(c, "capacity"), "1");
    set_ok(c, "zookeeper.root", NULL);
    assert_string_equal(get(c, "zookeeper.root"), "/baton");
    set_ok(c, "log.level", NULL);
    assert_string_equal(get(c, "log.level"), "info");
    set_ok(c, "keys", NULL);
    assert_string_equal(get(c, "keys"), "");
    set_ok(c, "zookeeper.auth", NULL);
    assert_string_equal(get(c, "zookeeper.auth"), "");
    unlink(path);
    baton_conf_destroy(c);
}

static void test_unknown_and_null(void **state) {
    (void)state;
    char err[512], buf[64];
    baton_conf_t *c = baton_conf_new();
    set_bad(c, "zookeeper.nope", "1", "unknown setting 'zookeeper.nope'");
    set_bad(c, "", "1", "unknown setting ''");
    assert_int_equal(baton_conf_set(c, NULL, "1", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "unknown setting"));
    assert_int_equal(baton_conf_set(NULL, "group", "g", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "NULL"));
    /* errstr may be NULL. */
    assert_int_equal(baton_conf_set(c, "nope", "1", NULL, 0), BATON_INVALID);
    assert_int_equal(baton_conf_get(c, "nope", buf, sizeof(buf)), BATON_INVALID);
    assert_int_equal(baton_conf_get(NULL, "group", buf, sizeof(buf)), BATON_INVALID);
    assert_int_equal(baton_conf_get(c, NULL, buf, sizeof(buf)), BATON_INVALID);
    assert_int_equal(baton_conf_get(c, "group", NULL, 10), BATON_INVALID);
    assert_int_equal(baton_conf_get(c, "group", buf, 0), BATON_INVALID);
    /* A buffer too small is refused, never overrun. */
    set_ok(c, "zookeeper.connect", "a-rather-long-host-name:2181");
    assert_int_equal(baton_conf_get(c, "zookeeper.connect", buf, 8), BATON_INVALID);
    assert_int_equal(strlen(buf), 7);
    /* The typed setters take NULL without a crash. */
    baton_conf_set_acquired_cb(NULL, NULL);
    baton_conf_set_released_cb(NULL, NULL);
    baton_conf_set_assigned_cb(NULL, NULL);
    baton_conf_set_opaque(NULL, NULL);
    baton_conf_set_log_cb(NULL, NULL, NULL);
    assert_int_equal(baton_conf_set_keys(NULL, NULL, 0, err, sizeof(err)), BATON_INVALID);
    baton_conf_destroy(c);
}

static void test_bad_values(void **state) {
    (void)state;
    char long_rack[80], many[5000];
    memset(long_rack, 'r', 64);
    long_rack[64] = 0;
    size_t pos = 0;
    for (int i = 0; pos < sizeof(many) - 200; i++)
        pos += (size_t)snprintf(many + pos, sizeof(many) - pos, "%skey-%04d", i ? "," : "", i);
    baton_conf_t *c = baton_conf_new();
    set_ok(c, "group", "g1");
    set_ok(c, "capacity", "5");
    /* name, value, what the message says */
    const char *const bad[][3] = {
        {"zookeeper.connect", "", "zookeeper.connect: empty"},
        {"zookeeper.root", "relative", "zookeeper.root: 'relative' is not a valid znode"},
        {"zookeeper.root", "/a//b", "not a valid znode path"},
        {"group", "bad/name", "group: 'bad/name' is not a valid name"},
        {"group", "", "group: '' is not a valid name"},
        {"worker.id", "has space", "worker.id: 'has space' is not a valid name"},
        {"id", "x/y", "worker.id: 'x/y'"},
        {"capacity", "0", "capacity: '0' is not an integer in 1..1000000"},
        {"member.wait.ms", "-1", "member.wait.ms: '-1' is not an integer in 0..3600000"},
        {"standby.claim", "early", "standby.claim: 'early' is not takeover or ahead"},
        {"standby.notice", "0.0.0.0:0", "standby.notice: '0.0.0.0:0' is a wildcard"},
        {"standby.notice", "localhost:1", "standby.notice: 'localhost:1' is not an address"},
        {"standby.notice", "127.0.0.1:70000", "standby.notice: '127.0.0.1:70000'"},
        {"capacity", "1000001", "capacity: '1000001'"},
        {"capacity", "-3", "capacity: '-3'"},
        {"capacity", "12abc", "capacity: '12abc'"},
        {"capacity", "", "capacity: ''"},
        {"capacity", "99999999999999999999", "capacity: '99999999999999999999'"},
        {"rack", long_rack, "rack: longer than 63 bytes"},
        {"session.timeout.ms", "99", "session.timeout.ms: '99' is not an integer in 100.."},
        {"session.timeout.ms", "3600001", "session.timeout.ms: '3600001'"},
        {"zookeeper.session.timeout.ms", "10s", "session.timeout.ms: '10s'"},
        {"connect.timeout.ms", "-1", "connect.timeout.ms: '-1'"},
        {"keys", "a,,b", "keys: '' is not a key name"},
        {"keys", "ok,bad/k", "keys: 'bad/k' is not a key name"},
        {"keys", ",", "keys: '' is not a key name"},
        {"keys", many, "keys: the key filter is over"},
        {"no.partitions", "yes", "no.partitions: 'yes' is not true or false"},
        {"log.level", "verbose", "log.level: 'verbose' is not debug, info, warn, error or off"},
        {"zookeeper.auth", "sasl:u:hunter2", "zookeeper.auth: the scheme must be 'digest'"},
        {"zookeeper.auth", "digest:u:", "zookeeper.auth: expected digest:USER:PASS"},
        {"zookeeper.auth.file", "/nonexistent/auth",
         "zookeeper.auth.file: cannot read '/nonexistent/auth'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        set_bad(c, bad[i][0], bad[i][1], bad[i][2]);
    /* What was set before the refusals stands. */
    assert_string_equal(get(c, "group"), "g1");
    assert_string_equal(get(c, "capacity"), "5");
    baton_conf_destroy(c);
}

static void test_secret(void **state) {
    (void)state;
    char err[512];
    baton_conf_t *c = baton_conf_new();
    assert_int_equal(baton_conf_set(c, "zookeeper.auth", "digest:hunter2", err, sizeof(err)),
                     BATON_INVALID);
    assert_null(strstr(err, "hunter2"));
    set_ok(c, "zookeeper.auth", "digest:alice:hunter2");
    assert_null(strstr(get(c, "zookeeper.auth"), "hunter2"));
    baton_conf_t *d = baton_conf_dup(c);
    assert_string_equal(get(d, "zookeeper.auth"), "digest:alice:***");
    baton_conf_destroy(c);
    baton_conf_destroy(d);
}

static void test_keys_setter_and_dup(void **state) {
    (void)state;
    char err[512];
    baton_conf_t *c = baton_conf_new();
    char k1[] = "nightly", k2[] = "report.x";
    const char *keys[] = {k1, k2};
    assert_int_equal(baton_conf_set_keys(c, keys, 2, err, sizeof(err)), BATON_OK);
    k1[0] = 'X'; /* copied */
    assert_string_equal(get(c, "keys"), "nightly,report.x");
    const char *bad[] = {"ok", "no/pe"};
    assert_int_equal(baton_conf_set_keys(c, bad, 2, err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "'no/pe'"));
    const char *null_key[] = {"ok", NULL};
    assert_int_equal(baton_conf_set_keys(c, null_key, 2, err, sizeof(err)), BATON_INVALID);
    assert_string_equal(get(c, "keys"), "nightly,report.x");

    baton_conf_t *d = baton_conf_dup(c);
    assert_int_equal(baton_conf_set_keys(c, NULL, 0, err, sizeof(err)), BATON_OK);
    assert_string_equal(get(c, "keys"), "");
    assert_string_equal(get(d, "keys"), "nightly,report.x");
    set_ok(d, "group", "other");
    assert_string_equal(get(c, "group"), "");
    assert_int_equal(baton_conf_set_keys(d, keys, 0, err, sizeof(err)), BATON_OK); /* none */
    assert_string_equal(get(d, "keys"), "");
    baton_conf_destroy(c);
    baton_conf_destroy(d);
}

static int acquired(void *opaque, const baton_resource_t *r, int64_t epoch) {
    (void)opaque, (void)r, (void)epoch;
    return BATON_OK;
}
static void released(void *opaque, const baton_resource_t *r, baton_release_reason_t why) {
    (void)opaque, (void)r, (void)why;
}
static void logged(void *opaque, int level, const char *line) {
    (void)level, (void)line;
    ++*(int *)opaque;
}

static void test_new_conf_checks(void **state) {
    (void)state;
    char err[512];
    baton_membership_t *m = NULL;
    assert_int_equal(baton_membership_new_conf(NULL, &m, err, sizeof(err)), BATON_INVALID);
    baton_conf_t *c = baton_conf_new();
    assert_int_equal(baton_membership_new_conf(c, NULL, err, sizeof(err)), BATON_INVALID);
    assert_int_equal(baton_membership_new_conf(c, &m, err, sizeof(err)), BATON_INVALID);
    assert_string_equal(err, "zookeeper.connect is required");
    set_ok(c, "zookeeper.connect", "127.0.0.1:1");
    assert_int_equal(baton_membership_new_conf(c, &m, err, sizeof(err)), BATON_INVALID);
    assert_string_equal(err, "group is required");
    set_ok(c, "group", "g");
    assert_int_equal(baton_membership_new_conf(c, &m, err, sizeof(err)), BATON_INVALID);
    assert_string_equal(err, "worker.id is required");
    set_ok(c, "id", "m1");
    assert_int_equal(baton_membership_new_conf(c, &m, err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "on_acquired and on_released callbacks are required"));
    baton_conf_set_acquired_cb(c, acquired);
    baton_conf_set_released_cb(c, released);
    /* Both identities at once. */
    set_ok(c, "zookeeper.auth", "digest:a:b");
    char path[] = "/tmp/test_lib_conf.XXXXXX";
    int fd = mkstemp(path);
    assert_int_equal(write(fd, "digest:a:b\n", 11), 11);
    close(fd);
    set_ok(c, "zookeeper.auth.file", path);
    unlink(path);
    assert_int_equal(baton_membership_new_conf(c, &m, err, sizeof(err)), BATON_INVALID);
    assert_string_equal(err, "give zookeeper.auth or zookeeper.auth.file, not both");
    set_ok(c, "zookeeper.auth", NULL);
    set_ok(c, "zookeeper.auth.file", NULL);
    /* Nothing listens on port 1: a timeout, quickly, and the log callback
     * (not stderr) hears of it. */
    int lines = 0;
    set_ok(c, "connect.timeout.ms", "300");
    set_ok(c, "log.level", "debug");
    baton_conf_set_log_cb(c, logged, &lines);
    int rc = baton_membership_new_conf(c, &m, err, sizeof(err));
    assert_true(rc == BATON_TIMEOUT || rc == BATON_CONNECTION);
    assert_null(m);
    assert_true(lines > 0);
    baton_conf_destroy(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),         cmocka_unit_test(test_every_setting),
        cmocka_unit_test(test_unknown_and_null), cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_secret),           cmocka_unit_test(test_keys_setter_and_dup),
        cmocka_unit_test(test_new_conf_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
