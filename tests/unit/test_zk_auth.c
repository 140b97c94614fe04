/* test_zk_auth.c: the --zk-auth identity without a server: ZooKeeper's
 * digest id (SHA-1 and base64, one and two padding blocks), the spec and
 * file parsing with errors that never echo the password, and the ACL a
 * create gets with and without an identity. The server side (the ACL
 * enforced, a wrong password refused) is tests/integration/it_zk_auth.sh. */
#include "baton_err.h"
#include "baton_zk_auth.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void test_digest_id(void **state) {
    (void)state;
    char out[256], pw[200];
    /* Expected values: base64(sha1(s)) computed independently. */
    baton_zk__digest_id("abc", out, sizeof(out));
    assert_string_equal(out, "abc:qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
    baton_zk__digest_id("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", out,
                        sizeof(out));
    assert_string_equal(out, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq:"
                             "hJg+RBw70m66rkqh+VEp5eVGcPE=");
    baton_zk__digest_id("u:p", out, sizeof(out));
    assert_string_equal(out, "u:Jq7wMyA/w2Vd5WIDAKdu4OIIFEQ=");
    memset(pw, 'x', 100);
    pw[100] = '\0';
    char up[300];
    snprintf(up, sizeof(up), "baton:%s", pw);
    baton_zk__digest_id(up, out, sizeof(out));
    assert_string_equal(out, "baton:nQfjjyYowIQU7ljlOxH45kLtTMQ=");
}

static void test_spec_errors(void **state) {
    (void)state;
    char err[512];
    const char *bad[] = {"sasl:u:hunter2", "digest:hunter2", "digest::hunter2",
                         "digest:u:", "hunter2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(baton_zk_auth_init(bad[i], NULL, "/baton", 1, err, sizeof(err)),
                         BATON_INVALID);
        assert_non_null(strstr(err, "--zk-auth"));
        assert_null(strstr(err, "hunter2"));
    }
    assert_int_equal(baton_zk_auth_init("digest:u:p", "/x", "/baton", 1, err, sizeof(err)),
                     BATON_INVALID);
    assert_int_equal(baton_zk_auth_init(NULL, "/nonexistent/auth", "/baton", 1, err, sizeof(err)),
                     BATON_INVALID);
    assert_non_null(strstr(err, "/nonexistent/auth"));
}

static void test_file_and_acl(void **state) {
    (void)state;
    char err[512], path[] = "/tmp/test_zk_auth.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *line = "digest:alice:s3cret\n";
    assert_int_equal(write(fd, line, strlen(line)), (int)strlen(line));
    close(fd);
    assert_int_equal(baton_zk_auth_init(NULL, path, "/baton", 1, err, sizeof(err)), BATON_OK);
    unlink(path);
    assert_string_equal(baton_zk_auth_user(), "alice");
    const struct ACL_vector *acl = baton_zk_acl();
    assert_int_equal(acl->count, 2);
    assert_string_equal(acl->data[0].id.scheme, "auth");
    assert_int_equal(acl->data[0].perms, ZOO_PERM_ALL);
    assert_string_equal(acl->data[1].id.scheme, "world");
    assert_string_equal(acl->data[1].id.id, "anyone");
    assert_int_equal(acl->data[1].perms, ZOO_PERM_READ);

    /* No identity: the open ACL, and no user. */
    assert_int_equal(baton_zk_auth_init(NULL, NULL, "/baton", 1, err, sizeof(err)), BATON_OK);
    assert_null(baton_zk_auth_user());
    assert_ptr_equal(baton_zk_acl(), &ZOO_OPEN_ACL_UNSAFE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest_id),
        cmocka_unit_test(test_spec_errors),
        cmocka_unit_test(test_file_and_acl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
