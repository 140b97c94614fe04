/* baton_util.c: allocation, clocks and parsing helpers. */
#include "baton_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
