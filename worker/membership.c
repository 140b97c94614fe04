/* membership.c: the member library (include/baton/baton.h): registration,
 * assignment watch and claims of one member, for partitions and named keys.
 * Single-threaded: ZooKeeper's completion thread only queues events through
 * baton_zk; everything here runs on the owner's thread.
 *
 * Resources (partitions and keys) are rows of one table (m->res,
 * common/baton_resource.h); every per-resource state is m->st[row]. */
#include "membership.h"

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_log.h"
#include "baton_metrics.h"
#include "baton_resource.h"
#include "baton_util.h"
#include "baton_zk.h"
#include "baton_zk_auth.h"
#include "member_state.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RETRY_MS 200
/* A graceful leave waits at most this long for the coordinator to name
 * its successors before it releases its claims anyway. */
#define LEAVE_WAIT_MS 2000
/* Claim creates or deletes per multi (well under jute.maxbuffer). */
#define CLAIM_MULTI_MAX 500
/* New claims created one by one, pipelined with their queue checks, so a
 * handoff's claim costs one round trip; more than this go in a multi. */
#define CLAIM_PIPELINE_MAX 16

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

/* One resource's state. Where it is in its life is `state` (member_state.h:
 * assigned or not, and what we hold of its claims queue), changed only by
 * st_set; the other fields are what is scheduled or remembered about it in
 * any state (member_state.h says why they stay apart). */
typedef struct {
    mstate_t state;
    char claim[64];     /* our claim's node name: "" unless mstate_claimed(state) */
    int64_t czxid;      /* our claim's creation zxid: the epoch once it owns */
    int dirty;          /* re-examine this resource */
    int64_t retry_at;   /* don't re-examine before this (backoff after errors) */
    int64_t claimed_ms; /* when we created the claim (handoff metric); 0: unknown */
    /* Taken as a standby (standby_promote) before the coordinator named us:
     * assigned until an assignment newer than promoted_gen decides. */
    int promoted;
    int64_t promoted_gen;
} mpart_t;

/* What we stand by for (assignment "standby"): owner's resources, which we
 * take the moment its member node is marked leaving or deleted. */
typedef struct {
    char *owner;
    size_t *rows; /* rows of m->res */
    size_t n;
    int armed;  /* a watch is set on workers/<owner> */
    int fired;  /* the owner's node changed or went: take rows (standby_promote) */
    int verify; /* we took rows: the next watch also asks whether the owner lives */
    int alive;  /* the owner is live and not leaving (a new incarnation): give
                 * back what we took from it that no newer assignment gave us */
} mstandby_t;

struct baton_membership_s {
    baton_membership_conf_t conf;
    baton_membership_cbs_t cbs;
    /* Every resource we heard of (partitions, then keys) and its state:
     * m->st[row], stcap >= res.n. */
    baton_res_table_t res;
    mpart_t *st;
    size_t stcap;
    char label[BATON_RES_LABEL_SIZE]; /* row_label's buffer */
    int next_ms;                      /* what the last poll asked for */
    int64_t rejoin_at;                /* no session (it expired): next attempt to rejoin */
    baton_zk_t *zk;
    char *base;
    char *member_path;
    char session_hex[17];
    int64_t session; /* the session id session_hex spells (our claims carry it) */
    baton_config_t config;
    int assignment_dirty;
    int64_t generation;
    int all_dirty;
    int disconnected; /* we saw the connection drop and have not heard back */
    int member_dirty; /* look at workers/<id> again (and re-arm its watch) */
    int evicted;      /* our member node went while our session lived: fatal */
    heartbeat_t *hb;  /* liveness probe (see probe_send) */
    int silent;       /* self-suspended: heard nothing for 2/3 of the timeout */
    /* Newly assigned resources not yet told to on_assigned (assigned_flush):
     * told while their claims are in flight. */
    size_t *added; /* rows */
    size_t nadded, addedcap;
    mstandby_t *standby; /* sorted by owner */
    size_t nstandby;
};

static void session_hex(baton_membership_t *m) {
    m->session = baton_zk_session_id(m->zk);
    snprintf(m->session_hex, sizeof(m->session_hex), "%016llx", (unsigned long long)m->session);
}

/* ---- resources ------------------------------------------------------------
 * A resource is a row of m->res (common/baton_resource.h): partition p is
 * row p, keys follow in the order we heard of them; its state is m->st[row].
 * Keys are never forgotten while the process lives (a removed key is simply
 * unassigned). Partitions only grow (grow_parts): the key rows then move up
 * by as many rows as partitions were added. */

static void standby_clear(baton_membership_t *m);

/* "partition=3" or "key=nightly", for log lines (one per line: the buffer
 * is the handle's). */
static const char *row_label(baton_membership_t *m, size_t row) {
    return baton_res_label(baton_res_at(&m->res, row), m->label, sizeof(m->label));
}

/* Moves row to state `to` for reason why (one word, logged). Every change
 * of a resource's state goes through here and is logged at debug
 * (event=member_state). A transition the table does not expect
 * (mstate_transition_ok) is also logged at warn, with from and to, and made
 * all the same: the callers go on as they did when the states were flags,
 * so a surprise shows in the log and never crashes the member. */
static void st_set(baton_membership_t *m, size_t row, mstate_t to, const char *why) {
    mpart_t *mp = &m->st[row];
    mstate_t from = mp->state;
    if (from == to)
        return;
    if (!mstate_transition_ok(from, to))
        BLOG_WARN("event=member_state_unexpected %s from=%s to=%s reason=%s", row_label(m, row),
                  mstate_name(from), mstate_name(to), why);
    BLOG_DEBUG("event=member_state %s from=%s to=%s reason=%s", row_label(m, row),
               mstate_name(from), mstate_name(to), why);
    mp->state = to;
}
/* The claim's phase changes, the assignment stays; and the reverse. */
static void st_phase(baton_membership_t *m, size_t row, mphase_t phase, const char *why) {
    st_set(m, row, mstate_make(mstate_assigned(m->st[row].state), phase), why);
}
static void st_assign(baton_membership_t *m, size_t row, int assigned, const char *why) {
    st_set(m, row, mstate_make(assigned, mstate_phase(m->st[row].state)), why);
}

/* Room in m->st for every row of the table, the new ones zeroed. */
static void st_fit(baton_membership_t *m) {
    if (m->res.n <= m->stcap)
        return;
    size_t cap = m->res.n + 8;
    m->st = xrealloc(m->st, sizeof(mpart_t) * cap);
    memset(m->st + m->stcap, 0, sizeof(mpart_t) * (cap - m->stcap));
    m->stcap = cap;
}

/* The row of key name (added, with a zeroed state, if it is new). */
static size_t key_row(baton_membership_t *m, const char *name) {
    size_t row = baton_res_table_add_key(&m->res, name);
    st_fit(m);
    return row;
}

static int cb_acquired(baton_membership_t *m, size_t row, int64_t epoch) {
    return m->cbs.on_acquired ? m->cbs.on_acquired(m->cbs.opaque, baton_res_at(&m->res, row), epoch)
                              : BATON_OK;
}
static void cb_released(baton_membership_t *m, size_t row, baton_release_reason_t why) {
    if (m->cbs.on_released)
        m->cbs.on_released(m->cbs.opaque, baton_res_at(&m->res, row), why);
}

const char *baton_release_reason_name(baton_release_reason_t r) {
    switch (r) {
    case BATON_RELEASE_REVOKED: return "revoked";
    case BATON_RELEASE_LOST: return "lost";
    case BATON_RELEASE_LEAVE: return "leave";
    }
    return "unknown";
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
    /* Silence first, then the next probe: measured after sending, a probe
     * answered before this thread looks again (it may be preempted right
     * after the send) would hide a stall it just woke from. */
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
    if (baton_zk_connected(m->zk) && !atomic_load(&hb->inflight) &&
        now - atomic_load(&hb->sent_ms) >= interval) {
        atomic_store(&hb->sent_ms, now);
        atomic_store(&hb->inflight, 1);
        if (zoo_aexists(baton_zk_handle(m->zk), m->member_path, 0, probe_done, hb) != ZOK)
            atomic_store(&hb->inflight, 0);
    }
    int64_t next =
        atomic_load(&hb->inflight) ? interval : atomic_load(&hb->sent_ms) + interval - now;
    if (!m->silent && limit - silent < next)
        next = limit - silent;
    return next < 0 ? 0 : next > 1000 ? 1000 : (int)next;
}

/* Registers workers/<id> (ephemeral). A node of another session with our id
 * may be a previous incarnation whose session has not expired yet: wait up
 * to one session timeout for it to go before calling the id taken. */
/* Our member node's body; leaving marks a graceful leave. */
static char *member_body(const baton_membership_t *m, int leaving) {
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    baton_member_t me = {.pid = getpid(), .capacity = m->conf.capacity, .leaving = leaving};
    snprintf(me.id, sizeof(me.id), "%s", m->conf.id);
    snprintf(me.host, sizeof(me.host), "%s", host);
    snprintf(me.rack, sizeof(me.rack), "%s", m->conf.rack ? m->conf.rack : "");
    me.no_partitions = m->conf.no_partitions;
    if (m->conf.keys) {
        me.keys_filter = 1;
        size_t used = 0;
        for (size_t i = 0; i < m->conf.nkeys; i++)
            used += (size_t)snprintf(me.keys + used, sizeof(me.keys) - used, "%s%s", i ? "," : "",
                                     m->conf.keys[i]);
    }
    return baton_member_encode(&me);
}

