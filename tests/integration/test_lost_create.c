/* test_lost_create.c: a member whose claim creates "lose their reply".
 *
 * A real server cannot drop one reply on demand, so this program is linked
 * with -Wl,--wrap=zoo_acreate2 and zoo_amulti (as the ZooKeeper
 * C client's own tests wrap calls): the first --lose claim creates really
 * happen on the server, then report ZCONNECTIONLOSS, as if the connection
 * had dropped before the reply.
 * The member must find the claim it created by its session id instead of
 * creating a second one. Run by it_fault_lostcreate.sh against a real
 * ZooKeeper, with a coordinator assigning every partition to --id.
 *
 * Checks, once every partition is acquired (bounded wait): each partition's
 * claims directory holds exactly one claim of our session (no orphan), that
 * claim's czxid is the epoch on_acquired got, and at least one reply was
 * lost. Exit 0 on success, 1 with a message on failure, 2 on bad flags.
 *
 * With --unassign-lost (run without a coordinator, assignment/<id> written
 * by the script) the wrapper also takes the partition whose reply it lost
 * out of our assignment at once: the member must then find and delete the
 * claim it cannot see, and that partition must end with no claim of ours.
 *
 * With --late-create the first claim create is not sent at all: it reports
 * ZCONNECTIONLOSS, and the create really happens just after the member's
 * recovery listing (the zoo_awget_children after its zoo_async, a sync of
 * the claim's directory: both wrapped too) has answered, as when a create
 * sent through one server is committed after the server the member
 * reconnected to answered its recovery listing. The member then creates a
 * second claim, behind its own first: it must keep the lowest claim of its
 * session and delete the other, or wait behind itself.
 *
 * With --lose-delete 1 (no lost creates: --lose 0, no coordinator)
 * zoo_adelete is wrapped (baton_zk_delete's send): once every partition is
 * acquired, the last one is taken out of our assignment, and the member's
 * first claim delete is not sent at all but reports ZCONNECTIONLOSS, as
 * when the connection drops before the request reaches the server. The
 * member must not forget that claim (it is still in ZooKeeper, with our
 * live session): the partition must end with no claim of ours, with no
 * watchdog and no session expiry to delete it. */
#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "baton_zk.h"
#include "membership.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int lose_left; /* claim create replies still to lose */
static int lost;      /* how many were lost */
static int unassign_lost;
static int unassigned_p = -1; /* the partition taken away (--unassign-lost) */
static const char *g_group, *g_id;
static int g_nparts;
static int lose_delete;  /* claim deletes still to lose (--lose-delete) */
static int deletes_lost; /* how many were lost */

/* --late-create: the creates held back, made after the next listing. */
static int late_create;
static zhandle_t *late_zh;
static char *late_path[64], *late_value[64];
static int late_len[64], late_mode[64], nlate;
static _Atomic int late_reported; /* the member has been told the create failed */
static _Atomic int late_synced;   /* ... and has sent its recovery's sync */
/* late_* and nlate: the member's thread holds creates back, ZooKeeper's
 * completion thread sends them. */
static pthread_mutex_t late_mu = PTHREAD_MUTEX_INITIALIZER;

static void late_hold(zhandle_t *zh, const char *path, const char *value, int len, int mode) {
    pthread_mutex_lock(&late_mu);
    if (nlate == 64)
        abort();
    late_zh = zh;
    late_path[nlate] = strdup(path);
    late_value[nlate] = malloc((size_t)(len > 0 ? len : 1));
    if (!late_path[nlate] || !late_value[nlate])
        abort();
    if (len > 0)
        memcpy(late_value[nlate], value, (size_t)len);
    late_len[nlate] = len;
    late_mode[nlate++] = mode;
    pthread_mutex_unlock(&late_mu);
    lost++;
    fprintf(stderr, "test_lost_create: holding back the create of %s, reporting ZCONNECTIONLOSS\n",
            path);
}

int __real_zoo_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                        const struct ACL_vector *acl, int mode, string_stat_completion_t completion,
                        const void *data);
int __real_zoo_awget_children(zhandle_t *zh, const char *path, watcher_fn watcher, void *wctx,
                              strings_completion_t completion, const void *data);
int __wrap_zoo_awget_children(zhandle_t *zh, const char *path, watcher_fn watcher, void *wctx,
                              strings_completion_t completion, const void *data);

