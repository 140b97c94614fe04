/* ctl_status.h: a group's state as one JSON object, and its renderings.
 *
 * ctl_status_gather() reads everything `batonctl status` shows (no watches
 * left) and builds the object; the human and JSON printers only render that
 * object, so a later `watch` command can gather and render in a loop.
 *
 * The object (keys in this order; null where there is none):
 *
 *   {"group": "orders",
 *    "config": {"topic": "in", "partitions": 12, "strategy": "sticky"},
 *    "generation": 3 | null,            assignment meta; null before the
 *                                       first publication or if malformed
 *    "coordinator": {"id": "c1" | null, "epoch": 4294967301,
 *                    "node": "c-0000000000"} | null,
 *    "summary": {"workers": 2, "active": 10, "handoff": 1, "unowned": 1},
 *    "workers": [{"id": "w1", "host": "h" | null, "pid": 1234 | null,
 *                 "capacity": 1 | null, "rack": "r1" | null,
 *                 "session": "0x0000000000000000"}],
 *    "partitions": [{"partition": 0, "assigned": "w1" | null,
 *                    "owner": "w1" | null, "epoch": 4294967320 | null,
 *                    "state": "active" | "handoff" | "unowned",
 *                    "claims": 1}],
 *    "warnings": [{"path": "/baton/orders/assignment/w1",
 *                  "problem": "worker assignment: ..."}]}
 *
 * epoch values are ZooKeeper czxids (64-bit). A partition is "unowned" with
 * no claim, "active" when the owner (lowest claim's worker) is the assigned
 * worker, else "handoff". Malformed znode data never fails the gather: the
 * field is null and a warning names the path and the problem.
 *
 * @locality the zk owner thread. */
#ifndef CTL_STATUS_H
#define CTL_STATUS_H

#include "baton_zk.h"

#include <jansson.h>
#include <stdio.h>

/* Builds the status of ROOT/GROUP into *out (a new reference: json_decref
 * it). Returns BATON_OK; BATON_NOTFOUND ("group G is not initialised ..."),
 * BATON_CORRUPT (the config itself is malformed; the message names its path)
 * or a ZooKeeper error, with a message in errstr. */
int ctl_status_gather(baton_zk_t *zk, const char *root, const char *group, json_t **out,
                      char *errstr, size_t errstr_size);

/* Renders the summary, the workers table and the partitions table, each line
 * at most 100 columns (long names are cut, ending in ".."). */
void ctl_status_print_human(const json_t *status, FILE *f);
/* Renders the object as indented JSON and a newline. */
void ctl_status_print_json(const json_t *status, FILE *f);
/* Prints each warning as "batonctl: warning: PATH: PROBLEM". */
void ctl_status_print_warnings(const json_t *status);

#endif
