/* baton-zk.c: a tiny ZooKeeper command line for tests and the demo, because
 * the Java zkCli takes seconds to start. One command per run:
 *
 *   baton-zk --zk HOSTS [--timeout-ms N] CMD ARGS
 *
 * Exit codes: 0 success (exists: the node exists; wait-exists: it appeared),
 * 1 a ZooKeeper error, a missing node or a timeout (message names the path
 * and zerror()), 2 bad usage, 3 cannot connect within the timeout. */
#include "baton_util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper.h>

#define ZKCLI_DEFAULT_TIMEOUT_MS 10000

/* Connection state shared between the main thread and the ZooKeeper
 * completion thread (which runs zkcli_watcher); guarded by lock. */
typedef struct zkcli_conn_s {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int connected;
    int fatal;   /* session expired or auth failed: no point waiting */
    int changed; /* a node watch fired (wait-exists) */
} zkcli_conn_t;

static zkcli_conn_t zkcli_conn = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

static void zkcli_usage(FILE *out) {
    fprintf(out,
            "usage: baton-zk --zk HOSTS [--timeout-ms N] CMD ARGS\n"
            "\n"
            "commands:\n"
            "  get PATH              print the node's data and a newline\n"
            "  set PATH DATA         replace the node's data (any version)\n"
            "  create PATH DATA      create a persistent node\n"
            "  delete PATH           delete a node without children\n"
            "  rmr PATH              delete a node and everything below it\n"
            "                        (a missing PATH is not an error)\n"
            "  ls PATH               print the children, sorted, one a line\n"
            "  stat PATH             print czxid= mzxid= pzxid= version=\n"
            "                        cversion= ephemeralOwner=0x.. numChildren=\n"
            "                        dataLength= on one line (zxids decimal)\n"
            "  exists PATH           exit 0 if the node exists, 1 if not\n"
            "  wait-exists PATH MS   wait up to MS ms for the node to exist\n"
            "  latency PATH N US     set ephemeral node PATH N times, US us apart;\n"
            "                        print set_ms n= p50= p90= p99= max=\n"
            "  fill DIR PREFIX N SUB create DIR/PREFIX0 .. DIR/PREFIX<N-1> (DIR must\n"
            "                        exist), each with a child SUB unless SUB is\n"
            "                        \"\"; in pipelined multis (a test's thousands\n"
            "                        of nodes in seconds); print created=N ms=T\n"
            "\n"
            "N bounds the connection wait and is the session timeout\n"
            "(default %d). Exit: 0 ok, 1 error or no node, 2 usage,\n"
            "3 cannot connect.\n",
            ZKCLI_DEFAULT_TIMEOUT_MS);
}

static void zkcli_bad_usage(const char *fmt, const char *what) {
    fputs("baton-zk: ", stderr);
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
    zkcli_usage(stderr);
    exit(2);
}

/* The session watcher and the wait-exists node watcher; runs on the
 * ZooKeeper completion thread and only records what happened. */
static void zkcli_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    (void)zh;
    (void)path;
    (void)ctx;
    pthread_mutex_lock(&zkcli_conn.lock);
    if (type == ZOO_SESSION_EVENT) {
        if (state == ZOO_CONNECTED_STATE)
            zkcli_conn.connected = 1;
        else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
            zkcli_conn.fatal = 1;
        else
            zkcli_conn.connected = 0;
    } else {
        zkcli_conn.changed = 1;
    }
    pthread_cond_broadcast(&zkcli_conn.cond);
    pthread_mutex_unlock(&zkcli_conn.lock);
}

/* Waits on the shared condition until the absolute monotonic deadline;
 * the caller holds zkcli_conn.lock. Returns 0 on a wakeup, -1 at deadline. */
static int zkcli_wait_until(int64_t deadline_ms) {
    int64_t left = deadline_ms - baton_now_ms();
    if (left <= 0)
        return -1;
    /* Cap each wait so a missed wakeup only costs 100 ms. */
    if (left > 100)
        left = 100;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&zkcli_conn.cond, &zkcli_conn.lock, &ts);
    return 0;
}

