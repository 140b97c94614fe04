/* bench_scale.c: baton-bench-scale, many simulated workers in one process
 * for the scale benchmark. Each is a real member (worker/membership.h: its
 * own ZooKeeper session, member node, assignment watch and claims) with
 * no-op callbacks: no Kafka, no sink. Members are spread over --threads
 * threads; each thread owns its members (the library's rule) and polls them
 * round robin, waiting on all their descriptors at once.
 *
 * stdout, one line per event, wall-clock microseconds:
 *   ready TS_US MEMBERS       every member registered
 *   owned TS_US COUNT         partitions owned by this process's members (on change)
 *   expired TS_US ID          --watch-member ID's node is gone (its session expired)
 * Runs until SIGTERM.
 *
 * --report instead reads the group once and prints one line:
 *   report standby_coverage=F standby_named=N partitions=P largest_znode_bytes=B
 *          largest_znode=PATH znodes_read=K
 * F: the fraction of the group's partitions named as some owner's standby
 * in the published assignment nodes (a partition counts once). B: the
 * largest node read: the group's node, its direct children, every child of
 * assignment, workers, coordinators, history, drains and pins, and the
 * claims of partition 0 (every partition's claims look alike: small). */
#include "membership.h"
#include "baton_member_int.h"

#include "baton_err.h"
#include "baton_log.h"
#include "baton_signal.h"
#include "baton_util.h"
#include "baton_zk.h"
#include "baton_codec.h"
#include "baton_group.h"
#include "baton_layout.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

typedef struct {
    const char *zk, *group, *root;
    int first, count, session_ms;
    int join_first;  /* join every member of a thread before polling any */
    int claim_ahead; /* --standby-claim ahead: standby.claim=ahead */
    const char *prefix;
    const char *watch_member;
    const char *standby_map; /* --report: write "partition owner standby" lines here */
} scale_conf_t;

typedef struct {
    const scale_conf_t *conf;
    int index, nthreads;
} scale_thread_t;

static atomic_int scale_owned;
static atomic_int scale_joined;
static atomic_int scale_failed;

static int64_t wall_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static int scale_on_acquired(void *opaque, const baton_resource_t *p, int64_t epoch) {
    (void)opaque, (void)p, (void)epoch;
    atomic_fetch_add(&scale_owned, 1);
    return BATON_OK;
}

static void scale_on_released(void *opaque, const baton_resource_t *p,
                              baton_release_reason_t reason) {
    (void)opaque, (void)p, (void)reason;
    atomic_fetch_sub(&scale_owned, 1);
}

/* One thread: joins its share of the members, then polls them round robin
 * until SIGTERM. */
