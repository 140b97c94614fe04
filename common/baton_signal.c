/* baton_signal.c: self-pipe termination signals, a SIGHUP thread and the
 * shutdown watchdog. */
#include "baton_signal.h"

#include "baton_log.h"
#include "baton_util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested = 0;
static int sig_pipe[2] = {-1, -1};
static int dl_pipe[2] = {-1, -1}; /* see baton_signal_stop_deadline */

static void on_stop(int sig) {
    (void)sig;
    int saved = errno;
    stop_requested = 1;
    if (sig_pipe[1] >= 0) {
        ssize_t w = write(sig_pipe[1], "s", 1);
        (void)w;
    }
    if (dl_pipe[1] >= 0) {
        ssize_t w = write(dl_pipe[1], "s", 1);
        (void)w;
    }
    errno = saved;
}

/* Waits for SIGHUP (blocked everywhere else) and logs it: logging is not
 * async-signal-safe, so it happens here rather than in a handler. Runs for
 * the life of the process. */
static void *hup_thread(void *arg) {
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0)
            continue;
        BLOG_INFO("event=sighup action=none reason=\"logs go to stderr; nothing to reopen\"");
    }
    return NULL;
}

int baton_signal_init(void) {
    if (pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return sig_pipe[0];
}

int baton_signal_hup_log(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, hup_thread, NULL) != 0) {
        /* Without the thread, still never die of SIGHUP. */
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        signal(SIGHUP, SIG_IGN);
        pthread_attr_destroy(&attr);
        return -1;
    }
    pthread_attr_destroy(&attr);
    return 0;
}

int baton_signal_stop_requested(void) { return stop_requested; }

/* The shutdown watchdog: the stop handler also writes to dl_pipe; the
 * thread wakes on it and counts down from there. */
static int dl_ms;
static const char *dl_what;

static void *deadline_thread(void *arg) {
    (void)arg;
    char c;
    while (read(dl_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
    struct timespec until;
    clock_gettime(BATON_CLOCK, &until);
    until.tv_sec += dl_ms / 1000;
    until.tv_nsec += (long)(dl_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(BATON_CLOCK, TIMER_ABSTIME, &until, NULL) == EINTR) {
    }
    BLOG_ERROR("event=shutdown_timeout phase=%s timeout_ms=%d action=exit_now exit_code=1",
               baton_log_v(dl_what), dl_ms);
    _exit(1);
    return NULL;
}

int baton_signal_stop_deadline(int ms, const char *what) {
    if (dl_pipe[0] >= 0 || pipe2(dl_pipe, O_CLOEXEC) != 0)
        return -1;
    dl_ms = ms;
    dl_what = what;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, deadline_thread, NULL);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}
