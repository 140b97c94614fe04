/* baton/baton.h: the member library. A process joins a baton group as a
 * member; the group's coordinator assigns it resources -- Kafka partitions
 * of the group's topic and/or named keys -- and the library claims each
 * assigned resource, tells the application when it owns one and with which
 * epoch (the fencing token), and when it stops owning it.
 *
 *     baton_conf_t *conf = baton_conf_new();
 *     if (baton_conf_set(conf, "zookeeper.connect", "zk1:2181", err, sizeof(err)) != BATON_OK ||
 *         baton_conf_set(conf, "group", "jobs", err, sizeof(err)) != BATON_OK || ...) ...
 *     baton_conf_set_acquired_cb(conf, on_acquired);   // and released, opaque...
 *     baton_membership_t *m;
 *     int rc = baton_membership_new_conf(conf, &m, err, sizeof(err));
 *     baton_conf_destroy(conf);                        // the member keeps a copy
 *     if (rc != BATON_OK) ...
 *     for (;;) {                                  // the application's thread
 *         if (baton_membership_wait(m, 1000, err, sizeof(err)) != BATON_OK) break;
 *         ... write to the protected resource, stamped with the epoch that
 *             on_acquired gave, only while baton_epoch_valid(m, &r, epoch) ...
 *     }
 *     baton_membership_leave(m);                  // graceful: releases everything
 *     baton_membership_destroy(m);
 *
 * The epoch is the creation zxid of the member's claim znode: a later owner
 * of the same resource always has a higher one. The library's view of
 * ownership is a lease -- a paused process can wake up still believing it
 * owns -- so correctness comes from the resource: it must remember the
 * highest epoch it has seen and refuse writes with a lower one (see
 * baton/fence.h for a file-based one and docs/sinks.md for databases).
 * baton_epoch_valid() only saves work a fence would refuse anyway.
 *
 * Threading: a baton_membership_t belongs to the thread that created it.
 * Every function must be called on that thread. Callbacks run on that
 * thread, from inside baton_membership_poll(), baton_membership_wait() or
 * baton_membership_leave() -- never on ZooKeeper's threads -- so a callback
 * may block (flush a sink, stop a child process). While a callback blocks,
 * ZooKeeper's session is still kept alive by the client's own threads.
 * The one exception is the log callback (baton_conf_set_log_cb), which may
 * also run on the ZooKeeper client's threads. Memberships are independent:
 * a process may run several, each with its own ZooKeeper identity and log.
 *
 * Ownership of memory: a baton_conf_t copies every value it is given, and
 * a membership copies its baton_conf_t. (The frozen baton_membership_conf_t
 * form does not: its strings must outlive the membership.) A
 * baton_resource_t passed to a callback (and its key string) is valid only
 * during the call: copy what you keep.
 *
 * ABI: libbaton.so.MAJOR keeps every function and struct of this header as
 * it is. What grows is the configuration: new settings come as new
 * baton_conf_set() names and new typed baton_conf_set_*() setters, never as
 * new fields of a public struct. baton_membership_conf_t and
 * baton_membership_cbs_t are frozen: they keep working, but new settings
 * reach only baton_conf_t.
 *
 * Errors: functions return BATON_OK (0) or a negative code (baton/err.h
 * numbering: -1xx input errors, -2xx fatal ones, others retriable) and write
 * a one-line message naming what was wrong into errstr. The library never
 * exits the process and never prints except through its key=value log on
 * stderr, or through the log callback of the membership's configuration
 * (baton_conf_set_log_cb). */
#ifndef BATON_BATON_H
#define BATON_BATON_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BATON_LIBRARY_VERSION 1

/* The version of the libbaton in use (the one loaded at run time, which
 * may be newer than the headers built against): MAJOR*1000000 +
 * MINOR*1000 + PATCH, e.g. 1000 for 0.1.0. */
BATON_EXPORT int baton_version(void);
/* The same as a string: "MAJOR.MINOR.PATCH" from a release tarball; from a
 * git checkout, what `git describe` says of the commit built ("0.1.0",
 * "0.1.0-3-gabcdef123456"), or "0.1.0-gabcdef123456" when the checkout
 * has no version tag. Static; never NULL. */
BATON_EXPORT const char *baton_version_str(void);

typedef struct baton_membership_s baton_membership_t;

/* What a member owns: a partition of the group's topic, or a named key
 * (1-128 of [A-Za-z0-9._-], see batonctl keys). */
typedef enum {
    BATON_RESOURCE_PARTITION = 0,
    BATON_RESOURCE_KEY = 1,
} baton_resource_kind_t;

