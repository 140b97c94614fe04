/* baton_util.h: small helpers every module uses: allocation that aborts on
 * failure (so no caller checks for NULL), clocks, bounded string copies. */
#ifndef BATON_UTIL_H
#define BATON_UTIL_H

#include <stddef.h>
#include <stdint.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* printf into a fresh heap string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Monotonic milliseconds (and microseconds), for timeouts and durations,
 * on BATON_CLOCK: CLOCK_BOOTTIME, which goes on while the host is
 * suspended (CLOCK_MONOTONIC stops), so a lease-related clock (a worker's
 * self-suspension, a probe's silence) never trusts news older than it
 * looks after a resume. */
#define BATON_CLOCK CLOCK_BOOTTIME
int64_t baton_now_ms(void);
int64_t baton_now_us(void);
/* qsort/bsearch comparator for an array of char * (strcmp order). */
int baton_strcmp_p(const void *a, const void *b);
/* Wall-clock milliseconds since the epoch, for logs and records. */
int64_t baton_wall_ms(void);
void baton_sleep_ms(int64_t ms);
void baton_sleep_us(int64_t us);

/* Writes an error message into errstr (always NUL-terminated) and returns err. */
int baton_seterr(char *errstr, size_t errstr_size, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Parses a decimal integer in [min, max]; the whole string must be a number. */
int baton_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/* Random identifiers (group ids, sink ids): a version-4 UUID in its
 * 36-character text form, lower case. */
#define BATON_UUID_LEN 36
/* Writes a fresh random UUID into out (BATON_UUID_LEN + 1 bytes). Returns 0,
 * or -1 if the kernel gave no randomness (out is then ""). */
int baton_uuid_new(char *out);
/* 0 if s is a UUID in that form (any version, lower or upper case hex). */
int baton_uuid_valid(const char *s);
/* The length (1-4) of the valid UTF-8 sequence at s[0..n), or 0 if none
 * starts there (a stray continuation byte, an overlong form, a surrogate,
 * past U+10FFFF, or cut short by n). ASCII, NUL included, is 1. */
size_t baton_utf8_seq(const unsigned char *s, size_t n);
/* What a terminal makes of the text at s[0..n), n > 0: its first unit's
 * length in *len and its kind. BATON_TEXT_SHOWN: a character shown as
 * itself. BATON_TEXT_CONTROL: one that changes what is shown beyond itself
 * (a C0 or C1 control, DEL, or a bidirectional control: an override makes
 * what follows read backwards, so a name can pass for another).
 * BATON_TEXT_BAD: a byte that starts no valid UTF-8 sequence (*len 1). */
enum { BATON_TEXT_SHOWN, BATON_TEXT_CONTROL, BATON_TEXT_BAD };
int baton_text_unit(const unsigned char *s, size_t n, size_t *len);
/* Replaces, in place, every byte of s that is not part of a valid UTF-8
 * sequence with '?': JSON holds only UTF-8. Returns how many it replaced. */
size_t baton_utf8_clean(char *s);
/* Formats wall-clock milliseconds as 2026-12-01T10:00:00Z into out. */
void baton_time_iso(int64_t wall_ms, char *out, size_t size);

#define BATON_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
