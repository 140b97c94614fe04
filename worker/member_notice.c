/* member_notice.c: standby.notice, the release notice (docs/design.md,
 * "Release notices").
 *
 * A graceful leaver's successors wait for ZooKeeper to tell them its claims
 * are gone: one write, committed and announced under load, is most of a hot
 * handoff (docs/benchmarks.md). With a notice address, a member also tells
 * them directly. Every member with standby.notice binds one datagram socket
 * and names it in its member node ("notice"). A standby, when it sets its
 * watch on an owner's member node, reads the address there and subscribes
 * (SUB), then tells it what of its resources it holds ahead (HLD: all it
 * stands by for with notice_holds, none without), and tells it to forget
 * it (UNS) when it leaves. A leaver, once
 * every on_released has returned (each flushes, or hands its unwritten
 * records over: worker.c, leave_hands_over) and before its claims' multi,
 * sends each subscriber the claims it holds (REL). A
 * standby whose claim waits right behind one of them takes it as deleted:
 * the deletion's event, come early (mb_claim_noticed), and for the owner it
 * stands by for also its leave mark's (a promotion without the read,
 * mb_standby_noticed).
 *
 * Why that is safe: a notice says only that a claim will never write again,
 * which the leaver knows once on_released has run, and which stays true
 * however late the datagram comes (model/baton.pml -DNOTICE; -DNOTICEEARLY
 * shows the order matters). The successor still fences the sink with its
 * own epoch, above the leaver's; a forged or mistaken notice (not modelled)
 * costs a move (the owner's next write is refused, STALE), never a loss or
 * a double. A lost datagram costs the fast path only: ZooKeeper's deletion
 * follows.
 *
 * The datagrams are text, one field per line:
 *   BATON-NOTICE 1 / SUB / <group base> / <standby id>
 *   BATON-NOTICE 1 / UNS / <group base> / <standby id>   (it left: forget it)
 *   BATON-NOTICE 1 / HLD / <group base> / <standby id> / p<N> | k<key> ...
 *     (what it holds ahead of ours: after its SUB, which alone means all;
 *     a list past one datagram goes on in HLD+ datagrams, which add to it)
 *   BATON-NOTICE 1 / REL / <group base> / <owner id> / <its assignment's generation> /
 *     p<N>:<seq> | k<key>:<seq> ...
 * Anything else, another group's, or malformed, is counted and dropped. */
#include "member_int.h"

#include "baton_layout.h"
#include "baton_zkbatch.h"
#include "baton_log.h"
#include "baton_metrics.h"
#include "baton_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define NOTICE_MAGIC "BATON-NOTICE 1\n"
/* One datagram's payload at most: under a 1,500-byte MTU with headers. */
#define NOTICE_DGRAM_MAX 1400
/* Subscribers an owner remembers; past it, the one heard from longest ago
 * makes room. */
#define NOTICE_SUBS_MAX 4096
/* The receive buffer: the largest datagram, and a NUL. */
#define NOTICE_BUF 65536

/* "host:port" or "[v6]:port" -> an address. Returns 0, or -1 with why. */
static int addr_parse(const char *s, int passive, struct sockaddr_storage *out, socklen_t *outlen,
                      const char **why) {
    char host[64], port[8];
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1] || strlen(colon + 1) >= sizeof(port)) {
        *why = "expected ip:port";
        return -1;
    }
    size_t hl = (size_t)(colon - s);
    const char *h = s;
    if (s[0] == '[') {
        if (hl < 3 || s[hl - 1] != ']') {
            *why = "expected [ipv6]:port";
            return -1;
        }
        h = s + 1;
        hl -= 2;
    }
    if (hl >= sizeof(host)) {
        *why = "address too long";
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = 0;
    snprintf(port, sizeof(port), "%s", colon + 1);
    for (const char *p = port; *p; p++)
        if (*p < '0' || *p > '9') {
            *why = "the port is not a number";
            return -1;
        }
    if (atoi(port) > 65535) {
        *why = "the port is above 65535";
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_DGRAM,
                             .ai_flags =
                                 AI_NUMERICHOST | AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) {
        *why = "not a numeric IP address";
        return -1;
    }
    memcpy(out, ai->ai_addr, ai->ai_addrlen);
    *outlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static void addr_format(const struct sockaddr_storage *a, char *buf, size_t n) {
    char host[INET6_ADDRSTRLEN] = "?";
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;
        inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
        snprintf(buf, n, "[%s]:%u", host, ntohs(s6->sin6_port));
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)a;
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
        snprintf(buf, n, "%s:%u", host, ntohs(s4->sin_port));
    }
}

