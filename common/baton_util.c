/* baton_util.c: allocation, clocks and parsing helpers. */
#include "baton_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static void oom(size_t n) {
    fprintf(stderr, "baton: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t nmemb, size_t n) {
    void *p = calloc(nmemb ? nmemb : 1, n ? n : 1);
    if (!p)
        oom(nmemb * n);
    return p;
}

void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

char *xasprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    return s;
}

int64_t baton_now_ms(void) {
    struct timespec ts;
    clock_gettime(BATON_CLOCK, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t baton_now_us(void) {
    struct timespec ts;
    clock_gettime(BATON_CLOCK, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t baton_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void baton_sleep_ms(int64_t ms) { baton_sleep_us(ms * 1000); }

void baton_sleep_us(int64_t us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

int baton_seterr(char *errstr, size_t errstr_size, int err, const char *fmt, ...) {
    if (errstr && errstr_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errstr, errstr_size, fmt, ap);
        va_end(ap);
    }
    return err;
}

int baton_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out) {
    /* strtoll skips leading blanks; the whole string must be the number. */
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int baton_strcmp_p(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int baton_uuid_new(char *out) {
    unsigned char b[16];
    size_t got = 0;
    out[0] = '\0';
    while (got < sizeof(b)) {
        ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[b[i] >> 4];
        *o++ = hex[b[i] & 15];
    }
    *o = '\0';
    return 0;
}

int baton_uuid_valid(const char *s) {
    if (!s || strlen(s) != BATON_UUID_LEN)
        return -1;
    for (int i = 0; i < BATON_UUID_LEN; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return -1;
    }
    return 0;
}

size_t baton_utf8_seq(const unsigned char *s, size_t n) {
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    /* The second byte's range depends on the first (RFC 3629, section 4):
     * no overlong forms, no surrogates, nothing past U+10FFFF. */
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

int baton_text_unit(const unsigned char *s, size_t n, size_t *len) {
    *len = baton_utf8_seq(s, n);
    if (*len == 0) {
        *len = 1;
        return BATON_TEXT_BAD;
    }
    uint32_t cp = *len == 1 ? s[0] : s[0] & (0x7fu >> *len);
    for (size_t i = 1; i < *len; i++)
        cp = cp << 6 | (s[i] & 0x3fu);
    int control = cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
                  cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
    return control ? BATON_TEXT_CONTROL : BATON_TEXT_SHOWN;
}

size_t baton_utf8_clean(char *s) {
    size_t n = strlen(s), bad = 0;
    for (size_t i = 0; i < n;) {
        size_t l = baton_utf8_seq((const unsigned char *)s + i, n - i);
        if (l) {
            i += l;
        } else {
            s[i++] = '?';
            bad++;
        }
    }
    return bad;
}

void baton_time_iso(int64_t wall_ms, char *out, size_t size) {
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    if (!size)
        return;
    if (wall_ms <= 0 || !gmtime_r(&t, &tm) || !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, size, "an unknown time");
}
