/* coordinator.c: election, membership watch and fenced publication of the
 * assignment (see coordinator.h and docs/design.md). Everything runs on the
 * caller's thread; ZooKeeper's completion thread only queues events.
 *
 * One loop in named phases (baton_coord_run) over one timer set
 * (coord_timers.h): among them the rebalance debounce (membership churn
 * within --rebalance-delay-ms coalesces, bounded by --max-rebalance-delay-ms
 * after the first change, or by --initial-max-rebalance-delay-ms while
 * nothing is assigned yet), the leave grace (a vanished worker's partitions
 * stay reserved until its --leave-grace-ms runs out) and the resync safety
 * net. A rebalance is snapshot (snap_read) -> plan (coord_plan, the pure
 * assignment/plan.h) -> publish (coord_publish) -> report (coord_report).
 * coord_t holds one sub-struct per job (election, caches, departures,
 * history, handoff watchdog, timers). */
#include "coordinator.h"

#include "assignment.h"
#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_log.h"
#include "baton_signal.h"
#include "baton_silence.h"
#include "baton_util.h"
#include "baton_zk.h"
#include "baton_zkbatch.h"
#include "coord_racks.h"
#include "baton_metrics.h"
#include "baton_resource.h"
#include "coord_history.h"
#include "coord_standby.h"
#include "coord_timers.h"
#include "plan.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A safety net: even if a watch were lost, the leader re-reads everything
 * this often. Watches do the real work. */
#define RESYNC_INTERVAL_MS 10000
#define RESYNC_DEFER_MS 500
/* A leave mark acted on from its event alone is read 100 ms after. */
#define VERIFY_DELAY_MS 100
/* The longest the loop sleeps while disconnected before looking again. */
#define DISCONNECTED_WAIT_MS 100
#define RETRY_BACKOFF_MS 250
/* Per-partition "event=assign" lines per rebalance; a summary line says how
 * many more moved, so a 100,000-partition reshuffle does not flood the log. */
#define ASSIGN_LOG_MAX 1000
/* A publish's history entries are written this long after it (coalescing
 * bursts): the history read-modify-write (up to 512 KB) must not compete
 * with the claims the new owners are creating right then. */
#define HISTORY_DELAY_MS 250
/* Above this many (standby, owner) watches, standbys wait for the longer
 * quiet period (standby_defer). */
#define STANDBY_DEFER_PAIRS 10000
/* The longest quiet period standbys wait for. */
#define STANDBY_QUIET_MAX_MS 5000
/* The longest an elected coordinator that finds a group forming waits for
 * more joins before its first rebalance, whatever --rebalance-delay-ms
 * says (joins during the wait extend it as any burst's do). */
#define ELECTION_JOIN_WAIT_MS 1000
/* How often a coordinator whose group is not initialised says so again. */
#define GROUP_MISSING_LOG_MS 30000

/* The stuck-handoff watchdog: every resource as last published, one row
 * each (baton_resource.h: partitions, then keys). When it looks next is
 * the loop's T_HANDOFF timer, its sweep's T_SWEEP. */
typedef struct {
    baton_res_table_t res;  /* the rows it knows; res.n == 0: none */
    struct handoff_s *rows; /* per row of res; NULL: none (a fresh term) */
    int32_t cursor;         /* partitions: where the next bounded check starts */
    int32_t sweep;          /* the sweep of settled rows: next one */
} coord_handoffs_t;

/* A worker id that left workers/ while it still had a published assignment:
 * its partitions stay reserved until since_ms + leave grace. */
typedef struct {
    char *id;
    int64_t since_ms;
} vanished_t;

/* The election: our candidate node and whether it leads. */
typedef struct {
    char my_node[512]; /* full path of our c- node; "" when we have none */
    int leader;
    int64_t epoch;          /* czxid of our c- node while leading */
    int suspended;          /* stepped down on silence (loop_silence) until heard again */
    int silent_in_call;     /* coord_wait_hook stopped leading during a call: loop_silence
                             * steps down once it returns; no call until then */
    int64_t missing_log_ms; /* when event=group_missing was last logged; 0: not yet */
    int64_t missing_quiet;  /* group_missing attempts not logged since then */
} coord_election_t;

/* Members' node contents as last read (sorted by id), so a rebalance reads
 * only members that are new or whose data watch fired; dropped with the
 * published cache (pc_drop). Cleared by mc_clear. */
typedef struct {
    struct mcache_s *v;
    size_t n;
} coord_mcache_t;

/* What we last published (or found already published), kept so a
 * rebalance does not re-read every worker's assignment node (a cost
 * growing with the group, not with what moves). Trusted only while
 * /assignment still has the version our publish left (every publish, ours
 * or a rival's, bumps it) and until the next full read: a resync, a
 * reconnection, an error or a change of leadership. Cleared by pc_free. */
typedef struct {
    struct published_s *v;
    size_t n;
    int valid;
    int32_t version; /* /assignment's version that v matches */
    int64_t gen;     /* /assignment's generation when v matches it */
    int full_read;   /* the next rebalance re-reads every assignment node */
} coord_pcache_t;

/* The group's settings as the last full rebalance read them, each read
 * leaving a watch: config, drains, pins, keys, our leadership (the exists
 * watch on our own node) and the member list (the workers/ children
 * watch). Trusted until one of those watches fires (valid or live_valid =
 * 0), a reconnection, the resync, an error or a change of leadership;
 * ZooKeeper delivers the watch event before we can read the change, and
 * the loop handles events before it rebalances. So a leave mark or a crash
 * costs the reads of what changed, not ten round trips. (/assignment's
 * version and generation are kept with the published cache: only
 * coordinators write it, and a publish checks the version anyway.)
 * Cleared by gs_clear. */
typedef struct {
    int valid, live_valid;
    baton_config_t cfg;
    char **drains, **pin_of, **keys, **live;
    size_t ndrains, nkeys, nlive;
    int32_t npins;
} coord_settings_t;

/* Departures: leave marks, vanished members within their grace, and marks
 * to verify. Cleared by leave_clear. */
typedef struct {
    char **leaving; /* ids whose member node said "leaving" (graceful) */
    size_t nleaving;
    vanished_t *gone;
    size_t ngone;
    /* Members whose leave mark was acted on from the data event alone
     * (see event_member): read again once the publish is out, which
     * re-arms their watch and confirms the mark. */
    char **verify;
    size_t nverify;
} coord_leave_t;

/* The history: moves published, not yet in <base>/history (written when
 * T_HISTORY is due). Cleared by hist_flush or coord_step_down. */
typedef struct {
    coord_history_t *pending;
    int64_t published_gen; /* the generation we last published */
} coord_hist_t;

/* One coordinator: its connection, and one sub-struct per job. Zeroed is
 * the initial state of every part (timers: timers_setup). */
typedef struct {
    const baton_coord_conf_t *conf;
    baton_zk_t *zk;
    baton_silence_t *sil; /* the session-silence clock (loop_silence) */
    char *base;
    coord_election_t el;
    coord_mcache_t mc;
    coord_pcache_t pc;
    coord_settings_t gs;
    coord_leave_t lv;
    coord_hist_t hist;
    coord_handoffs_t ho;     /* the stuck-handoff watchdog */
    coord_racks_t *racks;    /* partition leader racks from Kafka; NULL without --brokers */
    int standby_skip_logged; /* event=standby_skipped logged once */
    /* The next rebalance writes every node with a new generation, even if
     * none changed: a member came back as a new incarnation, or a claim
     * not its owner's was revoked. Either can leave a standby holding a
     * promotion that only a newer generation ends (membership.c). */
    int republish;
    /* Standbys wait for a quiet membership (coord_plan): churn_last is the
     * latest membership churn the loop saw (0: none); standby_deferred: this
     * rebalance named none, and the loop asks for one more at
     * standby_quiet_at, when the membership will have been quiet. */
    int64_t churn_last, standby_quiet_at;
    int standby_deferred;
    /* Nothing is assigned to anyone, as last read or published: the group
     * forms, and joins may hold its first rebalance up to
     * initial_max_rebalance_delay_ms (loop_churn). 0 until known. */
    int forming;
    /* term_first: this term's first rebalance has not run yet. join_wait:
     * it found the group forming with members, published nothing, and
     * asks the loop to wait for more joins first (loop_rebalance). */
    int term_first, join_wait;
    /* Every deadline of the loop, one set (coord_timers.h): T_* below. */
    coord_timers_t timers;
} coord_t;

/* The loop's timers. Groups: which ones the loop waits for (always, or
 * only while leading) and which phase acts on them. */
enum {
    T_DEBOUNCE, /* the debounced rebalance after membership churn */
    T_GRACE,    /* the earliest leave-grace expiry */
    T_RESYNC,   /* the safety net's full read */
    T_RACKS,    /* the next partition-leader rack refresh (--brokers) */
    T_HANDOFF,  /* the watchdog's next look at pending handoffs */
    T_SWEEP,    /* the watchdog's sweep of settled resources */
    T_HISTORY,  /* the pending history entries' write */
    T_VERIFY,   /* the re-read of members whose leave mark came by event */
    T_STANDBY,  /* the rebalance that names the standbys a churning one left out */
    T_LEAVE,    /* the rebalance after a leave its standbys cover (--leave-hold-ms) */
    T_COUNT
};
enum {
    G_ALWAYS = 1, /* waited for by any coordinator */
    G_LEADER = 2, /* waited for only while leading */
    G_BEFORE = 4, /* acted on before the rebalance phase */
    G_AFTER = 8,  /* acted on after it */
};

/* One member node as last read; valid = 0 after its watch fired.
 * watched = 0 while no watch is armed on it: a leave mark acted on from
 * its event alone (event_member), until the node is read again. Such an
 * entry says nothing about whether the node was deleted and created again
 * meanwhile (a restart under the same id: the member list then names the
 * same ids), so it is trusted only while the member list is too
 * (mc_untrust_unwatched). */
typedef struct mcache_s {
    char *id;
    int capacity;
    char rack[64];
    int no_partitions;
    int keys_filter;
    char *keys;
    int64_t session; /* the member node's ephemeralOwner: its incarnation */
    int valid;
    int watched;
} mcache_t;

static void mc_clear(coord_t *c) {
    for (size_t i = 0; i < c->mc.n; i++) {
        free(c->mc.v[i].id);
        free(c->mc.v[i].keys);
    }
    free(c->mc.v);
    c->mc.v = NULL;
    c->mc.n = 0;
}

static int mc_cmp(const void *a, const void *b) {
    return strcmp(((const mcache_t *)a)->id, ((const mcache_t *)b)->id);
}

static mcache_t *mc_find(coord_t *c, const char *id) {
    mcache_t key = {.id = (char *)id};
    return c->mc.n ? bsearch(&key, c->mc.v, c->mc.n, sizeof(mcache_t), mc_cmp) : NULL;
}

/* Its data watch fired (a change or a deletion): read it again. */
static void mc_invalidate(coord_t *c, const char *id) {
    mcache_t *m = mc_find(c, id);
    if (m)
        m->valid = 0;
}

/* The member list was read afresh: members whose node has no watch armed
 * are read again (re-arming it), so one that left and came back under
 * its id is seen as the new incarnation it is (its node's session), not
 * as the leaver the cache still describes. */
static void mc_untrust_unwatched(coord_t *c) {
    for (size_t i = 0; i < c->mc.n; i++)
        if (!c->mc.v[i].watched)
            c->mc.v[i].valid = 0;
}

/* One partition as the stuck-handoff watchdog sees it. Leader's memory only:
 * a failover restarts every clock, so a forced revoke can come later than
 * --handoff-timeout-ms, never sooner. */
typedef struct handoff_s {
    char *owner;            /* assigned worker as last published; NULL: unassigned */
    int pending;            /* moved (or we were just elected): watch its claims */
    char claim[64];         /* the lowest claim not held by the owner, being timed */
    int64_t claim_since_ms; /* when we first saw that claim lowest */
    int swept;              /* pending only for the sweep: one read may settle it */
} handoff_t;

static void handoffs_clear(coord_t *c) {
    coord_handoffs_t *ho = &c->ho;
    for (size_t r = 0; ho->rows && r < ho->res.n; r++)
        free(ho->rows[r].owner);
    free(ho->rows);
    baton_res_table_free(&ho->res);
    *ho = (coord_handoffs_t){.rows = NULL};
    coord_timers_disarm(&c->timers, T_HANDOFF);
    coord_timers_disarm(&c->timers, T_SWEEP); /* no sweep while there is nothing to sweep */
}

/* The published assignment as read back from ZooKeeper. */
typedef struct published_s {
    char *id;
    int32_t *partitions;
    size_t npartitions;
    char **keys; /* sorted */
    size_t nkeys;
    baton_standby_t *standby; /* sorted by owner */
    size_t nstandby;
    int64_t generation; /* the generation its node was written with */
    int valid;          /* 0 when its znode was malformed: it is rewritten */
} published_t;

static int coord_candidate_create(coord_t *c) {
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    baton_member_t me = {.pid = getpid(), .capacity = 1};
    snprintf(me.id, sizeof(me.id), "%s", c->conf->id);
    snprintf(me.host, sizeof(me.host), "%s", host);
    char *data = baton_member_encode(&me);
    char *prefix = baton_layout_candidate_create(c->base);
    int err = baton_zk_create(c->zk, prefix, data, strlen(data), ZOO_EPHEMERAL_SEQUENTIAL,
                              c->el.my_node, sizeof(c->el.my_node), NULL);
    if (err == BATON_NOTFOUND) {
        /* Retried every second until someone runs init: said once, then
         * every GROUP_MISSING_LOG_MS with the attempts in between. */
        int64_t now = baton_now_ms();
        char *dir = baton_layout_coordinators(c->base);
        if (!c->el.missing_log_ms || now - c->el.missing_log_ms >= GROUP_MISSING_LOG_MS) {
            BLOG_ERROR("event=group_missing path=%s attempts_since_last=%lld "
                       "msg=\"run batonctl init first\" action=retry",
                       baton_log_v(dir), (long long)c->el.missing_quiet);
            c->el.missing_log_ms = now;
            c->el.missing_quiet = 0;
        } else {
            c->el.missing_quiet++;
            BLOG_DEBUG("event=group_missing_again path=%s attempts_since_last=%lld",
                       baton_log_v(dir), (long long)c->el.missing_quiet);
        }
        free(dir);
    } else if (err == BATON_OK) {
        if (c->el.missing_log_ms)
            BLOG_INFO("event=group_found path=%s attempts_since_last=%lld", baton_log_v(c->base),
                      (long long)c->el.missing_quiet);
        c->el.missing_log_ms = c->el.missing_quiet = 0;
        BLOG_INFO("event=candidate node=%s", baton_log_v(c->el.my_node));
    }
    free(prefix);
    free(data);
    return err;
}

