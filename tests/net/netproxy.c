/* netproxy: the chaos harness's cuttable loopback TCP proxy (issue 18).
 *
 *   netproxy --control FILE --route LPORT:HOST:PORT [--route ...] [--seed S]
 *            [--dial-retry-ms MS]
 *
 * Listens on 127.0.0.1:LPORT for each route and forwards every accepted
 * connection to HOST:PORT. All routes of one process share one mode, read
 * from FILE on SIGHUP. FILE holds one line, "N MODE [ARGS]", N a number the
 * proxy echoes once the mode is in force ("event=mode n=N ..." on stdout),
 * so the harness knows when a cut began:
 *   pass                  forward as fast as possible (the start mode)
 *   cut both|up|down      stop forwarding both ways, client to server (up)
 *                         or server to client (down). Nothing is closed and
 *                         nothing is read: bytes wait in the socket buffers
 *                         and the peers see silence -- no RST, no FIN -- as
 *                         behind a dead switch. A connection accepted while
 *                         "up" is cut is not dialled until the cut heals.
 *   delay MS JITTER       every chunk is held MS plus a uniform draw in
 *                         [0, JITTER] milliseconds, in order, both ways
 * A connection the target refuses is reset (as the refused SYN would have
 * been), after retrying the dial for --dial-retry-ms (default 0): a peer
 * that connects the moment its server was elected, before it listens, then
 * waits as its own connect retries would have, instead of seeing a close.
 * A heal is "pass". Each mode line logged carries the wall-clock ms of the
 * last bytes forwarded each way (last_up_ms, last_down_ms): a cut's
 * last_down_ms is the last answer the client can have had. Exits on SIGTERM.
 * Test infrastructure: built by CMake, never installed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUTES 16
#define MAX_CONNS 256
#define QUEUE_CAP (1 << 20) /* bytes held per direction before reading stops */
#define CHUNK 16384

typedef struct chunk {
    struct chunk *next;
    int64_t release_ms;
    size_t len, off;
    char data[];
} chunk_t;

typedef struct {
    chunk_t *head, *tail;
    size_t bytes;
    int64_t last_release;
    int src_eof; /* the source sent FIN: pass it on once drained */
    int shut;    /* FIN passed on */
} queue_t;

typedef struct {
    int lfd;
    char host[64];
    int port, lport;
} route_t;

typedef struct {
    int used;
    int cfd, sfd; /* client side, server side (-1 until dialled) */
    int connecting;
    int64_t dial_until, redial_at; /* --dial-retry-ms: refused dials retried until */
    int route;
    queue_t up, down; /* up: client to server */
} conn_t;

enum { MODE_PASS, MODE_CUT, MODE_DELAY };
static struct {
    int kind;
    int cut_up, cut_down;
    int delay_ms, jitter_ms;
} mode;

static route_t routes[MAX_ROUTES];
static int nroutes;
static conn_t conns[MAX_CONNS];
static int got_hup, got_term;
static const char *control_path;
static uint64_t rng = 88172645463325252ull;
static int64_t last_up_ms, last_down_ms;
static int dial_retry_ms;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...) {
    va_list ap;
    printf("ms=%lld ", (long long)now_ms());
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void queue_free(queue_t *q) {
    while (q->head) {
        chunk_t *c = q->head;
        q->head = c->next;
        free(c);
    }
    memset(q, 0, sizeof *q);
}

/* Closes both sides; with rst, the client's with a reset (SO_LINGER 0), as
 * a refused connect would have answered it. */
static void conn_close_how(conn_t *c, int rst) {
    if (c->cfd >= 0 && rst) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->sfd >= 0)
        close(c->sfd);
    queue_free(&c->up);
    queue_free(&c->down);
    memset(c, 0, sizeof *c);
    c->cfd = c->sfd = -1;
}

static void conn_close(conn_t *c) { conn_close_how(c, 0); }

/* The target refused (or the dial failed): retry until dial_until, then
 * reset the client. */
static void dial_failed(conn_t *c) {
    if (c->sfd >= 0)
        close(c->sfd);
    c->sfd = -1;
    c->connecting = 0;
    int64_t now = now_ms();
    if (now + 50 <= c->dial_until)
        c->redial_at = now + 50;
    else
        conn_close_how(c, 1);
}