static int zkcli_fail(const char *op, const char *path, int rc) {
    fprintf(stderr, "baton-zk: %s '%s': %s\n", op, path, zerror(rc));
    return 1;
}

static int zkcli_get(zhandle_t *zh, const char *path) {
    /* Read the size first so any node up to jute.maxbuffer fits; retry if
     * the node grew in between. */
    for (int attempt = 0; attempt < 5; attempt++) {
        struct Stat st;
        int rc = zoo_exists(zh, path, 0, &st);
        if (rc != ZOK)
            return zkcli_fail("get", path, rc);
        int cap = st.dataLength + 1;
        char *buf = xmalloc((size_t)cap);
        int len = cap;
        rc = zoo_get(zh, path, 0, buf, &len, &st);
        if (rc != ZOK) {
            free(buf);
            return zkcli_fail("get", path, rc);
        }
        if (len < cap) {
            if (len > 0)
                fwrite(buf, 1, (size_t)len, stdout);
            fputc('\n', stdout);
            free(buf);
            return 0;
        }
        free(buf);
    }
    fprintf(stderr, "baton-zk: get '%s': data keeps changing size\n", path);
    return 1;
}

static int zkcli_cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int zkcli_ls(zhandle_t *zh, const char *path) {
    struct String_vector kids = {0, NULL};
    int rc = zoo_get_children(zh, path, 0, &kids);
    if (rc != ZOK)
        return zkcli_fail("ls", path, rc);
    qsort(kids.data, (size_t)kids.count, sizeof(char *), zkcli_cmp_str);
    for (int i = 0; i < kids.count; i++)
        printf("%s\n", kids.data[i]);
    deallocate_String_vector(&kids);
    return 0;
}

/* Deletes path and its subtree, children first. Nodes that vanish while we
 * work (ephemerals of dying sessions) are fine; nodes created meanwhile make
 * the delete fail with ZNOTEMPTY, so we re-list a bounded number of times. */
static int zkcli_rmr_rec(zhandle_t *zh, const char *path, int depth) {
    if (depth > 1000) {
        fprintf(stderr, "baton-zk: rmr '%s': tree too deep\n", path);
        return ZBADARGUMENTS;
    }
    for (int attempt = 0; attempt < 5; attempt++) {
        struct String_vector kids = {0, NULL};
        int rc = zoo_get_children(zh, path, 0, &kids);
        if (rc == ZNONODE)
            return ZOK;
        if (rc != ZOK)
            return rc;
        for (int i = 0; i < kids.count && rc == ZOK; i++) {
            char *child = strcmp(path, "/") == 0 ? xasprintf("/%s", kids.data[i])
                                                 : xasprintf("%s/%s", path, kids.data[i]);
            if (strcmp(child, "/zookeeper") != 0)
                rc = zkcli_rmr_rec(zh, child, depth + 1);
            free(child);
        }
        deallocate_String_vector(&kids);
        if (rc != ZOK)
            return rc;
        if (strcmp(path, "/") == 0)
            return ZOK; /* the root itself cannot be deleted */
        rc = zoo_delete(zh, path, -1);
        if (rc == ZOK || rc == ZNONODE)
            return ZOK;
        if (rc != ZNOTEMPTY)
            return rc;
    }
    return ZNOTEMPTY;
}

/* Polls for path in slices of at most 100 ms; an exists watch cuts each
 * slice short when the node appears. The polling keeps the wait correct when
 * a watch is lost with a disconnection. */
