/* test_log.c: the logging facade's two formats (common/baton_log.h): the
 * key=value text line and the --log-format json object, read back from a
 * redirected stderr; level filtering without evaluating arguments; and a
 * thread's sink (a membership's log callback): its own level, both formats,
 * library lines, nesting, and stderr untouched while it is set; values
 * with quotes made safe for a quoted field (baton_log_q). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "baton_failpoint.h"
#include "baton_log.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs fn with stderr sent to a temp file; returns what it wrote. */
static char *capture(void (*fn)(void)) {
    char path[] = "/tmp/baton-test-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    char *buf = calloc(1, 65536);
    ssize_t n = read(fd, buf, 65535);
    assert_true(n >= 0);
    close(fd);
    unlink(path);
    return buf;
}

static void emit(void) {
    BLOG_INFO("event=acquired partition=%d epoch=%lld note=\"a \\\"quoted\\\" value\" 007", 3,
              4294967301LL);
}

static void test_text(void **state) {
    (void)state;
    baton_log_init("baton-worker", "w1");
    baton_log_set_format(BATON_LOG_FORMAT_TEXT);
    char *out = capture(emit);
    assert_non_null(strstr(out, "level=info proc=baton-worker id=w1 event=acquired partition=3 "
                                "epoch=4294967301"));
    assert_non_null(strstr(out, "ts="));
    assert_int_equal(out[strlen(out) - 1], '\n');
    free(out);
}

static void test_json(void **state) {
    (void)state;
    baton_log_init("baton-worker", "42");
    baton_log_set_format(BATON_LOG_FORMAT_JSON);
    char *out = capture(emit);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "level")), "info");
    assert_string_equal(json_string_value(json_object_get(j, "proc")), "baton-worker");
    assert_string_equal(json_string_value(json_object_get(j, "id")), "42"); /* ids stay strings */
    assert_string_equal(json_string_value(json_object_get(j, "event")), "acquired");
    assert_int_equal(json_integer_value(json_object_get(j, "partition")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "epoch")), 4294967301LL);
    assert_true(json_is_string(json_object_get(j, "note")));
    assert_string_equal(json_string_value(json_object_get(j, "msg")), "007");
    json_decref(j);
    free(out);
    baton_log_set_format(BATON_LOG_FORMAT_TEXT);
}

static int evaluated = 0;
static int side_effect(void) { return ++evaluated; }
static void emit_debug(void) { BLOG_DEBUG("event=x n=%d", side_effect()); }

static void test_filtering(void **state) {
    (void)state;
    baton_log_level = BATON_LOG_INFO;
    char *out = capture(emit_debug);
    assert_string_equal(out, "");
    assert_int_equal(evaluated, 0);
    free(out);
    baton_log_level = BATON_LOG_DEBUG;
    out = capture(emit_debug);
    assert_non_null(strstr(out, "event=x n=1"));
    free(out);
    baton_log_level = BATON_LOG_INFO;
}

typedef struct {
    int n, level;
    char last[8192];
} sink_seen_t;

static void sink_cb(void *opaque, int level, const char *line) {
    sink_seen_t *seen = opaque;
    seen->n++;
    seen->level = level;
    snprintf(seen->last, sizeof(seen->last), "%s", line);
}

static sink_seen_t seen_a, seen_b;
static const baton_log_sink_t sink_a = {sink_cb, &seen_a, BATON_LOG_DEBUG};
static const baton_log_sink_t sink_b = {sink_cb, &seen_b, BATON_LOG_WARN};

/* Lines under sink a, then b nested inside, then a again. */
static void emit_scoped(void) {
    BATON_LOG_SCOPE(&sink_a);
    BLOG_DEBUG("event=a1 n=%d", side_effect());
    {
        BATON_LOG_SCOPE(&sink_b);
        BLOG_INFO("event=b_info n=%d", side_effect()); /* below b's level */
        BLOG_WARN("event=b_warn");
        baton_log_lib(BATON_LOG_ERROR, "zookeeper", "check_events", "refused \"x\"");
    }
    BLOG_INFO("event=a2");
}

