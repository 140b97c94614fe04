/* ctl_watch.c: `batonctl watch`: the status view, redrawn whenever the group
 * changes. Change detection is ZooKeeper watches, not polling: one-shot
 * watches on the workers, coordinators, drains and pins directories, on the
 * assignment and config nodes and on every partition's claims directory,
 * each re-armed (before the status is read again) when it fires. On a
 * terminal the screen is redrawn and 'q' or Ctrl-C quits (the terminal is
 * in cbreak mode meanwhile and restored on exit); otherwise one status
 * object is printed per change as a JSON line. */
#include "ctl.h"
#include "ctl_status.h"

#include "baton_err.h"
#include "baton_group.h"
#include "baton_layout.h"
#include "baton_opts.h"
#include "baton_signal.h"
#include "baton_util.h"
#include "baton_zkbatch.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* Events arriving this soon after one are folded into the same refresh, so
 * a rebalance that touches 100 claims redraws once or twice, not 100 times. */
#define WATCH_SETTLE_MS 50
/* After a failed refresh (a connection loss, Kafka down), try again this
 * soon even without an event. */
#define WATCH_RETRY_MS 1000

/* ---- arming watches ---------------------------------------------------- */

/* Leaves a watch on each path: a children watch (children != 0) or an
 * exists watch (data changes, creation, deletion). A children watch on a
 * node that does not exist becomes an exists watch, so its creation is seen.
 * Returns when every registration has completed (baton_zkbatch, pipelined). */
static void watches_arm(baton_zk_t *zk, char *const *paths, const int *children, size_t n) {
    char **dirs = xcalloc(n ? n : 1, sizeof(char *)), **nodes = xcalloc(n ? n : 1, sizeof(char *));
    size_t nd = 0, nn = 0;
    for (size_t i = 0; i < n; i++)
        if (children[i])
            dirs[nd++] = paths[i];
        else
            nodes[nn++] = paths[i];
    baton_zkread_t *r = xcalloc(n ? n : 1, sizeof(*r));
    baton_zkbatch_watch_children(zk, dirs, nd, r);
    for (size_t i = 0; i < nd; i++)
        if (r[i].err == BATON_NOTFOUND)
            nodes[nn++] = dirs[i];
    for (size_t i = 0; i < nd; i++)
        baton_zkread_release(&r[i]);
    baton_zkbatch_watch_exists(zk, nodes, nn, r);
    for (size_t i = 0; i < nn; i++)
        baton_zkread_release(&r[i]);
    free(r);
    free(dirs);
    free(nodes);
}

/* Is path one we watch for its children (else for its data)? */
static int path_is_dir(const char *base, const char *path) {
    size_t blen = strlen(base);
    if (strncmp(path, base, blen) != 0)
        return 0;
    const char *rest = path + blen;
    size_t rlen = strlen(rest);
    return strcmp(rest, "/workers") == 0 || strcmp(rest, "/coordinators") == 0 ||
           strcmp(rest, "/drains") == 0 || strcmp(rest, "/pins") == 0 ||
           (rlen > 7 && strcmp(rest + rlen - 7, "/claims") == 0);
}

/* Every watch of a group with P partitions. */
static void watches_arm_all(baton_zk_t *zk, const char *base, int32_t P) {
    static char *(*const dirs[])(const char *) = {baton_layout_workers, baton_layout_coordinators,
                                                  baton_layout_drains, baton_layout_pins};
    static char *(*const nodes[])(const char *) = {baton_layout_assignment, baton_layout_config};
    size_t n = BATON_ARRAY_SIZE(dirs) + BATON_ARRAY_SIZE(nodes) + (size_t)P;
    char **paths = xcalloc(n, sizeof(char *));
    int *kids = xcalloc(n, sizeof(int));
    size_t k = 0;
    for (size_t i = 0; i < BATON_ARRAY_SIZE(dirs); i++, k++) {
        paths[k] = dirs[i](base);
        kids[k] = 1;
    }
    for (size_t i = 0; i < BATON_ARRAY_SIZE(nodes); i++, k++)
        paths[k] = nodes[i](base);
    for (int32_t p = 0; p < P; p++, k++) {
        paths[k] = baton_layout_partition_claims(base, p);
        kids[k] = 1;
    }
    watches_arm(zk, paths, kids, n);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    free(kids);
}

/* ---- the terminal ------------------------------------------------------ */

static struct termios saved_tio;
static int tio_saved;

static void tty_restore(void) {
    if (tio_saved) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
        tio_saved = 0;
    }
}

/* cbreak: keys arrive one by one without echo; Ctrl-C still signals. */
static void tty_cbreak(void) {
    struct termios t;
    if (tcgetattr(STDIN_FILENO, &saved_tio) != 0)
        return;
    tio_saved = 1;
    atexit(tty_restore);
    t = saved_tio;
    t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &t);
}

/* ---- the command ------------------------------------------------------- */

