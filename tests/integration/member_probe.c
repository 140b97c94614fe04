/* member_probe.c: a member-library client for the integration tests. It
 * joins a group through the public header only (include/baton/baton.h) and
 * prints one line per callback on stdout:
 *
 *   assigned key=K assigned=1 own_thread=1    (on_assigned, before the claim)
 *   acquired key=K epoch=E own_thread=1      (or partition=P)
 *   released key=K reason=revoked own_thread=1
 *
 * own_thread says the callback ran on the thread that created the member
 * (the header's promise). SIGTERM/SIGINT: graceful leave, exit 0; a fatal
 * poll error: exit 1.
 *
 *   member_probe --zk HOSTS --group G --id ID [--key K]... [--keys-only]
 *                [--session-timeout-ms N] */
#include <baton/baton.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop;
static pthread_t owner;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static void print_res(const baton_resource_t *r) {
    if (r->kind == BATON_RESOURCE_KEY)
        printf("key=%s", r->key);
    else
        printf("partition=%d", r->partition);
}

static int on_acquired(void *opaque, const baton_resource_t *r, int64_t epoch) {
    baton_membership_t **m = opaque;
    printf("acquired ");
    print_res(r);
    printf(" epoch=%lld own_thread=%d valid=%d\n", (long long)epoch,
           pthread_equal(owner, pthread_self()) != 0, *m ? baton_epoch_valid(*m, r, epoch) : -1);
    fflush(stdout);
    return BATON_OK;
}

static void on_assigned(void *opaque, const baton_resource_t *rs, size_t n) {
    baton_membership_t **m = opaque;
    for (size_t i = 0; i < n; i++) {
        printf("assigned ");
        print_res(&rs[i]);
        printf(" assigned=%d own_thread=%d\n", *m ? baton_membership_assigned(*m, &rs[i]) : -1,
               pthread_equal(owner, pthread_self()) != 0);
    }
    fflush(stdout);
}

static void on_released(void *opaque, const baton_resource_t *r, baton_release_reason_t why) {
    (void)opaque;
    printf("released ");
    print_res(r);
    printf(" reason=%s own_thread=%d\n", baton_release_reason_name(why),
           pthread_equal(owner, pthread_self()) != 0);
    fflush(stdout);
}

int main(int argc, char **argv) {
    baton_membership_conf_t conf = {.root = "/baton"};
    const char *keys[64];
    size_t nkeys = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--zk") && v)
            conf.zk_hosts = argv[++i];
        else if (!strcmp(a, "--group") && v)
            conf.group = argv[++i];
        else if (!strcmp(a, "--id") && v)
            conf.id = argv[++i];
        else if (!strcmp(a, "--key") && v && nkeys < 64)
            keys[nkeys++] = argv[++i];
        else if (!strcmp(a, "--keys-only"))
            conf.no_partitions = 1;
        else if (!strcmp(a, "--session-timeout-ms") && v)
            conf.session_timeout_ms = atoi(argv[++i]);
        else {
            fprintf(stderr, "member_probe: bad argument '%s'\n", a);
            return 2;
        }
    }
    if (nkeys) {
        conf.keys = keys;
        conf.nkeys = nkeys;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    owner = pthread_self();
    baton_membership_t *m = NULL;
    baton_membership_cbs_t cbs = {.on_acquired = on_acquired,
                                  .on_released = on_released,
                                  .opaque = &m,
                                  .on_assigned = on_assigned};
    char err[512];
    int rc = baton_membership_new(&conf, &cbs, &m, err, sizeof(err));
    if (rc != BATON_OK) {
        fprintf(stderr, "member_probe: %s (%s)\n", err, baton_err_name(rc));
        return 1;
    }
    printf("joined id=%s\n", conf.id);
    fflush(stdout);
    while (!stop) {
        rc = baton_membership_wait(m, 200, err, sizeof(err));
        if (rc != BATON_OK) {
            fprintf(stderr, "member_probe: %s\n", err);
            baton_membership_destroy(m);
            return 1;
        }
    }
    baton_membership_leave(m);
    baton_membership_destroy(m);
    printf("left\n");
    return 0;
}
