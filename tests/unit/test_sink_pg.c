/* test_sink_pg.c: the PostgreSQL sink's parts that need no server: URI
 * dispatch, the refusal of a password in the URI, and the redaction that
 * keeps passwords out of logs and messages. The protocol against a real
 * server is tests/integration/test_sink_pg_server.c (it_pg_sink). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "baton_err.h"
#include "baton_log.h"
#include "sink.h"
#include "sink_int.h"

static void redacts(const char *uri, const char *want) {
    char *got = baton_sink__pg_redact(uri);
    if (strcmp(got, want) != 0)
        fail_msg("redact '%s': got '%s', want '%s'", uri, got, want);
    free(got);
}

static void test_redact(void **state) {
    (void)state;
    /* Nothing to hide. */
    redacts("postgresql://baton@db:5432/baton", "postgresql://baton@db:5432/baton");
    redacts("postgresql://db/baton?sslmode=require", "postgresql://db/baton?sslmode=require");
    redacts("postgresql:host=db dbname=baton", "postgresql:host=db dbname=baton");
    redacts("sqlite:/var/lib/baton.db", "sqlite:/var/lib/baton.db");
    /* URL userinfo, query parameter, multi-host. */
    redacts("postgresql://u:secret@db/baton", "postgresql://u:***@db/baton");
    /* A mistyped URL, read as conninfo: its password is hidden too. */
    redacts("postgresql:/u:secret@db/baton", "postgresql:/u:***@db/baton");
    redacts("postgresql:u:secret@db host=x", "postgresql:***@db host=x");
    redacts("postgresql:/u@db/baton", "postgresql:/u@db/baton");
    redacts("postgresql:/u:s3cret@db/x?sslmode=require", "postgresql:/u:***@db/x?sslmode=require");
    redacts("postgresql:u:pw@h/db?connect_timeout=5", "postgresql:***@h/db?connect_timeout=5");
    /* An '@' before the only ':' (no userinfo password; once read past
     * the string) and no scheme at all. */
    redacts("user@host:5432/db", "user@host:5432/db");
    redacts("a@b:c", "a@b:c");
    redacts("u:p:w@h", "u:***@h");
    redacts("host=/var/run dbname=a@b user=x:y", "host=/var/run dbname=a@b user=x:y");
    redacts("postgres://u:s%40cr:et@h1:5432,h2:5433/db", "postgres://u:***@h1:5432,h2:5433/db");
    redacts("postgresql://u@db/baton?sslmode=require&password=secret&x=1",
            "postgresql://u@db/baton?sslmode=require&password=***&x=1");
    redacts("postgresql://u:a@db/b?password=c", "postgresql://u:***@db/b?password=***");
    /* key=value, quoted and spaced. */
    redacts("postgresql:host=db password=secret dbname=b",
            "postgresql:host=db password=*** dbname=b");
    redacts("postgresql:password = 'sec ret\\' x' host=db", "postgresql:password = *** host=db");
    redacts("postgresql:password=secret", "postgresql:password=***");
    /* An unknown scheme's URL still loses its password. */
    redacts("mysql://root:hunter2@db/x", "mysql://root:***@db/x");
}

static int open_err(const char *uri, char *err, size_t n) {
    baton_sink_t *s = (baton_sink_t *)0x1;
    int rc = baton_sink_open(uri, "g", &s, err, n);
    assert_null(s);
    return rc;
}

/* Refused before any connection is tried, and never echoed. */
static void test_password_refused(void **state) {
    (void)state;
    char err[512];
    const char *uris[] = {
        "postgresql://baton:hunter2@127.0.0.1:1/baton",
        "postgres://baton:hunter2@127.0.0.1:1/baton",
        "postgresql://baton@127.0.0.1:1/baton?password=hunter2",
        "postgresql:host=127.0.0.1 port=1 password=hunter2",
        "POSTGRESQL:host=127.0.0.1 password='hunter2'",
    };
    for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++) {
        assert_int_equal(open_err(uris[i], err, sizeof(err)), BATON_INVALID);
        if (!strstr(err, "password in the sink URI is refused") || strstr(err, "hunter2"))
            fail_msg("'%s': %s", uris[i], err);
        assert_non_null(strstr(err, "PGPASSFILE"));
    }
    /* A malformed URI that carries a password hides libpq's details. */
    assert_int_equal(open_err("postgresql://u:hunter2@db:notaport/x?bad%zz=1", err, sizeof(err)),
                     BATON_INVALID);
    assert_null(strstr(err, "hunter2"));
}

static void test_bad_uris(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(open_err("postgresql:", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "empty connection string"));
    assert_int_equal(open_err("postgresql:   ", err, sizeof(err)), BATON_INVALID);
    assert_int_equal(open_err("postgresql://db/x?nosuchoption=1", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "nosuchoption"));
    assert_int_equal(open_err("postgresql:host=db bogus", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "not a valid libpq URI or conninfo"));
    /* The supported list names the PostgreSQL form. */
    assert_int_equal(open_err("mysql://db/x", err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "postgresql://"));
}

/* Nothing listens on 127.0.0.1 port 1: refused at once, CONNECTION
 * (retriable), libpq's reason in the message; both scheme spellings. */
static void test_unreachable(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(open_err("postgresql://baton@127.0.0.1:1/baton", err, sizeof(err)),
                     BATON_CONNECTION);
    assert_non_null(strstr(err, "cannot reach the server"));
    assert_non_null(strstr(err, "127.0.0.1"));
    assert_int_equal(open_err("postgres:host=127.0.0.1 port=1 dbname=baton", err, sizeof(err)),
                     BATON_CONNECTION);
}

int main(void) {
    baton_log_level = BATON_LOG_ERROR;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_password_refused),
        cmocka_unit_test(test_bad_uris),
        cmocka_unit_test(test_unreachable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