void ctl_watch_usage(FILE *f) {
    fprintf(f,
            "usage: %s --zk HOSTS --group G watch [--json] [--partition LIST] [--worker W]\n"
            "                [--brokers B --sink URI] [--max-updates N] [--duration-ms N]\n"
            "\n"
            "The status view, refreshed whenever the group changes: a worker joins or\n"
            "leaves, a coordinator takes over, an assignment is published, a claim is\n"
            "made or released, a drain or pin is set. Changes come from ZooKeeper\n"
            "watches (re-armed as they fire), not from polling; bursts within %d ms\n"
            "make one refresh. Lag (with --brokers and --sink) is read at each refresh.\n"
            "A refresh that shows nothing new (only the generation, the clock or the\n"
            "ages differ: a publish that moved nothing) prints no view.\n"
            "\n"
            "On a terminal the screen is redrawn; press q (or Ctrl-C) to quit. When\n"
            "stdout is not a terminal, or with --json, every refresh prints the whole\n"
            "status object (as 'status --json', filters applied) on one line.\n"
            "Exit 0 on q, Ctrl-C, SIGTERM or a bound below; 1 if the group cannot be\n"
            "read or the ZooKeeper session is lost for longer than --timeout.\n"
            "\n"
            "  --json              JSON lines even on a terminal\n"
            "  --partition LIST    only these partitions: 7, 0-9 or 1,5,8\n"
            "  --worker W          only what W owns, is assigned or pinned to\n"
            "  --brokers B --sink URI [--kafka KEY=VALUE]   lag, as in 'status'\n"
            "  --max-updates N     exit after printing N views (the first included)\n"
            "  --duration-ms N     exit after N ms\n"
            "\n"
            "examples:\n"
            "  %s --zk 127.0.0.1:2181 --group orders watch\n"
            "  %s --zk 127.0.0.1:2181 --group orders watch --worker w2\n"
            "  %s --zk 127.0.0.1:2181 --group orders watch --max-updates 5 \\\n"
            "      | jq -c '[.partitions[] | {partition, owner, epoch}]'\n",
            CTL_PROG, WATCH_SETTLE_MS, CTL_PROG, CTL_PROG, CTL_PROG);
}

/* What an operator sees of a view, less what changes without the group
 * changing: the read's clock (time_ms), ages computed from it, and the
 * generation number. A publish that moves nothing (the coordinator's
 * debounced follow-up of a leave, say) then makes no new view; a new owner,
 * epoch, state, standby, worker, drain, pin or lag does. A new reference. */
static json_t *watch_face(const json_t *st) {
    json_t *f = json_deep_copy(st);
    json_object_del(f, "time_ms");
    json_object_del(f, "generation");
    static const char *const rows[] = {"workers", "partitions"};
    for (size_t r = 0; r < BATON_ARRAY_SIZE(rows); r++) {
        size_t i;
        json_t *row;
        json_array_foreach(json_object_get(f, rows[r]), i, row) {
            json_object_del(row, "session_age_ms");
            json_object_del(row, "state_age_ms");
        }
    }
    return f;
}