static int addr_wildcard(const struct sockaddr_storage *a) {
    if (a->ss_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
}

static int spec_check(const char *spec, struct sockaddr_storage *sa, socklen_t *salen, char *errstr,
                      size_t n) {
    const char *why = NULL;
    if (addr_parse(spec, 1, sa, salen, &why) != 0)
        return baton_seterr(errstr, n, BATON_INVALID, "'%s' is not an address to bind (%s; or off)",
                            spec, why);
    if (addr_wildcard(sa))
        return baton_seterr(errstr, n, BATON_INVALID,
                            "'%s' is a wildcard; give the address the group's other members "
                            "reach this one at (it is advertised as given)",
                            spec);
    return BATON_OK;
}

int baton_membership__notice_check(const char *spec, char *errstr, size_t n) {
    struct sockaddr_storage sa;
    socklen_t salen = 0;
    if (!spec || !spec[0] || strcmp(spec, "off") == 0)
        return BATON_OK;
    return spec_check(spec, &sa, &salen, errstr, n);
}

int mb_notice_open(baton_membership_t *m, const char *spec, char *errstr, size_t n) {
    m->notice.fd = m->notice.epfd = m->notice.ep_zkfd = -1;
    if (!spec || !spec[0] || strcmp(spec, "off") == 0)
        return BATON_OK;
    struct sockaddr_storage sa;
    socklen_t salen = 0;
    char why[256];
    if (spec_check(spec, &sa, &salen, why, sizeof(why)) != BATON_OK)
        return baton_seterr(errstr, n, BATON_INVALID, "standby.notice: %s", why);
    int fd = socket(sa.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return baton_seterr(errstr, n, BATON_IO, "standby.notice: socket: %s", strerror(errno));
    if (bind(fd, (struct sockaddr *)&sa, salen) != 0) {
        int e = errno;
        close(fd);
        return baton_seterr(errstr, n, BATON_IO, "standby.notice: cannot bind '%s': %s", spec,
                            strerror(e));
    }
    salen = sizeof(sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) {
        int e = errno;
        close(fd);
        return baton_seterr(errstr, n, BATON_IO, "standby.notice: getsockname: %s", strerror(e));
    }
    addr_format(&sa, m->notice.addr, sizeof(m->notice.addr));
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        int e = errno;
        close(fd);
        if (ep >= 0)
            close(ep);
        return baton_seterr(errstr, n, BATON_IO, "standby.notice: epoll: %s", strerror(e));
    }
    m->notice.fd = fd;
    m->notice.epfd = ep;
    m->notice.buf = xmalloc(NOTICE_BUF);
    BLOG_INFO("event=notice_bound addr=%s", baton_log_v(m->notice.addr));
    return BATON_OK;
}

/* Forgets every subscriber. */
static void subs_clear(mnotice_t *nt) {
    for (size_t i = 0; i < nt->nsubs; i++)
        free(nt->subs[i].rows);
    nt->nsubs = 0;
}

void mb_notice_close(baton_membership_t *m) {
    if (m->notice.fd >= 0)
        close(m->notice.fd);
    if (m->notice.epfd >= 0)
        close(m->notice.epfd);
    m->notice.fd = m->notice.epfd = -1;
    subs_clear(&m->notice);
    free(m->notice.subs);
    m->notice.subs = NULL;
    free(m->notice.buf);
    m->notice.buf = NULL;
    m->notice.nsubs = 0;
}

size_t baton_membership__notice_subscribers(const baton_membership_t *m) {
    return m->notice.fd >= 0 ? m->notice.nsubs : 0;
}

int mb_notice_fd(baton_membership_t *m) {
    int zfd = m->zk ? baton_zk_fd(m->zk) : -1;
    if (m->notice.epfd < 0)
        return zfd;
    /* The session's descriptor changes with the session; a closed one left
     * the set by itself, and its number may come back for the next one:
     * registered again whenever the descriptor or the session differs. */
    if (zfd == m->notice.ep_zkfd && m->session == m->notice.ep_session)
        return m->notice.epfd;
    if (m->notice.ep_zkfd >= 0)
        epoll_ctl(m->notice.epfd, EPOLL_CTL_DEL, m->notice.ep_zkfd, NULL);
    m->notice.ep_zkfd = -1;
    if (zfd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = zfd};
        if (epoll_ctl(m->notice.epfd, EPOLL_CTL_ADD, zfd, &ev) == 0 || errno == EEXIST) {
            m->notice.ep_zkfd = zfd;
            m->notice.ep_session = m->session;
        } else {
            /* Not in the set: return the session's own descriptor, so that
             * the caller still wakes for ZooKeeper (notices then wait for
             * the next poll); tried again on the next call. */
            BLOG_WARN("event=notice_epoll_failed error=\"%s\"", baton_log_q(strerror(errno)));
            return zfd;
        }
    }
    return m->notice.epfd;
}