static void published_free(published_t *pub, size_t n);

static void pc_free(coord_t *c) {
    published_free(c->pc.v, c->pc.n);
    c->pc.v = NULL;
    c->pc.n = 0;
    c->pc.valid = 0;
}

static void gs_clear(coord_t *c) {
    baton_zk_strings_free(c->gs.drains, c->gs.ndrains);
    baton_zk_strings_free(c->gs.keys, c->gs.nkeys);
    baton_zk_strings_free(c->gs.live, c->gs.nlive);
    for (int32_t p = 0; c->gs.pin_of && p < c->gs.npins; p++)
        free(c->gs.pin_of[p]);
    free(c->gs.pin_of);
    c->gs.drains = c->gs.keys = c->gs.live = c->gs.pin_of = NULL;
    c->gs.ndrains = c->gs.nkeys = c->gs.nlive = 0;
    c->gs.npins = 0;
    c->gs.valid = c->gs.live_valid = 0;
}

/* Forgets everything cached: the next rebalance reads it all. */
static void pc_drop(coord_t *c) {
    mc_clear(c);
    pc_free(c);
    gs_clear(c);
}

/* A copy of n strings (entries may be NULL), as baton_zk_strings_free frees. */
static char **strings_dup(char *const *v, size_t n) {
    char **out = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        out[i] = v[i] ? xstrdup(v[i]) : NULL;
    return out;
}

/* Drops the pending history entries unwritten. */
static void hist_drop(coord_t *c) {
    coord_history_destroy(c->hist.pending);
    c->hist.pending = NULL;
    coord_timers_disarm(&c->timers, T_HISTORY);
}

/* Writes the pending history entries (now, whatever T_HISTORY says). */
static void hist_flush(coord_t *c) {
    if (c->hist.pending && c->zk && c->el.my_node[0])
        coord_history_flush(c->hist.pending, c->zk, c->base, c->el.my_node);
    hist_drop(c);
}

static void coord_step_down(coord_t *c, const char *why) {
    /* A deposed leader's pending entries are lost (its write would fail
     * the fence anyway); the assignment they describe is published. */
    hist_drop(c);
    pc_drop(c);
    /* zk_silent after coord_wait_hook's step-down: it said so already */
    if (c->el.leader && (!c->el.silent_in_call || strcmp(why, "zk_silent") != 0))
        BLOG_WARN("event=step_down reason=%s epoch=%lld", baton_log_v(why), (long long)c->el.epoch);
    c->el.silent_in_call = 0;
    c->el.leader = 0;
    c->el.epoch = 0;
    handoffs_clear(c);
    /* A leader's rebalance timers: left armed, a due one would make the
     * loop call the election without pause for as long as we follow. The
     * next leader reads everything (and names the standbys) anyway. */
    coord_timers_disarm(&c->timers, T_DEBOUNCE);
    coord_timers_disarm(&c->timers, T_STANDBY);
    coord_timers_disarm(&c->timers, T_LEAVE);
}

/* Evaluates the election; sets c->el.leader. Leaves a watch on the predecessor
 * (standby) or on our own node (leader). */
static int coord_elect(coord_t *c) {
    int err;
    if (!c->el.my_node[0] && (err = coord_candidate_create(c)) != BATON_OK)
        return err;
    char *dir = baton_layout_coordinators(c->base);
    char **names = NULL;
    size_t n = 0;
    err = baton_zk_children(c->zk, dir, 0, &names, &n);
    if (err != BATON_OK)
        goto out;
    const char *mine = strrchr(c->el.my_node, '/') + 1;
    /* Names without a sequence are not candidate nodes: ignored. */
    int found = 0;
    const char *pred = baton_seq_predecessor(names, n, mine, &found, NULL);
    const char *lowest = baton_seq_lowest(names, n);
    if (!found) {
        /* Our node is gone though our session lives (an operator removed it):
         * we are deposed; join again at the back of the queue. */
        coord_step_down(c, "candidate_node_removed");
        BLOG_WARN("event=candidate_lost node=%s", baton_log_v(c->el.my_node));
        c->el.my_node[0] = 0;
        err = BATON_CONFLICT;
        goto out;
    }
    if (lowest && strcmp(lowest, mine) == 0) {
        struct Stat st;
        /* Watch our own node too: its deletion deposes us at once. */
        err = baton_zk_exists(c->zk, c->el.my_node, 1, &st);
        if (err != BATON_OK)
            goto out;
        if (!c->el.leader) {
            c->el.leader = 1;
            c->term_first = 1;
            c->el.epoch = st.czxid;
            BLOG_INFO("event=elected node=%s epoch=%lld", baton_log_v(c->el.my_node),
                      (long long)c->el.epoch);
        }
    } else {
        coord_step_down(c, "not_lowest");
        char *pred_path = baton_layout_child(dir, pred);
        err = baton_zk_exists(c->zk, pred_path, 1, NULL);
        if (err == BATON_NOTFOUND)
            err = BATON_CONFLICT; /* predecessor vanished meanwhile: evaluate again */
        else if (err == BATON_OK)
            BLOG_DEBUG("event=standby watching=%s", baton_log_v(pred_path));
        free(pred_path);
    }
out:
    baton_zk_strings_free(names, n);
    free(dir);
    return err;
}

static int find_id(char **ids, size_t n, const char *id) {
    char **hit = bsearch(&id, ids, n, sizeof(char *), baton_strcmp_p);
    return hit ? (int)(hit - ids) : -1;
}

static void published_free(published_t *pub, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(pub[i].id);
        baton_worker_assignment_t wa = {.partitions = pub[i].partitions,
                                        .npartitions = pub[i].npartitions,
                                        .keys = pub[i].keys,
                                        .nkeys = pub[i].nkeys,
                                        .standby = pub[i].standby,
                                        .nstandby = pub[i].nstandby};
        baton_worker_assignment_release(&wa);
    }
    free(pub);
}

/* Reads assignment/<id> for every child, the reads pipelined. */
static int read_published(coord_t *c, published_t **out, size_t *nout) {
    char *dir = baton_layout_assignment(c->base);
    baton_zkdir_t d;
    int err = baton_zkdir_read(c->zk, dir, &d);
    free(dir);
    if (err != BATON_OK)
        return err;
    size_t n = d.n;
    published_t *pub = xcalloc(n ? n : 1, sizeof(*pub));
    for (size_t i = 0; i < n; i++) {
        const baton_zkread_t *r = &d.reads[i];
        pub[i].id = xstrdup(d.names[i]);
        err = r->err;
        if (err == BATON_NOTFOUND) {
            err = BATON_OK; /* removed meanwhile: treat as empty */
        } else if (err == BATON_OK) {
            baton_worker_assignment_t wa;
            char why[256];
            if (baton_worker_assignment_decode(r->data, r->len, &wa, why, sizeof(why)) ==
                BATON_OK) {
                pub[i].partitions = wa.partitions;
                pub[i].npartitions = wa.npartitions;
                pub[i].keys = wa.keys;
                pub[i].nkeys = wa.nkeys;
                pub[i].standby = wa.standby;
                pub[i].nstandby = wa.nstandby;
                pub[i].generation = wa.generation;
                pub[i].valid = 1;
            } else {
                BLOG_ERROR("event=corrupt_znode path=%s error=\"%s\" action=rewrite",
                           baton_log_v(d.paths[i]), baton_log_q(why));
            }
        }
        if (err != BATON_OK)
            break;
    }
    baton_zkdir_release(&d);
    if (err != BATON_OK) {
        published_free(pub, n);
        return err;
    }
    *out = pub;
    *nout = n;
    return BATON_OK;
}

static int32_t *i32_dup(const int32_t *v, size_t n) {
    int32_t *out = xmalloc(sizeof(int32_t) * (n + 1));
    if (n)
        memcpy(out, v, sizeof(int32_t) * n);
    return out;
}

static baton_standby_t *standby_copy(const baton_standby_t *sb, size_t n) {
    baton_standby_t *out = xcalloc(n + 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] = (baton_standby_t){.owner = xstrdup(sb[i].owner),
                                   .partitions = i32_dup(sb[i].partitions, sb[i].npartitions),
                                   .npartitions = sb[i].npartitions,
                                   .keys = strings_dup(sb[i].keys, sb[i].nkeys),
                                   .nkeys = sb[i].nkeys};
    return out;
}

/* A deep copy of the cache, for a rebalance that trusts it. */
static published_t *pc_copy(const coord_t *c) {
    published_t *pub = xcalloc(c->pc.n ? c->pc.n : 1, sizeof(*pub));
    for (size_t i = 0; i < c->pc.n; i++) {
        const published_t *o = &c->pc.v[i];
        pub[i].id = xstrdup(o->id);
        pub[i].valid = o->valid;
        pub[i].generation = o->generation;
        pub[i].npartitions = o->npartitions;
        pub[i].partitions = i32_dup(o->partitions, o->npartitions);
        pub[i].nkeys = o->nkeys;
        pub[i].keys = strings_dup(o->keys, o->nkeys);
        pub[i].nstandby = o->nstandby;
        pub[i].standby = standby_copy(o->standby, o->nstandby);
    }
    return pub;
}

/* ---- leave grace -------------------------------------------------------- */

static vanished_t *gone_find(coord_t *c, const char *id) {
    for (size_t i = 0; i < c->lv.ngone; i++)
        if (strcmp(c->lv.gone[i].id, id) == 0)
            return &c->lv.gone[i];
    return NULL;
}

static void gone_clear(coord_t *c) {
    for (size_t i = 0; i < c->lv.ngone; i++)
        free(c->lv.gone[i].id);
    free(c->lv.gone);
    c->lv.gone = NULL;
    c->lv.ngone = 0;
    coord_timers_disarm(&c->timers, T_GRACE);
}

/* Keeps only the vanished ids still relevant: published and not live. A
 * returning id is logged; it keeps what it had because its partitions were
 * never reassigned. */
static void gone_prune(coord_t *c, char **live, size_t nlive, const published_t *pub, size_t npub) {
    size_t k = 0;
    for (size_t i = 0; i < c->lv.ngone; i++) {
        vanished_t *g = &c->lv.gone[i];
        int published = 0;
        for (size_t j = 0; j < npub; j++)
            if (strcmp(pub[j].id, g->id) == 0)
                published = 1;
        int back = find_id(live, nlive, g->id) >= 0;
        if (back)
            BLOG_INFO("event=rejoined_within_grace worker=%s absent_ms=%lld", baton_log_v(g->id),
                      (long long)(baton_now_ms() - g->since_ms));
        if (back || !published) {
            free(g->id);
            continue;
        }
        c->lv.gone[k++] = *g;
    }
    c->lv.ngone = k;
}

/* ---- reading the group -------------------------------------------------- */

/* One worker as the assignor sees it: live, or absent within its grace. */
typedef struct {
    const char *id; /* borrowed from the children list or the published list */
    int capacity;
    char rack[64];
    int flags;
    int no_partitions; /* takes keys only (a baton-run, a library member) */
    int keys_filter;   /* takes only the keys in keys */
    char *keys;        /* comma-separated; heap, freed with the array */
    int64_t session;   /* its member node's ephemeralOwner; 0: absent or unknown */
} coord_worker_t;

static int cw_cmp(const void *a, const void *b) {
    return strcmp(((const coord_worker_t *)a)->id, ((const coord_worker_t *)b)->id);
}

static int cw_find(const coord_worker_t *w, size_t n, const char *id) {
    coord_worker_t key = {.id = id};
    const coord_worker_t *hit = bsearch(&key, w, n, sizeof(*w), cw_cmp);
    return hit ? (int)(hit - w) : -1;
}

/* Departure reasons: a worker leaving gracefully marks its member node
 * ("leaving": true) before it releases anything; one whose node vanishes
 * unmarked crashed (or its session expired, or it was evicted). */
static int leaving_has(const coord_t *c, const char *id) {
    for (size_t i = 0; i < c->lv.nleaving; i++)
        if (strcmp(c->lv.leaving[i], id) == 0)
            return 1;
    return 0;
}

