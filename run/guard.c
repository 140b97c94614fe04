/* guard.c: baton-run's guardian (guard.h). */
#include "guard.h"

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* One message on the pipe: 8 bytes, written whole (atomic, < PIPE_BUF). */
typedef struct {
    int32_t op; /* GUARD_STARTED, GUARD_FORGET */
    int32_t sid;
} guard_msg_t;

enum { GUARD_STARTED = 1, GUARD_FORGET = 2 };

/* The sessions the guardian watches: one per command not yet forgotten
 * (one at a time, a second while a restart overlaps the drain). */
#define GUARD_MAX 64
/* How long the guardian keeps sweeping a session that keeps forking. */
#define GUARD_SWEEP_MS 5000

static int guard_wfd = -1;
static pid_t guard_pid;

/* One pass over /proc: SIGKILL to every live process of session sid.
 * Returns how many were found. */
static int guard_sweep(pid_t sid) {
    int found = 0;
    kill(-sid, SIGKILL); /* the group first: one call, whatever it holds */
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1 || pid == (long)getpid())
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = 0;
        /* "pid (comm) state ppid pgrp session ...": comm may hold anything. */
        char *rp = strrchr(buf, ')');
        char state;
        int ppid, pgrp, session;
        if (!rp || sscanf(rp + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) != 4)
            continue;
        if (session != sid || state == 'Z' || state == 'X')
            continue;
        kill((pid_t)pid, SIGKILL);
        found++;
    }
    closedir(d);
    return found;
}

/* Kills everything of session sid, sweeping until nothing of it is left
 * (a process forking while it is killed) or GUARD_SWEEP_MS. */
static void guard_kill_session(pid_t sid) {
    int64_t t0 = baton_now_ms();
    int first = guard_sweep(sid), left = first;
    while (left > 0 && baton_now_ms() - t0 < GUARD_SWEEP_MS) {
        baton_sleep_ms(1);
        left = guard_sweep(sid);
    }
    if (first > 0)
        BLOG_WARN("event=guardian_killed reason=runner_gone session=%d processes=%d "
                  "left=%d took_ms=%lld",
                  (int)sid, first, left, (long long)(baton_now_ms() - t0));
}

/* Reads one whole message; 0 on EOF (or an error: nothing more will come). */
static int guard_read(int fd, guard_msg_t *m) {
    size_t got = 0;
    while (got < sizeof(*m)) {
        ssize_t r = read(fd, (char *)m + got, sizeof(*m) - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
    return 1;
}

static _Noreturn void guard_main(int rfd) {
    prctl(PR_SET_NAME, "baton-run-guard");
    /* Signals meant for baton-run (a terminal's ^C, a unit's stop) are not
     * for us: we go when baton-run goes. SIGKILL still works. */
    static const int ign[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < BATON_ARRAY_SIZE(ign); i++)
        signal(ign[i], SIG_IGN);
    /* Nothing of baton-run's but stderr (the log) and our pipe. */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    if (rfd != 3) {
        dup2(rfd, 3);
        rfd = 3;
    }
    close_range(4, ~0U, 0);
    pid_t live[GUARD_MAX];
    size_t nlive = 0;
    guard_msg_t m;
    while (guard_read(rfd, &m)) {
        size_t i = 0;
        while (i < nlive && live[i] != m.sid)
            i++;
        if (m.op == GUARD_STARTED && i == nlive && m.sid > 1) {
            if (nlive == GUARD_MAX) /* cannot happen: forget the oldest */
                memmove(live, live + 1, --nlive * sizeof(live[0]));
            live[nlive++] = m.sid;
        } else if (m.op == GUARD_FORGET && i < nlive) {
            live[i] = live[--nlive];
        }
    }
    for (size_t i = 0; i < nlive; i++)
        guard_kill_session(live[i]);
    _exit(0);
}

int run_guard_start(char *errstr, size_t n) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        baton_seterr(errstr, n, BATON_INTERNAL, "guardian pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        baton_seterr(errstr, n, BATON_INTERNAL, "guardian fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[1]);
        guard_main(fds[0]);
    }
    close(fds[0]);
    guard_wfd = fds[1];
    guard_pid = pid;
    BLOG_DEBUG("event=guardian_started pid=%d", (int)pid);
    return 0;
}

int run_guard_fd(void) { return guard_wfd; }

static void guard_send(int fd, int32_t op, pid_t sid) {
    guard_msg_t m = {.op = op, .sid = (int32_t)sid};
    ssize_t w;
    do
        w = write(fd, &m, sizeof(m));
    while (w < 0 && errno == EINTR);
}

void run_guard_announce(int fd) {
    if (fd >= 0)
        guard_send(fd, GUARD_STARTED, getpid());
}

void run_guard_forget(pid_t sid) {
    if (guard_wfd >= 0 && sid > 0)
        guard_send(guard_wfd, GUARD_FORGET, sid);
}

int run_guard_reaped(pid_t pid, int status) {
    if (pid <= 0 || pid != guard_pid)
        return 0;
    BLOG_ERROR("event=guardian_exited pid=%d code=%d msg=\"if baton-run dies now, only the "
               "command itself is killed (PR_SET_PDEATHSIG), not what it started\"",
               (int)pid, run_child_code(status));
    close(guard_wfd);
    guard_wfd = -1;
    guard_pid = 0;
    return 1;
}
