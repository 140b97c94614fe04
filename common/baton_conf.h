/* baton_conf.h: a daemon's settings from three sources, in one table.
 *
 * Each setting has a command-line flag (--zk), a Java-properties key as Kafka
 * users know them (zookeeper.connect) and an environment variable (BATON_ZK).
 * Precedence, highest first: command-line flag, environment variable, the
 * --config FILE, the built-in default. Keys prefixed "kafka." in the file
 * (and --kafka KEY=VALUE flags) are collected unchanged for librdkafka.
 *
 * Errors name what was wrong and where: "FILE:LINE: unknown key 'x'",
 * "--session-timeout-ms: 'abc' is not an integer in [100, 3600000]",
 * "BATON_ZK: empty value". Usage errors (bad flags, bad values, bad file)
 * are returned as BATON_INVALID so the caller exits 2. */
#ifndef BATON_CONF_H
#define BATON_CONF_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    BATON_CONF_STR,  /* const char *: points into argv, the environment or the file's copy */
    BATON_CONF_INT,  /* int64_t, within [min, max] */
    BATON_CONF_BOOL, /* int 0/1: a flag takes no value; file/env take true/false/1/0 */
} baton_conf_type_t;

typedef struct {
    const char *flag;     /* long flag without "--", e.g. "session-timeout-ms" */
    const char *property; /* properties key, e.g. "session.timeout.ms"; NULL: flag only */
    const char *env;      /* environment variable, e.g. "BATON_SESSION_TIMEOUT_MS"; NULL: none */
    baton_conf_type_t type;
    int64_t min, max;    /* for BATON_CONF_INT */
    void *target;        /* const char **, int64_t * or int * by type; holds the default */
    const char *metavar; /* e.g. "MS" for help; NULL for booleans */
    const char *help;    /* one line; "(secret)" settings are never printed with their value */
    int secret;          /* 1: never echoed in errors or logs */
} baton_conf_opt_t;

/* The parsed result beyond the table's targets. Heap-owned: release with
 * baton_conf_release(). */
typedef struct {
    char **kafka; /* "key=value" for librdkafka, file entries first then --kafka flags */
    size_t nkafka;
    int help;            /* --help was given */
    int version;         /* --version was given */
    char *config_path;   /* the --config FILE read, or NULL */
    char *file_data;     /* storage the string targets may point into */
    char **file_strings; /* values copied from the file */
    size_t nfile_strings;
} baton_conf_parsed_t;

/* Parses argv against opts (the table also accepts --config FILE, read
 * also from BATON_CONFIG, when one of its options has a property key; --kafka
 * KEY=VALUE when allow_kafka, --help and --version), then the environment, then the
 * file, filling each target not set by a higher source. Positional
 * arguments are not allowed unless nposit is non-NULL: then argv is
 * reordered so they follow and *nposit counts them (they start at
 * argv[argc - *nposit]). Returns BATON_OK, or BATON_INVALID with a message. */
int baton_conf_parse(baton_conf_opt_t *opts, size_t nopts, int allow_kafka, int argc, char **argv,
                     int *nposit, baton_conf_parsed_t *out, char *errstr, size_t errstr_size);
void baton_conf_release(baton_conf_parsed_t *c);

/* --zk-chroot: the ZooKeeper connect string hosts with the chroot path
 * appended ("h1:2181,h2:2181" + "/tenant-a" -> "h1:2181,h2:2181/tenant-a";
 * the client applies it to every host and every path). chroot NULL: hosts
 * unchanged. A connect string that already ends in the same chroot is
 * kept; one with another suffix, a suffix before the last host, or a
 * chroot that is not an absolute ZooKeeper path ("/", "a", "/a/", "/a//b",
 * "/a/../b") is BATON_INVALID with a message naming what was wrong.
 * *out is a heap string the caller frees (also on chroot NULL). */
int baton_conf_zk_chroot(const char *hosts, const char *chroot, char **out, char *errstr,
                         size_t errstr_size);

/* Prints one line per option ("  --flag METAVAR   help  [property, ENV]"). */
void baton_conf_print_help(const baton_conf_opt_t *opts, size_t nopts, void *file);

/* A Java-properties file as an ordered list of entries (for tests and
 * tools): "key=value", "key: value", "key value"; '#' and '!' comments;
 * trailing backslash continues a line; \t \n \\ \= \: escapes. */
typedef struct {
    char *key;
    char *value;
    int line;
} baton_prop_t;

/* Parses text (len bytes). *props is a heap array (baton_props_free).
 * A malformed line or a duplicate key is BATON_INVALID naming path:line. */
int baton_props_parse(const char *path, const char *text, size_t len, baton_prop_t **props,
                      size_t *nprops, char *errstr, size_t errstr_size);
void baton_props_free(baton_prop_t *props, size_t nprops);

#endif
