/* member_counter.c: an example application of the member library
 * (baton/baton.h) against a tiny fenced resource (baton/fence.h): members
 * of a group share one counter in a state file, and the member that owns
 * the named key increments it every --interval-ms. Run two or three; kill
 * the owner; another one continues the count from where the file says,
 * with a higher epoch -- and a paused old owner can never overwrite it.
 *
 *   batonctl --zk 127.0.0.1:2181 --group demo init --keys counter
 *   member_counter --zk 127.0.0.1:2181 --group demo --key counter --id a \
 *       --state /tmp/counter.state &
 *   member_counter ... --id b --state /tmp/counter.state &
 *
 * Only public headers are used: this is what an application would write. */
#include <baton/baton.h>
#include <baton/fence.h>

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *state; /* the fenced state file */
    int owned;         /* between on_acquired and on_released */
    int64_t epoch;     /* our ownership's epoch while owned */
    long long value;   /* the counter as we last read or wrote it */
} counter_t;

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

/* We own the key: fence the file first (from now on the previous owner's
 * writes are refused), then read the value we continue from. */
static int on_acquired(void *opaque, const baton_resource_t *r, int64_t epoch) {
    counter_t *c = opaque;
    char err[256], *data = NULL;
    int64_t stored;
    int rc = baton_fence_file_fence(c->state, epoch, err, sizeof(err));
    if (rc == BATON_OK)
        rc = baton_fence_file_read(c->state, &stored, &data, NULL, err, sizeof(err));
    if (rc != BATON_OK) {
        fprintf(stderr, "member_counter: %s\n", err);
        free(data);
        return rc; /* BATON_STALE: give the key up; anything else: asked again later */
    }
    c->value = strtoll(data, NULL, 10);
    free(data);
    c->owned = 1;
    c->epoch = epoch;
    printf("acquired key=%s epoch=%" PRId64 " value=%lld\n", r->key, epoch, c->value);
    fflush(stdout);
    return BATON_OK;
}

static void on_released(void *opaque, const baton_resource_t *r, baton_release_reason_t why) {
    counter_t *c = opaque;
    c->owned = 0;
    printf("released key=%s epoch=%" PRId64 " reason=%s\n", r->key, c->epoch,
           baton_release_reason_name(why));
    fflush(stdout);
}

static void usage(FILE *f) {
    fprintf(f, "usage: member_counter --zk HOSTS --group G --key KEY --id ID --state FILE\n"
               "                      [--count N] [--interval-ms MS] [--session-timeout-ms MS]\n"
               "                      [--set NAME=VALUE]...\n"
               "Increments the counter in FILE while this member owns KEY; exits after N\n"
               "increments (default: never) or on SIGTERM/SIGINT, leaving the group.\n"
               "--set passes any setting of the library's configuration (baton/baton.h,\n"
               "baton_conf_set), e.g. --set zookeeper.auth.file=FILE --set rack=r1.\n");
}

int main(int argc, char **argv) {
    const char *zk = NULL, *group = NULL, *key = NULL, *id = NULL, *state = NULL;
    long count = -1, interval_ms = 100, session_ms = 4000;
    char *sets[32];
    int nsets = 0;
    static const struct option lo[] = {
        {"zk", required_argument, NULL, 'z'},
        {"group", required_argument, NULL, 'g'},
        {"key", required_argument, NULL, 'k'},
        {"id", required_argument, NULL, 'i'},
        {"state", required_argument, NULL, 's'},
        {"count", required_argument, NULL, 'c'},
        {"interval-ms", required_argument, NULL, 'm'},
        {"session-timeout-ms", required_argument, NULL, 't'},
        {"set", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (opt) {
        case 'z': zk = optarg; break;
        case 'g': group = optarg; break;
        case 'k': key = optarg; break;
        case 'i': id = optarg; break;
        case 's': state = optarg; break;
        case 'c': count = strtol(optarg, NULL, 10); break;
        case 'm': interval_ms = strtol(optarg, NULL, 10); break;
        case 't': session_ms = strtol(optarg, NULL, 10); break;
        case 'S':
            if (nsets == 32 || !strchr(optarg, '=')) {
                usage(stderr);
                return 2;
            }
            sets[nsets++] = optarg;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!zk || !group || !key || !id || !state || optind < argc || interval_ms < 1) {
        usage(stderr);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    counter_t c = {.state = state};
    /* The configuration: settings by name (a bad one is an error naming
     * it), then the callbacks. */
    char err[512], timeout[32];
    snprintf(timeout, sizeof(timeout), "%ld", session_ms);
    const char *keys[] = {key};
    baton_conf_t *conf = baton_conf_new();
    int rc = baton_conf_set(conf, "zookeeper.connect", zk, err, sizeof(err));
    if (rc == BATON_OK)
        rc = baton_conf_set(conf, "group", group, err, sizeof(err));
    if (rc == BATON_OK)
        rc = baton_conf_set(conf, "worker.id", id, err, sizeof(err));
    if (rc == BATON_OK)
        rc = baton_conf_set(conf, "session.timeout.ms", timeout, err, sizeof(err));
    if (rc == BATON_OK) /* a keys-only member for KEY */
        rc = baton_conf_set(conf, "no.partitions", "true", err, sizeof(err));
    if (rc == BATON_OK)
        rc = baton_conf_set_keys(conf, keys, 1, err, sizeof(err));
    for (int i = 0; i < nsets && rc == BATON_OK; i++) {
        char *eq = strchr(sets[i], '=');
        *eq = '\0';
        rc = baton_conf_set(conf, sets[i], eq + 1, err, sizeof(err));
    }
    if (rc != BATON_OK) {
        fprintf(stderr, "member_counter: %s\n", err);
        baton_conf_destroy(conf);
        return 2;
    }
    baton_conf_set_acquired_cb(conf, on_acquired);
    baton_conf_set_released_cb(conf, on_released);
    baton_conf_set_opaque(conf, &c);
    baton_membership_t *m;
    rc = baton_membership_new_conf(conf, &m, err, sizeof(err));
    baton_conf_destroy(conf); /* the membership keeps its own copy */
    if (rc != BATON_OK) {
        fprintf(stderr, "member_counter: %s\n", err);
        return 1;
    }
    baton_resource_t res = {.kind = BATON_RESOURCE_KEY, .partition = -1, .key = key};
    while (!stop && count != 0) {
        /* Callbacks run in here, on this thread. */
        if (baton_membership_wait(m, (int)interval_ms, err, sizeof(err)) != BATON_OK) {
            fprintf(stderr, "member_counter: %s\n", err);
            rc = 1;
            break;
        }
        /* The library's check saves a write the fence would refuse anyway. */
        if (!c.owned || !baton_epoch_valid(m, &res, c.epoch))
            continue;
        char buf[32];
        int len = snprintf(buf, sizeof(buf), "%lld\n", c.value + 1);
        int w = baton_fence_file_write(state, c.epoch, buf, (size_t)len, err, sizeof(err));
        if (w == BATON_STALE) {
            /* A newer owner wrote: we are a zombie; let the key go. */
            fprintf(stderr, "member_counter: %s\n", err);
            baton_membership_drop(m, &res);
            c.owned = 0;
            continue;
        }
        if (w != BATON_OK) {
            fprintf(stderr, "member_counter: %s\n", err);
            continue;
        }
        c.value++;
        printf("count value=%lld epoch=%" PRId64 "\n", c.value, c.epoch);
        fflush(stdout);
        if (count > 0)
            count--;
    }
    baton_membership_leave(m); /* on_released(LEAVE), claim and member node deleted */
    baton_membership_destroy(m);
    return rc;
}
