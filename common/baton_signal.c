/* baton_signal.c: self-pipe termination signal handling. */
#include "baton_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested = 0;
static int sig_pipe[2] = {-1, -1};

static void on_stop(int sig) {
    (void)sig;
    stop_requested = 1;
    if (sig_pipe[1] >= 0) {
        ssize_t w = write(sig_pipe[1], "s", 1);
        (void)w;
    }
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

int baton_signal_stop_requested(void) { return stop_requested; }
