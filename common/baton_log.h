/* baton_log.h: the logging facade. One line per event on stderr, key=value
 * fields: "ts=... level=info proc=baton-worker id=w1 event=claimed partition=3".
 * Callers write the event's fields as the format; arguments are not
 * evaluated when the level is filtered out. Thread-safe.
 *
 * Sinks: a thread may name a current sink (a callback and its own minimum
 * level; BATON_LOG_SCOPE): while it is set, every line that thread logs
 * goes to the callback, filtered by the sink's level, instead of stderr.
 * libbaton sets the sink of a membership handle in each of its entry
 * points, so whatever is logged on the handle's behalf (including the
 * ZooKeeper client's lines, baton_zk.c) reaches that handle's callback. */
#ifndef BATON_LOG_H
#define BATON_LOG_H

typedef enum {
    BATON_LOG_DEBUG = 0,
    BATON_LOG_INFO = 1,
    BATON_LOG_WARN = 2,
    BATON_LOG_ERROR = 3,
    BATON_LOG_OFF = 4, /* as baton_log_level only: no line at all */
} baton_log_level_t;

typedef enum {
    BATON_LOG_FORMAT_TEXT = 0, /* ts=... level=info proc=... key=value ... */
    BATON_LOG_FORMAT_JSON = 1, /* {"ts":"...","level":"info","proc":"...","key":"value",...} */
} baton_log_format_t;

extern baton_log_level_t baton_log_level;

/* A destination for lines: cb gets each formatted line (no newline; text
 * or JSON as the process's format says) with its level; lines below level
 * are not formatted at all. */
typedef struct {
    void (*cb)(void *opaque, int level, const char *line);
    void *opaque;
    baton_log_level_t level;
} baton_log_sink_t;

/* A heap copy of s (free it), or NULL for NULL. */
baton_log_sink_t *baton_log_sink_dup(const baton_log_sink_t *s);

/* The calling thread's current sink; NULL: the process's logger (stderr,
 * baton_log_level). */
extern _Thread_local const baton_log_sink_t *baton_log_cur;

/* Makes s (NULL: none) the thread's current sink; returns the previous
 * one, for baton_log_restore. */
const baton_log_sink_t *baton_log_enter(const baton_log_sink_t *s);
void baton_log_restore(const baton_log_sink_t *const *prev);
/* For the rest of the enclosing block the thread's sink is s (NULL: the
 * process's logger); the previous one comes back when the block is left,
 * by any return. */
#define BATON_LOG_SCOPE(s)                                                                        \
    const baton_log_sink_t *baton_log_prev_ __attribute__((cleanup(baton_log_restore), unused)) = \
        baton_log_enter(s)

/* 1 if a line of level lvl would be written on this thread. */
static inline int baton_log_on(baton_log_level_t lvl) {
    const baton_log_sink_t *s = baton_log_cur;
    return s ? lvl >= s->level : lvl >= baton_log_level;
}

/* Sets the process name and member id printed on every line (copied). The
 * environment variables BATON_LOG_FORMAT (text, json) and BATON_LOG_LEVEL
 * are read here; flags parsed later override them. */
void baton_log_init(const char *proc, const char *id);
/* Parses "text" or "json"; returns 0 or -1. */
int baton_log_format_parse(const char *s, baton_log_format_t *out);
void baton_log_set_format(baton_log_format_t fmt);
/* Parses "debug", "info", "warn", "error"; returns 0 or -1. */
int baton_log_level_parse(const char *s, baton_log_level_t *out);
void baton_log_write(baton_log_level_t lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* s made safe for a quoted field (key=\"%s\"): each '"' in it becomes '\'',
 * so that text baton did not write (a path, an error from a library or a
 * server, a URI) cannot end the value early. s itself when it has no '"';
 * else a copy in a small thread-local ring (no allocation), valid until
 * BATON_LOG_Q_SLOTS more copies are made on this thread: enough for the
 * quoted values of one line. A copy is cut at BATON_LOG_Q_SIZE - 1 bytes.
 * NULL gives "(null)". Call it in the log macro's arguments, which are not
 * evaluated when the level is filtered out. */
#define BATON_LOG_Q_SLOTS 8
#define BATON_LOG_Q_SIZE 1024
const char *baton_log_q(const char *s);
/* s made safe for an unquoted field (key=%s), logfmt's way: s itself when
 * it is one plain word (printable ASCII, no blank, '"' or '='), else s
 * quoted, each '"' in it as '\'' ("a b" for a b, "" for the empty string),
 * from the same ring as baton_log_q. So a value with a blank (a path, a
 * URI, a library's error) reads as one field, in text and in JSON, and a
 * line whose values are plain words is what it was. */
const char *baton_log_v(const char *s);

/* A line of a library's own log through the same writer:
 * "lib=LIB src=SRC msg=\"MSG\"" (src, e.g. the function or facility that
 * logged, may be NULL). Repeats are collapsed: one line per kind of message
 * (its text with digits ignored) per 5 s; the next line of that kind after
 * that says how many were left out, suppressed=N. Thread-safe: libraries
 * log from their own threads. */
void baton_log_lib(baton_log_level_t lvl, const char *lib, const char *src, const char *msg);
/* A librdkafka log line (its log callback's level, facility and text):
 * syslog levels mapped, 0-3 error, 4 warn, 5-6 info, 7 debug. */
void baton_log_rdkafka(int level, const char *fac, const char *buf);
/* 1: library lines are dropped (batonctl without --verbose). */
void baton_log_lib_quiet(int quiet);

#define BATON_LOG(lvl, ...)                  \
    do {                                     \
        if (!baton_log_on(lvl))              \
            break;                           \
        baton_log_write((lvl), __VA_ARGS__); \
    } while (0)

#define BLOG_DEBUG(...) BATON_LOG(BATON_LOG_DEBUG, __VA_ARGS__)
#define BLOG_INFO(...) BATON_LOG(BATON_LOG_INFO, __VA_ARGS__)
#define BLOG_WARN(...) BATON_LOG(BATON_LOG_WARN, __VA_ARGS__)
#define BLOG_ERROR(...) BATON_LOG(BATON_LOG_ERROR, __VA_ARGS__)

#endif
