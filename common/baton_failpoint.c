/* baton_failpoint.c: parsing and firing of BATON_FAILPOINTS. */
#include "baton_failpoint.h"

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { FP_STOP, FP_ABORT, FP_EXIT, FP_SLEEP } fp_action_t;

typedef struct {
    char name[64];
    int64_t skip;
    fp_action_t action;
    int64_t sleep_ms;
    int hits;
    int fired;
} failpoint_t;

#define MAX_FAILPOINTS 32

int baton_failpoints_armed = 0;
static failpoint_t fps[MAX_FAILPOINTS];
static int nfps = 0;
static pthread_mutex_t fp_lock = PTHREAD_MUTEX_INITIALIZER;

static int parse_one(const char *entry, failpoint_t *fp, char *errstr, size_t n) {
    const char *eq = strchr(entry, '=');
    if (!eq || eq == entry || (size_t)(eq - entry) >= sizeof(fp->name))
        return baton_seterr(errstr, n, BATON_INVALID, "failpoint '%s': expected name=[SKIP:]ACTION",
                            entry);
    memset(fp, 0, sizeof(*fp));
    memcpy(fp->name, entry, (size_t)(eq - entry));
    const char *act = eq + 1;
    const char *colon = strchr(act, ':');
    if (colon) {
        char num[32];
        size_t len = (size_t)(colon - act);
        if (len == 0 || len >= sizeof(num))
            return baton_seterr(errstr, n, BATON_INVALID, "failpoint '%s': bad skip count", entry);
        memcpy(num, act, len);
        num[len] = 0;
        if (baton_parse_i64(num, 0, 1000000000, &fp->skip) != 0)
            return baton_seterr(errstr, n, BATON_INVALID, "failpoint '%s': bad skip count '%s'",
                                entry, num);
        act = colon + 1;
    }
    if (strcmp(act, "stop") == 0)
        fp->action = FP_STOP;
    else if (strcmp(act, "abort") == 0)
        fp->action = FP_ABORT;
    else if (strcmp(act, "exit") == 0)
        fp->action = FP_EXIT;
    else if (strncmp(act, "sleep-", 6) == 0 &&
             baton_parse_i64(act + 6, 0, 86400000, &fp->sleep_ms) == 0)
        fp->action = FP_SLEEP;
    else
        return baton_seterr(errstr, n, BATON_INVALID,
                            "failpoint '%s': unknown action '%s' (stop, abort, exit, sleep-MS)",
                            entry, act);
    return BATON_OK;
}

int baton_failpoints_parse(const char *spec, char *errstr, size_t n) {
    failpoint_t parsed[MAX_FAILPOINTS];
    int count = 0;
    char *copy = xstrdup(spec ? spec : "");
    char *save = NULL;
    int err = BATON_OK;
    for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        if (!*tok)
            continue;
        if (count == MAX_FAILPOINTS) {
            err = baton_seterr(errstr, n, BATON_INVALID, "too many failpoints (max %d)",
                               MAX_FAILPOINTS);
            break;
        }
        if ((err = parse_one(tok, &parsed[count], errstr, n)) != BATON_OK)
            break;
        count++;
    }
    free(copy);
    if (err != BATON_OK)
        return err;
    pthread_mutex_lock(&fp_lock);
    memcpy(fps, parsed, sizeof(failpoint_t) * (size_t)count);
    nfps = count;
    baton_failpoints_armed = count > 0;
    pthread_mutex_unlock(&fp_lock);
    return BATON_OK;
}

int baton_failpoints_init(char *errstr, size_t n) {
    const char *spec = getenv("BATON_FAILPOINTS");
    if (!spec || !*spec)
        return BATON_OK;
    int err = baton_failpoints_parse(spec, errstr, n);
    if (err == BATON_OK)
        BLOG_INFO("event=failpoints_armed spec=\"%s\"", baton_log_q(spec));
    return err;
}

void baton_failpoint_hit(const char *name) {
    failpoint_t fire;
    int due = 0;
    pthread_mutex_lock(&fp_lock);
    for (int i = 0; i < nfps; i++) {
        if (strcmp(fps[i].name, name) != 0)
            continue;
        fps[i].hits++;
        if (!fps[i].fired && fps[i].hits == fps[i].skip + 1) {
            fps[i].fired = 1;
            fire = fps[i];
            due = 1;
        }
    }
    pthread_mutex_unlock(&fp_lock);
    if (!due)
        return;
    switch (fire.action) {
    case FP_STOP:
        BLOG_WARN("event=failpoint name=%s action=stop", baton_log_v(name));
        raise(SIGSTOP);
        BLOG_WARN("event=failpoint_resumed name=%s", baton_log_v(name));
        break;
    case FP_ABORT: BLOG_WARN("event=failpoint name=%s action=abort", baton_log_v(name)); abort();
    case FP_EXIT: BLOG_WARN("event=failpoint name=%s action=exit", baton_log_v(name)); _exit(99);
    case FP_SLEEP:
        BLOG_WARN("event=failpoint name=%s action=sleep ms=%lld", baton_log_v(name),
                  (long long)fire.sleep_ms);
        baton_sleep_ms(fire.sleep_ms);
        break;
    }
}

int baton_failpoint_hits(const char *name) {
    int hits = 0;
    pthread_mutex_lock(&fp_lock);
    for (int i = 0; i < nfps; i++)
        if (strcmp(fps[i].name, name) == 0)
            hits = fps[i].hits;
    pthread_mutex_unlock(&fp_lock);
    return hits;
}
