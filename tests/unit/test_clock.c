/* test_clock.c: the clock behind every timeout and lease-related duration
 * (issue 20, defect 4). CLOCK_MONOTONIC stops while the host is suspended,
 * so a worker resumed after a suspend would go on writing on stale news;
 * CLOCK_BOOTTIME counts the suspended time. */
#include "baton_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

static int64_t boottime_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_clock_is_boottime(void **state) {
    (void)state;
    assert_int_equal(BATON_CLOCK, CLOCK_BOOTTIME);
}

/* baton_now_ms reads that clock: it lies between two readings of it. */
static void test_now_follows_boottime(void **state) {
    (void)state;
    int64_t a = boottime_ms();
    int64_t now = baton_now_ms();
    int64_t b = boottime_ms();
    assert_true(now >= a && now <= b);
    int64_t au = boottime_ms() * 1000;
    int64_t nowu = baton_now_us();
    int64_t bu = (boottime_ms() + 1) * 1000;
    assert_true(nowu >= au && nowu <= bu);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock_is_boottime),
        cmocka_unit_test(test_now_follows_boottime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
