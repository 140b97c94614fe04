/* baton_metrics_http.c: GET /metrics over libmicrohttpd. The listening
 * socket is ours (so a bind failure has a clear message and the address is
 * exactly the one given); libmicrohttpd's internal thread accepts and
 * answers, rendering the registry under its mutex. */
#include "baton_metrics_http.h"

#include "baton_err.h"
#include "baton_metrics.h"
#include "baton_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct baton_metrics_server_s {
    struct MHD_Daemon *d;
    int fd; /* the listening socket: libmicrohttpd's once the server started */
    char addr[300];
};

/* Splits addr into host and port; 0 or BATON_INVALID. */
static int addr_split(const char *addr, char *host, size_t hn, char *port, size_t pn, char *errstr,
                      size_t n) {
    if (!addr || !*addr)
        return baton_seterr(errstr, n, BATON_INVALID, "empty address (expected HOST:PORT)");
    const char *colon, *h = addr;
    size_t hl;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':')
            return baton_seterr(errstr, n, BATON_INVALID, "'%s' is not [IPV6]:PORT", addr);
        h = addr + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon || strchr(addr, ':') != colon)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "'%s' is not HOST:PORT (IPv6 literals go in brackets)", addr);
        hl = (size_t)(colon - addr);
    }
    if (hl == 0 || hl >= hn)
        return baton_seterr(errstr, n, BATON_INVALID, "'%s': missing or too long host", addr);
    const char *p = colon + 1;
    char *end;
    long v = strtol(p, &end, 10);
    if (!*p || *end || *p == '-' || *p == '+' || *p == ' ' || v < 0 || v > 65535 || strlen(p) >= pn)
        return baton_seterr(errstr, n, BATON_INVALID, "'%s': port '%s' is not in 0..65535", addr,
                            p);
    memcpy(host, h, hl);
    host[hl] = 0;
    snprintf(port, pn, "%ld", v);
    return BATON_OK;
}

int baton_metrics_addr_check(const char *addr, char *errstr, size_t n) {
    char host[256], port[16];
    return addr_split(addr, host, sizeof(host), port, sizeof(port), errstr, n);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls) {
    (void)cls, (void)version, (void)upload, (void)upload_size, (void)req_cls;
    struct MHD_Response *r;
    unsigned status;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static const char msg[] = "only GET /metrics\n";
        r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/metrics") != 0) {
        static const char msg[] = "not found: try /metrics\n";
        r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_NOT_FOUND;
    } else {
        size_t len = 0;
        char *body = baton_metrics_render(&len);
        r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        status = MHD_HTTP_OK;
    }
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

int baton_metrics_server_start(const char *addr, baton_metrics_server_t **out, char *errstr,
                               size_t n) {
    char host[256], port[16];
    int err = addr_split(addr, host, sizeof(host), port, sizeof(port), errstr, n);
    if (err != BATON_OK)
        return err;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai != 0)
        return baton_seterr(errstr, n, BATON_INVALID, "'%s': cannot resolve host '%s': %s", addr,
                            host, gai_strerror(gai));
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        err = baton_seterr(errstr, n, BATON_IO, "'%s': socket: %s", addr, strerror(errno));
        freeaddrinfo(ai);
        return err;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        err = baton_seterr(errstr, n, BATON_IO, "'%s': cannot listen: %s", addr, strerror(errno));
        freeaddrinfo(ai);
        close(fd);
        return err;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char numhost[INET6_ADDRSTRLEN + 1] = "?";
    int bound_port = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &s4->sin_addr, numhost, sizeof(numhost));
            bound_port = ntohs(s4->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &s6->sin6_addr, numhost, sizeof(numhost));
            bound_port = ntohs(s6->sin6_port);
        }
    }
    baton_metrics_server_t *s = xcalloc(1, sizeof(*s));
    s->fd = fd;
    snprintf(s->addr, sizeof(s->addr), ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", numhost,
             bound_port);
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
                            on_request, NULL, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
    if (!s->d) {
        err = baton_seterr(errstr, n, BATON_IO, "'%s': cannot start the HTTP server", addr);
        close(fd);
        free(s);
        return err;
    }
    *out = s;
    return BATON_OK;
}

const char *baton_metrics_server_addr(const baton_metrics_server_t *s) { return s->addr; }

void baton_metrics_server_stop(baton_metrics_server_t *s) {
    if (!s)
        return;
    MHD_stop_daemon(s->d); /* closes the listening socket too, ours or not */
    free(s);
}