/* @locality the completion thread */
static void late_created(int rc, const char *made, const struct Stat *st, const void *data) {
    (void)st;
    fprintf(stderr, "test_lost_create: late create of %s after a listing: %s %s\n",
            (const char *)data, zerror(rc), made ? made : "");
    free((void *)data);
}

typedef struct {
    zhandle_t *zh;
    strings_completion_t done;
    const void *data;
    int late; /* the recovery listing: the held creates follow its answer */
} list_ctx_t;

/* @locality the completion thread: the listing has answered (without the
 * held creates); they are sent now, before its caller, waiting for this
 * completion, can send anything else, so they land before its next
 * request does (ZooKeeper applies a session's requests in order). */
static void list_done(int rc, const struct String_vector *sv, const void *data) {
    list_ctx_t *c = (list_ctx_t *)data;
    pthread_mutex_lock(&late_mu);
    if (c->late && nlate > 0) {
        for (int i = 0; i < nlate; i++) {
            int src =
                __real_zoo_acreate2(c->zh, late_path[i], late_value[i], late_len[i],
                                    &ZOO_OPEN_ACL_UNSAFE, late_mode[i], late_created, late_path[i]);
            if (src != ZOK) {
                fprintf(stderr, "test_lost_create: late create of %s after a listing: %s\n",
                        late_path[i], zerror(src));
                free(late_path[i]);
            }
            free(late_value[i]);
        }
        nlate = 0;
    }
    pthread_mutex_unlock(&late_mu);
    c->done(rc, sv, c->data);
    free(c);
}

/* 1 if path is the directory of the first held create. */
static int late_dir_locked(zhandle_t *zh, const char *path) {
    return zh == late_zh && nlate > 0 && strncmp(late_path[0], path, strlen(path)) == 0 &&
           late_path[0][strlen(path)] == '/';
}

int __real_zoo_async(zhandle_t *zh, const char *path, string_completion_t completion,
                     const void *data);
int __wrap_zoo_async(zhandle_t *zh, const char *path, string_completion_t completion,
                     const void *data);

/* The member's recovery (find_own_claim) syncs the claim's directory and
 * then lists it: a sync of that directory sent after the member was told
 * the create failed marks the next listing as the recovery's. Keying on
 * the sync, not on the report alone, leaves out the listing of the
 * create's own batch, which a slow member thread (a sanitizer build) can
 * send after the report, and any other listing of the directory: with
 * those the held create landed early and the recovery found it, a correct
 * outcome but not the path this test is for. */
int __wrap_zoo_async(zhandle_t *zh, const char *path, string_completion_t completion,
                     const void *data) {
    pthread_mutex_lock(&late_mu);
    if (late_reported && late_dir_locked(zh, path))
        late_synced = 1;
    pthread_mutex_unlock(&late_mu);
    return __real_zoo_async(zh, path, completion, data);
}

/* Every listing is sent asynchronously (baton_zk_children and the claim
 * batches). The first one of the held create's directory sent after the
 * recovery's sync has its completion wrapped. */
int __wrap_zoo_awget_children(zhandle_t *zh, const char *path, watcher_fn watcher, void *wctx,
                              strings_completion_t completion, const void *data) {
    list_ctx_t *c = malloc(sizeof(*c));
    if (!c)
        abort();
    *c = (list_ctx_t){.zh = zh, .done = completion, .data = data};
    pthread_mutex_lock(&late_mu);
    c->late = late_synced && late_dir_locked(zh, path);
    pthread_mutex_unlock(&late_mu);
    int rc = __real_zoo_awget_children(zh, path, watcher, wctx, list_done, c);
    if (rc != ZOK)
        free(c); /* the completion is never called then */
    return rc;
}

int __real_zoo_adelete(zhandle_t *zh, const char *path, int version, void_completion_t completion,
                       const void *data);
int __wrap_zoo_adelete(zhandle_t *zh, const char *path, int version, void_completion_t completion,
                       const void *data);

/* --lose-delete: the delete is never sent; the member hears ZCONNECTIONLOSS
 * (a request the client did not queue gets no completion). */
int __wrap_zoo_adelete(zhandle_t *zh, const char *path, int version, void_completion_t completion,
                       const void *data) {
    if (lose_delete > 0 && strstr(path, "/claims/claim-")) {
        lose_delete--;
        deletes_lost++;
        fprintf(stderr,
                "test_lost_create: not sending the delete of %s, reporting ZCONNECTIONLOSS\n",
                path);
        return ZCONNECTIONLOSS;
    }
    return __real_zoo_adelete(zh, path, version, completion, data);
}

