/* member_multi.c: several memberships in one process, each made from its
 * own baton_conf_t (the public header only), for it_libbaton_conf.sh:
 *
 *   member_multi --member [--set NAME=VALUE]... [--log FILE]
 *                [--member ...]...
 *
 * Each --member starts a new configuration; --set applies baton_conf_set
 * to it (a refused setting: the message on stderr, exit 2); --log gives it
 * a log callback that appends "L<level> <line>" to FILE. Every membership
 * is polled on this thread; each callback prints one line on stdout:
 *
 *   acquired id=ID key=K epoch=E       (or partition=P)
 *   released id=ID key=K reason=R
 *
 * SIGTERM/SIGINT: each leaves gracefully, exit 0; a fatal poll error or a
 * failed join: the message on stderr, exit 1. */
#include <baton/baton.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MEMBERS 8

typedef struct {
    baton_conf_t *conf;
    baton_membership_t *m;
    char id[160];
    FILE *log;
} member_t;

/* A usage error: frees what was made so far (LeakSanitizer checks even
 * this path), exit status 2. */
static int usage_exit(member_t *members, int n) {
    for (int i = 0; i < n; i++) {
        baton_conf_destroy(members[i].conf);
        if (members[i].log)
            fclose(members[i].log);
    }
    return 2;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static void print_res(const member_t *mb, const char *what, const baton_resource_t *r) {
    printf("%s id=%s ", what, mb->id);
    if (r->kind == BATON_RESOURCE_KEY)
        printf("key=%s", r->key);
    else
        printf("partition=%d", r->partition);
}

static int on_acquired(void *opaque, const baton_resource_t *r, int64_t epoch) {
    print_res(opaque, "acquired", r);
    printf(" epoch=%lld\n", (long long)epoch);
    fflush(stdout);
    return BATON_OK;
}

static void on_released(void *opaque, const baton_resource_t *r, baton_release_reason_t why) {
    print_res(opaque, "released", r);
    printf(" reason=%s\n", baton_release_reason_name(why));
    fflush(stdout);
}

/* May run on the ZooKeeper client's threads: one fprintf per line (stdio
 * locks the stream), flushed so the test sees it at once. */
static void on_log(void *opaque, int level, const char *line) {
    member_t *mb = opaque;
    fprintf(mb->log, "L%d %s\n", level, line);
    fflush(mb->log);
}

int main(int argc, char **argv) {
    member_t members[MAX_MEMBERS];
    int n = 0;
    char err[512];
    memset(members, 0, sizeof(members));
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--member") == 0) {
            if (n == MAX_MEMBERS) {
                fprintf(stderr, "member_multi: at most %d members\n", MAX_MEMBERS);
                return usage_exit(members, n);
            }
            members[n].conf = baton_conf_new();
            baton_conf_set_acquired_cb(members[n].conf, on_acquired);
            baton_conf_set_released_cb(members[n].conf, on_released);
            baton_conf_set_opaque(members[n].conf, &members[n]);
            n++;
        } else if (n > 0 && i + 1 < argc && strcmp(argv[i], "--set") == 0) {
            char *eq = strchr(argv[++i], '=');
            if (!eq) {
                fprintf(stderr, "member_multi: --set NAME=VALUE\n");
                return usage_exit(members, n);
            }
            *eq = 0;
            if (baton_conf_set(members[n - 1].conf, argv[i], eq + 1, err, sizeof(err)) !=
                BATON_OK) {
                fprintf(stderr, "member_multi: %s\n", err);
                return usage_exit(members, n);
            }
        } else if (n > 0 && i + 1 < argc && strcmp(argv[i], "--log") == 0) {
            if (!(members[n - 1].log = fopen(argv[++i], "a"))) {
                perror(argv[i]);
                return usage_exit(members, n);
            }
            baton_conf_set_log_cb(members[n - 1].conf, on_log, &members[n - 1]);
        } else {
            fprintf(stderr, "usage: member_multi --member [--set NAME=VALUE]... [--log FILE] "
                            "[--member ...]...\n");
            return usage_exit(members, n);
        }
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        baton_conf_get(members[i].conf, "worker.id", members[i].id, sizeof(members[i].id));
        if (baton_membership_new_conf(members[i].conf, &members[i].m, err, sizeof(err)) !=
            BATON_OK) {
            fprintf(stderr, "member_multi: %s: %s\n", members[i].id, err);
            rc = 1;
        }
        /* The membership keeps its own copy. */
        baton_conf_destroy(members[i].conf);
        members[i].conf = NULL;
    }
    while (!stop && rc == 0) {
        struct pollfd pfd[MAX_MEMBERS];
        for (int i = 0; i < n; i++)
            pfd[i] = (struct pollfd){.fd = baton_membership_fd(members[i].m), .events = POLLIN};
        poll(pfd, (nfds_t)n, 100);
        for (int i = 0; i < n && rc == 0; i++)
            if (baton_membership_poll(members[i].m, NULL, err, sizeof(err)) != BATON_OK) {
                fprintf(stderr, "member_multi: %s: %s\n", members[i].id, err);
                rc = 1;
            }
    }
    for (int i = 0; i < n; i++) {
        if (rc == 0 && members[i].m)
            baton_membership_leave(members[i].m);
        baton_membership_destroy(members[i].m);
        baton_conf_destroy(members[i].conf);
        if (members[i].log)
            fclose(members[i].log);
    }
    return rc;
}
