/* sqlite_wait.h: the wait for SQLite's write lock that baton's SQLite sink
 * uses, exported so that anything else writing to the same file (the
 * benchmarks' comparators) waits the same way (sink_sqlite.c explains it). */
#ifndef BATON_SQLITE_WAIT_H
#define BATON_SQLITE_WAIT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* One connection's wait: how long a statement may wait, and when the
 * current wait began. It lives as long as the connection. */
typedef struct {
    int timeout_ms;
    int64_t since_us;
} baton_sqlite_wait_t;

/* Installs the busy handler on db, waiting up to timeout_ms; called again,
 * it changes the timeout. */
void baton_sqlite_wait_set(sqlite3 *db, baton_sqlite_wait_t *w, int timeout_ms);

/* Sets journal_mode=WAL on db. SQLite returns SQLITE_BUSY from this pragma
 * without calling the busy handler while another process is switching the
 * same new file, so it is retried for up to timeout_ms. Returns an SQLite
 * code; on SQLITE_OK, mode (n bytes) holds the journal mode in force (a
 * file that cannot be WAL keeps its own). */
int baton_sqlite_wal(sqlite3 *db, int timeout_ms, char *mode, size_t n);

#endif