static int register_member(baton_membership_t *m, char *errstr, size_t n) {
    char *data = member_body(m, 0);
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

/* A key's row after the partitions grew by delta rows. */
static size_t row_moved(size_t row, size_t old_np, size_t delta) {
    return row >= old_np ? row + delta : row;
}

/* The table grows to nparts partitions: it is rebuilt with the keys in the
 * same order after the new partitions, and every state and row we keep
 * (m->st, the rows noted for on_assigned, the standby lists) moves with
 * its key. */
static int grow_parts(baton_membership_t *m, int32_t nparts) {
    if (nparts <= m->res.npartitions)
        return 0;
    size_t old_np = (size_t)m->res.npartitions, old_n = m->res.n;
    size_t delta = (size_t)nparts - old_np;
    baton_res_table_t t;
    baton_res_table_init(&t, m->base, nparts);
    for (size_t row = old_np; row < old_n; row++)
        baton_res_table_add_key(&t, baton_res_at(&m->res, row)->key);
    baton_res_table_free(&m->res);
    m->res = t;
    st_fit(m);
    memmove(m->st + old_np + delta, m->st + old_np, sizeof(mpart_t) * (old_n - old_np));
    memset(m->st + old_np, 0, sizeof(mpart_t) * delta);
    for (size_t i = 0; i < m->nadded; i++)
        m->added[i] = row_moved(m->added[i], old_np, delta);
    for (size_t i = 0; i < m->nstandby; i++)
        for (size_t j = 0; j < m->standby[i].n; j++)
            m->standby[i].rows[j] = row_moved(m->standby[i].rows[j], old_np, delta);
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

/* Checks what the application gave (it is input: a clear error, no crash). */
static int conf_check(baton_membership_conf_t *c, char *errstr, size_t n) {
    if (!c->zk_hosts || !c->zk_hosts[0])
        return baton_seterr(errstr, n, BATON_INVALID, "zk_hosts is required");
    if (!c->root)
        c->root = BATON_DEFAULT_ROOT;
    if (baton_root_valid(c->root) != 0)
        return baton_seterr(errstr, n, BATON_INVALID, "root '%s' is not a valid znode path",
                            c->root);
    if (!c->group || baton_id_valid(c->group) != 0)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "group '%s' is not a valid name (1-128 of [A-Za-z0-9._-])",
                            c->group ? c->group : "");
    if (!c->id || baton_id_valid(c->id) != 0)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "id '%s' is not a valid member id (1-128 of [A-Za-z0-9._-])",
                            c->id ? c->id : "");
    if (c->capacity == 0)
        c->capacity = 1;
    if (c->capacity < 0 || c->capacity > 1000000)
        return baton_seterr(errstr, n, BATON_INVALID, "capacity %d is not in 1..1000000",
                            c->capacity);
    if (c->session_timeout_ms <= 0)
        c->session_timeout_ms = 10000;
    if (c->connect_timeout_ms <= 0)
        c->connect_timeout_ms = 10000;
    if (c->rack && strlen(c->rack) >= 64)
        return baton_seterr(errstr, n, BATON_INVALID, "rack is longer than 63 bytes");
    size_t total = 0;
    for (size_t i = 0; c->keys && i < c->nkeys; i++) {
        if (!c->keys[i] || baton_key_valid(c->keys[i]) != 0)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "key '%s' is not a key name (1-128 of [A-Za-z0-9._-])",
                                c->keys[i] ? c->keys[i] : "");
        total += strlen(c->keys[i]) + 1;
    }
    if (total >= BATON_MEMBER_KEYS_MAX)
        return baton_seterr(errstr, n, BATON_INVALID,
                            "the key filter is over %d bytes: take every key instead",
                            BATON_MEMBER_KEYS_MAX);
    if (c->zk_auth) {
        int err = baton_zk_auth_init(c->zk_auth, NULL, c->root, 1, errstr, n);
        if (err != BATON_OK)
            return err;
    }
    return BATON_OK;
}

int baton_membership_new(const baton_membership_conf_t *conf, const baton_membership_cbs_t *cbs,
                         baton_membership_t **out, char *errstr, size_t n) {
    baton_membership_conf_t c = *conf;
    int cerr = conf_check(&c, errstr, n);
    if (cerr != BATON_OK)
        return cerr;
    baton_membership_t *m = xcalloc(1, sizeof(*m));
    m->conf = c;
    m->cbs = *cbs;
    m->base = baton_group_base(m->conf.root, m->conf.group); /* defaults applied */
    m->member_path = baton_layout_worker(m->base, m->conf.id);
    baton_res_table_init(&m->res, m->base, 0);
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
    free(m->added);
    standby_clear(m);
    free(m->st);
    baton_res_table_free(&m->res);
    free(m->member_path);
    free(m->base);
    free(m);
}

const char *baton_membership_topic(const baton_membership_t *m) { return m->config.topic; }
baton_zk_t *baton_membership__zk(const baton_membership_t *m) { return m->zk; }
int32_t baton_membership_partitions(const baton_membership_t *m) { return m->res.npartitions; }
int baton_membership_fd(const baton_membership_t *m) {
    return m->zk ? baton_zk_fd(m->zk) : -1; /* -1 between sessions: poll ignores it */
}

int baton_membership_can_write(const baton_membership_t *m) {
    if (!m->zk || m->evicted || !baton_zk_connected(m->zk) || baton_zk_expired(m->zk))
        return 0;
    /* Computed now, not at the last poll: a thread that was paused must not
     * write on the strength of what it heard before the pause. */
    return baton_now_ms() - atomic_load(&m->hb->heard_ms) < silence_limit_ms(m);
}

int baton_membership_evicted(const baton_membership_t *m) { return m->evicted; }

/* Deletes our claim on row (only our own node, by its exact name); why
 * names the transition. */
static void delete_claim(baton_membership_t *m, size_t row, const char *why) {
    mpart_t *mp = &m->st[row];
    if (!mp->claim[0])
        return;
    char *path = baton_layout_child(baton_res_claims(&m->res, row), mp->claim);
    int err = baton_zk_delete(m->zk, path, -1);
    if (err != BATON_OK && err != BATON_NOTFOUND)
        BLOG_WARN("event=release_failed %s claim=%s error=%s", row_label(m, row), mp->claim,
                  baton_err_name(err));
    else
        BLOG_INFO("event=released %s epoch=%lld", row_label(m, row), (long long)mp->czxid);
    free(path);
    mp->claim[0] = 0;
    mp->czxid = 0;
    st_phase(m, row, MPHASE_NONE, why);
}

static void drop_row(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    BLOG_WARN("event=drop %s epoch=%lld reason=fenced", row_label(m, row), (long long)mp->czxid);
    delete_claim(m, row, "dropped");
    mp->dirty = 1;
    mp->retry_at = baton_now_ms() + RETRY_MS;
}

/* The state of a public resource, or NULL if we never heard of it. */
static mpart_t *st_of(const baton_membership_t *m, const baton_resource_t *r, long *row) {
    *row = baton_res_table_find(&m->res, r);
    return *row >= 0 ? &m->st[*row] : NULL;
}

void baton_membership_drop(baton_membership_t *m, const baton_resource_t *r) {
    long row;
    if (st_of(m, r, &row))
        drop_row(m, (size_t)row);
}

int baton_epoch_valid(const baton_membership_t *m, const baton_resource_t *r, int64_t epoch) {
    long row;
    const mpart_t *mp = st_of(m, r, &row);
    return mp && mstate_owned(mp->state) && mp->czxid == epoch && baton_membership_can_write(m);
}

int baton_membership_assigned(const baton_membership_t *m, const baton_resource_t *r) {
    long row;
    const mpart_t *mp = st_of(m, r, &row);
    return mp ? mstate_assigned(mp->state) : 0;
}

int baton_membership_claim_path(const baton_membership_t *m, const baton_resource_t *r, char *buf,
                                size_t size) {
    long row;
    const mpart_t *mp = st_of(m, r, &row);
    if (!mp || !buf || size == 0)
        return BATON_INVALID;
    if (!mp->claim[0])
        return BATON_NOTFOUND;
    char *dir = baton_res_claims_of(m->base, baton_res_at(&m->res, (size_t)row));
    int w = snprintf(buf, size, "%s/%s", dir, mp->claim);
    free(dir);
    return w >= 0 && (size_t)w < size ? BATON_OK : BATON_INVALID;
}

static void assigned_note(baton_membership_t *m, size_t row);

/* A watch's path and handle, for its completion (own_watch_done,
 * standby_watch_done). */
typedef struct {
    baton_zk_t *zk;
    char path[];
} own_watch_t;

/* Sets an exists-watch on path without waiting for the answer, which goes
 * to done (on ZooKeeper's completion thread; it frees the own_watch_t).
 * Returns ZOK, or the client's error when nothing was sent. */
static int watch_send(baton_membership_t *m, const char *path, stat_completion_t done) {
    size_t len = strlen(path) + 1;
    own_watch_t *ow = xmalloc(sizeof(*ow) + len);
    ow->zk = m->zk;
    memcpy(ow->path, path, len);
    int rc = zoo_awexists(baton_zk_handle(m->zk), path, baton_zk_watcher, m->zk, done, ow);
    if (rc != ZOK)
        free(ow);
    return rc;
}

