/* sink_fixture.h: the cmocka fixture of the SQLite backend's own tests
 * (test_sink.c): a fresh temporary directory per
 * test holding the sink file, optionally a sink open on it for group "g",
 * and reading one fence row back. It includes <cmocka.h> and the headers
 * cmocka needs before it. */
#ifndef BATON_TESTS_SINK_FIXTURE_H
#define BATON_TESTS_SINK_FIXTURE_H

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "baton_err.h"
#include "sink.h"
#include "../sink_helpers.h"

/* One test's directory, its sink file (path, and uri for baton_sink_open),
 * and the sink sink_fx_setup_open opened on it (NULL after sink_fx_setup;
 * a test that closes it sets it to NULL or reopens it, and the teardown
 * destroys whatever it holds). */
typedef struct {
    char dir[64];
    char path[128];
    char uri[160];
    baton_sink_t *sink;
} sink_fx_t;

/* Setup: a fresh directory; the sink file in it is not created yet. */
static inline int sink_fx_setup(void **state) {
    sink_fx_t *fx = calloc(1, sizeof(*fx));
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/baton-test-sink-XXXXXX");
    if (!mkdtemp(fx->dir)) {
        free(fx);
        return -1;
    }
    snprintf(fx->path, sizeof(fx->path), "%s/sink.db", fx->dir);
    snprintf(fx->uri, sizeof(fx->uri), "sqlite:%s", fx->path);
    *state = fx;
    return 0;
}

/* Teardown: destroys fx->sink and removes the directory. It holds only
 * files (the database, its -wal and -shm, and whatever a test wrote), so
 * one level of unlink is enough. */
static inline int sink_fx_teardown(void **state) {
    sink_fx_t *fx = *state;
    baton_sink_destroy(fx->sink);
    DIR *d = opendir(fx->dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            char p[512];
            snprintf(p, sizeof(p), "%s/%s", fx->dir, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    int rc = rmdir(fx->dir);
    free(fx);
    return rc;
}

/* Setup: a fresh directory and fx->sink open on it for group "g". */
static inline int sink_fx_setup_open(void **state) {
    if (sink_fx_setup(state))
        return -1;
    sink_fx_t *fx = *state;
    char err[512];
    if (baton_sink_open(fx->uri, "g", &fx->sink, err, sizeof(err)) != BATON_OK) {
        fprintf(stderr, "open: %s\n", err);
        sink_fx_teardown(state);
        return -1;
    }
    return 0;
}

/* Another handle on the test's file (as another process would open it). */
static inline baton_sink_t *sink_fx_open(const sink_fx_t *fx, const char *group) {
    return open_as(fx->uri, group);
}

#endif
