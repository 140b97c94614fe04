/* fuzz_flags.c: fuzz target for the validators behind baton's command-line
 * flags: integer values (baton_parse_i64, which baton_opt_int wraps), ids
 * and topic names (baton_id_valid, baton_topic_valid), ZooKeeper roots
 * (baton_root_valid) and the group base path built from them
 * (baton_group_base). Each result is compared with an independent reading
 * of the documented contract, so a validator that lets through what its
 * header forbids fails here too, not only one that crashes.
 *
 * Input: byte 0 picks the [min, max] range for the integer parse; the rest
 * is the flag value (cut at the first NUL, as argv would be). */
#include "fuzz.h"

#include "baton_codec.h"
#include "baton_group.h"
#include "baton_util.h"

#include <string.h>

/* Reference integer parser: optional sign, one or more decimal digits,
 * nothing else; the value must fit int64_t and lie in [min, max]. */
static int ref_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out) {
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (!*p)
        return -1;
    /* Accumulate negatively so INT64_MIN fits. */
    int64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        int d = *p - '0';
        if (v < (INT64_MIN + d) / 10)
            return -1;
        v = v * 10 - d;
    }
    if (!neg) {
        if (v == INT64_MIN)
            return -1;
        v = -v;
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Reference name check: 1..max of [A-Za-z0-9._-], and not "." or "..". */
static int ref_name_valid(const char *s, size_t max) {
    size_t n = strlen(s);
    if (n == 0 || n > max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return -1;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n ? 0
                                                                                               : -1;
}

/* Reference root check (baton_group.h): starts with '/', is not "/" alone,
 * no trailing '/', no empty, "." or ".." component, no control character,
 * not /zookeeper or below it. Written independently: split on '/' and look
 * at each component. */
static int ref_root_valid(const char *s) {
    size_t n = strlen(s);
    if (n < 2 || s[0] != '/' || s[n - 1] == '/')
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
            return -1;
    size_t start = 1, idx = 0;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && s[i] != '/')
            continue;
        size_t len = i - start;
        if (len == 0)
            return -1;
        if ((len == 1 && s[start] == '.') || (len == 2 && s[start] == '.' && s[start + 1] == '.'))
            return -1;
        if (idx == 0 && len == 9 && memcmp(s + start, "zookeeper", 9) == 0)
            return -1;
        idx++;
        start = i + 1;
    }
    return 0;
}

static const int64_t ranges[][2] = {
    {INT64_MIN, INT64_MAX},
    {0, INT64_MAX},
    {1, 1000000},
    {0, 86400000},
    {-5, 5},
    {1, 65535},
    {100, 100},
    {INT64_MIN, -1},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    const int64_t *range = ranges[data[0] % BATON_ARRAY_SIZE(ranges)];
    char *val = malloc(size);
    if (!val)
        abort();
    memcpy(val, data + 1, size - 1);
    val[size - 1] = '\0';

    int64_t got = 12345, want = 54321;
    int rc = baton_parse_i64(val, range[0], range[1], &got);
    int ref = ref_parse_i64(val, range[0], range[1], &want);
    FUZZ_CHECK(rc == ref, "baton_parse_i64('%s', %lld, %lld) = %d, reference %d", val,
               (long long)range[0], (long long)range[1], rc, ref);
    if (rc == 0)
        FUZZ_CHECK(got == want, "baton_parse_i64('%s') = %lld, reference %lld", val, (long long)got,
                   (long long)want);

    FUZZ_CHECK(baton_id_valid(val) == ref_name_valid(val, BATON_ID_MAX), "baton_id_valid('%s')",
               val);
    FUZZ_CHECK(baton_topic_valid(val) == ref_name_valid(val, BATON_TOPIC_MAX),
               "baton_topic_valid('%s')", val);
    int root_ok = baton_root_valid(val) == 0;
    FUZZ_CHECK(root_ok == (ref_root_valid(val) == 0), "baton_root_valid('%s') = %d", val, root_ok);
    if (root_ok) {
        char *base = baton_group_base(val, "g");
        size_t n = strlen(val);
        FUZZ_CHECK(strncmp(base, val, n) == 0 && strcmp(base + n, "/g") == 0,
                   "baton_group_base('%s', 'g') = '%s'", val, base);
        free(base);
    }
    free(val);
    return 0;
}
