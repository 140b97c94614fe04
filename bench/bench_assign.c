/* bench_assign.c: bin/baton-bench-assign, the assignor's benchmark. For each
 * strategy and each P in {1k, 10k, 100k} x W in {10, 100, 1000}, and
 * 1,000,000 x 10,000 (not for rendezvous), it builds an
 * assignment, then times a seeded sequence of churn events (a worker
 * crashes, one joins, a capacity changes, a worker is drained or undrained)
 * and reports per row: median and p99 compute time per event, partitions
 * moved in total, the minimum possible in total, and the worst imbalance
 * (largest distance of a worker's count from its capacity share; below 1 is
 * balanced).
 *
 * Then the rack rows: sticky with workers in 3 racks and every partition's
 * leader in a random one, under rack.policy tiebreak and realign. The first
 * assignment is made blind to racks (a coordinator before its first Kafka
 * Metadata read); the first event is the racks becoming known, the rest are
 * the churn above. These rows add the moves realignment cost (realigned,
 * included in moved) and the share of partitions in their leader's rack
 * after the last event (rack_local). Pure computation: no ZooKeeper, no
 * Kafka. */
#include "assignment.h"
#include "plan.h"

#include "baton_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    baton_strategy_t strategy;
    int partitions, workers;
    int racks; /* rack rows: 1; policy below */
    baton_rack_policy_t policy;
    double p50_ms, p99_ms, imbalance, rack_local;
    long moved, minimal, realigned;
    int events;
} row_t;

enum { BENCH_RACKS = 3 };

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int rng_below(uint64_t *s, int n) { return (int)(rng_next(s) % (uint64_t)n); }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Removes worker k: later indices shift down, its partitions lose their
 * owner (a crash: nobody hands them over). */
static void worker_remove(baton_assign_worker_t *w, char **ids, int *nw, int *prev, int np, int k) {
    free(ids[k]);
    memmove(&w[k], &w[k + 1], (size_t)(*nw - k - 1) * sizeof(*w));
    memmove(&ids[k], &ids[k + 1], (size_t)(*nw - k - 1) * sizeof(*ids));
    (*nw)--;
    for (int p = 0; p < np; p++)
        if (prev[p] == k)
            prev[p] = -1;
        else if (prev[p] > k)
            prev[p]--;
    for (int i = 0; i < *nw; i++)
        w[i].id = ids[i];
}

