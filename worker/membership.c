/* membership.c: registration, assignment watch and claims of one worker (see
 * membership.h). Single-threaded: ZooKeeper's completion thread only queues
 * events through baton_zk; everything here runs on the owner's thread. */
#include "membership.h"

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_log.h"
#include "baton_metrics.h"
#include "baton_util.h"
#include "baton_zk.h"

#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RETRY_MS 200

/* The liveness probe's state, shared with ZooKeeper's completion thread:
 * the completion only stores into these atomics (no I/O, no locks), the
 * owner thread reads them. Heap-allocated and freed only after the handle is
 * closed (zookeeper_close joins the completion thread). */
typedef struct {
    _Atomic int64_t sent_ms;  /* when the probe in flight was sent */
    _Atomic int64_t heard_ms; /* send time of the latest answered probe */
    _Atomic int inflight;     /* a probe is outstanding */
    _Atomic int wake;         /* queue a PROBE_EVENT when one is answered */
    baton_zk_t *zk;           /* the handle whose queue PROBE_EVENT goes to */
} heartbeat_t;

typedef struct {
    int assigned;    /* in our current assignment */
    char claim[64];  /* our claim's node name, "" when we have none */
    int64_t czxid;   /* our claim's creation zxid: the epoch once it owns */
    int owned;       /* on_acquired accepted it */
    int dirty;       /* re-examine this partition */
    int uncertain;   /* a create ended in connection loss: look before creating */
    int64_t retry_at; /* don't re-examine before this (backoff after errors) */
    int64_t claimed_ms; /* when we created the claim (handoff metric); 0: unknown */
} mpart_t;

struct baton_membership_s {
    baton_membership_conf_t conf;
    baton_membership_cbs_t cbs;
    baton_zk_t *zk;
    char *base;
    char *member_path;
    char session_hex[17];
    baton_config_t config;
    mpart_t *parts;
    int32_t nparts;
    int assignment_dirty;
    int64_t generation;
    int all_dirty;
    int disconnected; /* we saw the connection drop and have not heard back */
    int member_dirty; /* look at workers/<id> again (and re-arm its watch) */
    int evicted;      /* our member node went while our session lived: fatal */
    heartbeat_t *hb;  /* liveness probe (see probe_send) */
    int silent;       /* self-suspended: heard nothing for 2/3 of the timeout */
};

static void session_hex(baton_membership_t *m) {
    snprintf(m->session_hex, sizeof(m->session_hex), "%016llx",
             (unsigned long long)baton_zk_session_id(m->zk));
}

static char *claims_dir(const baton_membership_t *m, int32_t p) {
    return xasprintf("%s/partitions/%d/claims", m->base, p);
}

/* --- self-suspension --------------------------------------------------------
 * The server expires a session it has not heard from for the session
 * timeout T, and the C client only reports a disconnect after hearing
 * nothing for 2/3 T -- and our own thread may learn even that late (it may
 * have been paused, or busy in a slow sink write). So the member measures
 * silence itself: it sends a small asynchronous probe (an exists on its
 * member node) every T/6, and counts the server as heard at the *send* time
 * of the latest answered probe (the server renewed the session after that
 * moment, so the session lives until at least then + T). Writes stop once
 * that is 2/3 T old; they resume only when a probe of the same session is
 * answered; an expired session never answers one. Probing every T/6 keeps
 * the window between "suspended" and "possibly expired" at least T/6 wide
 * and replaces the client's own pings (it pings only an idle connection). */

/* An event type ZooKeeper never uses: a probe answered while we were
 * silent, queued so the owner's poll wakes and resumes at once. */
#define PROBE_EVENT 0x6272

static int64_t silence_limit_ms(const baton_membership_t *m) {
    return (int64_t)baton_zk_session_timeout(m->zk) * 2 / 3;
}

static int64_t probe_interval_ms(const baton_membership_t *m) {
    int64_t i = (int64_t)baton_zk_session_timeout(m->zk) / 6;
    return i < 20 ? 20 : i;
}

/* The server answered a request sent at t: heard_ms only rises, whichever
 * thread (owner or completion) stores. */
