/* baton_log.c: writes one key=value line per event to stderr. */
#include "baton_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

baton_log_level_t baton_log_level = BATON_LOG_INFO;
static char log_proc[64] = "baton";
static char log_id[128] = "";

void baton_log_init(const char *proc, const char *id) {
    snprintf(log_proc, sizeof(log_proc), "%s", proc ? proc : "baton");
    snprintf(log_id, sizeof(log_id), "%s", id ? id : "");
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
    int n = snprintf(line, sizeof(line), "ts=%s.%03ldZ level=%s proc=%s%s%s ",
                     when, ts.tv_nsec / 1000000, names[lvl], log_proc,
                     log_id[0] ? " id=" : "", log_id);
    if (n < 0 || (size_t)n >= sizeof(line))
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs of a whole line keeps lines from several threads apart. */
    flockfile(stderr);
    fputs(line, stderr);
    fputc('\n', stderr);
    funlockfile(stderr);
}
