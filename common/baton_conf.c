/* baton_conf.c: settings from flags, environment and a properties file,
 * resolved through one table (see baton_conf.h). */
#include "baton_conf.h"

#include "baton_err.h"
#include "baton_opts.h"
#include "baton_util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONFIG_BYTES (1024 * 1024)

enum { SRC_NONE = 0, SRC_FILE, SRC_ENV, SRC_FLAG };

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\f')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\f' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

/* Undoes the escapes Java properties allow that we support. */
static char *unescape(const char *s) {
    char *out = xmalloc(strlen(s) + 1), *o = out;
    for (; *s; s++) {
        if (*s != '\\' || !s[1]) {
            *o++ = *s;
            continue;
        }
        s++;
        *o++ = *s == 't' ? '\t' : *s == 'n' ? '\n' : *s == 'r' ? '\r' : *s;
    }
    *o = 0;
    return out;
}

void baton_props_free(baton_prop_t *props, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(props[i].key);
        free(props[i].value);
    }
    free(props);
}

int baton_props_parse(const char *path, const char *text, size_t len, baton_prop_t **out,
                      size_t *nout, char *errstr, size_t n) {
    baton_prop_t *props = NULL;
    size_t count = 0, cap = 0;
    size_t pos = 0;
    int lineno = 0;
    char *logical = NULL;
    int err = BATON_OK;
    if (memchr(text, 0, len)) {
        return baton_seterr(errstr, n, BATON_INVALID, "%s: contains a NUL byte: not a text file",
                            path);
    }
    while (pos < len) {
        /* Assemble one logical line: a physical line ending in an odd number
         * of backslashes continues on the next. */
        size_t cap_l = 0, len_l = 0;
        int first_line = lineno + 1;
        logical = NULL;
        for (;;) {
            size_t start = pos;
            while (pos < len && text[pos] != '\n')
                pos++;
            size_t plen = pos - start;
            if (pos < len)
                pos++; /* the newline */
            lineno++;
            const char *seg = text + start;
            if (len_l > 0) { /* continuation: leading whitespace is dropped */
                while (plen > 0 && (*seg == ' ' || *seg == '\t')) {
                    seg++;
                    plen--;
                }
            }
            if (len_l + plen + 1 > cap_l) {
                cap_l = (len_l + plen + 1) * 2;
                logical = xrealloc(logical, cap_l);
            }
            memcpy(logical + len_l, seg, plen);
            len_l += plen;
            logical[len_l] = 0;
            if (len_l > 0 && logical[len_l - 1] == '\r')
                logical[--len_l] = 0;
            size_t bs = 0;
            while (bs < len_l && logical[len_l - 1 - bs] == '\\')
                bs++;
            if (bs % 2 == 1 && pos < len) {
                logical[--len_l] = 0;
                continue;
            }
            break;
        }
        char *line = trim(logical);
        if (!*line || *line == '#' || *line == '!') {
            free(logical);
            logical = NULL;
            continue;
        }
        /* The key ends at the first unescaped '=', ':' or whitespace. */
        char *k = line, *sep = line;
        while (*sep && !((*sep == '=' || *sep == ':' || *sep == ' ' || *sep == '\t') &&
                         (sep == line || sep[-1] != '\\')))
            sep++;
        char *v = sep;
        if (*v) {
            char sepc = *v;
            *v++ = 0;
            v = trim(v);
            /* "key = value": whitespace, then the real separator */
            if ((sepc == ' ' || sepc == '\t') && (*v == '=' || *v == ':'))
                v = trim(v + 1);
        }
        char *key = unescape(k);
        if (!*key) {
            free(key);
            err = baton_seterr(errstr, n, BATON_INVALID, "%s:%d: a line with no key", path,
                               first_line);
            goto out;
        }
        for (size_t i = 0; i < count; i++)
            if (strcmp(props[i].key, key) == 0) {
                err = baton_seterr(errstr, n, BATON_INVALID,
                                   "%s:%d: key '%s' was already set on line %d", path, first_line,
                                   key, props[i].line);
                free(key);
                goto out;
            }
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            props = xrealloc(props, sizeof(*props) * cap);
        }
        props[count].key = key;
        props[count].value = unescape(v);
        props[count].line = first_line;
        count++;
        free(logical);
        logical = NULL;
    }
