/* baton_metrics_http.h: serves the metrics registry (baton_metrics.h) as
 * Prometheus text on GET /metrics, with libmicrohttpd on its own thread.
 * Linked only into the daemons. */
#ifndef BATON_METRICS_HTTP_H
#define BATON_METRICS_HTTP_H

#include <stddef.h>

typedef struct baton_metrics_server_s baton_metrics_server_t;

/* Checks "HOST:PORT" ("[V6]:PORT" for IPv6 literals; PORT 0..65535, 0 picks
 * a free port). Returns BATON_OK or BATON_INVALID with a message. Syntax
 * only: the host is resolved (and may still fail) in _start. */
int baton_metrics_addr_check(const char *addr, char *errstr, size_t errstr_size);

/* Resolves HOST, binds HOST:PORT only (not every interface) and starts
 * serving. Returns BATON_OK with *out (destroy with _stop), BATON_INVALID
 * for an address that does not parse or resolve, BATON_IO when the bind or
 * the server fails (e.g. the port is in use), with a message naming addr.
 * Call from the main thread after baton_signal_init (the server thread then
 * inherits the signal mask). */
int baton_metrics_server_start(const char *addr, baton_metrics_server_t **out, char *errstr,
                               size_t errstr_size);
/* "HOST:PORT" actually bound (with the chosen port when PORT was 0). */
const char *baton_metrics_server_addr(const baton_metrics_server_t *s);
/* Stops the thread, closes the socket, frees s. NULL is fine. */
void baton_metrics_server_stop(baton_metrics_server_t *s);

#endif
