/* devkafka_guard.c: keeps librdkafka's mock cluster from creating topics on
 * demand (see devkafka_guard.h).
 *
 * The mock (librdkafka 2.0.2) creates any topic a Metadata request names
 * unless the request carries AllowAutoTopicCreation=false, and it has no
 * setting of its own for that. So baton-devkafka (1) has the mock offer
 * Metadata version 4 only, the first version with that field, and (2)
 * clears the field in every Metadata request the mock receives, whatever
 * the client asked for.
 *
 * (2) works at the socket: this executable defines accept(), recvmsg() and
 * close(), which the dynamic linker binds librdkafka's calls to (an
 * executable's symbols come first), and each calls the C library's own
 * through dlsym(RTLD_NEXT). A socket accept() returns is a connection to a
 * mock broker (devkafka_port.c's relay accepts with accept4(), which is not
 * followed); its bytes are followed request by request and the one flag
 * byte is set to 0 in the buffer before librdkafka reads it. Every other
 * socket passes untouched. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "devkafka_guard.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Kafka's Metadata request (api key 3) at version 4:
 *   int32 size, int16 api_key, int16 api_version, int32 correlation_id,
 *   nullable string client_id (int16 length, -1 for null),
 *   int32 topic count (-1: all topics), each topic a string (int16 length),
 *   int8 allow_auto_topic_creation. */
#define METADATA_KEY 3
#define METADATA_VERSION 4

/* Connections followed: a descriptor above this passes untouched (and a
 * Metadata request on it could create a topic). */
#define GUARD_MAX_FD 4096

typedef enum {
    ST_SIZE,   /* the request's int32 size */
    ST_HEADER, /* api_key, api_version, correlation_id, client_id length */
    ST_CLIENT, /* skipping the client_id */
    ST_COUNT,  /* the int32 topic count */
    ST_TOPIC,  /* a topic's int16 length */
    ST_NAME,   /* skipping a topic name */
    ST_FLAG,   /* the allow_auto_topic_creation byte */
    ST_REST,   /* skipping to the end of the request */
} guard_state_t;

typedef struct {
    atomic_int on; /* accepted by the mock: followed */
    guard_state_t st;
    int64_t left;   /* bytes of the request not yet seen (after its size) */
    int64_t skip;   /* bytes to skip in ST_CLIENT, ST_NAME, ST_REST */
    int32_t topics; /* topic names still to skip */
    uint8_t field[12];
    int have; /* bytes of field gathered */
} guard_conn_t;

static guard_conn_t conns[GUARD_MAX_FD];

static int (*real_accept)(int, struct sockaddr *, socklen_t *);
static ssize_t (*real_recvmsg)(int, struct msghdr *, int);
static int (*real_close)(int);

static void *next_symbol(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f)
        abort(); /* the C library has these; nothing works without them */
    return f;
}

static int32_t be32(const uint8_t *b) {
    return (int32_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
}
static int16_t be16(const uint8_t *b) { return (int16_t)((uint16_t)b[0] << 8 | b[1]); }

/* Gathers n bytes of a fixed field; 1 once c->field holds all n. */
static int gather(guard_conn_t *c, uint8_t byte, int n) {
    c->field[c->have++] = byte;
    if (c->have < n)
        return 0;
    c->have = 0;
    return 1;
}

/* After a topic count or a topic name: the next name, or the flag. */
static void next_topic(guard_conn_t *c) { c->st = c->topics > 0 ? ST_TOPIC : ST_FLAG; }

/* Feeds the n bytes at p (received on c, in order) through the request
 * parser, clearing allow_auto_topic_creation where it passes. */
static void guard_feed(guard_conn_t *c, uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (c->st == ST_SIZE) {
            if (gather(c, p[i++], 4)) {
                c->left = be32(c->field);
                c->st = c->left > 0 ? ST_HEADER : ST_SIZE;
            }
            continue;
        }
        if (c->st == ST_CLIENT || c->st == ST_NAME || c->st == ST_REST) {
            int64_t k = (int64_t)(n - i) < c->skip ? (int64_t)(n - i) : c->skip;
            if (k > c->left)
                k = c->left;
            i += (size_t)k;
            c->skip -= k;
            c->left -= k;
        } else {
            uint8_t b = p[i];
            if (c->st == ST_FLAG)
                p[i] = 0;
            i++;
            c->left--;
            switch (c->st) {
            case ST_HEADER:
                if (gather(c, b, 10)) {
                    int16_t key = be16(c->field), ver = be16(c->field + 2);
                    int16_t clen = be16(c->field + 8);
                    if (key != METADATA_KEY || ver != METADATA_VERSION) {
                        c->st = ST_REST;
                        c->skip = c->left;
                    } else {
                        c->st = ST_CLIENT;
                        c->skip = clen > 0 ? clen : 0;
                    }
                }
                break;
            case ST_COUNT:
                if (gather(c, b, 4)) {
                    c->topics = be32(c->field);
                    next_topic(c);
                }
                break;
            case ST_TOPIC:
                if (gather(c, b, 2)) {
                    int16_t len = be16(c->field);
                    c->topics--;
                    c->st = ST_NAME;
                    c->skip = len > 0 ? len : 0;
                }
                break;
            case ST_FLAG:
                c->st = ST_REST;
                c->skip = c->left;
                break;
            default: break;
            }
        }
        /* A finished skip moves on; so does the end of the request. */
        if (c->left <= 0) {
            c->st = ST_SIZE;
            c->have = 0;
        } else if (c->skip == 0 && c->st == ST_CLIENT) {
            c->st = ST_COUNT;
        } else if (c->skip == 0 && c->st == ST_NAME) {
            next_topic(c);
        }
    }
    /* A request whose last bytes were a skip ends here too. */
    if (c->left <= 0 && c->st != ST_SIZE) {
        c->st = ST_SIZE;
        c->have = 0;
    }
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    if (!real_accept)
        real_accept = next_symbol("accept");
    int s = real_accept(fd, addr, len);
    if (s >= 0 && s < GUARD_MAX_FD) {
        guard_conn_t *c = &conns[s];
        c->st = ST_SIZE;
        c->have = 0;
        c->left = c->skip = 0;
        atomic_store(&c->on, 1);
    }
    return s;
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
    if (!real_recvmsg)
        real_recvmsg = next_symbol("recvmsg");
    ssize_t r = real_recvmsg(fd, msg, flags);
    if (r <= 0 || fd < 0 || fd >= GUARD_MAX_FD || !atomic_load(&conns[fd].on) || (flags & MSG_PEEK))
        return r;
    size_t todo = (size_t)r;
    for (size_t v = 0; v < msg->msg_iovlen && todo > 0; v++) {
        size_t k = msg->msg_iov[v].iov_len < todo ? msg->msg_iov[v].iov_len : todo;
        guard_feed(&conns[fd], msg->msg_iov[v].iov_base, k);
        todo -= k;
    }
    return r;
}

int close(int fd) {
    if (!real_close)
        real_close = next_symbol("close");
    /* Forgotten before the descriptor can be reused by another socket. */
    if (fd >= 0 && fd < GUARD_MAX_FD)
        atomic_store(&conns[fd].on, 0);
    return real_close(fd);
}

rd_kafka_resp_err_t devkafka_guard_init(rd_kafka_mock_cluster_t *mcluster) {
    return rd_kafka_mock_set_apiversion(mcluster, METADATA_KEY, METADATA_VERSION, METADATA_VERSION);
}
