/* baton_member_int.h: libbaton's in-tree membership entry points, beside
 * the public include/baton/baton.h: what a member has that the frozen
 * baton_membership_conf_t cannot carry (its ZooKeeper identity as an
 * object, its log sink), and the in-tree setter of a baton_conf_t's
 * identity. Not exported (no BATON_EXPORT): the tree's programs link the
 * archive. */
#ifndef BATON_MEMBER_INT_H
#define BATON_MEMBER_INT_H

#include <baton/baton.h>

#include "baton_incarnation.h"
#include "baton_log.h"
#include "baton_zk_auth.h"

/* zk_auth and log are copied by baton_membership__new; keep is the
 * member's once it is made (freed with keep_free when it is destroyed:
 * what conf's strings point into), the caller's if that fails. */
typedef struct {
    const baton_zk_auth_t *zk_auth; /* its ZooKeeper identity; NULL: none */
    const baton_log_sink_t *log;    /* its log sink; NULL: the process's logger */
    void *keep;
    void (*keep_free)(void *);
    /* The member lock (baton_incarnation.h): the state directory (NULL or
     * "": $BATON_STATE_DIR, $STATE_DIRECTORY, else /var/lib/baton; a
     * default that cannot be used is a warning and no lock, a directory
     * given that cannot be used an error), and how long to wait for a live
     * node under our id that is not our own dead incarnation (0: three
     * session timeouts). */
    const char *state_dir;
    int member_wait_ms;
    /* A member lock the caller took already with baton_membership__lock
     * (then state_dir is not read), or NULL: taken here. The member adopts
     * it, on failure too (then releases it); the caller's is left closed.
     * A program takes it before anything a duplicate of itself must not
     * touch: baton-worker before it opens its sink. */
    baton_incarnation_t *lock;
    /* standby.claim=ahead (docs/design.md, "Claims made ahead of time"):
     * claim each resource we are named standby for all along, queued
     * behind its owner's claim, so its owner's leave or death finds us in
     * the queue already. 0: claim only once we take it (the default). */
    int claim_ahead;
    /* standby.notice (docs/design.md, "Release notices"): the "ip:port" a
     * datagram socket binds for release notices and our member node
     * advertises (port 0: any free one); NULL, "" or "off": none. */
    const char *notice;
    /* With notice: we hold ahead, as a standby, the records of what we
     * stand by for (baton-worker's standby.prefetch), and tell each owner
     * which (HLD): its graceful leave hands those over to us instead of
     * writing them (baton_membership__notice_covers). 0: we hold none, and
     * our HLDs say so. */
    int notice_holds;
} baton_membership_ext_t;

/* Whether spec is a usable standby.notice value (ext->notice): NULL, "",
 * "off", or a numeric, non-wildcard ip:port ([v6]:port). BATON_OK, or
 * BATON_INVALID with a message in errstr. Binds nothing. */
int baton_membership__notice_check(const char *spec, char *errstr, size_t errstr_size);

/* Takes the member lock of (group, id) in state_dir as baton_membership__new
 * does, for a caller that must hold it before its other start-up work.
 * BATON_OK, with inc->fd < 0 if the default directory cannot be used (a
 * warning: no takeover of a dead incarnation, a restart waits for its old
 * session to expire); BATON_EXISTS if a live process of this host holds it
 * (the message names its pid and host); BATON_CORRUPT for a file that is
 * not a lock file; BATON_IO for a directory given that cannot be used. A
 * message in errstr on every error; inc is then closed. */
int baton_membership__lock(baton_incarnation_t *inc, const char *state_dir, const char *group,
                           const char *id, char *errstr, size_t errstr_size);

/* baton_membership_new with ext (NULL: no identity, the process's logger).
 * conf->zk_auth is not read here (lib/conf.c turns it into ext->zk_auth). */
int baton_membership__new(const baton_membership_conf_t *conf, const baton_membership_cbs_t *cbs,
                          const baton_membership_ext_t *ext, baton_membership_t **out, char *errstr,
                          size_t errstr_size);

/* Sets the configuration's identity from an object the caller built
 * (copied; NULL: none), in place of zookeeper.auth(.file): a program that
 * parsed --zk-auth/--zk-auth-file itself, so its messages name its flags. */
void baton_conf__set_zk_auth(baton_conf_t *conf, const baton_zk_auth_t *auth);

#endif