static void leaving_note(coord_t *c, const char *id) {
    if (leaving_has(c, id))
        return;
    c->lv.leaving = xrealloc(c->lv.leaving, sizeof(char *) * (c->lv.nleaving + 1));
    c->lv.leaving[c->lv.nleaving++] = xstrdup(id);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Whether every partition and key last published to id has a published
 * standby that is a live member not leaving (as last read: the published
 * cache and the member list, both trusted). Resource by resource: a
 * standby entry naming something id does not own covers nothing. */
static int leave_covered(const coord_t *c, const char *id) {
    if (!c->pc.valid || !c->gs.live_valid)
        return 0;
    const published_t *own = NULL;
    for (size_t i = 0; i < c->pc.n && !own; i++)
        if (strcmp(c->pc.v[i].id, id) == 0)
            own = &c->pc.v[i];
    if (!own || !own->valid || own->npartitions + own->nkeys == 0)
        return 0;
    size_t np = own->npartitions, nk = own->nkeys, left = np + nk;
    int32_t *parts = xcalloc(np + 1, sizeof(int32_t));
    memcpy(parts, own->partitions, np * sizeof(int32_t));
    qsort(parts, np, sizeof(int32_t), cmp_i32);
    char *seen = xcalloc(np + nk + 1, 1); /* partitions, then keys (sorted) */
    for (size_t i = 0; i < c->pc.n && left; i++) {
        const published_t *w = &c->pc.v[i];
        if (w == own || !w->valid || leaving_has(c, w->id) ||
            find_id(c->gs.live, c->gs.nlive, w->id) < 0)
            continue;
        for (size_t k = 0; k < w->nstandby; k++) {
            const baton_standby_t *sb = &w->standby[k];
            if (strcmp(sb->owner, id) != 0)
                continue;
            for (size_t j = 0; j < sb->npartitions + sb->nkeys; j++) {
                size_t at; /* the resource's index in seen */
                if (j < sb->npartitions) {
                    int32_t *hit = bsearch(&sb->partitions[j], parts, np, sizeof(int32_t), cmp_i32);
                    at = hit ? (size_t)(hit - parts) : SIZE_MAX;
                } else {
                    char **hit = bsearch(&sb->keys[j - sb->npartitions], own->keys, nk,
                                         sizeof(char *), baton_strcmp_p);
                    at = hit ? np + (size_t)(hit - own->keys) : SIZE_MAX;
                }
                if (at != SIZE_MAX && !seen[at]) {
                    seen[at] = 1;
                    left--;
                }
            }
        }
    }
    free(parts);
    free(seen);
    return left == 0;
}

/* An unmarked node under that id (a new process reusing the id of one
 * that left) is not leaving: forget the old mark, or it would be drained. */
static void leaving_forget(coord_t *c, const char *id) {
    for (size_t i = 0; i < c->lv.nleaving; i++)
        if (strcmp(c->lv.leaving[i], id) == 0) {
            free(c->lv.leaving[i]);
            c->lv.leaving[i] = c->lv.leaving[--c->lv.nleaving];
            return;
        }
}

/* Forgets marks of workers no longer live (their departure is recorded). */
static void leaving_prune(coord_t *c, const coord_worker_t *w, size_t nw) {
    size_t k = 0;
    for (size_t i = 0; i < c->lv.nleaving; i++) {
        if (cw_find(w, nw, c->lv.leaving[i]) >= 0)
            c->lv.leaving[k++] = c->lv.leaving[i];
        else
            free(c->lv.leaving[i]);
    }
    c->lv.nleaving = k;
}

static void verify_clear(coord_t *c) {
    for (size_t i = 0; i < c->lv.nverify; i++)
        free(c->lv.verify[i]);
    free(c->lv.verify);
    c->lv.verify = NULL;
    c->lv.nverify = 0;
    coord_timers_disarm(&c->timers, T_VERIFY);
}

/* Forgets every departure: marks, vanished members, marks to verify. */
static void leave_clear(coord_t *c) {
    gone_clear(c);
    verify_clear(c);
    for (size_t i = 0; i < c->lv.nleaving; i++)
        free(c->lv.leaving[i]);
    free(c->lv.leaving);
    c->lv.leaving = NULL;
    c->lv.nleaving = 0;
}

/* A member node's read (err, data, stat) into out: its capacity and rack;
 * a malformed one counts with capacity 1 and no rack. */
static void member_apply(coord_t *c, const char *path, const char *id, int err, const char *data,
                         size_t len, const struct Stat *st, coord_worker_t *out) {
    out->capacity = 1;
    out->rack[0] = 0;
    if (err == BATON_OK) {
        out->session = st->ephemeralOwner;
        baton_member_t m;
        char why[256];
        if (baton_member_decode(data, len, &m, why, sizeof(why)) == BATON_OK) {
            out->capacity = m.capacity > 0 ? m.capacity : 1;
            snprintf(out->rack, sizeof(out->rack), "%s", m.rack);
            out->no_partitions = m.no_partitions;
            out->keys_filter = m.keys_filter;
            free(out->keys);
            out->keys = m.keys_filter ? xstrdup(m.keys) : NULL;
            if (m.leaving)
                leaving_note(c, id);
            else
                leaving_forget(c, id);
        } else {
            BLOG_ERROR("event=corrupt_znode path=%s error=\"%s\" action=capacity_1",
                       baton_log_v(path), baton_log_q(why));
        }
    }
}

/* Reads a member (member_apply). A member that left meanwhile is
 * BATON_NOTFOUND. */
static int read_member(coord_t *c, const char *wdir, const char *id, coord_worker_t *out) {
    char *path = baton_layout_child(wdir, id);
    char *data = NULL;
    size_t len = 0;
    /* A data watch: a graceful leave marks the node before releasing. */
    struct Stat st;
    int err = baton_zk_get(c->zk, path, 1, &data, &len, &st);
    member_apply(c, path, id, err, data, len, &st, out);
    free(data);
    free(path);
    return err;
}

/* Refreshes a cached member from a read that re-armed its data watch. */
static void mc_update(coord_t *c, const char *id, const coord_worker_t *w) {
    mcache_t *m = mc_find(c, id);
    if (!m)
        return; /* new to us: the rebalance reads it */
    m->capacity = w->capacity;
    snprintf(m->rack, sizeof(m->rack), "%s", w->rack);
    m->no_partitions = w->no_partitions;
    m->keys_filter = w->keys_filter;
    free(m->keys);
    m->keys = w->keys ? xstrdup(w->keys) : NULL;
    if (w->session && m->session && w->session != m->session) {
        /* Deleted and created again since the event: a new incarnation,
         * which the rebalance reads and notices (event=member_incarnation). */
        m->valid = 0;
        return;
    }
    m->session = w->session ? w->session : m->session;
    m->valid = m->watched = 1;
}

/* Reads the members in c->lv.verify again (re-arming their data watches).
 * Returns 1 if one of them turns out not to be leaving after all (its
 * data changed for another reason): the caller rebalances again. */
static int verify_flush(coord_t *c, const char *wdir) {
    int again = 0;
    BATON_FAILPOINT("coordinator.before_verify");
    for (size_t i = 0; i < c->lv.nverify; i++) {
        const char *id = c->lv.verify[i];
        coord_worker_t tmp = {0};
        int err = read_member(c, wdir, id, &tmp);
        BLOG_DEBUG("event=leave_verified worker=%s node=%s", baton_log_v(id),
                   baton_log_v(err == BATON_OK         ? "present"
                               : err == BATON_NOTFOUND ? "gone"
                                                       : baton_err_name(err)));
        if (err == BATON_OK) {
            mc_update(c, id, &tmp);
            if (!leaving_has(c, id)) {
                BLOG_WARN("event=leave_mark_unconfirmed worker=%s action=rebalance",
                          baton_log_v(id));
                again = 1;
            }
        } else if (err != BATON_NOTFOUND) {
            mc_invalidate(c, id); /* the next rebalance reads it, re-arming the watch */
        }
        free(tmp.keys);
    }
    verify_clear(c);
    return again;
}

/* Lists the directory dir_of(base) names (baton_layout_pins or _drains) with
 * a children watch. A missing directory (a group made before pins and drains
 * existed) is empty; an exists watch then tells us when batonctl creates it. */
static int read_dir_watched(coord_t *c, char *(*dir_of)(const char *), char ***names, size_t *n) {
    char *dir = dir_of(c->base);
    *names = NULL;
    *n = 0;
    int err = baton_zk_children(c->zk, dir, 1, names, n);
    if (err == BATON_NOTFOUND) {
        err = baton_zk_exists(c->zk, dir, 1, NULL);
        if (err == BATON_NOTFOUND)
            err = BATON_OK;
        else if (err == BATON_OK)
            err = BATON_CONFLICT; /* created meanwhile: read again */
    }
    free(dir);
    return err;
}

/* Reads pins into pin_of[p] (heap ids; NULL: not pinned), watching each pin
 * so a re-pin (a set) is seen at once. Malformed pins are logged and
 * ignored. */
static int read_pins(coord_t *c, int32_t P, char **pin_of) {
    char **names = NULL;
    size_t n = 0;
    int err = read_dir_watched(c, baton_layout_pins, &names, &n);
    char *dir = baton_layout_pins(c->base);
    for (size_t i = 0; err == BATON_OK && i < n; i++) {
        char *path = baton_layout_child(dir, names[i]);
        int64_t p;
        char *data = NULL;
        size_t len = 0;
        if (baton_parse_i64(names[i], 0, BATON_PARTITIONS_MAX - 1, &p) != 0 || p >= P) {
            BLOG_WARN("event=bad_pin path=%s error=\"not a partition of this group (0..%d)\" "
                      "action=ignore",
                      baton_log_v(path), P - 1);
        } else if ((err = baton_zk_get(c->zk, path, 1, &data, &len, NULL)) == BATON_OK) {
            baton_pin_t pin;
            char why[256];
            if (baton_pin_decode(data, len, &pin, why, sizeof(why)) == BATON_OK) {
                free(pin_of[p]);
                pin_of[p] = xstrdup(pin.worker);
            } else {
                BLOG_WARN("event=bad_pin path=%s error=\"%s\" action=ignore", baton_log_v(path),
                          baton_log_q(why));
            }
        } else if (err == BATON_NOTFOUND) {
            err = BATON_OK; /* unpinned meanwhile */
        }
        free(data);
        free(path);
    }
    baton_zk_strings_free(names, n);
    free(dir);
    return err;
}

/* ---- publishing --------------------------------------------------------- */

enum { NODE_SET, NODE_CREATE, NODE_DELETE };

/* One per-worker node write of a publish. */
typedef struct {
    int kind;
    char *path;
    char *payload; /* NULL for a delete */
    long delta;    /* new minus old partition count: losers are written first */
    size_t bytes;  /* what it adds to a multi request, roughly */
} node_op_t;

static int node_op_cmp(const void *a, const void *b) {
    const node_op_t *x = a, *y = b;
    if (x->delta != y->delta)
        return x->delta < y->delta ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* Writes the node ops in as few multis as fit under conf->max_multi_bytes.
 * Every multi starts with a check on our own candidate node and a version
 * check on /assignment; the last one also sets /assignment (bumping its
 * version and generation). So a chunk of a leader whose candidate node is
 * gone fails whole. Only a last chunk moves /assignment's version, so only
 * a last chunk fences a rival that read the same version: once ours has
 * landed every chunk of the rival fails (and once the rival's has, every
 * chunk of ours). Earlier chunks only check the version and fence nobody:
 * until one side's last chunk lands, the two sides' earlier chunks can
 * interleave, and the winner's nodes may hold some of the loser's writes.
 * The winner trusts what it wrote (pc) until its next full read (the
 * periodic resync) rewrites them; meanwhile the claim queues and the sink's
 * fence keep one writer per partition, as for any stale assignment.
 *
 * Between chunks a worker may see its own node at generation G+1 while
 * /assignment still says G, and a partition listed by both its old and its
 * new owner: the chunks write the workers that lose partitions first, the
 * new owner's claim queues behind the old one's, and the sink fences any
 * overlap. If we die between chunks the next leader starts from the mix,
 * which is just another previous assignment.
 *
 * Returns BATON_OK, BATON_DEPOSED, or a ZooKeeper error (retriable). */
static int publish_chunks(coord_t *c, const char *adir, int version, const char *meta_new,
                          node_op_t *nodes, size_t n, int64_t gen, size_t *nmulti_out) {
    size_t budget = (size_t)c->conf->max_multi_bytes;
    size_t fixed = 256 + strlen(c->el.my_node) + strlen(adir) + strlen(meta_new);
    zoo_op_t *ops = xcalloc(n + 2, sizeof(zoo_op_t));
    zoo_op_result_t *results = xcalloc(n + 2, sizeof(zoo_op_result_t));
    size_t i = 0, nmulti = 0;
    int err = BATON_OK;
    BATON_FAILPOINT("coordinator.before_publish");
    while (i < n) {
        if (c->el.silent_in_call) { /* stopped leading in a call before this one */
            err = BATON_CONNECTION;
            break;
        }
        size_t j = i, bytes = fixed;
        while (j < n && (j == i || bytes + nodes[j].bytes <= budget))
            bytes += nodes[j++].bytes;
        if (nodes[i].bytes > budget)
            BLOG_WARN("event=znode_too_large path=%s bytes=%zu max_multi_bytes=%zu",
                      baton_log_v(nodes[i].path), nodes[i].bytes, budget);
        int last = j == n;
        size_t nops = 0;
        zoo_check_op_init(&ops[nops++], c->el.my_node, -1);
        if (last)
            zoo_set_op_init(&ops[nops++], adir, meta_new, (int)strlen(meta_new), version, NULL);
        else
            zoo_check_op_init(&ops[nops++], adir, version);
        for (size_t k = i; k < j; k++) {
            node_op_t *o = &nodes[k];
            zoo_op_t *op = &ops[nops++];
            if (o->kind == NODE_SET)
                zoo_set_op_init(op, o->path, o->payload, (int)strlen(o->payload), -1, NULL);
            else if (o->kind == NODE_CREATE)
                zoo_create_op_init(op, o->path, o->payload, (int)strlen(o->payload),
                                   baton_zk_acl(c->zk), 0, NULL, 0);
            else
                zoo_delete_op_init(op, o->path, -1);
        }
        int rc = baton_zk_multi(c->zk, (int)nops, ops, results);
        if (rc != ZOK) {
            if (results[0].err == ZNONODE || results[1].err == ZBADVERSION ||
                results[1].err == ZNONODE) {
                /* The fence held: either our candidate node is gone or someone
                 * else published since we read. Either way we are not the
                 * leader we thought we were; this chunk wrote nothing. */
                BLOG_WARN("event=deposed reason=%s epoch=%lld generation=%lld chunk=%zu",
                          results[0].err == ZNONODE ? "candidate_node_gone" : "assignment_changed",
                          (long long)c->el.epoch, (long long)gen, nmulti);
                err = BATON_DEPOSED;
            } else {
                err = baton_zk_err(rc);
                BLOG_WARN("event=publish_failed error=%s zerror=\"%s\" chunk=%zu",
                          baton_err_name(err), baton_log_q(zerror(rc)), nmulti);
            }
            break;
        }
        nmulti++;
        i = j;
        if (!last)
            BATON_FAILPOINT("coordinator.between_chunks");
    }
    free(ops);
    free(results);
    *nmulti_out = nmulti;
    return err;
}

static const char *move_reason(const coord_t *c, const char *from, int prev_named, int prev_idx,
                               const coord_worker_t *w, int pinned) {
    if (!prev_named)
        return "new";
    if (leaving_has(c, from))
        return "leave"; /* drained too, but by its own leave */
    if (prev_idx < 0)
        return "crash";
    if (w[prev_idx].flags & BATON_ASSIGN_DRAINED)
        return "drain";
    if (pinned)
        return "pin";
    return "rebalance";
}

/* ---- stuck handoffs ----------------------------------------------------- */

/* How often pending handoffs are looked at, and how many per look (each
 * costs up to three reads), so a huge reshuffle never stalls the loop. */
static int64_t handoff_check_ms(const coord_t *c) {
    int64_t t = c->conf->handoff_timeout_ms / 4;
    return t < 100 ? 100 : t > 1000 ? 1000 : t;
}
#define HANDOFF_CHECK_MAX 512
/* ... and for at most this long per look: each read is synchronous, and a
 * look at 512 rows (up to 1,536 reads) kept the loop from membership churn
 * for seconds at a time when a 100,000-partition cold start left tens of
 * thousands pending (the next look then follows after as long again). */
#define HANDOFF_CHECK_BUDGET_MS 50
/* The watchdog also looks again, a few at a time, at resources it thinks
 * settled: "assigned to A, held by B" must end however it arose (a stale
 * standby promotion, a lost event), not only after a move. */
#define HANDOFF_SWEEP_MS 2000
#define HANDOFF_SWEEP_MAX 16 /* about one read each (the lowest claim names its session) */

/* Remembers the owner of every resource just published (or confirmed
 * unchanged): rows [0, P) are the partitions, then keys[0..nkeys) (sorted),
 * next[] the plan's owner of each row. A row whose owner changed, every
 * row right after an election, and a key new to the watchdog become
 * pending: their claims are watched until the lowest one belongs to the
 * owner's current session. */
static void handoffs_record(coord_t *c, int32_t P, char *const *keys, size_t nkeys, const int *next,
                            const coord_worker_t *w) {
    if (c->conf->handoff_timeout_ms <= 0)
        return;
    coord_handoffs_t *ho = &c->ho;
    int fresh = ho->rows == NULL, any = 0;
    baton_res_table_t res;
    baton_res_table_init(&res, c->base, P);
    for (size_t k = 0; k < nkeys; k++)
        baton_res_table_add_key(&res, keys[k]); /* row P + k: keys are sorted */
    handoff_t *rows = xcalloc(res.n + 1, sizeof(handoff_t));
    for (size_t r = 0; r < res.n; r++) {
        const baton_resource_t *rr = baton_res_at(&res, r);
        /* The row's old state: a partition by number (one past the old
         * count starts settled and unowned), a key by name. */
        long old = -1;
        int known = !fresh;
        if (!baton_res_is_key(&res, r))
            old = !fresh && r < (size_t)ho->res.npartitions ? (long)r : -1;
        else if (!fresh)
            known = (old = baton_res_table_find(&ho->res, rr)) >= 0;
        handoff_t *h = &rows[r];
        if (old >= 0) {
            *h = ho->rows[old]; /* carried over: the old array gives up its owner */
            ho->rows[old].owner = NULL;
        }
        const char *id = next[r] >= 0 ? w[next[r]].id : NULL;
        if (!known || (id == NULL) != (h->owner == NULL) || (id && strcmp(id, h->owner) != 0)) {
            free(h->owner);
            h->owner = id ? xstrdup(id) : NULL;
            h->pending = 1;
            h->swept = 0;
            h->claim[0] = 0;
        }
        any |= h->pending;
    }
    for (size_t r = 0; ho->rows && r < ho->res.n; r++)
        free(ho->rows[r].owner);
    free(ho->rows);
    baton_res_table_free(&ho->res);
    ho->res = res;
    ho->rows = rows;
    if (!res.n)
        coord_timers_disarm(&c->timers, T_SWEEP); /* nothing to sweep */
    if (any)
        coord_timers_arm_once(&c->timers, T_HANDOFF, baton_now_ms() + handoff_check_ms(c));
}

/* Makes every resource last published to id pending again (its member
 * came back as a new incarnation: the old one's claims, or a standby's,
 * may be what blocks it). */
static void handoffs_mark_owner(coord_t *c, const char *id) {
    coord_handoffs_t *ho = &c->ho;
    int any = 0;
    for (size_t r = 0; ho->rows && r < ho->res.n; r++)
        if (ho->rows[r].owner && strcmp(ho->rows[r].owner, id) == 0) {
            any = ho->rows[r].pending = 1;
            ho->rows[r].swept = 0;
        }
    if (any)
        coord_timers_arm_once(&c->timers, T_HANDOFF, baton_now_ms() + handoff_check_ms(c));
}

/* One pending row: finds its lowest claim and, if it is not held by the
 * owner's current session for longer than --handoff-timeout-ms, deletes it.
 * Safe: the sink fences whatever its holder still writes, and the holder
 * learns of the deletion from the watch on its own claim. */
static int handoff_check_one(coord_t *c, size_t row, int64_t now) {
    handoff_t *h = &c->ho.rows[row];
    const baton_resource_t *res = baton_res_at(&c->ho.res, row);
    const char *dir = baton_res_claims(&c->ho.res, row);
    char what[BATON_RES_LABEL_SIZE]; /* the log's resource field */
    baton_res_label(res, what, sizeof(what));
    char **names = NULL;
    size_t n = 0;
    char *path = NULL, *data = NULL, *mpath = NULL;
    if (c->el.silent_in_call) /* stopped leading in a call: no more calls */
        return BATON_CONNECTION;
    int err = baton_zk_children(c->zk, dir, 0, &names, &n);
    if (err == BATON_NOTFOUND) {
        BLOG_ERROR("event=group_corrupt path=%s error=\"missing\" action=skip_handoff_check",
                   baton_log_v(dir));
        h->pending = 0;
        err = BATON_OK;
        goto out;
    }
    if (err != BATON_OK)
        goto out;
    const char *lowest = baton_claim_lowest(names, n);
    /* A sweep's look settles with this one read when the owner's current
     * session (its node unchanged since we read it) holds the lowest claim;
     * after a move or an election every claim is read (and a corrupt one
     * reported). */
    const mcache_t *om = h->owner && h->swept ? mc_find(c, h->owner) : NULL;
    if (!lowest || !h->owner ||
        (om && om->valid && om->session && baton_claim_of_session(lowest, om->session))) {
        /* Nothing blocks the owner (it will claim), nobody to hand to, or
         * handed over. */
        h->pending = h->swept = 0;
        h->claim[0] = 0;
        goto out;
    }
    path = baton_layout_child(dir, lowest);
    struct Stat st, mst;
    size_t len = 0;
    if ((err = baton_zk_get(c->zk, path, 0, &data, &len, &st)) != BATON_OK) {
        if (err == BATON_NOTFOUND)
            err = BATON_OK; /* released meanwhile: look again next time */
        goto out;
    }
    baton_claim_t claim;
    char why[256];
    if (baton_claim_decode(data, len, &claim, why, sizeof(why)) != BATON_OK) {
        BLOG_ERROR("event=corrupt_znode path=%s error=\"%s\" action=treat_as_foreign",
                   baton_log_v(path), baton_log_q(why));
        snprintf(claim.worker, sizeof(claim.worker), "?");
    }
    mpath = baton_layout_worker(c->base, h->owner);
    err = baton_zk_exists(c->zk, mpath, 0, &mst);
    if (err == BATON_NOTFOUND) {
        /* The owner is not live (a restart, or within its leave grace):
         * nobody is waiting on this claim yet. */
        h->claim[0] = 0;
        err = BATON_OK;
        goto out;
    }
    if (err != BATON_OK)
        goto out;
    if (st.ephemeralOwner == mst.ephemeralOwner) {
        h->pending = 0; /* handed over */
        h->claim[0] = 0;
        goto out;
    }
    if (strcmp(h->claim, lowest) != 0) {
        snprintf(h->claim, sizeof(h->claim), "%s", lowest);
        h->claim_since_ms = now;
        BLOG_DEBUG("event=handoff_waiting %s owner=%s held_by=%s claim=%s", what,
                   baton_log_v(h->owner), baton_log_v(claim.worker), baton_log_v(lowest));
        goto out;
    }
    if (now - h->claim_since_ms < c->conf->handoff_timeout_ms)
        goto out;
    err = baton_zk_delete(c->zk, path, st.version);
    if (err == BATON_OK || err == BATON_NOTFOUND || err == BATON_CONFLICT) {
        if (err == BATON_OK) {
            BLOG_WARN("event=forced_revoke %s worker=%s claim=%s session=0x%llx "
                      "owner=%s held_ms=%lld reason=handoff_timeout",
                      what, baton_log_v(claim.worker), baton_log_v(lowest),
                      (unsigned long long)st.ephemeralOwner, baton_log_v(h->owner),
                      (long long)(now - h->claim_since_ms));
            /* The history says who lost the partition by force; a failure
             * to record it loses only the entry. */
            coord_history_t *fh = coord_history_new();
            coord_history_add(fh, res->kind == BATON_RESOURCE_KEY ? -1 : res->partition, res->key,
                              claim.worker, h->owner, c->hist.published_gen, "forced");
            coord_history_flush(fh, c->zk, c->base, c->el.my_node);
            coord_history_destroy(fh);
            /* Held by another worker than the owner: a standby's promotion,
             * say, which only a newer generation ends (else it claims
             * again, behind the owner, and blocks the next move). */
            if (strcmp(claim.worker, h->owner) != 0)
                c->republish = 1;
        }
        h->claim[0] = 0; /* stay pending until the owner's claim is lowest */
        err = BATON_OK;
    }
out:
    free(mpath);
    free(data);
    free(path);
    baton_zk_strings_free(names, n);
    return err;
}

/* Makes the next HANDOFF_SWEEP_MAX settled resources pending: checked like
 * a move, they are settled again at once if their owner's claim is lowest. */
static void handoffs_sweep(coord_t *c) {
    coord_handoffs_t *ho = &c->ho;
    int32_t total = (int32_t)ho->res.n;
    for (int32_t i = 0, marked = 0; i < total && marked < HANDOFF_SWEEP_MAX; i++) {
        int32_t j = ho->sweep++ % total;
        if (ho->sweep >= total)
            ho->sweep = 0;
        handoff_t *h = &ho->rows[j];
        if (!h->pending && h->owner) {
            h->pending = h->swept = 1;
            h->claim[0] = 0;
            marked++;
        }
    }
}

/* Looks at up to HANDOFF_CHECK_MAX pending partitions (from a cursor) and
 * as many pending keys (all, each time) when due. Runs on the leader only
 * (the state is cleared when it steps down). */
static void handoffs_check(coord_t *c) {
    coord_handoffs_t *ho = &c->ho;
    int64_t now = baton_now_ms();
    coord_timers_t *ts = &c->timers;
    if (c->conf->handoff_timeout_ms > 0 && ho->res.n &&
        now >= coord_timers_due_ms(ts, T_SWEEP)) { /* disarmed: sweep now */
        handoffs_sweep(c);
        coord_timers_arm(ts, T_SWEEP, now + HANDOFF_SWEEP_MS);
        coord_timers_arm_once(ts, T_HANDOFF, now);
    }
    if (!ho->res.n || !coord_timers_is_due(ts, T_HANDOFF, now))
        return;
    int checked = 0, any = 0, spent = 0;
    int32_t np = ho->res.npartitions;
    int32_t p = np ? ho->cursor % np : 0;
    for (int32_t i = 0; i < np; i++, p = (p + 1) % np) {
        handoff_t *h = &ho->rows[p];
        if (!h->pending)
            continue;
        if (checked == HANDOFF_CHECK_MAX ||
            (spent = baton_now_ms() - now >= HANDOFF_CHECK_BUDGET_MS)) {
            any = 1;
            break;
        }
        checked++;
        if (handoff_check_one(c, (size_t)p, now) != BATON_OK) {
            any = 1; /* connection trouble: try again at the next tick */
            break;
        }
        any |= h->pending;
    }
    ho->cursor = p;
    for (int32_t q = 0; !any && q < np; q++)
        any = ho->rows[q].pending;
    /* Keys: few, all pending ones each time (bounded like partitions). */
    for (size_t r = (size_t)np, kchecked = 0; r < ho->res.n; r++) {
        handoff_t *h = &ho->rows[r];
        if (!h->pending)
            continue;
        if (kchecked++ == HANDOFF_CHECK_MAX || spent ||
            (spent = baton_now_ms() - now >= HANDOFF_CHECK_BUDGET_MS) ||
            handoff_check_one(c, r, now) != BATON_OK) {
            any = 1;
            break;
        }
        any |= h->pending;
    }
    /* Out of time: the rest after one budget's pause (the loop serves
     * events and rebalances meanwhile), not after a whole interval. */
    coord_timers_arm(ts, T_HANDOFF,
                     !any    ? 0
                     : spent ? baton_now_ms() + HANDOFF_CHECK_BUDGET_MS
                             : now + handoff_check_ms(c));
}

/* Whether any of the n published nodes v assigns a partition or a key. */
static int pub_assigns(const published_t *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (v[i].npartitions > 0 || v[i].nkeys > 0)
            return 1;
    return 0;
}

/* Remembers the assignment now published: the plan's node of every
 * member (its partitions, keys and standbys). */
static void pc_store(coord_t *c, const coord_worker_t *w, size_t nw,
                     const baton_plan_snapshot_t *snap, const baton_plan_t *pl, int32_t version,
                     int64_t gen, int64_t node_gen) {
    pc_free(c);
    c->pc.v = xcalloc(nw + 1, sizeof(published_t));
    for (size_t k = 0; k < nw; k++) {
        published_t *o = &c->pc.v[k];
        baton_worker_assignment_t wa;
        baton_plan_node(snap, pl, k, &wa);
        o->id = xstrdup(w[k].id);
        o->valid = 1;
        o->npartitions = wa.npartitions;
        o->partitions = wa.partitions; /* taken */
        o->nkeys = wa.nkeys;
        o->keys = strings_dup(wa.keys, wa.nkeys);
        free(wa.keys);
        o->standby = standby_copy(wa.standby, wa.nstandby);
        o->nstandby = wa.nstandby;
        o->generation = node_gen; /* at most: an unchanged node kept an older one */
    }
    c->pc.n = nw;
    c->pc.version = version;
    c->pc.gen = gen;
    c->pc.valid = 1;
    c->forming = !pub_assigns(c->pc.v, nw);
}

/* ---- the rebalance: read a snapshot, plan, publish, report -------------- */

/* One rebalance's view of the group, as read (or taken from the caches).
 * Owns everything it points to; released by snap_release. */
typedef struct {
    int64_t t_read; /* when reading began */
    int cached;     /* the settings as last read are still current (gs.valid) */
    int full;       /* members are read afresh, not taken from the cache */
    baton_config_t cfg;
    baton_strategy_t strategy;
    int32_t P;
    char *wdir, *adir;
    char **raw; /* workers/ children as listed */
    size_t nraw;
    char **live; /* the valid ids among them (borrowed from raw), sorted */
    size_t nlive;
    char *meta_data; /* /assignment as read; NULL when cached */
    struct Stat meta_st;
    baton_assignment_meta_t meta;
    published_t *pub; /* the assignment/<id> nodes */
    size_t npub;
    char **drains;
    size_t ndrains;
    char **pin_of; /* [P]: the worker each partition is pinned to, or NULL */
    char **keys;   /* the group's named keys, sorted */
    size_t nkeys;
    coord_worker_t *w; /* the members: live, then absent ones; sorted by id */
    size_t nw;
} coord_snap_t;

static void snap_release(coord_snap_t *rs) {
    free(rs->meta_data);
    for (size_t i = 0; rs->pin_of && i < (size_t)rs->P; i++)
        free(rs->pin_of[i]);
    free(rs->pin_of);
    for (size_t i = 0; rs->w && i < rs->nw; i++)
        free(rs->w[i].keys);
    free(rs->w);
    baton_zk_strings_free(rs->keys, rs->nkeys);
    published_free(rs->pub, rs->npub);
    baton_zk_strings_free(rs->drains, rs->ndrains);
    free(rs->live);
    baton_zk_strings_free(rs->raw, rs->nraw);
    free(rs->wdir);
    free(rs->adir);
}

/* The group's config (cached, or read with a watch) and its strategy. */
static int snap_read_config(coord_t *c, coord_snap_t *rs) {
    char errstr[256];
    int err;
    if (rs->cached) {
        rs->cfg = c->gs.cfg;
    } else if ((err = baton_group_config_read(c->zk, c->base, 1, &rs->cfg, errstr,
                                              sizeof(errstr))) != BATON_OK) {
        BLOG_ERROR("event=config_error error=\"%s\"", baton_log_q(errstr));
        return err;
    } else if (!rs->cfg.group_uuid[0]) {
        /* A group from before group ids gets one from its first leader (a
         * versioned set; its config watch then reads it back). Workers
         * need it before their first fence (sink_bind.h) and would
         * assign it themselves; a failure here is only logged. */
        baton_config_t with_id;
        if (baton_group_uuid_ensure(c->zk, c->base, &with_id, NULL, errstr, sizeof(errstr)) !=
            BATON_OK)
            BLOG_WARN("event=group_uuid_failed error=\"%s\"", baton_log_q(errstr));
    }
    if (baton_strategy_parse(rs->cfg.strategy, &rs->strategy) != BATON_OK) {
        BLOG_ERROR("event=config_error error=\"unknown strategy '%s'\"",
                   baton_log_q(rs->cfg.strategy));
        return BATON_CORRUPT;
    }
    rs->P = rs->cfg.partitions;
    baton_metric_set(baton_metric_gauge(BATON_M_C_PARTITIONS), rs->P);
    return BATON_OK;
}

/* The member list (workers/ children, with a watch), /assignment and the
 * published nodes, each from its cache while that is still current. */
static int snap_read_published(coord_t *c, coord_snap_t *rs) {
    int err;
    if (rs->cached && c->gs.live_valid) {
        rs->raw = strings_dup(c->gs.live, c->gs.nlive);
        rs->nraw = c->gs.nlive;
    } else if ((err = baton_zk_children(c->zk, rs->wdir, 1, &rs->raw, &rs->nraw)) != BATON_OK) {
        return err;
    } else {
        mc_untrust_unwatched(c);
    }
    /* children come sorted, so live is sorted */
    rs->live = xcalloc(rs->nraw ? rs->nraw : 1, sizeof(char *));
    for (size_t i = 0; i < rs->nraw; i++) {
        if (baton_id_valid(rs->raw[i]) != 0) {
            BLOG_ERROR("event=bad_member path=\"%s/%s\" action=ignore", baton_log_q(rs->wdir),
                       baton_log_q(rs->raw[i]));
            continue;
        }
        rs->live[rs->nlive++] = rs->raw[i];
    }
    size_t meta_len = 0;
    if (rs->cached && c->pc.valid) {
        /* What we published last is what is there: only coordinators write
         * /assignment, and if a rival did, our publish's version check
         * fails and we step down. */
        rs->meta.generation = c->pc.gen;
        rs->meta_st.version = c->pc.version;
    } else if ((err = baton_zk_get(c->zk, rs->adir, 0, &rs->meta_data, &meta_len, &rs->meta_st)) !=
               BATON_OK) {
        return err;
    }
    if (meta_len > 0) {
        char why[256];
        if (baton_assignment_meta_decode(rs->meta_data, meta_len, &rs->meta, why, sizeof(why)) !=
            0) {
            BLOG_ERROR("event=corrupt_znode path=%s error=\"%s\" action=rewrite",
                       baton_log_v(rs->adir), baton_log_q(why));
            rs->meta.generation = 0;
        }
    }
    rs->full = c->pc.full_read || !c->pc.valid;
    if (c->pc.valid && !c->pc.full_read && rs->meta_st.version == c->pc.version) {
        rs->pub = pc_copy(c);
        rs->npub = c->pc.n;
        return BATON_OK;
    }
    if ((err = read_published(c, &rs->pub, &rs->npub)) != BATON_OK)
        return err;
    c->pc.full_read = 0;
    return BATON_OK;
}

/* Drains, pins and keys (cached, or read with their watches and cached),
 * and the member list into its cache. */
static int snap_read_settings(coord_t *c, coord_snap_t *rs) {
    int err;
    int32_t P = rs->P;
    if (rs->cached) {
        rs->drains = strings_dup(c->gs.drains, c->gs.ndrains);
        rs->ndrains = c->gs.ndrains;
        rs->pin_of = strings_dup(c->gs.pin_of, (size_t)P);
        rs->keys = strings_dup(c->gs.keys, c->gs.nkeys);
        rs->nkeys = c->gs.nkeys;
    } else {
        char errstr[256];
        if ((err = read_dir_watched(c, baton_layout_drains, &rs->drains, &rs->ndrains)) != BATON_OK)
            return err;
        rs->pin_of = xcalloc((size_t)P + 1, sizeof(char *));
        if ((err = read_pins(c, P, rs->pin_of)) != BATON_OK)
            return err;
        if ((err = baton_group_keys(c->zk, c->base, 1, &rs->keys, &rs->nkeys, NULL, errstr,
                                    sizeof(errstr))) != BATON_OK)
            return err;
        /* All read, each with its watch: keep them until one fires. */
        gs_clear(c);
        c->gs.cfg = rs->cfg;
        c->gs.drains = strings_dup(rs->drains, rs->ndrains);
        c->gs.ndrains = rs->ndrains;
        c->gs.pin_of = strings_dup(rs->pin_of, (size_t)P);
        c->gs.npins = P;
        c->gs.keys = strings_dup(rs->keys, rs->nkeys);
        c->gs.nkeys = rs->nkeys;
        c->gs.valid = 1;
    }
    if (!c->gs.live_valid || !rs->cached) {
        baton_zk_strings_free(c->gs.live, c->gs.nlive);
        c->gs.live = strings_dup(rs->raw, rs->nraw);
        c->gs.nlive = rs->nraw;
        c->gs.live_valid = 1;
    }
    return BATON_OK;
}

/* Every live member, from the member cache while its data watch has not
 * fired, else read (re-arming the watch); then the cache is replaced. */
static int snap_read_members(coord_t *c, coord_snap_t *rs) {
    coord_worker_t *w = rs->w = xcalloc(rs->nlive + rs->npub + 1, sizeof(*w));
    int *watched = xcalloc(rs->nlive + 1, sizeof(int)); /* w[i]'s node has a watch armed */
    size_t nw = 0;
    /* The members not cached are read pipelined (issue 16: one at a time,
     * 500 joiners cost a loaded cold start tens of seconds), each read
     * leaving a data watch that a leave mark or the deletion fires. A
     * member gone by its read leaves none: the listing's watch has fired
     * or will. */
    char **paths = xcalloc(rs->nlive + 1, sizeof(char *));
    size_t nread = 0;
    for (size_t i = 0; i < rs->nlive; i++) {
        mcache_t *hit = rs->full ? NULL : mc_find(c, rs->live[i]);
        if (!(hit && hit->valid))
            paths[nread++] = baton_layout_child(rs->wdir, rs->live[i]);
    }
    baton_zkread_t *reads = xcalloc(nread + 1, sizeof(*reads));
    if (nread)
        baton_zkbatch_watch_get(c->zk, paths, nread, reads);
    int err = BATON_OK;
    for (size_t i = 0, j = 0; i < rs->nlive; i++) {
        w[nw].id = rs->live[i];
        mcache_t *hit = rs->full ? NULL : mc_find(c, rs->live[i]);
        if (!(hit && hit->valid)) {
            baton_zkread_t *r = &reads[j];
            int rc = r->err;
            member_apply(c, paths[j], rs->live[i], rc, r->data, r->len, &r->stat, &w[nw]);
            j++;
            if (rc == BATON_NOTFOUND)
                continue; /* left meanwhile: the watch brings us back */
            if (rc != BATON_OK) {
                err = rc;
                break;
            }
            watched[nw++] = 1;
            continue;
        }
        if (hit && hit->valid) {
            /* Unchanged since we read it: its data watch has not fired. */
            w[nw].capacity = hit->capacity;
            snprintf(w[nw].rack, sizeof(w[nw].rack), "%s", hit->rack);
            w[nw].no_partitions = hit->no_partitions;
            w[nw].keys_filter = hit->keys_filter;
            w[nw].keys = hit->keys ? xstrdup(hit->keys) : NULL;
            w[nw].session = hit->session;
            watched[nw++] = hit->watched;
        }
    }
    for (size_t j = 0; j < nread; j++) {
        baton_zkread_release(&reads[j]);
        free(paths[j]);
    }
    free(reads);
    free(paths);
    rs->nw = nw; /* what snap_release frees */
    if (err != BATON_OK) {
        free(watched);
        return err;
    }
    /* A member whose node now belongs to another session than when we last
     * read it restarted under its id while we were not looking (frozen, or
     * the events coalesced): whatever a standby promoted for its old
     * incarnation must end, and the old claims be watched. */
    for (size_t i = 0; i < nw; i++) {
        const mcache_t *old = mc_find(c, w[i].id);
        if (old && old->session && w[i].session && old->session != w[i].session) {
            BLOG_INFO("event=member_incarnation worker=%s old_session=0x%llx session=0x%llx "
                      "action=republish",
                      baton_log_v(w[i].id), (unsigned long long)old->session,
                      (unsigned long long)w[i].session);
            c->republish = 1;
            handoffs_mark_owner(c, w[i].id);
        }
    }
    /* Remember them (live is sorted, so is the cache). */
    mc_clear(c);
    c->mc.v = xcalloc(nw + 1, sizeof(mcache_t));
    for (size_t i = 0; i < nw; i++) {
        c->mc.v[c->mc.n++] = (mcache_t){.id = xstrdup(w[i].id),
                                        .capacity = w[i].capacity,
                                        .no_partitions = w[i].no_partitions,
                                        .keys_filter = w[i].keys_filter,
                                        .keys = w[i].keys ? xstrdup(w[i].keys) : NULL,
                                        .session = w[i].session,
                                        .valid = 1,
                                        .watched = watched[i]};
        snprintf(c->mc.v[i].rack, sizeof(c->mc.v[i].rack), "%s", w[i].rack);
    }
    free(watched);
    return BATON_OK;
}

/* Adds every published member that vanished less than --leave-grace-ms ago
 * (absent: its resources stay put), then flags the drained and leaving
 * ones. Live means read here: a member listed but gone by the time we read
 * its node (a leaver deleting it right now) is absent, so its grace
 * applies. */
static void snap_members_flags(coord_t *c, coord_snap_t *rs, int64_t now) {
    coord_worker_t *w = rs->w;
    size_t nread = rs->nw; /* w[0..nread) is sorted (live is) */
    for (size_t i = 0; i < rs->npub; i++) {
        const published_t *pub = &rs->pub[i];
        if (cw_find(w, nread, pub->id) >= 0 || !pub->valid || pub->npartitions == 0 ||
            c->conf->leave_grace_ms <= 0 || baton_id_valid(pub->id) != 0)
            continue;
        vanished_t *g = gone_find(c, pub->id);
        if (!g) {
            c->lv.gone = xrealloc(c->lv.gone, (c->lv.ngone + 1) * sizeof(*c->lv.gone));
            g = &c->lv.gone[c->lv.ngone++];
            *g = (vanished_t){.id = xstrdup(pub->id), .since_ms = now};
            BLOG_INFO("event=leave_grace worker=%s partitions=%zu grace_ms=%d",
                      baton_log_v(pub->id), pub->npartitions, c->conf->leave_grace_ms);
        }
        int64_t due = g->since_ms + c->conf->leave_grace_ms;
        if (now >= due) {
            /* Its node is deleted by this publish, so this logs once. */
            BLOG_INFO("event=leave_grace_expired worker=%s", baton_log_v(pub->id));
            continue;
        }
        int64_t grace_due = coord_timers_due_ms(&c->timers, T_GRACE);
        if (!grace_due || due < grace_due)
            coord_timers_arm(&c->timers, T_GRACE, due);
        w[rs->nw++] = (coord_worker_t){.id = pub->id, .capacity = 1, .flags = BATON_ASSIGN_ABSENT};
    }
    qsort(w, rs->nw, sizeof(*w), cw_cmp);
    for (size_t i = 0; i < rs->ndrains; i++) {
        int k = cw_find(w, rs->nw, rs->drains[i]);
        if (k >= 0)
            w[k].flags |= BATON_ASSIGN_DRAINED;
    }
    /* A worker that marked itself leaving is drained: it gets nothing, so
     * its successors are named while it still holds (and flushes) its
     * claims, and they queue behind them. Not with --leave-grace-ms: the
     * operator asked that a worker who goes (a rolling restart) keeps its
     * partitions reserved until it is back or the grace runs out. */
    for (size_t i = 0; c->conf->leave_grace_ms <= 0 && i < c->lv.nleaving; i++) {
        int k = cw_find(w, rs->nw, c->lv.leaving[i]);
        if (k >= 0)
            w[k].flags |= BATON_ASSIGN_DRAINED;
    }
}

/* Reads the snapshot: settings, members, what is published. */
static int snap_read(coord_t *c, coord_snap_t *rs) {
    int err;
    rs->t_read = baton_now_ms();
    rs->cached = c->gs.valid && !c->pc.full_read;
    if ((err = snap_read_config(c, rs)) != BATON_OK)
        return err;
    rs->wdir = baton_layout_workers(c->base);
    rs->adir = baton_layout_assignment(c->base);
    /* Between the reads: coord_wait_hook stopped leading in a call. */
    if (c->el.silent_in_call)
        return BATON_CONNECTION;
    if ((err = snap_read_published(c, rs)) != BATON_OK ||
        (err = snap_read_settings(c, rs)) != BATON_OK)
        return err;
    c->forming = !pub_assigns(rs->pub, rs->npub);
    /* The workers: every live one, plus every published one that vanished
     * less than --leave-grace-ms ago (absent: its partitions stay put). */
    int64_t now = baton_now_ms();
    gone_prune(c, rs->live, rs->nlive, rs->pub, rs->npub);
    coord_timers_disarm(&c->timers, T_GRACE);
    if (c->el.silent_in_call)
        return BATON_CONNECTION;
    if ((err = snap_read_members(c, rs)) != BATON_OK)
        return err;
    snap_members_flags(c, rs, now);
    return BATON_OK;
}

/* The plan step's input and output for one rebalance. */
typedef struct {
    baton_plan_member_t *members;
    baton_plan_published_t *ppub;
    const char **lrack;
    baton_plan_snapshot_t snap;
    baton_plan_t pl;
    int planned;
    int64_t t0;         /* when planning began */
    int64_t compute_ms; /* the assignment alone (standbys apart) */
} coord_plan_t;

static void plan_release(coord_plan_t *cp) {
    if (cp->planned)
        baton_plan_release(&cp->pl, cp->snap.nmembers);
    free(cp->members);
    free(cp->ppub);
    free(cp->lrack);
}

/* Whether this rebalance may leave the standbys out: none is named yet (the
 * group is forming: a cold start, or a deferral before this one) and the
 * membership is still churning. The plan then names none if anything moves
 * (standbys_unless_moved: a plan that moves nothing names them, rather than
 * take back the ones published). Sets standby_quiet_at.
 * Each standby watches its owners' member nodes, one watch per (standby,
 * owner), and standbys named in the middle of a cold start's joins are
 * replaced by the next rebalance's: at 1,000 workers and 100,000
 * partitions that was 100,000 watches per publish, two thirds of the cold
 * start's ZooKeeper requests (docs/benchmarks.md). Once a publish names
 * them every later one does, as before. Quiet is the debounce's
 * rebalance_delay_ms for small groups; where the standbys may need more
 * than STANDBY_DEFER_PAIRS watches it is max_rebalance_delay_ms (at most
 * STANDBY_QUIET_MAX_MS), which the lulls between a cold start's joins do
 * not reach. */
static int standby_defer(coord_t *c, const coord_snap_t *rs) {
    if (!c->churn_last)
        return 0;
    /* Once named, standbys are kept named: a later rebalance in the middle
     * of churn (a restart's leave and join, at scale) names them as it
     * always did, rather than take every list back for a while. */
    for (size_t i = 0; i < rs->npub; i++)
        if (rs->pub[i].nstandby)
            return 0;
    /* At most one watch per (standby, owner) and per resource. */
    int64_t nw = (int64_t)rs->nw, pairs = nw * (nw > 0 ? nw - 1 : 0);
    if ((int64_t)rs->P + (int64_t)rs->nkeys < pairs)
        pairs = (int64_t)rs->P + (int64_t)rs->nkeys;
    int64_t quiet =
        pairs > STANDBY_DEFER_PAIRS ? c->conf->max_rebalance_delay_ms : c->conf->rebalance_delay_ms;
    if (quiet < c->conf->rebalance_delay_ms)
        quiet = c->conf->rebalance_delay_ms;
    if (quiet > STANDBY_QUIET_MAX_MS)
        quiet = STANDBY_QUIET_MAX_MS; /* a debounce of an hour must not hold them that long */
    c->standby_quiet_at = c->churn_last + quiet;
    /* The snapshot's start, not now: members that joined while it was
     * read (seconds, on a server busy with a cold start's claims) are not
     * in it, and their events are not seen yet; a snapshot begun within
     * the quiet period may be one the next rebalance changes. */
    return rs->t_read < c->standby_quiet_at;
}

/* The snapshot as the plan takes it, and its plan (assignment/plan.h). */
static int coord_plan(coord_t *c, const coord_snap_t *rs, coord_plan_t *cp) {
    size_t nw = rs->nw;
    cp->members = xcalloc(nw + 1, sizeof(*cp->members));
    for (size_t i = 0; i < nw; i++)
        cp->members[i] = (baton_plan_member_t){.id = rs->w[i].id,
                                               .capacity = rs->w[i].capacity,
                                               .rack = rs->w[i].rack,
                                               .flags = rs->w[i].flags,
                                               .no_partitions = rs->w[i].no_partitions,
                                               .keys_filter = rs->w[i].keys_filter,
                                               .keys = rs->w[i].keys};
    cp->ppub = xcalloc(rs->npub + 1, sizeof(*cp->ppub));
    for (size_t i = 0; i < rs->npub; i++) {
        const published_t *pub = &rs->pub[i];
        cp->ppub[i] = (baton_plan_published_t){.id = pub->id,
                                               .partitions = pub->partitions,
                                               .npartitions = pub->npartitions,
                                               .keys = pub->keys,
                                               .nkeys = pub->nkeys,
                                               .standby = pub->standby,
                                               .nstandby = pub->nstandby,
                                               .generation = pub->generation,
                                               .valid = pub->valid};
    }
    if (c->racks) {
        cp->lrack = xcalloc((size_t)rs->P + 1, sizeof(char *));
        for (int32_t p = 0; p < rs->P; p++)
            cp->lrack[p] = coord_racks_of(c->racks, p);
    }
    int standbys = c->conf->leave_grace_ms <= 0;
    cp->snap = (baton_plan_snapshot_t){.strategy = rs->strategy,
                                       .npartitions = rs->P,
                                       .members = cp->members,
                                       .nmembers = nw,
                                       .pin_of = (const char *const *)rs->pin_of,
                                       .keys = rs->keys,
                                       .nkeys = rs->nkeys,
                                       .published = cp->ppub,
                                       .npublished = rs->npub,
                                       .leader_rack = cp->lrack,
                                       .rack_policy = (baton_rack_policy_t)c->conf->rack_policy,
                                       .standbys = standbys,
                                       .standbys_unless_moved = standbys && standby_defer(c, rs),
                                       .republish = c->republish,
                                       .generation = rs->meta.generation};
    char errstr[256];
    cp->t0 = baton_now_ms();
    cp->planned = 1;
    int err = baton_plan_compute(&cp->snap, &cp->pl, errstr, sizeof(errstr));
    const baton_plan_t *pl = &cp->pl;
    if (err != BATON_OK) {
        if (strcmp(pl->failed ? pl->failed : "", "partitions") == 0)
            BLOG_ERROR("event=assign_failed error=\"%s\"", baton_log_q(errstr));
        else
            BLOG_ERROR("event=assign_failed what=%s error=\"%s\"",
                       baton_log_v(pl->failed ? pl->failed : "plan"), baton_log_q(errstr));
        return err;
    }
    cp->compute_ms = baton_now_ms() - cp->t0 - pl->standby_ms;
    c->standby_deferred = pl->standby_deferred;
    if (pl->standby_skipped && !c->standby_skip_logged) {
        BLOG_INFO("event=standby_skipped workers=%zu partitions=%d keys=%zu budget=%d", nw, rs->P,
                  rs->nkeys, COORD_STANDBY_BUDGET);
        c->standby_skip_logged = 1;
    }
    return BATON_OK;
}

/* The plan's node diff as publish_chunks writes it (payloads taken from
 * the plan), losers first. */
static node_op_t *publish_nodes(const coord_snap_t *rs, baton_plan_t *pl, size_t *nnodes) {
    node_op_t *nodes = xcalloc(pl->nops + 1, sizeof(*nodes));
    for (size_t i = 0; i < pl->nops; i++) {
        baton_plan_op_t *po = &pl->ops[i];
        node_op_t *o = &nodes[i];
        o->kind = po->kind == BATON_PLAN_SET      ? NODE_SET
                  : po->kind == BATON_PLAN_CREATE ? NODE_CREATE
                                                  : NODE_DELETE;
        o->payload = po->payload; /* moved */
        po->payload = NULL;
        o->path = baton_layout_child(rs->adir, po->id);
        o->delta = po->delta;
        o->bytes = (o->payload ? strlen(o->payload) : 0) + strlen(o->path) + 64;
    }
    *nnodes = pl->nops;
    qsort(nodes, *nnodes, sizeof(*nodes), node_op_cmp);
    return nodes;
}

/* Publishes the plan's diff (publish_chunks: fenced). On a refusal we step
 * down; on another error the caches are dropped (a chunk may have landed). */
static int coord_publish(coord_t *c, const coord_snap_t *rs, coord_plan_t *cp, size_t *nnodes,
                         size_t *nmulti, int64_t *t_publish) {
    node_op_t *nodes = publish_nodes(rs, &cp->pl, nnodes);
    baton_assignment_meta_t new_meta = {.generation = cp->pl.generation,
                                        .coordinator_epoch = c->el.epoch};
    snprintf(new_meta.strategy, sizeof(new_meta.strategy), "%s", baton_strategy_name(rs->strategy));
    char *meta_new = baton_assignment_meta_encode(&new_meta);
    *t_publish = baton_now_ms();
    int err = publish_chunks(c, rs->adir, rs->meta_st.version, meta_new, nodes, *nnodes,
                             cp->pl.generation, nmulti);
    if (err == BATON_DEPOSED)
        coord_step_down(c, "publish_refused");
    else if (err != BATON_OK)
        pc_drop(c); /* a chunk may have landed: read it all back next time */
    for (size_t i = 0; i < *nnodes; i++) {
        free(nodes[i].path);
        free(nodes[i].payload);
    }
    free(nodes);
    free(meta_new);
    return err;
}

/* Every row that changed owner: into the history (all of them) and the log
 * (the first ASSIGN_LOG_MAX). */
static void report_moves(coord_t *c, const coord_snap_t *rs, const coord_plan_t *cp) {
    const baton_plan_t *pl = &cp->pl;
    int64_t gen = pl->generation;
    coord_history_t *hist = coord_history_new(); /* every move, not only those logged */
    for (size_t i = 0; i < rs->npub; i++)
        coord_history_prev_worker(hist, rs->pub[i].id);
    int logged = 0;
    for (size_t r = 0; r < pl->nrows; r++) {
        int prev = pl->prev[r], prev_pub = pl->prev_pub[r], next = pl->next[r];
        if ((prev == next && prev_pub >= 0) || (prev_pub < 0 && next < 0))
            continue;
        int is_key = baton_plan_row_is_key(&cp->snap, r);
        const baton_resource_t res = {.kind =
                                          is_key ? BATON_RESOURCE_KEY : BATON_RESOURCE_PARTITION,
                                      .partition = is_key ? -1 : (int32_t)r,
                                      .key = is_key ? rs->keys[r - (size_t)rs->P] : NULL};
        const char *from = prev_pub >= 0 ? rs->pub[prev_pub].id : "-";
        const char *to = next >= 0 ? rs->w[next].id : "-";
        int pinned = pl->pins[r] >= 0 && pl->pins[r] == next;
        const char *why = move_reason(c, from, prev_pub >= 0, prev, rs->w, pinned);
        coord_history_add(hist, res.partition, res.key, from, to, gen, why);
        if (++logged > ASSIGN_LOG_MAX)
            continue;
        char label[BATON_RES_LABEL_SIZE];
        BLOG_INFO("event=assign %s from=%s to=%s generation=%lld reason=%s",
                  baton_res_label(&res, label, sizeof(label)), baton_log_v(from), baton_log_v(to),
                  (long long)gen, baton_log_v(why));
    }
    if (logged > ASSIGN_LOG_MAX)
        BLOG_INFO("event=assign_log_truncated more=%d", logged - ASSIGN_LOG_MAX);
    if (!c->hist.pending) {
        c->hist.pending = hist;
        coord_timers_arm(&c->timers, T_HISTORY, baton_now_ms() + HISTORY_DELAY_MS);
    } else {
        coord_history_merge(c->hist.pending, hist);
        coord_history_destroy(hist);
    }
}

/* After a publish: the watchdog, the cache, the log line, the metrics and
 * the moves. */
static void coord_report(coord_t *c, const coord_snap_t *rs, const coord_plan_t *cp, size_t nnodes,
                         size_t nmulti, int64_t t_publish) {
    const baton_plan_t *pl = &cp->pl;
    int64_t gen = pl->generation;
    handoffs_record(c, rs->P, rs->keys, rs->nkeys, pl->next, rs->w);
    if (cp->snap.republish)
        BLOG_INFO("event=republished generation=%lld workers=%zu", (long long)gen, rs->nw);
    c->republish = 0;
    /* Our last chunk set /assignment once: its version went up by one. */
    pc_store(c, rs->w, rs->nw, &cp->snap, pl, rs->meta_st.version + 1, gen, gen);
    const baton_assign_stats_t *st = &pl->stats;
    BLOG_INFO("event=published generation=%lld epoch=%lld workers=%zu partitions=%d moved=%d "
              "minimal=%d reserved=%d pinned=%d rack_local=%d keys=%zu keys_moved=%d ops=%zu "
              "multis=%zu read_ms=%lld compute_ms=%lld standby_ms=%lld publish_ms=%lld "
              "standbys=%s",
              (long long)gen, (long long)c->el.epoch, rs->nw, rs->P, pl->moved, st->minimal,
              st->reserved, st->pinned, st->rack_local, rs->nkeys, pl->kmoved, nnodes, nmulti,
              (long long)(cp->t0 - rs->t_read), (long long)cp->compute_ms,
              (long long)pl->standby_ms, (long long)(baton_now_ms() - t_publish),
              !cp->snap.standbys     ? "off"
              : pl->standby_deferred ? "deferred"
              : pl->standby_skipped  ? "skipped"
                                     : "named");
    baton_metric_inc(baton_metric_counter(BATON_M_C_REBALANCES));
    baton_metric_add(baton_metric_counter(BATON_M_C_MOVES), pl->moved);
    baton_metric_set(baton_metric_gauge(BATON_M_C_GENERATION), (double)gen);
    baton_metric_observe(baton_metric_histogram(BATON_M_C_REBALANCE_SECONDS),
                         (double)(baton_now_ms() - cp->t0) / 1000.0);
    report_moves(c, rs, cp);
    c->hist.published_gen = gen;
    leaving_prune(c, rs->w, rs->nw);
}

/* Computes the next assignment and publishes it if anything changed:
 * snapshot -> plan -> publish -> report. */
static int coord_rebalance(coord_t *c) {
    coord_snap_t rs = {0};
    coord_plan_t cp = {0};
    int err = snap_read(c, &rs);
    int term_first = c->term_first;
    if (err == BATON_OK)
        c->term_first = 0; /* a failed read keeps it for the retry */
    if (err == BATON_OK && term_first && c->forming && rs.nlive > 0 &&
        c->conf->rebalance_delay_ms > 0) {
        /* Elected into a group that forms (a fleet and its coordinator
         * started together): members may still be joining, as when the
         * debounce holds a join burst; wait for them as it does. */
        BLOG_INFO("event=rebalance_deferred reason=group_forming workers=%zu", rs.nlive);
        c->join_wait = 1;
        snap_release(&rs);
        return BATON_OK;
    }
    if (err == BATON_OK)
        err = coord_plan(c, &rs, &cp);
    if (err == BATON_OK && c->standby_deferred)
        BLOG_INFO("event=standby_deferred reason=churn workers=%zu quiet_in_ms=%lld", rs.nw,
                  (long long)(c->standby_quiet_at > baton_now_ms()
                                  ? c->standby_quiet_at - baton_now_ms()
                                  : 0)); /* 0: quiet already, the snapshot was not */
    if (err == BATON_OK && cp.pl.nops == 0) {
        c->republish = 0; /* nothing changed (or no worker): publish nothing */
        handoffs_record(c, rs.P, rs.keys, rs.nkeys, cp.pl.next, rs.w);
        pc_store(c, rs.w, rs.nw, &cp.snap, &cp.pl, rs.meta_st.version, rs.meta.generation,
                 cp.pl.generation - 1);
    } else if (err == BATON_OK) {
        size_t nnodes = 0, nmulti = 0;
        int64_t t_publish = 0;
        if ((err = coord_publish(c, &rs, &cp, &nnodes, &nmulti, &t_publish)) == BATON_OK)
            coord_report(c, &rs, &cp, nnodes, nmulti, t_publish);
    }
    plan_release(&cp);
    snap_release(&rs);
    return err;
}

/* Refreshes the partition leaders' racks from Kafka (--brokers) when due.
 * A failure keeps the previous map (or none): racks only break ties. Returns
 * 1 if the map changed. */
static int coord_racks_refresh(coord_t *c) {
    if (!c->conf->brokers || baton_now_ms() < coord_timers_due_ms(&c->timers, T_RACKS))
        return 0;
    coord_timers_arm(&c->timers, T_RACKS, baton_now_ms() + c->conf->racks_refresh_ms);
    char errstr[256];
    baton_config_t cfg;
    if (baton_group_config_read(c->zk, c->base, 0, &cfg, errstr, sizeof(errstr)) != BATON_OK)
        return 0;
    coord_racks_t *r = NULL;
    int err = coord_racks_fetch(c->conf->brokers, cfg.topic, cfg.partitions, 2000, &r, errstr,
                                sizeof(errstr));
    if (err != BATON_OK) {
        BLOG_WARN("event=racks_unavailable brokers=%s error=\"%s\"", baton_log_v(c->conf->brokers),
                  baton_log_q(errstr));
        return 0;
    }
    int changed = !coord_racks_equal(c->racks, r);
    if (changed) {
        BLOG_INFO("event=racks topic=%s partitions=%d with_rack=%d", baton_log_v(cfg.topic),
                  cfg.partitions, coord_racks_known(r));
        for (int32_t p = 0; p < cfg.partitions; p++)
            BLOG_DEBUG("event=leader_rack partition=%d rack=%s", p,
                       baton_log_v(coord_racks_of(r, p) ? coord_racks_of(r, p) : "-"));
    }
    coord_racks_destroy(c->racks);
    c->racks = r;
    return changed;
}

static int coord_step(coord_t *c) {
    /* A leader whose settings are cached still leads: its own node's
     * exists watch (set by coord_elect) has not fired. */
    int err = c->el.leader && c->gs.valid && !c->pc.full_read ? BATON_OK : coord_elect(c);
    if (err != BATON_OK)
        return err;
    if (!c->el.leader) {
        pc_drop(c); /* a standby keeps nothing: a new term starts by reading */
        return BATON_OK;
    }
    /* Racks first: they only steer partitions that move, so a fresh group
     * must be placed with them, not fixed up later. */
    coord_racks_refresh(c);
    err = coord_rebalance(c);
    if (err == BATON_DEPOSED) {
        /* If our node still exists someone else published: yield to them by
         * rejoining the queue at its back. */
        if (c->el.my_node[0] && baton_zk_delete(c->zk, c->el.my_node, -1) == BATON_OK)
            BLOG_INFO("event=candidate_withdrawn node=%s", baton_log_v(c->el.my_node));
        c->el.my_node[0] = 0;
    }
    return err;
}

/* The wait hook (baton_zk_set_wait_hook): the silence clock runs on while
 * a call of ours waits, and a call can outlive its limit. The client gives
 * a request up only once it has heard nothing at all for 2/3 of the
 * session, and over a link cut one way (to the server) watch events still
 * reach it: the call then waits until the server expires the session and
 * closes the connection, past the moment a standby may be elected. So the
 * leader stops leading at the limit from inside the wait, as loop_silence
 * would between calls: said here (the log and the gauges), done once the
 * call returns (loop_silence), and nothing is sent meanwhile (publish_chunks,
 * coord_can_call). */
static int coord_wait_hook(void *arg) {
    coord_t *c = arg;
    if (!c->el.leader || c->el.silent_in_call)
        return 50;
    /* The call's own answers may be noted only when it ends (a batch's
     * are, stamped with its start): the probes go on meanwhile, or a long
     * rebalance on a busy but healthy server would read as silence. */
    baton_silence_probe(c->sil, c->el.my_node[0] ? c->el.my_node : c->base);
    int64_t silent = baton_silence_ms(c->sil, baton_now_ms()),
            limit = baton_silence_limit_ms(c->sil);
    if (silent < limit)
        return limit - silent < 50 ? (int)(limit - silent) : 50;
    c->el.silent_in_call = 1;
    baton_metric_set(baton_metric_gauge(BATON_M_C_LEADER), 0);
    baton_metric_set(baton_metric_gauge(BATON_M_C_SUSPENDED), 1);
    BLOG_WARN("event=leader_suspended silence_ms=%lld limit_ms=%lld timeout_ms=%d epoch=%lld "
              "action=stop_leading in_call=1",
              (long long)silent, (long long)limit, baton_zk_session_timeout(c->zk),
              (long long)c->el.epoch);
    BLOG_WARN("event=step_down reason=zk_silent epoch=%lld", (long long)c->el.epoch);
    return 50;
}

static int coord_connect(coord_t *c, int first) {
    char errstr[256];
    int64_t t0 = baton_now_ms(); /* the session cannot have been renewed before this */
    int err = baton_zk_connect(c->conf->zk_hosts, c->conf->session_timeout_ms,
                               c->conf->connect_timeout_ms, c->conf->zk_auth, &c->zk, errstr,
                               sizeof(errstr));
    if (err != BATON_OK) {
        BLOG_ERROR("event=zk_connect_failed error=\"%s\"%s", baton_log_q(errstr),
                   first ? " action=exit" : "");
        return err;
    }
    baton_silence_reset(c->sil, c->zk, t0);
    baton_zk_set_wait_hook(c->zk, coord_wait_hook, c);
    c->el.suspended = 0;
    BLOG_INFO("event=zk_connected session=0x%llx timeout_ms=%d",
              (unsigned long long)baton_zk_session_id(c->zk), baton_zk_session_timeout(c->zk));
    return BATON_OK;
}

/* ---- the loop ----------------------------------------------------------- */

/* The loop's state besides coord_t: one iteration's flags and wait. */
typedef struct {
    const char *wdir;     /* <base>/workers */
    int dirty;            /* run the rebalance phase (election, then publish) */
    int64_t first_change; /* debounce: the first churn of this burst; 0: none */
    int64_t last_change;  /* and its latest */
    int64_t wait_ms;      /* the poll's timeout, at most */
    int probe_ms;         /* the silence clock's next tick, at most */
    int churn, crash;     /* this iteration's events: membership churn, a crash */
    int64_t resync_since; /* when the full read first came due and waited; 0: it did not */
} coord_loop_t;

static void timers_setup(coord_timers_t *ts) {
    static const struct {
        const char *name;
        unsigned groups;
    } def[T_COUNT] = {
        [T_DEBOUNCE] = {"debounce", G_ALWAYS | G_BEFORE},
        [T_GRACE] = {"leave_grace", G_LEADER | G_BEFORE},
        [T_RESYNC] = {"resync", G_ALWAYS | G_BEFORE},
        [T_RACKS] = {"racks", G_LEADER},
        [T_HANDOFF] = {"handoff", G_LEADER},
        [T_SWEEP] = {"handoff_sweep", G_LEADER},
        [T_HISTORY] = {"history", G_ALWAYS | G_AFTER},
        [T_VERIFY] = {"verify", G_ALWAYS | G_AFTER},
        [T_STANDBY] = {"standby_quiet", G_LEADER | G_BEFORE},
        [T_LEAVE] = {"leave_hold", G_LEADER | G_BEFORE},
    };
    coord_timers_init(ts);
    for (int i = 0; i < T_COUNT; i++)
        coord_timers_add(ts, def[i].name, def[i].groups); /* id i */
}

/* A new leave mark, learned from its event (whether the event alone or a
 * read of the node confirmed it): one rule for both. A new mark asks for a
 * rebalance at once, not debounced (the leaver waits for it, holding its
 * claims, so its successors queue behind them) -- unless every resource of
 * the leaver has a live standby: the standbys take them over by
 * themselves, and a publish's reads and multi would only be more work for
 * the server in the handoff's few milliseconds. The rebalance after the
 * hold (T_LEAVE) names the same workers (nothing moves); the leaver waits
 * for it before it deletes its member node (the history then records a
 * leave). Its own timer: churn meanwhile (a join's debounce) does not push
 * it later, and a crash meanwhile is still rebalanced at once (loop_churn:
 * T_DEBOUNCE is the churn's alone).
 *
 * The hold only keeps the mark from asking for a rebalance: any rebalance
 * that runs inside it (a crash's, a debounce's, a full read's) drains the
 * leaver as it would without one, naming the standbys that are taking
 * over. Keeping them on the leaver there would publish a new generation
 * naming as their owner a worker that is going while its standbys claim
 * them. A full read that finds a mark is such a rebalance, which is why the
 * full read waits for a hold (loop_timers_before). */
static void leave_mark_act(coord_t *c, coord_loop_t *l, const char *id) {
    int hold = c->conf->leave_hold_ms;
    if (hold > 0 && c->el.leader && leave_covered(c, id)) {
        coord_timers_arm_once(&c->timers, T_LEAVE, baton_now_ms() + hold);
        BLOG_INFO("event=leave_marked worker=%s action=standbys_take_over rebalance_in_ms=%d",
                  baton_log_v(id), hold);
        return;
    }
    BLOG_INFO("event=leave_marked worker=%s action=rebalance_now", baton_log_v(id));
    l->dirty = 1;
}

/* A member's own node changed or went (its data watch, set to see a leave
 * mark). A change: note the mark now and re-arm the watch; a new mark goes
 * to leave_mark_act. A deletion is churn like the children event it comes
 * with; an unmarked one (a crash, an expiry) is rebalanced at once too
 * unless more churn is pending. */
static void event_member(coord_t *c, coord_loop_t *l, const baton_zk_event_t *ev, const char *id) {
    if (ev->type == ZOO_CHANGED_EVENT && c->el.leader && c->conf->leave_grace_ms <= 0 &&
        !leaving_has(c, id) && mc_find(c, id)) {
        /* A member changes its node's data only to mark its leave
         * (baton_membership_leave): act on the event itself, a read less
         * on the handoff's critical path. Its other fields are cached and
         * unchanged; the read that re-arms the watch and confirms the mark
         * comes after the publish (verify_flush); until then no watch is
         * armed on the node. */
        mc_find(c, id)->watched = 0;
        leaving_note(c, id);
        c->lv.verify = xrealloc(c->lv.verify, sizeof(char *) * (c->lv.nverify + 1));
        c->lv.verify[c->lv.nverify++] = xstrdup(id);
        coord_timers_arm_once(&c->timers, T_VERIFY, baton_now_ms() + VERIFY_DELAY_MS);
        leave_mark_act(c, l, id);
        return;
    }
    mc_invalidate(c, id);
    if (ev->type == ZOO_CHANGED_EVENT) {
        int was = leaving_has(c, id);
        coord_worker_t tmp = {0};
        if (read_member(c, l->wdir, id, &tmp) == BATON_OK)
            mc_update(c, id, &tmp); /* the rebalance need not read it again */
        free(tmp.keys);
        if (!was && leaving_has(c, id) && c->conf->leave_grace_ms <= 0)
            leave_mark_act(c, l, id);
    } else {
        l->churn = 1;
        c->gs.live_valid = 0;
        if (ev->type == ZOO_DELETED_EVENT && !leaving_has(c, id))
            l->crash = 1;
    }
}

/* Handles every queued ZooKeeper event; returns 1 if the session expired
 * (or authentication failed). */
static int loop_events(coord_t *c, coord_loop_t *l) {
    baton_zk_event_t ev;
    int expired = 0;
    size_t wlen = strlen(l->wdir);
    l->churn = l->crash = 0;
    while (baton_zk_next_event(c->zk, &ev)) {
        if (ev.type == ZOO_SESSION_EVENT) {
            if (ev.state == ZOO_EXPIRED_SESSION_STATE || ev.state == ZOO_AUTH_FAILED_STATE)
                expired = 1;
            else if (ev.state == ZOO_CONNECTED_STATE) {
                l->dirty = c->pc.full_read = 1; /* watches may have been missed: re-read */
                baton_silence_reconnected(c->sil);
            }
            if (ev.state == ZOO_CONNECTED_STATE || ev.state == ZOO_CONNECTING_STATE)
                baton_metrics_zk_state(ev.state == ZOO_CONNECTED_STATE);
            else if (expired)
                baton_metrics_zk_state(-1);
        } else if (ev.type == BATON_SILENCE_EVENT) {
            /* a probe answered while silent: loop_silence acts on it */
        } else if (ev.path && strncmp(ev.path, l->wdir, wlen) == 0 && ev.path[wlen] == '/') {
            event_member(c, l, &ev, ev.path + wlen + 1);
        } else if (ev.type == ZOO_CHILD_EVENT && ev.path && strcmp(ev.path, l->wdir) == 0) {
            BLOG_DEBUG("event=zk_watch type=%d path=%s", ev.type, baton_log_v(ev.path));
            l->churn = 1;
            c->gs.live_valid = 0;
        } else {
            /* Election, config, pins, drains, keys: act at once, on
             * everything read afresh. */
            BLOG_DEBUG("event=zk_watch type=%d path=%s", ev.type, baton_log_v(ev.path));
            l->dirty = 1;
            c->gs.valid = c->gs.live_valid = 0;
        }
        baton_zk_event_release(&ev);
    }
    return expired || baton_zk_expired(c->zk);
}

/* Whether the loop may make ZooKeeper calls now: connected, and heard
 * within 2/3 of the session computed now (not at the last tick: a call that
 * blocked until the client gave up on a silent server must not be followed
 * by another that waits for its next connection attempt, up to 2/3 of the
 * session again, before loop_silence steps down). */
static int coord_can_call(const coord_t *c) {
    return baton_zk_connected(c->zk) && baton_silence_heard_recently(c->sil) &&
           !c->el.silent_in_call;
}

/* Membership churn: a crash with nothing else pending is rebalanced at
 * once (the session timeout has already been waited); other churn is
 * debounced: the rebalance runs at min(last change + delay, first change +
 * max delay). While the group forms (nothing assigned yet) the delay and
 * the bound are the initial ones: a fleet started at once whose joins take
 * longer than the bound (a thousand members on a busy server: seconds), or
 * pause for longer than the usual delay (a server's collection pause),
 * would otherwise be assigned to its first few hundred, and most of what
 * they claimed would move again moments later (docs/design.md, "The first
 * assignment waits for the joins"). */
static void loop_churn(coord_t *c, coord_loop_t *l, int64_t now) {
    const baton_coord_conf_t *conf = c->conf;
    coord_timers_t *ts = &c->timers;
    if (!c->el.leader || conf->rebalance_delay_ms == 0 ||
        (l->crash && !coord_timers_due_ms(ts, T_DEBOUNCE))) {
        l->dirty = 1;
        return;
    }
    if (!l->first_change)
        l->first_change = now;
    l->last_change = now;
    int64_t due = now + (c->forming ? conf->initial_rebalance_delay_ms : conf->rebalance_delay_ms);
    int64_t bound =
        c->forming ? conf->initial_max_rebalance_delay_ms : conf->max_rebalance_delay_ms;
    if (bound < conf->max_rebalance_delay_ms)
        bound = conf->max_rebalance_delay_ms;
    if (due > l->first_change + bound)
        due = l->first_change + bound;
    coord_timers_arm(ts, T_DEBOUNCE, due);
    /* Re-arm the one-shot watch now, so further churn keeps extending the
     * quiet period (up to the bound). */
    char **names = NULL;
    size_t n = 0;
    if (!coord_can_call(c) || baton_zk_children(c->zk, l->wdir, 1, &names, &n) != BATON_OK)
        l->dirty = 1;
    baton_zk_strings_free(names, n);
    BLOG_DEBUG("event=rebalance_scheduled in_ms=%lld forming=%d", (long long)(due - now),
               c->forming);
}

/* The earliest rebalance a timer has scheduled but not yet asked for (a
 * join's quiet period, a leave's hold, the standbys' quiet rebalance): its
 * due time, or 0 if none is armed for later than now. Not a leave grace:
 * a full read inside one does not end it (the vanished worker is kept
 * until its grace ends), and a grace can be a day long. */
static int64_t rebalance_scheduled_at(const coord_t *c, int64_t now) {
    static const int asks[] = {T_DEBOUNCE, T_STANDBY, T_LEAVE};
    int64_t at = 0;
    for (size_t i = 0; i < BATON_ARRAY_SIZE(asks); i++) {
        int64_t due = coord_timers_due_ms(&c->timers, asks[i]);
        if (due > now && (at == 0 || due < at))
            at = due;
    }
    return at;
}

/* The timers that ask for a rebalance, in deadline order. The debounce and
 * the leave grace stay due until a rebalance has run (it clears them). The
 * resync reads everything (tens of ms on a busy server): never in the
 * rebalance something else asked for (a leave mark, a crash): half a
 * second later, when the successors' claims are done; nor ahead of one
 * they have scheduled: a leave's hold, while the standbys take over, or a
 * join's quiet period would end early (it_leave_hold saw a resync publish
 * 965 ms into a 1,500 ms hold), so it looks again every half second until
 * half a second after that one is due, but waits RESYNC_INTERVAL_MS at
 * most: a long quiet period (--rebalance-delay-ms can be an hour) must
 * not hold the safety net back. */
static void loop_timers_before(coord_t *c, coord_loop_t *l, int64_t now) {
    int ids[COORD_TIMERS_MAX], resync = 0;
    int n = coord_timers_due(&c->timers, now, G_BEFORE, ids);
    for (int i = 0; i < n; i++) {
        if (ids[i] == T_RESYNC) {
            resync = 1;
        } else {
            l->dirty = 1; /* T_DEBOUNCE, T_GRACE, T_STANDBY, T_LEAVE */
            if (ids[i] == T_STANDBY)
                coord_timers_disarm(&c->timers, T_STANDBY); /* one rebalance asked */
        }
    }
    if (resync) {
        /* after the others: it defers to a rebalance they asked for, or
         * have scheduled */
        int64_t sched = l->dirty || !c->el.leader ? 0 : rebalance_scheduled_at(c, now);
        if (!l->resync_since)
            l->resync_since = now;
        if (sched && now - l->resync_since >= RESYNC_INTERVAL_MS)
            sched = 0; /* waited long enough */
        if (l->dirty || sched) {
            coord_timers_arm(&c->timers, T_RESYNC, now + RESYNC_DEFER_MS);
            if (sched)
                BLOG_DEBUG("event=resync_deferred rebalance_in_ms=%lld "
                           "reason=rebalance_scheduled",
                           (long long)(sched - now));
        } else {
            BLOG_DEBUG("event=resync");
            l->resync_since = 0;
            l->dirty = c->pc.full_read = 1;
            coord_timers_arm(&c->timers, T_RESYNC, now + RESYNC_INTERVAL_MS);
        }
    }
    if (c->el.leader && coord_can_call(c) && coord_racks_refresh(c))
        l->dirty = 1;
}

/* The session-silence clock, the workers' own (baton_silence.h): when
 * ZooKeeper has not answered for 2/3 of the session the server may expire
 * it at the full session and a standby take over, and we would learn that
 * only when we hear from the server again. So a leader stops leading at
 * once: no publish, no watchdog, not reported as leader. Nothing runs the
 * election while silent (its calls would only wait). When a probe is
 * answered again the election runs afresh: our node still there and the
 * lowest (it is, unless the session expired: sequence numbers only rise),
 * we lead again with the same epoch; an expired session rejoins the queue
 * (loop_session_lost). */
static void loop_silence(coord_t *c, coord_loop_t *l) {
    int64_t silent;
    int change = baton_silence_tick(c->sil, c->el.my_node[0] ? c->el.my_node : c->base, &silent,
                                    &l->probe_ms);
    if (c->el.silent_in_call) {
        /* coord_wait_hook stopped leading during a call (and said so). */
        c->el.suspended = 1;
        coord_step_down(c, "zk_silent");
        if (change != BATON_SILENCE_BEGAN) { /* answered since: elect afresh */
            BLOG_INFO("event=zk_heard suspended=1 action=run_election");
            c->el.suspended = 0;
            l->dirty = c->pc.full_read = 1;
        }
        return;
    }
    if (change == BATON_SILENCE_BEGAN) {
        int64_t limit = baton_silence_limit_ms(c->sil);
        int timeout = baton_zk_session_timeout(c->zk);
        if (c->el.leader) {
            BLOG_WARN("event=leader_suspended silence_ms=%lld limit_ms=%lld timeout_ms=%d "
                      "epoch=%lld action=stop_leading",
                      (long long)silent, (long long)limit, timeout, (long long)c->el.epoch);
            c->el.suspended = 1;
            coord_step_down(c, "zk_silent");
        } else {
            BLOG_WARN("event=zk_silent silence_ms=%lld limit_ms=%lld timeout_ms=%d "
                      "action=wait_for_zk",
                      (long long)silent, (long long)limit, timeout);
        }
    } else if (change == BATON_SILENCE_ENDED) {
        BLOG_INFO("event=zk_heard suspended=%d action=run_election", c->el.suspended);
        c->el.suspended = 0;
        l->dirty = c->pc.full_read = 1;
    }
}

/* The election and, while leading, the rebalance (coord_step). */
static void loop_rebalance(coord_t *c, coord_loop_t *l) {
    if (!l->dirty || !coord_can_call(c) || baton_silence_silent(c->sil))
        return;
    l->dirty = 0;
    c->churn_last = l->last_change;
    c->standby_deferred = 0;
    int err = coord_step(c);
    if (err == BATON_OK && c->el.leader && c->join_wait) {
        /* Elected into a forming group: published nothing; the debounce
         * runs as if the members had just joined (later joins extend it
         * in loop_churn, up to the initial bound), but its first wait is
         * at most ELECTION_JOIN_WAIT_MS: an hour-long debounce must not
         * hold a group's first assignment for an hour. */
        int64_t now = baton_now_ms(), wait = c->conf->initial_rebalance_delay_ms;
        c->join_wait = 0;
        if (wait > ELECTION_JOIN_WAIT_MS)
            wait = ELECTION_JOIN_WAIT_MS;
        l->first_change = now; /* not an earlier term's burst */
        l->last_change = now;
        coord_timers_arm(&c->timers, T_DEBOUNCE, now + wait);
    } else if (err == BATON_OK && c->el.leader) {
        l->first_change = 0; /* this rebalance read everything */
        coord_timers_disarm(&c->timers, T_DEBOUNCE);
        coord_timers_disarm(&c->timers, T_LEAVE); /* it saw every leave mark */
        /* Standbys left out: one more rebalance once the membership has
         * been quiet names them (churn before then rebalances, and defers,
         * as it would; T_DEBOUNCE stays the churn's own, so a lone crash
         * meanwhile is still acted on at once). */
        coord_timers_arm(&c->timers, T_STANDBY, c->standby_deferred ? c->standby_quiet_at : 0);
    }
    if (err != BATON_OK) {
        /* Retry soon: connection loss, a vanished predecessor, a refused
         * publish or a group not yet initialised. */
        l->dirty = c->pc.full_read = 1;
        l->wait_ms = err == BATON_CONFLICT || err == BATON_DEPOSED ? 0 : RETRY_BACKOFF_MS;
        if (err == BATON_NOTFOUND || err == BATON_CORRUPT)
            l->wait_ms = 1000;
    }
}

/* What follows a publish: the handoff watchdog (leader), then the history
 * write and the leave-mark verify when due, in deadline order. */
static void loop_timers_after(coord_t *c, coord_loop_t *l, int64_t now) {
    if (c->el.leader && coord_can_call(c)) {
        handoffs_check(c);
        if (c->republish && !l->dirty) {
            l->dirty = 1;
            l->wait_ms = 0;
        }
    }
    if (!coord_can_call(c) || baton_silence_silent(c->sil))
        return; /* they wait for the connection, and for an answer */
    int ids[COORD_TIMERS_MAX];
    int n = coord_timers_due(&c->timers, now, G_AFTER, ids);
    for (int i = 0; i < n; i++) {
        if (ids[i] == T_HISTORY) {
            hist_flush(c);
        } else if (ids[i] == T_VERIFY && verify_flush(c, l->wdir)) {
            l->dirty = 1;
            l->wait_ms = 0;
        }
    }
}

/* Sleeps until an event, a stop request or the earliest deadline (a
 * standby leaves the leader's timers out), at most l->wait_ms. */
static void loop_wait(coord_t *c, coord_loop_t *l, int stop_fd, int64_t now) {
    unsigned groups = G_ALWAYS | (c->el.leader ? G_LEADER : 0);
    int64_t wait_ms = coord_timers_wait_ms(&c->timers, groups, now, l->wait_ms);
    /* Disconnected, whatever is due waits for the connection (and the
     * reconnection's event wakes us): a deadline already past must not
     * make this loop spin. */
    if (wait_ms > l->probe_ms)
        wait_ms = l->probe_ms; /* the silence clock: probe and look */
    if (!baton_zk_connected(c->zk) && wait_ms < DISCONNECTED_WAIT_MS)
        wait_ms = DISCONNECTED_WAIT_MS;
    /* coord_wait_hook's step-down is done by loop_silence, next turn */
    baton_metric_set(baton_metric_gauge(BATON_M_C_LEADER), c->el.leader && !c->el.silent_in_call);
    baton_metric_set(baton_metric_gauge(BATON_M_C_SUSPENDED),
                     c->el.suspended || c->el.silent_in_call);
    baton_metric_set(baton_metric_gauge(BATON_M_ZK_CONNECTED), baton_zk_connected(c->zk));
    baton_metric_set(baton_metric_gauge(BATON_M_C_EPOCH), c->el.leader ? (double)c->el.epoch : 0);
    struct pollfd pfds[2] = {{.fd = baton_zk_fd(c->zk), .events = POLLIN},
                             {.fd = stop_fd, .events = POLLIN}};
    poll(pfds, 2, (int)wait_ms);
}

/* Connects (again) when there is no session. Returns 0 (connected), 1
 * (not yet: after a pause, try again) or -1 (refused credentials: fatal,
 * like at start). */
static int loop_connect(coord_t *c, coord_loop_t *l) {
    if (c->zk)
        return 0;
    int err = coord_connect(c, 0);
    if (err == BATON_DENIED) {
        /* Credentials the root's ACL (or the server) refuses do not get
         * better by reconnecting. */
        BLOG_ERROR("event=zk_auth_failed action=exit");
        return -1;
    }
    if (err != BATON_OK) {
        baton_sleep_ms(1000);
        return 1;
    }
    l->dirty = 1;
    return 0;
}

/* A session that ended: authentication failed (fatal: returns -1) or it
 * expired (we step down and reconnect: returns 1). */
static int loop_session_lost(coord_t *c) {
    if (zoo_state(baton_zk_handle(c->zk)) == ZOO_AUTH_FAILED_STATE) {
        coord_step_down(c, "auth_failed");
        BLOG_ERROR("event=zk_auth_failed error=\"ZooKeeper authentication failed (check "
                   "--zk-auth)\" action=exit");
        return -1;
    }
    coord_step_down(c, "session_expired");
    BLOG_WARN("event=session_expired action=reconnect");
    baton_zk_destroy(c->zk);
    c->zk = NULL;
    baton_silence_reset(c->sil, NULL, 0); /* until the next session's */
    c->el.my_node[0] = 0;
    return 1;
}

static void coord_shutdown(coord_t *c) {
    BLOG_INFO("event=stopping leader=%d", c->el.leader);
    if (c->el.leader && c->zk && baton_zk_connected(c->zk))
        hist_flush(c); /* what was published is recorded before we go */
    hist_drop(c);
    if (c->zk) {
        if (c->el.my_node[0])
            baton_zk_delete(c->zk, c->el.my_node, -1);
        baton_zk_destroy(c->zk);
    }
    baton_silence_free(c->sil); /* after the handle: no probe completion now */
    leave_clear(c);
    handoffs_clear(c);
    pc_drop(c);
    coord_racks_destroy(c->racks);
    free(c->base);
}

/* The loop, in phases (like libuv's uv_run): connect, handle the events,
 * update the time, act on due timers, rebalance if asked, act on what
 * follows a publish, then wait for the earliest deadline or an event. */
int baton_coord_run(const baton_coord_conf_t *conf, int stop_fd) {
    coord_t c = {.conf = conf, .sil = baton_silence_new()};
    timers_setup(&c.timers);
    c.base = baton_group_base(conf->root, conf->group);
    if (coord_connect(&c, 1) != BATON_OK) {
        baton_silence_free(c.sil);
        free(c.base);
        return 1;
    }
    char *wdir = baton_layout_workers(c.base);
    coord_loop_t l = {.wdir = wdir, .dirty = 1};
    coord_timers_arm(&c.timers, T_RESYNC, baton_now_ms() + RESYNC_INTERVAL_MS);
    int rc = 0; /* 1: refused credentials ended the loop */
    while (!baton_signal_stop_requested()) {
        int step = loop_connect(&c, &l);
        if (step == 0 && loop_events(&c, &l))
            step = loop_session_lost(&c);
        if (step < 0) {
            rc = 1;
            break;
        }
        if (step > 0)
            continue;
        loop_silence(&c, &l);
        int64_t now = baton_now_ms();
        if (l.churn)
            loop_churn(&c, &l, now);
        loop_timers_before(&c, &l, now);
        l.wait_ms = 1000;
        loop_rebalance(&c, &l);
        now = baton_now_ms();
        loop_timers_after(&c, &l, now);
        loop_silence(&c, &l); /* again: a call above may have waited out a silence */
        loop_wait(&c, &l, stop_fd, now);
    }
    coord_shutdown(&c);
    free(wdir);
    return rc;
}