static void test_sink(void **state) {
    (void)state;
    baton_log_init("app", NULL);
    baton_log_set_format(BATON_LOG_FORMAT_TEXT);
    baton_log_level = BATON_LOG_ERROR; /* the process's level does not apply to a sink */
    memset(&seen_a, 0, sizeof(seen_a));
    memset(&seen_b, 0, sizeof(seen_b));
    evaluated = 0;
    char *out = capture(emit_scoped);
    assert_string_equal(out, ""); /* nothing on stderr */
    free(out);
    assert_int_equal(seen_a.n, 2);
    assert_int_equal(seen_a.level, BATON_LOG_INFO);
    assert_non_null(strstr(seen_a.last, "level=info proc=app event=a2"));
    assert_null(strchr(seen_a.last, '\n'));
    assert_int_equal(seen_b.n, 2);
    assert_int_equal(seen_b.level, BATON_LOG_ERROR);
    assert_non_null(strstr(
        seen_b.last, "level=error proc=app lib=zookeeper src=check_events msg=\"refused 'x'\""));
    assert_int_equal(evaluated, 1); /* b's filtered info line was not formatted */
    assert_null(baton_log_cur);     /* every scope restored */

    /* JSON, as the process's format says. */
    baton_log_set_format(BATON_LOG_FORMAT_JSON);
    out = capture(emit_scoped);
    assert_string_equal(out, "");
    free(out);
    json_error_t jerr;
    json_t *o = json_loads(seen_a.last, 0, &jerr);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "event")), "a2");
    json_decref(o);
    baton_log_set_format(BATON_LOG_FORMAT_TEXT);

    /* No sink: stderr again. */
    baton_log_level = BATON_LOG_INFO;
    out = capture(emit);
    assert_non_null(strstr(out, "event=acquired"));
    free(out);
    baton_log_sink_t *copy = baton_log_sink_dup(&sink_b);
    assert_ptr_equal(copy->opaque, &seen_b);
    free(copy);
    assert_null(baton_log_sink_dup(NULL));
}

static void test_parse(void **state) {
    (void)state;
    baton_log_format_t f;
    assert_int_equal(baton_log_format_parse("json", &f), 0);
    assert_int_equal(f, BATON_LOG_FORMAT_JSON);
    assert_int_equal(baton_log_format_parse("text", &f), 0);
    assert_int_equal(f, BATON_LOG_FORMAT_TEXT);
    assert_int_equal(baton_log_format_parse("xml", &f), -1);
    baton_log_level_t l;
    assert_int_equal(baton_log_level_parse("warn", &l), 0);
    assert_int_equal(l, BATON_LOG_WARN);
    assert_int_equal(baton_log_level_parse("loud", &l), -1);
}

/* Hostile values (a key or value of control characters read from a znode
 * or a datagram, long enough to fill the JSON line): every JSON line stays
 * inside its buffer and parses, and a text line stays one line. Under the
 * sanitizers a write past the buffer fails here. */
static void test_hostile(void **state) {
    (void)state;
    seen_a.n = 0;
    BATON_LOG_SCOPE(&sink_a);
    baton_log_init("baton-worker", "w1");
    baton_log_set_format(BATON_LOG_FORMAT_JSON);
    char msg[4096];
    /* Shapes: a key of control characters, a value of them (both cut at the
     * line's end); a value of "é" cut inside a character by the message's
     * own buffer; bytes that are not UTF-8. */
    for (int shape = 0; shape < 4; shape++)
        for (int j = 0; j < 16; j++) {
            size_t pos = (size_t)snprintf(msg, sizeof(msg), "x %s", shape ? "k=\"" : "");
            for (int i = 0; i < j; i++)
                msg[pos++] = 'A';
            for (int i = 0; i < 1400 && pos + 4 < sizeof(msg); i++) {
                if (shape < 2) {
                    msg[pos++] = '\x01';
                } else if (shape == 2) {
                    msg[pos++] = '\xc3';
                    msg[pos++] = '\xa9';
                } else {
                    msg[pos++] = i % 2 ? '\xff' : '\xe9';
                }
            }
            pos += (size_t)snprintf(msg + pos, sizeof(msg) - pos, "%s", shape ? "\"" : "=v");
            BLOG_WARN("%s", msg);
            size_t len = strlen(seen_a.last);
            assert_true(len < 8192);
            assert_int_equal(seen_a.last[len - 1], '}');
            json_error_t jerr;
            json_t *jl = json_loads(seen_a.last, 0, &jerr);
            if (!jl)
                fail_msg("shape %d, %d: not JSON: %s", shape, j, jerr.text);
            json_decref(jl);
        }
    assert_int_equal(seen_a.n, 64);
    baton_log_set_format(BATON_LOG_FORMAT_TEXT);
    BLOG_WARN("event=corrupt_znode error=\"id 'a\nts=x level=error event=forged'\" tab=\t end=1");
    assert_null(strchr(seen_a.last, '\n'));
    assert_null(strchr(seen_a.last, '\t'));
    assert_non_null(strstr(seen_a.last, "id 'a ts=x level=error event=forged'"));
    /* A C1 control (U+009B), a right-to-left override (U+202E), a byte
     * that is not UTF-8: spaces and '?'; other UTF-8 (U+00E9) stays. */
    BLOG_WARN("event=bad_key path=\"/k/a\xc2\x9b"
              "b\xe2\x80\xae"
              "c\xff"
              "d\xc3\xa9\"");
    assert_non_null(strstr(seen_a.last, "path=\"/k/a  b   c?d\xc3\xa9\""));
}

