/* baton_log.c: writes one key=value line per event to stderr, or to the
 * thread's current sink. */
#include "baton_log.h"

#include "baton_util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

baton_log_level_t baton_log_level = BATON_LOG_INFO;
_Thread_local const baton_log_sink_t *baton_log_cur = NULL;
static baton_log_format_t log_format = BATON_LOG_FORMAT_TEXT;
static char log_proc[64] = "baton";
static char log_id[128] = "";

void baton_log_init(const char *proc, const char *id) {
    snprintf(log_proc, sizeof(log_proc), "%s", proc ? proc : "baton");
    snprintf(log_id, sizeof(log_id), "%s", id ? id : "");
    const char *f = getenv("BATON_LOG_FORMAT");
    if (f && baton_log_format_parse(f, &log_format) != 0)
        fprintf(stderr, "%s: BATON_LOG_FORMAT: '%s' is not text or json; using text\n", log_proc,
                f);
    const char *l = getenv("BATON_LOG_LEVEL");
    if (l && baton_log_level_parse(l, &baton_log_level) != 0)
        fprintf(stderr, "%s: BATON_LOG_LEVEL: '%s' is not debug, info, warn or error\n", log_proc,
                l);
}

int baton_log_format_parse(const char *s, baton_log_format_t *out) {
    if (strcmp(s, "text") == 0)
        *out = BATON_LOG_FORMAT_TEXT;
    else if (strcmp(s, "json") == 0)
        *out = BATON_LOG_FORMAT_JSON;
    else
        return -1;
    return 0;
}

void baton_log_set_format(baton_log_format_t fmt) { log_format = fmt; }

baton_log_sink_t *baton_log_sink_dup(const baton_log_sink_t *s) {
    if (!s)
        return NULL;
    baton_log_sink_t *d = malloc(sizeof(*d));
    if (d)
        *d = *s;
    return d;
}

const baton_log_sink_t *baton_log_enter(const baton_log_sink_t *s) {
    const baton_log_sink_t *prev = baton_log_cur;
    baton_log_cur = s;
    return prev;
}

void baton_log_restore(const baton_log_sink_t *const *prev) { baton_log_cur = *prev; }

/* A whole line to the thread's sink, or to stderr with one fputs (which
 * keeps lines from several threads apart). */
static void log_emit(baton_log_level_t lvl, const char *line) {
    const baton_log_sink_t *s = baton_log_cur;
    if (s) {
        s->cb(s->opaque, (int)lvl, line);
        return;
    }
    flockfile(stderr);
    fputs(line, stderr);
    fputc('\n', stderr);
    funlockfile(stderr);
}

/* Appends s (len bytes) to buf as the body of a JSON string, stopping
 * before pos would pass cap - 2: whole escapes and whole UTF-8 sequences
 * only, and a byte that starts none (a URI or a datagram that is not
 * UTF-8, a message cut inside a character) as '?', so the line stays
 * valid JSON. */
static size_t json_escape(char *buf, size_t pos, size_t cap, const char *s, size_t len) {
    for (size_t i = 0; i < len && pos + 7 < cap;) {
        unsigned char c = (unsigned char)s[i];
        size_t seq = baton_utf8_seq((const unsigned char *)s + i, len - i);
        if (c == '"' || c == '\\') {
            buf[pos++] = '\\';
            buf[pos++] = (char)c;
        } else if (c < 0x20) {
            pos += (size_t)snprintf(buf + pos, cap - pos, "\\u%04x", c);
        } else if (seq == 0) {
            buf[pos++] = '?';
        } else {
            memcpy(buf + pos, s + i, seq);
            pos += seq;
            i += seq;
            continue;
        }
        i++;
    }
    return pos;
}

/* Appends ,"k":v to buf[0..cap): the returned pos is at most cap - 1
 * whatever k and v hold (a long field is cut, its quotes kept): each
 * escape leaves room for what follows it. */
