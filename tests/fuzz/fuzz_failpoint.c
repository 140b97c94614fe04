/* fuzz_failpoint.c: fuzz target for the BATON_FAILPOINTS spec parser
 * (baton_failpoints_parse). The input is the spec string. Checks: no crash;
 * an error is BATON_INVALID with a message and leaves the previously armed
 * set alone; a success arms the process exactly when the spec has at least
 * one entry. Points are never hit here: their actions stop or end the
 * process. */
#include "fuzz.h"

#include "baton_err.h"
#include "baton_failpoint.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *spec = malloc(size + 1);
    if (!spec)
        abort();
    memcpy(spec, data, size);
    spec[size] = '\0';

    /* An independent count of the non-empty ';'-separated entries. */
    int entries = 0, in_entry = 0;
    for (const char *p = spec; *p; p++) {
        if (*p == ';')
            in_entry = 0;
        else if (!in_entry) {
            in_entry = 1;
            entries++;
        }
    }

    char errstr[256] = "";
    /* Start from a known armed state, to see that a bad spec keeps it. */
    FUZZ_CHECK(baton_failpoints_parse("fuzz.sentinel=stop", errstr, sizeof(errstr)) == BATON_OK,
               "sentinel spec refused: %s", errstr);
    int err = baton_failpoints_parse(spec, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        FUZZ_CHECK(err == BATON_INVALID, "parse returned %d", err);
        FUZZ_CHECK(errstr[0] != '\0', "no error message for '%s'", spec);
        FUZZ_CHECK(memchr(errstr, '\0', sizeof(errstr)) != NULL, "message not terminated");
        FUZZ_CHECK(entries > 0, "empty spec '%s' refused", spec);
        FUZZ_CHECK(baton_failpoints_armed == 1, "a refused spec disarmed the sentinel");
    } else {
        FUZZ_CHECK(baton_failpoints_armed == (entries > 0), "armed=%d with %d entries in '%s'",
                   baton_failpoints_armed, entries, spec);
        FUZZ_CHECK(entries <= 32, "%d entries accepted", entries);
    }
    FUZZ_CHECK(baton_failpoints_parse("", errstr, sizeof(errstr)) == BATON_OK &&
                   !baton_failpoints_armed,
               "cannot disarm");
    free(spec);
    return 0;
}
