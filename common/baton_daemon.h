/* baton_daemon.h: what baton-coordinator and baton-worker do alike between
 * parsing their settings and running: check the shared settings (log level
 * and format, metrics address), then start logging, failpoints, signal
 * handling and the /metrics endpoint. Linked only into the daemons. */
#ifndef BATON_DAEMON_H
#define BATON_DAEMON_H

#include "baton_metrics_http.h"

typedef struct {
    const char *log_level;    /* "debug", "info", "warn", "error" */
    const char *log_format;   /* "text" or "json" */
    const char *metrics_addr; /* HOST:PORT, or NULL for no endpoint */
} baton_daemon_opts_t;

/* Exits 2 with a message naming the flag if a shared setting is bad. */
void baton_daemon_check(const char *prog, const baton_daemon_opts_t *o);

/* Starts logging as (prog, id), failpoints, SIGTERM/SIGINT/SIGHUP handling
 * and, with metrics_addr, the /metrics endpoint. Returns BATON_EXIT_OK with
 * *stop_fd and *metrics (NULL without an endpoint; stop it with
 * baton_metrics_server_stop) set, or the exit code to leave with (the
 * message is on stderr). Call from the main thread, once. */
int baton_daemon_start(const char *prog, const char *id, const baton_daemon_opts_t *o, int *stop_fd,
                       baton_metrics_server_t **metrics);

#endif