static void heard_max(heartbeat_t *hb, int64_t t) {
    int64_t cur = atomic_load(&hb->heard_ms);
    while (cur < t && !atomic_compare_exchange_weak(&hb->heard_ms, &cur, t)) {
    }
}

/* ZooKeeper's completion thread: only atomics and the event queue. */
static void probe_done(int rc, const struct Stat *st, const void *data) {
    (void)st;
    heartbeat_t *hb = (heartbeat_t *)data;
    if (rc == ZOK || rc == ZNONODE) {
        heard_max(hb, atomic_load(&hb->sent_ms));
        if (atomic_load(&hb->wake))
            baton_zk_watcher(NULL, PROBE_EVENT, 0, NULL, hb->zk);
    }
    atomic_store(&hb->inflight, 0);
}

/* Owner thread: the server answered a request sent at t. */
static void probe_heard(baton_membership_t *m, int64_t t) { heard_max(m->hb, t); }

/* Owner thread: a fresh session was just established at or after t0. */
static void probe_reset(baton_membership_t *m, int64_t t0) {
    heartbeat_t *hb = m->hb;
    hb->zk = m->zk;
    atomic_store(&hb->sent_ms, 0);
    atomic_store(&hb->heard_ms, t0);
    atomic_store(&hb->inflight, 0);
    atomic_store(&hb->wake, 0);
    m->silent = 0;
}

/* Owner thread: sends a probe when one is due, logs suspension and
 * resumption, and returns how soon it wants to run again. */
static int probe_tick(baton_membership_t *m) {
    heartbeat_t *hb = m->hb;
    int64_t now = baton_now_ms(), interval = probe_interval_ms(m);
    if (baton_zk_connected(m->zk) && !atomic_load(&hb->inflight) &&
        now - atomic_load(&hb->sent_ms) >= interval) {
        atomic_store(&hb->sent_ms, now);
        atomic_store(&hb->inflight, 1);
        if (zoo_aexists(baton_zk_handle(m->zk), m->member_path, 0, probe_done, hb) != ZOK)
            atomic_store(&hb->inflight, 0);
    }
    int64_t silent = now - atomic_load(&hb->heard_ms), limit = silence_limit_ms(m);
    if (silent >= limit && !m->silent) {
        m->silent = 1;
        atomic_store(&hb->wake, 1);
        BLOG_WARN("event=zk_silent session=0x%s silent_ms=%lld limit_ms=%lld timeout_ms=%d "
                  "action=suspend_writes",
                  m->session_hex, (long long)silent, (long long)limit,
                  baton_zk_session_timeout(m->zk));
    } else if (silent < limit && m->silent) {
        m->silent = 0;
        atomic_store(&hb->wake, 0);
        BLOG_INFO("event=zk_heard session=0x%s action=resume_writes", m->session_hex);
    }
    int64_t next = atomic_load(&hb->inflight) ? interval : atomic_load(&hb->sent_ms) + interval - now;
    if (!m->silent && limit - silent < next)
        next = limit - silent;
    return next < 0 ? 0 : next > 1000 ? 1000 : (int)next;
}

/* Registers workers/<id> (ephemeral). A node of another session with our id
 * may be a previous incarnation whose session has not expired yet: wait up
 * to one session timeout for it to go before calling the id taken. */
