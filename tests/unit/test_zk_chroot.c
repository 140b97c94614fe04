/* test_zk_chroot.c: --zk-chroot (baton_conf_zk_chroot in common/baton_conf.h):
 * the chroot appended to a connect string, a suffix already there, and the
 * errors' wording for paths that are no chroot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "baton_conf.h"
#include "baton_err.h"

#include <stdlib.h>
#include <string.h>

/* Returns the result code; *out (heap or NULL) and err as the call left them. */
static int chroot_of(const char *hosts, const char *chroot, char **out, char *err) {
    err[0] = 0;
    return baton_conf_zk_chroot(hosts, chroot, out, err, 256);
}

static void test_chroot_appended(void **state) {
    (void)state;
    char *out, err[256];
    assert_int_equal(chroot_of("zk1:2181,zk2:2181", "/tenant-a", &out, err), BATON_OK);
    assert_string_equal(out, "zk1:2181,zk2:2181/tenant-a");
    free(out);
    assert_int_equal(chroot_of("127.0.0.1:2181", "/a/b", &out, err), BATON_OK);
    assert_string_equal(out, "127.0.0.1:2181/a/b");
    free(out);
    /* No chroot: the connect string unchanged, suffix or not. */
    assert_int_equal(chroot_of("zk1:2181/x", NULL, &out, err), BATON_OK);
    assert_string_equal(out, "zk1:2181/x");
    free(out);
}

static void test_chroot_suffix(void **state) {
    (void)state;
    char *out, err[256];
    /* The same chroot twice is one chroot. */
    assert_int_equal(chroot_of("zk1:2181,zk2:2181/tenant-a", "/tenant-a", &out, err), BATON_OK);
    assert_string_equal(out, "zk1:2181,zk2:2181/tenant-a");
    free(out);
    /* Another one is an error naming both. */
    assert_int_equal(chroot_of("zk1:2181/tenant-a", "/tenant-b", &out, err), BATON_INVALID);
    assert_null(out);
    assert_non_null(strstr(err, "'/tenant-b' differs from the chroot '/tenant-a'"));
    /* So is a prefix of it: the client would not read it as the same. */
    assert_int_equal(chroot_of("zk1:2181/tenant-a/x", "/tenant-a", &out, err), BATON_INVALID);
    /* A suffix before the last host would swallow the hosts after it. */
    assert_int_equal(chroot_of("zk1:2181/a,zk2:2181", "/a", &out, err), BATON_INVALID);
    assert_non_null(strstr(err, "must follow the last host"));
}

static void test_chroot_bad_paths(void **state) {
    (void)state;
    static const struct {
        const char *chroot, *why;
    } bad[] = {
        {"tenant-a", "is not an absolute path"},
        {"/", "is the root itself"},
        {"/a/", "empty path component"},
        {"/a//b", "empty path component"},
        {"/a/./b", "'.' or '..' component"},
        {"/a/..", "'.' or '..' component"},
        {"/zookeeper", "ZooKeeper's own"},
        {"/zookeeper/quota", "ZooKeeper's own"},
        {"/a,b", "comma"},
        {"/a\nb", "control character"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *out = (char *)"untouched", err[256];
        assert_int_equal(chroot_of("zk1:2181", bad[i].chroot, &out, err), BATON_INVALID);
        assert_null(out);
        assert_true(strncmp(err, "--zk-chroot: '", 14) == 0);
        if (!strstr(err, bad[i].why))
            fail_msg("'%s': got \"%s\", want \"%s\"", bad[i].chroot, err, bad[i].why);
    }
    /* Names that merely look odd are fine. */
    char *out, err[256];
    assert_int_equal(chroot_of("zk1:2181", "/a.b/..c/zookeeper-x", &out, err), BATON_OK);
    assert_string_equal(out, "zk1:2181/a.b/..c/zookeeper-x");
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chroot_appended),
        cmocka_unit_test(test_chroot_suffix),
        cmocka_unit_test(test_chroot_bad_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