/* Sends msg[0..len) from fd to the notice address a member node's data
 * names (any thread: it only decodes and sends). Returns 1 if sent. */
static int member_notice_send(int fd, const char *data, size_t dlen, const char *msg, size_t len) {
    baton_member_t mb;
    char why[128];
    struct sockaddr_storage sa;
    socklen_t salen = 0;
    const char *bad = NULL;
    return baton_member_decode(data, dlen, &mb, why, sizeof(why)) == BATON_OK && mb.notice[0] &&
           addr_parse(mb.notice, 0, &sa, &salen, &bad) == 0 &&
           sendto(fd, msg, len, MSG_DONTWAIT, (struct sockaddr *)&sa, salen) >= 0;
}

/* ---- the messages -------------------------------------------------------- */

/* Our KIND message with no items (SUB, UNS; HLD's and REL's header) into
 * buf. Returns its length, or -1 if it does not fit (a base too long). */
static int notice_format(const baton_membership_t *m, const char *kind, char *buf, size_t size) {
    int len = snprintf(buf, size, NOTICE_MAGIC "%s\n%s\n%s\n", kind, m->base, m->conf.id);
    return len < 0 || (size_t)len >= size ? -1 : len;
}

/* Row's item ("p<N>" or "k<key>", then tail) into buf. Returns its
 * length, or -1 if it does not fit. */
static int res_item(const baton_membership_t *m, size_t row, const char *tail, char *buf,
                    size_t size) {
    const baton_resource_t *r = baton_res_at(&m->res, row);
    int len = r->kind == BATON_RESOURCE_KEY ? snprintf(buf, size, "k%s%s", r->key, tail)
                                            : snprintf(buf, size, "p%d%s", r->partition, tail);
    return len < 0 || (size_t)len >= size ? -1 : len;
}

/* Our HLD for the owner e stands by for: every row of e if we hold what
 * we stand by for (notice_holds), none if not. One datagram per
 * NOTICE_DGRAM_MAX bytes, the first an HLD (what we hold is this), the
 * rest HLD+ (and this), each NUL-terminated, an empty one after the last:
 * a heap buffer, or NULL if the base is too long (our SUB alone then
 * means all of them). */
static char *hld_format(const baton_membership_t *m, const mstandby_t *e) {
    char head[NOTICE_DGRAM_MAX], more[NOTICE_DGRAM_MAX];
    int hl = notice_format(m, "HLD", head, sizeof(head));
    int ml = notice_format(m, "HLD+", more, sizeof(more));
    if (hl < 0 || ml < 0 || ml + BATON_RES_LABEL_SIZE + 2 > NOTICE_DGRAM_MAX)
        return NULL;
    size_t cap = NOTICE_DGRAM_MAX + 2, len = 0, start = 0;
    char *buf = xmalloc(cap);
    memcpy(buf, head, (size_t)hl);
    len = (size_t)hl;
    for (size_t i = 0; m->notice.holds && i < e->n; i++) {
        char item[BATON_RES_LABEL_SIZE + 2];
        int il = res_item(m, e->rows[i], "\n", item, sizeof(item));
        if (il < 0)
            continue;
        if (len + (size_t)il - start > NOTICE_DGRAM_MAX) { /* the next datagram */
            buf[len++] = 0;
            start = len;
            if (len + (size_t)ml + NOTICE_DGRAM_MAX + 2 > cap)
                buf = xrealloc(buf, cap = 2 * cap + (size_t)ml + NOTICE_DGRAM_MAX + 2);
            memcpy(buf + len, more, (size_t)ml);
            len += (size_t)ml;
        }
        if (len + (size_t)il + 2 > cap)
            buf = xrealloc(buf, cap = 2 * cap + (size_t)il + 2);
        memcpy(buf + len, item, (size_t)il);
        len += (size_t)il;
    }
    buf[len++] = 0;
    buf[len] = 0; /* the empty one after the last */
    return buf;
}

