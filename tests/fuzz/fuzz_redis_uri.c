/* fuzz_redis_uri.c: fuzz target for the Redis sink's URI check and its
 * redaction (sink/sink_redis.c), which read the --sink value an operator
 * (or a binding in ZooKeeper) gave. The input is the URI, up to its first
 * NUL. The check is the backend's `check` op (baton_sink_redis_ops.check,
 * what baton_sink_uri_check calls for redis: and rediss:); it never
 * connects. Checks: no crash, leak or out-of-bounds read; the check returns
 * BATON_OK or BATON_INVALID with a message naming the URI as redacted, and
 * accepts only redis:// URIs with no fragment; for a redis: or rediss:
 * scheme the public baton_sink_uri_check and baton_sink_uri_redact agree
 * with the backend's; the redaction is a NUL-terminated string, the URI
 * itself when it holds no userinfo and no "password=", idempotent for a
 * URI whose first "://" ends its scheme; and its secret (the PASS of
 * "scheme://USER:PASS@", or the whole userinfo without a ':', with the
 * authority looked for after the first "://" and after the first ':' and
 * any slashes: a URI a slash short or with its scheme twice) never shows:
 * neither the redaction nor the check's message changes when the secret is
 * replaced by another, and a secret with no '*' that occurs nowhere else in
 * the URI is not in the redaction (with one secret; with two, each is
 * checked not to show). PostgreSQL's redaction, the fallback for unknown
 * schemes, gets the same input: a string with no '@' and no "password"
 * comes back as it is. */
#include "fuzz.h"

#include "baton_err.h"
#include "sink.h"
#include "sink_int.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* The secret of the authority that starts at auth, as the contract states
 * it: the authority ends at the first '/', '?' or '#'; its userinfo at its
 * last '@'; the secret is what follows the userinfo's first ':', or the
 * whole userinfo if it has none. Adds [start, end) (offsets in uri) to
 * sp; returns 0 if the authority has no userinfo. */
static int auth_secret(const char *uri, const char *auth, size_t sp[][2], int *n) {
    const char *aend = auth + strcspn(auth, "/?#");
    const char *at = aend; /* one past the last '@' */
    while (at > auth && at[-1] != '@')
        at--;
    if (at-- == auth)
        return 0;
    const char *colon = memchr(auth, ':', (size_t)(at - auth));
    sp[*n][0] = (size_t)((colon ? colon + 1 : auth) - uri);
    sp[*n][1] = (size_t)(at - uri);
    ++*n;
    return 1;
}

/* Where the secrets are: the authority is looked for after the first "://"
 * and after the first ':' and any slashes (a URI a slash short, or its
 * scheme twice), and both are hidden. Returns how many spans (0-2),
 * overlapping ones merged, in order. */
static int secret_spans(const char *uri, size_t sp[2][2]) {
    int n = 0;
    const char *sep = strstr(uri, "://");
    if (sep)
        auth_secret(uri, sep + 3, sp, &n);
    const char *colon = strchr(uri, ':');
    if (colon) {
        const char *auth = colon + 1;
        while (*auth == '/')
            auth++;
        auth_secret(uri, auth, sp, &n);
    }
    if (n == 2 && sp[1][0] < sp[0][0]) {
        size_t a = sp[0][0], b = sp[0][1];
        sp[0][0] = sp[1][0], sp[0][1] = sp[1][1], sp[1][0] = a, sp[1][1] = b;
    }
    if (n == 2 && sp[1][0] <= sp[0][1]) {
        if (sp[1][1] > sp[0][1])
            sp[0][1] = sp[1][1];
        n = 1;
    }
    return n;
}

/* Whether [s, s+n) percent-decodes (every '%' starts two hex digits, none
 * decoding to NUL), as the parser requires of a password. */
static int pct_valid(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%')
            continue;
        if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
            !isxdigit((unsigned char)s[i + 2]) || (s[i + 1] == '0' && s[i + 2] == '0'))
            return 0;
        i += 2;
    }
    return 1;
}

