/* baton_failpoint.h: named fault-injection points in the shipped binaries.
 *
 * BATON_FAILPOINTS="name=[SKIP:]ACTION[;name=...]" arms a point: ACTION fires
 * exactly once, on hit SKIP+1 of that point. Actions: stop (SIGSTOP to
 * itself), abort, exit (exit code 99), sleep-MS. Unarmed, a point costs one
 * predictable branch. */
#ifndef BATON_FAILPOINT_H
#define BATON_FAILPOINT_H

#include <stddef.h>

extern int baton_failpoints_armed;

/* Parses the environment variable BATON_FAILPOINTS. Returns 0, or
 * BATON_INVALID with a message naming the bad entry. */
int baton_failpoints_init(char *errstr, size_t errstr_size);
/* Parses a spec string (the same syntax); replaces earlier ones. */
int baton_failpoints_parse(const char *spec, char *errstr, size_t errstr_size);
/* Called at a point; fires its action when due. Thread-safe. */
void baton_failpoint_hit(const char *name);
/* Returns how many times name was hit (for tests). */
int baton_failpoint_hits(const char *name);

#define BATON_FAILPOINT(name)                            \
    do {                                                 \
        if (__builtin_expect(baton_failpoints_armed, 0)) \
            baton_failpoint_hit(name);                   \
    } while (0)

#endif
