/* test_failpoint.c: unit tests for BATON_FAILPOINTS (baton_failpoint.h):
 * spec parsing and rejection, and that each action fires exactly once on hit
 * SKIP+1. Actions that end or stop the process run in a fork()ed child. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_util.h"

/* Every test starts and ends disarmed, so each can run alone. */
static int disarm(void **state) {
    (void)state;
    char err[256] = "";
    assert_int_equal(baton_failpoints_parse("", err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_failpoints_armed, 0);
    unsetenv("BATON_FAILPOINTS");
    return 0;
}

static void test_parse_valid(void **state) {
    (void)state;
    const char *specs[] = {"a=stop",
                           "a=3:abort;b=sleep-10",
                           "x=exit",
                           "y=0:exit",
                           "z=sleep-0",
                           ";a=abort;;b=stop;",
                           "long.name_1-x=1000000000:stop",
                           "n23456789012345678901234567890123456789012345678901234567890123=stop"};
    assert_int_equal(strlen(specs[BATON_ARRAY_SIZE(specs) - 1]), 63 + strlen("=stop"));
    for (size_t i = 0; i < BATON_ARRAY_SIZE(specs); i++) {
        char err[256] = "";
        disarm(NULL);
        if (baton_failpoints_parse(specs[i], err, sizeof(err)) != BATON_OK)
            fail_msg("'%s' rejected: %s", specs[i], err);
        assert_int_equal(baton_failpoints_armed, 1);
    }
}

/* 32 points fit; the 33rd is refused. */
static void test_parse_limit(void **state) {
    (void)state;
    char spec[33 * 16] = "";
    for (int i = 0; i < 32; i++)
        snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "p%d=stop;", i);
    char err[256] = "";
    assert_int_equal(baton_failpoints_parse(spec, err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_failpoints_armed, 1);
    strcat(spec, "p32=stop");
    assert_int_equal(baton_failpoints_parse(spec, err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "too many"));
    assert_non_null(strstr(err, "32"));
}

static void test_parse_invalid(void **state) {
    (void)state;
    /* Each bad entry, alone and after a good one: the message quotes it. */
    const char *bad[] = {
        "a",
        "=stop",
        "a=bogus",
        "a=x:stop",
        "a=sleep-",
        "a=sleep-abc",
        "a=",
        "a=:stop",
        "a=3:",
        "a=-1:stop",
        "a=sleep--5",
        "a=sleep-1x",
        "a=STOP",
        "a=stop:3",
        "a=1:2:stop",
        "a=sleep-86400001",
        "a=1000000001:stop",
        /* A 64-byte name; 63 is the longest that fits. */
        "n234567890123456789012345678901234567890123456789012345678901234=stop",
    };
    assert_int_equal(strlen(bad[BATON_ARRAY_SIZE(bad) - 1]), 64 + strlen("=stop"));
    for (size_t i = 0; i < BATON_ARRAY_SIZE(bad); i++) {
        for (int after_good = 0; after_good <= 1; after_good++) {
            char *spec = after_good ? xasprintf("good=exit;%s", bad[i]) : xstrdup(bad[i]);
            char *quoted = xasprintf("'%s'", bad[i]);
            char err[512] = "";
            int rc = baton_failpoints_parse(spec, err, sizeof(err));
            if (rc != BATON_INVALID)
                fail_msg("'%s' accepted (rc %d)", spec, rc);
            if (!strstr(err, quoted))
                fail_msg("'%s': message '%s' does not name the entry", spec, err);
            assert_int_equal(baton_failpoints_armed, 0);
            free(quoted);
            free(spec);
        }
    }
}

/* A rejected spec leaves the earlier one armed, counters and all. */
static void test_parse_invalid_keeps_previous(void **state) {
    (void)state;
    char err[256] = "";
    assert_int_equal(baton_failpoints_parse("keep=sleep-0", err, sizeof(err)), BATON_OK);
    baton_failpoint_hit("keep");
    assert_int_equal(baton_failpoints_parse("keep=exit;x=bogus", err, sizeof(err)), BATON_INVALID);
    assert_int_equal(baton_failpoints_armed, 1);
    baton_failpoint_hit("keep"); /* would _exit(99) had the bad spec replaced it */
    assert_int_equal(baton_failpoint_hits("keep"), 2);
    /* A good spec replaces it and resets the counters. */
    assert_int_equal(baton_failpoints_parse("keep=sleep-0", err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_failpoint_hits("keep"), 0);
}

static void test_unarmed(void **state) {
    (void)state;
    assert_int_equal(baton_failpoints_armed, 0);
    /* The macro does nothing while unarmed; hits are not even counted. */
    BATON_FAILPOINT("x");
    BATON_FAILPOINT("x");
    assert_int_equal(baton_failpoint_hits("x"), 0);

    char err[256] = "";
    assert_int_equal(baton_failpoints_parse("x=sleep-0", err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_failpoints_armed, 1);
    BATON_FAILPOINT("x");
    BATON_FAILPOINT("y"); /* not armed: ignored */
    assert_int_equal(baton_failpoint_hits("x"), 1);
    assert_int_equal(baton_failpoint_hits("y"), 0);

    /* Only empty entries: unarmed again. */
    assert_int_equal(baton_failpoints_parse(";;", err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_failpoints_armed, 0);
    assert_int_equal(baton_failpoint_hits("x"), 0);
}

/* sleep-MS fires exactly once, on hit SKIP+1. */
static void test_sleep_fires_once(void **state) {
    (void)state;
    const int64_t ms = 200;
    const int skip = 2;
    char err[256] = "";
    assert_int_equal(baton_failpoints_parse("other=sleep-5000;s=2:sleep-200", err, sizeof(err)),
                     BATON_OK);
    for (int hit = 1; hit <= 6; hit++) {
        int64_t t0 = baton_now_ms();
        BATON_FAILPOINT("s");
        int64_t took = baton_now_ms() - t0;
        if (hit == skip + 1) {
            if (took < ms)
                fail_msg("hit %d took %lld ms, want >= %lld", hit, (long long)took, (long long)ms);
        } else if (took >= ms / 2) {
            fail_msg("hit %d took %lld ms, want no sleep", hit, (long long)took);
        }
        assert_int_equal(baton_failpoint_hits("s"), hit);
    }
    assert_int_equal(baton_failpoint_hits("other"), 0);
}

/* Runs body in a child with stdout/stderr quiet and no core dump. The child
 * writes one byte to the pipe before each hit so the parent knows which hit
 * fired. Returns the wait status; *before is how many hits were announced. */
static int run_child(const char *spec, const char *name, int nhits, int want_hits, int *before) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        signal(SIGABRT, SIG_DFL);
        char err[256];
        if (baton_failpoints_parse(spec, err, sizeof(err)) != BATON_OK)
            _exit(10);
        for (int i = 0; i < nhits; i++) {
            char c = 'h';
            if (write(fds[1], &c, 1) != 1)
                _exit(11);
            BATON_FAILPOINT(name);
        }
        _exit(baton_failpoint_hits(name) == want_hits ? 0 : 12);
    }
    close(fds[1]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        assert_int_equal(errno, EINTR);
    char buf[64];
    ssize_t n;
    *before = 0;
    while ((n = read(fds[0], buf, sizeof(buf))) > 0)
        *before += (int)n;
    close(fds[0]);
    return status;
}

static void test_exit_fires_on_hit(void **state) {
    (void)state;
    int before = 0;
    int st = run_child("x=2:exit", "x", 5, 5, &before);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 99);
    assert_int_equal(before, 3); /* died on the third hit, not earlier or later */

    st = run_child("x=exit", "x", 5, 5, &before);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 99);
    assert_int_equal(before, 1);

    /* Fewer hits than SKIP+1: never fires. */
    st = run_child("x=5:exit", "x", 5, 5, &before);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(before, 5);
}

static void test_abort_fires_on_hit(void **state) {
    (void)state;
    int before = 0;
    int st = run_child("y=exit;a=1:abort", "a", 4, 4, &before);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGABRT);
    assert_int_equal(before, 2);

    /* Another point's action is not this one's. */
    st = run_child("y=exit;a=1:abort", "b", 4, 0, &before);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(before, 4);
}