out:
    free(logical);
    if (err != BATON_OK) {
        baton_props_free(props, count);
        return err;
    }
    *out = props;
    *nout = count;
    return BATON_OK;
}

static int set_value(baton_conf_opt_t *o, const char *val, const char *where, char *errstr,
                     size_t n) {
    const char *shown = o->secret ? "(secret)" : val;
    switch (o->type) {
    case BATON_CONF_STR:
        if (!*val)
            return baton_seterr(errstr, n, BATON_INVALID, "%s: empty value", where);
        *(const char **)o->target = val;
        return BATON_OK;
    case BATON_CONF_INT: {
        int64_t v;
        if (baton_parse_i64(val, o->min, o->max, &v) != 0)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "%s: '%s' is not an integer in [%lld, %lld]", where, shown,
                                (long long)o->min, (long long)o->max);
        *(int64_t *)o->target = v;
        return BATON_OK;
    }
    case BATON_CONF_BOOL:
        if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0)
            *(int *)o->target = 1;
        else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0)
            *(int *)o->target = 0;
        else
            return baton_seterr(errstr, n, BATON_INVALID, "%s: '%s' is not true or false", where,
                                shown);
        return BATON_OK;
    }
    return BATON_INTERNAL;
}

static int read_file(const char *path, char **data, size_t *len, char *errstr, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return baton_seterr(errstr, n, BATON_INVALID, "--config: cannot open '%s': %s", path,
                            strerror(errno));
    char *buf = xmalloc(MAX_CONFIG_BYTES + 1);
    size_t got = fread(buf, 1, MAX_CONFIG_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got > MAX_CONFIG_BYTES) {
        free(buf);
        return baton_seterr(errstr, n, BATON_INVALID, "--config: '%s' is %s", path,
                            bad ? "unreadable" : "over 1 MiB");
    }
    buf[got] = 0;
    *data = buf;
    *len = got;
    return BATON_OK;
}

void baton_conf_release(baton_conf_parsed_t *c) {
    for (size_t i = 0; i < c->nkafka; i++)
        free(c->kafka[i]);
    free(c->kafka);
    for (size_t i = 0; i < c->nfile_strings; i++)
        free(c->file_strings[i]);
    free(c->file_strings);
    free(c->file_data);
    free(c->config_path);
    memset(c, 0, sizeof(*c));
}

static void add_kafka(baton_conf_parsed_t *c, const char *kv) {
    c->kafka = xrealloc(c->kafka, sizeof(char *) * (c->nkafka + 1));
    c->kafka[c->nkafka++] = xstrdup(kv);
}

