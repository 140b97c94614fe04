/* baton_opts.c: shared flag parsing helpers. */
#include "baton_opts.h"

#include "baton_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int64_t baton_opt_int(const char *prog, const char *flag, const char *val, int64_t min,
                      int64_t max) {
    int64_t v;
    if (baton_parse_i64(val, min, max, &v) != 0)
        baton_usage_error(prog, "--%s: '%s' is not an integer in [%lld, %lld]", flag, val,
                          (long long)min, (long long)max);
    return v;
}

void baton_usage_error(const char *prog, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
    exit(BATON_EXIT_USAGE);
}
