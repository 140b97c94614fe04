/* baton_codec.c: jansson-based codecs for znode bodies; see baton_codec.h. */
#include "baton_codec.h"

#include "baton_err.h"
#include "baton_util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int name_chars_valid(const char *s, size_t max) {
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return -1;
    }
    /* "." and ".." are path components, not names. */
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return -1;
    return 0;
}

int baton_id_valid(const char *id) { return name_chars_valid(id, BATON_ID_MAX); }
int baton_key_valid(const char *key) { return name_chars_valid(key, BATON_ID_MAX); }
int baton_topic_valid(const char *topic) { return name_chars_valid(topic, BATON_TOPIC_MAX); }

static char *dump(json_t *j) {
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    if (!s)
        abort(); /* only allocation can fail here */
    return s;
}

/* A JSON string of s, which need not be UTF-8: a sink URI, a host name
 * or a rack comes from a flag or the system, and jansson refuses invalid
 * UTF-8 (json_pack then returns NULL, which dump took for an allocation
 * failure and aborted on). Each byte that is not part of a valid UTF-8
 * sequence becomes '?' (the field is shown to operators, never compared:
 * a binding is matched by its sink_id). */
static json_t *jstr(const char *s) {
    json_t *j = json_string(s ? s : "");
    if (j)
        return j;
    char *copy = xstrdup(s);
    baton_utf8_clean(copy);
    j = json_string(copy);
    free(copy);
    if (!j)
        abort(); /* valid UTF-8 without NUL: only allocation can fail */
    return j;
}

/* Loads an object; on failure writes "what: reason" into errstr. */
static json_t *load_object(const char *what, const char *buf, size_t len, char *errstr, size_t n) {
    if (!buf || len == 0) {
        baton_seterr(errstr, n, BATON_CORRUPT, "%s: empty", what);
        return NULL;
    }
    if (len > BATON_ZNODE_MAX) {
        baton_seterr(errstr, n, BATON_CORRUPT, "%s: %zu bytes is over the %d byte limit", what, len,
                     BATON_ZNODE_MAX);
        return NULL;
    }
    json_error_t jerr;
    /* JSON_ALLOW_NUL lets "\u0000" through to get_str, which rejects it with
     * the field's name. */
    json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!j) {
        baton_seterr(errstr, n, BATON_CORRUPT, "%s: invalid JSON at line %d column %d: %s", what,
                     jerr.line, jerr.column, jerr.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        baton_seterr(errstr, n, BATON_CORRUPT, "%s: expected a JSON object", what);
        return NULL;
    }
    return j;
}

/* Field readers: required when `required`, else leave *out untouched if absent or null. */
static int get_int(json_t *o, const char *what, const char *key, int required, int64_t min,
                   int64_t max, int64_t *out, char *errstr, size_t n) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required)
            return baton_seterr(errstr, n, BATON_CORRUPT, "%s: missing field '%s'", what, key);
        return BATON_OK;
    }
    if (!json_is_integer(v))
        return baton_seterr(errstr, n, BATON_CORRUPT, "%s: field '%s' must be an integer", what,
                            key);
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return baton_seterr(errstr, n, BATON_CORRUPT, "%s: field '%s' = %lld is out of range", what,
                            key, (long long)x);
    *out = x;
    return BATON_OK;
}

static int get_str(json_t *o, const char *what, const char *key, int required, char *out,
                   size_t outsz, char *errstr, size_t n) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required)
            return baton_seterr(errstr, n, BATON_CORRUPT, "%s: missing field '%s'", what, key);
        return BATON_OK;
    }
    if (!json_is_string(v))
        return baton_seterr(errstr, n, BATON_CORRUPT, "%s: field '%s' must be a string", what, key);
    size_t len = json_string_length(v);
    if (len >= outsz || strlen(json_string_value(v)) != len)
        return baton_seterr(errstr, n, BATON_CORRUPT, "%s: field '%s' is too long or contains NUL",
                            what, key);
    memcpy(out, json_string_value(v), len + 1);
    return BATON_OK;
}