typedef struct {
    baton_resource_kind_t kind;
    int32_t partition; /* PARTITION: 0..partitions-1; KEY: -1 */
    const char *key;   /* KEY: the name; PARTITION: NULL */
} baton_resource_t;

/* Why a resource stops being ours. */
typedef enum {
    BATON_RELEASE_REVOKED = 0, /* the assignment moved it: flush, then it is released */
    BATON_RELEASE_LOST = 1,    /* our claim vanished (deleted, or the session expired or
                                * was evicted): stop at once, someone else may own it */
    BATON_RELEASE_LEAVE = 2,   /* graceful leave: flush, then it is released */
} baton_release_reason_t;

/* "revoked", "lost", "leave". */
BATON_EXPORT const char *baton_release_reason_name(baton_release_reason_t r);

typedef struct {
    /* Our claim on r became the lowest: we own r with epoch. Return
     * BATON_OK (0) to keep it; BATON_STALE to give the claim up (the
     * resource already saw a higher epoch); any other error to be asked
     * again a little later. */
    int (*on_acquired)(void *opaque, const baton_resource_t *r, int64_t epoch);
    /* We stop owning r. For REVOKED and LEAVE the claim is deleted after
     * this returns (together with the claims of the other resources let
     * go of in the same poll, or in the leave), so flush first; for LOST
     * it is already gone. It may call baton_membership_drop (a flush found
     * a newer epoch). */
    void (*on_released)(void *opaque, const baton_resource_t *r, baton_release_reason_t reason);
    void *opaque;
    /* Optional (NULL: none). The assignment just read gives us rs[0..n-1],
     * which it did not before; called before they are claimed, so work
     * that needs no ownership can start while the claims are made (the
     * worker starts fetching from Kafka). It grants nothing: write only
     * after on_acquired. Whether r is still assigned later:
     * baton_membership_assigned(). */
    void (*on_assigned)(void *opaque, const baton_resource_t *rs, size_t n);
} baton_membership_cbs_t;

typedef struct {
    const char *zk_hosts;   /* "host:port[,host:port...][/chroot]" */
    const char *root;       /* znode root of all groups, e.g. "/baton" */
    const char *group;      /* group name (1-128 of [A-Za-z0-9._-]) */
    const char *id;         /* member id, unique in the group, stable across restarts */
    int capacity;           /* weight in balancing; 0 means 1 */
    const char *rack;       /* NULL or "": none */
    int session_timeout_ms; /* ZooKeeper session timeout (0: 10000) */
    int connect_timeout_ms; /* give up connecting after this (0: 10000) */
    /* Which resources this member takes. keys == NULL: every key of the
     * group; otherwise only the nkeys keys named (a baton-run for one key).
     * no_partitions: take no partitions (a member that is not a Kafka
     * worker). */
    const char *const *keys;
    size_t nkeys;
    int no_partitions;
    /* This membership's ZooKeeper identity, "digest:USER:PASS", or NULL:
     * none. */
    const char *zk_auth;
} baton_membership_conf_t;

/* The stable but frozen form of baton_membership_new_conf (kept for the
 * applications written against it; new settings are not added to these
 * structs). conf->zk_auth NULL: no ZooKeeper identity. */
BATON_EXPORT int baton_membership_new(const baton_membership_conf_t *conf,
                                      const baton_membership_cbs_t *cbs, baton_membership_t **out,
                                      char *errstr, size_t errstr_size);

/* --- Configuration that grows without breaking the ABI ----------------------
 *
 * An opaque set of settings, made with baton_conf_new() and filled by name
 * (the names of the programs' config-file keys where they exist):
 *
 *   zookeeper.connect    required. "host:port[,host:port...][/chroot]"
 *                        (alias zookeeper.hosts)
 *   zookeeper.root       znode root of all groups (default "/baton")
 *   group                required. the group (1-128 of [A-Za-z0-9._-])
 *   worker.id            required. the member id, unique in the group and
 *                        stable across restarts (alias id)
 *   capacity             weight in balancing, 1..1000000 (default 1)
 *   rack                 the member's rack, at most 63 bytes ("": none)
 *   session.timeout.ms   ZooKeeper session timeout, 100..3600000 (10000)
 *                        (alias zookeeper.session.timeout.ms)
 *   connect.timeout.ms   give up connecting after this, 100..3600000 (10000)
 *                        (alias zookeeper.connect.timeout.ms)
 *   keys                 the keys this member takes, comma-separated ("":
 *                        none; not set: every key of the group). Also
 *                        baton_conf_set_keys().
 *   no.partitions        true: take no partitions (false)
 *   zookeeper.auth       this membership's ZooKeeper identity,
 *                        "digest:USER:PASS" (secret: never printed; README,
 *                        ZooKeeper authentication). Each membership
 *                        authenticates as its own identity, even two in one
 *                        process.
 *   zookeeper.auth.file  the same from a file's first line
 *   log.level            the least level of line given to the log callback:
 *                        debug, info, warn, error, off (default info)
 *   state.dir            where the member lock <group>.<id>.lock lives
 *                        (default $BATON_STATE_DIR, $STATE_DIRECTORY, else
 *                        /var/lib/baton; local to the host, never shared
 *                        storage). Holding it for the process's life lets a
 *                        restart with the same id take over its own dead
 *                        incarnation at once; another live process of this
 *                        host with the id is refused (BATON_EXISTS)
 *   member.wait.ms       how long a live member node under our id that is
 *                        not our dead incarnation is waited for before
 *                        BATON_EXISTS, 0..3600000 (0: three session timeouts)
 *   standby.claim        takeover (default) or ahead: claim what we are named
 *                        standby for all along, queued behind its owner's
 *                        claim (docs/design.md, "Claims made ahead of time")
 *   standby.notice       "ip:port" (numeric, not a wildcard; port 0: any
 *                        free one) to bind for release notices and advertise,
 *                        or off (default; docs/design.md, "Release notices")
 *
 * A NULL value resets a setting to its default. */
