/* baton_zk_auth.c: a ZooKeeper identity, the ACL of baton's
 * znodes, and the check of the root's ACL at connect (see baton_zk_auth.h).
 * SHA-1 and base64 are here, small, so that computing ZooKeeper's digest id
 * needs no crypto library: it only names an identity, it protects nothing. */
#include "baton_zk_auth.h"

#include "baton_err.h"
#include "baton_util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUTH_MAX 1024

struct baton_zk_auth_s {
    int set;
    char user_pass[AUTH_MAX]; /* "USER:PASS": the digest scheme's credential */
    char user[AUTH_MAX];
    char digest_id[AUTH_MAX]; /* "USER:base64(sha1(USER:PASS))" */
    char root[AUTH_MAX];
    int require_write;
    struct ACL acl[2];
    struct ACL_vector vec;
    char what[40]; /* the option named in parse errors: "--zk-auth", "--zk-auth-file" */
    char opt[32];  /* the option named in connect errors: "--zk-auth" */
};

/* --- SHA-1 (FIPS 180-1) and base64 ------------------------------------------ */

static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const unsigned char *p) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

static void sha1(const unsigned char *msg, size_t len, unsigned char out[20]) {
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    size_t i = 0;
    for (; i + 64 <= len; i += 64)
        sha1_block(h, msg + i);
    unsigned char tail[128] = {0};
    size_t rest = len - i;
    memcpy(tail, msg + i, rest);
    tail[rest] = 0x80;
    size_t tlen = rest + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int j = 0; j < 8; j++)
        tail[tlen - 1 - j] = (unsigned char)(bits >> (8 * j));
    sha1_block(h, tail);
    if (tlen == 128)
        sha1_block(h, tail + 64);
    for (int j = 0; j < 5; j++) {
        out[4 * j] = (unsigned char)(h[j] >> 24);
        out[4 * j + 1] = (unsigned char)(h[j] >> 16);
        out[4 * j + 2] = (unsigned char)(h[j] >> 8);
        out[4 * j + 3] = (unsigned char)h[j];
    }
}

static void base64(const unsigned char *in, size_t len, char *out) {
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = tbl[(v >> 18) & 63];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? tbl[v & 63] : '=';
    }
    out[o] = '\0';
}

void baton_zk__digest_id(const char *user_pass, char *out, size_t out_size) {
    unsigned char md[20];
    char b64[32];
    sha1((const unsigned char *)user_pass, strlen(user_pass), md);
    base64(md, sizeof(md), b64);
    const char *colon = strchr(user_pass, ':');
    int ulen = colon ? (int)(colon - user_pass) : (int)strlen(user_pass);
    snprintf(out, out_size, "%.*s:%s", ulen, user_pass, b64);
}

/* --- the identity ------------------------------------------------------------ */

/* Reads the first line of path into buf (without the newline). */
static int read_first_line(const char *path, const char *what, char *buf, size_t size, char *errstr,
                           size_t n) {
    FILE *f = fopen(path, "r");
    if (!f)
        return baton_seterr(errstr, n, BATON_INVALID, "%s: cannot read '%s': %s", what, path,
                            strerror(errno));
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (!ok)
        return baton_seterr(errstr, n, BATON_INVALID, "%s: '%s' is empty", what, path);
    buf[strcspn(buf, "\r\n")] = '\0';
    return BATON_OK;
}

/* Fills a from spec; a->what names the option. */
static int auth_parse(baton_zk_auth_t *a, const char *spec, const char *what, char *errstr,
                      size_t n) {
    /* Never print spec itself: it holds the password. */
    if (strncmp(spec, "digest:", 7) != 0)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "%s: the scheme must be 'digest' (digest:USER:PASS)", what);
    const char *up = spec + 7, *colon = strchr(up, ':');
    if (!colon || colon == up || colon[1] == '\0')
        return baton_seterr(errstr, n, BATON_INVALID,
                            "%s: expected digest:USER:PASS with a non-empty user and password",
                            what);
    if (strlen(up) >= sizeof(a->user_pass))
        return baton_seterr(errstr, n, BATON_INVALID, "%s: too long", what);
    snprintf(a->user_pass, sizeof(a->user_pass), "%s", up);
    snprintf(a->user, sizeof(a->user), "%.*s", (int)(colon - up), up);
    baton_zk__digest_id(a->user_pass, a->digest_id, sizeof(a->digest_id));
    /* "auth" with an empty id: the server stores the creating session's
     * authenticated identities (our digest id) in its place. */
    a->acl[0].perms = ZOO_PERM_ALL;
    a->acl[0].id.scheme = (char *)"auth";
    a->acl[0].id.id = (char *)"";
    a->acl[1].perms = ZOO_PERM_READ;
    a->acl[1].id.scheme = (char *)"world";
    a->acl[1].id.id = (char *)"anyone";
    a->vec.count = 2;
    a->vec.data = a->acl;
    a->set = 1;
    return BATON_OK;
}

