/* baton_opts.c: shared flag parsing helpers. */
#include "baton_opts.h"

#include "baton_util.h"
#include "baton/baton.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void baton_version_exit(const char *prog) {
    printf("%s %s\n", prog, baton_version_str());
    exit(BATON_EXIT_OK);
}

void baton_opt_bad_message(int argc, char **argv, char *out, size_t n) {
    /* argv[optind - 1] is the word getopt_long stopped at. For a long
     * option, optopt is 0 when it is unknown (or an ambiguous prefix) and
     * the option's value when its argument is missing or one was given to
     * an option that takes none; for a short one, optopt is its character. */
    const char *word = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if (strncmp(word, "--", 2) == 0) {
        int len = (int)strcspn(word, "=");
        if (optopt != 0 && word[len] == 0)
            snprintf(out, n, "option '%s' needs a value", word);
        else if (optopt != 0)
            snprintf(out, n, "option '%.*s' takes no value", len, word);
        else
            snprintf(out, n, "unknown option '%.*s'", len, word);
    } else if (optopt > 0x20 && optopt < 0x7f) {
        snprintf(out, n, "unknown option '-%c'", optopt);
    } else {
        snprintf(out, n, "unknown option '%s'", word);
    }
}

void baton_usage_bad_option(const char *prog, int argc, char **argv) {
    char why[256];
    baton_opt_bad_message(argc, argv, why, sizeof(why));
    baton_usage_error(prog, "%s", why);
}