static void run_row(row_t *row, int nevents) {
    int np = row->partitions, cap = row->workers + nevents + 1, nw = row->workers, serial = 0;
    baton_assign_worker_t *w = xcalloc((size_t)cap, sizeof(*w));
    char **ids = xcalloc((size_t)cap, sizeof(char *));
    int *prev = xmalloc((size_t)np * sizeof(int)), *next = xmalloc((size_t)np * sizeof(int));
    double *times = xmalloc((size_t)nevents * sizeof(double));
    uint64_t rng = 0x5eed0000ULL + (uint64_t)np * 31 + (uint64_t)nw;
    /* Leader racks from their own sequence: the rows without racks keep
     * the churn they always had. */
    int *lrack = xmalloc((size_t)np * sizeof(int));
    uint64_t rack_rng = rng ^ 0x7261636bULL;
    for (int p = 0; p < np; p++)
        lrack[p] = rng_below(&rack_rng, BENCH_RACKS);
    for (int i = 0; i < nw; i++) {
        ids[i] = xasprintf("worker-%06d", serial);
        w[i] = (baton_assign_worker_t){
            .id = ids[i], .capacity = 1, .rack = row->racks ? serial % BENCH_RACKS : -1};
        serial++;
    }
    baton_assign_input_t in = {.strategy = row->strategy,
                               .npartitions = np,
                               .workers = w,
                               .nworkers = nw,
                               .rack_policy = row->policy};
    char errstr[256];
    baton_assign_stats_t st;
    if (baton_assign_compute(&in, next, &st, errstr, sizeof(errstr)) < 0) {
        fprintf(stderr, "baton-bench-assign: %s\n", errstr);
        exit(1);
    }
    row->moved = row->minimal = row->realigned = 0;
    row->imbalance = 0;
    for (int e = 0; e < nevents; e++) {
        memcpy(prev, next, (size_t)np * sizeof(int));
        int k = rng_below(&rng, nw);
        switch (row->racks && e == 0 ? -1 : e % 4) {
        case -1: in.leader_rack = lrack; break; /* the racks become known */
        case 0: worker_remove(w, ids, &nw, prev, np, k); break;
        case 1: /* join */
            ids[nw] = xasprintf("worker-%06d", serial);
            w[nw] = (baton_assign_worker_t){
                .id = ids[nw], .capacity = 1, .rack = row->racks ? serial % BENCH_RACKS : -1};
            serial++;
            nw++;
            break;
        case 2: w[k].capacity = 1 + rng_below(&rng, 4); break;
        case 3: w[k].flags ^= BATON_ASSIGN_DRAINED; break;
        }
        in.nworkers = nw;
        in.prev = prev;
        double t0 = now_ms();
        int moved = baton_assign_compute(&in, next, &st, errstr, sizeof(errstr));
        times[e] = now_ms() - t0;
        if (moved < 0) {
            fprintf(stderr, "baton-bench-assign: %s\n", errstr);
            exit(1);
        }
        row->moved += moved;
        row->minimal += st.minimal;
        row->realigned += st.realigned;
        row->rack_local = (double)st.rack_local / np;
        double imb = baton_assign_imbalance(&in, next);
        if (imb > row->imbalance)
            row->imbalance = imb;
    }
    qsort(times, (size_t)nevents, sizeof(double), cmp_double);
    row->p50_ms = times[nevents / 2];
    int i99 = (int)((double)nevents * 0.99);
    row->p99_ms = times[i99 < nevents ? i99 : nevents - 1];
    row->events = nevents;
    for (int i = 0; i < nw; i++)
        free(ids[i]);
    free(ids);
    free(w);
    free(prev);
    free(next);
    free(times);
    free(lrack);
}

/* One row, as a table line or a JSON object (first: no comma before it). */
static void row_print(const row_t *row, int json, int first) {
    const char *name = baton_strategy_name(row->strategy);
    const char *policy = row->racks ? baton_rack_policy_name(row->policy) : "-";
    if (json)
        printf("%s\n  {\"strategy\": \"%s\", \"partitions\": %d, \"workers\": %d, "
               "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"moved\": %ld, \"minimal\": %ld, "
               "\"imbalance\": %.3f, \"rack_policy\": %s%s%s, \"realigned\": %ld, "
               "\"rack_local\": %.3f}",
               first ? "" : ",", name, row->partitions, row->workers, row->p50_ms, row->p99_ms,
               row->moved, row->minimal, row->imbalance, row->racks ? "\"" : "",
               row->racks ? policy : "null", row->racks ? "\"" : "", row->realigned,
               row->rack_local);
    else
        printf("%-10s %9d %7d %9.3f %9.3f %9ld %9ld %9.3f %-8s %9ld %10.3f\n", name,
               row->partitions, row->workers, row->p50_ms, row->p99_ms, row->moved, row->minimal,
               row->imbalance, policy, row->realigned, row->rack_local);
    fflush(stdout);
}

/* --plan P W: the coordinator's whole plan step (baton_plan_compute: the
 * assignment, the standbys, the node diff with its encoding) on equal
 * workers, sticky, standbys on. Three plans: cold (nothing published),
 * steady (the cold plan published, nothing changed) and failover (the
 * last worker gone). Prints one line per plan, wall clock. */
