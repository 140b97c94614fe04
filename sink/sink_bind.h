/* sink_bind.h: a group is bound to its sink, and a sink to its group
 * (docs/design.md, "Sink binding"). The group's side is the znode
 * <root>/<group>/sink (baton_group.h: the sink id, who bound it, when);
 * the sink's side its baton_groups row (sink.h: the group id it serves).
 * A worker checks both as its run loop starts and again before its first
 * fence, and binds them if the group has no sink yet, so a worker with
 * another sink, or a group of the same name from another deployment,
 * writes nothing. */
#ifndef BATON_SINK_BIND_H
#define BATON_SINK_BIND_H

#include <stddef.h>

#include "baton_zk.h"
#include "sink.h"

/* The check, for member (a worker id) of group under root with sink:
 *  1. the group's id (assigned now by a versioned set if the group
 *     predates ids);
 *  2. the id the sink records for the group name, if any, must be the
 *     group's: else another deployment's group of that name uses it;
 *  3. the group's binding, if any, must name this sink's id: else the
 *     group writes elsewhere; no binding yet: bind it to this sink (a
 *     create, so of two first workers with different sinks one loses and
 *     is refused);
 *  4. baton_sink_expect_group: every later fence records or re-checks the
 *     group id in the sink's transaction.
 * Returns BATON_OK, BATON_CONFLICT (refuse: errstr names both sides and
 * what to do), or another error (ZooKeeper or the sink: retry later). */
int baton_sink_bind_check(baton_zk_t *zk, const char *root, const char *group, baton_sink_t *sink,
                          const char *member, char *errstr, size_t errstr_size);

/* The sink's URI as messages show it (secrets redacted). */
const char *baton_sink_uri(const baton_sink_t *sink);

#endif
