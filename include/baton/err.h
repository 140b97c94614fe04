/* baton/err.h: the one error enum of baton (public: the member library
 * returns these). 0 is success, negatives are
 * errors, grouped in bands a caller can test without listing every code:
 * input errors (-1..-99), retriable errors (-100..-199), fatal errors
 * (-200..-299). */
#ifndef BATON_ERR_H
#define BATON_ERR_H

#include "export.h"

#define BATON_ERR_MAP(X)                                         \
    X(OK, 0, "success")                                          \
    X(INVALID, -1, "invalid argument")                           \
    X(CORRUPT, -2, "stored data is malformed")                   \
    X(CONFLICT, -3, "exists with different values")              \
    X(NOTFOUND, -4, "not found")                                 \
    X(EXISTS, -5, "already exists")                              \
    X(CONNECTION, -100, "connection lost or server unreachable") \
    X(BUSY, -101, "resource busy")                               \
    X(TIMEOUT, -102, "timed out")                                \
    X(STALE, -200, "fenced: a higher epoch owns the partition")  \
    X(EXPIRED, -201, "session expired")                          \
    X(DEPOSED, -202, "no longer the leader")                     \
    X(UNFENCED, -203, "write without a fence for this epoch")    \
    X(IO, -204, "backend failure")                               \
    X(INTERNAL, -205, "internal error")                          \
    X(EVICTED, -206, "evicted by an operator")                   \
    X(DENIED, -207, "not authorised by ZooKeeper ACLs")

typedef enum {
#define BATON_ERR_ENUM_(name, val, msg) BATON_##name = val,
    BATON_ERR_MAP(BATON_ERR_ENUM_)
#undef BATON_ERR_ENUM_
} baton_err_t;

/* A static upper-case name of the error ("STALE", "CONNECTION"...), as logs print it. */
BATON_EXPORT const char *baton_err_name(int err);
/* A static human description of the error. */
BATON_EXPORT const char *baton_strerror(int err);

static inline int baton_err_is_input(int e) { return e <= -1 && e > -100; }
static inline int baton_err_is_retriable(int e) { return e <= -100 && e > -200; }
static inline int baton_err_is_fatal(int e) { return e <= -200; }

#endif