static int register_member(baton_membership_t *m, char *errstr, size_t n) {
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    baton_member_t me = {.pid = getpid(), .capacity = m->conf.capacity};
    snprintf(me.id, sizeof(me.id), "%s", m->conf.id);
    snprintf(me.host, sizeof(me.host), "%s", host);
    snprintf(me.rack, sizeof(me.rack), "%s", m->conf.rack ? m->conf.rack : "");
    char *data = baton_member_encode(&me);
    int64_t deadline = baton_now_ms() + baton_zk_session_timeout(m->zk) + 2000;
    int waited = 0;
    int err;
    for (;;) {
        int64_t sent = baton_now_ms();
        err = baton_zk_create(m->zk, m->member_path, data, strlen(data), ZOO_EPHEMERAL, NULL, 0,
                              NULL);
        if (err != BATON_CONNECTION && err != BATON_EXPIRED)
            probe_heard(m, sent); /* the server answered: waiting here is not silence */
        if (err == BATON_CONNECTION) {
            baton_sleep_ms(RETRY_MS);
            continue; /* the create may have landed: the EXISTS path below adopts it */
        }
        if (err != BATON_EXISTS)
            break;
        struct Stat st;
        int e2 = baton_zk_exists(m->zk, m->member_path, 0, &st);
        if (e2 == BATON_OK && st.ephemeralOwner == baton_zk_session_id(m->zk)) {
            err = BATON_OK; /* our own create whose reply was lost */
            break;
        }
        if (e2 != BATON_OK && e2 != BATON_NOTFOUND) {
            err = e2;
            break;
        }
        if (baton_now_ms() > deadline) {
            err = baton_seterr(errstr, n, BATON_EXISTS,
                               "worker id '%s' is held by a live member (session 0x%llx); "
                               "choose another --id",
                               m->conf.id, (unsigned long long)st.ephemeralOwner);
            free(data);
            return err;
        }
        if (!waited)
            BLOG_WARN("event=member_id_busy id=%s session=0x%llx action=wait_for_expiry",
                      m->conf.id, (unsigned long long)st.ephemeralOwner);
        waited = 1;
        baton_sleep_ms(RETRY_MS);
    }
    free(data);
    if (err != BATON_OK)
        return baton_seterr(errstr, n, err, "cannot register '%s': %s", m->member_path,
                            baton_strerror(err));
    BLOG_INFO("event=joined member=%s session=0x%s", m->member_path, m->session_hex);
    return BATON_OK;
}

static int grow_parts(baton_membership_t *m, int32_t nparts) {
    if (nparts <= m->nparts)
        return 0;
    m->parts = xrealloc(m->parts, sizeof(mpart_t) * (size_t)nparts);
    memset(m->parts + m->nparts, 0, sizeof(mpart_t) * (size_t)(nparts - m->nparts));
    m->nparts = nparts;
    return 1;
}

static int connect_and_join(baton_membership_t *m, char *errstr, size_t n) {
    int64_t t0 = baton_now_ms(); /* the session cannot have been renewed before this */
    int err = baton_zk_connect(m->conf.zk_hosts, m->conf.session_timeout_ms,
                               m->conf.connect_timeout_ms, &m->zk, errstr, n);
    if (err != BATON_OK)
        return err;
    probe_reset(m, t0);
    session_hex(m);
    BLOG_INFO("event=zk_connected session=0x%s timeout_ms=%d", m->session_hex,
              baton_zk_session_timeout(m->zk));
    baton_config_t cfg;
    if ((err = baton_group_config_read(m->zk, m->base, 1, &cfg, errstr, n)) != BATON_OK)
        return err;
    if (m->config.topic[0] && strcmp(cfg.topic, m->config.topic) != 0)
        return baton_seterr(errstr, n, BATON_CONFLICT, "group topic changed from '%s' to '%s'",
                            m->config.topic, cfg.topic);
    m->config = cfg;
    grow_parts(m, cfg.partitions);
    if ((err = register_member(m, errstr, n)) != BATON_OK)
        return err;
    m->assignment_dirty = 1;
    m->all_dirty = 1;
    m->member_dirty = 1;
    return BATON_OK;
}

int baton_membership_new(const baton_membership_conf_t *conf, const baton_membership_cbs_t *cbs,
                         baton_membership_t **out, char *errstr, size_t n) {
    baton_membership_t *m = xcalloc(1, sizeof(*m));
    m->conf = *conf;
    m->cbs = *cbs;
    m->base = baton_group_base(conf->root, conf->group);
    m->member_path = xasprintf("%s/workers/%s", m->base, conf->id);
    m->hb = xcalloc(1, sizeof(*m->hb));
    int err = connect_and_join(m, errstr, n);
    if (err != BATON_OK) {
        baton_membership_destroy(m);
        return err;
    }
    *out = m;
    return BATON_OK;
}

void baton_membership_destroy(baton_membership_t *m) {
    if (!m)
        return;
    baton_zk_destroy(m->zk); /* joins the completion thread: no probe_done after this */
    free(m->hb);
    free(m->parts);
    free(m->member_path);
    free(m->base);
    free(m);
}

const char *baton_membership_topic(const baton_membership_t *m) { return m->config.topic; }
int32_t baton_membership_partitions(const baton_membership_t *m) { return m->nparts; }
int baton_membership_fd(const baton_membership_t *m) { return baton_zk_fd(m->zk); }