char *baton_config_encode(const baton_config_t *c) {
    json_t *j = json_pack("{s:s, s:i, s:s, s:i}", "topic", c->topic, "partitions",
                          (int)c->partitions, "strategy", c->strategy, "version", 1);
    if (c->group_uuid[0])
        json_object_set_new(j, "group_uuid", json_string(c->group_uuid));
    return dump(j);
}

/* An optional UUID field (absent or null: ""). */
static int get_uuid(json_t *j, const char *what, const char *key, int required, char *out,
                    size_t outsz, char *errstr, size_t n) {
    int err = get_str(j, what, key, required, out, outsz, errstr, n);
    if (!err && out[0] && baton_uuid_valid(out) != 0)
        err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: field '%s' = '%s' is not a UUID", what,
                           key, out);
    return err;
}

char *baton_sink_binding_encode(const baton_sink_binding_t *b) {
    return dump(json_pack("{s:s, s:o, s:o, s:I, s:i}", "sink_id", b->sink_id, "sink_uri",
                          jstr(b->sink_uri), "bound_by", jstr(b->bound_by), "bound_ms",
                          (json_int_t)b->bound_ms, "version", 1));
}

int baton_sink_binding_decode(const char *buf, size_t len, baton_sink_binding_t *out, char *errstr,
                              size_t n) {
    const char *what = "sink binding";
    json_t *j = load_object(what, buf, len, errstr, n);
    if (!j)
        return BATON_CORRUPT;
    memset(out, 0, sizeof(*out));
    int err;
    if (!(err = get_uuid(j, what, "sink_id", 1, out->sink_id, sizeof(out->sink_id), errstr, n)) &&
        !(err = get_str(j, what, "sink_uri", 0, out->sink_uri, sizeof(out->sink_uri), errstr, n)) &&
        !(err = get_str(j, what, "bound_by", 0, out->bound_by, sizeof(out->bound_by), errstr, n)))
        err = get_int(j, what, "bound_ms", 0, 0, INT64_MAX, &out->bound_ms, errstr, n);
    json_decref(j);
    return err;
}

int baton_config_decode(const char *buf, size_t len, baton_config_t *out, char *errstr, size_t n) {
    const char *what = "group config";
    json_t *j = load_object(what, buf, len, errstr, n);
    if (!j)
        return BATON_CORRUPT;
    memset(out, 0, sizeof(*out));
    int64_t parts = 0;
    int err;
    if ((err = get_str(j, what, "topic", 1, out->topic, sizeof(out->topic), errstr, n)) ||
        (err = get_int(j, what, "partitions", 1, 0, BATON_PARTITIONS_MAX, &parts, errstr, n)) ||
        (err = get_str(j, what, "strategy", 0, out->strategy, sizeof(out->strategy), errstr, n)) ||
        (err = get_uuid(j, what, "group_uuid", 0, out->group_uuid, sizeof(out->group_uuid), errstr,
                        n)))
        goto out;
    if (!out->topic[0] && parts > 0) {
        err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: %lld partitions but no topic", what,
                           (long long)parts);
        goto out;
    }
    if (out->topic[0] && parts == 0) {
        err = baton_seterr(errstr, n, BATON_CORRUPT,
                           "%s: field 'partitions' = 0 is out of range for topic '%s'", what,
                           out->topic);
        goto out;
    }
    if (out->topic[0] && baton_topic_valid(out->topic) != 0) {
        err = baton_seterr(errstr, n, BATON_CORRUPT,
                           "%s: topic '%s' is not a valid Kafka topic name", what, out->topic);
        goto out;
    }
    out->partitions = (int32_t)parts;
    if (!out->strategy[0])
        strcpy(out->strategy, "sticky");
out:
    json_decref(j);
    return err;
}