/* ---- subscribing (a standby, on ZooKeeper's completion thread) ---------- */

typedef struct {
    baton_zk_t *zk;
    int fd;
    int watch; /* the read set a watch (SUB): its ZNONODE is news */
    char msg[BATON_ID_MAX + 512];
    char *hld; /* after msg, or NULL: hld_format's datagrams */
    char path[];
} notice_read_t;

/* The answer to the read of an owner's member node for its notice address
 * (notice_send_to): a node naming one gets our message, and our HLD after
 * it. With the data watch a standby sets (SUB), the answer is also what
 * the watch found (mb_standby_armed: the node gone, or marked leaving
 * already). The socket outlives the session (closed after it:
 * mb_notice_close). */
static void notice_read_done(int rc, const char *value, int len, const struct Stat *st,
                             const void *data) {
    (void)st;
    notice_read_t *nr = (notice_read_t *)data;
    if (nr->watch)
        mb_standby_armed(rc, value, len, nr->path, nr->zk);
    if (rc == ZOK && nr->msg[0]) {
        size_t dlen = len > 0 ? (size_t)len : 0;
        if (member_notice_send(nr->fd, value, dlen, nr->msg, strlen(nr->msg)) && nr->hld)
            for (const char *h = nr->hld; *h; h += strlen(h) + 1)
                member_notice_send(nr->fd, value, dlen, h, strlen(h));
    }
    free(nr->hld);
    free(nr);
}

/* Reads the member node at path (with a data watch if watch) and sends our
 * KIND message (SUB, UNS) to the notice address it names, and after a SUB
 * our HLD for e, without waiting for the answer. Returns ZOK, or the
 * client's error when nothing was sent. */
static int notice_send_to(baton_membership_t *m, const char *path, const char *kind, int watch,
                          const mstandby_t *e) {
    size_t plen = strlen(path) + 1;
    notice_read_t *nr = xmalloc(sizeof(*nr) + plen);
    nr->zk = m->zk;
    nr->fd = m->notice.fd;
    nr->watch = watch;
    nr->hld = NULL;
    if (notice_format(m, kind, nr->msg, sizeof(nr->msg)) < 0) {
        nr->msg[0] = 0; /* a base too long to send: the watch only */
        if (!watch) {
            free(nr);
            return ZBADARGUMENTS;
        }
    } else if (e) {
        nr->hld = hld_format(m, e);
    }
    memcpy(nr->path, path, plen);
    int rc = zoo_awget(baton_zk_handle(m->zk), path, watch ? baton_zk_watcher : NULL,
                       watch ? m->zk : NULL, notice_read_done, nr);
    if (rc != ZOK) {
        free(nr->hld);
        free(nr);
    }
    return rc;
}

int mb_notice_watch_send(baton_membership_t *m, const mstandby_t *e, const char *path) {
    return notice_send_to(m, path, "SUB", 1, e);
}

int mb_notice_holds_changed(baton_membership_t *m, const mstandby_t *e) {
    if (m->notice.fd < 0 || !m->notice.holds || m->notice.left)
        return 1;
    if (!m->zk || !baton_zk_connected(m->zk))
        return 0;
    char *path = baton_layout_worker(m->base, e->owner);
    int rc = notice_send_to(m, path, "SUB", 0, e);
    if (rc == ZOK)
        BLOG_DEBUG("event=notice_holds_sent owner=%s resources=%zu", baton_log_v(e->owner), e->n);
    free(path);
    return rc == ZOK;
}

void mb_notice_unsubscribe_owner(baton_membership_t *m, const char *owner) {
    if (m->notice.fd < 0 || m->notice.left || !m->zk || !baton_zk_connected(m->zk))
        return;
    char *path = baton_layout_worker(m->base, owner);
    if (notice_send_to(m, path, "UNS", 0, NULL) == ZOK)
        BLOG_DEBUG("event=notice_unsubscribe owner=%s reason=not_standby", baton_log_v(owner));
    free(path);
}

/* ---- releasing (the leaver) ---------------------------------------------- */