/* ---- standby -------------------------------------------------------------
 * The coordinator names, for each resource, the worker it would move it to
 * if its owner left (coordinator/coord_standby.h). That standby watches the
 * owner's member node, and when the node is marked leaving or deleted it
 * takes the resources at once, as if assigned: it claims them (queued
 * behind the owner's claims until those go) and fetches ahead, while the
 * coordinator is still reacting to the same news. Its later publish names
 * the same worker, so nothing moves twice; if it names another, we are
 * revoked as usual. Claims and the sink's fence stay the only gates. */

static void standby_clear(baton_membership_t *m) {
    for (size_t i = 0; i < m->nstandby; i++) {
        free(m->standby[i].owner);
        free(m->standby[i].rows);
    }
    free(m->standby);
    m->standby = NULL;
    m->nstandby = 0;
}

static mstandby_t *standby_find(baton_membership_t *m, const char *owner) {
    for (size_t i = 0; i < m->nstandby; i++)
        if (strcmp(m->standby[i].owner, owner) == 0)
            return &m->standby[i];
    return NULL;
}

/* Replaces our standby list with the assignment's, keeping what we know of
 * owners still in it (their watch, news not yet acted on). */
static void standby_update(baton_membership_t *m, const baton_worker_assignment_t *wa) {
    mstandby_t *next = xcalloc(wa->nstandby + 1, sizeof(*next));
    size_t n = 0;
    for (size_t i = 0; i < wa->nstandby; i++) {
        const baton_standby_t *s = &wa->standby[i];
        if (strcmp(s->owner, m->conf.id) == 0)
            continue;
        mstandby_t *e = &next[n];
        *e = (mstandby_t){.owner = xstrdup(s->owner)};
        e->rows = xmalloc(sizeof(size_t) * (s->npartitions + s->nkeys + 1));
        for (size_t j = 0; j < s->npartitions; j++)
            if (s->partitions[j] >= 0 && s->partitions[j] < m->res.npartitions)
                e->rows[e->n++] = (size_t)s->partitions[j];
        for (size_t j = 0; j < s->nkeys; j++)
            e->rows[e->n++] = key_row(m, s->keys[j]);
        const mstandby_t *old = standby_find(m, s->owner);
        if (old) {
            e->armed = old->armed;
            e->fired = old->fired;
            e->verify = old->verify;
            e->alive = old->alive;
        }
        n++;
    }
    standby_clear(m);
    m->standby = next;
    m->nstandby = n;
}

/* ZooKeeper's completion thread: the answer to a watch set on an owner's
 * member node. ZNONODE means the owner is gone already: queued as the
 * node's deletion, which the next poll acts on. Queues, nothing else. */
static void standby_watch_done(int rc, const struct Stat *st, const void *data) {
    (void)st;
    own_watch_t *ow = (own_watch_t *)data;
    if (rc == ZNONODE)
        baton_zk_watcher(NULL, ZOO_DELETED_EVENT, ZOO_CONNECTED_STATE, ow->path, ow->zk);
    free(ow);
}

/* The owner's node as the watch set after a promotion found it: live and
 * not leaving (another incarnation under its id, or a spurious event) is
 * queued as its creation, which makes us give back what we took (an owner
 * that restarted with its id while the coordinator did not publish, say).
 * Gone: an exists watch waits for its next incarnation. Queues, nothing
 * else (on ZooKeeper's completion thread). */
static void standby_reborn_done(int rc, const struct Stat *st, const void *data) {
    (void)st;
    own_watch_t *ow = (own_watch_t *)data;
    if (rc == ZOK) /* created meanwhile: the watch is on the new node */
        baton_zk_watcher(NULL, ZOO_CREATED_EVENT, ZOO_CONNECTED_STATE, ow->path, ow->zk);
    free(ow);
}

static void standby_verify_done(int rc, const char *value, int len, const struct Stat *st,
                                const void *data) {
    (void)st;
    own_watch_t *ow = (own_watch_t *)data;
    if (rc == ZOK) {
        baton_member_t mb;
        char why[128];
        if (baton_member_decode(value, len > 0 ? (size_t)len : 0, &mb, why, sizeof(why)) ==
                BATON_OK &&
            !mb.leaving)
            baton_zk_watcher(NULL, ZOO_CREATED_EVENT, ZOO_CONNECTED_STATE, ow->path, ow->zk);
        free(ow);
    } else if (rc == ZNONODE) {
        /* getData leaves no watch on a missing node; exists does. */
        if (zoo_awexists(baton_zk_handle(ow->zk), ow->path, baton_zk_watcher, ow->zk,
                         standby_reborn_done, ow) != ZOK)
            free(ow);
    } else {
        free(ow);
    }
}

/* Sets the watch on every owner's member node not watched yet, without
 * waiting for the answers (off the handoff's path). After a promotion the
 * watch is a read (standby_verify_done): is the owner still what we took
 * over from? */
static void standby_arm(baton_membership_t *m) {
    for (size_t i = 0; i < m->nstandby; i++) {
        mstandby_t *e = &m->standby[i];
        if (e->armed)
            continue;
        char *path = baton_layout_worker(m->base, e->owner);
        if (e->verify) {
            size_t len = strlen(path) + 1;
            own_watch_t *ow = xmalloc(sizeof(*ow) + len);
            ow->zk = m->zk;
            memcpy(ow->path, path, len);
            e->armed = zoo_awget(baton_zk_handle(m->zk), path, baton_zk_watcher, m->zk,
                                 standby_verify_done, ow) == ZOK;
            if (!e->armed)
                free(ow);
            e->verify = !e->armed;
        } else {
            /* Not sent: armed stays 0, tried again next poll. */
            e->armed = watch_send(m, path, standby_watch_done) == ZOK;
        }
        free(path);
    }
}

/* A watch fired on workers/<id>: if we stand by for id, its node changed
 * (a member rewrites its node only to mark its leave) or went. Watches are
 * one-shot: after a change or a (re)creation the node is watched again
 * (the next poll's standby_arm), so its deletion is seen too; after a
 * deletion it is not (a watch set on a missing node would answer ZNONODE,
 * which is queued as a deletion again: a loop). A new incarnation's
 * creation fires the watch that ZNONODE left. */
static void standby_note(baton_membership_t *m, const char *id, int type) {
    mstandby_t *e = standby_find(m, id);
    if (!e)
        return;
    if (type != ZOO_DELETED_EVENT)
        e->armed = 0;
    if (type == ZOO_DELETED_EVENT || type == ZOO_CHANGED_EVENT)
        e->fired = type;
    if (type == ZOO_CREATED_EVENT) /* a new incarnation, or found live */
        e->alive = 1;
}

/* Whether workers/<owner> exists now: a deletion event may be an earlier
 * incarnation's, drained together with an assignment that already names
 * the next one (then it is not a departure). An error counts as gone: the
 * claims queue and the sink's fence still decide. */
static int standby_owner_exists(baton_membership_t *m, const char *owner) {
    char *path = baton_layout_worker(m->base, owner);
    int err = baton_zk_exists(m->zk, path, 0, NULL);
    free(path);
    return err == BATON_OK;
}

/* The owner is live and not leaving: gives back what we took from it as
 * its standby and no assignment since has given us (promoted_gen is still
 * the current generation). Its own claims then become lowest; the
 * coordinator's republish (event=member_incarnation) and its watchdog end
 * any promotion this misses. */
static void standby_give_back(baton_membership_t *m, mstandby_t *e) {
    size_t gave = 0;
    for (size_t j = 0; j < e->n; j++) {
        mpart_t *mp = &m->st[e->rows[j]];
        if (!mp->promoted || mp->promoted_gen != m->generation)
            continue;
        mp->promoted = 0;
        st_assign(m, e->rows[j], 0, "standby_given_back");
        mp->dirty = 1;
        mp->retry_at = 0;
        gave++;
    }
    if (gave)
        BLOG_INFO("event=standby_given_back owner=%s reason=owner_live resources=%zu "
                  "generation=%lld",
                  e->owner, gave, (long long)m->generation);
}

/* Takes what the owners that left stand us by for: marks it assigned (the
 * claims loop claims it, on_assigned fetches ahead). */
static void standby_promote(baton_membership_t *m) {
    for (size_t i = 0; i < m->nstandby; i++) {
        mstandby_t *e = &m->standby[i];
        if (e->alive) {
            e->alive = 0;
            standby_give_back(m, e);
        }
        if (!e->fired)
            continue;
        if (e->fired == ZOO_DELETED_EVENT && standby_owner_exists(m, e->owner)) {
            /* Back already, as another incarnation: not a departure. Watch
             * the new node (a watch on it is safe: it exists). */
            BLOG_INFO("event=standby_skipped_promotion owner=%s reason=owner_live", e->owner);
            e->fired = 0;
            e->armed = 0;
            continue;
        }
        size_t took = 0;
        for (size_t j = 0; j < e->n; j++) {
            mpart_t *mp = &m->st[e->rows[j]];
            if (mstate_assigned(mp->state))
                continue;
            st_assign(m, e->rows[j], 1, "standby_promoted");
            mp->promoted = 1;
            mp->promoted_gen = m->generation;
            mp->dirty = 1;
            mp->retry_at = 0;
            assigned_note(m, e->rows[j]);
            took++;
        }
        /* Whatever we took, or after a deletion: the next watch reads the
         * owner's node, to give back if it turns out live (a restart). */
        if (took || e->fired == ZOO_DELETED_EVENT) {
            e->verify = 1;
            e->armed = 0;
        }
        if (took) { /* none: taken already (the mark, then the deletion) */
            baton_metric_add(baton_metric_counter(BATON_M_W_STANDBY_PROMOTIONS), (double)took);
            BLOG_INFO("event=standby_promoted owner=%s reason=%s resources=%zu generation=%lld",
                      e->owner, e->fired == ZOO_DELETED_EVENT ? "gone" : "leaving", took,
                      (long long)m->generation);
        }
        e->fired = 0;
    }
}

