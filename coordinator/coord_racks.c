/* coord_racks.c: a minimal Kafka Metadata v1 client (see coord_racks.h). It
 * sends one request for one topic and parses brokers (id, rack) and the
 * topic's partition leaders; every read is bounds-checked, since the reply
 * comes from the network. */
#include "coord_racks.h"

#include "baton_err.h"
#include "baton_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define METADATA_API_KEY 3
#define METADATA_VERSION 1
#define REPLY_MAX (64 * 1024 * 1024)

struct coord_racks_s {
    int32_t n;
    char **rack; /* per partition: heap string or NULL */
};

/* ---- wire helpers ------------------------------------------------------- */

typedef struct {
    const unsigned char *p, *end;
    int bad;
} rd_t;

static int32_t rd_i32(rd_t *r) {
    if (r->bad || r->end - r->p < 4) {
        r->bad = 1;
        return 0;
    }
    uint32_t v =
        (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
    r->p += 4;
    return (int32_t)v;
}

static int16_t rd_i16(rd_t *r) {
    if (r->bad || r->end - r->p < 2) {
        r->bad = 1;
        return 0;
    }
    uint16_t v = (uint16_t)(r->p[0] << 8 | r->p[1]);
    r->p += 2;
    return (int16_t)v;
}

static void rd_skip(rd_t *r, int64_t n) {
    if (r->bad || n < 0 || r->end - r->p < n) {
        r->bad = 1;
        return;
    }
    r->p += n;
}

/* A nullable string: heap copy, or NULL for null (and on error). */
static char *rd_str(rd_t *r) {
    int16_t len = rd_i16(r);
    if (r->bad || len < 0)
        return NULL;
    if (r->end - r->p < len) {
        r->bad = 1;
        return NULL;
    }
    char *s = xmalloc((size_t)len + 1);
    memcpy(s, r->p, (size_t)len);
    s[len] = 0;
    r->p += len;
    return s;
}

/* An array count, refused when it cannot fit in what is left. */
static int32_t rd_count(rd_t *r, int min_elem) {
    int32_t n = rd_i32(r);
    if (n < 0)
        n = 0; /* null array */
    if (!r->bad && (int64_t)n * min_elem > r->end - r->p)
        r->bad = 1;
    return r->bad ? 0 : n;
}

static void wr_i16(unsigned char **w, int v) {
    (*w)[0] = (unsigned char)(v >> 8);
    (*w)[1] = (unsigned char)v;
    *w += 2;
}

static void wr_i32(unsigned char **w, int32_t v) {
    uint32_t u = (uint32_t)v;
    (*w)[0] = (unsigned char)(u >> 24);
    (*w)[1] = (unsigned char)(u >> 16);
    (*w)[2] = (unsigned char)(u >> 8);
    (*w)[3] = (unsigned char)u;
    *w += 4;
}

static void wr_str(unsigned char **w, const char *s) {
    size_t n = strlen(s);
    wr_i16(w, (int)n);
    memcpy(*w, s, n);
    *w += n;
}

/* ---- socket ------------------------------------------------------------- */

static int io_wait(int fd, short events, int64_t deadline) {
    int64_t left = deadline - baton_now_ms();
    if (left <= 0)
        return -1;
    struct pollfd pfd = {.fd = fd, .events = events};
    int rc = poll(&pfd, 1, (int)left);
    return rc == 1 ? 0 : -1;
}

static int sock_connect(const char *host, const char *port, int64_t deadline) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (rc != 0 && (errno != EINPROGRESS || io_wait(fd, POLLOUT, deadline) != 0 ||
                        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0)) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

static int sock_write_all(int fd, const unsigned char *buf, size_t n, int64_t deadline) {
    while (n > 0) {
        ssize_t k = send(fd, buf, n, MSG_NOSIGNAL);
        if (k > 0) {
            buf += k;
            n -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (io_wait(fd, POLLOUT, deadline) != 0)
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

static int sock_read_all(int fd, unsigned char *buf, size_t n, int64_t deadline) {
    while (n > 0) {
        ssize_t k = recv(fd, buf, n, 0);
        if (k > 0) {
            buf += k;
            n -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (io_wait(fd, POLLIN, deadline) != 0)
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* ---- the request -------------------------------------------------------- */

typedef struct {
    int32_t id;
    char *rack;
} broker_t;

static int parse_reply(const unsigned char *buf, size_t len, const char *topic, int32_t np,
                       coord_racks_t *out, char *errstr, size_t n) {
    rd_t r = {.p = buf, .end = buf + len};
    int err = BATON_OK;
    (void)rd_i32(&r); /* correlation id */
    int32_t nb = rd_count(&r, 12);
    broker_t *b = xcalloc((size_t)nb + 1, sizeof(*b));
    for (int32_t i = 0; i < nb; i++) {
        b[i].id = rd_i32(&r);
        free(rd_str(&r)); /* host */
        (void)rd_i32(&r); /* port */
        b[i].rack = rd_str(&r);
    }
    (void)rd_i32(&r); /* controller */
    int32_t nt = rd_count(&r, 9);
    int found = 0;
    for (int32_t t = 0; t < nt && !r.bad; t++) {
        int16_t terr = rd_i16(&r);
        char *name = rd_str(&r);
        rd_skip(&r, 1); /* is_internal */
        int mine = name && strcmp(name, topic) == 0;
        free(name);
        if (mine && terr != 0) {
            err = baton_seterr(errstr, n, BATON_NOTFOUND, "topic '%s': Kafka error code %d", topic,
                               terr);
            break;
        }
        found |= mine;
        int32_t npart = rd_count(&r, 18);
        for (int32_t k = 0; k < npart && !r.bad; k++) {
            (void)rd_i16(&r); /* partition error */
            int32_t p = rd_i32(&r);
            int32_t leader = rd_i32(&r);
            rd_skip(&r, 4 * (int64_t)rd_count(&r, 4)); /* replicas */
            rd_skip(&r, 4 * (int64_t)rd_count(&r, 4)); /* isr */
            if (!mine || p < 0 || p >= np || r.bad)
                continue;
            for (int32_t i = 0; i < nb; i++)
                if (b[i].id == leader && b[i].rack) {
                    free(out->rack[p]);
                    out->rack[p] = xstrdup(b[i].rack);
                }
        }
    }
    if (err == BATON_OK && r.bad)
        err = baton_seterr(errstr, n, BATON_CORRUPT, "malformed Metadata reply (%zu bytes)", len);
    else if (err == BATON_OK && !found)
        err = baton_seterr(errstr, n, BATON_NOTFOUND, "topic '%s' is not in the Metadata reply",
                           topic);
    for (int32_t i = 0; i < nb; i++)
        free(b[i].rack);
    free(b);
    return err;
}

/* One broker: connect, send, read the size-prefixed reply, parse. */
static int fetch_one(const char *host, const char *port, const char *topic, int32_t np,
                     int timeout_ms, coord_racks_t *out, char *errstr, size_t n) {
    int64_t deadline = baton_now_ms() + timeout_ms;
    int fd = sock_connect(host, port, deadline);
    if (fd < 0)
        return baton_seterr(errstr, n, BATON_CONNECTION, "cannot connect to %s:%s", host, port);
    static const char client_id[] = "baton-coordinator";
    size_t body = 2 + 2 + 4 + 2 + strlen(client_id) + 4 + 2 + strlen(topic);
    unsigned char *req = xmalloc(body + 4), *w = req;
    wr_i32(&w, (int32_t)body);
    wr_i16(&w, METADATA_API_KEY);
    wr_i16(&w, METADATA_VERSION);
    wr_i32(&w, 1); /* correlation id */
    wr_str(&w, client_id);
    wr_i32(&w, 1);
    wr_str(&w, topic);
    unsigned char hdr[4], *reply = NULL;
    int err = BATON_OK;
    if (sock_write_all(fd, req, body + 4, deadline) != 0 ||
        sock_read_all(fd, hdr, 4, deadline) != 0) {
        err = baton_seterr(errstr, n, BATON_TIMEOUT, "no Metadata reply from %s:%s within %d ms",
                           host, port, timeout_ms);
        goto out;
    }
    rd_t rh = {.p = hdr, .end = hdr + 4};
    int32_t len = rd_i32(&rh);
    if (len < 4 || len > REPLY_MAX) {
        err = baton_seterr(errstr, n, BATON_CORRUPT, "%s:%s: reply size %d is out of range", host,
                           port, len);
        goto out;
    }
    reply = xmalloc((size_t)len);
    if (sock_read_all(fd, reply, (size_t)len, deadline) != 0) {
        err = baton_seterr(errstr, n, BATON_TIMEOUT, "Metadata reply from %s:%s cut short", host,
                           port);
        goto out;
    }
    err = parse_reply(reply, (size_t)len, topic, np, out, errstr, n);
out:
    free(reply);
    free(req);
    close(fd);
    return err;
}

int coord_racks_fetch(const char *brokers, const char *topic, int32_t npartitions, int timeout_ms,
                      coord_racks_t **out, char *errstr, size_t n) {
    if (!brokers || !topic || npartitions < 0)
        return baton_seterr(errstr, n, BATON_INVALID, "no brokers or topic");
    char *list = xstrdup(brokers), *save = NULL;
    int err = baton_seterr(errstr, n, BATON_INVALID, "no broker in '%s'", brokers);
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *hp = strstr(tok, "://") ? strstr(tok, "://") + 3 : tok;
        char *colon = strrchr(hp, ':');
        if (!colon || colon == hp || !colon[1]) {
            err = baton_seterr(errstr, n, BATON_INVALID, "broker '%s' is not host:port", tok);
            continue;
        }
        *colon = 0;
        coord_racks_t *r = xcalloc(1, sizeof(*r));
        r->n = npartitions;
        r->rack = xcalloc((size_t)npartitions + 1, sizeof(char *));
        err = fetch_one(hp, colon + 1, topic, npartitions, timeout_ms, r, errstr, n);
        if (err == BATON_OK) {
            *out = r;
            break;
        }
        coord_racks_destroy(r);
    }
    free(list);
    return err;
}

const char *coord_racks_of(const coord_racks_t *r, int32_t p) {
    return r && p >= 0 && p < r->n ? r->rack[p] : NULL;
}

int coord_racks_known(const coord_racks_t *r) {
    int k = 0;
    for (int32_t p = 0; r && p < r->n; p++)
        k += r->rack[p] != NULL;
    return k;
}

int coord_racks_equal(const coord_racks_t *a, const coord_racks_t *b) {
    if (!a || !b)
        return a == b;
    if (a->n != b->n)
        return 0;
    for (int32_t p = 0; p < a->n; p++) {
        const char *x = a->rack[p], *y = b->rack[p];
        if ((x == NULL) != (y == NULL) || (x && strcmp(x, y) != 0))
            return 0;
    }
    return 1;
}

void coord_racks_destroy(coord_racks_t *r) {
    if (!r)
        return;
    for (int32_t p = 0; p < r->n; p++)
        free(r->rack[p]);
    free(r->rack);
    free(r);
}
