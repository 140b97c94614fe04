/* baton_signal.h: a daemon's signals. SIGTERM/SIGINT set a flag and make a
 * descriptor readable, so a program's poll loop wakes up and leaves
 * gracefully; for the daemons SIGHUP is accepted and logged as a no-op
 * (logs go to stderr, there is no file to reopen), where its default action
 * would kill the process; SIGPIPE is ignored. A shutdown deadline bounds
 * the graceful leave. */
#ifndef BATON_SIGNAL_H
#define BATON_SIGNAL_H

/* Installs the SIGTERM/SIGINT handlers and ignores SIGPIPE. Returns a
 * descriptor that becomes readable on SIGTERM or SIGINT, or -1 on failure.
 * Call once, from the main thread. */
int baton_signal_init(void);
/* Daemons: SIGHUP is logged (event=sighup action=none) and otherwise
 * ignored, by a thread that waits for it; SIGHUP is blocked in the calling
 * thread and so in every thread created after: call from the main thread
 * before any other thread exists. Interactive tools (batonctl watch) keep
 * SIGHUP's default, so a closed terminal ends them. Returns 0, or -1 if the
 * thread could not start (SIGHUP is then ignored silently). */
int baton_signal_hup_log(void);
/* 1 once SIGTERM or SIGINT arrived. Async-signal-safe. */
int baton_signal_stop_requested(void);

/* Bounds the graceful stop: ms milliseconds after the first SIGTERM or
 * SIGINT, if the process is still running, logs event=shutdown_timeout and
 * ends it with _exit(1) (no flushing or cleanup: what was not written is
 * read again by the next owner, and our ephemeral nodes go when the session
 * expires). what names the phase in the log. Call once, from the main
 * thread, after baton_signal_init and before other threads exist. Returns 0,
 * or -1 if the watchdog thread could not start. */
int baton_signal_stop_deadline(int ms, const char *what);

#endif
