/* conf.c: baton_conf_t, the membership's configuration that grows without
 * breaking the ABI (baton/baton.h), and the two ways into a membership:
 * baton_membership_new_conf and the frozen baton_membership_new. Both end
 * in baton_membership__new (worker/membership.c) with the per-handle
 * ZooKeeper identity and log sink (baton_member_int.h). */
#include "baton_member_int.h"

#include "baton_codec.h"
#include "baton_group.h"
#include "baton_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One setting: its names and where its value goes. */
typedef enum { SET_STR, SET_INT, SET_BOOL, SET_LEVEL, SET_KEYS } set_kind_t;

typedef struct {
    const char *name, *alias;
    set_kind_t kind;
    int min, max;     /* SET_INT */
    const char *dflt; /* SET_STR: what baton_conf_get says when not set (NULL: "") */
} setting_t;

enum {
    S_CONNECT,
    S_ROOT,
    S_GROUP,
    S_ID,
    S_CAPACITY,
    S_RACK,
    S_SESSION,
    S_CONNECT_TIMEOUT,
    S_KEYS,
    S_NO_PARTITIONS,
    S_AUTH,
    S_AUTH_FILE,
    S_LOG_LEVEL,
    S_STATE_DIR,
    S_MEMBER_WAIT,
    S_STANDBY_CLAIM,
    S_STANDBY_NOTICE,
    S_COUNT
};

static const setting_t settings[S_COUNT] = {
    [S_CONNECT] = {"zookeeper.connect", "zookeeper.hosts", SET_STR, 0, 0, NULL},
    [S_ROOT] = {"zookeeper.root", NULL, SET_STR, 0, 0, BATON_DEFAULT_ROOT},
    [S_GROUP] = {"group", NULL, SET_STR, 0, 0, NULL},
    [S_ID] = {"worker.id", "id", SET_STR, 0, 0, NULL},
    [S_CAPACITY] = {"capacity", NULL, SET_INT, 1, 1000000, NULL},
    [S_RACK] = {"rack", NULL, SET_STR, 0, 0, NULL},
    [S_SESSION] = {"session.timeout.ms", "zookeeper.session.timeout.ms", SET_INT, 100, 3600000,
                   NULL},
    [S_CONNECT_TIMEOUT] = {"connect.timeout.ms", "zookeeper.connect.timeout.ms", SET_INT, 100,
                           3600000, NULL},
    [S_KEYS] = {"keys", NULL, SET_KEYS, 0, 0, NULL},
    [S_NO_PARTITIONS] = {"no.partitions", NULL, SET_BOOL, 0, 0, NULL},
    [S_AUTH] = {"zookeeper.auth", NULL, SET_STR, 0, 0, NULL},
    [S_AUTH_FILE] = {"zookeeper.auth.file", NULL, SET_STR, 0, 0, NULL},
    [S_LOG_LEVEL] = {"log.level", NULL, SET_LEVEL, 0, 0, NULL},
    [S_STATE_DIR] = {"state.dir", NULL, SET_STR, 0, 0, NULL},
    [S_MEMBER_WAIT] = {"member.wait.ms", NULL, SET_INT, 0, 3600000, NULL},
    [S_STANDBY_CLAIM] = {"standby.claim", NULL, SET_STR, 0, 0, "takeover"},
    [S_STANDBY_NOTICE] = {"standby.notice", NULL, SET_STR, 0, 0, "off"},
};

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};
/* The public levels a log callback gets are baton_log's. */
_Static_assert(BATON_LOG_LEVEL_DEBUG == (int)BATON_LOG_DEBUG &&
                   BATON_LOG_LEVEL_INFO == (int)BATON_LOG_INFO &&
                   BATON_LOG_LEVEL_WARN == (int)BATON_LOG_WARN &&
                   BATON_LOG_LEVEL_ERROR == (int)BATON_LOG_ERROR,
               "baton.h's log levels differ from baton_log.h's");