/* The text line's fields as a reader takes them (json_fields' rule: a
 * quoted value ends at the next '"'), as "k=v|k=v|..." into out. */
static void text_fields(const char *line, char *out, size_t cap) {
    size_t pos = 0;
    out[0] = 0;
    for (const char *p = line; *p;) {
        while (*p == ' ')
            p++;
        const char *k = p;
        while (*p && *p != '=' && *p != ' ')
            p++;
        if (*p != '=') {
            pos += (size_t)snprintf(out + pos, cap - pos, "%.*s|", (int)(p - k), k);
            continue;
        }
        const char *v = ++p;
        int quoted = *p == '"';
        if (quoted)
            v = ++p;
        while (*p && (quoted ? *p != '"' : *p != ' '))
            p++;
        pos += (size_t)snprintf(out + pos, cap - pos, "%.*s=%.*s|", (int)(v - k - 1 - quoted), k,
                                (int)(p - v), v);
        if (quoted && *p)
            p++;
    }
}

/* A value with quotes in a quoted field (a ZooKeeper path, a server's
 * error text, a failpoint spec: text baton did not write) stays one field,
 * its quotes turned into '\'', in both formats; the line's other fields
 * are what they were. Without baton_log_q the first inner quote ended the
 * value: JSON got "event":"forged" and a text reader a field of its own. */
/* The last line's fields from event= on, as text_fields splits them. */
static void last_text_fields(char *out, size_t cap) {
    const char *body = strstr(seen_a.last, "event=");
    assert_non_null(body);
    text_fields(body, out, cap);
}

/* The last line as a JSON object, keys unique (the test fails if not). */
static json_t *last_json(void) {
    json_error_t jerr;
    json_t *j = json_loads(seen_a.last, JSON_REJECT_DUPLICATES, &jerr);
    if (!j)
        fail_msg("not JSON: %s: %s", jerr.text, seen_a.last);
    return j;
}

static void test_quoted_values(void **state) {
    (void)state;
    seen_a.n = 0;
    BATON_LOG_SCOPE(&sink_a);
    baton_log_init("baton-worker", "w1");
    const char *path = "/baton/g/keys/a\" event=\"forged", *err = "relation \"out\" does not exist";
    char fields[2048];
    for (int fmt = 0; fmt < 2; fmt++) {
        baton_log_set_format(fmt ? BATON_LOG_FORMAT_JSON : BATON_LOG_FORMAT_TEXT);
        BLOG_ERROR("event=sink_failed path=\"%s\" error=\"%s\" action=retry", baton_log_q(path),
                   baton_log_q(err));
        if (!fmt) {
            last_text_fields(fields, sizeof(fields));
            assert_string_equal(fields, "event=sink_failed|path=/baton/g/keys/a' event='forged|"
                                        "error=relation 'out' does not exist|action=retry|");
            continue;
        }
        json_t *j = last_json();
        assert_int_equal(json_object_size(j), 8); /* ts level proc id event path error action */
        assert_string_equal(json_string_value(json_object_get(j, "event")), "sink_failed");
        assert_string_equal(json_string_value(json_object_get(j, "path")),
                            "/baton/g/keys/a' event='forged");
        assert_string_equal(json_string_value(json_object_get(j, "error")),
                            "relation 'out' does not exist");
        assert_string_equal(json_string_value(json_object_get(j, "action")), "retry");
        json_decref(j);
    }
    /* A real call site: the failpoints' spec comes from the environment. */
    /* (A name may hold anything but '=' and ';'.) */
    setenv("BATON_FAILPOINTS", "a\" event\"b=sleep-0", 1);
    char why[256];
    assert_int_equal(baton_failpoints_init(why, sizeof(why)), 0);
    unsetenv("BATON_FAILPOINTS");
    assert_int_equal(baton_failpoints_parse("", why, sizeof(why)), 0);
    json_t *j = last_json();
    assert_string_equal(json_string_value(json_object_get(j, "event")), "failpoints_armed");
    assert_string_equal(json_string_value(json_object_get(j, "spec")), "a' event'b=sleep-0");
    json_decref(j);
    baton_log_set_format(BATON_LOG_FORMAT_TEXT);

    /* No quote: the value itself, no copy. Copies live in a ring: the
     * values of one line stay apart; a long one is cut. */
    const char *plain = "no quotes here";
    assert_ptr_equal(baton_log_q(plain), plain);
    assert_string_equal(baton_log_q(NULL), "(null)");
    const char *q[BATON_LOG_Q_SLOTS];
    char in[BATON_LOG_Q_SLOTS][16];
    for (int i = 0; i < BATON_LOG_Q_SLOTS; i++) {
        snprintf(in[i], sizeof(in[i]), "\"%d\"", i);
        q[i] = baton_log_q(in[i]);
    }
    for (int i = 0; i < BATON_LOG_Q_SLOTS; i++) {
        char want[16];
        snprintf(want, sizeof(want), "'%d'", i);
        assert_string_equal(q[i], want);
    }
    char *big = malloc(3 * BATON_LOG_Q_SIZE);
    assert_non_null(big);
    memset(big, '"', 3 * BATON_LOG_Q_SIZE - 1);
    big[3 * BATON_LOG_Q_SIZE - 1] = 0;
    const char *cut = baton_log_q(big);
    assert_int_equal(strlen(cut), BATON_LOG_Q_SIZE - 1);
    assert_null(strchr(cut, '"'));
    free(big);
}