typedef struct baton_conf_s baton_conf_t;

/* A configuration with every default; NULL only if memory ran out. */
BATON_EXPORT baton_conf_t *baton_conf_new(void);
/* A copy of conf (NULL: NULL). */
BATON_EXPORT baton_conf_t *baton_conf_dup(const baton_conf_t *conf);
/* NULL is fine. */
BATON_EXPORT void baton_conf_destroy(baton_conf_t *conf);

/* Sets name to value (copied). Returns BATON_OK, or BATON_INVALID with a
 * message naming the setting (and the value, except a secret's) when the
 * name is unknown or the value is bad; conf is unchanged then. */
BATON_EXPORT int baton_conf_set(baton_conf_t *conf, const char *name, const char *value,
                                char *errstr, size_t errstr_size);
/* The value of name as text into buf (the password of zookeeper.auth as
 * "***"; a setting not set: its default, "" for none). Returns BATON_OK,
 * BATON_INVALID for an unknown name or a buf too small. */
BATON_EXPORT int baton_conf_get(const baton_conf_t *conf, const char *name, char *buf, size_t size);

/* The callbacks (see baton_membership_cbs_t for what each means) and the
 * opaque pointer they get. on_acquired and on_released are required. */
BATON_EXPORT void baton_conf_set_acquired_cb(
    baton_conf_t *conf, int (*on_acquired)(void *opaque, const baton_resource_t *r, int64_t epoch));
BATON_EXPORT void baton_conf_set_released_cb(baton_conf_t *conf,
                                             void (*on_released)(void *opaque,
                                                                 const baton_resource_t *r,
                                                                 baton_release_reason_t reason));
BATON_EXPORT void
baton_conf_set_assigned_cb(baton_conf_t *conf,
                           void (*on_assigned)(void *opaque, const baton_resource_t *rs, size_t n));
BATON_EXPORT void baton_conf_set_opaque(baton_conf_t *conf, void *opaque);

/* The log levels a log callback receives. */
#define BATON_LOG_LEVEL_DEBUG 0
#define BATON_LOG_LEVEL_INFO 1
#define BATON_LOG_LEVEL_WARN 2
#define BATON_LOG_LEVEL_ERROR 3

/* The membership's log: every line the library logs on its behalf --
 * including the ZooKeeper client's lines of its session (lib=zookeeper) --
 * goes to log(log_opaque, level, line) instead of stderr, if level is at
 * least log.level. line is the line as baton prints it (key=value text, or
 * JSON when the process's BATON_LOG_FORMAT is json), without a newline, and
 * valid only during the call. The callback runs on the membership's thread
 * inside the library's functions, or on the ZooKeeper client's threads (so
 * it must be thread-safe, must not block long, and must not call the
 * library). log NULL: stderr (the default). */
BATON_EXPORT void baton_conf_set_log_cb(baton_conf_t *conf,
                                        void (*log)(void *opaque, int level, const char *line),
                                        void *log_opaque);
/* The key filter as a list (copied): keys NULL means every key of the
 * group; otherwise exactly the n keys named (n 0: none). BATON_INVALID
 * (conf unchanged) for a key that is not a key name. */
BATON_EXPORT int baton_conf_set_keys(baton_conf_t *conf, const char *const *keys, size_t n,
                                     char *errstr, size_t errstr_size);