int baton_membership_can_write(const baton_membership_t *m) {
    if (!m->zk || m->evicted || !baton_zk_connected(m->zk) || baton_zk_expired(m->zk))
        return 0;
    /* Computed now, not at the last poll: a thread that was paused must not
     * write on the strength of what it heard before the pause. */
    return baton_now_ms() - atomic_load(&m->hb->heard_ms) < silence_limit_ms(m);
}

int baton_membership_evicted(const baton_membership_t *m) { return m->evicted; }

/* Deletes our claim on p (only our own node, by its exact name). */
static void delete_claim(baton_membership_t *m, int32_t p) {
    mpart_t *mp = &m->parts[p];
    if (!mp->claim[0])
        return;
    char *dir = claims_dir(m, p);
    char *path = xasprintf("%s/%s", dir, mp->claim);
    int err = baton_zk_delete(m->zk, path, -1);
    if (err != BATON_OK && err != BATON_NOTFOUND)
        BLOG_WARN("event=release_failed partition=%d claim=%s error=%s", p, mp->claim,
                  baton_err_name(err));
    else
        BLOG_INFO("event=released partition=%d epoch=%lld", p, (long long)mp->czxid);
    free(path);
    free(dir);
    mp->claim[0] = 0;
    mp->czxid = 0;
    mp->owned = 0;
}

void baton_membership_drop(baton_membership_t *m, int32_t p) {
    if (p < 0 || p >= m->nparts)
        return;
    BLOG_WARN("event=drop partition=%d epoch=%lld reason=fenced", p,
              (long long)m->parts[p].czxid);
    delete_claim(m, p);
    m->parts[p].dirty = 1;
    m->parts[p].retry_at = baton_now_ms() + RETRY_MS;
}

/* Reads assignment/<id> (leaving a watch) and marks changed partitions. */
static int read_assignment(baton_membership_t *m) {
    char *path = xasprintf("%s/assignment/%s", m->base, m->conf.id);
    char *data = NULL;
    size_t len = 0;
    baton_worker_assignment_t wa = {0};
    int err = baton_zk_get(m->zk, path, 1, &data, &len, NULL);
    if (err == BATON_NOTFOUND) {
        /* Not assigned yet: watch for the node's creation. */
        err = baton_zk_exists(m->zk, path, 1, NULL);
        if (err == BATON_OK) {
            err = BATON_CONNECTION; /* created meanwhile: read again */
            goto out;
        }
        if (err != BATON_NOTFOUND)
            goto out;
        err = BATON_OK;
    } else if (err != BATON_OK) {
        goto out;
    } else {
        char why[256];
        if (baton_worker_assignment_decode(data, len, &wa, why, sizeof(why)) != BATON_OK) {
            /* Keep what we own: the coordinator rewrites a bad node, and the
             * sink fences whatever we keep too long. */
            BLOG_ERROR("event=corrupt_znode path=%s error=\"%s\" action=keep_current", path, why);
            err = BATON_OK;
            goto out;
        }
    }
    size_t k = 0;
    for (int32_t p = 0; p < m->nparts; p++) {
        int want = 0;
        while (k < wa.npartitions && wa.partitions[k] < p)
            k++;
        if (k < wa.npartitions && wa.partitions[k] == p)
            want = 1;
        if (want != m->parts[p].assigned) {
            m->parts[p].assigned = want;
            m->parts[p].dirty = 1;
        }
    }
    for (size_t i = 0; i < wa.npartitions; i++)
        if (wa.partitions[i] >= m->nparts)
            BLOG_WARN("event=assignment_out_of_range partition=%d partitions=%d",
                      wa.partitions[i], m->nparts);
    if (wa.generation != m->generation)
        BLOG_INFO("event=assignment generation=%lld partitions=%zu", (long long)wa.generation,
                  wa.npartitions);
    m->generation = wa.generation;
out:
    baton_worker_assignment_release(&wa);
    free(data);
    free(path);
    return err;
}

/* After a create whose reply was lost: finds the claim it may have made,
 * by our session id in the name and as its ephemeral owner (a claim of an
 * earlier session, even with our worker id, is never ours). Sets mp->claim
 * if found and clears uncertain; an error keeps it uncertain. */
