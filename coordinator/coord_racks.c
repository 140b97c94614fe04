/* coord_racks.c: a minimal Kafka Metadata v4 client (see coord_racks.h). It
 * connects over plain TCP or TLS, authenticates with SASL/PLAIN when told
 * to, sends one request for one topic and parses brokers (id, rack) and the
 * topic's partition leaders; every read is bounds-checked, since the reply
 * comes from the network. */
#include "coord_racks.h"

#include "baton_err.h"
#include "baton_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define METADATA_API_KEY 3
#define METADATA_VERSION 4
#define SASL_HANDSHAKE_API_KEY 17
#define SASL_HANDSHAKE_VERSION 1
#define SASL_AUTHENTICATE_API_KEY 36
#define SASL_AUTHENTICATE_VERSION 0
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

/* ---- settings ----------------------------------------------------------- */

/* How the lookup connects: from coord_racks_setup, for the process. */
static struct {
    int tls, sasl;
    int off;         /* a setting the lookup cannot honour: never connect */
    int verify;      /* enable.ssl.certificate.verification */
    int verify_name; /* ssl.endpoint.identification.algorithm=https */
    SSL_CTX *ctx;    /* with tls */
    char *user, *password;
} sec;

static int conf_bool(const char *v) {
    return strcasecmp(v, "true") == 0 || strcasecmp(v, "t") == 0 || strcmp(v, "1") == 0;
}

static int key_password_cb(char *buf, int size, int rwflag, void *userdata) {
    (void)rwflag;
    const char *pw = userdata;
    int len = pw ? (int)strlen(pw) : 0;
    if (len > size)
        return -1;
    if (len > 0)
        memcpy(buf, pw, (size_t)len);
    return len;
}

/* The OpenSSL error queue's first reason, emptied. */
static const char *tls_reason(char *buf, size_t n) {
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, buf, n);
    else
        snprintf(buf, n, "no OpenSSL error");
    ERR_clear_error();
    return buf;
}