char *baton_member_encode(const baton_member_t *m) {
    json_t *j = json_pack("{s:s, s:o, s:I, s:i}", "id", m->id, "host", jstr(m->host), "pid",
                          (json_int_t)m->pid, "capacity", (int)(m->capacity ? m->capacity : 1));
    json_object_set_new(j, "rack", m->rack[0] ? jstr(m->rack) : json_null());
    if (m->leaving)
        json_object_set_new(j, "leaving", json_true());
    if (m->no_partitions)
        json_object_set_new(j, "keys_only", json_true());
    if (m->incarnation[0])
        json_object_set_new(j, "incarnation", json_string(m->incarnation));
    if (m->notice[0])
        json_object_set_new(j, "notice", json_string(m->notice));
    if (m->keys_filter) {
        json_t *arr = json_array();
        char buf[BATON_MEMBER_KEYS_MAX];
        snprintf(buf, sizeof(buf), "%s", m->keys);
        char *save = NULL;
        for (char *k = strtok_r(buf, ",", &save); k; k = strtok_r(NULL, ",", &save))
            json_array_append_new(arr, json_string(k));
        json_object_set_new(j, "keys", arr);
    }
    return dump(j);
}

int baton_member_decode(const char *buf, size_t len, baton_member_t *out, char *errstr, size_t n) {
    const char *what = "member";
    json_t *j = load_object(what, buf, len, errstr, n);
    if (!j)
        return BATON_CORRUPT;
    memset(out, 0, sizeof(*out));
    int64_t pid = 0, cap = 1;
    int err;
    if ((err = get_str(j, what, "id", 1, out->id, sizeof(out->id), errstr, n)) ||
        (err = get_str(j, what, "host", 0, out->host, sizeof(out->host), errstr, n)) ||
        (err = get_int(j, what, "pid", 0, 0, INT64_MAX, &pid, errstr, n)) ||
        (err = get_int(j, what, "capacity", 0, 1, 1000000, &cap, errstr, n)) ||
        (err = get_str(j, what, "rack", 0, out->rack, sizeof(out->rack), errstr, n)) ||
        (err = get_str(j, what, "incarnation", 0, out->incarnation, sizeof(out->incarnation),
                       errstr, n)) ||
        (err = get_str(j, what, "notice", 0, out->notice, sizeof(out->notice), errstr, n)))
        goto out;
    if (out->incarnation[0] && baton_uuid_valid(out->incarnation) != 0) {
        err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: field 'incarnation' is not a UUID", what);
        goto out;
    }
    json_t *leaving = json_object_get(j, "leaving");
    if (leaving && !json_is_null(leaving)) {
        if (!json_is_boolean(leaving)) {
            err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: field 'leaving' must be a boolean",
                               what);
            goto out;
        }
        out->leaving = json_is_true(leaving);
    }
    json_t *only = json_object_get(j, "keys_only");
    if (only && !json_is_null(only)) {
        if (!json_is_boolean(only)) {
            err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: field 'keys_only' must be a boolean",
                               what);
            goto out;
        }
        out->no_partitions = json_is_true(only);
    }
    json_t *keys = json_object_get(j, "keys");
    if (keys && !json_is_null(keys)) {
        if (!json_is_array(keys)) {
            err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: field 'keys' must be an array", what);
            goto out;
        }
        out->keys_filter = 1;
        size_t used = 0;
        for (size_t i = 0; i < json_array_size(keys); i++) {
            json_t *k = json_array_get(keys, i);
            const char *name = json_is_string(k) ? json_string_value(k) : NULL;
            if (!name || strlen(name) != json_string_length(k) || baton_key_valid(name) != 0) {
                err = baton_seterr(errstr, n, BATON_CORRUPT,
                                   "%s: keys[%zu] is not a key name ([A-Za-z0-9._-], 1-128)", what,
                                   i);
                goto out;
            }
            size_t l = strlen(name);
            if (used + l + 2 > sizeof(out->keys)) {
                err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: field 'keys' is over %d bytes",
                                   what, BATON_MEMBER_KEYS_MAX);
                goto out;
            }
            if (used)
                out->keys[used++] = ',';
            memcpy(out->keys + used, name, l + 1);
            used += l;
        }
    }
    if (baton_id_valid(out->id) != 0) {
        err = baton_seterr(errstr, n, BATON_CORRUPT,
                           "%s: field 'id' = '%s' is not a valid id ([A-Za-z0-9._-], 1-128)", what,
                           out->id);
        goto out;
    }
    out->pid = pid;
    out->capacity = (int32_t)cap;