static void *scale_thread(void *arg) {
    scale_thread_t *t = arg;
    const scale_conf_t *c = t->conf;
    int n = 0;
    baton_membership_t **ms = xcalloc((size_t)c->count, sizeof(*ms));
    char(*ids)[64] = xcalloc((size_t)c->count, sizeof(*ids));
    baton_membership_cbs_t cbs = {.on_acquired = scale_on_acquired,
                                  .on_released = scale_on_released};
    char errstr[512];
    for (int i = t->index; i < c->count; i += t->nthreads) {
        snprintf(ids[n], sizeof(ids[n]), "%s%03d", c->prefix, c->first + i);
        baton_membership_conf_t mc = {.zk_hosts = c->zk,
                                      .root = c->root,
                                      .group = c->group,
                                      .id = ids[n],
                                      .capacity = 1,
                                      .session_timeout_ms = c->session_ms,
                                      .connect_timeout_ms = 15000};
        baton_membership_ext_t ext = {.claim_ahead = c->claim_ahead};
        if (baton_membership__new(&mc, &cbs, &ext, &ms[n], errstr, sizeof(errstr)) != BATON_OK) {
            fprintf(stderr, "baton-bench-scale: member %s: %s\n", ids[n], errstr);
            atomic_store(&scale_failed, 1);
            break;
        }
        n++;
        atomic_fetch_add(&scale_joined, 1);
        /* The members already joined go on meanwhile (their assignment,
         * claims, watches): joining the rest one by one takes this thread
         * seconds, which no real worker waits for. Unless --join-first:
         * each such round polls every member joined so far (synchronous
         * reads and claims while the group rebalances), so at 50 members a
         * thread the joins themselves took minutes. */
        for (int k = 0; k < n && !c->join_first; k++) {
            int next = 0;
            if (baton_membership_poll(ms[k], &next, errstr, sizeof(errstr)) != BATON_OK) {
                fprintf(stderr, "baton-bench-scale: member %s: %s\n", ids[k], errstr);
                atomic_store(&scale_failed, 1);
            }
        }
    }
    struct pollfd *pfds = xcalloc((size_t)(n ? n : 1), sizeof(*pfds));
    while (!baton_signal_stop_requested() && !atomic_load(&scale_failed)) {
        int wait = 100;
        for (int i = 0; i < n; i++) {
            int next = 1000;
            if (baton_membership_poll(ms[i], &next, errstr, sizeof(errstr)) != BATON_OK) {
                fprintf(stderr, "baton-bench-scale: member %s: %s\n", ids[i], errstr);
                atomic_store(&scale_failed, 1);
            }
            wait = next < wait ? next : wait;
            pfds[i] = (struct pollfd){.fd = baton_membership_fd(ms[i]), .events = POLLIN};
        }
        poll(pfds, (nfds_t)n, wait);
    }
    for (int i = 0; i < n; i++)
        baton_membership_destroy(ms[i]);
    free(pfds);
    free(ms);
    free(ids);
    return NULL;
}

/* Watches one member node and reports when it disappears. */
static void *scale_observer(void *arg) {
    const scale_conf_t *c = arg;
    char errstr[256];
    baton_zk_t *zk = NULL;
    if (baton_zk_connect(c->zk, 10000, 15000, NULL, &zk, errstr, sizeof(errstr)) != BATON_OK) {
        fprintf(stderr, "baton-bench-scale: observer: %s\n", errstr);
        return NULL;
    }
    char *base = baton_group_base(c->root, c->group);
    char *path = xasprintf("%s/workers/%s", base, c->watch_member);
    int seen = 0;
    while (!baton_signal_stop_requested()) {
        int err = baton_zk_exists(zk, path, 1, NULL);
        if (err == BATON_OK)
            seen = 1;
        else if (err == BATON_NOTFOUND && seen) {
            printf("expired %lld %s\n", (long long)wall_us(), c->watch_member);
            seen = 0;
        }
        struct pollfd pfd = {.fd = baton_zk_fd(zk), .events = POLLIN};
        poll(&pfd, 1, 100);
        baton_zk_event_t ev;
        while (baton_zk_next_event(zk, &ev))
            baton_zk_event_release(&ev);
    }
    baton_zk_destroy(zk);
    free(path);
    free(base);
    return NULL;
}

/* The largest node so far. */
typedef struct {
    size_t bytes, nread;
    char *path;
} report_max_t;

static void report_node(baton_zk_t *zk, const char *path, report_max_t *m) {
    char *data = NULL;
    size_t len = 0;
    if (baton_zk_get(zk, path, 0, &data, &len, NULL) != BATON_OK)
        return;
    m->nread++;
    if (len > m->bytes || !m->path) {
        m->bytes = len;
        free(m->path);
        m->path = xstrdup(path);
    }
    free(data);
}

/* Every child of dir (not deeper). */
static void report_children(baton_zk_t *zk, const char *dir, report_max_t *m) {
    char **names = NULL;
    size_t n = 0;
    if (baton_zk_children(zk, dir, 0, &names, &n) != BATON_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        char *path = xasprintf("%s/%s", dir, names[i]);
        report_node(zk, path, m);
        free(path);
    }
    baton_zk_strings_free(names, n);
}