/* Parses "N MODE [ARGS]" from the control file; 0 on success. */
static int read_control(void) {
    FILE *f = fopen(control_path, "r");
    if (!f) {
        say("event=control_error error=\"cannot open %s: %s\"", control_path, strerror(errno));
        return -1;
    }
    char line[256] = "", word[32] = "", arg[32] = "";
    long n = 0;
    int a = 0, b = 0;
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    int k = ok ? sscanf(line, "%ld %31s %31s %d", &n, word, arg, &b) : 0;
    if (k >= 2 && strcmp(word, "pass") == 0) {
        mode.kind = MODE_PASS;
        mode.cut_up = mode.cut_down = 0;
    } else if (k >= 3 && strcmp(word, "cut") == 0 &&
               (!strcmp(arg, "both") || !strcmp(arg, "up") || !strcmp(arg, "down"))) {
        mode.kind = MODE_CUT;
        mode.cut_up = strcmp(arg, "down") != 0;
        mode.cut_down = strcmp(arg, "up") != 0;
    } else if (k == 4 && strcmp(word, "delay") == 0 && sscanf(arg, "%d", &a) == 1 && a >= 0 &&
               a <= 60000 && b >= 0 && b <= 60000) {
        mode.kind = MODE_DELAY;
        mode.cut_up = mode.cut_down = 0;
        mode.delay_ms = a;
        mode.jitter_ms = b;
    } else {
        line[strcspn(line, "\n")] = 0;
        say("event=control_error error=\"bad control line '%s' (want: N pass | N cut "
            "both|up|down | N delay MS JITTER)\"",
            line);
        return -1;
    }
    say("event=mode n=%ld mode=%s cut_up=%d cut_down=%d delay_ms=%d jitter_ms=%d last_up_ms=%lld "
        "last_down_ms=%lld",
        n, word, mode.cut_up, mode.cut_down, mode.kind == MODE_DELAY ? mode.delay_ms : 0,
        mode.kind == MODE_DELAY ? mode.jitter_ms : 0, (long long)last_up_ms,
        (long long)last_down_ms);
    return 0;
}

static int parse_route(const char *s, route_t *r) {
    char host[64];
    int lport, port;
    if (sscanf(s, "%d:%63[^:]:%d", &lport, host, &port) != 3 || lport <= 0 || lport > 65535 ||
        port <= 0 || port > 65535)
        return -1;
    struct in_addr ia;
    if (inet_pton(AF_INET, host, &ia) != 1)
        return -1;
    snprintf(r->host, sizeof r->host, "%s", host);
    r->lport = lport;
    r->port = port;
    return 0;
}

static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 64) < 0 ||
        set_nonblock(fd) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Starts a non-blocking connect to the route's target. */
static void dial(conn_t *c) {
    route_t *r = &routes[c->route];
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    c->redial_at = 0;
    if (fd < 0 || set_nonblock(fd) < 0) {
        if (fd >= 0)
            close(fd);
        conn_close_how(c, 1);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->port)};
    inet_pton(AF_INET, r->host, &sa.sin_addr);
    c->sfd = fd;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
        c->connecting = 0;
    else if (errno == EINPROGRESS)
        c->connecting = 1;
    else
        dial_failed(c); /* the target is down */
}

