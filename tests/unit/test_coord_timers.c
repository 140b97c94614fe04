/* test_coord_timers.c: the coordinator loop's deadline set
 * (coordinator/coord_timers.h): add, arm and re-arm, arm once, the
 * earliest deadline per group, the due timers in firing order (deadline,
 * then arming order), the wait, and bad ids and a full set refused. */
#include "coord_timers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

enum { G_ALL = 1, G_LEADER = 2 };

static void test_add_and_arm(void **state) {
    (void)state;
    coord_timers_t ts;
    coord_timers_init(&ts);
    int a = coord_timers_add(&ts, "a", G_ALL), b = coord_timers_add(&ts, "b", G_LEADER);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_int_equal(coord_timers_earliest(&ts, G_ALL | G_LEADER), 0); /* none armed */
    coord_timers_arm(&ts, a, 500);
    coord_timers_arm(&ts, b, 300);
    assert_int_equal(coord_timers_due_ms(&ts, a), 500);
    assert_int_equal(coord_timers_earliest(&ts, G_ALL | G_LEADER), 300);
    assert_int_equal(coord_timers_earliest(&ts, G_ALL), 500); /* b left out */
    /* Re-arming replaces, later or sooner. */
    coord_timers_arm(&ts, b, 900);
    assert_int_equal(coord_timers_earliest(&ts, G_ALL | G_LEADER), 500);
    coord_timers_arm(&ts, a, 100);
    assert_int_equal(coord_timers_earliest(&ts, G_ALL | G_LEADER), 100);
    /* Arm once keeps an armed deadline, arms a disarmed one. */
    coord_timers_arm_once(&ts, a, 50);
    assert_int_equal(coord_timers_due_ms(&ts, a), 100);
    coord_timers_disarm(&ts, a);
    assert_int_equal(coord_timers_due_ms(&ts, a), 0);
    assert_false(coord_timers_is_due(&ts, a, 1000000));
    coord_timers_arm_once(&ts, a, 50);
    assert_int_equal(coord_timers_due_ms(&ts, a), 50);
    assert_false(coord_timers_is_due(&ts, a, 49));
    assert_true(coord_timers_is_due(&ts, a, 50));
    coord_timers_arm(&ts, a, -5); /* not a deadline: disarmed */
    assert_int_equal(coord_timers_due_ms(&ts, a), 0);
}

static void test_due_in_order(void **state) {
    (void)state;
    coord_timers_t ts;
    coord_timers_init(&ts);
    int t[5];
    for (int i = 0; i < 5; i++)
        t[i] = coord_timers_add(&ts, "t", i == 4 ? G_LEADER : G_ALL);
    coord_timers_arm(&ts, t[0], 400);
    coord_timers_arm(&ts, t[1], 200);
    coord_timers_arm(&ts, t[3], 200); /* same deadline, armed after t[1] */
    coord_timers_arm(&ts, t[2], 900); /* not due yet */
    coord_timers_arm(&ts, t[4], 100); /* due, but in a group left out */
    int ids[COORD_TIMERS_MAX];
    int n = coord_timers_due(&ts, 500, G_ALL, ids);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], t[1]);
    assert_int_equal(ids[1], t[3]);
    assert_int_equal(ids[2], t[0]);
    /* Re-arming t[1] at the same deadline puts it after t[3]. */
    coord_timers_arm(&ts, t[1], 200);
    n = coord_timers_due(&ts, 500, G_ALL | G_LEADER, ids);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], t[4]);
    assert_int_equal(ids[1], t[3]);
    assert_int_equal(ids[2], t[1]);
    assert_int_equal(ids[3], t[0]);
    /* A deadline stays due until its owner moves it. */
    assert_int_equal(coord_timers_due(&ts, 600, G_ALL, ids), 3);
    coord_timers_disarm(&ts, t[1]);
    coord_timers_arm(&ts, t[3], 1500);
    assert_int_equal(coord_timers_due(&ts, 600, G_ALL, ids), 1);
    assert_int_equal(ids[0], t[0]);
    assert_int_equal(coord_timers_due(&ts, 99, G_ALL | G_LEADER, ids), 0);
}

static void test_wait(void **state) {
    (void)state;
    coord_timers_t ts;
    coord_timers_init(&ts);
    int a = coord_timers_add(&ts, "a", G_ALL), b = coord_timers_add(&ts, "b", G_LEADER);
    assert_int_equal(coord_timers_wait_ms(&ts, G_ALL, 1000, 1000), 1000); /* nothing armed */
    coord_timers_arm(&ts, a, 1300);
    assert_int_equal(coord_timers_wait_ms(&ts, G_ALL, 1000, 1000), 300);
    assert_int_equal(coord_timers_wait_ms(&ts, G_ALL, 1000, 200), 200); /* at most max */
    coord_timers_arm(&ts, b, 900);
    assert_int_equal(coord_timers_wait_ms(&ts, G_ALL | G_LEADER, 1000, 1000), 0); /* past */
    assert_int_equal(coord_timers_wait_ms(&ts, G_ALL, 1000, 1000), 300);
    assert_int_equal(coord_timers_wait_ms(&ts, G_ALL, 1000, 0), 0);
}

static void test_bad_ids_and_full(void **state) {
    (void)state;
    coord_timers_t ts;
    coord_timers_init(&ts);
    for (int i = 0; i < COORD_TIMERS_MAX; i++)
        assert_int_equal(coord_timers_add(&ts, "t", G_ALL), i);
    assert_int_equal(coord_timers_add(&ts, "one too many", G_ALL), -1);
    coord_timers_arm(&ts, -1, 10); /* ignored, no crash */
    coord_timers_arm(&ts, COORD_TIMERS_MAX, 10);
    coord_timers_arm_once(&ts, 99, 10);
    assert_int_equal(coord_timers_due_ms(&ts, -1), 0);
    assert_int_equal(coord_timers_due_ms(&ts, COORD_TIMERS_MAX), 0);
    assert_int_equal(coord_timers_earliest(&ts, G_ALL), 0);
    int ids[COORD_TIMERS_MAX];
    for (int i = 0; i < COORD_TIMERS_MAX; i++)
        coord_timers_arm(&ts, i, 100 - i);
    assert_int_equal(coord_timers_due(&ts, 100, G_ALL, ids), COORD_TIMERS_MAX);
    for (int i = 0; i < COORD_TIMERS_MAX; i++)
        assert_int_equal(ids[i], COORD_TIMERS_MAX - 1 - i);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_and_arm),
        cmocka_unit_test(test_due_in_order),
        cmocka_unit_test(test_wait),
        cmocka_unit_test(test_bad_ids_and_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