static void assignment_set_done(int rc, const struct Stat *st, const void *data) {
    (void)st;
    (void)data;
    fprintf(stderr, "test_lost_create: assignment set: %s\n", zerror(rc));
}

/* Rewrites assignment/<id> without partition `drop`. */
static void assignment_drop(zhandle_t *zh, int drop) {
    char buf[1024];
    int off = snprintf(buf, sizeof(buf), "{\"generation\":2,\"partitions\":[");
    for (int p = 0, first = 1; p < g_nparts; p++) {
        if (p == drop)
            continue;
        off += snprintf(buf + off, sizeof(buf) - (size_t)off, "%s%d", first ? "" : ",", p);
        first = 0;
    }
    snprintf(buf + off, sizeof(buf) - (size_t)off, "]}");
    char *path = xasprintf("/baton/%s/assignment/%s", g_group, g_id);
    /* Asynchronous: this may run on ZooKeeper's completion thread (the
     * zoo_acreate2 wrapper), where a synchronous call would wait for
     * itself. The member's own session sends it before anything else it
     * asks, so its next read of the assignment sees it. */
    int rc = zoo_aset(zh, path, buf, (int)strlen(buf), -1, assignment_set_done, NULL);
    fprintf(stderr, "test_lost_create: setting %s to %s: %s\n", path, buf, zerror(rc));
    free(path);
}

/* Every claim create is asynchronous (baton_zk_create, and a handoff's
 * few claims pipelined with their queue checks, worker/member_claims.c):
 * zoo_acreate2 is wrapped. The create really happens; its completion, on
 * ZooKeeper's completion thread, reports ZCONNECTIONLOSS instead. */
int __real_zoo_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                        const struct ACL_vector *acl, int mode, string_stat_completion_t completion,
                        const void *data);
int __wrap_zoo_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                        const struct ACL_vector *acl, int mode, string_stat_completion_t completion,
                        const void *data);

typedef struct {
    zhandle_t *zh;
    string_stat_completion_t done;
    const void *data;
} lost_ctx_t;

static void lost_done(int rc, const char *value, const struct Stat *st, const void *data) {
    lost_ctx_t *c = (lost_ctx_t *)data;
    if (rc == ZOK && lose_left > 0 && value && strstr(value, "/claims/claim-")) {
        lose_left--;
        lost++;
        fprintf(stderr,
                "test_lost_create: created %s (asynchronously), reporting ZCONNECTIONLOSS\n",
                value);
        const char *pp = strstr(value, "/partitions/");
        if (unassign_lost && unassigned_p < 0 && pp) {
            unassigned_p = atoi(pp + 12);
            assignment_drop(c->zh, unassigned_p);
        }
        c->done(ZCONNECTIONLOSS, NULL, NULL, c->data);
    } else {
        c->done(rc, value, st, c->data);
    }
    free(c);
}

/* --late-create on the asynchronous path: the reply is an exists of "/",
 * so that ZCONNECTIONLOSS still arrives on the completion thread. */
static void late_done(int rc, const struct Stat *st, const void *data) {
    (void)rc;
    (void)st;
    lost_ctx_t *c = (lost_ctx_t *)data;
    late_reported = 1;
    c->done(ZCONNECTIONLOSS, NULL, NULL, c->data);
    free(c);
}

int __wrap_zoo_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                        const struct ACL_vector *acl, int mode, string_stat_completion_t completion,
                        const void *data) {
    lost_ctx_t *c = malloc(sizeof(*c));
    if (!c)
        abort();
    *c = (lost_ctx_t){.zh = zh, .done = completion, .data = data};
    if (late_create && lose_left > 0 && strstr(path, "/claims/claim-")) {
        lose_left--;
        late_hold(zh, path, value, valuelen, mode);
        int rc = zoo_aexists(zh, "/", 0, late_done, c);
        if (rc != ZOK)
            free(c);
        return rc;
    }
    int rc = __real_zoo_acreate2(zh, path, value, valuelen, acl, mode, lost_done, c);
    if (rc != ZOK)
        free(c); /* the completion is never called then */
    return rc;
}