static int tls_ctx_new(const char *ca, const char *cert, const char *key, const char *key_pw,
                       char *errstr, size_t n) {
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return baton_seterr(errstr, n, BATON_INTERNAL, "TLS: %s", tls_reason(why, sizeof(why)));
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
    SSL_CTX_set_default_passwd_cb(ctx, key_password_cb);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)key_pw);
    struct stat st;
    int err = BATON_OK;
    if (ca && strcmp(ca, "probe") != 0) {
        int dir = stat(ca, &st) == 0 && S_ISDIR(st.st_mode);
        if (SSL_CTX_load_verify_locations(ctx, dir ? NULL : ca, dir ? ca : NULL) != 1)
            err = baton_seterr(errstr, n, BATON_INVALID, "kafka.ssl.ca.location '%s': %s", ca,
                               tls_reason(why, sizeof(why)));
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        err = baton_seterr(errstr, n, BATON_INVALID, "TLS: the system CA store: %s",
                           tls_reason(why, sizeof(why)));
    }
    if (err == BATON_OK && cert && SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        err = baton_seterr(errstr, n, BATON_INVALID, "kafka.ssl.certificate.location '%s': %s",
                           cert, tls_reason(why, sizeof(why)));
    if (err == BATON_OK && key && SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
        err = baton_seterr(errstr, n, BATON_INVALID, "kafka.ssl.key.location '%s': %s", key,
                           tls_reason(why, sizeof(why)));
    /* The password was needed only to load the key. */
    SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
    if (err != BATON_OK) {
        SSL_CTX_free(ctx);
        return err;
    }
    SSL_CTX_set_verify(ctx, sec.verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    sec.ctx = ctx;
    return BATON_OK;
}

/* A setting of the TLS or SASL family that this client does not speak. */
static int is_tls_key(const char *k) {
    return strncmp(k, "ssl.", 4) == 0 || strncmp(k, "ssl_", 4) == 0 ||
           strncmp(k, "enable.ssl.", 11) == 0;
}

static int is_sasl_key(const char *k) {
    return strncmp(k, "sasl.", 5) == 0 || strncmp(k, "enable.sasl.", 12) == 0;
}

/* The settings the lookup honours, by slot (sasl.mechanisms is librdkafka's
 * alias of sasl.mechanism: the later one wins, as there). */
enum { K_PROTO, K_CA, K_CERT, K_KEY, K_KEY_PW, K_VERIFY, K_ENDPOINT, K_MECH, K_USER, K_PW, NK };
static const struct {
    const char *key;
    int slot;
} handled[] = {
    {"security.protocol", K_PROTO},
    {"ssl.ca.location", K_CA},
    {"ssl.certificate.location", K_CERT},
    {"ssl.key.location", K_KEY},
    {"ssl.key.password", K_KEY_PW},
    {"enable.ssl.certificate.verification", K_VERIFY},
    {"ssl.endpoint.identification.algorithm", K_ENDPOINT},
    {"sasl.mechanism", K_MECH},
    {"sasl.mechanisms", K_MECH},
    {"sasl.username", K_USER},
    {"sasl.password", K_PW},
};

int coord_racks_setup(char *const *kafka, size_t nkafka, char *off, size_t off_size, char *errstr,
                      size_t n) {
    const char *val[NK] = {0};
    const char *unhandled_tls = NULL, *unhandled_sasl = NULL;
    char **kv = xcalloc(nkafka + 1, sizeof(char *));
    int err = BATON_OK;
    off[0] = 0;
    /* librdkafka's own check, so a typo is refused as the worker refuses it. */
    rd_kafka_conf_t *check = rd_kafka_conf_new();
    for (size_t i = 0; i < nkafka && err == BATON_OK; i++) {
        kv[i] = xstrdup(kafka[i]);
        char *eq = strchr(kv[i], '='), kerr[256];
        if (!eq) {
            err = baton_seterr(errstr, n, BATON_INVALID, "--kafka '%s': expected KEY=VALUE", kv[i]);
            break;
        }
        *eq = 0;
        const char *k = kv[i], *v = eq + 1;
        if (rd_kafka_conf_set(check, k, v, kerr, sizeof(kerr)) != RD_KAFKA_CONF_OK) {
            err = baton_seterr(errstr, n, BATON_INVALID, "kafka setting %s: %s", k, kerr);
            break;
        }
        size_t h;
        for (h = 0; h < BATON_ARRAY_SIZE(handled) && strcmp(handled[h].key, k) != 0; h++)
            ;
        if (h < BATON_ARRAY_SIZE(handled))
            val[handled[h].slot] = v;
        else if (is_tls_key(k))
            unhandled_tls = k;
        else if (is_sasl_key(k))
            unhandled_sasl = k;
    }
    rd_kafka_conf_destroy(check);
    const char *proto = val[K_PROTO] ? val[K_PROTO] : "plaintext";
    const char *mech = val[K_MECH] ? val[K_MECH] : "GSSAPI"; /* librdkafka's default */
    sec.tls = strcasecmp(proto, "ssl") == 0 || strcasecmp(proto, "sasl_ssl") == 0;
    sec.sasl = strcasecmp(proto, "sasl_plaintext") == 0 || strcasecmp(proto, "sasl_ssl") == 0;
    sec.verify = !val[K_VERIFY] || conf_bool(val[K_VERIFY]);
    /* https is librdkafka 2.0's default. */
    sec.verify_name = !val[K_ENDPOINT] || strcasecmp(val[K_ENDPOINT], "https") == 0;
    if (err == BATON_OK && sec.tls && unhandled_tls) {
        snprintf(off, off_size, "the rack lookup does not support kafka.%s", unhandled_tls);
    } else if (err == BATON_OK && sec.sasl && unhandled_sasl) {
        snprintf(off, off_size, "the rack lookup does not support kafka.%s", unhandled_sasl);
    } else if (err == BATON_OK && sec.sasl && strcmp(mech, "PLAIN") != 0) {
        snprintf(off, off_size, "the rack lookup speaks SASL/PLAIN only, not sasl.mechanism=%s",
                 mech);
    } else if (err == BATON_OK && sec.sasl && (!val[K_USER] || !val[K_PW])) {
        err = baton_seterr(errstr, n, BATON_INVALID,
                           "kafka.sasl.mechanism=PLAIN needs kafka.sasl.username and "
                           "kafka.sasl.password");
    } else if (err == BATON_OK && sec.tls) {
        err = tls_ctx_new(val[K_CA], val[K_CERT], val[K_KEY], val[K_KEY_PW], errstr, n);
    }
    sec.off = off[0] != 0;
    if (err == BATON_OK && !off[0] && sec.sasl) {
        sec.user = xstrdup(val[K_USER]);
        sec.password = xstrdup(val[K_PW]);
    }
    for (size_t i = 0; i < nkafka; i++)
        free(kv[i]);
    free(kv);
    return err;
}

/* ---- connection: TCP, then TLS when configured ---------------------------- */

typedef struct {
    int fd;
    SSL *ssl;
    int64_t deadline;
} conn_t;

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

/* Waits for what a TLS call that returned rc wants; -1 on a real failure. */
static int tls_wait(conn_t *c, int rc) {
    int e = SSL_get_error(c->ssl, rc);
    if (e == SSL_ERROR_WANT_READ)
        return io_wait(c->fd, POLLIN, c->deadline);
    if (e == SSL_ERROR_WANT_WRITE)
        return io_wait(c->fd, POLLOUT, c->deadline);
    return -1;
}

static int tls_handshake(conn_t *c, const char *host, const char *port, char *errstr, size_t n) {
    c->ssl = SSL_new(sec.ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1)
        return baton_seterr(errstr, n, BATON_INTERNAL, "TLS setup for %s:%s failed", host, port);
    unsigned char ip[16];
    int literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    if (!literal)
        SSL_set_tlsext_host_name(c->ssl, host);
    if (sec.verify && sec.verify_name) {
        int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host)
                         : SSL_set1_host(c->ssl, host);
        if (ok != 1)
            return baton_seterr(errstr, n, BATON_INTERNAL, "TLS: cannot verify the name '%s'",
                                host);
    }
    ERR_clear_error();
    for (;;) {
        int rc = SSL_connect(c->ssl);
        if (rc == 1)
            return BATON_OK;
        if (tls_wait(c, rc) != 0)
            break;
    }
    char why[256];
    long v = SSL_get_verify_result(c->ssl);
    if (ERR_peek_error() == 0 && baton_now_ms() >= c->deadline)
        return baton_seterr(errstr, n, BATON_TIMEOUT, "TLS handshake with %s:%s timed out", host,
                            port);
    return baton_seterr(errstr, n, BATON_CONNECTION, "TLS handshake with %s:%s failed: %s%s%s%s",
                        host, port, tls_reason(why, sizeof(why)), v != X509_V_OK ? " (" : "",
                        v != X509_V_OK ? X509_verify_cert_error_string(v) : "",
                        v != X509_V_OK ? ")" : "");
}

static int conn_io(conn_t *c, unsigned char *buf, size_t n, int writing) {
    while (n > 0) {
        ssize_t k;
        int again;
        if (c->ssl) {
            int rc = writing ? SSL_write(c->ssl, buf, (int)n) : SSL_read(c->ssl, buf, (int)n);
            k = rc;
            again = rc <= 0 && tls_wait(c, rc) == 0;
        } else {
            k = writing ? send(c->fd, buf, n, MSG_NOSIGNAL) : recv(c->fd, buf, n, 0);
            again = k < 0 && (errno == EAGAIN || errno == EINTR) &&
                    io_wait(c->fd, writing ? POLLOUT : POLLIN, c->deadline) == 0;
        }
        if (k > 0) {
            buf += k;
            n -= (size_t)k;
        } else if (!again) {
            return -1;
        }
    }
    return 0;
}

static void conn_close(conn_t *c) {
    if (c->ssl) {
        SSL_free(c->ssl);
        ERR_clear_error();
    }
    if (c->fd >= 0)
        close(c->fd);
}

/* One request (header v1: api key, version, correlation id, client id, then
 * body) and its size-prefixed reply into *reply (heap, *len bytes). */
static int conn_call(conn_t *c, const char *where, int api_key, int version, int32_t corr,
                     const unsigned char *body, size_t body_len, unsigned char **reply, size_t *len,
                     char *errstr, size_t n) {
    static const char client_id[] = "baton-coordinator";
    size_t total = 2 + 2 + 4 + 2 + strlen(client_id) + body_len;
    unsigned char *req = xmalloc(total + 4), *w = req;
    wr_i32(&w, (int32_t)total);
    wr_i16(&w, api_key);
    wr_i16(&w, version);
    wr_i32(&w, corr);
    wr_str(&w, client_id);
    memcpy(w, body, body_len);
    unsigned char hdr[4];
    int err = BATON_OK;
    *reply = NULL;
    if (conn_io(c, req, total + 4, 1) != 0 || conn_io(c, hdr, 4, 0) != 0) {
        err = baton_seterr(errstr, n, BATON_TIMEOUT,
                           "no reply to request %d from %s (closed, or not within the deadline)",
                           api_key, where);
        goto out;
    }
    rd_t rh = {.p = hdr, .end = hdr + 4};
    int32_t rlen = rd_i32(&rh);
    if (rlen < 4 || rlen > REPLY_MAX) {
        err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: reply size %d is out of range", where,
                           rlen);
        goto out;
    }
    *reply = xmalloc((size_t)rlen);
    *len = (size_t)rlen;
    if (conn_io(c, *reply, (size_t)rlen, 0) != 0)
        err = baton_seterr(errstr, n, BATON_TIMEOUT, "reply from %s cut short", where);
    else if (rd_i32(&(rd_t){.p = *reply, .end = *reply + 4}) != corr)
        err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: reply to another request", where);
out:
    if (err != BATON_OK) {
        free(*reply);
        *reply = NULL;
    }
    free(req);
    return err;
}