/* baton_log_v: an unquoted value with a blank, a quote or an '=' in it is
 * quoted (logfmt's way), so it stays one field; a plain word is itself. */
static void test_unquoted_values(void **state) {
    (void)state;
    seen_a.n = 0;
    BATON_LOG_SCOPE(&sink_a);
    baton_log_init("baton-worker", "w1");
    const char *uri = "sqlite:/tmp/my dir/x.db group=forged", *path = "/baton/g/members/m\"1";
    char fields[2048];
    for (int fmt = 0; fmt < 2; fmt++) {
        baton_log_set_format(fmt ? BATON_LOG_FORMAT_JSON : BATON_LOG_FORMAT_TEXT);
        BLOG_WARN("event=x uri=%s path=%s group=%s empty=%s", baton_log_v(uri), baton_log_v(path),
                  baton_log_v("g1"), baton_log_v(""));
        if (!fmt) {
            last_text_fields(fields, sizeof(fields));
            assert_string_equal(fields, "event=x|uri=sqlite:/tmp/my dir/x.db group=forged|"
                                        "path=/baton/g/members/m'1|group=g1|empty=|");
            continue;
        }
        json_t *j = last_json();
        assert_int_equal(json_object_size(j), 9); /* ts level proc id event uri path group empty */
        assert_string_equal(json_string_value(json_object_get(j, "uri")),
                            "sqlite:/tmp/my dir/x.db group=forged");
        assert_string_equal(json_string_value(json_object_get(j, "group")), "g1");
        assert_string_equal(json_string_value(json_object_get(j, "empty")), "");
        json_decref(j);
    }
    baton_log_set_format(BATON_LOG_FORMAT_TEXT);
    const char *plain = "/baton/g/members/m1";
    assert_ptr_equal(baton_log_v(plain), plain);
    assert_string_equal(baton_log_v(NULL), "(null)");
    assert_string_equal(baton_log_v("a\tb"), "\"a\tb\""); /* the writer makes the tab a space */
    assert_string_equal(baton_log_v("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    char *big = malloc(3 * BATON_LOG_Q_SIZE);
    assert_non_null(big);
    memset(big, ' ', 3 * BATON_LOG_Q_SIZE - 1);
    big[3 * BATON_LOG_Q_SIZE - 1] = 0;
    const char *cut = baton_log_v(big);
    assert_int_equal(strlen(cut), BATON_LOG_Q_SIZE - 1);
    assert_int_equal(cut[0], '"');
    assert_int_equal(cut[BATON_LOG_Q_SIZE - 2], '"');
    free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),          cmocka_unit_test(test_json),
        cmocka_unit_test(test_filtering),     cmocka_unit_test(test_parse),
        cmocka_unit_test(test_sink),          cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_quoted_values), cmocka_unit_test(test_unquoted_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
