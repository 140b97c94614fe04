/* child.h: baton-run's command, run as a child in its own session and
 * process group so that stopping it reaches everything it started, and
 * killed with baton-run however baton-run dies (PR_SET_PDEATHSIG, and the
 * guardian of guard.h for the rest of its session). Single-threaded:
 * called from baton-run's main thread only. */
#ifndef BATON_RUN_CHILD_H
#define BATON_RUN_CHILD_H

#include <stdint.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;          /* the command (also its process group id); 0: none */
    int64_t started_ms; /* when it was started */
} run_child_t;

/* Starts path (resolved, see run_child_resolve) with argv (NULL-terminated)
 * and envp (NULL-terminated "K=V") in a new session (so a new process
 * group), announced to the guardian (guard.h) and with PR_SET_PDEATHSIG
 * SIGKILL, with every signal unblocked and at its default action and no
 * descriptor but 0-2 inherited. Returns 0 once the child has its session,
 * or -1 with errstr set (fork failed). The caller's arrays must stay valid
 * only during the call. */
int run_child_start(run_child_t *c, const char *path, char *const argv[], char *const envp[],
                    char *errstr, size_t errstr_size);

/* 1 while a command runs (started and not yet reaped). */
static inline int run_child_running(const run_child_t *c) { return c->pid > 0; }

/* Reaps the command if it exited (and any orphan of its group reparented
 * to baton-run, a child subreaper): returns 1 and *code (its exit status, or
 * 128+N if signal N killed it), or 0 if it still runs (or none runs).
 * Whatever the command left running in its process group is then stopped
 * (SIGTERM, SIGKILL after kill_after_ms): nothing of a finished run
 * outlives it. Blocks only for such leftovers. */
int run_child_reap(run_child_t *c, int *code, int64_t kill_after_ms);

/* Stops the command: sig (SIGTERM, or the signal baton-run got) to its
 * whole process group, then SIGKILL to the group if the command has not
 * exited within kill_after_ms (or once it exited, for whatever of its group
 * is left). Blocks at most kill_after_ms plus the time SIGKILL takes.
 * Returns the command's exit code as run_child_reap does, or -1 if none
 * ran. */
int run_child_stop(run_child_t *c, int sig, int64_t kill_after_ms);

/* The executable that argv0 names: itself if it contains a '/', else the
 * first executable file of that name in $PATH. Returns a heap string, or
 * NULL if none is found. */
char *run_child_resolve(const char *argv0);

/* The exit code of a wait status: the exit status, or 128+signal. */
int run_child_code(int status);

#endif
