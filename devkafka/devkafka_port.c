/* devkafka_port.c: the relay of devkafka_port.h.
 *
 * One thread accepts; each connection gets a detached thread that copies
 * both ways with poll() until either side closes, then closes both. The
 * relay uses accept4(), not accept(): devkafka_guard.c follows the sockets
 * accept() returns as the mock's own connections. The threads end with the
 * process (the mock's clients are on loopback and few). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include "devkafka_port.h"

#include "baton_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sockaddr_in relay_target;

typedef struct {
    int client, broker;
} relay_pair_t;

/* Copies what is readable on from to to; 0 on end of stream or error. */
static int relay_copy(int from, int to) {
    char buf[65536];
    ssize_t n = read(from, buf, sizeof(buf));
    if (n <= 0)
        return 0;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        off += w;
    }
    return 1;
}

static void *relay_conn_main(void *arg) {
    relay_pair_t pr = *(relay_pair_t *)arg;
    free(arg);
    struct pollfd p[2] = {{.fd = pr.client, .events = POLLIN}, {.fd = pr.broker, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && !relay_copy(pr.client, pr.broker))
            break;
        if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !relay_copy(pr.broker, pr.client))
            break;
    }
    close(pr.client);
    close(pr.broker);
    return NULL;
}

static void *relay_accept_main(void *arg) {
    int lfd = (int)(intptr_t)arg;
    for (;;) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
                if (errno == EMFILE || errno == ENFILE)
                    usleep(100000);
                continue;
            }
            BLOG_ERROR("event=relay_stopped error=\"accept: %s\"", baton_log_q(strerror(errno)));
            return NULL;
        }
        int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (b < 0 || connect(b, (struct sockaddr *)&relay_target, sizeof(relay_target)) != 0) {
            BLOG_WARN("event=relay_connect_failed error=\"%s\"", baton_log_q(strerror(errno)));
            if (b >= 0)
                close(b);
            close(c);
            continue;
        }
        int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        relay_pair_t *pr = malloc(sizeof(*pr));
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (!pr ||
            (*pr = (relay_pair_t){c, b}, pthread_create(&t, &at, relay_conn_main, pr)) != 0) {
            free(pr);
            close(c);
            close(b);
        }
        pthread_attr_destroy(&at);
    }
}

int devkafka_port_start(int port, const char *target, char *errstr, size_t n) {
    char host[64];
    int tport = 0;
    const char *colon = strrchr(target, ':');
    if (!colon || (size_t)(colon - target) >= sizeof(host) ||
        sscanf(colon + 1, "%d", &tport) != 1) {
        snprintf(errstr, n, "cannot relay to '%s'", target);
        return -1;
    }
    memcpy(host, target, (size_t)(colon - target));
    host[colon - target] = 0;
    relay_target = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)tport)};
    if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host,
                  &relay_target.sin_addr) != 1) {
        snprintf(errstr, n, "cannot relay to '%s' (not an IPv4 address)", target);
        return -1;
    }
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lfd, 64) != 0) {
        snprintf(errstr, n, "--port %d: cannot listen on 127.0.0.1:%d: %s", port, port,
                 strerror(errno));
        if (lfd >= 0)
            close(lfd);
        return -1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, relay_accept_main, (void *)(intptr_t)lfd) != 0) {
        snprintf(errstr, n, "--port %d: cannot start the relay thread", port);
        close(lfd);
        return -1;
    }
    pthread_detach(t);
    return 0;
}