out:
    json_decref(j);
    return err;
}

char *baton_assignment_meta_encode(const baton_assignment_meta_t *a) {
    return dump(json_pack("{s:I, s:I, s:s}", "generation", (json_int_t)a->generation,
                          "coordinator_epoch", (json_int_t)a->coordinator_epoch, "strategy",
                          a->strategy));
}

int baton_assignment_meta_decode(const char *buf, size_t len, baton_assignment_meta_t *out,
                                 char *errstr, size_t n) {
    const char *what = "assignment";
    json_t *j = load_object(what, buf, len, errstr, n);
    if (!j)
        return BATON_CORRUPT;
    memset(out, 0, sizeof(*out));
    int err;
    if ((err = get_int(j, what, "generation", 1, 0, INT64_MAX, &out->generation, errstr, n)) ||
        (err = get_int(j, what, "coordinator_epoch", 0, 0, INT64_MAX, &out->coordinator_epoch,
                       errstr, n)) ||
        (err = get_str(j, what, "strategy", 0, out->strategy, sizeof(out->strategy), errstr, n)))
        goto out;
out:
    json_decref(j);
    return err;
}

static json_t *partitions_json(const int32_t *ps, size_t n) {
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_integer(ps[i]));
    return arr;
}

static json_t *keys_json(char *const *keys, size_t n) {
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_string(keys[i]));
    return arr;
}