static int find_own_claim(baton_membership_t *m, int32_t p) {
    mpart_t *mp = &m->parts[p];
    char *dir = claims_dir(m, p);
    int err = BATON_OK;
    {
        char **names = NULL;
        size_t n = 0;
        if ((err = baton_zk_children(m->zk, dir, 0, &names, &n)) != BATON_OK)
            goto out;
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "claim-%s-", m->session_hex);
        for (size_t i = 0; i < n; i++) {
            if (strncmp(names[i], prefix, strlen(prefix)) != 0)
                continue;
            char *path = xasprintf("%s/%s", dir, names[i]);
            struct Stat st;
            int e = baton_zk_exists(m->zk, path, 0, &st);
            if (e == BATON_OK && st.ephemeralOwner == baton_zk_session_id(m->zk)) {
                snprintf(mp->claim, sizeof(mp->claim), "%s", names[i]);
                mp->czxid = st.czxid;
                BLOG_INFO("event=claim_recovered partition=%d claim=%s", p, mp->claim);
            } else if (e != BATON_OK && e != BATON_NOTFOUND) {
                err = e; /* cannot tell: stay uncertain rather than create twice */
            }
            free(path);
        }
        baton_zk_strings_free(names, n);
        if (err == BATON_OK)
            mp->uncertain = 0;
    }
out:
    free(dir);
    return err;
}

/* Creates our claim on p, or finds the one a lost reply created. */
static int create_claim(baton_membership_t *m, int32_t p) {
    mpart_t *mp = &m->parts[p];
    int err = BATON_OK;
    if (mp->uncertain) {
        if ((err = find_own_claim(m, p)) != BATON_OK || mp->claim[0])
            return err;
    }
    char *dir = claims_dir(m, p);
    baton_claim_t claim = {.generation = m->generation};
    snprintf(claim.worker, sizeof(claim.worker), "%s", m->conf.id);
    char *data = baton_claim_encode(&claim);
    char *prefix = xasprintf("%s/claim-%s-", dir, m->session_hex);
    char created[512];
    struct Stat st;
    err = baton_zk_create(m->zk, prefix, data, strlen(data), ZOO_EPHEMERAL_SEQUENTIAL, created,
                          sizeof(created), &st);
    if (err == BATON_OK) {
        snprintf(mp->claim, sizeof(mp->claim), "%s", strrchr(created, '/') + 1);
        mp->czxid = st.czxid;
        mp->claimed_ms = baton_now_ms();
        BLOG_INFO("event=claimed partition=%d claim=%s czxid=%lld", p, mp->claim,
                  (long long)st.czxid);
    } else if (err == BATON_CONNECTION) {
        mp->uncertain = 1;
    } else if (err == BATON_NOTFOUND) {
        BLOG_ERROR("event=claim_failed partition=%d error=\"'%s' does not exist\"", p, dir);
    }
    free(prefix);
    free(data);
    free(dir);
    return err;
}

/* Our claim exists: is it the lowest? If so we own p; if not, watch the
 * claim just ahead of ours. */