int baton_zk_auth_new(const char *spec, const char *spec_file, const char *root, int require_write,
                      const char *what, baton_zk_auth_t **out, char *errstr, size_t n) {
    char buf[AUTH_MAX], what_file[40];
    if (!what)
        what = "--zk-auth";
    /* The file's option: --zk-auth-file, zookeeper.auth.file. */
    snprintf(what_file, sizeof(what_file), "%.30s%s", what,
             strncmp(what, "--", 2) == 0 ? "-file" : ".file");
    if (spec && spec_file)
        return baton_seterr(errstr, n, BATON_INVALID, "give %s or %s, not both", what, what_file);
    if (spec_file) {
        int err = read_first_line(spec_file, what_file, buf, sizeof(buf), errstr, n);
        if (err != BATON_OK)
            return err;
        spec = buf;
    }
    if (strlen(root ? root : "") >= AUTH_MAX)
        return baton_seterr(errstr, n, BATON_INVALID, "--root: too long");
    baton_zk_auth_t *a = xcalloc(1, sizeof(*a));
    snprintf(a->root, sizeof(a->root), "%s", root ? root : "");
    snprintf(a->what, sizeof(a->what), "%s", spec_file ? what_file : what);
    snprintf(a->opt, sizeof(a->opt), "%.30s", what);
    a->require_write = require_write;
    if (spec) {
        int err = auth_parse(a, spec, a->what, errstr, n);
        memset(buf, 0, sizeof(buf));
        if (err != BATON_OK) {
            baton_zk_auth_destroy(a);
            return err;
        }
    }
    *out = a;
    return BATON_OK;
}

baton_zk_auth_t *baton_zk_auth_dup(const baton_zk_auth_t *a) {
    if (!a)
        return NULL;
    baton_zk_auth_t *d = xmalloc(sizeof(*d));
    memcpy(d, a, sizeof(*d));
    d->vec.data = d->acl;
    return d;
}

void baton_zk_auth_destroy(baton_zk_auth_t *a) {
    if (!a)
        return;
    memset(a->user_pass, 0, sizeof(a->user_pass));
    free(a);
}

const struct ACL_vector *baton_zk_auth_acl(const baton_zk_auth_t *a) {
    return a && a->set ? &a->vec : &ZOO_OPEN_ACL_UNSAFE;
}

const char *baton_zk_auth_user(const baton_zk_auth_t *a) { return a && a->set ? a->user : NULL; }

int baton_zk__auth_add(const baton_zk_auth_t *a, zhandle_t *zh) {
    if (!a || !a->set)
        return ZOK;
    return zoo_add_auth(zh, "digest", a->user_pass, (int)strlen(a->user_pass), NULL, NULL);
}

/* The user part of a digest id "USER:HASH" into out. */
static void id_user(const char *id, char *out, size_t size) {
    const char *colon = strchr(id, ':');
    snprintf(out, size, "%.*s", colon ? (int)(colon - id) : (int)strlen(id), id);
}

int baton_zk__auth_check(const baton_zk_auth_t *a, zhandle_t *zh, const char *hosts, char *errstr,
                         size_t n) {
    if (!a || !a->require_write || a->root[0] == '\0')
        return BATON_OK;
    struct ACL_vector acl = {0};
    struct Stat st;
    int rc = zoo_get_acl(zh, a->root, &acl, &st);
    if (rc == ZNONODE)
        return BATON_OK;
    if (rc != ZOK)
        return baton_seterr(errstr, n, BATON_CONNECTION, "cannot read the ACL of '%s' at '%s': %s",
                            a->root, hosts, zerror(rc));
    const int wperms = ZOO_PERM_WRITE | ZOO_PERM_CREATE | ZOO_PERM_DELETE;
    int ok = 0, same_user = 0;
    char others[512] = "", u[AUTH_MAX];
    for (int32_t i = 0; i < acl.count; i++) {
        const struct ACL *e = &acl.data[i];
        if ((e->perms & wperms) != wperms)
            continue;
        if (strcmp(e->id.scheme, "world") == 0 && strcmp(e->id.id, "anyone") == 0)
            ok = 1;
        else if (strcmp(e->id.scheme, "digest") == 0) {
            if (a->set && strcmp(e->id.id, a->digest_id) == 0)
                ok = 1;
            id_user(e->id.id, u, sizeof(u));
            if (a->set && strcmp(u, a->user) == 0)
                same_user = 1;
            size_t len = strlen(others);
            if (len < sizeof(others) - 140)
                snprintf(others + len, sizeof(others) - len, "%sdigest:%.128s", len ? ", " : "", u);
        }
    }
    deallocate_ACL_vector(&acl);
    if (ok)
        return BATON_OK;
    if (!a->set)
        return baton_seterr(errstr, n, BATON_DENIED,
                            "'%s' is protected by ZooKeeper ACLs (writable only by %s): give %s%s",
                            a->root, others[0] ? others : "other identities", a->opt,
                            strncmp(a->opt, "--", 2) == 0 ? " or --zk-auth-file" : "");
    if (same_user)
        return baton_seterr(errstr, n, BATON_DENIED,
                            "ZooKeeper authentication failed: '%s' belongs to digest user '%s' "
                            "with another password (check %s)",
                            a->root, a->user, a->opt);
    return baton_seterr(errstr, n, BATON_DENIED,
                        "ZooKeeper authentication failed: '%s' is writable only by %s, not by "
                        "digest user '%s' (check %s)",
                        a->root, others[0] ? others : "other identities", a->user, a->opt);
}