/* The member batches the claim creates of one poll into a multi
 * (worker/member_claims.c, claims_create_multi), so that is wrapped too: the
 * multi really commits, then reports ZCONNECTIONLOSS; every claim in it
 * counts as a lost reply. baton_zk_multi sends it with zoo_amulti and waits
 * for the completion; the wrapper does the real multi and waits for it
 * itself, then calls the caller's completion before returning. */
int __real_zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                      void_completion_t completion, const void *data);
int __wrap_zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                      void_completion_t completion, const void *data);

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done, rc;
} multi_wait_t;

static void multi_wait_done(int rc, const void *data) {
    multi_wait_t *w = (multi_wait_t *)data;
    pthread_mutex_lock(&w->lock);
    w->rc = rc;
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static int real_multi(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results) {
    multi_wait_t w = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    int rc = __real_zoo_amulti(zh, count, ops, results, multi_wait_done, &w);
    if (rc == ZOK) {
        pthread_mutex_lock(&w.lock);
        while (!w.done)
            pthread_cond_wait(&w.cond, &w.lock);
        rc = w.rc;
        pthread_mutex_unlock(&w.lock);
    }
    return rc;
}

static int lossy_multi(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results);

int __wrap_zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                      void_completion_t completion, const void *data) {
    completion(lossy_multi(zh, count, ops, results), data);
    return ZOK;
}

static int lossy_multi(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results) {
    if (late_create && lose_left > 0 && count >= 1 && ops[0].type == 1 /* ZOO_CREATE_OP */ &&
        strstr(ops[0].create_op.path, "/claims/claim-")) {
        for (int i = 0; i < count; i++)
            late_hold(zh, ops[i].create_op.path, ops[i].create_op.data, ops[i].create_op.datalen,
                      ops[i].create_op.flags);
        lose_left = lose_left > count ? lose_left - count : 0;
        return ZCONNECTIONLOSS;
    }
    int rc = real_multi(zh, count, ops, results);
    if (rc != ZOK || lose_left <= 0 || count < 1 || ops[0].type != 1 /* ZOO_CREATE_OP */ ||
        !strstr(ops[0].create_op.path, "/claims/claim-"))
        return rc;
    for (int i = 0; i < count; i++) {
        fprintf(stderr,
                "test_lost_create: created %s (in a multi of %d), reporting "
                "ZCONNECTIONLOSS\n",
                ops[i].create_op.buf ? ops[i].create_op.buf : ops[i].create_op.path, count);
        lost++;
    }
    lose_left = lose_left > count ? lose_left - count : 0;
    const char *pp = strstr(ops[0].create_op.path, "/partitions/");
    if (unassign_lost && unassigned_p < 0 && pp) {
        unassigned_p = atoi(pp + 12);
        assignment_drop(zh, unassigned_p);
    }
    return ZCONNECTIONLOSS;
}

#define MAXP 64
static int64_t epochs[MAXP];
static int acquired;

static int on_acquired(void *opaque, const baton_resource_t *r, int64_t epoch) {
    (void)opaque;
    int32_t p = r->partition;
    if (p >= 0 && p < MAXP && !epochs[p]) {
        epochs[p] = epoch;
        acquired++;
    }
    return BATON_OK;
}

static void on_released(void *opaque, const baton_resource_t *r, baton_release_reason_t reason) {
    (void)opaque;
    int32_t p = r->partition;
    (void)reason;
    if (p >= 0 && p < MAXP && epochs[p]) {
        epochs[p] = 0;
        acquired--;
    }
}

/* 1 when every partition holds exactly one claim of ours whose czxid is the
 * epoch we were given, except the unassigned one, which holds none. */
static int claims_ok(baton_zk_t *zc, const char *group, const char *id, int nparts, char *why,
                     size_t whysz) {
    int ok = 1;
    for (int p = 0; p < nparts && ok; p++) {
        char *dir = xasprintf("/baton/%s/partitions/%d/claims", group, p);
        char **names = NULL;
        size_t n = 0;
        int err = baton_zk_children(zc, dir, 0, &names, &n);
        int ours = 0;
        int64_t czxid = 0;
        for (size_t i = 0; err == BATON_OK && i < n; i++) {
            char *path = xasprintf("%s/%s", dir, names[i]);
            char *data = NULL;
            size_t len = 0;
            struct Stat st;
            if (baton_zk_get(zc, path, 0, &data, &len, &st) == BATON_OK && strstr(data, id)) {
                ours++;
                czxid = st.czxid;
            }
            free(data);
            free(path);
        }
        int want = p == unassigned_p ? 0 : 1;
        if (err != BATON_OK || ours != want || (want && czxid != epochs[p])) {
            snprintf(why, whysz,
                     "partition %d: %d claims of ours (want %d), czxid %lld, epoch %lld, "
                     "error %s",
                     p, ours, want, (long long)czxid, (long long)epochs[p], baton_err_name(err));
            ok = 0;
        }
        baton_zk_strings_free(names, n);
        free(dir);
    }
    return ok;
}