/* A subscriber's member node is watched (a data watch), so that one that
 * crashed is forgotten once its session ends and its node goes: a leaver
 * that kept it would hand its unwritten records over to nobody (worker.c,
 * leave_hands_over), and its cold successor would read them from Kafka
 * again. A deletion is confirmed before the subscriber is forgotten: the
 * watch follows the path, and the node deleted may be an earlier
 * incarnation's, replaced by the live one that subscribed meanwhile
 * (mb_notice_member_event). The completion runs on ZooKeeper's thread: an
 * absent node is queued as its deletion, for the main thread. */
typedef struct {
    baton_zk_t *zk;
    char path[];
} sub_watch_t;

static void sub_watch_done(int rc, const char *value, int len, const struct Stat *st,
                           const void *data) {
    (void)value;
    (void)len;
    (void)st;
    sub_watch_t *sw = (sub_watch_t *)data;
    if (rc == ZNONODE)
        baton_zk_watcher(NULL, ZOO_DELETED_EVENT, ZOO_CONNECTED_STATE, sw->path, sw->zk);
    free(sw);
}

static void sub_watch(baton_membership_t *m, msub_t *s) {
    if (!m->zk || s->watched)
        return;
    char *path = baton_layout_worker(m->base, s->id);
    size_t plen = strlen(path) + 1;
    sub_watch_t *sw = xmalloc(sizeof(*sw) + plen);
    sw->zk = m->zk;
    memcpy(sw->path, path, plen);
    free(path);
    /* A read with a data watch, not an exists: on a node that is not
     * there it leaves no watch behind. An exists watch stayed, in the
     * server and the client, until the session ended: one per id a
     * datagram named, and the ids come from the network. */
    if (zoo_awget(baton_zk_handle(m->zk), sw->path, baton_zk_watcher, m->zk, sub_watch_done, sw) ==
        ZOK)
        s->watched = 1;
    else
        free(sw); /* not connected: set at the next SUB or event */
}

/* The subscriber with this id, or NULL. */
static msub_t *sub_find(baton_membership_t *m, const char *id) {
    for (size_t i = 0; i < m->notice.nsubs; i++)
        if (strcmp(m->notice.subs[i].id, id) == 0)
            return &m->notice.subs[i];
    return NULL;
}

/* Its HLD's rows, or (rows NULL) all of ours, as a SUB alone says. */
static void sub_holds(msub_t *s, size_t *rows, size_t n) {
    free(s->rows);
    s->rows = rows;
    s->nrows = n;
}

/* A SUB: all of ours, unless it has said what it holds (HLD) since it
 * took its slot. A SUB is followed by its HLD; one that came first
 * (datagrams are not ordered), or a SUB whose HLD was lost, leaves what
 * it said last. */
static void sub_subscribed(msub_t *s) {
    if (!s->hld_seen)
        sub_holds(s, NULL, 0);
}

/* Notes that standby id subscribed, from `from`: its slot, a new one
 * holding all of ours until its HLD says what. */
static msub_t *sub_note(baton_membership_t *m, const char *id, const struct sockaddr_storage *from,
                        socklen_t fromlen) {
    mnotice_t *nt = &m->notice;
    msub_t *slot = sub_find(m, id);
    if (!slot && nt->nsubs < NOTICE_SUBS_MAX) {
        nt->subs = xrealloc(nt->subs, sizeof(msub_t) * (nt->nsubs + 1));
        slot = &nt->subs[nt->nsubs++];
        memset(slot, 0, sizeof(*slot));
        BLOG_DEBUG("event=notice_subscriber id=%s subscribers=%zu", baton_log_v(id), nt->nsubs);
    }
    if (!slot) { /* full: the one heard from longest ago */
        slot = &nt->subs[0];
        for (size_t i = 1; i < nt->nsubs; i++)
            if (nt->subs[i].heard_ms < slot->heard_ms)
                slot = &nt->subs[i];
    }
    if (strcmp(slot->id, id) != 0) { /* a new one, or another in an evicted one's slot */
        slot->watched = 0;
        slot->hld_seen = 0;
        sub_holds(slot, NULL, 0);
    }
    slot->checking = 0; /* it spoke: a deletion seen before is checked again */
    snprintf(slot->id, sizeof(slot->id), "%s", id);
    memcpy(&slot->addr, from, sizeof(*from));
    slot->addrlen = fromlen;
    slot->heard_ms = baton_now_ms();
    sub_watch(m, slot);
    return slot;
}

