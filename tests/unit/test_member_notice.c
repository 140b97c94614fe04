/* test_member_notice.c: an owner's side of the release notices
 * (worker/member_notice.c): what its subscribers say they hold (SUB, HLD,
 * HLD+, UNS), as baton_membership__notice_covers answers it per resource,
 * and the rows kept moving with their keys when the partitions grow
 * (mb_grow_parts).
 *
 * The membership here has no ZooKeeper session (m->zk NULL: no watches are
 * set); its notice socket is real, bound on loopback, and the datagrams
 * are sent to it from another socket and read by mb_notice_drain, as
 * baton_membership_poll reads them. */
#include "member_int.h"

#include "baton_metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define BASE "/baton/g"
#define NPARTS 4

typedef struct {
    baton_membership_t m;
    int out; /* the standbys' socket */
    struct sockaddr_in to;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->m.base = strdup(BASE);
    f->m.conf.id = "owner";
    baton_res_table_init(&f->m.res, f->m.base, NPARTS);
    mb_key_row(&f->m, "nightly"); /* row NPARTS */
    mb_key_row(&f->m, "hourly");  /* row NPARTS + 1 */
    char err[256] = "";
    assert_int_equal(mb_notice_open(&f->m, "127.0.0.1:0", err, sizeof(err)), BATON_OK);
    /* The bound address, "127.0.0.1:PORT". */
    const char *colon = strrchr(f->m.notice.addr, ':');
    assert_non_null(colon);
    f->to.sin_family = AF_INET;
    f->to.sin_port = htons((uint16_t)atoi(colon + 1));
    f->to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->out = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(f->out >= 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    mb_notice_close(&f->m);
    baton_res_table_free(&f->m.res);
    free(f->m.st);
    free(f->m.base);
    close(f->out);
    free(f);
    return 0;
}

/* Sends len bytes of buf as one datagram, waits until it is there to read
 * (loopback usually delivers before sendto returns, but need not: a busy
 * ksoftirqd delivers later), and reads every datagram waiting, as a poll
 * does. */
static void send_raw(fixture_t *f, const char *buf, size_t len) {
    assert_int_equal(sendto(f->out, buf, len, 0, (struct sockaddr *)&f->to, sizeof(f->to)),
                     (ssize_t)len);
    struct pollfd pfd = {.fd = f->m.notice.fd, .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, 5000), 1);
    mb_notice_drain(&f->m);
}

/* Sends one datagram: the header for kind from standby id in group base,
 * then each item of the NULL-terminated list on its own line. */
static void send_from(fixture_t *f, const char *base, const char *kind, const char *id, ...) {
    char buf[4096];
    int len = snprintf(buf, sizeof(buf), "BATON-NOTICE 1\n%s\n%s\n%s\n", kind, base, id);
    va_list ap;
    va_start(ap, id);
    for (const char *item; (item = va_arg(ap, const char *)) != NULL;)
        len += snprintf(buf + len, sizeof(buf) - (size_t)len, "%s\n", item);
    va_end(ap);
    send_raw(f, buf, (size_t)len);
}
#define SEND(f, kind, id, ...) send_from(f, BASE, kind, id, ##__VA_ARGS__, (const char *)NULL)

static int covers_part(fixture_t *f, int32_t p) {
    baton_resource_t r = {.kind = BATON_RESOURCE_PARTITION, .partition = p, .key = NULL};
    return baton_membership__notice_covers(&f->m, &r);
}
static int covers_key(fixture_t *f, const char *key) {
    baton_resource_t r = {.kind = BATON_RESOURCE_KEY, .partition = -1, .key = key};
    return baton_membership__notice_covers(&f->m, &r);
}
/* Which of the 4 partitions and 2 keys are covered, as "0101 10". */
static const char *coverage(fixture_t *f) {
    static char s[8];
    for (int p = 0; p < NPARTS; p++)
        s[p] = covers_part(f, p) ? '1' : '0';
    s[4] = ' ';
    s[5] = covers_key(f, "nightly") ? '1' : '0';
    s[6] = covers_key(f, "hourly") ? '1' : '0';
    s[7] = 0;
    return s;
}

static double malformed(void) {
    return baton_metric_value(baton_metric_counter(BATON_M_W_NOTICES_MALFORMED), NULL);
}

/* No subscriber: nothing is covered. A SUB alone (a standby older than
 * HLD) holds everything of ours, keys too. */