static void plan_row(const char *name, const baton_plan_snapshot_t *s, baton_plan_t *pl) {
    char errstr[256];
    double t0 = now_ms();
    if (baton_plan_compute(s, pl, errstr, sizeof(errstr)) != 0) {
        fprintf(stderr, "baton-bench-assign: plan: %s\n", errstr);
        exit(1);
    }
    double ms = now_ms() - t0;
    size_t bytes = 0, largest = 0;
    for (size_t i = 0; i < pl->nops; i++) {
        size_t b = pl->ops[i].payload ? strlen(pl->ops[i].payload) : 0;
        bytes += b;
        largest = b > largest ? b : largest;
    }
    /* How the standbys spread: members standing by for anyone, and the
     * most owners one member stands by for. */
    size_t standing = 0, most = 0;
    for (size_t k = 0; k < s->nmembers; k++) {
        standing += pl->nstandby[k] > 0;
        most = pl->nstandby[k] > most ? pl->nstandby[k] : most;
    }
    printf("plan %-9s partitions=%d workers=%zu plan_ms=%.1f standby_ms=%lld diff_ms=%lld "
           "nodes_written=%zu bytes_written=%zu largest_node=%zu moved=%d standing_by=%zu "
           "most_owners=%zu\n",
           name, s->npartitions, s->nmembers, ms, (long long)pl->standby_ms, (long long)pl->diff_ms,
           pl->nops, bytes, largest, pl->moved, standing, most);
    fflush(stdout);
}

static int run_plan(int np, int nw) {
    baton_plan_member_t *m = xcalloc((size_t)nw, sizeof(*m));
    char **ids = xcalloc((size_t)nw, sizeof(char *));
    for (int i = 0; i < nw; i++) {
        ids[i] = xasprintf("w%06d", i);
        m[i] = (baton_plan_member_t){.id = ids[i], .capacity = 1};
    }
    baton_plan_snapshot_t s = {.strategy = BATON_STRATEGY_STICKY,
                               .npartitions = np,
                               .members = m,
                               .nmembers = (size_t)nw,
                               .standbys = 1};
    baton_plan_t cold, steady, fo;
    plan_row("cold", &s, &cold);
    /* What the cold plan wrote, as the coordinator reads it back. */
    baton_plan_published_t *pub = xcalloc((size_t)nw, sizeof(*pub));
    baton_worker_assignment_t *wa = xcalloc((size_t)nw, sizeof(*wa));
    for (int k = 0; k < nw; k++) {
        baton_plan_node(&s, &cold, (size_t)k, &wa[k]);
        pub[k] = (baton_plan_published_t){.id = ids[k],
                                          .partitions = wa[k].partitions,
                                          .npartitions = wa[k].npartitions,
                                          .standby = wa[k].standby,
                                          .nstandby = wa[k].nstandby,
                                          .generation = cold.generation,
                                          .valid = 1};
    }
    s.published = pub;
    s.npublished = (size_t)nw;
    s.generation = cold.generation;
    plan_row("steady", &s, &steady);
    s.nmembers = (size_t)nw - 1;
    plan_row("failover", &s, &fo);
    baton_plan_release(&fo, (size_t)nw - 1);
    baton_plan_release(&steady, (size_t)nw);
    for (int k = 0; k < nw; k++) {
        free(wa[k].partitions);
        free(wa[k].keys);
        free(ids[k]);
    }
    baton_plan_release(&cold, (size_t)nw);
    free(wa);
    free(pub);
    free(ids);
    free(m);
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: baton-bench-assign [--json] [--events N] [--quick]\n"
               "       baton-bench-assign --plan PARTITIONS WORKERS\n"
               "\n"
               "Times the assignor on churn events for every strategy over\n"
               "P in {1000, 10000, 100000} x W in {10, 100, 1000}, and\n"
               "1,000,000 x 10,000 (not for rendezvous).\n"
               "\n"
               "Then sticky with 3 racks under rack.policy tiebreak and realign: the\n"
               "first event makes the racks known to a rack-blind assignment.\n"
               "\n"
               "  --json      print a JSON list of objects with keys strategy, partitions,\n"
               "              workers, p50_ms, p99_ms, moved, minimal, imbalance,\n"
               "              rack_policy (null without racks), realigned, rack_local\n"
               "  --events N  churn events per row (default 100; rendezvous rows with\n"
               "              P x W above 10^6 use N / 5)\n"
               "  --quick     only P = 1000 (a smoke run)\n"
               "  --plan P W  instead, time the coordinator's plan step (assignment,\n"
               "              standbys, node diff and encoding), sticky with standbys:\n"
               "              cold, steady (nothing changed) and failover (one worker gone)\n");
}

