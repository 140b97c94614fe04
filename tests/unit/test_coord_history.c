/* test_coord_history.c: the coordinator's history entries
 * (coordinator/coord_history.h) before they reach the ring: a holder that
 * is not a worker id (a corrupt claim's, logged as "?" by the handoff
 * watchdog's forced revoke) is recorded as none, so the ring still
 * decodes; before, one such entry made `batonctl history` fail and the
 * next flush start the ring again from empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "baton_codec.h"
#include "baton_err.h"
#include "coord_history.h"

#include <stdlib.h>
#include <string.h>

static void test_not_an_id_is_none(void **state) {
    (void)state;
    coord_history_t *h = coord_history_new();
    coord_history_prev_worker(h, "w1");
    coord_history_add(h, 3, NULL, "?", "w1", 5, "forced");
    coord_history_add(h, 4, NULL, "w1", "bad id", 5, "rebalance");
    coord_history_add(h, 5, NULL, "-", "w1", 5, "new");
    size_t n = 0;
    const baton_history_entry_t *e = coord_history_pending(h, &n);
    assert_int_equal(n, 3);
    assert_string_equal(e[0].from, "");
    assert_string_equal(e[0].to, "w1");
    assert_string_equal(e[1].from, "w1");
    assert_string_equal(e[1].to, "");
    assert_string_equal(e[2].from, "");
    char *enc = baton_history_encode(e, n);
    baton_history_t out;
    char err[256] = "";
    assert_int_equal(baton_history_decode(enc, strlen(enc), &out, err, sizeof(err)), BATON_OK);
    assert_int_equal(out.n, 3);
    assert_string_equal(out.entries[0].reason, "forced");
    baton_history_release(&out);
    free(enc);
    coord_history_destroy(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_an_id_is_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