static size_t json_field(char *buf, size_t pos, size_t cap, const char *k, size_t klen,
                         const char *v, size_t vlen, int as_string) {
    if (pos + 8 >= cap)
        return pos;
    buf[pos++] = ',';
    buf[pos++] = '"';
    pos = json_escape(buf, pos, cap - 4, k, klen); /* room for '"', ':', '"' */
    buf[pos++] = '"';
    buf[pos++] = ':';
    /* Integers stay numbers so shippers can aggregate them. */
    int numeric = !as_string && vlen > 0 && vlen < 19;
    for (size_t i = 0; i < vlen && numeric; i++)
        numeric = (v[i] >= '0' && v[i] <= '9') || (i == 0 && v[i] == '-' && vlen > 1);
    if (numeric && !(vlen > 1 && v[0] == '0')) {
        if (pos + vlen < cap) {
            memcpy(buf + pos, v, vlen);
            pos += vlen;
        }
        return pos;
    }
    buf[pos++] = '"';
    pos = json_escape(buf, pos, cap - 1, v, vlen); /* room for the closing '"' */
    buf[pos++] = '"';
    return pos;
}

/* Turns "k=v k2=\"quoted value\" ..." into JSON fields; a token that is
 * not key=value lands in "msg". */
static size_t json_fields(char *buf, size_t pos, size_t cap, const char *msg) {
    const char *p = msg;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *k = p;
        while (*p && *p != '=' && *p != ' ')
            p++;
        if (*p != '=') {
            pos = json_field(buf, pos, cap, "msg", 3, k, (size_t)(p - k), 1);
            continue;
        }
        size_t klen = (size_t)(p - k);
        p++;
        const char *v = p;
        size_t vlen;
        if (*p == '"') {
            v = ++p;
            while (*p && *p != '"')
                p++;
            vlen = (size_t)(p - v);
            if (*p)
                p++;
        } else {
            while (*p && *p != ' ')
                p++;
            vlen = (size_t)(p - v);
        }
        pos = json_field(buf, pos, cap, k, klen, v, vlen, v > msg && v[-1] == '"');
    }
    return pos;
}

/* s into the next of the thread's ring buffers, each '"' as '\'', between
 * quotes if quote. */
static const char *log_ring_copy(const char *s, int quote) {
    static _Thread_local char ring[BATON_LOG_Q_SLOTS][BATON_LOG_Q_SIZE];
    static _Thread_local unsigned next;
    char *d = ring[next++ % BATON_LOG_Q_SLOTS];
    size_t i = 0, cap = BATON_LOG_Q_SIZE - 1 - (quote ? 1 : 0); /* room for the closing quote */
    if (quote)
        d[i++] = '"';
    for (; *s && i < cap; s++)
        d[i++] = *s == '"' ? '\'' : *s;
    if (quote)
        d[i++] = '"';
    d[i] = 0;
    return d;
}

const char *baton_log_q(const char *s) {
    if (!s)
        return "(null)";
    if (!strchr(s, '"'))
        return s; /* the usual case: no copy */
    return log_ring_copy(s, 0);
}

const char *baton_log_v(const char *s) {
    if (!s)
        return "(null)";
    const unsigned char *p = (const unsigned char *)s;
    while (*p > ' ' && *p < 0x7f && *p != '"' && *p != '=')
        p++;
    if (*s && !*p)
        return s; /* one plain word: no copy */
    return log_ring_copy(s, 1);
}

int baton_log_level_parse(const char *s, baton_log_level_t *out) {
    static const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (baton_log_level_t)i;
            return 0;
        }
    return -1;
}

void baton_log_write(baton_log_level_t lvl, const char *fmt, ...) {
    static const char *names[] = {"debug", "info", "warn", "error"};
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);

    char line[4096];
    if (log_format == BATON_LOG_FORMAT_JSON) {
        char msg[3072];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        char json[8192];
        size_t pos = (size_t)snprintf(json, sizeof(json),
                                      "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"proc\":\"%s\"",
                                      when, ts.tv_nsec / 1000000, names[lvl], log_proc);
        if (log_id[0])
            pos = json_field(json, pos, sizeof(json), "id", 2, log_id, strlen(log_id), 1);
        pos = json_fields(json, pos, sizeof(json) - 2, msg);
        json[pos++] = '}';
        json[pos] = 0;
        log_emit(lvl, json);
        return;
    }
    int n = snprintf(line, sizeof(line), "ts=%s.%03ldZ level=%s proc=%s%s%s ", when,
                     ts.tv_nsec / 1000000, names[lvl], log_proc, log_id[0] ? " id=" : "", log_id);
    if (n < 0 || (size_t)n >= sizeof(line))
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One line, whatever a value holds: a newline in a field read from a
     * znode or a datagram must not start a forged line of its own. Each
     * control (C0, DEL, C1) and bidirectional control (U+202E makes what
     * follows read backwards) becomes a space, each byte that is not
     * UTF-8 a '?'. */
    unsigned char *end = (unsigned char *)line + strlen(line);
    for (unsigned char *p = (unsigned char *)line + n; p < end;) {
        size_t len = 1;
        int kind = *p >= 0x20 && *p < 0x7f ? BATON_TEXT_SHOWN
                                           : baton_text_unit(p, (size_t)(end - p), &len);
        if (kind != BATON_TEXT_SHOWN)
            memset(p, kind == BATON_TEXT_BAD ? '?' : ' ', len);
        p += len;
    }
    log_emit(lvl, line);
}