static int check_queue(baton_membership_t *m, int32_t p) {
    mpart_t *mp = &m->parts[p];
    char *dir = claims_dir(m, p);
    char **names = NULL;
    size_t n = 0;
    int err = baton_zk_children(m->zk, dir, 0, &names, &n);
    if (err != BATON_OK)
        goto out;
    int64_t my_seq = baton_seq_of(mp->claim);
    const char *pred = NULL;
    int64_t pred_seq = -1;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t s = baton_seq_of(names[i]);
        if (s < 0)
            continue;
        if (strcmp(names[i], mp->claim) == 0)
            found = 1;
        else if (s < my_seq && s > pred_seq) {
            pred_seq = s;
            pred = names[i];
        }
    }
    if (!found) {
        /* Removed by someone else (an operator, or the coordinator's stuck
         * handoff revoke): claim again if still assigned. */
        BLOG_WARN("event=claim_lost partition=%d claim=%s", p, mp->claim);
        if (mp->owned && m->cbs.on_released)
            m->cbs.on_released(m->cbs.opaque, p, BATON_RELEASE_LOST);
        mp->claim[0] = 0;
        mp->owned = 0;
        mp->dirty = 1;
        goto out;
    }
    char *watch_path = xasprintf("%s/%s", dir, pred ? pred : mp->claim);
    /* Leader: watch our own claim so its deletion reaches us. Waiter: watch
     * the predecessor only, so a release wakes one claimant, not a herd. */
    err = baton_zk_exists(m->zk, watch_path, 1, NULL);
    free(watch_path);
    if (err == BATON_NOTFOUND) {
        mp->dirty = 1; /* it went meanwhile: look again */
        err = BATON_OK;
        goto out;
    }
    if (err != BATON_OK)
        goto out;
    if (pred) {
        BLOG_DEBUG("event=waiting partition=%d behind=%s", p, pred);
        goto out;
    }
    if (!mp->owned) {
        if (!baton_membership_can_write(m)) {
            mp->dirty = 1;
            goto out;
        }
        int rc = m->cbs.on_acquired ? m->cbs.on_acquired(m->cbs.opaque, p, mp->czxid) : BATON_OK;
        if (rc == BATON_OK) {
            mp->owned = 1;
            if (mp->claimed_ms)
                baton_metric_observe(baton_metric_histogram(BATON_M_W_HANDOFF_SECONDS),
                                     (double)(baton_now_ms() - mp->claimed_ms) / 1000.0);
            mp->claimed_ms = 0;
            BLOG_INFO("event=acquired partition=%d epoch=%lld generation=%lld", p,
                      (long long)mp->czxid, (long long)m->generation);
        } else if (rc == BATON_STALE) {
            baton_membership_drop(m, p);
        } else {
            mp->dirty = 1;
            mp->retry_at = baton_now_ms() + RETRY_MS;
        }
    }
out:
    baton_zk_strings_free(names, n);
    free(dir);
    return err;
}

/* Brings partition p's claim in line with the assignment. */
static int reconcile_partition(baton_membership_t *m, int32_t p) {
    mpart_t *mp = &m->parts[p];
    if (!mp->assigned) {
        if (mp->owned && m->cbs.on_released)
            m->cbs.on_released(m->cbs.opaque, p, BATON_RELEASE_REVOKED);
        /* A create whose reply was lost may have left a claim of ours: find
         * and delete it, or it would block the next owner for as long as
         * our session lives. */
        if (!mp->claim[0] && mp->uncertain) {
            int err = find_own_claim(m, p);
            if (err != BATON_OK)
                return err; /* still uncertain: look again */
            if (mp->claim[0])
                BLOG_INFO("event=orphan_claim partition=%d claim=%s action=delete", p, mp->claim);
        }
        if (mp->claim[0]) {
            BATON_FAILPOINT("worker.before_release");
            delete_claim(m, p);
        }
        mp->uncertain = 0;
        return BATON_OK;
    }
    if (!mp->claim[0]) {
        int err = create_claim(m, p);
        if (err != BATON_OK)
            return err;
    }
    return check_queue(m, p);
}

/* Drops everything without flushing: our session is gone, so are our
 * claims, and a successor may already be writing. */
static void lose_all(baton_membership_t *m) {
    for (int32_t p = 0; p < m->nparts; p++) {
        mpart_t *mp = &m->parts[p];
        if (mp->owned && m->cbs.on_released)
            m->cbs.on_released(m->cbs.opaque, p, BATON_RELEASE_LOST);
        memset(mp, 0, sizeof(*mp));
    }
}

/* Reacts to a watch on a path: mark what it concerns. */
static void note_event(baton_membership_t *m, const char *path) {
    size_t blen = strlen(m->base);
    if (strncmp(path, m->base, blen) != 0) {
        m->all_dirty = 1;
        return;
    }
    const char *rest = path + blen;
    int32_t p;
    if (strncmp(rest, "/partitions/", 12) == 0 && sscanf(rest + 12, "%d", &p) == 1 && p >= 0 &&
        p < m->nparts)
        m->parts[p].dirty = 1;
    else if (strncmp(rest, "/assignment/", 12) == 0)
        m->assignment_dirty = 1;
    else if (strcmp(path, m->member_path) == 0)
        m->member_dirty = 1;
    else if (strcmp(rest, "/config") == 0)
        m->all_dirty = 1;
    else
        m->all_dirty = 1;
}