char *baton_worker_assignment_encode(const baton_worker_assignment_t *a) {
    json_t *j = json_pack("{s:I, s:o}", "generation", (json_int_t)a->generation, "partitions",
                          partitions_json(a->partitions, a->npartitions));
    if (a->nkeys)
        json_object_set_new(j, "keys", keys_json(a->keys, a->nkeys));
    if (a->nstandby) {
        json_t *sb = json_object();
        for (size_t i = 0; i < a->nstandby; i++) {
            const baton_standby_t *s = &a->standby[i];
            json_t *o =
                json_pack("{s:o}", "partitions", partitions_json(s->partitions, s->npartitions));
            if (s->nkeys)
                json_object_set_new(o, "keys", keys_json(s->keys, s->nkeys));
            json_object_set_new(sb, s->owner, o);
        }
        json_object_set_new(j, "standby", sb);
    }
    return dump(j);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Reads field `field` of o, an array of distinct partition numbers, into a
 * sorted heap array (required: else absent means none). */
static int get_partitions(json_t *o, const char *what, const char *field, int required,
                          int32_t **out, size_t *nout, char *errstr, size_t n) {
    json_t *arr = json_object_get(o, field);
    if (!required && (!arr || json_is_null(arr)))
        return BATON_OK;
    if (!json_is_array(arr))
        return baton_seterr(errstr, n, BATON_CORRUPT, "%s: field '%s' must be an array", what,
                            field);
    size_t cnt = json_array_size(arr);
    int32_t *ps = xcalloc(cnt ? cnt : 1, sizeof(int32_t));
    *out = ps; /* freed by the caller's release, even on error */
    for (size_t i = 0; i < cnt; i++) {
        json_t *v = json_array_get(arr, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= BATON_PARTITIONS_MAX)
            return baton_seterr(errstr, n, BATON_CORRUPT, "%s: %s[%zu] is not a partition number",
                                what, field, i);
        ps[i] = (int32_t)json_integer_value(v);
    }
    *nout = cnt;
    qsort(ps, cnt, sizeof(int32_t), cmp_i32);
    for (size_t i = 1; i < cnt; i++)
        if (ps[i] == ps[i - 1])
            return baton_seterr(errstr, n, BATON_CORRUPT, "%s: partition %d is listed twice", what,
                                ps[i]);
    return BATON_OK;
}

/* Reads the optional field `field` of o, an array of distinct key names,
 * into a sorted heap array. */
static int get_keys(json_t *o, const char *what, const char *field, char ***out, size_t *nout,
                    char *errstr, size_t n) {
    json_t *keys = json_object_get(o, field);
    if (!keys || json_is_null(keys))
        return BATON_OK;
    if (!json_is_array(keys) || json_array_size(keys) > BATON_KEYS_MAX)
        return baton_seterr(errstr, n, BATON_CORRUPT, "%s: field '%s' must be an array", what,
                            field);
    size_t kc = json_array_size(keys);
    char **ks = xcalloc(kc ? kc : 1, sizeof(char *));
    *out = ks; /* freed by the caller's release, even on error */
    for (size_t i = 0; i < kc; i++) {
        json_t *k = json_array_get(keys, i);
        const char *name = json_is_string(k) ? json_string_value(k) : NULL;
        if (!name || strlen(name) != json_string_length(k) || baton_key_valid(name) != 0)
            return baton_seterr(errstr, n, BATON_CORRUPT, "%s: %s[%zu] is not a key name", what,
                                field, i);
        ks[(*nout)++] = xstrdup(name);
    }
    qsort(ks, *nout, sizeof(char *), baton_strcmp_p);
    for (size_t i = 1; i < *nout; i++)
        if (strcmp(ks[i], ks[i - 1]) == 0)
            return baton_seterr(errstr, n, BATON_CORRUPT, "%s: key '%s' is listed twice", what,
                                ks[i]);
    return BATON_OK;
}

static int cmp_standby(const void *a, const void *b) {
    return strcmp(((const baton_standby_t *)a)->owner, ((const baton_standby_t *)b)->owner);
}

/* The optional "standby" object: owner id -> {"partitions": [...], "keys": [...]}. */
static int get_standby(json_t *o, const char *what, baton_worker_assignment_t *out, char *errstr,
                       size_t n) {
    json_t *sb = json_object_get(o, "standby");
    if (!sb || json_is_null(sb))
        return BATON_OK;
    if (!json_is_object(sb) || json_object_size(sb) > BATON_PARTITIONS_MAX)
        return baton_seterr(errstr, n, BATON_CORRUPT, "%s: field 'standby' must be an object",
                            what);
    out->standby = xcalloc(json_object_size(sb) + 1, sizeof(baton_standby_t));
    const char *owner;
    json_t *v;
    json_object_foreach(sb, owner, v) {
        baton_standby_t *s = &out->standby[out->nstandby++];
        s->owner = xstrdup(owner);
        if (baton_id_valid(owner) != 0)
            return baton_seterr(errstr, n, BATON_CORRUPT, "%s: standby owner is not a worker id",
                                what);
        if (!json_is_object(v))
            return baton_seterr(errstr, n, BATON_CORRUPT, "%s: standby '%s' must be an object",
                                what, owner);
        int err =
            get_partitions(v, what, "partitions", 0, &s->partitions, &s->npartitions, errstr, n);
        if (err == BATON_OK)
            err = get_keys(v, what, "keys", &s->keys, &s->nkeys, errstr, n);
        if (err != BATON_OK)
            return err;
    }
    qsort(out->standby, out->nstandby, sizeof(baton_standby_t), cmp_standby);
    return BATON_OK;
}

int baton_worker_assignment_decode(const char *buf, size_t len, baton_worker_assignment_t *out,
                                   char *errstr, size_t n) {
    const char *what = "worker assignment";
    json_t *j = load_object(what, buf, len, errstr, n);
    if (!j)
        return BATON_CORRUPT;
    memset(out, 0, sizeof(*out));
    int err = get_int(j, what, "generation", 1, 0, INT64_MAX, &out->generation, errstr, n);
    if (err == BATON_OK)
        err = get_partitions(j, what, "partitions", 1, &out->partitions, &out->npartitions, errstr,
                             n);
    if (err == BATON_OK)
        err = get_keys(j, what, "keys", &out->keys, &out->nkeys, errstr, n);
    if (err == BATON_OK)
        err = get_standby(j, what, out, errstr, n);
    if (err != BATON_OK)
        baton_worker_assignment_release(out);
    json_decref(j);
    return err;
}

static void strings_free(char **s, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(s[i]);
    free(s);
}

void baton_standby_free(baton_standby_t *sb, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(sb[i].owner);
        free(sb[i].partitions);
        strings_free(sb[i].keys, sb[i].nkeys);
    }
    free(sb);
}