/* A standby that left (UNS): forgotten, so that an owner it no longer
 * stands by for writes its own tail at its leave (worker.c,
 * leave_hands_over). */
static int sub_forget(baton_membership_t *m, const char *id) {
    msub_t *s = sub_find(m, id);
    if (!s)
        return 0;
    free(s->rows);
    *s = m->notice.subs[--m->notice.nsubs];
    return 1;
}

static int row_cmp(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

int baton_membership__notice_covers(const baton_membership_t *m, const baton_resource_t *r) {
    if (m->notice.fd < 0 || m->notice.nsubs == 0)
        return 0;
    long row = baton_res_table_find(&m->res, r);
    if (row < 0)
        return 0;
    size_t key = (size_t)row;
    for (size_t i = 0; i < m->notice.nsubs; i++) {
        const msub_t *s = &m->notice.subs[i];
        if (!s->rows || (s->nrows && bsearch(&key, s->rows, s->nrows, sizeof(key), row_cmp)))
            return 1;
    }
    return 0;
}

/* A watch on workers/<id> fired (note_event), or a watch's read found no
 * node. A subscriber's first deletion is checked with another read (which
 * sets the watch again): a node there, its next incarnation's, keeps it; a
 * second deletion (that read found none, or the node went again) forgets
 * it. A node that changed or came sets the watch again. */
void mb_notice_member_event(baton_membership_t *m, const char *id, int type) {
    msub_t *s = sub_find(m, id);
    if (!s)
        return;
    if (type == ZOO_DELETED_EVENT && s->checking) {
        sub_forget(m, id);
        BLOG_INFO("event=notice_subscriber_gone id=%s subscribers=%zu", baton_log_v(id),
                  m->notice.nsubs);
        return;
    }
    s->checking = type == ZOO_DELETED_EVENT;
    s->watched = 0;
    sub_watch(m, s);
}

/* A new session has none of our watches, and none of the old session's
 * claims: the standbys subscribe again when they watch our new member node. */
void mb_notice_session_reset(baton_membership_t *m) { subs_clear(&m->notice); }

void mb_notice_unsubscribe(baton_membership_t *m) {
    if (m->notice.fd < 0)
        return;
    /* Leaving: the assignments read from here on drop every owner from
     * our list, and each is told now (mb_notice_unsubscribe_owner would
     * tell it again). */
    m->notice.left = 1;
    if (!m->zk || m->nstandby == 0 || !baton_zk_connected(m->zk))
        return;
    char msg[BATON_ID_MAX + 512];
    int len = notice_format(m, "UNS", msg, sizeof(msg));
    if (len < 0)
        return;
    /* Every owner's member node in one round trip (baton_zkbatch_get). */
    size_t n = m->nstandby, sent = 0;
    char **paths = xmalloc(sizeof(char *) * n);
    baton_zkread_t *reads = xcalloc(n, sizeof(*reads));
    for (size_t i = 0; i < n; i++)
        paths[i] = baton_layout_worker(m->base, m->standby[i].owner);
    baton_zkbatch_get(m->zk, paths, n, reads);
    for (size_t i = 0; i < n; i++) {
        if (reads[i].err == BATON_OK &&
            member_notice_send(m->notice.fd, reads[i].data, reads[i].len, msg, (size_t)len))
            sent++;
        baton_zkread_release(&reads[i]);
        free(paths[i]);
    }
    free(reads);
    free(paths);
    BLOG_INFO("event=notice_unsubscribed_all owners=%zu sent=%zu", n, sent);
}

/* Sends buf[0..len) to every subscriber; returns how many sends failed. */
static size_t rel_send(baton_membership_t *m, const char *buf, size_t len) {
    size_t failed = 0;
    for (size_t i = 0; i < m->notice.nsubs; i++) {
        msub_t *s = &m->notice.subs[i];
        if (sendto(m->notice.fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&s->addr, s->addrlen) <
            0)
            failed++;
    }
    return failed;
}

void mb_notice_release(baton_membership_t *m, const size_t *rows, size_t n) {
    if (m->notice.fd < 0 || n == 0)
        return;
    if (m->notice.nsubs == 0) {
        BLOG_INFO("event=notice_sent subscribers=0 resources=%zu", n);
        return;
    }
    char buf[NOTICE_DGRAM_MAX + 256];
    int head = notice_format(m, "REL", buf, NOTICE_DGRAM_MAX);
    if (head >= 0) {
        int gl = snprintf(buf + head, NOTICE_DGRAM_MAX - (size_t)head, "%lld\n",
                          (long long)m->generation);
        head = gl < 0 || (size_t)(head + gl) >= NOTICE_DGRAM_MAX ? -1 : head + gl;
    }
    if (head < 0) {
        BLOG_WARN("event=notice_skipped reason=header_too_long");
        return;
    }
    size_t len = (size_t)head, items = 0, dgrams = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        const mpart_t *mp = &m->st[rows[i]];
        int64_t seq = baton_claim_seq(mp->claim);
        if (seq < 0)
            continue;
        char item[BATON_RES_LABEL_SIZE + 32], tail[32];
        snprintf(tail, sizeof(tail), ":%lld\n", (long long)seq);
        int il = res_item(m, rows[i], tail, item, sizeof(item));
        if (il < 0)
            continue;
        if (len + (size_t)il > NOTICE_DGRAM_MAX && items) {
            failed += rel_send(m, buf, len);
            dgrams++;
            len = (size_t)head;
            items = 0;
        }
        if (len + (size_t)il > NOTICE_DGRAM_MAX)
            continue; /* one item alone too long: a key near its limit under a long base */
        memcpy(buf + len, item, (size_t)il);
        len += (size_t)il;
        items++;
    }
    if (items) {
        failed += rel_send(m, buf, len);
        dgrams++;
    }
    BLOG_INFO("event=notice_sent subscribers=%zu resources=%zu datagrams=%zu failed=%zu",
              m->notice.nsubs, n, dgrams, failed);
}