/* --report: see the top of the file. */
static int scale_report(const scale_conf_t *c) {
    char errstr[256];
    baton_zk_t *zk = NULL;
    if (baton_zk_connect(c->zk, 10000, 15000, NULL, &zk, errstr, sizeof(errstr)) != BATON_OK) {
        fprintf(stderr, "baton-bench-scale: report: %s\n", errstr);
        return 1;
    }
    char *base = baton_group_base(c->root, c->group);
    report_max_t m = {0};
    report_node(zk, base, &m);
    report_children(zk, base, &m);
    static const char *const dirs[] = {"assignment", "workers", "coordinators",
                                       "history",    "drains",  "pins"};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(dirs); i++) {
        char *dir = xasprintf("%s/%s", base, dirs[i]);
        report_children(zk, dir, &m);
        free(dir);
    }
    char *claims0 = xasprintf("%s/partitions/0/claims", base);
    report_children(zk, claims0, &m);
    free(claims0);
    /* Coverage: the partitions some assignment node names as a standby. */
    int rc = 1;
    baton_config_t gc;
    if (baton_group_config_read(zk, base, 0, &gc, errstr, sizeof(errstr)) != BATON_OK) {
        fprintf(stderr, "baton-bench-scale: report: %s\n", errstr);
        goto out;
    }
    unsigned char *named = xcalloc((size_t)gc.partitions + 1, 1);
    /* --standby-map: each partition's owner and standby, as indices into
     * ids (-1: none). */
    int *owner = xmalloc(sizeof(int) * ((size_t)gc.partitions + 1));
    int *standby = xmalloc(sizeof(int) * ((size_t)gc.partitions + 1));
    for (int32_t q = 0; q < gc.partitions; q++)
        owner[q] = standby[q] = -1;
    char *adir = baton_layout_assignment(base);
    char **ids = NULL;
    size_t nids = 0, nnamed = 0;
    if (baton_zk_children(zk, adir, 0, &ids, &nids) == BATON_OK) {
        for (size_t i = 0; i < nids; i++) {
            char *path = baton_layout_assignment_of(base, ids[i]), *data = NULL;
            size_t dl = 0;
            baton_worker_assignment_t wa;
            if (baton_zk_get(zk, path, 0, &data, &dl, NULL) == BATON_OK &&
                baton_worker_assignment_decode(data, dl, &wa, errstr, sizeof(errstr)) == BATON_OK) {
                for (size_t s = 0; s < wa.nstandby; s++)
                    for (size_t j = 0; j < wa.standby[s].npartitions; j++) {
                        int32_t q = wa.standby[s].partitions[j];
                        if (q >= 0 && q < gc.partitions && !named[q]) {
                            named[q] = 1;
                            nnamed++;
                            standby[q] = (int)i;
                        }
                    }
                for (size_t j = 0; j < wa.npartitions; j++)
                    if (wa.partitions[j] >= 0 && wa.partitions[j] < gc.partitions)
                        owner[wa.partitions[j]] = (int)i;
                baton_worker_assignment_release(&wa);
            }
            free(data);
            free(path);
        }
    }
    FILE *mf = c->standby_map ? fopen(c->standby_map, "w") : NULL;
    if (c->standby_map && !mf)
        fprintf(stderr, "baton-bench-scale: report: cannot write %s\n", c->standby_map);
    for (int32_t q = 0; mf && q < gc.partitions; q++)
        fprintf(mf, "%d %s %s\n", q, owner[q] >= 0 ? ids[owner[q]] : "-",
                standby[q] >= 0 ? ids[standby[q]] : "-");
    if (mf)
        fclose(mf);
    baton_zk_strings_free(ids, nids);
    printf("report standby_coverage=%.4f standby_named=%zu partitions=%d largest_znode_bytes=%zu "
           "largest_znode=%s znodes_read=%zu\n",
           gc.partitions ? (double)nnamed / gc.partitions : 0.0, nnamed, (int)gc.partitions,
           m.bytes, m.path ? m.path : "-", m.nread);
    free(adir);
    free(named);
    free(owner);
    free(standby);
    rc = 0;