/* Notes row as newly assigned, for on_assigned. */
static void assigned_note(baton_membership_t *m, size_t row) {
    if (!m->cbs.on_assigned)
        return;
    if (m->nadded == m->addedcap) {
        m->addedcap = m->addedcap ? m->addedcap * 2 : 16;
        m->added = xrealloc(m->added, sizeof(*m->added) * m->addedcap);
    }
    m->added[m->nadded++] = row;
}

/* Tells on_assigned what was noted and is still assigned and not owned. */
static void assigned_flush(baton_membership_t *m) {
    if (m->nadded == 0)
        return;
    baton_resource_t *rs = xmalloc(sizeof(*rs) * m->nadded);
    size_t n = 0;
    for (size_t i = 0; i < m->nadded; i++) {
        const mpart_t *mp = &m->st[m->added[i]];
        if (mstate_assigned(mp->state) && !mstate_owned(mp->state))
            rs[n++] = *baton_res_at(&m->res, m->added[i]);
    }
    m->nadded = 0;
    if (n)
        m->cbs.on_assigned(m->cbs.opaque, rs, n);
    free(rs);
}

/* Whether a resource the assignment lists (listed) or not stays assigned:
 * one we took as a standby stays ours until an assignment newer than the
 * one we promoted on decides (the coordinator's publish after the
 * departure), or until it lists it (then it is simply ours). */
static int promoted_keep(mpart_t *mp, int listed, int64_t generation) {
    if (!mp->promoted)
        return listed;
    if (listed || generation > mp->promoted_gen) {
        mp->promoted = 0;
        return listed;
    }
    return 1;
}

/* Reads assignment/<id> (leaving a watch) and marks changed partitions;
 * notes the newly assigned ones for on_assigned. */
static int read_assignment(baton_membership_t *m) {
    char *path = baton_layout_assignment_of(m->base, m->conf.id);
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
    /* Every row listed is ours (a key we never heard of gets its row);
     * every row we know and is not, is not. */
    for (size_t i = 0; i < wa.nkeys; i++)
        key_row(m, wa.keys[i]);
    char *listed = xcalloc(m->res.n + 1, 1);
    for (size_t i = 0; i < wa.npartitions; i++)
        if (wa.partitions[i] >= 0 && wa.partitions[i] < m->res.npartitions)
            listed[wa.partitions[i]] = 1;
    for (size_t i = 0; i < wa.nkeys; i++)
        listed[baton_res_table_find_key(&m->res, wa.keys[i], strlen(wa.keys[i]))] = 1;
    for (size_t row = 0; row < m->res.n; row++) {
        mpart_t *mp = &m->st[row];
        int want = promoted_keep(mp, listed[row], wa.generation);
        if (want != mstate_assigned(mp->state)) {
            st_assign(m, row, want, "assignment");
            mp->dirty = 1;
            if (want && !mstate_owned(mp->state))
                assigned_note(m, row);
        }
    }
    free(listed);
    for (size_t i = 0; i < wa.npartitions; i++)
        if (wa.partitions[i] >= m->res.npartitions)
            BLOG_WARN("event=assignment_out_of_range partition=%d partitions=%d", wa.partitions[i],
                      m->res.npartitions);
    if (wa.generation != m->generation)
        BLOG_INFO("event=assignment generation=%lld partitions=%zu keys=%zu standby_for=%zu",
                  (long long)wa.generation, wa.npartitions, wa.nkeys, wa.nstandby);
    m->generation = wa.generation;
    standby_update(m, &wa);
out:
    baton_worker_assignment_release(&wa);
    free(data);
    free(path);
    return err;
}

/* Deletes dir/name, a second claim of our session beside keep (a create
 * whose reply was lost landed after all): waiting behind it would last as
 * long as our session, and left behind ours it would block the next owner. */
static void claim_delete_duplicate(baton_membership_t *m, size_t row, const char *dir,
                                   const char *name, const char *keep) {
    char *path = baton_layout_child(dir, name);
    int e = baton_zk_delete(m->zk, path, -1);
    BLOG_WARN("event=duplicate_claim %s claim=%s kept=%s action=delete result=%s",
              row_label(m, row), name, keep, baton_err_name(e));
    free(path);
}

/* After a create whose reply was lost: finds the claim it may have made,
 * by our session id in the name and as its ephemeral owner (a claim of an
 * earlier session, even with our worker id, is never ours). Sets mp->claim
 * if found and clears uncertain; an error keeps it uncertain. */
static int find_own_claim(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    const char *dir = baton_res_claims(&m->res, row);
    int err = BATON_OK;
    {
        char **names = NULL;
        size_t n = 0;
        /* The create may have gone through another server: catch up with
         * the leader first, or the listing can miss it (then we would
         * create a second claim, behind our own; queue_decide mends that
         * too). */
        if ((err = baton_zk_sync(m->zk, dir)) != BATON_OK ||
            (err = baton_zk_children(m->zk, dir, 0, &names, &n)) != BATON_OK)
            goto out;
        int found = 0;
        for (size_t i = 0; i < n; i++) {
            if (!baton_claim_of_session(names[i], m->session))
                continue;
            char *path = baton_layout_child(dir, names[i]);
            struct Stat st;
            int e = baton_zk_exists(m->zk, path, 0, &st);
            if (e == BATON_OK && st.ephemeralOwner == baton_zk_session_id(m->zk) && found) {
                /* Names sort by sequence: we keep the lowest, found first. */
                claim_delete_duplicate(m, row, dir, names[i], mp->claim);
            } else if (e == BATON_OK && st.ephemeralOwner == baton_zk_session_id(m->zk)) {
                found = 1;
                snprintf(mp->claim, sizeof(mp->claim), "%s", names[i]);
                mp->czxid = st.czxid;
                st_phase(m, row, MPHASE_CLAIMED, "claim_recovered");
                BLOG_INFO("event=claim_recovered %s claim=%s", row_label(m, row), mp->claim);
            } else if (e != BATON_OK && e != BATON_NOTFOUND) {
                err = e; /* cannot tell: stay uncertain rather than create twice */
            }
            free(path);
        }
        baton_zk_strings_free(names, n);
        /* A claim found is ours whatever another name's check said (a
         * second claim of ours beside it is deleted by queue_decide). */
        if (err == BATON_OK && !found)
            st_phase(m, row, MPHASE_NONE, "no_claim_found");
    }
out:
    return err;
}

/* Creates our claim on p, or finds the one a lost reply created. */
static int create_claim(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    int err = BATON_OK;
    if (mstate_uncertain(mp->state)) {
        if ((err = find_own_claim(m, row)) != BATON_OK || mp->claim[0])
            return err;
    }
    const char *dir = baton_res_claims(&m->res, row);
    baton_claim_t claim = {.generation = m->generation};
    snprintf(claim.worker, sizeof(claim.worker), "%s", m->conf.id);
    char *data = baton_claim_encode(&claim);
    char *prefix = baton_layout_claim_create(dir, m->session);
    char created[512];
    struct Stat st;
    err = baton_zk_create(m->zk, prefix, data, strlen(data), ZOO_EPHEMERAL_SEQUENTIAL, created,
                          sizeof(created), &st);
    if (err == BATON_OK) {
        snprintf(mp->claim, sizeof(mp->claim), "%s", strrchr(created, '/') + 1);
        mp->czxid = st.czxid;
        mp->claimed_ms = baton_now_ms();
        st_phase(m, row, MPHASE_CLAIMED, "claimed");
        BLOG_INFO("event=claimed %s claim=%s czxid=%lld", row_label(m, row), mp->claim,
                  (long long)st.czxid);
    } else if (err == BATON_CONNECTION) {
        st_phase(m, row, MPHASE_UNCERTAIN, "reply_lost");
    } else if (err == BATON_NOTFOUND) {
        BLOG_ERROR("event=claim_failed %s error=\"'%s' does not exist\"", row_label(m, row), dir);
    }
    free(prefix);
    free(data);
    return err;
}

/* The first half of a queue check, given the claims listed in p's
 * directory: returns the path to watch (heap; our own claim when we are
 * lowest, else our predecessor's) and sets *waiting, or NULL when our claim
 * is gone (then p is marked to be claimed again). *adopted: our claim is now
 * another of our session (a duplicate was deleted): its stat is not known. */
