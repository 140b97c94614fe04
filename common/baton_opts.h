/* baton_opts.h: command-line conventions shared by baton's programs: exit
 * code 2 with usage for bad flags, and parsers for the common numeric flags
 * that name the flag in their error. */
#ifndef BATON_OPTS_H
#define BATON_OPTS_H

#include <stddef.h>
#include <stdint.h>

#define BATON_EXIT_OK 0
#define BATON_EXIT_FAILURE 1
#define BATON_EXIT_USAGE 2

/* Parses flag value `val` of `--flag` as an integer in [min, max]. On error
 * prints "PROG: --flag: 'val' is not an integer in [min, max]" and exits 2. */
int64_t baton_opt_int(const char *prog, const char *flag, const char *val, int64_t min,
                      int64_t max);

/* After getopt_long (opterr = 0) returned '?' or an unexpected value:
 * writes what was wrong with the word it stopped at into out: "option
 * '--partition' needs a value", "option '--json' takes no value",
 * "unknown option '--nope'" or "unknown option '-x'". */
void baton_opt_bad_message(int argc, char **argv, char *out, size_t n);
/* baton_usage_error with that message: exits 2. */
void baton_usage_bad_option(const char *prog, int argc, char **argv) __attribute__((noreturn));

/* Prints "PROG VERSION" (baton_version_str(): the project version, or what
 * `git describe` says of a checkout) on stdout, then exits 0. */
void baton_version_exit(const char *prog) __attribute__((noreturn));

/* Prints "PROG: msg" and a hint to use --help to stderr, then exits 2. */
void baton_usage_error(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#endif
