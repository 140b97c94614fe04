/* baton_zk_auth.h: ZooKeeper authentication and the ACL of every znode baton
 * creates.
 *
 * An identity is an object (baton_zk_auth_t) that each session is given at
 * baton_zk_connect: the programs build one from `--zk-auth digest:USER:PASS`
 * (or the same text in a file, `--zk-auth-file`), a library member from its
 * configuration, so two memberships in one process may authenticate as two
 * different users. A session with an identity authenticates as that digest
 * identity (zoo_add_auth; the client re-sends it on reconnect), every znode
 * it creates gets the ACL "the creator's identity may do anything, anyone
 * may read" (so zkCli inspection works and an unauthenticated client cannot
 * change assignment, claims, pins or config), and each new session checks
 * the ACL of the baton root: a root writable only by other identities (or
 * by the same user with another password) is a clear error at connect time,
 * not a retry loop on ZNOAUTH later. Without an identity the ACL is
 * ZooKeeper's open one, as before.
 *
 * Secrets: the password never appears in an error message, a log line or
 * --help; messages name the scheme and the user only.
 *
 * An object is immutable once made: any thread may read it. baton_zk_connect
 * keeps its own copy, so the caller may destroy its object at any time. */
#ifndef BATON_ZK_AUTH_H
#define BATON_ZK_AUTH_H

#include <stddef.h>
#include <zookeeper.h>

typedef struct baton_zk_auth_s baton_zk_auth_t;

/* Makes an identity from spec ("digest:USER:PASS") or from the first line
 * of the file at path spec_file (at most one of them non-NULL; both NULL:
 * no identity, but still the root check below). root is the baton root
 * whose ACL new sessions check (e.g. "/baton"; copied). With require_write,
 * a root that exists and that this identity (or, without one, anyone) may
 * not write is an error at connect; without it (read-only tools) it is not.
 * what names the option in messages ("--zk-auth"; NULL: that). Returns
 * BATON_OK and *out, or BATON_INVALID with a message in errstr naming what
 * was wrong (never the password). */
int baton_zk_auth_new(const char *spec, const char *spec_file, const char *root, int require_write,
                      const char *what, baton_zk_auth_t **out, char *errstr, size_t errstr_size);
/* A copy of a (NULL: NULL). */
baton_zk_auth_t *baton_zk_auth_dup(const baton_zk_auth_t *a);
/* NULL is fine. */
void baton_zk_auth_destroy(baton_zk_auth_t *a);

/* The ACL for every create: owner-all plus world-read with an identity,
 * ZOO_OPEN_ACL_UNSAFE without (or for a NULL a). Owned by a. */
const struct ACL_vector *baton_zk_auth_acl(const baton_zk_auth_t *a);

/* The user name of the identity, or NULL without one (for logs). */
const char *baton_zk_auth_user(const baton_zk_auth_t *a);

/* Called by baton_zk_connect: adds the identity to a new handle (before the
 * session is established; the client sends it first). Returns a ZooKeeper
 * return code; ZOK for a NULL a or one without identity. */
int baton_zk__auth_add(const baton_zk_auth_t *a, zhandle_t *zh);

/* Called by baton_zk_connect once connected: checks the root's ACL against
 * the identity (see baton_zk_auth_new). Returns BATON_OK, or BATON_DENIED
 * with a message; a missing root is fine (init creates it with our ACL), and
 * a NULL a checks nothing. */
int baton_zk__auth_check(const baton_zk_auth_t *a, zhandle_t *zh, const char *hosts, char *errstr,
                         size_t errstr_size);

/* The digest id ZooKeeper stores for USER:PASS: "USER:" followed by the
 * base64 of the SHA-1 of "USER:PASS", into out (at least 200 bytes).
 * Exposed for the unit test. */
void baton_zk__digest_id(const char *user_pass, char *out, size_t out_size);

#endif
