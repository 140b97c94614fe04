/* child.c: starting, reaping and stopping baton-run's command (child.h). */
#include "child.h"

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int run_child_code(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

char *run_child_resolve(const char *argv0) {
    if (!argv0 || !argv0[0])
        return NULL;
    if (strchr(argv0, '/'))
        return access(argv0, X_OK) == 0 ? xstrdup(argv0) : NULL;
    const char *path = getenv("PATH");
    if (!path || !path[0])
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = xstrdup(path), *save = NULL, *found = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *cand = xasprintf("%s/%s", dir[0] ? dir : ".", argv0);
        struct stat st;
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
            found = cand;
        else
            free(cand);
    }
    free(copy);
    return found;
}

int run_child_start(run_child_t *c, const char *path, char *const argv[], char *const envp[],
                    char *errstr, size_t n) {
    /* The parent waits until the child has its own session and has told
     * the guardian: then a signal to the group reaches it, and its runner's
     * death kills whatever it starts. The child closes its end then (or
     * dies), which is our EOF. */
    int sync[2];
    if (pipe2(sync, O_CLOEXEC) != 0) {
        baton_seterr(errstr, n, BATON_INTERNAL, "pipe failed: %s", strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    int gfd = run_guard_fd();
    pid_t pid = fork();
    if (pid < 0) {
        baton_seterr(errstr, n, BATON_INTERNAL, "fork failed: %s", strerror(errno));
        close(sync[0]);
        close(sync[1]);
        return -1;
    }
    if (pid == 0) {
        /* The child of a multi-threaded parent: async-signal-safe calls only
         * until exec (everything was prepared before the fork). Killed with
         * the thread that forked it (baton-run's only thread of its own):
         * if that already happened, go. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        setsid(); /* its own session and process group (see guard.h) */
        run_guard_announce(gfd);
        close(sync[1]);
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        for (int s = 1; s < NSIG; s++)
            sigaction(s, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP, RT ones */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (close_range(3, ~0U, 0) != 0)
            for (int fd = 3; fd < 4096; fd++)
                close(fd);
        execve(path, argv, envp);
        static const char msg[] = "baton-run: cannot execute the command\n";
        ssize_t w = write(2, msg, sizeof(msg) - 1);
        (void)w;
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(sync[1]);
    char b;
    while (read(sync[0], &b, 1) < 0 && errno == EINTR)
        ;
    close(sync[0]);
    c->pid = pid;
    c->started_ms = baton_now_ms();
    return 0;
}

/* Reaps every exited child of ours: the command, and whatever of its
 * process group was orphaned and reparented to us (baton-run is a child
 * subreaper, see main.c), so that no zombie counts as a live member of the
 * group. Returns 1 and *code if the command was among them. */
static int reap_all(pid_t cmd, int *code) {
    int got = 0;
    for (;;) {
        int status;
        pid_t r = waitpid(-1, &status, WNOHANG);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (run_guard_reaped(r, status))
            continue;
        if (cmd > 0 && r == cmd) {
            *code = run_child_code(status);
            got = 1;
        }
    }
    return got;
}

/* 1 while any live process of group pgid exists. */
static int group_alive(pid_t pgid) {
    reap_all(0, NULL);
    return kill(-pgid, 0) == 0 || errno == EPERM;
}

/* Stops what is left of group pgid once its leader is gone. */
static void group_drain(pid_t pgid, int64_t kill_after_ms) {
    if (!group_alive(pgid))
        return;
    BLOG_INFO("event=child_leftovers pgid=%d action=sigterm", (int)pgid);
    kill(-pgid, SIGTERM);
    int64_t deadline = baton_now_ms() + kill_after_ms;
    while (group_alive(pgid) && baton_now_ms() < deadline)
        baton_sleep_ms(10);
    if (group_alive(pgid)) {
        BLOG_WARN("event=child_leftovers pgid=%d action=sigkill", (int)pgid);
        kill(-pgid, SIGKILL);
    }
}

int run_child_reap(run_child_t *c, int *code, int64_t kill_after_ms) {
    if (c->pid <= 0) {
        reap_all(0, NULL);
        return 0;
    }
    if (!reap_all(c->pid, code))
        return 0;
    pid_t pgid = c->pid;
    c->pid = 0;
    group_drain(pgid, kill_after_ms);
    run_guard_forget(pgid);
    return 1;
}

int run_child_stop(run_child_t *c, int sig, int64_t kill_after_ms) {
    if (c->pid <= 0)
        return -1;
    pid_t pgid = c->pid;
    int64_t t0 = baton_now_ms(), deadline = t0 + kill_after_ms;
    kill(-pgid, sig);
    int code = -1;
    for (;;) {
        int64_t left = deadline - baton_now_ms();
        if (run_child_reap(c, &code, left > 0 ? left : 0))
            break;
        if (baton_now_ms() >= deadline) {
            BLOG_WARN("event=child_kill pid=%d after_ms=%lld", (int)pgid,
                      (long long)(baton_now_ms() - t0));
            kill(-pgid, SIGKILL);
            int status;
            pid_t r;
            do
                r = waitpid(pgid, &status, 0);
            while (r < 0 && errno == EINTR);
            code = r == pgid ? run_child_code(status) : 128 + SIGKILL;
            c->pid = 0;
            break;
        }
        baton_sleep_ms(5);
    }
    if (group_alive(pgid))
        kill(-pgid, SIGKILL);
    run_guard_forget(pgid);
    return code;
}