static char *queue_decide(baton_membership_t *m, size_t row, char **names, size_t n, int *waiting,
                          int *adopted) {
    mpart_t *mp = &m->st[row];
    *adopted = 0;
    /* Every claim named with our session is ours (only our session creates
     * such names, as its ephemerals). More than one: a create whose reply
     * was lost landed after the listing that looked for it. Keep the
     * lowest, which no other claim of ours may wait behind, and delete the
     * others: one would block us, or block the next owner after we let go. */
    char **own = xcalloc(n ? n : 1, sizeof(char *));
    size_t nown = 0;
    for (size_t i = 0; i < n; i++)
        if (baton_claim_of_session(names[i], m->session))
            own[nown++] = names[i];
    const char *own_low = baton_claim_lowest(own, nown);
    free(own);
    if (nown > 1) {
        /* An owner keeps the claim its epoch came from (the lowest of all);
         * if that is gone, claim_lost below deals with it. */
        const char *keep = own_low;
        if (mstate_owned(mp->state)) {
            keep = NULL;
            for (size_t i = 0; i < n; i++)
                if (strcmp(names[i], mp->claim) == 0)
                    keep = names[i];
        }
        const char *dir = baton_res_claims(&m->res, row);
        for (size_t i = 0; keep && i < n; i++) {
            if (names[i] == keep || !baton_claim_of_session(names[i], m->session))
                continue;
            claim_delete_duplicate(m, row, dir, names[i], keep);
            if (strcmp(mp->claim, names[i]) == 0) { /* not owned: take the kept one */
                snprintf(mp->claim, sizeof(mp->claim), "%s", keep);
                mp->czxid = 0; /* learnt from its stat once it is lowest (queue_settle) */
                *adopted = 1;
            }
            names[i][0] = 0; /* not a claim any more, below */
        }
    }
    int found = 0;
    const char *pred = baton_claim_predecessor(names, n, mp->claim, &found);
    if (!found) {
        /* Removed by someone else (an operator, or the coordinator's stuck
         * handoff revoke): claim again if still assigned. */
        BLOG_WARN("event=claim_lost %s claim=%s", row_label(m, row), mp->claim);
        if (mstate_owned(mp->state))
            cb_released(m, row, BATON_RELEASE_LOST);
        mp->claim[0] = 0;
        st_phase(m, row, MPHASE_NONE, "claim_lost");
        mp->dirty = 1;
        return NULL;
    }
    *waiting = pred != NULL;
    if (pred)
        BLOG_DEBUG("event=waiting %s behind=%s", row_label(m, row), pred);
    const char *dir = baton_res_claims(&m->res, row);
    /* Leader: watch our own claim so its deletion reaches us. Waiter: watch
     * the predecessor only, so a release wakes one claimant, not a herd. */
    char *watch_path = baton_layout_child(dir, pred ? pred : mp->claim);
    return watch_path;
}

/* The second half: the watch was set (err, and st the watched node's
 * stat). The lowest claim owns p: take it (on_acquired). */
static int queue_settle(baton_membership_t *m, size_t row, int err, const struct Stat *st,
                        int waiting) {
    mpart_t *mp = &m->st[row];
    if (err == BATON_NOTFOUND) {
        mp->dirty = 1; /* it went meanwhile: look again */
        return BATON_OK;
    }
    if (err != BATON_OK || waiting)
        return err;
    /* Our own claim's stat: its czxid is the epoch (a batched create, see
     * claims_create_batch, learns it only here). */
    if (st && st->czxid)
        mp->czxid = st->czxid;
    if (!mstate_owned(mp->state)) {
        if (!baton_membership_can_write(m)) {
            mp->dirty = 1;
            return BATON_OK;
        }
        /* Owned while on_acquired runs, so baton_epoch_valid() holds there
         * (an application fences its resource from inside the callback). */
        st_phase(m, row, MPHASE_OWNED, "acquired");
        int rc = cb_acquired(m, row, mp->czxid);
        if (rc != BATON_OK)
            st_phase(m, row, MPHASE_CLAIMED, "acquire_refused");
        if (rc == BATON_OK) {
            if (mp->claimed_ms)
                baton_metric_observe(baton_metric_histogram(BATON_M_W_HANDOFF_SECONDS),
                                     (double)(baton_now_ms() - mp->claimed_ms) / 1000.0);
            mp->claimed_ms = 0;
            BLOG_INFO("event=acquired %s epoch=%lld generation=%lld", row_label(m, row),
                      (long long)mp->czxid, (long long)m->generation);
        } else if (rc == BATON_STALE) {
            drop_row(m, row);
        } else {
            mp->dirty = 1;
            mp->retry_at = baton_now_ms() + RETRY_MS;
        }
    }
    return BATON_OK;
}

/* ---- batched claims --------------------------------------------------------
 * One poll may have many resources to claim (a cold start, a failover, a
 * join). A few (up to CLAIM_PIPELINE_MAX, a handoff) are created in the
 * same flight as their queue checks: one round trip when lowest. More go
 * in multis of up to CLAIM_MULTI_MAX first (one write transaction each),
 * then their queue checks (list the claims, set one watch) as pipelined
 * asynchronous requests: two round trips, not three per resource. A claim
 * that waits costs one more (the watch on its predecessor). The
 * completions run on ZooKeeper's completion thread and only store results
 * into a zbatch_t and signal; the owner's thread waits for them and acts.
 * (Not common/baton_zkbatch.h, the read batcher: this one mixes creates,
 * lists and watched exists in one flight, and gives up waiting past a bound,
 * leaving the batch to its last completion, as a member must not hang.) */

typedef struct zbatch_s zbatch_t;

typedef struct {
    zbatch_t *b;
    int rc;       /* the ZooKeeper result */
    char **names; /* get_children: heap copies, freed with the batch */
    size_t n;
    char *created;  /* create: the new node's path (heap), freed with the batch */
    struct Stat st; /* exists: the watched node's stat; create: the new node's */
} zslot_t;

struct zbatch_s {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending;   /* requests not completed yet */
    int abandoned; /* the owner stopped waiting: the last completion frees */
    size_t nslots;
    zslot_t *slots;
};

static zbatch_t *zbatch_new(size_t n) {
    zbatch_t *b = xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->nslots = n;
    b->slots = xcalloc(n ? n : 1, sizeof(zslot_t));
    for (size_t i = 0; i < n; i++)
        b->slots[i] = (zslot_t){.b = b, .rc = ZAPIERROR};
    return b;
}

static void zbatch_free(zbatch_t *b) {
    for (size_t i = 0; i < b->nslots; i++) {
        baton_zk_strings_free(b->slots[i].names, b->slots[i].n);
        free(b->slots[i].created);
    }
    free(b->slots);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* Any thread: one request of the batch finished (or was never sent). */
static void zbatch_done(zslot_t *s, int rc) {
    zbatch_t *b = s->b;
    pthread_mutex_lock(&b->mu);
    s->rc = rc;
    int last = --b->pending == 0;
    int orphan = last && b->abandoned;
    if (last)
        pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (orphan)
        zbatch_free(b);
}

/* ZooKeeper's completion thread: copies the names, nothing else. */
static void zbatch_children_done(int rc, const struct String_vector *sv, const void *data) {
    zslot_t *s = (zslot_t *)data;
    if (rc == ZOK && sv && sv->count > 0) {
        s->names = xcalloc((size_t)sv->count, sizeof(char *));
        for (int i = 0; i < sv->count; i++)
            s->names[i] = xstrdup(sv->data[i]);
        s->n = (size_t)sv->count;
    }
    zbatch_done(s, rc);
}

static void zbatch_exists_done(int rc, const struct Stat *st, const void *data) {
    zslot_t *s = (zslot_t *)data;
    if (rc == ZOK && st)
        s->st = *st;
    zbatch_done(s, rc);
}

static void zbatch_create_done(int rc, const char *path, const struct Stat *st, const void *data) {
    zslot_t *s = (zslot_t *)data;
    if (rc == ZOK && path && st) {
        s->created = xstrdup(path);
        s->st = *st;
    }
    zbatch_done(s, rc);
}

/* ZooKeeper's completion thread: the answer to the watch set on a claim
 * taken in one round trip (claims_queue_batch; the create's reply named
 * the claim only then). A claim already gone (ZNONODE), or an answer lost
 * with the connection, is queued as that claim's deletion, so the owner's
 * next poll checks the queue again; a watch that was set reports a later
 * deletion itself. Queues, nothing else. */
static void own_watch_done(int rc, const struct Stat *st, const void *data) {
    (void)st;
    own_watch_t *ow = (own_watch_t *)data;
    if (rc != ZOK && rc != ZCLOSING)
        baton_zk_watcher(NULL, ZOO_DELETED_EVENT, ZOO_CONNECTED_STATE, ow->path, ow->zk);
    free(ow);
}

/* Sets the watch on our claim at path without waiting for the answer. */
static void own_watch_send(baton_membership_t *m, const char *path) {
    /* Not sent: as own_watch_done does for a failed answer, queue it as the
     * claim's deletion so the next poll looks at the queue again. */
    int rc = watch_send(m, path, own_watch_done);
    if (rc != ZOK && rc != ZCLOSING)
        baton_zk_watcher(NULL, ZOO_DELETED_EVENT, ZOO_CONNECTED_STATE, path, m->zk);
}

/* Owner thread: waits for every request of b. The ZooKeeper client
 * completes every request (with ZCONNECTIONLOSS when the connection goes),
 * so the bound is only a safety net: past it, b is handed to its last
 * completion to free and must not be touched; returns 0 then. */
static int zbatch_wait(zbatch_t *b, int timeout_ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&b->mu);
    while (b->pending > 0)
        if (pthread_cond_timedwait(&b->cv, &b->mu, &until) != 0)
            break;
    int done = b->pending == 0;
    if (!done)
        b->abandoned = 1;
    pthread_mutex_unlock(&b->mu);
    return done;
}