/* ---- the replies ---------------------------------------------------------- */

typedef struct {
    int32_t id;
    char *rack;
} broker_t;

int coord_racks_parse_metadata(const unsigned char *buf, size_t len, const char *topic, int32_t np,
                               coord_racks_t **out, char *errstr, size_t n) {
    rd_t r = {.p = buf, .end = buf + len};
    int err = BATON_OK;
    *out = NULL;
    if (np < 0)
        return baton_seterr(errstr, n, BATON_INVALID, "negative partition count");
    coord_racks_t *racks = xcalloc(1, sizeof(*racks));
    racks->n = np;
    racks->rack = xcalloc((size_t)np + 1, sizeof(char *));
    (void)rd_i32(&r); /* correlation id */
    (void)rd_i32(&r); /* throttle_time_ms (v3+) */
    int32_t nb = rd_count(&r, 12);
    broker_t *b = xcalloc((size_t)nb + 1, sizeof(*b));
    for (int32_t i = 0; i < nb; i++) {
        b[i].id = rd_i32(&r);
        free(rd_str(&r)); /* host */
        (void)rd_i32(&r); /* port */
        b[i].rack = rd_str(&r);
    }
    free(rd_str(&r)); /* cluster_id (v2+) */
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
                    free(racks->rack[p]);
                    racks->rack[p] = xstrdup(b[i].rack);
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
    if (err == BATON_OK)
        *out = racks;
    else
        coord_racks_destroy(racks);
    return err;
}

