/* baton_daemon.c: the daemons' shared start-up (see baton_daemon.h). */
#include "baton_daemon.h"

#include "baton_err.h"
#include "baton_failpoint.h"
#include "baton_log.h"
#include "baton_opts.h"
#include "baton_signal.h"

#include <stdio.h>

void baton_daemon_check(const char *prog, const baton_daemon_opts_t *o) {
    baton_log_level_t level;
    baton_log_format_t format;
    char errstr[256];
    if (baton_log_level_parse(o->log_level, &level) != 0)
        baton_usage_error(prog, "--log-level: '%s' is not debug, info, warn or error",
                          o->log_level);
    if (baton_log_format_parse(o->log_format, &format) != 0)
        baton_usage_error(prog, "--log-format: '%s' is not text or json", o->log_format);
    if (o->metrics_addr && baton_metrics_addr_check(o->metrics_addr, errstr, sizeof(errstr)) != 0)
        baton_usage_error(prog, "--metrics-addr: %s", errstr);
}

int baton_daemon_start(const char *prog, const char *id, const baton_daemon_opts_t *o, int *stop_fd,
                       baton_metrics_server_t **metrics) {
    baton_log_level_t level = BATON_LOG_INFO;
    baton_log_format_t format = BATON_LOG_FORMAT_TEXT;
    baton_log_level_parse(o->log_level, &level); /* checked by baton_daemon_check */
    baton_log_format_parse(o->log_format, &format);
    baton_log_init(prog, id);
    baton_log_level = level;
    baton_log_set_format(format);

    char errstr[512];
    if (baton_failpoints_init(errstr, sizeof(errstr)) != 0) {
        fprintf(stderr, "%s: BATON_FAILPOINTS: %s\n", prog, errstr);
        return BATON_EXIT_USAGE;
    }
    *stop_fd = baton_signal_init();
    if (baton_signal_hup_log() != 0)
        BLOG_WARN("event=sighup_thread_unavailable action=ignore_sighup");
    *metrics = NULL;
    if (o->metrics_addr) {
        int merr = baton_metrics_server_start(o->metrics_addr, metrics, errstr, sizeof(errstr));
        if (merr != 0) {
            fprintf(stderr, "%s: --metrics-addr: %s\n", prog, errstr);
            return merr == BATON_INVALID ? BATON_EXIT_USAGE : BATON_EXIT_FAILURE;
        }
        BLOG_INFO("event=metrics_listening addr=%s path=/metrics",
                  baton_metrics_server_addr(*metrics));
    }
    return BATON_EXIT_OK;
}
