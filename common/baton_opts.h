/* baton_opts.h: command-line conventions shared by baton's programs: exit
 * code 2 with usage for bad flags, and parsers for the common numeric flags
 * that name the flag in their error. */
#ifndef BATON_OPTS_H
#define BATON_OPTS_H

#include <stdint.h>

#define BATON_EXIT_OK 0
#define BATON_EXIT_FAILURE 1
#define BATON_EXIT_USAGE 2

/* Parses flag value `val` of `--flag` as an integer in [min, max]. On error
 * prints "PROG: --flag: 'val' is not an integer in [min, max]" and exits 2. */
int64_t baton_opt_int(const char *prog, const char *flag, const char *val, int64_t min,
                      int64_t max);

/* Prints "PROG: msg" and a hint to use --help to stderr, then exits 2. */
void baton_usage_error(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#endif