int coord_racks_parse_sasl_handshake(const unsigned char *buf, size_t len, const char *mechanism,
                                     char *errstr, size_t n) {
    rd_t r = {.p = buf, .end = buf + len};
    (void)rd_i32(&r); /* correlation id */
    int16_t code = rd_i16(&r);
    char enabled[256] = "";
    size_t used = 0;
    int32_t nm = rd_count(&r, 2);
    for (int32_t i = 0; i < nm && !r.bad; i++) {
        char *m = rd_str(&r);
        if (m && used < sizeof(enabled) - 1) {
            int k = snprintf(enabled + used, sizeof(enabled) - used, "%s%s", used ? "," : "", m);
            used = k > 0 ? used + (size_t)k : used;
            used = used < sizeof(enabled) ? used : sizeof(enabled) - 1;
        }
        free(m);
    }
    if (r.bad)
        return baton_seterr(errstr, n, BATON_CORRUPT, "malformed SaslHandshake reply (%zu bytes)",
                            len);
    if (code != 0)
        return baton_seterr(errstr, n, BATON_DENIED,
                            "the broker does not enable SASL mechanism %s (error code %d, "
                            "enabled: %s)",
                            mechanism, code, used ? enabled : "none");
    return BATON_OK;
}

int coord_racks_parse_sasl_authenticate(const unsigned char *buf, size_t len, char *errstr,
                                        size_t n) {
    rd_t r = {.p = buf, .end = buf + len};
    (void)rd_i32(&r); /* correlation id */
    int16_t code = rd_i16(&r);
    char *msg = rd_str(&r);
    int32_t nauth = rd_i32(&r);
    rd_skip(&r, nauth < 0 ? 0 : nauth); /* auth bytes (empty for PLAIN) */
    int err = BATON_OK;
    if (r.bad)
        err = baton_seterr(errstr, n, BATON_CORRUPT, "malformed SaslAuthenticate reply (%zu bytes)",
                           len);
    else if (code != 0)
        err =
            baton_seterr(errstr, n, BATON_DENIED, "SASL authentication failed: %s (error code %d)",
                         msg ? msg : "no message", code);
    free(msg);
    return err;
}