static void do_accept(int ri) {
    for (;;) {
        int fd = accept(routes[ri].lfd, NULL, NULL), one = 1;
        if (fd < 0)
            return;
        conn_t *c = NULL;
        for (int i = 0; i < MAX_CONNS && !c; i++)
            if (!conns[i].used)
                c = &conns[i];
        if (!c || set_nonblock(fd) < 0) {
            say("event=accept_refused reason=%s", c ? "fcntl" : "too_many_connections");
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        memset(c, 0, sizeof *c);
        c->used = 1;
        c->cfd = fd;
        c->sfd = -1;
        c->route = ri;
        c->dial_until = now_ms() + dial_retry_ms;
        say("event=accepted route=127.0.0.1:%d->%s:%d dial=%s", routes[ri].lport, routes[ri].host,
            routes[ri].port, mode.cut_up ? "deferred" : "now");
        if (!mode.cut_up)
            dial(c);
    }
}

/* Reads what src has into q (unless this direction is cut or q is full).
 * Returns -1 if the connection is to be closed. */
static int pump_in(int src, queue_t *q, int cut) {
    if (cut || q->src_eof || q->bytes >= QUEUE_CAP)
        return 0;
    for (;;) {
        chunk_t *ch = malloc(sizeof *ch + CHUNK);
        if (!ch)
            return -1;
        ssize_t n = read(src, ch->data, CHUNK);
        if (n <= 0) {
            free(ch);
            if (n == 0) {
                q->src_eof = 1;
                return 0;
            }
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        }
        int64_t rel = now_ms();
        if (mode.kind == MODE_DELAY)
            rel += mode.delay_ms +
                   (int64_t)(mode.jitter_ms ? next_rand() % (uint64_t)(mode.jitter_ms + 1) : 0);
        if (rel < q->last_release)
            rel = q->last_release; /* in order */
        q->last_release = rel;
        ch->release_ms = rel;
        ch->len = (size_t)n;
        ch->off = 0;
        ch->next = NULL;
        if (q->tail)
            q->tail->next = ch;
        else
            q->head = ch;
        q->tail = ch;
        q->bytes += (size_t)n;
        if (q->bytes >= QUEUE_CAP)
            return 0;
    }
}

/* Writes due chunks of q to dst. Returns -1 if the connection is to be
 * closed; sets *wait_ms to the time until the next chunk is due. */
static int pump_out(int dst, queue_t *q, int cut, int64_t *last, int *want_out, int64_t *wait_ms) {
    if (cut)
        return 0;
    int64_t now = now_ms();
    while (q->head) {
        chunk_t *ch = q->head;
        if (ch->release_ms > now) {
            if (ch->release_ms - now < *wait_ms)
                *wait_ms = ch->release_ms - now;
            return 0;
        }
        ssize_t n = write(dst, ch->data + ch->off, ch->len - ch->off);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                *want_out = 1;
                return 0;
            }
            return -1;
        }
        *last = now;
        ch->off += (size_t)n;
        q->bytes -= (size_t)n;
        if (ch->off < ch->len) {
            *want_out = 1;
            return 0;
        }
        q->head = ch->next;
        if (!q->head)
            q->tail = NULL;
        free(ch);
    }
    if (q->src_eof && !q->shut) {
        shutdown(dst, SHUT_WR);
        q->shut = 1;
    }
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: netproxy --control FILE --route LPORT:HOST:PORT [--route ...] [--seed S]\n"
               "                [--dial-retry-ms MS]\n"
               "  control file: one line 'N pass' | 'N cut both|up|down' | 'N delay MS JITTER',\n"
               "  read on SIGHUP. HOST is an IPv4 address; listens on 127.0.0.1:LPORT.\n");
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "netproxy: %s needs a value\n", argv[i]);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(argv[i - 1], "--control")) {
            control_path = v;
        } else if (!strcmp(argv[i - 1], "--dial-retry-ms")) {
            char *end;
            long ms = strtol(v, &end, 10);
            if (*end || end == v || ms < 0 || ms > 600000) {
                fprintf(stderr, "netproxy: --dial-retry-ms: '%s' is not 0-600000\n", v);
                return 2;
            }
            dial_retry_ms = (int)ms;
        } else if (!strcmp(argv[i - 1], "--seed")) {
            char *end;
            unsigned long long s = strtoull(v, &end, 10);
            if (*end || end == v) {
                fprintf(stderr, "netproxy: --seed: '%s' is not a number\n", v);
                return 2;
            }
            rng ^= s * 0x9E3779B97F4A7C15ull;
            if (!rng)
                rng = 1;
        } else if (!strcmp(argv[i - 1], "--route")) {
            if (nroutes == MAX_ROUTES || parse_route(v, &routes[nroutes]) < 0) {
                fprintf(stderr,
                        "netproxy: --route: '%s' is not LPORT:IPV4:PORT (at most %d routes)\n", v,
                        MAX_ROUTES);
                return 2;
            }
            nroutes++;
        } else {
            fprintf(stderr, "netproxy: unknown argument '%s'\n", argv[i - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (!control_path || !nroutes) {
        fprintf(stderr, "netproxy: --control and at least one --route are required\n");
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* Signals arrive as reads on a signalfd polled with the sockets. (With
     * a handler and ppoll, a poll that always had an event ready returned
     * without ever delivering a pending SIGHUP.) */
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, NULL);
    int sigfd = signalfd(-1, &block, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd < 0) {
        perror("netproxy: signalfd");
        return 1;
    }
    for (int i = 0; i < MAX_CONNS; i++)
        conns[i].cfd = conns[i].sfd = -1;
    for (int r = 0; r < nroutes; r++) {
        routes[r].lfd = listen_on(routes[r].lport);
        if (routes[r].lfd < 0) {
            fprintf(stderr, "netproxy: cannot listen on 127.0.0.1:%d: %s\n", routes[r].lport,
                    strerror(errno));
            return 1;
        }
        say("event=listening route=127.0.0.1:%d->%s:%d", routes[r].lport, routes[r].host,
            routes[r].port);
    }
    struct pollfd pfd[1 + MAX_ROUTES + 2 * MAX_CONNS];
    int owner[1 + MAX_ROUTES + 2 * MAX_CONNS]; /* conn, -1 - route, INT_MIN: signals */
    while (!got_term) {
        if (got_hup) {
            got_hup = 0;
            int was_cut_up = mode.cut_up;
            read_control();
            if (was_cut_up && !mode.cut_up)
                for (int i = 0; i < MAX_CONNS; i++)
                    if (conns[i].used && conns[i].sfd < 0)
                        dial(&conns[i]);
        }
        int64_t wait_ms = 200;
        int n = 0;
        pfd[n] = (struct pollfd){.fd = sigfd, .events = POLLIN};
        owner[n++] = INT_MIN;
        for (int r = 0; r < nroutes; r++) {
            pfd[n] = (struct pollfd){.fd = routes[r].lfd, .events = POLLIN};
            owner[n++] = -1 - r;
        }
        for (int i = 0; i < MAX_CONNS; i++) {
            conn_t *c = &conns[i];
            if (!c->used)
                continue;
            if (c->sfd < 0 && c->redial_at && !mode.cut_up) {
                int64_t now = now_ms();
                if (c->redial_at <= now)
                    dial(c);
                else if (c->redial_at - now < wait_ms)
                    wait_ms = c->redial_at - now;
                if (!c->used)
                    continue;
            }
            int out_c = 0, out_s = 0;
            if (c->sfd >= 0 && !c->connecting &&
                (pump_out(c->sfd, &c->up, mode.cut_up, &last_up_ms, &out_s, &wait_ms) < 0 ||
                 pump_out(c->cfd, &c->down, mode.cut_down, &last_down_ms, &out_c, &wait_ms) < 0)) {
                conn_close(c);
                continue;
            }
            if (c->up.shut && c->down.shut) {
                conn_close(c);
                continue;
            }
            short ec = out_c ? POLLOUT : 0, es = out_s ? POLLOUT : 0;
            if (!mode.cut_up && !c->up.src_eof && c->up.bytes < QUEUE_CAP)
                ec |= POLLIN;
            if (c->sfd >= 0 && c->connecting)
                es |= POLLOUT;
            else if (c->sfd >= 0 && !mode.cut_down && !c->down.src_eof && c->down.bytes < QUEUE_CAP)
                es |= POLLIN;
            /* A side nothing is wanted of is not polled: its POLLHUP would
             * end every poll at once (a spin, e.g. while a closed peer's
             * last bytes wait out a delay, or on a cut side). */
            pfd[n] = (struct pollfd){.fd = ec ? c->cfd : -1, .events = ec};
            owner[n++] = i;
            if (c->sfd >= 0) {
                pfd[n] = (struct pollfd){.fd = es ? c->sfd : -1, .events = es};
                owner[n++] = i;
            }
        }
        if (wait_ms < 0)
            wait_ms = 0;
        int k = poll(pfd, (nfds_t)n, (int)wait_ms);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            perror("netproxy: poll");
            return 1;
        }
        for (int j = 0; j < n; j++) {
            if (!pfd[j].revents)
                continue;
            if (owner[j] == INT_MIN) {
                struct signalfd_siginfo si;
                while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
                    if (si.ssi_signo == SIGHUP)
                        got_hup = 1;
                    else
                        got_term = 1;
                }
                continue;
            }
            if (owner[j] < 0) {
                do_accept(-1 - owner[j]);
                continue;
            }
            conn_t *c = &conns[owner[j]];
            if (!c->used)
                continue;
            if (pfd[j].fd == c->sfd && c->connecting) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err) {
                    dial_failed(c);
                    continue;
                }
                c->connecting = 0;
                continue;
            }
            int rc = pfd[j].fd == c->cfd ? pump_in(c->cfd, &c->up, mode.cut_up)
                                         : pump_in(c->sfd, &c->down, mode.cut_down);
            if (rc < 0)
                conn_close(c);
        }
    }
    say("event=exit");
    return 0;
}