/* Whether needle (n bytes) occurs in [h, h+hn). */
static int has(const char *h, size_t hn, const char *needle, size_t n) {
    for (size_t i = 0; n <= hn && i <= hn - n; i++)
        if (memcmp(h + i, needle, n) == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t len = strnlen((const char *)data, size);
    char *uri = malloc(len + 1);
    if (!uri)
        abort();
    memcpy(uri, data, len);
    uri[len] = '\0';

    char errstr[BATON_SINK_ERRSTR_SIZE] = "";
    int err = baton_sink_redis_ops.check(uri, errstr, sizeof(errstr));
    char *shown = baton_sink__redis_redact(uri);
    FUZZ_CHECK(shown != NULL, "no redaction of '%s'", uri);
    size_t shown_len = strlen(shown);
    if (err != BATON_OK) {
        FUZZ_CHECK(err == BATON_INVALID, "check returned %d", err);
        FUZZ_CHECK(memchr(errstr, '\0', sizeof(errstr)) != NULL, "message not terminated");
        /* "sink '<shown>': ...", cut to the buffer. */
        size_t cmp = shown_len < sizeof(errstr) - 7 ? shown_len : sizeof(errstr) - 7;
        FUZZ_CHECK(strncmp(errstr, "sink '", 6) == 0 && strncmp(errstr + 6, shown, cmp) == 0,
                   "message '%s' does not name '%s'", errstr, shown);
    } else {
        FUZZ_CHECK(strncasecmp(uri, "redis://", 8) == 0, "accepted '%s'", uri);
        FUZZ_CHECK(!strchr(uri, '#'), "accepted a fragment in '%s'", uri);
    }

    /* The public entries dispatch redis: and rediss: here. */
    size_t scheme = strcspn(uri, ":");
    if (uri[scheme] == ':' && ((scheme == 5 && strncasecmp(uri, "redis", 5) == 0) ||
                               (scheme == 6 && strncasecmp(uri, "rediss", 6) == 0))) {
        char pub[BATON_SINK_ERRSTR_SIZE] = "";
        FUZZ_CHECK(baton_sink_uri_check(uri, pub, sizeof(pub)) == err && !strcmp(pub, errstr),
                   "baton_sink_uri_check differs on '%s': '%s' vs '%s'", uri, pub, errstr);
        char *pshown = baton_sink_uri_redact(uri);
        FUZZ_CHECK(!strcmp(pshown, shown), "baton_sink_uri_redact differs: '%s' vs '%s'", pshown,
                   shown);
        free(pshown);
    }

    size_t sp[2][2] = {{0, 0}, {0, 0}};
    int nsp = secret_spans(uri, sp);
    if (!nsp && !strstr(uri, "password="))
        FUZZ_CHECK(!strcmp(shown, uri), "'%s' has no secret but shows as '%s'", uri, shown);
    /* Idempotent when the first "://" ends the scheme: else a "password="
     * value may hold it, and once that is hidden a later "://" is the
     * first (a string no scheme reads as a URI). */
    size_t sl = strspn(uri, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
    if (sl > 0 && !strncmp(uri + sl, "://", 3)) {
        char *again = baton_sink__redis_redact(shown);
        FUZZ_CHECK(!strcmp(again, shown), "redacting '%s' again gives '%s'", shown, again);
        free(again);
    }

    for (int k = 0; k < nsp; k++) {
        size_t s0 = sp[k][0], s1 = sp[k][1];
        const char *secret = uri + s0;
        size_t n = s1 - s0;
        /* Copied into the output, the secret would lie within one copied
         * piece of the URI (it holds no '*', so it cannot straddle a "***"):
         * unless it occurs outside its own place, it must not show. */
        if (n && !memchr(secret, '*', n) && !has(uri, s1 - 1, secret, n) &&
            !has(uri + s0 + 1, len - s0 - 1, secret, n))
            FUZZ_CHECK(!has(shown, shown_len, secret, n), "secret '%.*s' shows in '%s'", (int)n,
                       secret, shown);
    }
    if (nsp == 1 && sp[0][1] > sp[0][0]) {
        size_t s0 = sp[0][0], s1 = sp[0][1];
        const char *secret = uri + s0;
        size_t n = s1 - s0;
        /* The same URI with another secret (one that parses: no '%', not
         * empty) must redact, and be refused, exactly the same. */
        char *other = malloc(len + 2);
        if (!other)
            abort();
        memcpy(other, uri, s0);
        other[s0] = 'x';
        memcpy(other + s0 + 1, uri + s1, len - s1 + 1);
        char *oshown = baton_sink__redis_redact(other);
        FUZZ_CHECK(!strcmp(oshown, shown), "'%s' shows as '%s' but '%s' as '%s'", uri, shown, other,
                   oshown);
        if (pct_valid(secret, n)) {
            char oerr[BATON_SINK_ERRSTR_SIZE] = "";
            int orc = baton_sink_redis_ops.check(other, oerr, sizeof(oerr));
            FUZZ_CHECK(orc == err && !strcmp(oerr, errstr),
                       "the check's outcome depends on the secret: '%s' -> %d '%s', '%s' -> %d "
                       "'%s'",
                       uri, err, errstr, other, orc, oerr);
        }
        free(oshown);
        free(other);
    }
    /* PostgreSQL's redaction, which also redacts every URI of an unknown
     * scheme: it once read past the string on "a@b:c" (a ':' after the
     * last '@'). Its output is a string no longer than the input with
     * each secret as "***". */
    char *pg = baton_sink__pg_redact(uri);
    FUZZ_CHECK(pg != NULL, "no pg redaction of '%s'", uri);
    if (!memchr(uri, '@', len) && !strcasestr(uri, "password"))
        FUZZ_CHECK(!strcmp(pg, uri), "'%s' has no secret but pg shows '%s'", uri, pg);
    free(pg);
    free(shown);
    free(uri);
    return 0;
}