/* ---- one broker ----------------------------------------------------------- */

/* SASL/PLAIN: SaslHandshake v1, then SaslAuthenticate v0 with
 * "\0user\0password" (RFC 4616). */
static int sasl_plain(conn_t *c, const char *where, char *errstr, size_t n) {
    unsigned char hs[2 + 5], *w = hs, *reply = NULL;
    size_t len = 0;
    wr_str(&w, "PLAIN");
    int err = conn_call(c, where, SASL_HANDSHAKE_API_KEY, SASL_HANDSHAKE_VERSION, 2, hs, sizeof(hs),
                        &reply, &len, errstr, n);
    if (err == BATON_OK)
        err = coord_racks_parse_sasl_handshake(reply, len, "PLAIN", errstr, n);
    free(reply);
    reply = NULL;
    if (err != BATON_OK)
        return err;
    size_t ul = strlen(sec.user), pl = strlen(sec.password), al = 1 + ul + 1 + pl;
    unsigned char *auth = xmalloc(4 + al);
    w = auth;
    wr_i32(&w, (int32_t)al);
    *w++ = 0;
    memcpy(w, sec.user, ul);
    w += ul;
    *w++ = 0;
    memcpy(w, sec.password, pl);
    err = conn_call(c, where, SASL_AUTHENTICATE_API_KEY, SASL_AUTHENTICATE_VERSION, 3, auth, 4 + al,
                    &reply, &len, errstr, n);
    explicit_bzero(auth, 4 + al);
    free(auth);
    if (err == BATON_OK)
        err = coord_racks_parse_sasl_authenticate(reply, len, errstr, n);
    free(reply);
    return err;
}

/* One broker: connect (TLS, SASL), send Metadata, read and parse the reply. */
static int fetch_one(const char *host, const char *port, const char *topic, int32_t np,
                     int timeout_ms, coord_racks_t **out, char *errstr, size_t n) {
    conn_t c = {.fd = -1, .deadline = baton_now_ms() + timeout_ms};
    char where[300];
    snprintf(where, sizeof(where), "%s:%s", host, port);
    c.fd = sock_connect(host, port, c.deadline);
    if (c.fd < 0)
        return baton_seterr(errstr, n, BATON_CONNECTION, "cannot connect to %s", where);
    int err = sec.tls ? tls_handshake(&c, host, port, errstr, n) : BATON_OK;
    if (err == BATON_OK && sec.sasl)
        err = sasl_plain(&c, where, errstr, n);
    unsigned char *body = NULL, *reply = NULL, *w;
    size_t len = 0;
    if (err == BATON_OK) {
        body = xmalloc(4 + 2 + strlen(topic) + 1);
        w = body;
        wr_i32(&w, 1); /* one topic */
        wr_str(&w, topic);
        *w++ = 0; /* allow_auto_topic_creation (v4+): never create it */
        err = conn_call(&c, where, METADATA_API_KEY, METADATA_VERSION, 1, body, (size_t)(w - body),
                        &reply, &len, errstr, n);
    }
    if (err == BATON_OK)
        err = coord_racks_parse_metadata(reply, len, topic, np, out, errstr, n);
    free(reply);
    free(body);
    conn_close(&c);
    return err;
}

int coord_racks_fetch(const char *brokers, const char *topic, int32_t npartitions, int timeout_ms,
                      coord_racks_t **out, char *errstr, size_t n) {
    if (!brokers || !topic || npartitions < 0)
        return baton_seterr(errstr, n, BATON_INVALID, "no brokers or topic");
    if (sec.off || (sec.tls && !sec.ctx) || (sec.sasl && !sec.user))
        return baton_seterr(errstr, n, BATON_INVALID,
                            "the rack lookup is off (see coord_racks_setup's reason)");
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
        err = fetch_one(hp, colon + 1, topic, npartitions, timeout_ms, out, errstr, n);
        if (err == BATON_OK)
            break;
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
