/* run_zk.h: baton-run's own ZooKeeper session, besides the member
 * library's: it checks that the key exists at start and keeps the --once
 * run records, <root>/<group>/keys/<key>/runs/<run-id> (persistent, JSON:
 * run_id, key, epoch, exit_code, member, host, time_ms). A record is
 * created in one multi-op with a check on the runner's claim, so a runner
 * that lost its key (its claim is gone) can never record. Single-threaded:
 * baton-run's main thread only; reconnects by itself after an expiry. */
#ifndef BATON_RUN_ZK_H
#define BATON_RUN_ZK_H

#include <stddef.h>
#include <stdint.h>

#include "baton_zk_auth.h"

typedef struct run_zk_s run_zk_t;

/* Connects. base is "<root>/<group>", run_id NULL without --once (copied).
 * Returns BATON_OK or a connection error with errstr set. */
int run_zk_new(const char *hosts, int session_timeout_ms, int connect_timeout_ms,
               const baton_zk_auth_t *auth, const char *base, const char *key, const char *run_id,
               run_zk_t **out, char *errstr, size_t errstr_size);
void run_zk_destroy(run_zk_t *rz);

/* The session's event descriptor (-1 while reconnecting). */
int run_zk_fd(const run_zk_t *rz);
/* Drains queued events; returns 1 if any concerned the run record. */
int run_zk_events(run_zk_t *rz);

/* BATON_OK if keys/<key> exists, BATON_NOTFOUND (errstr says how to add
 * it) or a ZooKeeper error. */
int run_zk_key_check(run_zk_t *rz, char *errstr, size_t errstr_size);

/* Is the run recorded? *done = 1 (and *epoch, its epoch) or 0. With watch,
 * a watch is left on the record so run_zk_events reports its creation.
 * Returns BATON_OK or a (retriable) ZooKeeper error. */
int run_zk_run_done(run_zk_t *rz, int watch, int *done, int64_t *epoch, char *errstr,
                    size_t errstr_size);

/* Records the run's success: one multi of [check claim_path exists, create
 * runs/<run-id>]. Returns BATON_OK (recorded), BATON_EXISTS (someone
 * recorded it already), BATON_STALE (claim_path is gone: we no longer own
 * the key; nothing recorded), or a ZooKeeper error (retry). */
int run_zk_run_record(run_zk_t *rz, const char *claim_path, int64_t epoch, int exit_code,
                      const char *member_id, char *errstr, size_t errstr_size);

/* "<base>/keys/<key>/runs/<run-id>", for logs. */
const char *run_zk_run_path(const run_zk_t *rz);

#endif