int main(int argc, char **argv) {
    const char *zk = NULL, *group = NULL, *id = NULL;
    int nparts = 0;
    lose_left = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--zk") == 0)
            zk = argv[i + 1];
        else if (strcmp(argv[i], "--group") == 0)
            group = argv[i + 1];
        else if (strcmp(argv[i], "--id") == 0)
            id = argv[i + 1];
        else if (strcmp(argv[i], "--partitions") == 0)
            nparts = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--lose") == 0)
            lose_left = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--unassign-lost") == 0)
            unassign_lost = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--late-create") == 0)
            late_create = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--lose-delete") == 0)
            lose_delete = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: test_lost_create --zk HOSTS --group G --id ID "
                            "--partitions N [--lose K] [--unassign-lost 1] [--late-create 1] "
                            "[--lose-delete 1]\n");
            return 2;
        }
    }
    if (!zk || !group || !id || nparts <= 0 || nparts > MAXP) {
        fprintf(stderr,
                "test_lost_create: --zk, --group, --id and --partitions (1-%d) are "
                "required\n",
                MAXP);
        return 2;
    }
    g_group = group;
    g_id = id;
    g_nparts = nparts;
    baton_log_init("test_lost_create", id);
    baton_membership_conf_t mc = {.zk_hosts = zk,
                                  .root = "/baton",
                                  .group = group,
                                  .id = id,
                                  .capacity = 1,
                                  .session_timeout_ms = 4000,
                                  .connect_timeout_ms = 10000};
    baton_membership_cbs_t cbs = {.on_acquired = on_acquired, .on_released = on_released};
    baton_membership_t *m = NULL;
    char errstr[512];
    if (baton_membership_new(&mc, &cbs, &m, errstr, sizeof(errstr)) != BATON_OK) {
        fprintf(stderr, "test_lost_create: %s\n", errstr);
        return 1;
    }
    int rc = 1;
    /* An independent look at the claims, with a session of our own. */
    baton_zk_t *zc = NULL;
    if (baton_zk_connect(zk, 4000, 10000, NULL, &zc, errstr, sizeof(errstr)) != BATON_OK) {
        fprintf(stderr, "test_lost_create: %s\n", errstr);
        goto out;
    }
    char why[sizeof(errstr) + 64] = "not checked yet";
    int64_t deadline = baton_now_ms() + 30000, next_check = 0;
    while (baton_now_ms() < deadline) {
        int next_ms = 100;
        if (baton_membership_poll(m, &next_ms, errstr, sizeof(errstr)) != BATON_OK) {
            snprintf(why, sizeof(why), "poll: %s", errstr);
            break;
        }
        struct pollfd pfd = {.fd = baton_membership_fd(m), .events = POLLIN};
        poll(&pfd, 1, next_ms < 100 ? next_ms : 100);
        if (baton_now_ms() < next_check)
            continue;
        next_check = baton_now_ms() + 200;
        if (lose_delete > 0 && unassigned_p < 0 && acquired == nparts) {
            unassigned_p = nparts - 1; /* every partition acquired: release one */
            assignment_drop(baton_zk_handle(zc), unassigned_p);
        }
        if (lose_delete > 0)
            continue; /* the delete is still to be lost */
        if (claims_ok(zc, group, id, nparts, why, sizeof(why))) {
            rc = 0;
            break;
        }
    }
    baton_zk_destroy(zc);
    if (rc != 0) {
        fprintf(stderr, "test_lost_create: not settled: %s\n", why);
        goto out;
    }
    if (lost == 0 && deletes_lost == 0) {
        fprintf(stderr, "test_lost_create: no reply was lost: the test tested nothing\n");
        rc = 1;
        goto out;
    }
    printf("lost=%d deletes_lost=%d partitions=%d unassigned=%d claims=ok\n", lost, deletes_lost,
           nparts, unassigned_p);
out:
    baton_membership_leave(m);
    baton_membership_destroy(m);
    return rc;
}