static void test_sub_alone_holds_all(void **state) {
    fixture_t *f = *state;
    assert_string_equal(coverage(f), "0000 00");
    assert_int_equal(baton_membership__notice_subscribers(&f->m), 0);
    SEND(f, "SUB", "w2");
    assert_int_equal(baton_membership__notice_subscribers(&f->m), 1);
    assert_string_equal(coverage(f), "1111 11");
    /* Unknown resources are never covered. */
    assert_int_equal(covers_part(f, NPARTS), 0);
    assert_int_equal(covers_key(f, "weekly"), 0);
}

/* An HLD names what it holds: only those. A later SUB alone keeps that
 * list (it may have overtaken its HLD, or its HLD may be lost); a new HLD
 * replaces it; an HLD+ adds to it; an empty HLD holds nothing, and the
 * subscriber stays. */
static void test_hld_lists_and_replaces(void **state) {
    fixture_t *f = *state;
    SEND(f, "SUB", "w2");
    SEND(f, "HLD", "w2", "p1", "p3", "knightly");
    assert_string_equal(coverage(f), "0101 10");
    SEND(f, "SUB", "w2");
    assert_string_equal(coverage(f), "0101 10");
    SEND(f, "HLD", "w2", "p2");
    assert_string_equal(coverage(f), "0010 00");
    SEND(f, "HLD+", "w2", "p0", "khourly");
    assert_string_equal(coverage(f), "1010 01");
    SEND(f, "HLD", "w2");
    assert_string_equal(coverage(f), "0000 00");
    assert_int_equal(baton_membership__notice_subscribers(&f->m), 1);
    /* An HLD without a SUB before it subscribes too. */
    SEND(f, "HLD", "w3", "p3");
    assert_int_equal(baton_membership__notice_subscribers(&f->m), 2);
    assert_string_equal(coverage(f), "0001 00");
}

/* Repeated items keep one row each; an item that is not one (no p/k, a
 * bad number, an invalid key) counts as malformed, once per datagram; a
 * partition past ours or a key we never heard of is nothing of ours, not
 * malformed. */
static void test_hld_items_checked(void **state) {
    fixture_t *f = *state;
    double before = malformed();
    SEND(f, "HLD", "w2", "p1", "p1", "p1", "p7", "kweekly", "p2");
    assert_string_equal(coverage(f), "0110 00");
    assert_int_equal(f->m.notice.subs[0].nrows, 2);
    assert_true(malformed() == before);
    SEND(f, "HLD", "w2", "x1", "p-1", "p+2", "p", "k", "k bad", "p3");
    assert_string_equal(coverage(f), "0001 00");
    assert_true(malformed() == before + 1);
    /* Many repeats of one item: still one row. */
    char big[2048];
    int len = snprintf(big, sizeof(big), "BATON-NOTICE 1\nHLD\n" BASE "\nw2\n");
    while (len < (int)sizeof(big) - 8)
        len += snprintf(big + len, sizeof(big) - (size_t)len, "p0\n");
    send_raw(f, big, (size_t)len);
    assert_string_equal(coverage(f), "1000 00");
    assert_int_equal(f->m.notice.subs[0].nrows, 1);
}

/* An HLD+ adds to the list an HLD began; one from a subscriber that never
 * sent an HLD (it overtook its HLD) begins a list of its own, which the
 * HLD, when it comes, replaces. */
static void test_hld_more(void **state) {
    fixture_t *f = *state;
    SEND(f, "SUB", "w2");
    SEND(f, "HLD+", "w2", "p0");
    assert_string_equal(coverage(f), "1000 00");
    SEND(f, "HLD", "w2", "p1");
    assert_string_equal(coverage(f), "0100 00");
    SEND(f, "HLD+", "w2", "p1", "p2");
    assert_string_equal(coverage(f), "0110 00");
    assert_int_equal(f->m.notice.subs[0].nrows, 2);
}

/* Several subscribers: a resource is covered if any of them holds it. An
 * UNS forgets its sender; a second UNS, or one from a stranger, changes
 * nothing. */