/* Creates claims for rows[0..n-1] (none has one, none is uncertain) in one
 * multi; errs[i] gets each one's result. A multi is all or nothing: a lost
 * reply makes every one uncertain (lost-create recovery then looks for each
 * by our session id); another failure (a missing directory) retries them
 * one by one, so each gets its own error. The czxid of a claim made here is
 * learned by the queue check (queue_settle), from our own claim's stat. */
static void claims_create_batch(baton_membership_t *m, const size_t *rows, int32_t n, int *errs) {
    baton_claim_t claim = {.generation = m->generation};
    snprintf(claim.worker, sizeof(claim.worker), "%s", m->conf.id);
    char *data = baton_claim_encode(&claim);
    zoo_op_t *ops = xcalloc((size_t)n, sizeof(*ops));
    zoo_op_result_t *res = xcalloc((size_t)n, sizeof(*res));
    char **prefixes = xcalloc((size_t)n, sizeof(char *));
    char *bufs = xcalloc((size_t)n, 512);
    for (int32_t i = 0; i < n; i++) {
        const char *dir = baton_res_claims(&m->res, rows[i]);
        prefixes[i] = baton_layout_claim_create(dir, m->session);
        zoo_create_op_init(&ops[i], prefixes[i], data, (int)strlen(data), baton_zk_acl(),
                           ZOO_EPHEMERAL_SEQUENTIAL, bufs + (size_t)i * 512, 512);
    }
    int rc = baton_zk_multi(m->zk, n, ops, res);
    int err = baton_zk_err(rc);
    int64_t now = baton_now_ms();
    for (int32_t i = 0; i < n; i++) {
        mpart_t *mp = &m->st[rows[i]];
        if (err == BATON_OK) {
            const char *slash = strrchr(bufs + (size_t)i * 512, '/');
            snprintf(mp->claim, sizeof(mp->claim), "%s", slash ? slash + 1 : "");
            mp->czxid = 0;
            mp->claimed_ms = now;
            st_phase(m, rows[i], MPHASE_CLAIMED, "claimed");
            BLOG_INFO("event=claimed %s claim=%s batch=%d", row_label(m, rows[i]), mp->claim, n);
            errs[i] = BATON_OK;
        } else if (err == BATON_CONNECTION) {
            st_phase(m, rows[i], MPHASE_UNCERTAIN, "reply_lost");
            errs[i] = err;
        } else if (err == BATON_EXPIRED) {
            errs[i] = err;
        } else {
            errs[i] = create_claim(m, rows[i]);
        }
        free(prefixes[i]);
    }
    free(bufs);
    free(prefixes);
    free(res);
    free(ops);
    free(data);
}

/* Claims and queue checks for rows[0..n-1], pipelined; create[i] says
 * rid i has no claim yet. Round one sends, per resource, either a create
 * (its reply carries the claim's name and czxid, the epoch) and then a
 * list of the claims directory, or, for a claim we hold, the list and a
 * watch on that claim (its stat carries the czxid). ZooKeeper answers a
 * session's requests in order, so the list already shows our create. When
 * our claim is the lowest, the usual case, that is the whole check: one
 * round trip, and a claim created here gets its watch without waiting for
 * the answer (own_watch_send). Round two watches the predecessor of each
 * claim that waits. The spare watch on our own claim of a waiting one is
 * harmless (its deletion is ours, or an operator's, which we must notice
 * anyway). A create whose reply is lost makes its resource uncertain
 * (claims_reconcile looks for the claim by our session id before creating
 * again). */
static void claims_queue_batch(baton_membership_t *m, const size_t *rows, int32_t n,
                               const int *create, int *errs) {
    zhandle_t *zh = baton_zk_handle(m->zk);
    int timeout = baton_zk_session_timeout(m->zk) + 1000;
    char **watch = xcalloc((size_t)n, sizeof(char *));
    int *waiting = xcalloc((size_t)n, sizeof(int));
    baton_claim_t claim = {.generation = m->generation};
    snprintf(claim.worker, sizeof(claim.worker), "%s", m->conf.id);
    char *data = baton_claim_encode(&claim);
    zbatch_t *b = zbatch_new((size_t)n * 2);
    b->pending = n * 2;
    int64_t t0 = baton_now_us();
    for (int32_t i = 0; i < n; i++) {
        const char *dir = baton_res_claims(&m->res, rows[i]);
        zslot_t *list = &b->slots[i], *own = &b->slots[n + i];
        int rc;
        if (create[i]) {
            char *prefix = baton_layout_claim_create(dir, m->session);
            rc = zoo_acreate2(zh, prefix, data, (int)strlen(data), baton_zk_acl(),
                              ZOO_EPHEMERAL_SEQUENTIAL, zbatch_create_done, own);
            if (rc != ZOK)
                zbatch_done(own, rc);
            free(prefix);
        }
        rc = zoo_aget_children(zh, dir, 0, zbatch_children_done, list);
        if (rc != ZOK)
            zbatch_done(list, rc);
        if (!create[i]) {
            char *path = baton_layout_child(dir, m->st[rows[i]].claim);
            rc = zoo_awexists(zh, path, baton_zk_watcher, m->zk, zbatch_exists_done, own);
            if (rc != ZOK)
                zbatch_done(own, rc);
            free(path);
        }
    }
    /* While the claims are in flight: the application prepares. */
    assigned_flush(m);
    if (!zbatch_wait(b, timeout)) {
        for (int32_t i = 0; i < n; i++) {
            errs[i] = BATON_CONNECTION;
            if (create[i])
                st_phase(m, rows[i], MPHASE_UNCERTAIN, "reply_lost");
        }
        b = NULL; /* its last completion frees it */
        goto out;
    }
    BLOG_DEBUG("event=claims_answered resources=%d round_trip_us=%lld", n,
               (long long)(baton_now_us() - t0));
    int nwait = 0;
    int64_t now = baton_now_ms();
    for (int32_t i = 0; i < n; i++) {
        mpart_t *mp = &m->st[rows[i]];
        zslot_t *list = &b->slots[i], *own = &b->slots[n + i];
        errs[i] = BATON_OK;
        if (create[i]) {
            int e = baton_zk_err(own->rc);
            if (e == BATON_OK) {
                const char *slash = strrchr(own->created, '/');
                snprintf(mp->claim, sizeof(mp->claim), "%s", slash ? slash + 1 : own->created);
                mp->czxid = own->st.czxid;
                mp->claimed_ms = now;
                st_phase(m, rows[i], MPHASE_CLAIMED, "claimed");
                BLOG_INFO("event=claimed %s claim=%s czxid=%lld", row_label(m, rows[i]), mp->claim,
                          (long long)mp->czxid);
            } else {
                if (e == BATON_CONNECTION)
                    st_phase(m, rows[i], MPHASE_UNCERTAIN, "reply_lost");
                else if (e == BATON_NOTFOUND)
                    BLOG_ERROR("event=claim_failed %s error=\"its claims directory does not "
                               "exist\"",
                               row_label(m, rows[i]));
                errs[i] = e;
                continue;
            }
        }
        int adopted = 0;
        if ((errs[i] = baton_zk_err(list->rc)) == BATON_OK)
            watch[i] = queue_decide(m, rows[i], list->names, list->n, &waiting[i], &adopted);
        /* An adopted claim's stat is not the one in flight: its watch
         * (below) brings it. */
        if (watch[i] && !waiting[i] && !adopted) {
            /* Lowest: our own claim's stat (the create's or the watch's)
             * settles it; a claim created here still needs its watch. */
            errs[i] =
                queue_settle(m, rows[i], create[i] ? BATON_OK : baton_zk_err(own->rc), &own->st, 0);
            if (create[i])
                own_watch_send(m, watch[i]);
            free(watch[i]);
            watch[i] = NULL;
        }
        nwait += watch[i] != NULL;
    }
    zbatch_free(b);
    b = zbatch_new((size_t)n);
    b->pending = nwait;
    for (int32_t i = 0; i < n; i++) {
        if (!watch[i])
            continue;
        int rc =
            zoo_awexists(zh, watch[i], baton_zk_watcher, m->zk, zbatch_exists_done, &b->slots[i]);
        if (rc != ZOK)
            zbatch_done(&b->slots[i], rc);
    }
    if (nwait > 0 && !zbatch_wait(b, timeout)) {
        for (int32_t i = 0; i < n; i++)
            if (watch[i])
                errs[i] = BATON_CONNECTION;
        b = NULL; /* its last completion frees it */
        goto out;
    }
    for (int32_t i = 0; i < n; i++)
        if (watch[i])
            errs[i] =
                queue_settle(m, rows[i], baton_zk_err(b->slots[i].rc), &b->slots[i].st, waiting[i]);
out:
    if (b)
        zbatch_free(b); /* every request completed */
    for (int32_t i = 0; i < n; i++)
        free(watch[i]);
    free(watch);
    free(waiting);
    free(data);
}

/* Brings the claims of assigned resources rows[0..n-1] in line: recover
 * uncertain creates, then claim and check the queues. Up to
 * CLAIM_PIPELINE_MAX new claims are created in the queue check's own round
 * trip, one create each (a handoff's few partitions: one round trip in
 * all); more go first in multis (a cold start's hundreds: one write
 * transaction per multi, not per claim), then the check. A resource that
 * failed is marked to retry after RETRY_MS. Returns BATON_EXPIRED if the
 * session is gone (stop: the next poll rejoins), else BATON_OK. */