/* ---- receiving ----------------------------------------------------------- */

/* The next line of *p (its end NUL-terminated in place), or NULL. */
static char *next_line(char **p) {
    char *s = *p, *nl = s ? strchr(s, '\n') : NULL;
    if (!nl)
        return NULL;
    *nl = 0;
    *p = nl + 1;
    return s;
}

static int parse_seq(const char *s, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0 || s[0] == '-' || s[0] == '+')
        return -1;
    *out = v;
    return 0;
}

/* The row of a notice's item ("p<N>" or "k<key>"), or -1: not one of
 * ours (*bad is set too if it is not an item at all). */
static long item_row(const baton_membership_t *m, const char *item, size_t *bad) {
    long row = -1;
    if (item[0] == 'p' && item[1]) {
        int64_t part = -1;
        if (parse_seq(item + 1, &part) != 0)
            ++*bad;
        else if (part < m->res.npartitions)
            row = (long)part;
    } else if (item[0] == 'k' && baton_key_valid(item + 1) == 0) {
        row = baton_res_table_find_key(&m->res, item + 1, strlen(item + 1));
    } else {
        ++*bad;
    }
    return row >= 0 && (size_t)row < m->res.n ? row : -1;
}

/* A REL from owner, its items in p: each one that names the claim ours
 * waits right behind takes that claim as deleted. */
static void rel_apply(baton_membership_t *m, const char *owner, char *p) {
    size_t items = 0, taken = 0, bad = 0;
    int64_t gen = -1;
    char *line = next_line(&p);
    if (!line || parse_seq(line, &gen) != 0) {
        baton_metric_inc(baton_metric_counter(BATON_M_W_NOTICES_MALFORMED));
        BLOG_DEBUG("event=notice_dropped reason=malformed owner=%s", baton_log_v(owner));
        return;
    }
    while ((line = next_line(&p)) != NULL) {
        items++;
        char *colon = strrchr(line, ':');
        int64_t seq = -1;
        if (!colon || parse_seq(colon + 1, &seq) != 0) {
            bad++;
            continue;
        }
        *colon = 0;
        long row = item_row(m, line, &bad);
        if (row < 0)
            continue; /* not a resource we know: nothing of ours waits on it */
        taken += mb_standby_noticed(m, owner, (size_t)row, seq);
    }
    baton_metric_inc(baton_metric_counter(BATON_M_W_NOTICES_RECEIVED));
    BLOG_INFO("event=notice_received owner=%s generation=%lld resources=%zu taken=%zu "
              "malformed=%zu",
              baton_log_v(owner), (long long)gen, items, taken, bad);
}

/* An HLD (more: an HLD+) from standby id, its items in p: what it holds
 * of ours is these (and, with more, what it said before). An item we do
 * not know (a key we have not heard of, a partition past ours) is nothing
 * of ours to hand over; a malformed one is counted. At most one row per
 * resource of ours is kept, whatever the datagrams repeat. */
