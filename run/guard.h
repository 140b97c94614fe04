/* guard.h: baton-run's guardian, so that the command dies with its runner
 * however the runner dies (SIGKILL and the OOM killer included).
 *
 * The guardian is a process forked by baton-run before anything else (no
 * thread yet). It holds the read end of a pipe whose write end only
 * baton-run holds (close-on-exec; a command being started holds it until it
 * has announced itself, see run_guard_announce). Each command announces
 * its session id (the command's pid: it runs in a session of its own) on
 * that pipe before it execs; baton-run says when a command's session is
 * over (run_guard_forget). When baton-run dies, the kernel closes its end
 * and the guardian reads EOF: it SIGKILLs the process group of every
 * command still announced, then every process left in that command's
 * session -- the descendants that moved to another process group, and the
 * orphans baton-run adopted as subreaper, now reparented elsewhere -- until
 * none is left, and exits. A descendant that left the session (setsid) is
 * out of reach. The command also has PR_SET_PDEATHSIG(SIGKILL) (child.c),
 * which covers it alone even without the guardian. */
#ifndef BATON_RUN_GUARD_H
#define BATON_RUN_GUARD_H

#include <stddef.h>
#include <sys/types.h>

/* Forks the guardian. Call before any thread is started. Returns 0, or -1
 * with errstr set (pipe or fork failed). */
int run_guard_start(char *errstr, size_t errstr_size);

/* The write end commands announce themselves on (-1 without a guardian). */
int run_guard_fd(void);

/* In a forked command, before exec: tells the guardian (through fd, from
 * run_guard_fd before the fork) that our session is a command's.
 * Async-signal-safe. */
void run_guard_announce(int fd);

/* The command whose session is sid has finished and its process group was
 * drained: the guardian forgets it. */
void run_guard_forget(pid_t sid);

/* Called with every child pid baton-run reaps: returns 1 (and says so in
 * the log) if it was the guardian, which must never exit before baton-run
 * does; the command is then covered by its PR_SET_PDEATHSIG alone. */
int run_guard_reaped(pid_t pid, int status);

#endif