/* Library lines: one per kind of message (digits ignored, so a port or a
 * retry count does not make a new kind) per BATON_LOG_REPEAT_MS; the
 * repeats in between are counted and reported as suppressed=N on the next
 * line of that kind. A small table: an unseen kind evicts the oldest. */
#define BATON_LOG_REPEAT_MS 5000
#define BATON_LOG_KINDS 32

typedef struct {
    uint64_t hash;
    int64_t last_ms; /* when a line of this kind was last written; 0: free */
    long suppressed;
} log_kind_t;

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static log_kind_t lib_kinds[BATON_LOG_KINDS];
static int lib_quiet = 0;

void baton_log_lib_quiet(int quiet) { lib_quiet = quiet; }

/* Per sink: one handle's repeats do not hide another's lines. */
static uint64_t lib_kind_hash(const void *sink, const char *lib, const char *src, const char *msg) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)sink; /* FNV-1a */
    const char *parts[] = {lib, "|", src ? src : "", "|", msg};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++) {
            if (*p >= '0' && *p <= '9')
                continue;
            h = (h ^ *p) * 1099511628211ULL;
        }
    return h;
}

/* Returns -1 to drop the line, else the count of repeats it reports. */
static long lib_kind_admit(uint64_t hash) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 1;
    long rc = 0;
    pthread_mutex_lock(&lib_lock);
    log_kind_t *k = NULL, *oldest = &lib_kinds[0];
    for (int i = 0; i < BATON_LOG_KINDS && !k; i++) {
        if (lib_kinds[i].last_ms && lib_kinds[i].hash == hash)
            k = &lib_kinds[i];
        else if (lib_kinds[i].last_ms < oldest->last_ms)
            oldest = &lib_kinds[i];
    }
    if (!k) {
        k = oldest;
        *k = (log_kind_t){.hash = hash, .last_ms = now};
    } else if (now - k->last_ms < BATON_LOG_REPEAT_MS) {
        k->suppressed++;
        rc = -1;
    } else {
        rc = k->suppressed;
        k->suppressed = 0;
        k->last_ms = now;
    }
    pthread_mutex_unlock(&lib_lock);
    return rc;
}

void baton_log_lib(baton_log_level_t lvl, const char *lib, const char *src, const char *msg) {
    if (lib_quiet || !baton_log_on(lvl))
        return;
    long suppressed = lib_kind_admit(lib_kind_hash(baton_log_cur, lib, src, msg));
    if (suppressed < 0)
        return;
    /* The message becomes one quoted value: no quotes or line breaks in it. */
    char clean[1024];
    size_t n = 0;
    for (const char *p = msg; *p && n + 1 < sizeof(clean); p++)
        clean[n++] = *p == '"' ? '\'' : ((unsigned char)*p < 0x20 ? ' ' : *p);
    while (n > 0 && clean[n - 1] == ' ')
        n--;
    clean[n] = 0;
    char extra[64] = "";
    if (suppressed > 0)
        snprintf(extra, sizeof(extra), " suppressed=%ld", suppressed);
    if (src && *src)
        baton_log_write(lvl, "lib=%s src=%s msg=\"%s\"%s", lib, src, clean, extra);
    else
        baton_log_write(lvl, "lib=%s msg=\"%s\"%s", lib, clean, extra);
}

void baton_log_rdkafka(int level, const char *fac, const char *buf) {
    baton_log_level_t lvl = level <= 3   ? BATON_LOG_ERROR
                            : level <= 4 ? BATON_LOG_WARN
                            : level <= 6 ? BATON_LOG_INFO
                                         : BATON_LOG_DEBUG;
    baton_log_lib(lvl, "librdkafka", fac, buf);
}