static void hld_apply(baton_membership_t *m, const char *id, char *p, int more,
                      const struct sockaddr_storage *from, socklen_t fromlen) {
    msub_t *s = sub_note(m, id, from, fromlen);
    size_t n = 0, cap = 16, bad = 0, items = 0;
    size_t *rows = xmalloc(sizeof(size_t) * cap);
    if (more && s->hld_seen && s->rows) { /* added to what it said */
        cap += s->nrows;
        rows = xrealloc(rows, sizeof(size_t) * cap);
        memcpy(rows, s->rows, sizeof(size_t) * s->nrows);
        n = s->nrows;
    }
    char *line;
    while ((line = next_line(&p)) != NULL && n < m->res.n + s->nrows + 1) {
        items++;
        long row = item_row(m, line, &bad);
        if (row < 0)
            continue;
        if (n == cap)
            rows = xrealloc(rows, sizeof(size_t) * (cap *= 2));
        rows[n++] = (size_t)row;
    }
    qsort(rows, n, sizeof(size_t), row_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || rows[u - 1] != rows[i])
            rows[u++] = rows[i];
    if (bad)
        baton_metric_inc(baton_metric_counter(BATON_M_W_NOTICES_MALFORMED));
    s->hld_seen = 1;
    sub_holds(s, rows, u);
    BLOG_DEBUG("event=notice_holds id=%s resources=%zu items=%zu more=%d malformed=%zu",
               baton_log_v(id), u, items, more, bad);
}

/* One datagram (NUL-terminated in buf) from `from`. */
static void notice_handle(baton_membership_t *m, char *buf, const struct sockaddr_storage *from,
                          socklen_t fromlen) {
    char *p = buf;
    if (strncmp(p, NOTICE_MAGIC, strlen(NOTICE_MAGIC)) != 0)
        goto bad;
    p += strlen(NOTICE_MAGIC);
    char *kind = next_line(&p), *base = next_line(&p), *id = next_line(&p);
    if (!kind || !base || !id || baton_id_valid(id) != 0)
        goto bad;
    if (strcmp(base, m->base) != 0) {
        BLOG_DEBUG("event=notice_dropped reason=other_group base=%s", baton_log_v(base));
        return;
    }
    if (strcmp(kind, "SUB") == 0 && !*p) {
        sub_subscribed(sub_note(m, id, from, fromlen));
        return;
    }
    if (strcmp(kind, "HLD") == 0 || strcmp(kind, "HLD+") == 0) {
        hld_apply(m, id, p, kind[3] == '+', from, fromlen);
        return;
    }
    if (strcmp(kind, "UNS") == 0 && !*p) {
        if (sub_forget(m, id))
            BLOG_DEBUG("event=notice_unsubscribed id=%s subscribers=%zu", baton_log_v(id),
                       m->notice.nsubs);
        return;
    }
    if (strcmp(kind, "REL") == 0) {
        rel_apply(m, id, p);
        return;
    }
bad:;
    char who[80];
    addr_format(from, who, sizeof(who));
    baton_metric_inc(baton_metric_counter(BATON_M_W_NOTICES_MALFORMED));
    BLOG_DEBUG("event=notice_dropped reason=malformed from=%s", baton_log_v(who));
}

void mb_notice_drain(baton_membership_t *m) {
    if (m->notice.fd < 0)
        return;
    char *buf = m->notice.buf;
    for (int i = 0; i < 1024; i++) { /* bounded: a flood waits for the next poll */
        struct sockaddr_storage from;
        socklen_t fromlen = sizeof(from);
        ssize_t got = recvfrom(m->notice.fd, buf, NOTICE_BUF - 1, MSG_DONTWAIT,
                               (struct sockaddr *)&from, &fromlen);
        if (got < 0)
            return; /* EAGAIN, or an ICMP error of an earlier send: nothing to read */
        buf[got] = 0;
        mb_notice_feed(m, buf, (size_t)got, &from, fromlen);
    }
}

void mb_notice_feed(baton_membership_t *m, char *buf, size_t len,
                    const struct sockaddr_storage *from, socklen_t fromlen) {
    if (strlen(buf) != len) { /* a NUL inside: not ours */
        baton_metric_inc(baton_metric_counter(BATON_M_W_NOTICES_MALFORMED));
        return;
    }
    notice_handle(m, buf, from, fromlen);
}