int baton_conf_parse(baton_conf_opt_t *opts, size_t nopts, int allow_kafka, int argc, char **argv,
                     int *nposit, baton_conf_parsed_t *out, char *errstr, size_t n) {
    memset(out, 0, sizeof(*out));
    enum { EXTRA = 4 };
    struct option *lo = xcalloc(nopts + EXTRA + 1, sizeof(struct option));
    int *src = xcalloc(nopts ? nopts : 1, sizeof(int));
    char **kafka_flags = xcalloc((size_t)argc + 1, sizeof(char *));
    size_t nkafka_flags = 0;
    const char *config = NULL;
    int err = BATON_OK;
    for (size_t i = 0; i < nopts; i++) {
        lo[i].name = opts[i].flag;
        lo[i].has_arg = opts[i].type == BATON_CONF_BOOL ? no_argument : required_argument;
        lo[i].val = 1000 + (int)i;
    }
    /* A table without one property key (baton-run's: flags and the
     * environment only) has no config file: --config is refused as any
     * unknown flag, and BATON_CONFIG, exported for the other programs, is
     * not read (every key of a worker's file would be unknown here). */
    int has_file = 0;
    for (size_t i = 0; i < nopts; i++)
        has_file |= opts[i].property != NULL;
    lo[nopts] = has_file ? (struct option){"config", required_argument, NULL, 'c'}
                         : (struct option){"help", no_argument, NULL, 'h'};
    lo[nopts + 1] = (struct option){"help", no_argument, NULL, 'h'};
    lo[nopts + 2] = allow_kafka ? (struct option){"kafka", required_argument, NULL, 'k'}
                                : (struct option){"help", no_argument, NULL, 'h'};
    lo[nopts + 3] = (struct option){"version", no_argument, NULL, 'V'};

    /* "+" stops at the first positional argument when positionals are
     * allowed (a command after "--"); otherwise every argument is a flag. */
    const char *shortopts = nposit ? "+" : "";
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
        if (opt >= 1000) {
            baton_conf_opt_t *o = &opts[opt - 1000];
            char where[128];
            snprintf(where, sizeof(where), "--%s", o->flag);
            if (o->type == BATON_CONF_BOOL) {
                *(int *)o->target = 1;
            } else if ((err = set_value(o, optarg, where, errstr, n)) != BATON_OK) {
                goto out;
            }
            src[opt - 1000] = SRC_FLAG;
        } else if (opt == 'c') {
            config = optarg;
        } else if (opt == 'h') {
            out->help = 1;
        } else if (opt == 'V') {
            out->version = 1;
        } else if (opt == 'k') {
            if (!strchr(optarg, '=') || optarg[0] == '=') {
                err = baton_seterr(errstr, n, BATON_INVALID, "--kafka: '%s' is not KEY=VALUE",
                                   optarg);
                goto out;
            }
            kafka_flags[nkafka_flags++] = optarg;
        } else {
            char why[256];
            baton_opt_bad_message(argc, argv, why, sizeof(why));
            err = baton_seterr(errstr, n, BATON_INVALID, "%s", why);
            goto out;
        }
    }
    if (nposit) {
        *nposit = argc - optind;
    } else if (optind < argc) {
        err = baton_seterr(errstr, n, BATON_INVALID, "unexpected argument '%s'", argv[optind]);
        goto out;
    }
    if (out->help || out->version)
        goto out;

    /* The environment, for what no flag set. */
    for (size_t i = 0; i < nopts; i++) {
        if (src[i] != SRC_NONE || !opts[i].env)
            continue;
        const char *v = getenv(opts[i].env);
        if (!v)
            continue;
        if ((err = set_value(&opts[i], v, opts[i].env, errstr, n)) != BATON_OK)
            goto out;
        src[i] = SRC_ENV;
    }
    if (!config && has_file) {
        const char *env_config = getenv("BATON_CONFIG");
        if (env_config && *env_config)
            config = env_config;
    }

    /* The file, for what neither a flag nor the environment set. */
    if (config) {
        size_t len = 0;
        baton_prop_t *props = NULL;
        size_t nprops = 0;
        out->config_path = xstrdup(config);
        if ((err = read_file(config, &out->file_data, &len, errstr, n)) != BATON_OK)
            goto out;
        if ((err = baton_props_parse(config, out->file_data, len, &props, &nprops, errstr, n)))
            goto out;
        out->file_strings = xcalloc(nprops ? nprops : 1, sizeof(char *));
        for (size_t p = 0; p < nprops && err == BATON_OK; p++) {
            if (allow_kafka && strncmp(props[p].key, "kafka.", 6) == 0 && props[p].key[6]) {
                char *kv = xasprintf("%s=%s", props[p].key + 6, props[p].value);
                add_kafka(out, kv);
                free(kv);
                continue;
            }
            size_t i;
            for (i = 0; i < nopts; i++)
                if (opts[i].property && strcmp(opts[i].property, props[p].key) == 0)
                    break;
            if (i == nopts) {
                err = baton_seterr(errstr, n, BATON_INVALID, "%s:%d: unknown key '%s'", config,
                                   props[p].line, props[p].key);
                break;
            }
            if (src[i] != SRC_NONE)
                continue;
            char where[512];
            snprintf(where, sizeof(where), "%s:%d: %s", config, props[p].line, props[p].key);
            char *copy = xstrdup(props[p].value);
            out->file_strings[out->nfile_strings++] = copy;
            err = set_value(&opts[i], copy, where, errstr, n);
            src[i] = SRC_FILE;
        }
        baton_props_free(props, nprops);
        if (err != BATON_OK)
            goto out;
    }
    /* --kafka flags come after the file's kafka.* keys so they override them
     * (librdkafka applies settings in order). */
    for (size_t i = 0; i < nkafka_flags; i++)
        add_kafka(out, kafka_flags[i]);