static int reread_config(baton_membership_t *m) {
    char errstr[256];
    baton_config_t cfg;
    int err = baton_group_config_read(m->zk, m->base, 1, &cfg, errstr, sizeof(errstr));
    if (err == BATON_CORRUPT) {
        BLOG_ERROR("event=config_error error=\"%s\" action=keep_current", errstr);
        return BATON_OK;
    }
    if (err != BATON_OK)
        return err;
    if (cfg.partitions > m->nparts) {
        BLOG_INFO("event=partitions_grown from=%d to=%d", m->nparts, cfg.partitions);
        grow_parts(m, cfg.partitions);
        m->config.partitions = cfg.partitions;
    }
    return BATON_OK;
}

/* Looks at our own member node and re-arms the watch on it. Gone, or
 * recreated by another session (a new process with our id), while our
 * session lives means an operator evicted us (`batonctl evict`): our claims
 * were deleted with it and the coordinator is moving our partitions to
 * others, whose higher epochs fence anything we still write. Returns
 * BATON_OK, BATON_EVICTED (evicted) or a ZooKeeper error (retry). */
static int check_member(baton_membership_t *m) {
    struct Stat st;
    int err = baton_zk_exists(m->zk, m->member_path, 1, &st);
    if (err == BATON_OK && st.ephemeralOwner == baton_zk_session_id(m->zk))
        return BATON_OK;
    if (err != BATON_OK && err != BATON_NOTFOUND)
        return err;
    return BATON_EVICTED;
}

int baton_membership_poll(baton_membership_t *m, int *next_ms, char *errstr, size_t n) {
    if (m->evicted)
        return baton_seterr(errstr, n, BATON_EVICTED, "evicted: '%s' was deleted", m->member_path);
    int expired = 0, reconnected = 0;
    baton_zk_event_t ev;
    while (baton_zk_next_event(m->zk, &ev)) {
        if (ev.type == ZOO_SESSION_EVENT) {
            if (ev.state == ZOO_EXPIRED_SESSION_STATE || ev.state == ZOO_AUTH_FAILED_STATE)
                expired = 1;
            else if (ev.state == ZOO_CONNECTED_STATE) {
                reconnected = m->disconnected;
                m->disconnected = 0;
                if (reconnected)
                    baton_metric_inc(baton_metric_counter(BATON_M_ZK_RECONNECTS));
            } else if (ev.state == ZOO_CONNECTING_STATE && !m->disconnected) {
                m->disconnected = 1;
                BLOG_WARN("event=zk_disconnected action=suspend_writes");
            }
        } else if (ev.type != PROBE_EVENT) {
            note_event(m, ev.path);
        }
        baton_zk_event_release(&ev);
    }
    if (expired || baton_zk_expired(m->zk)) {
        BLOG_WARN("event=session_expired session=0x%s action=drop_all_and_rejoin", m->session_hex);
        baton_metric_inc(baton_metric_counter(BATON_M_ZK_EXPIRATIONS));
        lose_all(m);
        m->disconnected = 0;
        baton_zk_destroy(m->zk);
        m->zk = NULL;
        for (;;) {
            int err = connect_and_join(m, errstr, n);
            if (err == BATON_OK)
                break;
            if (err == BATON_EXISTS || baton_err_is_input(err))
                return err;
            BLOG_WARN("event=rejoin_failed error=\"%s\" action=retry", errstr);
            if (m->zk) {
                baton_zk_destroy(m->zk);
                m->zk = NULL;
            }
            baton_sleep_ms(1000);
        }
    }
    if (reconnected) {
        /* Writes resume once a probe on this connection is answered. */
        atomic_store(&m->hb->sent_ms, 0);
        BLOG_INFO("event=zk_reconnected session=0x%s action=resume_writes", m->session_hex);
        m->all_dirty = 1; /* re-read instead of trusting missed events */
        m->member_dirty = 1;
    }
    int err = BATON_OK;
    int probe_ms = probe_tick(m);
    baton_metric_set(baton_metric_gauge(BATON_M_ZK_CONNECTED), baton_zk_connected(m->zk) ? 1 : 0);
    if (!baton_zk_connected(m->zk))
        goto done;
    /* Before any claim work: an evicted member must not claim again. */
    if (m->member_dirty) {
        m->member_dirty = 0;
        err = check_member(m);
        if (err == BATON_EVICTED) {
            BLOG_ERROR("event=evicted member=%s session=0x%s action=drop_all_and_exit",
                       m->member_path, m->session_hex);
            m->evicted = 1;
            lose_all(m);
            return baton_seterr(errstr, n, BATON_EVICTED,
                                "evicted: our member node '%s' was deleted while our session "
                                "0x%s lived (batonctl evict); every partition dropped",
                                m->member_path, m->session_hex);
        }
        if (err != BATON_OK) {
            m->member_dirty = 1;
            goto done;
        }
    }
    if (m->all_dirty) {
        if ((err = reread_config(m)) != BATON_OK)
            goto done;
        m->all_dirty = 0;
        m->assignment_dirty = 1;
        for (int32_t p = 0; p < m->nparts; p++)
            m->parts[p].dirty = 1;
    }
    if (m->assignment_dirty) {
        m->assignment_dirty = 0;
        if ((err = read_assignment(m)) != BATON_OK) {
            m->assignment_dirty = 1;
            goto done;
        }
    }
    int64_t now = baton_now_ms();
    /* Releases first, so partitions we give up reach their new owners before
     * we spend time claiming new ones. */
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t p = 0; p < m->nparts; p++) {
            mpart_t *mp = &m->parts[p];
            if (!mp->dirty || mp->retry_at > now || (pass == 0) != !mp->assigned)
                continue;
            mp->dirty = 0;
            int e = reconcile_partition(m, p);
            if (e != BATON_OK) {
                mp->dirty = 1;
                mp->retry_at = now + RETRY_MS;
                if (e == BATON_EXPIRED) {
                    err = BATON_OK; /* picked up by the next poll's expiry path */
                    goto done;
                }
            }
        }
    }