struct baton_conf_s {
    char *str[S_COUNT]; /* SET_STR values (heap), NULL: not set */
    int num[S_COUNT];   /* SET_INT, SET_BOOL, SET_LEVEL values */
    char **keys;        /* the key filter; NULL with keys_set 0: every key */
    size_t nkeys;
    int keys_set;
    baton_membership_cbs_t cbs;
    baton_log_sink_t log;  /* log.cb NULL: stderr */
    baton_zk_auth_t *auth; /* baton_conf__set_zk_auth's, in place of the two settings */
    int auth_given;
};

static void conf_defaults(baton_conf_t *c) {
    c->num[S_CAPACITY] = 1;
    c->num[S_SESSION] = 10000;
    c->num[S_CONNECT_TIMEOUT] = 10000;
    c->num[S_LOG_LEVEL] = BATON_LOG_INFO;
    c->log.level = BATON_LOG_INFO;
}

baton_conf_t *baton_conf_new(void) {
    baton_conf_t *c = calloc(1, sizeof(*c));
    if (c)
        conf_defaults(c);
    return c;
}

static void keys_free(char **keys, size_t n) {
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i]);
    free(keys);
}

void baton_conf_destroy(baton_conf_t *c) {
    if (!c)
        return;
    for (int i = 0; i < S_COUNT; i++) {
        if (c->str[i] && i == S_AUTH)
            memset(c->str[i], 0, strlen(c->str[i])); /* a password */
        free(c->str[i]);
    }
    keys_free(c->keys, c->nkeys);
    baton_zk_auth_destroy(c->auth);
    free(c);
}

/* A heap copy of n keys (NULL: NULL). */
static char **keys_dup(const char *const *keys, size_t n) {
    if (!keys)
        return NULL;
    char **out = xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(keys[i]);
    return out;
}

baton_conf_t *baton_conf_dup(const baton_conf_t *c) {
    if (!c)
        return NULL;
    baton_conf_t *d = xmalloc(sizeof(*d));
    *d = *c;
    for (int i = 0; i < S_COUNT; i++)
        d->str[i] = c->str[i] ? xstrdup(c->str[i]) : NULL;
    d->keys = keys_dup((const char *const *)c->keys, c->nkeys);
    d->auth = baton_zk_auth_dup(c->auth);
    return d;
}

static const setting_t *setting_find(const char *name, int *idx) {
    for (int i = 0; name && i < S_COUNT; i++)
        if (strcmp(name, settings[i].name) == 0 ||
            (settings[i].alias && strcmp(name, settings[i].alias) == 0)) {
            *idx = i;
            return &settings[i];
        }
    return NULL;
}

/* A strict decimal integer in min..max. */
static int parse_int(const char *v, int min, int max, int *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max)
        return -1;
    *out = (int)x;
    return 0;
}

