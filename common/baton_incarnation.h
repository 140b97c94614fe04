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
 *   earlier=<uuid>[,<uuid>...]   (optional)
 *
 * `earlier` lists the incarnations before this one that may still have a
 * live member node: written when an incarnation records itself
 * (baton_incarnation_commit: its predecessors, until one of them is known
 * to have registered), cleared once its own node is created
 * (baton_incarnation_confirm: a create under the id succeeds only when no
 * older node is left). A process killed between recording itself and
 * creating its node so leaves its predecessor's live node recognisable.
 * Every id listed was written by a holder of this lock, all dead now.
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

/* How many earlier incarnations the file keeps (more crashes in a row
 * before registering fall back to waiting for the oldest to expire). */
#define BATON_INC_EARLIER_MAX 8

typedef struct {
    int fd;                            /* the locked file; -1 when closed */
    char *path;                        /* <dir>/<group>.<id>.lock */
    char previous[BATON_UUID_LEN + 1]; /* the last incarnation's id; "" if none */
    char current[BATON_UUID_LEN + 1];  /* ours (fresh) */
    /* The file's earlier incarnations (see the top of the file). */
    char earlier[BATON_INC_EARLIER_MAX][BATON_UUID_LEN + 1];
    int nearlier;
    char holder_host[256]; /* on BATON_EXISTS: the holder's, per the file */
    long holder_pid;       /* on BATON_EXISTS: the holder's pid, or 0 */
    int dir_chosen;        /* the directory was configured, not the default; kept on errors */
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

/* Whether id is an incarnation this lock file vouches for as dead or ours:
 * the previous one, an earlier one, or the current one. */
int baton_incarnation_known(const baton_incarnation_t *inc, const char *id);

/* Records that our member node is created: the previous and earlier
 * incarnations are gone (none can come back: their processes are dead), so
 * they are forgotten and the file keeps only ours. Not synced: a lost update only keeps the list
 * (still true). Returns BATON_OK or BATON_IO with a message. */
int baton_incarnation_confirm(baton_incarnation_t *inc, char *errstr, size_t errstr_size);

/* Releases the lock (closes the file; the file stays). Safe to call twice. */
void baton_incarnation_close(baton_incarnation_t *inc);

#endif