static int claims_reconcile(baton_membership_t *m, const size_t *rows, int32_t n) {
    int *errs = xcalloc((size_t)n + 1, sizeof(int));
    int32_t *sub = xmalloc(sizeof(int32_t) * ((size_t)n + 1));
    size_t *r = xmalloc(sizeof(size_t) * ((size_t)n + 1));
    int *suberr = xcalloc((size_t)n + 1, sizeof(int));
    int *create = xcalloc((size_t)n + 1, sizeof(int));
    int32_t nsub = 0;
    /* Lost replies first, one by one (rare): find before creating. */
    for (int32_t i = 0; i < n; i++) {
        mpart_t *mp = &m->st[rows[i]];
        if (mstate_uncertain(mp->state))
            errs[i] = find_own_claim(m, rows[i]);
    }
    for (int32_t i = 0; i < n; i++)
        if (errs[i] == BATON_OK && !m->st[rows[i]].claim[0])
            sub[nsub++] = i;
    if (nsub > CLAIM_PIPELINE_MAX) {
        for (int32_t j = 0; j < nsub; j++)
            r[j] = rows[sub[j]];
        claims_create_batch(m, r, nsub, suberr);
        for (int32_t j = 0; j < nsub; j++)
            errs[sub[j]] = suberr[j];
    }
    nsub = 0;
    for (int32_t i = 0; i < n; i++) {
        if (errs[i] != BATON_OK)
            continue;
        create[nsub] = !m->st[rows[i]].claim[0];
        r[nsub] = rows[i];
        sub[nsub++] = i;
    }
    if (nsub > 0) {
        claims_queue_batch(m, r, nsub, create, suberr);
        for (int32_t j = 0; j < nsub; j++)
            errs[sub[j]] = suberr[j];
    }
    int expired = 0;
    int64_t now = baton_now_ms();
    for (int32_t i = 0; i < n; i++) {
        if (errs[i] == BATON_OK)
            continue;
        mpart_t *mp = &m->st[rows[i]];
        mp->dirty = 1;
        mp->retry_at = now + RETRY_MS;
        expired |= errs[i] == BATON_EXPIRED;
    }
    free(create);
    free(suberr);
    free(r);
    free(sub);
    free(errs);
    return expired ? BATON_EXPIRED : BATON_OK;
}

/* Brings an unassigned resource's claim in line with the assignment. */
static int reconcile_partition(baton_membership_t *m, size_t row) {
    mpart_t *mp = &m->st[row];
    if (!mstate_assigned(mp->state)) {
        if (mstate_owned(mp->state))
            cb_released(m, row, BATON_RELEASE_REVOKED);
        /* A create whose reply was lost may have left a claim of ours: find
         * and delete it, or it would block the next owner for as long as
         * our session lives. */
        if (mstate_uncertain(mp->state)) {
            int err = find_own_claim(m, row);
            if (err != BATON_OK)
                return err; /* still uncertain: look again */
            if (mp->claim[0])
                BLOG_INFO("event=orphan_claim %s claim=%s action=delete", row_label(m, row),
                          mp->claim);
        }
        if (mp->claim[0]) {
            BATON_FAILPOINT("worker.before_release");
            delete_claim(m, row, "released");
        }
        return BATON_OK;
    }
    return BATON_OK; /* an assigned one is claimed by claims_reconcile */
}

/* Drops everything without flushing: our session is gone, so are our
 * claims, and a successor may already be writing. */
static void lose_all(baton_membership_t *m, const char *why) {
    for (size_t row = 0; row < m->res.n; row++) {
        mpart_t *mp = &m->st[row];
        if (mstate_owned(mp->state))
            cb_released(m, row, BATON_RELEASE_LOST);
        st_set(m, row, MSTATE_IDLE, why);
        memset(mp, 0, sizeof(*mp)); /* MSTATE_IDLE is 0 */
    }
    /* A new session has none of our watches, and what we stood by for is
     * decided anew by the assignment we read then. */
    standby_clear(m);
}

/* Reacts to a watch on a path: mark what it concerns. */
static void note_event(baton_membership_t *m, const char *path, int type) {
    baton_path_t at;
    long row = -1;
    switch (baton_layout_classify(m->base, path, &at)) {
    case BATON_PATH_PARTITION:
        if (at.partition < m->res.npartitions)
            row = at.partition;
        break;
    case BATON_PATH_KEY: row = baton_res_table_find_key(&m->res, at.name, at.name_len); break;
    case BATON_PATH_ASSIGNMENT: m->assignment_dirty = 1; return;
    case BATON_PATH_WORKER:
        if (strcmp(path, m->member_path) == 0) {
            m->member_dirty = 1;
        } else if (at.name_len <= BATON_ID_MAX) { /* longer is no member id */
            char id[BATON_ID_MAX + 1];
            snprintf(id, sizeof(id), "%.*s", (int)at.name_len, at.name);
            standby_note(m, id, type);
        }
        return;
    case BATON_PATH_CONFIG:
    case BATON_PATH_OTHER: break;
    }
    if (row >= 0)
        m->st[row].dirty = 1;
    else
        m->all_dirty = 1; /* the config, or nothing we know: look at everything */
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
    if (cfg.partitions > m->res.npartitions) {
        BLOG_INFO("event=partitions_grown from=%d to=%d", m->res.npartitions, cfg.partitions);
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

/* How soon the owner should poll again: a dirty resource's retry time, a
 * pending re-read, or the liveness probe. */
static int soon_of(baton_membership_t *m, int err, int probe_ms) {
    int soon = 1000;
    int64_t t = baton_now_ms();
    for (size_t row = 0; row < m->res.n; row++) {
        const mpart_t *mp = &m->st[row];
        if (mp->dirty) {
            int64_t d = mp->retry_at - t;
            soon = d < soon ? (d < 0 ? 0 : (int)d) : soon;
        }
    }
    if (m->assignment_dirty || m->all_dirty || m->member_dirty || err != BATON_OK)
        soon = soon < RETRY_MS ? soon : RETRY_MS;
    return soon < probe_ms ? soon : probe_ms;
}

/* Between sessions (ours expired): one attempt to connect and register
 * again per call, at most every REJOIN_MS, so the caller's own loop keeps
 * running (a SIGTERM is seen while ZooKeeper is down). */
#define REJOIN_MS 1000
static int rejoin(baton_membership_t *m, int *next_ms, char *errstr, size_t n) {
    int64_t now = baton_now_ms();
    if (now >= m->rejoin_at) {
        int err = connect_and_join(m, errstr, n);
        if (err == BATON_OK) {
            m->next_ms = 0;
            if (next_ms)
                *next_ms = 0;
            return BATON_OK;
        }
        /* Refused credentials (the root's ACL no longer lets our identity
         * write, or the server failed our authentication) do not get better
         * by retrying: fatal, like at start. */
        if (err == BATON_EXISTS || err == BATON_DENIED || baton_err_is_input(err))
            return err;
        BLOG_WARN("event=rejoin_failed error=\"%s\" action=retry in_ms=%d", errstr, REJOIN_MS);
        baton_zk_destroy(m->zk);
        m->zk = NULL;
        m->rejoin_at = now + REJOIN_MS;
    }
    int64_t left = m->rejoin_at - baton_now_ms();
    m->next_ms = left < 0 ? 0 : (int)left;
    if (next_ms)
        *next_ms = m->next_ms;
    return BATON_OK;
}

int baton_membership_poll(baton_membership_t *m, int *next_ms, char *errstr, size_t n) {
    if (m->evicted)
        return baton_seterr(errstr, n, BATON_EVICTED, "evicted: '%s' was deleted", m->member_path);
    if (!m->zk)
        return rejoin(m, next_ms, errstr, n);
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
            note_event(m, ev.path, ev.type);
        }
        baton_zk_event_release(&ev);
    }
    if ((expired || baton_zk_expired(m->zk)) &&
        zoo_state(baton_zk_handle(m->zk)) == ZOO_AUTH_FAILED_STATE) {
        /* The server failed our authentication mid-session: a new session
         * would present the same credentials. Fatal, not a rejoin loop. */
        lose_all(m, "auth_failed");
        return baton_seterr(errstr, n, BATON_DENIED,
                            "ZooKeeper authentication failed for session 0x%s (check --zk-auth); "
                            "every partition dropped",
                            m->session_hex);
    }
    if (expired || baton_zk_expired(m->zk)) {
        BLOG_WARN("event=session_expired session=0x%s action=drop_all_and_rejoin", m->session_hex);
        baton_metric_inc(baton_metric_counter(BATON_M_ZK_EXPIRATIONS));
        lose_all(m, "session_expired");
        m->disconnected = 0;
        baton_zk_destroy(m->zk);
        m->zk = NULL;
        m->rejoin_at = 0;
        return rejoin(m, next_ms, errstr, n);
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
            lose_all(m, "evicted");
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
        for (size_t i = 0; i < m->nstandby; i++) {
            mstandby_t *e = &m->standby[i];
            e->armed = 0; /* watches may have been lost: set them again */
            /* ... and the look at the owner after a promotion, which a
             * connection loss may have cut short */
            for (size_t j = 0; j < e->n && !e->verify; j++)
                e->verify = m->st[e->rows[j]].promoted;
        }
        for (size_t row = 0; row < m->res.n; row++)
            m->st[row].dirty = 1;
    }
    if (m->assignment_dirty) {
        m->assignment_dirty = 0;
        if ((err = read_assignment(m)) != BATON_OK) {
            m->assignment_dirty = 1;
            goto done;
        }
    }
    /* Only on a current assignment: one the coordinator published before
     * an owner's departure reaches us first (ZooKeeper delivers events in
     * order), so a move it already made elsewhere is never undone here. */
    standby_promote(m);
    int64_t now = baton_now_ms();
    /* Releases first, so partitions we give up reach their new owners before
     * we spend time claiming new ones. */
    for (size_t row = 0; row < m->res.n; row++) {
        mpart_t *mp = &m->st[row];
        if (!mp->dirty || mp->retry_at > now || mstate_assigned(mp->state))
            continue;
        mp->dirty = 0;
        int e = reconcile_partition(m, row);
        if (e != BATON_OK) {
            mp->dirty = 1;
            mp->retry_at = now + RETRY_MS;
            if (e == BATON_EXPIRED) {
                err = BATON_OK; /* picked up by the next poll's expiry path */
                goto done;
            }
        }
    }
    /* Then claims, in batches of CLAIM_MULTI_MAX (claims_reconcile). */
    {
        size_t *batch = xmalloc(sizeof(size_t) * CLAIM_MULTI_MAX);
        int32_t nb = 0;
        size_t total = m->res.n;
        for (size_t row = 0; row <= total; row++) {
            if (row < total) {
                mpart_t *mp = &m->st[row];
                if (!mp->dirty || mp->retry_at > now || !mstate_assigned(mp->state))
                    continue;
                mp->dirty = 0;
                batch[nb++] = row;
            }
            if (nb > 0 && (nb == CLAIM_MULTI_MAX || row == total)) {
                int e = claims_reconcile(m, batch, nb);
                nb = 0;
                if (e == BATON_EXPIRED) {
                    free(batch);
                    err = BATON_OK; /* picked up by the next poll's expiry path */
                    goto done;
                }
            }
        }
        free(batch);
    }
    standby_arm(m);
done:
    assigned_flush(m); /* if no claim was sent this time */
    m->next_ms = soon_of(m, err, probe_ms);
    if (next_ms)
        *next_ms = m->next_ms;
    if (err != BATON_OK && !baton_err_is_fatal(err) && !baton_err_is_input(err))
        err = BATON_OK; /* retriable: try again on the next poll */
    if (err == BATON_EXPIRED)
        err = BATON_OK;
    return err;
}