int baton_standby_equal(const baton_standby_t *a, size_t na, const baton_standby_t *b, size_t nb) {
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++) {
        if (strcmp(a[i].owner, b[i].owner) != 0 || a[i].npartitions != b[i].npartitions ||
            a[i].nkeys != b[i].nkeys)
            return 0;
        if (a[i].npartitions &&
            memcmp(a[i].partitions, b[i].partitions, a[i].npartitions * sizeof(int32_t)) != 0)
            return 0;
        for (size_t k = 0; k < a[i].nkeys; k++)
            if (strcmp(a[i].keys[k], b[i].keys[k]) != 0)
                return 0;
    }
    return 1;
}

void baton_worker_assignment_release(baton_worker_assignment_t *a) {
    strings_free(a->keys, a->nkeys);
    a->keys = NULL;
    a->nkeys = 0;
    free(a->partitions);
    a->partitions = NULL;
    a->npartitions = 0;
    baton_standby_free(a->standby, a->nstandby);
    a->standby = NULL;
    a->nstandby = 0;
}

char *baton_claim_encode(const baton_claim_t *c) {
    return dump(
        json_pack("{s:s, s:I}", "worker", c->worker, "generation", (json_int_t)c->generation));
}

int baton_claim_decode(const char *buf, size_t len, baton_claim_t *out, char *errstr, size_t n) {
    const char *what = "claim";
    json_t *j = load_object(what, buf, len, errstr, n);
    if (!j)
        return BATON_CORRUPT;
    memset(out, 0, sizeof(*out));
    int err;
    if ((err = get_str(j, what, "worker", 1, out->worker, sizeof(out->worker), errstr, n)) ||
        (err = get_int(j, what, "generation", 0, 0, INT64_MAX, &out->generation, errstr, n)))
        goto out;
    if (baton_id_valid(out->worker) != 0)
        err = baton_seterr(errstr, n, BATON_CORRUPT,
                           "%s: field 'worker' = '%s' is not a valid id ([A-Za-z0-9._-], 1-128)",
                           what, out->worker);
out:
    json_decref(j);
    return err;
}

int64_t baton_seq_of(const char *name) {
    size_t len = strlen(name);
    if (len < 10)
        return -1;
    const char *digits = name + len - 10;
    int64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (digits[i] < '0' || digits[i] > '9')
            return -1;
        v = v * 10 + (digits[i] - '0');
    }
    return v;
}

char *baton_pin_encode(const baton_pin_t *p) {
    return dump(json_pack("{s:s}", "worker", p->worker));
}

int baton_pin_decode(const char *buf, size_t len, baton_pin_t *out, char *errstr, size_t n) {
    const char *what = "pin";
    json_t *j = load_object(what, buf, len, errstr, n);
    if (!j)
        return BATON_CORRUPT;
    memset(out, 0, sizeof(*out));
    int err = get_str(j, what, "worker", 1, out->worker, sizeof(out->worker), errstr, n);
    if (!err && baton_id_valid(out->worker) != 0)
        err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: worker '%s' is not a valid id", what,
                           out->worker);
    json_decref(j);
    return err;
}

static const char *const history_reasons[] = {"new",   "join", "leave",     "crash",
                                              "drain", "pin",  "rebalance", "forced"};

int baton_history_reason_valid(const char *r) {
    for (size_t i = 0; i < BATON_ARRAY_SIZE(history_reasons); i++)
        if (strcmp(r, history_reasons[i]) == 0)
            return 0;
    return -1;
}

static json_t *history_entry_json(const baton_history_entry_t *e) {
    json_t *j = json_pack("{s:o, s:o, s:o, s:o, s:I, s:I, s:s}", "partition",
                          e->key[0] ? json_null() : json_integer(e->partition), "from",
                          e->from[0] ? json_string(e->from) : json_null(), "to",
                          e->to[0] ? json_string(e->to) : json_null(), "epoch",
                          e->epoch >= 0 ? json_integer(e->epoch) : json_null(), "generation",
                          (json_int_t)e->generation, "time_ms", (json_int_t)e->time_ms, "reason",
                          e->reason);
    if (e->key[0])
        json_object_set_new(j, "key", json_string(e->key));
    return j;
}