/* Validates a comma-separated key list; *out (heap) and *n on success. */
static int parse_keys(const char *v, char ***out, size_t *n, char *errstr, size_t size) {
    char **keys = NULL;
    size_t count = 0, total = 0;
    const char *p = v;
    while (*v) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *k = xmalloc(len + 1);
        memcpy(k, p, len);
        k[len] = 0;
        keys = xrealloc(keys, sizeof(char *) * (count + 1));
        keys[count++] = k;
        total += len + 1;
        if (baton_key_valid(k) != 0) {
            int err = baton_seterr(errstr, size, BATON_INVALID,
                                   "keys: '%s' is not a key name (1-128 of [A-Za-z0-9._-])", k);
            keys_free(keys, count);
            return err;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    if (total >= BATON_MEMBER_KEYS_MAX) {
        keys_free(keys, count);
        return baton_seterr(errstr, size, BATON_INVALID,
                            "keys: the key filter is over %d bytes: take every key instead",
                            BATON_MEMBER_KEYS_MAX);
    }
    *out = keys ? keys : xcalloc(1, sizeof(char *));
    *n = count;
    return BATON_OK;
}

/* The checks of a string setting's value, at set time. */
static int check_str(int idx, const char *v, char *errstr, size_t size) {
    const char *name = settings[idx].name;
    switch (idx) {
    case S_CONNECT:
        if (!*v)
            return baton_seterr(errstr, size, BATON_INVALID, "%s: empty", name);
        break;
    case S_ROOT:
        if (baton_root_valid(v) != 0)
            return baton_seterr(errstr, size, BATON_INVALID, "%s: '%s' is not a valid znode path",
                                name, v);
        break;
    case S_GROUP:
    case S_ID:
        if (baton_id_valid(v) != 0)
            return baton_seterr(errstr, size, BATON_INVALID,
                                "%s: '%s' is not a valid name (1-128 of [A-Za-z0-9._-])", name, v);
        break;
    case S_STANDBY_CLAIM:
        if (strcmp(v, "takeover") != 0 && strcmp(v, "ahead") != 0)
            return baton_seterr(errstr, size, BATON_INVALID, "%s: '%s' is not takeover or ahead",
                                name, v);
        break;
    case S_STANDBY_NOTICE: {
        char why[256];
        if (baton_membership__notice_check(v, why, sizeof(why)) != BATON_OK)
            return baton_seterr(errstr, size, BATON_INVALID, "%s: %s", name, why);
        break;
    }
    case S_RACK:
        if (strlen(v) >= 64)
            return baton_seterr(errstr, size, BATON_INVALID, "%s: longer than 63 bytes", name);
        break;
    case S_AUTH:
    case S_AUTH_FILE: {
        /* Parsed (and the file read) now for a clear error; made again at
         * baton_membership_new_conf with the final root. */
        baton_zk_auth_t *a = NULL;
        int err = baton_zk_auth_new(idx == S_AUTH ? v : NULL, idx == S_AUTH ? NULL : v, NULL, 1,
                                    "zookeeper.auth", &a, errstr, size);
        baton_zk_auth_destroy(a);
        return err;
    }
    default: break;
    }
    return BATON_OK;
}

int baton_conf_set(baton_conf_t *c, const char *name, const char *value, char *errstr,
                   size_t size) {
    int idx = -1;
    if (!c)
        return baton_seterr(errstr, size, BATON_INVALID, "baton_conf_set: conf is NULL");
    const setting_t *s = setting_find(name, &idx);
    if (!s)
        return baton_seterr(errstr, size, BATON_INVALID, "unknown setting '%s'",
                            name ? name : "(null)");
    if (!value) { /* back to the default */
        baton_conf_t d = {0};
        conf_defaults(&d);
        free(c->str[idx]);
        c->str[idx] = NULL;
        c->num[idx] = d.num[idx];
        if (idx == S_KEYS) {
            keys_free(c->keys, c->nkeys);
            c->keys = NULL;
            c->nkeys = 0;
            c->keys_set = 0;
        }
        if (idx == S_LOG_LEVEL)
            c->log.level = d.log.level;
        return BATON_OK;
    }
    int x = 0;
    switch (s->kind) {
    case SET_STR: {
        int err = check_str(idx, value, errstr, size);
        if (err != BATON_OK)
            return err;
        free(c->str[idx]);
        c->str[idx] = xstrdup(value);
        return BATON_OK;
    }
    case SET_INT:
        if (parse_int(value, s->min, s->max, &x) != 0)
            return baton_seterr(errstr, size, BATON_INVALID, "%s: '%s' is not an integer in %d..%d",
                                s->name, value, s->min, s->max);
        break;
    case SET_BOOL:
        if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
            x = 1;
        else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
            x = 0;
        else
            return baton_seterr(errstr, size, BATON_INVALID, "%s: '%s' is not true or false",
                                s->name, value);
        break;
    case SET_LEVEL:
        for (x = 0; x < 5 && strcmp(value, level_names[x]) != 0; x++)
            ;
        if (x == 5)
            return baton_seterr(errstr, size, BATON_INVALID,
                                "%s: '%s' is not debug, info, warn, error or off", s->name, value);
        c->log.level = (baton_log_level_t)x;
        break;
    case SET_KEYS: {
        char **keys = NULL;
        size_t n = 0;
        int err = parse_keys(value, &keys, &n, errstr, size);
        if (err != BATON_OK)
            return err;
        keys_free(c->keys, c->nkeys);
        c->keys = keys;
        c->nkeys = n;
        c->keys_set = 1;
        return BATON_OK;
    }
    }
    c->num[idx] = x;
    return BATON_OK;
}

int baton_conf_get(const baton_conf_t *c, const char *name, char *buf, size_t size) {
    int idx = -1;
    const setting_t *s = setting_find(name, &idx);
    if (!c || !s || !buf || size == 0)
        return BATON_INVALID;
    size_t need = 0;
    switch (s->kind) {
    case SET_STR:
        if (idx == S_AUTH && c->str[idx]) {
            /* digest:USER:*** -- never the password. */
            const char *colon = strchr(c->str[idx] + 7, ':');
            int ulen = colon ? (int)(colon - c->str[idx]) : (int)strlen(c->str[idx]);
            need = (size_t)snprintf(buf, size, "%.*s:***", ulen, c->str[idx]);
        } else if (s->dflt && (!c->str[idx] || !c->str[idx][0])) {
            need = (size_t)snprintf(buf, size, "%s", s->dflt);
        } else {
            need = (size_t)snprintf(buf, size, "%s", c->str[idx] ? c->str[idx] : "");
        }
        break;
    case SET_INT: need = (size_t)snprintf(buf, size, "%d", c->num[idx]); break;
    case SET_BOOL: need = (size_t)snprintf(buf, size, "%s", c->num[idx] ? "true" : "false"); break;
    case SET_LEVEL: need = (size_t)snprintf(buf, size, "%s", level_names[c->log.level]); break;
    case SET_KEYS: {
        size_t pos = 0;
        buf[0] = 0;
        for (size_t i = 0; c->keys && i < c->nkeys; i++) {
            need = pos + (size_t)snprintf(buf + (pos < size ? pos : size - 1),
                                          pos < size ? size - pos : 1, "%s%s", i ? "," : "",
                                          c->keys[i]);
            pos = need;
        }
        break;
    }
    }
    return need < size ? BATON_OK : BATON_INVALID;
}

void baton_conf_set_acquired_cb(baton_conf_t *c,
                                int (*cb)(void *, const baton_resource_t *, int64_t)) {
    if (c)
        c->cbs.on_acquired = cb;
}

void baton_conf_set_released_cb(baton_conf_t *c, void (*cb)(void *, const baton_resource_t *,
                                                            baton_release_reason_t)) {
    if (c)
        c->cbs.on_released = cb;
}

void baton_conf_set_assigned_cb(baton_conf_t *c,
                                void (*cb)(void *, const baton_resource_t *, size_t)) {
    if (c)
        c->cbs.on_assigned = cb;
}

void baton_conf_set_opaque(baton_conf_t *c, void *opaque) {
    if (c)
        c->cbs.opaque = opaque;
}

void baton_conf_set_log_cb(baton_conf_t *c, void (*log)(void *, int, const char *),
                           void *log_opaque) {
    if (!c)
        return;
    c->log.cb = log;
    c->log.opaque = log_opaque;
}

int baton_conf_set_keys(baton_conf_t *c, const char *const *keys, size_t n, char *errstr,
                        size_t size) {
    if (!c)
        return baton_seterr(errstr, size, BATON_INVALID, "baton_conf_set_keys: conf is NULL");
    size_t total = 0;
    for (size_t i = 0; keys && i < n; i++) {
        if (!keys[i] || baton_key_valid(keys[i]) != 0)
            return baton_seterr(errstr, size, BATON_INVALID,
                                "keys: '%s' is not a key name (1-128 of [A-Za-z0-9._-])",
                                keys[i] ? keys[i] : "(null)");
        total += strlen(keys[i]) + 1;
    }
    if (total >= BATON_MEMBER_KEYS_MAX)
        return baton_seterr(errstr, size, BATON_INVALID,
                            "keys: the key filter is over %d bytes: take every key instead",
                            BATON_MEMBER_KEYS_MAX);
    keys_free(c->keys, c->nkeys);
    c->keys = keys_dup(keys, n);
    c->nkeys = keys ? n : 0;
    c->keys_set = keys != NULL;
    return BATON_OK;
}

static void conf_free(void *c) { baton_conf_destroy(c); }

void baton_conf__set_zk_auth(baton_conf_t *c, const baton_zk_auth_t *auth) {
    baton_zk_auth_destroy(c->auth);
    c->auth = baton_zk_auth_dup(auth);
    c->auth_given = 1;
}

/* The identity of conf (or of the frozen struct's zk_auth) for root. */
static int conf_auth(const char *spec, const char *file, const char *root, baton_zk_auth_t **out,
                     char *errstr, size_t size) {
    *out = NULL;
    if (!spec && !file)
        return BATON_OK;
    if (spec && file)
        return baton_seterr(errstr, size, BATON_INVALID,
                            "give zookeeper.auth or zookeeper.auth.file, not both");
    return baton_zk_auth_new(spec, file, root ? root : BATON_DEFAULT_ROOT, 1, "zookeeper.auth", out,
                             errstr, size);
}

int baton_membership_new_conf(const baton_conf_t *conf, baton_membership_t **out, char *errstr,
                              size_t size) {
    if (!conf || !out)
        return baton_seterr(errstr, size, BATON_INVALID,
                            "baton_membership_new_conf: conf and out are required");
    static const int required[] = {S_CONNECT, S_GROUP, S_ID};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(required); i++)
        if (!conf->str[required[i]])
            return baton_seterr(errstr, size, BATON_INVALID, "%s is required",
                                settings[required[i]].name);
    if (!conf->cbs.on_acquired || !conf->cbs.on_released)
        return baton_seterr(errstr, size, BATON_INVALID,
                            "the on_acquired and on_released callbacks are required "
                            "(baton_conf_set_acquired_cb, baton_conf_set_released_cb)");
    /* The membership points into a copy of its own, freed with it. */
    baton_conf_t *c = baton_conf_dup(conf);
    baton_membership_conf_t mc = {
        .zk_hosts = c->str[S_CONNECT],
        .root = c->str[S_ROOT],
        .group = c->str[S_GROUP],
        .id = c->str[S_ID],
        .capacity = c->num[S_CAPACITY],
        .rack = c->str[S_RACK],
        .session_timeout_ms = c->num[S_SESSION],
        .connect_timeout_ms = c->num[S_CONNECT_TIMEOUT],
        .keys = c->keys_set ? (const char *const *)c->keys : NULL,
        .nkeys = c->nkeys,
        .no_partitions = c->num[S_NO_PARTITIONS],
    };
    baton_zk_auth_t *auth = NULL;
    int err = BATON_OK;
    if (!c->auth_given)
        err = conf_auth(c->str[S_AUTH], c->str[S_AUTH_FILE], mc.root, &auth, errstr, size);
    baton_membership_ext_t ext = {.zk_auth = c->auth_given ? c->auth : auth,
                                  .log = c->log.cb ? &c->log : NULL,
                                  .keep = c,
                                  .keep_free = conf_free,
                                  .state_dir = c->str[S_STATE_DIR],
                                  .member_wait_ms = c->num[S_MEMBER_WAIT],
                                  .claim_ahead = c->str[S_STANDBY_CLAIM] &&
                                                 strcmp(c->str[S_STANDBY_CLAIM], "ahead") == 0,
                                  .notice = c->str[S_STANDBY_NOTICE]};
    if (err == BATON_OK)
        err = baton_membership__new(&mc, &c->cbs, &ext, out, errstr, size);
    baton_zk_auth_destroy(auth);
    if (err != BATON_OK) {
        baton_conf_destroy(c);
        return err;
    }
    return BATON_OK;
}

int baton_membership_new(const baton_membership_conf_t *conf, const baton_membership_cbs_t *cbs,
                         baton_membership_t **out, char *errstr, size_t size) {
    if (!conf || !cbs || !out)
        return baton_seterr(errstr, size, BATON_INVALID,
                            "baton_membership_new: conf, cbs and out are required");
    baton_zk_auth_t *auth = NULL;
    int err = conf_auth(conf->zk_auth, NULL, conf->root, &auth, errstr, size);
    baton_membership_ext_t ext = {.zk_auth = auth};
    if (err == BATON_OK)
        err = baton_membership__new(conf, cbs, &ext, out, errstr, size);
    baton_zk_auth_destroy(auth);
    return err;
}
