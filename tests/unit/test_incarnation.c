/* test_incarnation.c: the member lock file (baton_incarnation.h): the lock
 * is exclusive between processes and released when its holder is
 * SIGKILLed; the previous incarnation is read back; a file that is not a
 * lock file is refused (and left alone); the state directory is created,
 * taken from $STATE_DIRECTORY when unset; the descriptor is close-on-exec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton/err.h"
#include "baton_incarnation.h"

static char tmpdir[64];

static int setup(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_incarnation.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_first_then_previous(void **state) {
    (void)state;
    char dir[128], err[512];
    snprintf(dir, sizeof(dir), "%s/a/b", tmpdir); /* created, parents too */
    baton_incarnation_t inc;
    assert_int_equal(baton_incarnation_open(&inc, dir, "g", "w1", err, sizeof(err)), BATON_OK);
    assert_string_equal(inc.previous, "");
    assert_int_equal(strlen(inc.current), BATON_UUID_LEN);
    int fl = fcntl(inc.fd, F_GETFD);
    assert_true(fl >= 0 && (fl & FD_CLOEXEC));
    char first[BATON_UUID_LEN + 1];
    memcpy(first, inc.current, sizeof(first));
    assert_int_equal(baton_incarnation_commit(&inc, err, sizeof(err)), BATON_OK);
    /* A second open in the same process is another holder: refused. */
    baton_incarnation_t again;
    assert_int_equal(baton_incarnation_open(&again, dir, "g", "w1", err, sizeof(err)),
                     BATON_EXISTS);
    assert_int_equal(again.holder_pid, (long)getpid());
    assert_non_null(strstr(err, "held by a live process"));
    /* Another id is another file. */
    assert_int_equal(baton_incarnation_open(&again, dir, "g", "w2", err, sizeof(err)), BATON_OK);
    baton_incarnation_close(&again);
    baton_incarnation_close(&inc);
    baton_incarnation_close(&inc); /* twice is fine */
    assert_int_equal(baton_incarnation_open(&inc, dir, "g", "w1", err, sizeof(err)), BATON_OK);
    assert_string_equal(inc.previous, first);
    assert_string_not_equal(inc.current, first);
    baton_incarnation_close(&inc);
}

static void test_killed_holder_releases(void **state) {
    (void)state;
    char err[512];
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        baton_incarnation_t inc;
        if (baton_incarnation_open(&inc, tmpdir, "g", "w9", err, sizeof(err)) != BATON_OK ||
            baton_incarnation_commit(&inc, err, sizeof(err)) != BATON_OK)
            _exit(1);
        (void)!write(ready[1], inc.current, BATON_UUID_LEN);
        for (;;)
            pause();
    }
    close(ready[1]);
    char child_inc[BATON_UUID_LEN + 1] = "";
    assert_int_equal(read(ready[0], child_inc, BATON_UUID_LEN), BATON_UUID_LEN);
    close(ready[0]);
    baton_incarnation_t inc;
    assert_int_equal(baton_incarnation_open(&inc, tmpdir, "g", "w9", err, sizeof(err)),
                     BATON_EXISTS);
    assert_int_equal(inc.holder_pid, (long)child);
    char pidtext[32];
    snprintf(pidtext, sizeof(pidtext), "pid %ld", (long)child);
    assert_non_null(strstr(err, pidtext));
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    /* The kernel released the lock: we get it, and the dead one's id. */
    assert_int_equal(baton_incarnation_open(&inc, tmpdir, "g", "w9", err, sizeof(err)), BATON_OK);
    assert_string_equal(inc.previous, child_inc);
    baton_incarnation_close(&inc);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_corrupt_refused(void **state) {
    (void)state;
    char path[256], err[512];
    snprintf(path, sizeof(path), "%s/g.bad.lock", tmpdir);
    const char *bad[] = {
        "hello\n",
        "incarnation=not-a-uuid-not-a-uuid-not-a-uuid-x\npid=1\n",
        "incarnation=0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f\n",        /* no pid */
        "pid=12\n",                                                  /* no incarnation */
        "incarnation=0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f\npid=x\n", /* bad pid */
        "incarnation=0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f\npid=12",  /* unfinished */
        "incarnation=0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f\npid=12\nearlier=x\n",
        "incarnation=0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f\npid=12\n"
        "earlier=0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f,\n", /* an empty id */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        write_file(path, bad[i]);
        baton_incarnation_t inc;
        assert_int_equal(baton_incarnation_open(&inc, tmpdir, "g", "bad", err, sizeof(err)),
                         BATON_CORRUPT);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, "remove it"));
        assert_int_equal(inc.fd, -1);
        /* left as it was */
        char back[256] = "";
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        size_t got = fread(back, 1, sizeof(back) - 1, f);
        fclose(f);
        back[got] = 0;
        assert_string_equal(back, bad[i]);
    }
    write_file(path, "# a comment\nincarnation=0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f\npid=12\n"
                     "host=h1\n");
    baton_incarnation_t inc;
    assert_int_equal(baton_incarnation_open(&inc, tmpdir, "g", "bad", err, sizeof(err)), BATON_OK);
    assert_string_equal(inc.previous, "0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f");
    baton_incarnation_close(&inc);

    /* The size limit: a file of 4,095 bytes (a comment padding it out) is
     * read whole; one byte more is refused as too long, and left as it
     * was. A file of exactly 4,095 bytes was once refused too. */
    static const char body[] = "incarnation=0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f\npid=12\n";
    char big[4097];
    for (size_t total = 4095; total <= 4096; total++) {
        size_t pad = total - strlen(body);
        big[0] = '#';
        memset(big + 1, 'x', pad - 2);
        big[pad - 1] = '\n';
        memcpy(big + pad, body, sizeof(body));
        assert_int_equal(strlen(big), total);
        write_file(path, big);
        int rc = baton_incarnation_open(&inc, tmpdir, "g", "bad", err, sizeof(err));
        if (total == 4095) {
            assert_int_equal(rc, BATON_OK);
            assert_string_equal(inc.previous, "0f8e2d5c-1b7a-4c3e-9d2f-6a5b4c3d2e1f");
            baton_incarnation_close(&inc);
        } else {
            assert_int_equal(rc, BATON_CORRUPT);
            assert_non_null(strstr(err, "too long"));
            assert_int_equal(inc.fd, -1);
        }
    }
}