out:
    free(lo);
    free(src);
    free(kafka_flags);
    if (err != BATON_OK) {
        baton_conf_release(out);
    }
    return err;
}

/* A chroot the ZooKeeper client accepts and that means what it says: an
 * absolute path, no empty, "." or ".." component, no trailing '/', not
 * ZooKeeper's own /zookeeper, no control characters or commas. NULL if
 * good, else why not. */
static const char *chroot_problem(const char *c) {
    size_t len = strlen(c);
    if (c[0] != '/')
        return "is not an absolute path (e.g. /tenant-a)";
    if (len == 1)
        return "is the root itself, no chroot";
    if (c[len - 1] == '/' || strstr(c, "//"))
        return "has an empty path component";
    if (strcmp(c, "/zookeeper") == 0 || strncmp(c, "/zookeeper/", 11) == 0)
        return "is ZooKeeper's own /zookeeper";
    for (const char *p = c; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == ',')
            return "has a control character or a comma";
    for (const char *comp = c + 1; comp; comp = strchr(comp, '/') ? strchr(comp, '/') + 1 : NULL) {
        size_t n = strcspn(comp, "/");
        if ((n == 1 && comp[0] == '.') || (n == 2 && comp[0] == '.' && comp[1] == '.'))
            return "has a '.' or '..' component";
    }
    return NULL;
}

int baton_conf_zk_chroot(const char *hosts, const char *chroot, char **out, char *errstr,
                         size_t n) {
    *out = NULL;
    const char *suffix = strchr(hosts, '/');
    if (!chroot) {
        *out = xstrdup(hosts);
        return BATON_OK;
    }
    const char *why = chroot_problem(chroot);
    if (why)
        return baton_seterr(errstr, n, BATON_INVALID, "--zk-chroot: '%s' %s", chroot, why);
    if (suffix) {
        /* The client takes everything from the first '/' as the chroot:
         * one after an earlier host would swallow the hosts after it. */
        if (strchr(suffix, ','))
            return baton_seterr(errstr, n, BATON_INVALID,
                                "--zk: '%s': a chroot suffix must follow the last host", hosts);
        if (strcmp(suffix, chroot) != 0)
            return baton_seterr(errstr, n, BATON_INVALID,
                                "--zk-chroot '%s' differs from the chroot '%s' already at the end "
                                "of the connect string '%s': give one of them",
                                chroot, suffix, hosts);
        *out = xstrdup(hosts);
        return BATON_OK;
    }
    if (!*hosts)
        return baton_seterr(errstr, n, BATON_INVALID, "--zk: empty connect string");
    *out = xasprintf("%s%s", hosts, chroot);
    return BATON_OK;
}

void baton_conf_print_help(const baton_conf_opt_t *opts, size_t nopts, void *file) {
    FILE *f = file;
    for (size_t i = 0; i < nopts; i++) {
        char left[64];
        snprintf(left, sizeof(left), "--%s%s%s", opts[i].flag, opts[i].metavar ? " " : "",
                 opts[i].metavar ? opts[i].metavar : "");
        fprintf(f, "  %-26s %s\n", left, opts[i].help ? opts[i].help : "");
        if (opts[i].property || opts[i].env)
            fprintf(f, "  %-26s [%s%s%s]\n", "", opts[i].property ? opts[i].property : "",
                    opts[i].property && opts[i].env ? ", " : "", opts[i].env ? opts[i].env : "");
    }
}
