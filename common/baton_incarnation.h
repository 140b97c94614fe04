/* baton_incarnation.h: a member's proof, local to its host, that its
 * previous incarnation is dead (#19: a restarted worker takes over its own
 * dead self at once).
 *
 * Each member process holds an exclusive flock(2) on
 * <state dir>/<group>.<id>.lock for as long as it lives; the kernel drops
 * the lock when the process dies, however it dies (SIGKILL, OOM, crash).
 * The file records the member's current incarnation id (a random UUID that
 * its member node carries too), its pid and its host:
 *
 *   # baton member lock: group G, member ID. ...
 *   incarnation=<uuid>
 *   pid=<pid>
 *   host=<hostname>
 *
 * So a process that gets the lock and finds, in ZooKeeper, a live member
 * node under its id carrying the incarnation the file names knows that
 * node's process is dead: nothing else could have written that id, and
 * the writer no longer holds the lock. The lock is taken with O_CLOEXEC, so
 * a command a member runs (baton-run) does not inherit it.
 *
 * The state directory must be local to the host (never NFS or other shared
 * storage: flock there is not this guarantee). A lost or removed lock file
 * only costs the takeover: the member then waits for the old session to
 * expire, as without one. */
#ifndef BATON_INCARNATION_H
#define BATON_INCARNATION_H

#include "baton_util.h"

#include <stddef.h>
#include <sys/types.h>

/* The state directory when none is configured: $BATON_STATE_DIR, then
 * $STATE_DIRECTORY (systemd's StateDirectory=; its first entry), else this. */
#define BATON_STATE_DIR_DEFAULT "/var/lib/baton"

typedef struct {
    int fd;                            /* the locked file; -1 when closed */
    char *path;                        /* <dir>/<group>.<id>.lock */
    char previous[BATON_UUID_LEN + 1]; /* the last incarnation's id; "" if none */
    char current[BATON_UUID_LEN + 1];  /* ours (fresh) */
    char holder_host[256];             /* on BATON_EXISTS: the holder's, per the file */
    long holder_pid;                   /* on BATON_EXISTS: the holder's pid, or 0 */
    int dir_chosen; /* the directory was configured, not the default; kept on errors */
} baton_incarnation_t;

/* The state directory to use, into out: dir if set, else $BATON_STATE_DIR,
 * else $STATE_DIRECTORY's first entry, else BATON_STATE_DIR_DEFAULT.
 * Returns 1 if it was configured by one of the first three, 0 for the
 * default. */
int baton_incarnation_dir(const char *dir, char *out, size_t size);

/* Creates the state directory if missing (0700), opens <dir>/<group>.<id>.lock
 * and takes its lock without waiting, reads the previous incarnation and
 * draws a new one. Returns BATON_OK; BATON_EXISTS if another process holds
 * the lock (inc->holder_pid/holder_host say who, per the file); BATON_CORRUPT
 * if the file is not a lock file of this form (nothing is overwritten: the
 * message names the file and says to remove it once no member with this id
 * runs here); BATON_IO if the directory or file cannot be made or opened.
 * A message in errstr in every error case; inc is then closed. */
int baton_incarnation_open(baton_incarnation_t *inc, const char *dir, const char *group,
                           const char *id, char *errstr, size_t errstr_size);

/* Records inc->current (with our pid and host) in the file, durably
 * (written whole, then fsync), before the member node that carries it is
 * created. Returns BATON_OK or BATON_IO with a message. */
int baton_incarnation_commit(baton_incarnation_t *inc, char *errstr, size_t errstr_size);

/* Releases the lock (closes the file; the file stays). Safe to call twice. */
void baton_incarnation_close(baton_incarnation_t *inc);

#endif