/* Like baton_membership_new, from a baton_conf_t: connects (as the
 * configuration's ZooKeeper identity, if any), reads the group config and
 * registers the member. conf is not taken: the membership keeps its own
 * copy, so the caller may destroy conf at once. A missing required setting
 * or callback is BATON_INVALID naming it. */
BATON_EXPORT int baton_membership_new_conf(const baton_conf_t *conf, baton_membership_t **out,
                                           char *errstr, size_t errstr_size);
/* Closes the session without releasing anything gracefully (the claims go
 * when the session closes). NULL is fine. */
BATON_EXPORT void baton_membership_destroy(baton_membership_t *m);

/* The topic ("" for a keys-only group) and partition count from the group config. */
BATON_EXPORT const char *baton_membership_topic(const baton_membership_t *m);
BATON_EXPORT int32_t baton_membership_partitions(const baton_membership_t *m);

/* A descriptor readable when ZooKeeper has news (with standby.notice, an
 * epoll descriptor also readable when a release notice arrives); poll it
 * with your own descriptors, then call baton_membership_poll(). Call it
 * again after each poll, from the thread that polls: it may change. */
BATON_EXPORT int baton_membership_fd(const baton_membership_t *m);
/* Processes ZooKeeper events and reconciles claims with the assignment,
 * calling the callbacks. Never blocks on the network for long (each
 * ZooKeeper request is bounded). When a deletion has just freed one of our
 * claims while another of ours still waits (a leaver's claims go in one
 * multi, their events one by one), it waits up to about a millisecond for
 * the rest, so they are taken together. Returns BATON_OK, or a fatal error with a
 * message in errstr: the member could not rejoin after its session expired
 * (duplicate id, bad credentials), or BATON_EVICTED ("evicted: ...") when
 * an operator removed it (`batonctl evict`): then every resource was
 * already released with BATON_RELEASE_LOST and the caller should exit.
 * *next_ms (may be NULL) receives how soon it wants to be called again. */
BATON_EXPORT int baton_membership_poll(baton_membership_t *m, int *next_ms, char *errstr,
                                       size_t errstr_size);
/* Blocks until there is news or timeout_ms passed (-1: as long as the
 * library itself needs), then polls. Same result as baton_membership_poll. */
BATON_EXPORT int baton_membership_wait(baton_membership_t *m, int timeout_ms, char *errstr,
                                       size_t errstr_size);

/* 1 while writes are worth attempting: the session is connected, not
 * expired, and the server answered a probe sent less than 2/3 of the
 * session timeout ago (measured at this call, so a thread that was paused
 * does not write on old news). */
BATON_EXPORT int baton_membership_can_write(const baton_membership_t *m);

/* 1 if we own r with exactly this epoch and can write (the efficiency
 * check before an expensive write; the fence at the resource decides). */
BATON_EXPORT int baton_epoch_valid(const baton_membership_t *m, const baton_resource_t *r,
                                   int64_t epoch);

/* Writes the ZooKeeper path of our claim on r into buf (e.g.
 * "/baton/jobs/keys/nightly/claims/claim-<session>-0000000003"), so that
 * the application can make its own ZooKeeper multi-op conditional on still
 * holding r: a check op on this path with version -1 succeeds exactly as
 * long as this claim (and so, once acquired, this ownership and its epoch)
 * lives. baton-run records a --once run this way. Returns BATON_OK,
 * BATON_NOTFOUND if we hold no claim on r right now (none yet, or it was
 * lost), or BATON_INVALID if r is unknown or buf is too small (512 bytes
 * always suffice). */
BATON_EXPORT int baton_membership_claim_path(const baton_membership_t *m, const baton_resource_t *r,
                                             char *buf, size_t size);

/* 1 if the assignment we last read gives r to us (owned or not yet). */
BATON_EXPORT int baton_membership_assigned(const baton_membership_t *m, const baton_resource_t *r);

/* 1 once we were evicted (see baton_membership_poll). */
BATON_EXPORT int baton_membership_evicted(const baton_membership_t *m);

/* Gives up r at once (the resource said STALE): the claim is deleted if it
 * still exists; on_released is NOT called. r is claimed again only if it
 * is still assigned to us. */
BATON_EXPORT void baton_membership_drop(baton_membership_t *m, const baton_resource_t *r);

/* Graceful leave: marks the member node "leaving" (the coordinator
 * reassigns our resources at once), calls on_released(LEAVE) for every
 * owned resource, waits until the assignment without them arrives (so the
 * successors already queue behind our claims; at most 2 s, e.g. when no
 * coordinator runs), then deletes every claim and the member node. */
BATON_EXPORT void baton_membership_leave(baton_membership_t *m);

#ifdef __cplusplus
}
#endif

#endif