static int zkcli_wait_exists(zhandle_t *zh, const char *path, int64_t timeout_ms) {
    int64_t deadline = baton_now_ms() + timeout_ms;
    for (;;) {
        pthread_mutex_lock(&zkcli_conn.lock);
        zkcli_conn.changed = 0;
        pthread_mutex_unlock(&zkcli_conn.lock);
        struct Stat st;
        int rc = zoo_wexists(zh, path, zkcli_watcher, NULL, &st);
        if (rc == ZOK)
            return 0;
        if (rc != ZNONODE && rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT)
            return zkcli_fail("wait-exists", path, rc);
        pthread_mutex_lock(&zkcli_conn.lock);
        int timed_out = 0;
        if (!zkcli_conn.changed && !zkcli_conn.fatal)
            timed_out = zkcli_wait_until(deadline) != 0;
        int fatal = zkcli_conn.fatal;
        pthread_mutex_unlock(&zkcli_conn.lock);
        if (fatal)
            return zkcli_fail("wait-exists", path, ZSESSIONEXPIRED);
        if (timed_out) {
            fprintf(stderr, "baton-zk: wait-exists '%s': timed out after %" PRId64 " ms\n", path,
                    timeout_ms);
            return 1;
        }
    }
}

static int zkcli_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* latency: the time of a 1-byte set, n times, gap_us apart (a pause lets
 * the server's threads go idle, as they are between a handoff's requests),
 * on an ephemeral node of our own. The benchmarks' measure of the day's
 * ZooKeeper (docs/benchmarks.md). */
static int zkcli_latency(zhandle_t *zh, const char *path, const char *n_s, const char *gap_s) {
    int64_t n = 0, gap = 0;
    if (baton_parse_i64(n_s, 1, 1000000, &n) != 0)
        zkcli_bad_usage("bad count for latency: '%s'", n_s);
    if (baton_parse_i64(gap_s, 0, 10000000, &gap) != 0)
        zkcli_bad_usage("bad gap for latency: '%s'", gap_s);
    int rc = zoo_create(zh, path, "0", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0);
    if (rc != ZOK)
        return zkcli_fail("latency", path, rc);
    double *ms = xcalloc((size_t)n, sizeof(*ms));
    for (int64_t i = 0; i < n && rc == ZOK; i++) {
        int64_t t0 = baton_now_us();
        rc = zoo_set(zh, path, "1", 1, -1);
        ms[i] = (double)(baton_now_us() - t0) / 1000.0;
        if (gap)
            baton_sleep_us(gap);
    }
    zoo_delete(zh, path, -1);
    if (rc != ZOK) {
        free(ms);
        return zkcli_fail("latency", path, rc);
    }
    qsort(ms, (size_t)n, sizeof(*ms), zkcli_cmp_double);
    printf("set_ms n=%" PRId64 " p50=%.2f p90=%.2f p99=%.2f max=%.2f\n", n, ms[n / 2],
           ms[n * 9 / 10], ms[n * 99 / 100], ms[n - 1]);
    free(ms);
    return 0;
}

/* fill: many nodes fast, for a test that needs a group at a limit (it_keys_limit:
 * 100,000 keys). Creates go in multis of FILL_OPS, FILL_WINDOW of them in
 * flight: one transaction (one log write) per multi and no round trip
 * between them. */
#define FILL_OPS 1000
#define FILL_WINDOW 8

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int inflight;
    int rc; /* the first failure */
} zkcli_fill_t;

typedef struct {
    zkcli_fill_t *f;
    int nops;
    zoo_op_t ops[FILL_OPS];
    zoo_op_result_t res[FILL_OPS];
    char *paths[FILL_OPS];
} zkcli_fill_batch_t;

