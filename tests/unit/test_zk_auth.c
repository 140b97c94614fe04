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
    baton_zk_auth_t *a = NULL;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(baton_zk_auth_new(bad[i], NULL, "/baton", 1, NULL, &a, err, sizeof(err)),
                         BATON_INVALID);
        assert_non_null(strstr(err, "--zk-auth"));
        assert_null(strstr(err, "hunter2"));
        /* A library's configuration names its own setting. */
        assert_int_equal(
            baton_zk_auth_new(bad[i], NULL, "/baton", 1, "zookeeper.auth", &a, err, sizeof(err)),
            BATON_INVALID);
        assert_non_null(strstr(err, "zookeeper.auth:"));
        assert_null(strstr(err, "hunter2"));
    }
    assert_null(a);
    assert_int_equal(baton_zk_auth_new("digest:u:p", "/x", "/baton", 1, NULL, &a, err, sizeof(err)),
                     BATON_INVALID);
    assert_string_equal(err, "give --zk-auth or --zk-auth-file, not both");
    assert_int_equal(
        baton_zk_auth_new(NULL, "/nonexistent/auth", "/baton", 1, NULL, &a, err, sizeof(err)),
        BATON_INVALID);
    assert_non_null(strstr(err, "--zk-auth-file: cannot read '/nonexistent/auth'"));
    assert_int_equal(baton_zk_auth_new(NULL, "/nonexistent/auth", "/baton", 1, "zookeeper.auth", &a,
                                       err, sizeof(err)),
                     BATON_INVALID);
    assert_non_null(strstr(err, "zookeeper.auth.file: cannot read"));
    assert_null(a);
}

static void test_file_and_acl(void **state) {
    (void)state;
    char err[512], path[] = "/tmp/test_zk_auth.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *line = "digest:alice:s3cret\n";
    assert_int_equal(write(fd, line, strlen(line)), (int)strlen(line));
    close(fd);
    baton_zk_auth_t *a = NULL, *none = NULL;
    assert_int_equal(baton_zk_auth_new(NULL, path, "/baton", 1, NULL, &a, err, sizeof(err)),
                     BATON_OK);
    unlink(path);
    assert_string_equal(baton_zk_auth_user(a), "alice");
    const struct ACL_vector *acl = baton_zk_auth_acl(a);
    assert_int_equal(acl->count, 2);
    assert_string_equal(acl->data[0].id.scheme, "auth");
    assert_int_equal(acl->data[0].perms, ZOO_PERM_ALL);
    assert_string_equal(acl->data[1].id.scheme, "world");
    assert_string_equal(acl->data[1].id.id, "anyone");
    assert_int_equal(acl->data[1].perms, ZOO_PERM_READ);

    /* Two identities side by side (two memberships in one process), and a
     * copy that outlives its original. */
    baton_zk_auth_t *b = NULL;
    assert_int_equal(baton_zk_auth_new("digest:bob:pw", NULL, "/other", 1, "zookeeper.auth", &b,
                                       err, sizeof(err)),
                     BATON_OK);
    baton_zk_auth_t *copy = baton_zk_auth_dup(a);
    baton_zk_auth_destroy(a);
    assert_string_equal(baton_zk_auth_user(copy), "alice");
    assert_string_equal(baton_zk_auth_user(b), "bob");
    /* The copy's ACL is its own, not the destroyed original's. */
    assert_string_equal(baton_zk_auth_acl(copy)->data[0].id.scheme, "auth");
    assert_int_equal(baton_zk_auth_acl(copy)->count, 2);
    assert_ptr_not_equal(baton_zk_auth_acl(copy), baton_zk_auth_acl(b));
    baton_zk_auth_destroy(copy);
    baton_zk_auth_destroy(b);

    /* No identity: the open ACL, and no user; NULL the same. */
    assert_int_equal(baton_zk_auth_new(NULL, NULL, "/baton", 1, NULL, &none, err, sizeof(err)),
                     BATON_OK);
    assert_null(baton_zk_auth_user(none));
    assert_ptr_equal(baton_zk_auth_acl(none), &ZOO_OPEN_ACL_UNSAFE);
    assert_null(baton_zk_auth_user(NULL));
    assert_ptr_equal(baton_zk_auth_acl(NULL), &ZOO_OPEN_ACL_UNSAFE);
    assert_null(baton_zk_auth_dup(NULL));
    baton_zk_auth_destroy(none);
    baton_zk_auth_destroy(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest_id),
        cmocka_unit_test(test_spec_errors),
        cmocka_unit_test(test_file_and_acl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
