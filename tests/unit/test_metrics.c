/* test_metrics.c: unit tests for the metrics registry (baton_metrics.h) and
 * its HTTP endpoint (baton_metrics_http.h): get-or-create by name, counter,
 * gauge, labelled gauge and histogram semantics, the exact Prometheus text
 * rendering, escaping, address parsing, and a real GET /metrics on a
 * loopback port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "baton_err.h"
#include "baton_metrics.h"
#include "baton_metrics_http.h"
#include "baton_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static int reset(void **state) {
    (void)state;
    baton_metrics_reset();
    return 0;
}

static void test_get_or_create(void **state) {
    (void)state;
    baton_metric_t *a = baton_metric_counter("x_total", "help");
    assert_ptr_equal(a, baton_metric_counter("x_total", "other help"));
    baton_metric_inc(a);
    baton_metric_add(a, 2.5);
    baton_metric_add(a, -1); /* counters never go down */
    assert_true(baton_metric_value(a, NULL) == 3.5);
    baton_metric_set(a, 100); /* not a gauge: ignored */
    assert_true(baton_metric_value(a, NULL) == 3.5);
}

static void test_render_exact(void **state) {
    (void)state;
    baton_metric_set(baton_metric_gauge("g", "a gauge"), 7);
    baton_metric_t *v = baton_metric_gauge_vec("e", "epochs\nper \\ partition", "partition");
    baton_metric_vec_set(v, "10", 4294967301.0);
    baton_metric_vec_set(v, "2", 5);
    baton_metric_vec_set(v, "3", 6);
    baton_metric_vec_remove(v, "3");
    const double b[] = {0.1, 1};
    baton_metric_t *h = baton_metric_histogram("h_seconds", "lat", b, 2);
    baton_metric_observe(h, 0.05);
    baton_metric_observe(h, 0.1); /* le is inclusive */
    baton_metric_observe(h, 0.5);
    baton_metric_observe(h, 3);
    size_t len = 0;
    char *s = baton_metrics_render(&len);
    const char *want = "# HELP g a gauge\n"
                       "# TYPE g gauge\n"
                       "g 7\n"
                       "# HELP e epochs\\nper \\\\ partition\n"
                       "# TYPE e gauge\n"
                       "e{partition=\"2\"} 5\n"
                       "e{partition=\"10\"} 4294967301\n"
                       "# HELP h_seconds lat\n"
                       "# TYPE h_seconds histogram\n"
                       "h_seconds_bucket{le=\"0.1\"} 2\n"
                       "h_seconds_bucket{le=\"1\"} 3\n"
                       "h_seconds_bucket{le=\"+Inf\"} 4\n"
                       "h_seconds_sum 3.65\n"
                       "h_seconds_count 4\n";
    assert_string_equal(s, want);
    assert_int_equal(len, strlen(want));
    free(s);
    assert_true(baton_metric_value(h, NULL) == 4);
    assert_true(baton_metric_value(v, "2") == 5);
    assert_true(baton_metric_value(v, "3") == 0);
}

static void test_label_escaping(void **state) {
    (void)state;
    baton_metric_vec_set(baton_metric_gauge_vec("q", "h", "w"), "a\"b\\c", 1);
    char *s = baton_metrics_render(NULL);
    assert_non_null(strstr(s, "q{w=\"a\\\"b\\\\c\"} 1\n"));
    free(s);
}

static void test_catalogue_and_zk_state(void **state) {
    (void)state;
    baton_metrics_zk_state(1); /* the first connect is no reconnect */
    assert_true(baton_metric_value(baton_metric_gauge(BATON_M_ZK_CONNECTED), NULL) == 1);
    assert_true(baton_metric_value(baton_metric_counter(BATON_M_ZK_RECONNECTS), NULL) == 0);
    baton_metrics_zk_state(0);
    assert_true(baton_metric_value(baton_metric_gauge(BATON_M_ZK_CONNECTED), NULL) == 0);
    baton_metrics_zk_state(1);
    assert_true(baton_metric_value(baton_metric_counter(BATON_M_ZK_RECONNECTS), NULL) == 1);
    baton_metrics_zk_state(-1);
    baton_metrics_zk_state(1); /* a new session */
    assert_true(baton_metric_value(baton_metric_counter(BATON_M_ZK_RECONNECTS), NULL) == 1);
    assert_true(baton_metric_value(baton_metric_counter(BATON_M_ZK_EXPIRATIONS), NULL) == 1);
    baton_metric_observe(baton_metric_histogram(BATON_M_W_BATCH_SECONDS), 0.002);
    char *s = baton_metrics_render(NULL);
    assert_non_null(strstr(s, "baton_worker_sink_batch_duration_seconds_bucket{le=\"0.001\"} 0\n"
                              "baton_worker_sink_batch_duration_seconds_bucket{le=\"0.005\"} 1\n"));
    free(s);
}