static void zkcli_fill_done(int rc, const void *data) {
    zkcli_fill_batch_t *b = (zkcli_fill_batch_t *)data;
    zkcli_fill_t *f = b->f;
    for (int k = 0; k < b->nops; k++)
        free(b->paths[k]);
    free(b);
    pthread_mutex_lock(&f->lock);
    if (rc != ZOK && f->rc == ZOK)
        f->rc = rc;
    f->inflight--;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

static int zkcli_fill(zhandle_t *zh, const char *dir, const char *prefix, const char *n_s,
                      const char *sub) {
    int64_t n = 0;
    if (baton_parse_i64(n_s, 1, 10000000, &n) != 0)
        zkcli_bad_usage("bad count for fill: '%s'", n_s);
    int per = sub[0] ? 2 : 1;
    zkcli_fill_t f = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, ZOK};
    int64_t t0 = baton_now_ms(), i = 0;
    while (i < n) {
        pthread_mutex_lock(&f.lock);
        while (f.inflight >= FILL_WINDOW && f.rc == ZOK)
            pthread_cond_wait(&f.cond, &f.lock);
        int rc = f.rc;
        if (rc == ZOK)
            f.inflight++;
        pthread_mutex_unlock(&f.lock);
        if (rc != ZOK)
            break;
        zkcli_fill_batch_t *b = xcalloc(1, sizeof(*b));
        b->f = &f;
        for (; i < n && b->nops + per <= FILL_OPS; i++) {
            b->paths[b->nops] = xasprintf("%s/%s%" PRId64, dir, prefix, i);
            if (sub[0])
                b->paths[b->nops + 1] = xasprintf("%s/%s", b->paths[b->nops], sub);
            for (int k = 0; k < per; k++, b->nops++)
                zoo_create_op_init(&b->ops[b->nops], b->paths[b->nops], NULL, -1,
                                   &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        }
        rc = zoo_amulti(zh, b->nops, b->ops, b->res, zkcli_fill_done, b);
        if (rc != ZOK) {
            /* b is left alone: the client may still complete it. */
            pthread_mutex_lock(&f.lock);
            f.rc = rc;
            f.inflight--;
            pthread_mutex_unlock(&f.lock);
        }
    }
    pthread_mutex_lock(&f.lock);
    while (f.inflight > 0)
        pthread_cond_wait(&f.cond, &f.lock);
    int rc = f.rc;
    pthread_mutex_unlock(&f.lock);
    if (rc != ZOK)
        return zkcli_fail("fill", dir, rc);
    printf("created=%" PRId64 " ms=%" PRId64 "\n", n * per, baton_now_ms() - t0);
    return 0;
}

/* Runs one command on a connected handle; returns the exit code. */
static int zkcli_run(zhandle_t *zh, const char *cmd, char **args) {
    const char *path = args[0];
    int rc;
    if (strcmp(cmd, "get") == 0)
        return zkcli_get(zh, path);
    if (strcmp(cmd, "ls") == 0)
        return zkcli_ls(zh, path);
    if (strcmp(cmd, "set") == 0) {
        rc = zoo_set(zh, path, args[1], (int)strlen(args[1]), -1);
        return rc == ZOK ? 0 : zkcli_fail("set", path, rc);
    }
    if (strcmp(cmd, "create") == 0) {
        char created[1024];
        rc = zoo_create(zh, path, args[1], (int)strlen(args[1]), &ZOO_OPEN_ACL_UNSAFE, 0, created,
                        sizeof(created));
        return rc == ZOK ? 0 : zkcli_fail("create", path, rc);
    }
    if (strcmp(cmd, "delete") == 0) {
        rc = zoo_delete(zh, path, -1);
        return rc == ZOK ? 0 : zkcli_fail("delete", path, rc);
    }
    if (strcmp(cmd, "rmr") == 0) {
        rc = zkcli_rmr_rec(zh, path, 0);
        return rc == ZOK ? 0 : zkcli_fail("rmr", path, rc);
    }
    if (strcmp(cmd, "stat") == 0) {
        struct Stat st;
        rc = zoo_exists(zh, path, 0, &st);
        if (rc != ZOK)
            return zkcli_fail("stat", path, rc);
        printf("czxid=%" PRId64 " mzxid=%" PRId64 " pzxid=%" PRId64 " version=%" PRId32
               " cversion=%" PRId32 " ephemeralOwner=0x%" PRIx64 " numChildren=%" PRId32
               " dataLength=%" PRId32 "\n",
               st.czxid, st.mzxid, st.pzxid, st.version, st.cversion, (uint64_t)st.ephemeralOwner,
               st.numChildren, st.dataLength);
        return 0;
    }
    if (strcmp(cmd, "latency") == 0)
        return zkcli_latency(zh, path, args[1], args[2]);
    if (strcmp(cmd, "fill") == 0)
        return zkcli_fill(zh, path, args[1], args[2], args[3]);
    if (strcmp(cmd, "exists") == 0) {
        struct Stat st;
        rc = zoo_exists(zh, path, 0, &st);
        if (rc == ZOK)
            return 0;
        if (rc == ZNONODE)
            return 1;
        return zkcli_fail("exists", path, rc);
    }
    /* wait-exists; argument checked by the caller */
    int64_t ms = 0;
    if (baton_parse_i64(args[1], 0, 86400000, &ms) != 0)
        zkcli_bad_usage("bad timeout for wait-exists: '%s'", args[1]);
    return zkcli_wait_exists(zh, path, ms);
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        int nargs;
    } cmds[] = {{"get", 1},         {"set", 2},     {"create", 2}, {"delete", 1},
                {"rmr", 1},         {"ls", 1},      {"stat", 1},   {"exists", 1},
                {"wait-exists", 2}, {"latency", 3}, {"fill", 4}};
    const char *hosts = NULL;
    int64_t timeout_ms = ZKCLI_DEFAULT_TIMEOUT_MS;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "-", 1) == 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            zkcli_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--zk") != 0 && strcmp(a, "--timeout-ms") != 0)
            zkcli_bad_usage("unknown option '%s'", a);
        if (i + 1 >= argc)
            zkcli_bad_usage("option '%s' needs a value", a);
        const char *v = argv[++i];
        if (strcmp(a, "--zk") == 0)
            hosts = v;
        else if (baton_parse_i64(v, 1, 3600000, &timeout_ms) != 0)
            zkcli_bad_usage("bad value for --timeout-ms: '%s'", v);
    }
    if (!hosts || !*hosts)
        zkcli_bad_usage("missing required option '%s'", "--zk");
    if (i >= argc)
        zkcli_bad_usage("missing command%s", "");
    const char *cmd = argv[i++];
    size_t c = 0;
    while (c < BATON_ARRAY_SIZE(cmds) && strcmp(cmd, cmds[c].name) != 0)
        c++;
    if (c == BATON_ARRAY_SIZE(cmds))
        zkcli_bad_usage("unknown command '%s'", cmd);
    if (argc - i != cmds[c].nargs)
        zkcli_bad_usage("wrong number of arguments for '%s'", cmd);
    if (argv[i][0] != '/')
        zkcli_bad_usage("path must start with '/': '%s'", argv[i]);

    /* The C client logs every failed connect attempt at ERROR level; the
     * exit code and our one message say all a test needs. */
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    FILE *devnull = getenv("BATON_ZK_VERBOSE") ? NULL : fopen("/dev/null", "w");
    if (devnull)
        zoo_set_log_stream(devnull);

    int64_t deadline = baton_now_ms() + timeout_ms;
    zhandle_t *zh = zookeeper_init(hosts, zkcli_watcher, (int)timeout_ms, NULL, NULL, 0);
    if (!zh) {
        fprintf(stderr, "baton-zk: cannot connect to '%s': %s\n", hosts, strerror(errno));
        return 3;
    }
    pthread_mutex_lock(&zkcli_conn.lock);
    while (!zkcli_conn.connected && !zkcli_conn.fatal && zkcli_wait_until(deadline) == 0)
        ;
    int connected = zkcli_conn.connected;
    pthread_mutex_unlock(&zkcli_conn.lock);
    if (!connected) {
        fprintf(stderr, "baton-zk: cannot connect to '%s' within %" PRId64 " ms\n", hosts,
                timeout_ms);
        zookeeper_close(zh);
        if (devnull)
            fclose(devnull);
        return 3;
    }
    int code = zkcli_run(zh, cmd, argv + i);
    fflush(stdout);
    zookeeper_close(zh);
    if (devnull)
        fclose(devnull);
    return code;
}
