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
 *    "summary": {"workers": 2, "active": 10, "handoff": 1, "unowned": 1,
 *                "draining": 0, "pinned": 0,
 *                "lag": 1234 | null},       total; null unless every partition's
 *                                           lag is known
 *    "workers": [{"id": "w1", "host": "h" | null, "pid": 1234 | null,
 *                 "capacity": 1 | null, "rack": "r1" | null,
 *                 "session": "0x0000000000000000",
 *                 "joined_ms": 1700000000000,   member node ctime
 *                 "session_age_ms": 60000,
 *                 "owned": 5, "assigned": 6,    partitions (lowest claim / assignment)
 *                 "draining": false}],          drains/<id> exists
 *    "partitions": [{"partition": 0, "assigned": "w1" | null,
 *                    "owner": "w1" | null, "epoch": 4294967320 | null,
 *                    "state": "active" | "handoff" | "unowned",
 *                    "claims": 1,
 *                    "since_ms": 1700000000000 | null,   owner claim's ctime
 *                    "state_age_ms": 5000 | null,
 *                    "pinned": "w1" | null,              pins/<p>
 *                    "next_offset": 120 | null,          the sink's (with --sink)
 *                    "high_watermark": 130 | null,       Kafka's (with --brokers)
 *                    "lag": 10 | null}],                 with both
 *    "drains": ["w3"],
 *    "keys": [{"key": "nightly", "assigned", "owner", "epoch", "state",
 *              "claims", "since_ms", "state_age_ms", "runs"}],   named
 *                                       keys (batonctl keys; ctl_keys.h)
 *    "time_ms": 1700000060000,                  when it was gathered
 *    "warnings": [{"path": "/baton/orders/assignment/w1",
 *                  "problem": "worker assignment: ..."}]}
 *
 * The keys up to "claims" are the original stable interface; the others
 * were added beside them. ctl_status_filter adds summary.not_active and
 * summary.max_lag.
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
#include "ctl.h"
#include "ctl_lag.h"

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

/* ---- the view commands (status, workers, partitions, fences, watch) ---- */

/* Which flags a view command accepts (ctl_view_parse). */
enum {
    CTL_VIEW_KAFKA = 1,      /* --brokers, --kafka */
    CTL_VIEW_SINK = 2,       /* --sink */
    CTL_VIEW_FILTER = 4,     /* --partition, --worker */
    CTL_VIEW_WATCH = 8,      /* --max-updates, --duration-ms */
    CTL_VIEW_NEEDS_SINK = 16 /* --sink is required */
};

/* A view command's flags. Strings point into argv. */
typedef struct {
    int as_json;
    ctl_kafka_conf_t kafka; /* brokers NULL: no Kafka */
    const char **kafka_props;
    const char *sink;    /* NULL: no sink */
    int32_t *partitions; /* --partition filter (heap), NULL for all */
    size_t npartitions;
    const char *worker;  /* --worker filter or NULL */
    int64_t max_updates; /* watch: 0 = unbounded */
    int64_t duration_ms; /* watch: 0 = unbounded */
} ctl_view_opts_t;

/* Parses argv (argv[0] is the command) into *o, accepting the global flags
 * and the groups in flags; prints usage and exits 0 on --help, exits 2
 * naming the flag on a bad one. Release *o with ctl_view_opts_release. */
void ctl_view_parse(ctl_ctx_t *ctx, ctl_view_opts_t *o, int argc, char **argv, unsigned flags,
                    void (*usage)(FILE *f));
void ctl_view_opts_release(ctl_view_opts_t *o);

/* ctl_status_gather, then the lag from o's Kafka and sink (if given), then
 * ctl_status_filter. *out is a new reference. */
int ctl_view_gather(baton_zk_t *zk, const ctl_ctx_t *ctx, const ctl_view_opts_t *o, json_t **out,
                    char *errstr, size_t errstr_size);

/* Records whole-group facts in the summary ("not_active": {"handoff": [p..],
 * "unowned": [p..]}, "max_lag": {"partition", "lag"} | null), then removes
 * the rows o's --partition and --worker filters exclude. BATON_INVALID for a
 * partition beyond the group's, BATON_NOTFOUND for a worker that appears
 * nowhere; errstr names the flag. */
int ctl_status_filter(json_t *status, const ctl_view_opts_t *o, char *errstr, size_t errstr_size);

/* A column of a human table: each cell is fn(row, key, buf, n) (a string
 * that may live in buf); widths start at the widest cell (at most max;
 * CTL_COL_ID: uncapped, for ids) and, only when a width applies (see
 * ctl_table_set_wide), shrink towards min, cutting a cell's middle to
 * "..", but never so far that two different values in a column read the
 * same. right: right-aligned (numbers). */
#define CTL_COL_ID 100000
typedef struct {
    const char *header;
    const char *key;
    int min, max;
    int right;
    const char *(*fn)(const json_t *row, const char *key, char *buf, size_t n);
} ctl_col_t;

#define CTL_TABLE_MAX_COLS 16

/* wide: tables never cut a cell. Otherwise they fit $COLUMNS if set, else
 * the terminal's width when stdout is one, else nothing is cut. */
void ctl_table_set_wide(int wide);
/* Prints a header line and one line per element of the array rows. */
void ctl_print_table(FILE *f, const json_t *rows, const ctl_col_t *cols, size_t ncols);
/* A string, integer or boolean ("yes"/"no") field as text; "-" for null. */
const char *ctl_cell_text(const json_t *row, const char *key, char *buf, size_t n);
/* s for a terminal: itself, or (a control character in it: an escape
 * sequence read from a znode) a copy in buf with each one as '?': C0 and
 * C1 controls, DEL, bidirectional controls (U+202E and its kin) and each
 * byte that is not UTF-8. */
const char *ctl_printable(const char *s, char *buf, size_t n);
/* s with every byte outside printable ASCII (a control character, and any
 * byte of a UTF-8 sequence: a right-to-left override, a look-alike) as
 * \xNN and '\' as \\, for a name that should be ASCII and may be
 * hostile. The caller frees. */
char *ctl_escaped(const char *s);
/* A duration in ms ("850ms", "12s", "3m05s", "2h10m") as text; "-" for null. */
const char *ctl_cell_age(const json_t *row, const char *key, char *buf, size_t n);

/* The three parts of the human rendering. */
void ctl_status_print_summary(const json_t *status, FILE *f);
void ctl_status_print_workers(const json_t *status, FILE *f, int with_session);
void ctl_status_print_partitions(const json_t *status, FILE *f);

/* The commands built on this object (workers, partitions, fences, watch)
 * and evict, declared here rather than in the shared ctl.h so that commands
 * added side by side do not edit the same lines. Same contract as the
 * commands in ctl.h. */
int ctl_cmd_workers(ctl_ctx_t *ctx, int argc, char **argv);
int ctl_cmd_partitions(ctl_ctx_t *ctx, int argc, char **argv);
int ctl_cmd_evict(ctl_ctx_t *ctx, int argc, char **argv);
void ctl_workers_usage(FILE *f);
void ctl_partitions_usage(FILE *f);
void ctl_evict_usage(FILE *f);
int ctl_cmd_fences(ctl_ctx_t *ctx, int argc, char **argv);
void ctl_fences_usage(FILE *f);
int ctl_cmd_watch(ctl_ctx_t *ctx, int argc, char **argv);
void ctl_watch_usage(FILE *f);

#endif