/* stop: the child stops itself on the hit, resumes on SIGCONT, and does not
 * stop again on the next hit. */
static void test_stop_and_continue(void **state) {
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[256];
        if (baton_failpoints_parse("p=stop", err, sizeof(err)) != BATON_OK)
            _exit(10);
        BATON_FAILPOINT("p");
        BATON_FAILPOINT("p");
        _exit(baton_failpoint_hits("p") == 2 ? 0 : 12);
    }
    int st = 0;
    while (waitpid(pid, &st, WUNTRACED) < 0)
        assert_int_equal(errno, EINTR);
    if (!WIFSTOPPED(st)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("child did not stop (status 0x%x)", st);
    }
    assert_int_equal(WSTOPSIG(st), SIGSTOP);
    assert_int_equal(kill(pid, SIGCONT), 0);
    while (waitpid(pid, &st, WUNTRACED) < 0)
        assert_int_equal(errno, EINTR);
    if (WIFSTOPPED(st)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("child stopped a second time");
    }
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_init_from_env(void **state) {
    (void)state;
    char err[256] = "";
    /* Unset or empty: nothing armed. */
    assert_int_equal(baton_failpoints_init(err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_failpoints_armed, 0);
    setenv("BATON_FAILPOINTS", "", 1);
    assert_int_equal(baton_failpoints_init(err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_failpoints_armed, 0);

    setenv("BATON_FAILPOINTS", "e=1:sleep-0;f=stop", 1);
    assert_int_equal(baton_failpoints_init(err, sizeof(err)), BATON_OK);
    assert_int_equal(baton_failpoints_armed, 1);
    BATON_FAILPOINT("e");
    assert_int_equal(baton_failpoint_hits("e"), 1);

    setenv("BATON_FAILPOINTS", "e=exit;g=nope", 1);
    assert_int_equal(baton_failpoints_init(err, sizeof(err)), BATON_INVALID);
    assert_non_null(strstr(err, "'g=nope'"));
    unsetenv("BATON_FAILPOINTS");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parse_valid, disarm, disarm),
        cmocka_unit_test_setup_teardown(test_parse_limit, disarm, disarm),
        cmocka_unit_test_setup_teardown(test_parse_invalid, disarm, disarm),
        cmocka_unit_test_setup_teardown(test_parse_invalid_keeps_previous, disarm, disarm),
        cmocka_unit_test_setup_teardown(test_unarmed, disarm, disarm),
        cmocka_unit_test_setup_teardown(test_sleep_fires_once, disarm, disarm),
        cmocka_unit_test_setup_teardown(test_exit_fires_on_hit, disarm, disarm),
        cmocka_unit_test_setup_teardown(test_abort_fires_on_hit, disarm, disarm),
        cmocka_unit_test_setup_teardown(test_stop_and_continue, disarm, disarm),
        cmocka_unit_test_setup_teardown(test_init_from_env, disarm, disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