int main(int argc, char **argv) {
    int json = 0, nevents = 100, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc) {
            int64_t v;
            if (baton_parse_i64(argv[++i], 4, 100000, &v) != 0) {
                fprintf(stderr, "baton-bench-assign: --events: '%s' is not in 4..100000\n",
                        argv[i]);
                return 2;
            }
            nevents = (int)v;
        } else if (strcmp(argv[i], "--plan") == 0 && i + 2 < argc) {
            int64_t p, w;
            if (baton_parse_i64(argv[i + 1], 1, 10000000, &p) != 0 ||
                baton_parse_i64(argv[i + 2], 2, 100000, &w) != 0) {
                fprintf(stderr,
                        "baton-bench-assign: --plan: '%s %s' is not PARTITIONS (1..10^7) "
                        "WORKERS (2..100000)\n",
                        argv[i + 1], argv[i + 2]);
                return 2;
            }
            return run_plan((int)p, (int)w);
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "baton-bench-assign: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    static const int ps[] = {1000, 10000, 100000}, ws[] = {10, 100, 1000};
    if (json)
        printf("[");
    else
        printf("%-10s %9s %7s %9s %9s %9s %9s %9s %-8s %9s %10s\n", "strategy", "partitions",
               "workers", "p50_ms", "p99_ms", "moved", "minimal", "imbalance", "racks", "realigned",
               "rack_local");
    int first = 1;
    /* The grid, then (issue 16) one row of 1,000,000 partitions over 10,000
     * workers per strategy but rendezvous, whose every event there is 10^10
     * hashes (minutes). */
    size_t nps = quick ? 1 : BATON_ARRAY_SIZE(ps);
    for (int s = 0; s < BATON_STRATEGY_COUNT; s++)
        for (size_t i = 0; i < nps + (quick ? 0 : 1); i++)
            for (size_t j = 0; j < (i < nps ? BATON_ARRAY_SIZE(ws) : 1); j++) {
                int np = i < nps ? ps[i] : 1000000, nw = i < nps ? ws[j] : 10000;
                if (i == nps && s == BATON_STRATEGY_RENDEZVOUS)
                    continue;
                row_t row = {.strategy = (baton_strategy_t)s, .partitions = np, .workers = nw};
                int n = nevents;
                if (s == BATON_STRATEGY_RENDEZVOUS && (long)np * nw > 1000000)
                    n = nevents / 5 > 4 ? nevents / 5 : 4;
                run_row(&row, n);
                row_print(&row, json, first);
                first = 0;
            }
    for (int pol = 0; pol < BATON_RACK_POLICY_COUNT; pol++)
        for (size_t i = 0; i < (quick ? 1 : BATON_ARRAY_SIZE(ps)); i++)
            for (size_t j = 0; j < BATON_ARRAY_SIZE(ws); j++) {
                row_t row = {.strategy = BATON_STRATEGY_STICKY,
                             .partitions = ps[i],
                             .workers = ws[j],
                             .racks = 1,
                             .policy = (baton_rack_policy_t)pol};
                run_row(&row, nevents);
                row_print(&row, json, first);
                first = 0;
            }
    if (json)
        printf("\n]\n");
    return 0;
}