/* Whether the assignment still gives us anything. */
static int assigned_any(baton_membership_t *m) {
    for (size_t row = 0; row < m->res.n; row++)
        if (mstate_assigned(m->st[row].state))
            return 1;
    return 0;
}

/* During a graceful leave: waits until the assignment without our
 * resources arrives (the coordinator rebalances at once on our mark and
 * names our successors, who queue their claims behind ours), at most
 * LEAVE_WAIT_MS: without a coordinator the wait simply expires. */
static void leave_wait(baton_membership_t *m) {
    int64_t t0 = baton_now_ms(), deadline = t0 + LEAVE_WAIT_MS;
    int again = 1; /* read once: the watch may have fired before we looked */
    while (assigned_any(m)) {
        if (again) {
            again = 0;
            if (read_assignment(m) != BATON_OK)
                again = 1;
            if (!assigned_any(m))
                break;
        }
        int64_t left = deadline - baton_now_ms();
        if (left <= 0 || baton_zk_expired(m->zk)) {
            BLOG_INFO("event=leave_wait_expired waited_ms=%lld", (long long)(baton_now_ms() - t0));
            return;
        }
        struct pollfd pfd = {.fd = baton_zk_fd(m->zk), .events = POLLIN};
        poll(&pfd, 1, (int)(again && left > RETRY_MS ? RETRY_MS : left));
        baton_zk_event_t ev;
        while (baton_zk_next_event(m->zk, &ev)) {
            if (ev.type == ZOO_SESSION_EVENT && ev.state == ZOO_CONNECTED_STATE)
                again = 1; /* the watch may have been lost while disconnected */
            else if (ev.type != ZOO_SESSION_EVENT && ev.type != PROBE_EVENT && ev.path &&
                     strstr(ev.path, "/assignment/"))
                again = 1;
            baton_zk_event_release(&ev);
        }
    }
    BLOG_INFO("event=leave_reassigned waited_ms=%lld", (long long)(baton_now_ms() - t0));
}

/* Deletes every claim we hold, in as few multis as possible (one round
 * trip; the successors waiting behind them are woken together). A failed
 * multi (a claim already gone, a lost connection) falls back to one delete
 * per claim. */
static void claims_delete_all(baton_membership_t *m) {
    size_t total = m->res.n;
    size_t *rows = xmalloc(sizeof(size_t) * (total + 1));
    for (size_t start = 0; start < total;) {
        int32_t n = 0;
        for (; start < total && n < CLAIM_MULTI_MAX; start++)
            if (m->st[start].claim[0])
                rows[n++] = start;
        if (n == 0)
            break;
        zoo_op_t *ops = xcalloc((size_t)n, sizeof(*ops));
        zoo_op_result_t *res = xcalloc((size_t)n, sizeof(*res));
        char **paths = xcalloc((size_t)n, sizeof(char *));
        for (int32_t i = 0; i < n; i++) {
            const char *dir = baton_res_claims(&m->res, rows[i]);
            paths[i] = baton_layout_child(dir, m->st[rows[i]].claim);
            zoo_delete_op_init(&ops[i], paths[i], -1);
        }
        int rc = n > 1 ? baton_zk_multi(m->zk, n, ops, res) : ZAPIERROR;
        for (int32_t i = 0; i < n; i++) {
            mpart_t *mp = &m->st[rows[i]];
            if (rc == ZOK) {
                BLOG_INFO("event=released %s epoch=%lld", row_label(m, rows[i]),
                          (long long)mp->czxid);
                mp->claim[0] = 0;
                mp->czxid = 0;
                st_phase(m, rows[i], MPHASE_NONE, "left");
            } else {
                delete_claim(m, rows[i], "left");
            }
            free(paths[i]);
        }
        free(paths);
        free(res);
        free(ops);
    }
    free(rows);
}

void baton_membership_leave(baton_membership_t *m) {
    if (!m->zk)
        return;
    /* Say we are leaving before releasing anything, so the coordinator can
     * tell this departure (history reason "leave") from a crash, and
     * reassigns our resources at once (we count as drained). Sent without
     * waiting for the answer: ZooKeeper applies a session's requests in
     * order, so the mark lands before the claim deletes sent after it, and
     * the flush below runs during its round trip (one round trip less
     * before our claims go). */
    char *data = member_body(m, 1);
    zbatch_t *mark = zbatch_new(1);
    mark->pending = 1;
    int mrc = zoo_aset(baton_zk_handle(m->zk), m->member_path, data, (int)strlen(data), -1,
                       zbatch_exists_done, &mark->slots[0]);
    if (mrc != ZOK)
        zbatch_done(&mark->slots[0], mrc);
    free(data); /* serialised into the request by zoo_aset */
    /* Stop using everything (the application flushes in on_released) while
     * the coordinator reacts to the mark, then delete the claims at once:
     * we write nothing more, and our successors, named by the coordinator
     * meanwhile, find the way clear instead of waiting for our next round
     * trip (the graceful handoff's critical path). Nobody else claims a
     * resource before the coordinator assigns it elsewhere. */
    int owned_any = 0;
    for (size_t row = 0; row < m->res.n; row++) {
        mpart_t *mp = &m->st[row];
        if (mstate_owned(mp->state)) {
            cb_released(m, row, BATON_RELEASE_LEAVE);
            st_phase(m, row, MPHASE_CLAIMED, "leaving");
            owned_any = 1;
        }
    }
    if (owned_any)
        BATON_FAILPOINT("worker.before_release");
    claims_delete_all(m);
    /* Answered by now (before the deletes' answers) unless the connection
     * went. */
    int serr = BATON_CONNECTION;
    if (zbatch_wait(mark, baton_zk_session_timeout(m->zk) + 1000)) {
        serr = baton_zk_err(mark->slots[0].rc);
        zbatch_free(mark);
    } /* else its completion frees it */
    if (serr != BATON_OK)
        BLOG_WARN("event=leave_mark_failed member=%s error=%s", m->member_path,
                  baton_err_name(serr));
    /* The member node goes only once the coordinator has acted on the mark,
     * so it records this departure as a leave, not a crash. */
    if (serr == BATON_OK && baton_zk_connected(m->zk))
        leave_wait(m);
    baton_zk_delete(m->zk, m->member_path, -1);
    BLOG_INFO("event=left member=%s", m->member_path);
}

int baton_membership_wait(baton_membership_t *m, int timeout_ms, char *errstr, size_t n) {
    int wait = m->next_ms;
    if (timeout_ms >= 0 && timeout_ms < wait)
        wait = timeout_ms;
    if (!m->evicted) {
        /* Without a session (rejoining) there is no descriptor: just wait. */
        struct pollfd pfd = {.fd = m->zk ? baton_zk_fd(m->zk) : -1, .events = POLLIN};
        poll(&pfd, 1, wait < 0 ? 0 : wait);
    }
    return baton_membership_poll(m, NULL, errstr, n);
}