/* Renders one refresh. */
static void watch_render(const json_t *st, int as_json, int64_t n) {
    if (as_json) {
        json_dumpf(st, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
    } else {
        char when[32];
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(when, sizeof(when), "%H:%M:%S", &tm);
        /* Home and clear, then the view; q quits. */
        fputs("\033[H\033[2J", stdout);
        printf("batonctl watch: update %lld at %s (q to quit)\n\n", (long long)n, when);
        ctl_status_print_human(st, stdout);
    }
    fflush(stdout);
}

int ctl_cmd_watch(ctl_ctx_t *ctx, int argc, char **argv) {
    ctl_view_opts_t o;
    ctl_view_parse(ctx, &o, argc, argv,
                   CTL_VIEW_KAFKA | CTL_VIEW_SINK | CTL_VIEW_FILTER | CTL_VIEW_WATCH,
                   ctl_watch_usage);
    int as_json = o.as_json || !isatty(STDOUT_FILENO);
    int keys = isatty(STDIN_FILENO) && !o.as_json && isatty(STDOUT_FILENO);
    int stop_fd = baton_signal_init();
    int rc = BATON_EXIT_FAILURE;
    char errstr[1024];
    char *base = baton_group_base(ctx->root, ctx->group);
    char **fired = NULL;  /* paths whose watch fired: re-arm them */
    json_t *shown = NULL; /* watch_face of the last view printed */
    size_t nfired = 0;
    baton_zk_t *zk = ctl_connect(ctx);
    if (!zk)
        goto out;
    baton_config_t cfg;
    int err = ctl_config_read(zk, ctx->group, base, &cfg, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
        goto out;
    }
    int32_t P = cfg.partitions;
    if (keys)
        tty_cbreak();

    int64_t start = baton_now_ms(), updates = 0, retry_at = -1;
    int rearm_all = 1, dirty = 1, disconnected = 0;
    for (;;) {
        /* Re-arm first, then read: a change after the re-arm fires again. */
        if (rearm_all) {
            watches_arm_all(zk, base, P);
            rearm_all = 0;
            for (size_t i = 0; i < nfired; i++)
                free(fired[i]);
            nfired = 0;
        } else if (nfired) {
            int *kids = xcalloc(nfired, sizeof(int));
            for (size_t i = 0; i < nfired; i++)
                kids[i] = path_is_dir(base, fired[i]);
            watches_arm(zk, fired, kids, nfired);
            free(kids);
            for (size_t i = 0; i < nfired; i++)
                free(fired[i]);
            nfired = 0;
        }
        if (dirty && !disconnected) {
            json_t *st = NULL;
            err = ctl_view_gather(zk, ctx, &o, &st, errstr, sizeof(errstr));
            if (err == BATON_OK) {
                dirty = 0;
                retry_at = -1;
                json_t *face = watch_face(st);
                int same = shown && json_equal(face, shown);
                json_decref(shown);
                shown = face;
                if (!same) {
                    updates++;
                    watch_render(st, as_json, updates);
                }
                int32_t nowP = (int32_t)json_integer_value(
                    json_object_get(json_object_get(st, "config"), "partitions"));
                if (nowP > P) { /* the group grew: watch the new claims too */
                    P = nowP;
                    rearm_all = 1;
                }
                json_decref(st);
                if (o.max_updates && updates >= o.max_updates) {
                    rc = BATON_EXIT_OK;
                    goto out;
                }
            } else if (updates == 0 && !baton_err_is_retriable(err)) {
                fprintf(stderr, "%s: %s\n", CTL_PROG, errstr);
                goto out;
            } else {
                fprintf(stderr, "%s: refresh failed (retrying): %s\n", CTL_PROG, errstr);
                retry_at = baton_now_ms() + WATCH_RETRY_MS;
            }
        }

        /* Wait for a change, a key, a signal or a bound. */
        int64_t now = baton_now_ms();
        int timeout = -1;
        if (o.duration_ms) {
            int64_t left = start + o.duration_ms - now;
            if (left <= 0) {
                rc = BATON_EXIT_OK;
                goto out;
            }
            timeout = left > 600000 ? 600000 : (int)left;
        }
        if (retry_at >= 0) {
            int64_t d = retry_at - now;
            d = d < 0 ? 0 : d;
            timeout = timeout < 0 || d < timeout ? (int)d : timeout;
        }
        struct pollfd pfd[3] = {
            {.fd = baton_zk_fd(zk), .events = POLLIN},
            {.fd = stop_fd, .events = POLLIN},
            {.fd = keys ? STDIN_FILENO : -1, .events = POLLIN},
        };
        int pr = poll(pfd, 3, timeout);
        if (pr < 0 && errno != EINTR) {
            fprintf(stderr, "%s: poll: %s\n", CTL_PROG, strerror(errno));
            goto out;
        }
        if (baton_signal_stop_requested()) {
            rc = BATON_EXIT_OK;
            goto out;
        }
        if (keys && (pfd[2].revents & (POLLIN | POLLHUP))) {
            char c = 0;
            ssize_t r = read(STDIN_FILENO, &c, 1);
            if (r <= 0 || c == 'q' || c == 'Q') {
                rc = BATON_EXIT_OK;
                goto out;
            }
        }
        if (retry_at >= 0 && baton_now_ms() >= retry_at)
            dirty = 1;
        if (!(pfd[0].revents & POLLIN))
            continue;
        /* Let a burst settle, then take every queued event. */
        baton_sleep_ms(WATCH_SETTLE_MS);
        baton_zk_event_t ev;
        while (baton_zk_next_event(zk, &ev)) {
            if (ev.type == ZOO_SESSION_EVENT) {
                if (ev.state == ZOO_EXPIRED_SESSION_STATE || ev.state == ZOO_AUTH_FAILED_STATE) {
                    fprintf(stderr,
                            "%s: watch: the ZooKeeper session expired (unreachable for longer "
                            "than --timeout %d ms)\n",
                            CTL_PROG, ctx->timeout_ms);
                    baton_zk_event_release(&ev);
                    goto out;
                }
                if (ev.state == ZOO_CONNECTING_STATE)
                    disconnected = 1;
                if (ev.state == ZOO_CONNECTED_STATE && disconnected) {
                    /* Watches may have fired while we were away: re-read. */
                    disconnected = 0;
                    rearm_all = 1;
                    dirty = 1;
                }
            } else if (ev.path && ev.path[0]) {
                fired = xrealloc(fired, (nfired + 1) * sizeof(char *));
                fired[nfired++] = xstrdup(ev.path);
                dirty = 1; /* a grown partition count is seen by the gather */
            }
            baton_zk_event_release(&ev);
        }
    }
out:
    json_decref(shown);
    tty_restore();
    if (fired) {
        for (size_t i = 0; i < nfired; i++)
            free(fired[i]);
        free(fired);
    }
    baton_zk_destroy(zk);
    free(base);
    ctl_view_opts_release(&o);
    return rc;
}