static void test_addr_check(void **state) {
    (void)state;
    char e[256];
    assert_int_equal(baton_metrics_addr_check("127.0.0.1:9100", e, sizeof(e)), BATON_OK);
    assert_int_equal(baton_metrics_addr_check("localhost:0", e, sizeof(e)), BATON_OK);
    assert_int_equal(baton_metrics_addr_check("[::1]:9100", e, sizeof(e)), BATON_OK);
    const char *bad[] = {"",        "9100",  ":9100",    "h:",        "h:-1",
                         "h:65536", "h:12x", "::1:9100", "[::1]9100", "h: 1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e[0] = 0;
        assert_int_equal(baton_metrics_addr_check(bad[i], e, sizeof(e)), BATON_INVALID);
        assert_true(e[0] != 0);
    }
}

/* GETs path from 127.0.0.1:port; returns the whole response (heap). */
static char *http_get(int port, const char *path) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    char req[256];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
    assert_int_equal(write(fd, req, (size_t)n), n);
    size_t cap = 65536, len = 0;
    char *buf = xmalloc(cap);
    ssize_t r;
    while ((r = read(fd, buf + len, cap - len - 1)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    close(fd);
    return buf;
}

static void test_http(void **state) {
    (void)state;
    baton_metric_set(baton_metric_gauge("up_here", "h"), 1);
    char e[256];
    baton_metrics_server_t *s = NULL;
    assert_int_equal(baton_metrics_server_start("127.0.0.1:0", &s, e, sizeof(e)), BATON_OK);
    const char *addr = baton_metrics_server_addr(s);
    assert_true(strncmp(addr, "127.0.0.1:", 10) == 0);
    int port = atoi(addr + 10);
    assert_true(port > 0);
    char *r = http_get(port, "/metrics");
    assert_non_null(strstr(r, "HTTP/1.0 200") ? r : strstr(r, "HTTP/1.1 200"));
    assert_non_null(strstr(r, "text/plain; version=0.0.4"));
    assert_non_null(strstr(r, "\r\n\r\n# HELP up_here h\n# TYPE up_here gauge\nup_here 1\n"));
    free(r);
    r = http_get(port, "/");
    assert_non_null(strstr(r, " 404 "));
    free(r);
    /* The same port again: in use, a clear error. */
    baton_metrics_server_t *s2 = NULL;
    char busy[64];
    snprintf(busy, sizeof(busy), "127.0.0.1:%d", port);
    assert_int_equal(baton_metrics_server_start(busy, &s2, e, sizeof(e)), BATON_IO);
    assert_non_null(strstr(e, "Address already in use"));
    baton_metrics_server_stop(s);
    /* Stopped: the port is free again. */
    assert_int_equal(baton_metrics_server_start(busy, &s2, e, sizeof(e)), BATON_OK);
    baton_metrics_server_stop(s2);
    assert_int_equal(baton_metrics_server_start("no.such.host.invalid:1", &s2, e, sizeof(e)),
                     BATON_INVALID);
    assert_non_null(strstr(e, "cannot resolve host 'no.such.host.invalid'"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_get_or_create, reset),
        cmocka_unit_test_setup(test_render_exact, reset),
        cmocka_unit_test_setup(test_label_escaping, reset),
        cmocka_unit_test_setup(test_catalogue_and_zk_state, reset),
        cmocka_unit_test_setup(test_addr_check, reset),
        cmocka_unit_test_setup(test_http, reset),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    baton_metrics_reset();
    return rc;
}
