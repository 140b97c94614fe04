/* run_zk.c: baton-run's key check and --once run records (run_zk.h). */
#include "run_zk.h"

#include "baton_err.h"
#include "baton_layout.h"
#include "baton_log.h"
#include "baton_util.h"
#include "baton_zk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct run_zk_s {
    baton_zk_t *zk; /* NULL after an expiry until the next use reconnects */
    char *hosts;
    int session_timeout_ms, connect_timeout_ms;
    char *key_path;  /* <base>/keys/<key> */
    char *runs_path; /* <base>/keys/<key>/runs */
    char *run_path;  /* <base>/keys/<key>/runs/<run-id>, or NULL */
    char *run_id;
    char *key;
    baton_zk_auth_t *auth; /* --zk-auth (copy), or NULL */
};

int run_zk_new(const char *hosts, int session_timeout_ms, int connect_timeout_ms,
               const baton_zk_auth_t *auth, const char *base, const char *key, const char *run_id,
               run_zk_t **out, char *errstr, size_t n) {
    run_zk_t *rz = xcalloc(1, sizeof(*rz));
    rz->hosts = xstrdup(hosts);
    rz->auth = baton_zk_auth_dup(auth);
    rz->session_timeout_ms = session_timeout_ms;
    rz->connect_timeout_ms = connect_timeout_ms;
    rz->key = xstrdup(key);
    rz->key_path = baton_layout_key(base, key);
    rz->runs_path = baton_layout_key_runs(base, key);
    if (run_id) {
        rz->run_id = xstrdup(run_id);
        rz->run_path = baton_layout_child(rz->runs_path, run_id);
    }
    int err = baton_zk_connect(hosts, session_timeout_ms, connect_timeout_ms, rz->auth, &rz->zk,
                               errstr, n);
    if (err != BATON_OK) {
        run_zk_destroy(rz);
        return err;
    }
    *out = rz;
    return BATON_OK;
}

void run_zk_destroy(run_zk_t *rz) {
    if (!rz)
        return;
    baton_zk_destroy(rz->zk);
    baton_zk_auth_destroy(rz->auth);
    free(rz->hosts);
    free(rz->key);
    free(rz->key_path);
    free(rz->runs_path);
    free(rz->run_path);
    free(rz->run_id);
    free(rz);
}

/* A live session, reconnecting after an expiry (bounded by the connect
 * timeout, at most the session timeout). */
static int session(run_zk_t *rz, char *errstr, size_t n) {
    if (rz->zk && !baton_zk_expired(rz->zk))
        return BATON_OK;
    if (rz->zk) {
        BLOG_INFO("event=zk_reconnect what=run_records");
        baton_zk_destroy(rz->zk);
        rz->zk = NULL;
    }
    int t = rz->connect_timeout_ms < rz->session_timeout_ms ? rz->connect_timeout_ms
                                                            : rz->session_timeout_ms;
    return baton_zk_connect(rz->hosts, rz->session_timeout_ms, t, rz->auth, &rz->zk, errstr, n);
}

int run_zk_fd(const run_zk_t *rz) { return rz->zk ? baton_zk_fd(rz->zk) : -1; }

int run_zk_events(run_zk_t *rz) {
    int hit = 0;
    baton_zk_event_t ev;
    while (rz->zk && baton_zk_next_event(rz->zk, &ev)) {
        if (rz->run_path && ev.path && strcmp(ev.path, rz->run_path) == 0)
            hit = 1;
        baton_zk_event_release(&ev);
    }
    return hit;
}

const char *run_zk_run_path(const run_zk_t *rz) { return rz->run_path ? rz->run_path : ""; }

int run_zk_key_check(run_zk_t *rz, char *errstr, size_t n) {
    int err = session(rz, errstr, n);
    if (err != BATON_OK)
        return err;
    err = baton_zk_exists(rz->zk, rz->key_path, 0, NULL);
    if (err == BATON_NOTFOUND)
        return baton_seterr(errstr, n, err,
                            "key '%s' does not exist ('%s'): add it with batonctl keys add %s",
                            rz->key, rz->key_path, rz->key);
    if (err != BATON_OK)
        return baton_seterr(errstr, n, err, "cannot read '%s': %s", rz->key_path,
                            baton_strerror(err));
    return BATON_OK;
}

/* The "epoch" member of a record's JSON, or 0. */
static int64_t record_epoch(const char *data) {
    const char *p = data ? strstr(data, "\"epoch\":") : NULL;
    return p ? strtoll(p + 8, NULL, 10) : 0;
}