char *baton_history_encode(const baton_history_entry_t *e, size_t n) {
    size_t first = n > BATON_HISTORY_MAX ? n - BATON_HISTORY_MAX : 0;
    for (;;) {
        json_t *arr = json_array();
        for (size_t i = first; i < n; i++)
            json_array_append_new(arr, history_entry_json(&e[i]));
        char *s = dump(json_pack("{s:o}", "entries", arr));
        size_t len = strlen(s);
        if (len <= BATON_HISTORY_MAX_BYTES || first >= n)
            return s;
        /* Drop the oldest in proportion to the excess, at least one. */
        size_t drop = (n - first) * (len - BATON_HISTORY_MAX_BYTES) / len + 1;
        first += drop < n - first ? drop : n - first;
        free(s);
    }
}

int baton_history_decode(const char *buf, size_t len, baton_history_t *out, char *errstr,
                         size_t n) {
    memset(out, 0, sizeof(*out));
    json_t *o = load_object("history", buf, len, errstr, n);
    if (!o)
        return BATON_CORRUPT;
    json_t *arr = json_object_get(o, "entries");
    int err = BATON_OK;
    if (!json_is_array(arr)) {
        err = baton_seterr(errstr, n, BATON_CORRUPT, "history: field 'entries' must be an array");
        goto out;
    }
    size_t cnt = json_array_size(arr);
    out->entries = xcalloc(cnt ? cnt : 1, sizeof(*out->entries));
    for (size_t i = 0; i < cnt; i++) {
        json_t *v = json_array_get(arr, i);
        baton_history_entry_t *e = &out->entries[i];
        char what[48];
        snprintf(what, sizeof(what), "history entry %zu", i);
        if (!json_is_object(v)) {
            err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: expected a JSON object", what);
            goto out;
        }
        int64_t p = -1;
        e->epoch = -1;
        if ((err = get_str(v, what, "key", 0, e->key, sizeof(e->key), errstr, n)) ||
            (err = get_int(v, what, "partition", !e->key[0], 0, BATON_PARTITIONS_MAX - 1, &p,
                           errstr, n)) ||
            (err = get_str(v, what, "from", 0, e->from, sizeof(e->from), errstr, n)) ||
            (err = get_str(v, what, "to", 0, e->to, sizeof(e->to), errstr, n)) ||
            (err = get_int(v, what, "epoch", 0, 0, INT64_MAX, &e->epoch, errstr, n)) ||
            (err = get_int(v, what, "generation", 1, 0, INT64_MAX, &e->generation, errstr, n)) ||
            (err = get_int(v, what, "time_ms", 0, 0, INT64_MAX, &e->time_ms, errstr, n)) ||
            (err = get_str(v, what, "reason", 1, e->reason, sizeof(e->reason), errstr, n)))
            goto out;
        e->partition = e->key[0] ? -1 : (int32_t)p;
        if (e->key[0] && baton_key_valid(e->key) != 0) {
            err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: 'key' is not a valid key name", what);
            goto out;
        }
        if (baton_history_reason_valid(e->reason) != 0) {
            err =
                baton_seterr(errstr, n, BATON_CORRUPT, "%s: unknown reason '%s'", what, e->reason);
            goto out;
        }
        if ((e->from[0] && baton_id_valid(e->from) != 0) ||
            (e->to[0] && baton_id_valid(e->to) != 0)) {
            err = baton_seterr(errstr, n, BATON_CORRUPT, "%s: 'from' or 'to' is not a valid id",
                               what);
            goto out;
        }
        out->n++;
    }
out:
    json_decref(o);
    if (err != BATON_OK)
        baton_history_release(out);
    return err;
}

void baton_history_release(baton_history_t *h) {
    free(h->entries);
    h->entries = NULL;
    h->n = 0;
}
