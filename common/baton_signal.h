/* baton_signal.h: SIGTERM/SIGINT as a flag plus a readable descriptor, so a
 * program's poll loop wakes up and leaves gracefully. SIGPIPE is ignored. */
#ifndef BATON_SIGNAL_H
#define BATON_SIGNAL_H

/* Installs the handlers; returns a descriptor that becomes readable on
 * SIGTERM or SIGINT, or -1 on failure. Call once, from the main thread. */
int baton_signal_init(void);
/* 1 once SIGTERM or SIGINT arrived. Async-signal-safe. */
int baton_signal_stop_requested(void);

#endif
