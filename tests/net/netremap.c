/* netremap: an LD_PRELOAD library for the chaos harness (issue 18) that
 * sends a process's TCP connects for given IPv4 addresses to others:
 *
 *   BATON_NET_REMAP=127.0.0.1:9092=127.0.0.1:40001[,FROM=TO...]
 *
 * A Kafka client learns its brokers' addresses from the cluster's metadata,
 * not from its configuration, so a per-process proxy in front of a broker
 * can only be reached by rewriting the address it connects to. The harness
 * preloads this into a worker so its broker connections go through that
 * worker's own netproxy. Everything else connects unchanged. A malformed
 * variable is reported once on stderr and ignored. Test infrastructure:
 * built by CMake, never installed. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define MAX_MAP 32

static struct {
    struct in_addr from_ip, to_ip;
    in_port_t from_port, to_port;
} map[MAX_MAP];
static int nmap;
static pthread_once_t once = PTHREAD_ONCE_INIT;
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
static connect_fn real_connect;

static int parse_addr(const char *s, size_t len, struct in_addr *ip, in_port_t *port) {
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *colon = strrchr(buf, ':'), *end;
    if (!colon)
        return -1;
    *colon = 0;
    long p = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || p <= 0 || p > 65535 || inet_pton(AF_INET, buf, ip) != 1)
        return -1;
    *port = htons((uint16_t)p);
    return 0;
}

static void load(void) {
    /* POSIX leaves dlsym's object-to-function conversion to the platform. */
    void *sym = dlsym(RTLD_NEXT, "connect");
    memcpy(&real_connect, &sym, sizeof real_connect);
    const char *env = getenv("BATON_NET_REMAP");
    if (!env || !*env)
        return;
    for (const char *p = env; *p;) {
        const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (nmap == MAX_MAP || !eq ||
            parse_addr(p, (size_t)(eq - p), &map[nmap].from_ip, &map[nmap].from_port) < 0 ||
            parse_addr(eq + 1, (size_t)(end - eq - 1), &map[nmap].to_ip, &map[nmap].to_port) < 0) {
            fprintf(stderr,
                    "netremap: ignoring BATON_NET_REMAP='%s': want IP:PORT=IP:PORT[,...] "
                    "(at most %d)\n",
                    env, MAX_MAP);
            nmap = 0;
            return;
        }
        nmap++;
        p = comma ? comma + 1 : end;
    }
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    pthread_once(&once, load);
    if (!real_connect)
        return -1;
    if (addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, addr, sizeof sin);
        for (int i = 0; i < nmap; i++) {
            if (sin.sin_addr.s_addr == map[i].from_ip.s_addr && sin.sin_port == map[i].from_port) {
                sin.sin_addr = map[i].to_ip;
                sin.sin_port = map[i].to_port;
                return real_connect(fd, (const struct sockaddr *)&sin, sizeof sin);
            }
        }
    }
    return real_connect(fd, addr, len);
}