int run_zk_run_done(run_zk_t *rz, int watch, int *done, int64_t *epoch, char *errstr, size_t n) {
    *done = 0;
    if (!rz->run_path)
        return BATON_OK;
    int err = session(rz, errstr, n);
    if (err != BATON_OK)
        return err;
    if (watch) {
        /* exists leaves the watch whether or not the record is there yet. */
        err = baton_zk_exists(rz->zk, rz->run_path, 1, NULL);
        if (err == BATON_NOTFOUND)
            return BATON_OK;
        if (err != BATON_OK)
            return baton_seterr(errstr, n, err, "cannot read '%s': %s", rz->run_path,
                                baton_strerror(err));
    }
    char *data = NULL;
    size_t len = 0;
    err = baton_zk_get(rz->zk, rz->run_path, 0, &data, &len, NULL);
    if (err == BATON_NOTFOUND)
        return BATON_OK;
    if (err != BATON_OK)
        return baton_seterr(errstr, n, err, "cannot read '%s': %s", rz->run_path,
                            baton_strerror(err));
    *done = 1;
    if (epoch)
        *epoch = record_epoch(data);
    free(data);
    return BATON_OK;
}

int run_zk_run_record(run_zk_t *rz, const char *claim_path, int64_t epoch, int exit_code,
                      const char *member_id, char *errstr, size_t n) {
    if (!rz->run_path)
        return baton_seterr(errstr, n, BATON_INVALID, "no run id");
    int err = session(rz, errstr, n);
    if (err != BATON_OK)
        return err;
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    for (char *h = host; *h; h++)
        if (*h == '"' || *h == '\\' || (unsigned char)*h < 0x20)
            *h = '_';
    /* Every string here is validated ([A-Za-z0-9._-]) but the host name. */
    char *data = xasprintf("{\"run_id\":\"%s\",\"key\":\"%s\",\"epoch\":%lld,\"exit_code\":%d,"
                           "\"member\":\"%s\",\"host\":\"%s\",\"time_ms\":%lld}",
                           rz->run_id, rz->key, (long long)epoch, exit_code, member_id, host,
                           (long long)baton_wall_ms());
    for (int attempt = 0; attempt < 2; attempt++) {
        /* The runs directory, once per key (a missing key: our claim went
         * with it, the multi below says so). */
        int cerr = baton_zk_create(rz->zk, rz->runs_path, NULL, 0, 0, NULL, 0, NULL);
        if (cerr != BATON_OK && cerr != BATON_EXISTS && cerr != BATON_NOTFOUND) {
            err = baton_seterr(errstr, n, cerr, "cannot create '%s': %s", rz->runs_path,
                               baton_strerror(cerr));
            break;
        }
        zoo_op_t ops[2];
        zoo_op_result_t res[2];
        memset(res, 0, sizeof(res));
        zoo_check_op_init(&ops[0], claim_path, -1);
        zoo_create_op_init(&ops[1], rz->run_path, data, (int)strlen(data), baton_zk_acl(rz->zk), 0,
                           NULL, 0);
        int rc = baton_zk_multi(rz->zk, 2, ops, res);
        if (rc == ZOK) {
            err = BATON_OK;
            break;
        }
        if (rc == ZNONODE && res[0].err == ZNONODE) {
            err =
                baton_seterr(errstr, n, BATON_STALE,
                             "our claim '%s' is gone: another owner runs the key now", claim_path);
            break;
        }
        if (rc == ZNODEEXISTS) {
            err = baton_seterr(errstr, n, BATON_EXISTS, "'%s' was already recorded", rz->run_path);
            break;
        }
        if (rc == ZNONODE) { /* the runs directory went meanwhile: once more */
            err = baton_seterr(errstr, n, BATON_NOTFOUND, "'%s' does not exist (key removed?)",
                               rz->runs_path);
            continue;
        }
        err = baton_zk_err(rc);
        if (err == BATON_CONNECTION) {
            /* The reply was lost: did it commit? Our own record has our
             * epoch; anyone else's means it was done anyway. */
            int done = 0;
            int64_t e = 0;
            char tmp[256];
            if (run_zk_run_done(rz, 0, &done, &e, tmp, sizeof(tmp)) == BATON_OK && done) {
                err = e == epoch ? BATON_OK : BATON_EXISTS;
                if (err == BATON_EXISTS)
                    baton_seterr(errstr, n, err, "'%s' was recorded by epoch %lld", rz->run_path,
                                 (long long)e);
                break;
            }
        }
        baton_seterr(errstr, n, err, "cannot record '%s': %s", rz->run_path, baton_strerror(err));
        break;
    }
    free(data);
    return err;
}