static void test_subscribers_and_uns(void **state) {
    fixture_t *f = *state;
    SEND(f, "HLD", "w2", "p0");
    SEND(f, "HLD", "w3", "knightly");
    assert_string_equal(coverage(f), "1000 10");
    SEND(f, "SUB", "w4"); /* holds all */
    assert_string_equal(coverage(f), "1111 11");
    assert_int_equal(baton_membership__notice_subscribers(&f->m), 3);
    SEND(f, "UNS", "w4");
    assert_string_equal(coverage(f), "1000 10");
    SEND(f, "UNS", "w4");
    SEND(f, "UNS", "w9");
    assert_int_equal(baton_membership__notice_subscribers(&f->m), 2);
    SEND(f, "UNS", "w2");
    assert_string_equal(coverage(f), "0000 10");
    /* A subscriber that comes back is new: all, until its HLD. */
    SEND(f, "SUB", "w2");
    assert_string_equal(coverage(f), "1111 11");
}

/* What is not for us, or not a notice, changes nothing: another group's
 * base, a bad id, an unknown kind, a SUB or UNS with items, no magic. */
static void test_not_ours(void **state) {
    fixture_t *f = *state;
    SEND(f, "HLD", "w2", "p1");
    double before = malformed();
    send_from(f, "/baton/other", "SUB", "w3", (const char *)NULL);
    send_from(f, "/baton/other", "UNS", "w2", (const char *)NULL);
    assert_int_equal(baton_membership__notice_subscribers(&f->m), 1);
    assert_true(malformed() == before);
    SEND(f, "HLD", "bad id", "p2");
    SEND(f, "XYZ", "w3");
    SEND(f, "SUB", "w3", "p2");
    SEND(f, "UNS", "w2", "p1");
    assert_true(malformed() == before + 4);
    const char junk[] = "BATON-NOTICE 2\nSUB\n" BASE "\nw3\n";
    send_raw(f, junk, sizeof(junk) - 1);
    assert_true(malformed() == before + 5);
    assert_int_equal(baton_membership__notice_subscribers(&f->m), 1);
    assert_string_equal(coverage(f), "0100 00");
}

/* The partitions grow from 4 to 6: the keys' rows move up by 2 and the
 * subscribers' rows move with them, still sorted, so a key held stays
 * held and a new partition is not. */
static void test_rows_move_when_partitions_grow(void **state) {
    fixture_t *f = *state;
    SEND(f, "HLD", "w2", "p3", "khourly");
    SEND(f, "HLD", "w3", "knightly", "p0");
    SEND(f, "SUB", "w4"); /* holds all: no rows to move */
    assert_string_equal(coverage(f), "1111 11");
    assert_int_equal(mb_grow_parts(&f->m, NPARTS + 2), 1);
    assert_int_equal(f->m.res.npartitions, NPARTS + 2);
    /* w4 still holds all, the new partitions too. */
    assert_string_equal(coverage(f), "1111 11");
    assert_int_equal(covers_part(f, NPARTS), 1);
    assert_int_equal(covers_part(f, NPARTS + 1), 1);
    SEND(f, "UNS", "w4");
    assert_string_equal(coverage(f), "1001 11");
    assert_int_equal(covers_part(f, NPARTS), 0);
    assert_int_equal(covers_part(f, NPARTS + 1), 0);
    /* w2: p3 (row 3), hourly (row 5 -> 7); w3: p0, nightly (row 4 -> 6). */
    assert_int_equal(f->m.notice.subs[0].nrows, 2);
    assert_int_equal(f->m.notice.subs[0].rows[0], 3);
    assert_int_equal(f->m.notice.subs[0].rows[1], NPARTS + 3);
    assert_int_equal(f->m.notice.subs[1].rows[0], 0);
    assert_int_equal(f->m.notice.subs[1].rows[1], NPARTS + 2);
    /* An HLD naming a new partition now counts. */
    SEND(f, "HLD+", "w2", "p5");
    assert_int_equal(covers_part(f, NPARTS + 1), 1);
    /* Growing to fewer or as many partitions changes nothing. */
    assert_int_equal(mb_grow_parts(&f->m, NPARTS), 0);
    assert_string_equal(coverage(f), "1001 11");
}

/* With the notices off, nothing is covered, whatever was heard. */
static void test_off_covers_nothing(void **state) {
    fixture_t *f = *state;
    SEND(f, "SUB", "w2");
    assert_string_equal(coverage(f), "1111 11");
    mb_notice_close(&f->m);
    assert_string_equal(coverage(f), "0000 00");
    assert_int_equal(baton_membership__notice_subscribers(&f->m), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sub_alone_holds_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hld_lists_and_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hld_items_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hld_more, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subscribers_and_uns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_ours, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rows_move_when_partitions_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_off_covers_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