done:
    if (next_ms) {
        int soon = 1000;
        int64_t t = baton_now_ms();
        for (int32_t p = 0; p < m->nparts; p++)
            if (m->parts[p].dirty) {
                int64_t d = m->parts[p].retry_at - t;
                soon = d < soon ? (d < 0 ? 0 : (int)d) : soon;
            }
        if (m->assignment_dirty || m->all_dirty || m->member_dirty || err != BATON_OK)
            soon = soon < RETRY_MS ? soon : RETRY_MS;
        *next_ms = soon < probe_ms ? soon : probe_ms;
    }
    if (err != BATON_OK && !baton_err_is_fatal(err) && !baton_err_is_input(err))
        err = BATON_OK; /* retriable: try again on the next poll */
    if (err == BATON_EXPIRED)
        err = BATON_OK;
    return err;
}

void baton_membership_leave(baton_membership_t *m) {
    if (!m->zk)
        return;
    /* Say we are leaving before releasing anything, so the coordinator can
     * tell this departure (history reason "leave") from a crash. */
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    baton_member_t me = {.pid = getpid(), .capacity = m->conf.capacity, .leaving = 1};
    snprintf(me.id, sizeof(me.id), "%s", m->conf.id);
    snprintf(me.host, sizeof(me.host), "%s", host);
    snprintf(me.rack, sizeof(me.rack), "%s", m->conf.rack ? m->conf.rack : "");
    char *data = baton_member_encode(&me);
    int serr = baton_zk_set(m->zk, m->member_path, data, strlen(data), -1, NULL);
    if (serr != BATON_OK)
        BLOG_WARN("event=leave_mark_failed member=%s error=%s", m->member_path, baton_err_name(serr));
    free(data);
    for (int32_t p = 0; p < m->nparts; p++) {
        mpart_t *mp = &m->parts[p];
        if (mp->owned && m->cbs.on_released)
            m->cbs.on_released(m->cbs.opaque, p, BATON_RELEASE_LEAVE);
        if (mp->claim[0]) {
            if (mp->owned)
                BATON_FAILPOINT("worker.before_release");
            delete_claim(m, p);
        }
    }
    baton_zk_delete(m->zk, m->member_path, -1);
    BLOG_INFO("event=left member=%s", m->member_path);
}