/* Incarnations killed between recording themselves and creating their
 * member node: the file keeps their predecessors (earlier=), newest first,
 * so the node of the last one that registered is still recognised; a
 * registration clears the list. */
static void test_earlier_until_registered(void **state) {
    (void)state;
    char err[512], registered[BATON_UUID_LEN + 1];
    baton_incarnation_t inc;
    assert_int_equal(baton_incarnation_open(&inc, tmpdir, "g", "we", err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_incarnation_commit(&inc, err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_incarnation_confirm(&inc, err, sizeof(err)), BATON_OK);
    memcpy(registered, inc.current, sizeof(registered));
    baton_incarnation_close(&inc);
    char died[BATON_INC_EARLIER_MAX + 2][BATON_UUID_LEN + 1];
    for (int i = 0; i < BATON_INC_EARLIER_MAX + 2; i++) {
        /* Each one records itself and dies before registering. */
        assert_int_equal(baton_incarnation_open(&inc, tmpdir, "g", "we", err, sizeof(err)),
                         BATON_OK);
        assert_int_equal(baton_incarnation_known(&inc, registered), i <= BATON_INC_EARLIER_MAX);
        for (int j = 0; j < i; j++) /* the newest ones are kept */
            assert_int_equal(baton_incarnation_known(&inc, died[j]),
                             i - j <= BATON_INC_EARLIER_MAX + 1);
        assert_int_equal(baton_incarnation_commit(&inc, err, sizeof(err)), BATON_OK);
        memcpy(died[i], inc.current, sizeof(died[i]));
        baton_incarnation_close(&inc);
    }
    assert_int_equal(baton_incarnation_open(&inc, tmpdir, "g", "we", err, sizeof(err)), BATON_OK);
    assert_int_equal(inc.nearlier, BATON_INC_EARLIER_MAX);
    assert_int_equal(baton_incarnation_commit(&inc, err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_incarnation_confirm(&inc, err, sizeof(err)), BATON_OK);
    assert_false(baton_incarnation_known(&inc, died[BATON_INC_EARLIER_MAX + 1]));
    char mine[BATON_UUID_LEN + 1];
    memcpy(mine, inc.current, sizeof(mine));
    baton_incarnation_close(&inc);
    assert_int_equal(baton_incarnation_open(&inc, tmpdir, "g", "we", err, sizeof(err)), BATON_OK);
    assert_string_equal(inc.previous, mine);
    assert_int_equal(inc.nearlier, 0);
    assert_false(baton_incarnation_known(&inc, died[BATON_INC_EARLIER_MAX + 1]));
    assert_false(baton_incarnation_known(&inc, NULL));
    baton_incarnation_close(&inc);
}

static void test_state_dir(void **state) {
    (void)state;
    char err[512], file[256];
    char d[256];
    unsetenv("BATON_STATE_DIR");
    assert_int_equal(baton_incarnation_dir("/x", d, sizeof(d)), 1);
    assert_string_equal(d, "/x");
    setenv("STATE_DIRECTORY", "/var/lib/one:/var/lib/two", 1);
    assert_int_equal(baton_incarnation_dir(NULL, d, sizeof(d)), 1);
    assert_string_equal(d, "/var/lib/one");
    setenv("BATON_STATE_DIR", "/srv/baton", 1); /* ours first */
    assert_int_equal(baton_incarnation_dir("", d, sizeof(d)), 1);
    assert_string_equal(d, "/srv/baton");
    unsetenv("BATON_STATE_DIR");
    unsetenv("STATE_DIRECTORY");
    assert_int_equal(baton_incarnation_dir(NULL, d, sizeof(d)), 0);
    assert_string_equal(d, BATON_STATE_DIR_DEFAULT);
    /* A file where the directory should be: a clear error. */
    snprintf(file, sizeof(file), "%s/plain", tmpdir);
    write_file(file, "x");
    baton_incarnation_t inc;
    assert_int_equal(baton_incarnation_open(&inc, file, "g", "w1", err, sizeof(err)), BATON_IO);
    assert_non_null(strstr(err, "state directory"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_then_previous), cmocka_unit_test(test_killed_holder_releases),
        cmocka_unit_test(test_corrupt_refused),     cmocka_unit_test(test_earlier_until_registered),
        cmocka_unit_test(test_state_dir),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