out:
    free(m.path);
    free(base);
    baton_zk_destroy(zk);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: baton-bench-scale --zk HOSTS --group G --members N [--first K] [--prefix w]\n"
            "                         [--threads 4] [--session-timeout-ms 10000] [--root /baton]\n"
            "                         [--watch-member ID] [--join-first]\n"
            "                         [--standby-claim ahead|takeover]\n"
            "       baton-bench-scale --zk HOSTS --group G --report [--root /baton]\n"
            "                         [--standby-map FILE]\n");
}

int main(int argc, char **argv) {
    scale_conf_t c = {.root = BATON_DEFAULT_ROOT, .prefix = "w", .session_ms = 10000};
    int64_t members = 0, first = 0, threads = 4, session = 10000;
    int report = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--report")) {
            report = 1;
            continue;
        }
        if (!strcmp(a, "--join-first")) {
            c.join_first = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "baton-bench-scale: '%s' needs a value or is unknown\n", a);
            return 2;
        }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--zk"))
            c.zk = v;
        else if (!strcmp(a, "--group"))
            c.group = v;
        else if (!strcmp(a, "--root"))
            c.root = v;
        else if (!strcmp(a, "--prefix"))
            c.prefix = v;
        else if (!strcmp(a, "--watch-member"))
            c.watch_member = v;
        else if (!strcmp(a, "--standby-map"))
            c.standby_map = v;
        else if (!strcmp(a, "--standby-claim") && (!strcmp(v, "ahead") || !strcmp(v, "takeover")))
            c.claim_ahead = !strcmp(v, "ahead");
        else if (!strcmp(a, "--standby-claim"))
            bad = 1;
        else if (!strcmp(a, "--members"))
            bad = baton_parse_i64(v, 1, 10000, &members);
        else if (!strcmp(a, "--first"))
            bad = baton_parse_i64(v, 0, 1000000, &first);
        else if (!strcmp(a, "--threads"))
            bad = baton_parse_i64(v, 1, 2500, &threads);
        else if (!strcmp(a, "--session-timeout-ms"))
            bad = baton_parse_i64(v, 400, 600000, &session);
        else {
            fprintf(stderr, "baton-bench-scale: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "baton-bench-scale: bad value for %s: '%s'\n", a, v);
            return 2;
        }
    }
    if (report && c.zk && c.group) {
        baton_log_init("baton-bench-scale", "report");
        baton_log_level = BATON_LOG_WARN;
        return scale_report(&c);
    }
    if (!c.zk || !c.group || !members) {
        fprintf(stderr, "baton-bench-scale: --zk, --group and --members are required\n");
        return 2;
    }
    c.count = (int)members;
    c.first = (int)first;
    c.session_ms = (int)session;
    baton_log_init("baton-bench-scale", c.prefix);
    if (!getenv("BATON_LOG_LEVEL")) /* 999 members at info: 200,000 lines a cold start */
        baton_log_level = BATON_LOG_WARN;
    baton_signal_init();
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (threads > members)
        threads = members;
    pthread_t *tids = xcalloc((size_t)threads, sizeof(*tids));
    scale_thread_t *ts = xcalloc((size_t)threads, sizeof(*ts));
    for (int i = 0; i < threads; i++) {
        ts[i] = (scale_thread_t){.conf = &c, .index = i, .nthreads = (int)threads};
        pthread_create(&tids[i], NULL, scale_thread, &ts[i]);
    }
    pthread_t obs;
    if (c.watch_member)
        pthread_create(&obs, NULL, scale_observer, &c);
    int last = -1, ready = 0;
    while (!baton_signal_stop_requested() && !atomic_load(&scale_failed)) {
        if (!ready && atomic_load(&scale_joined) == c.count) {
            printf("ready %lld %d\n", (long long)wall_us(), c.count);
            ready = 1;
        }
        int owned = atomic_load(&scale_owned);
        if (owned != last) {
            printf("owned %lld %d\n", (long long)wall_us(), owned);
            last = owned;
        }
        usleep(2000);
    }
    int rc = atomic_load(&scale_failed) ? 1 : 0;
    for (int i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    if (c.watch_member)
        pthread_join(obs, NULL);
    free(tids);
    free(ts);
    return rc;
}
