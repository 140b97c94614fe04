/* baton_log.h: the logging facade. One line per event on stderr, key=value
 * fields: "ts=... level=info proc=baton-worker id=w1 event=claimed partition=3".
 * Callers write the event's fields as the format; arguments are not
 * evaluated when the level is filtered out. Thread-safe. */
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
        if ((lvl) < baton_log_level)         \
            break;                           \
        baton_log_write((lvl), __VA_ARGS__); \
    } while (0)

#define BLOG_DEBUG(...) BATON_LOG(BATON_LOG_DEBUG, __VA_ARGS__)
#define BLOG_INFO(...) BATON_LOG(BATON_LOG_INFO, __VA_ARGS__)
#define BLOG_WARN(...) BATON_LOG(BATON_LOG_WARN, __VA_ARGS__)
#define BLOG_ERROR(...) BATON_LOG(BATON_LOG_ERROR, __VA_ARGS__)

#endif
