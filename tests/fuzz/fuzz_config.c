/* fuzz_config.c: fuzz target for the --config file parser
 * (baton_props_parse in baton_conf.h: Java-properties syntax). The input is
 * the file's text. Checks: no crash, leak or out-of-bounds read; an error
 * is BATON_INVALID with a message naming the file; a success gives entries
 * with non-empty, distinct keys (a duplicate key is an error by contract)
 * and line numbers that start at 1 and never fall. */
#include "fuzz.h"

#include "baton_conf.h"
#include "baton_err.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    baton_prop_t *props = NULL;
    size_t n = 0;
    char errstr[512] = "";
    int err = baton_props_parse("fuzz.properties", (const char *)data, size, &props, &n, errstr,
                                sizeof(errstr));
    if (err != BATON_OK) {
        FUZZ_CHECK(err == BATON_INVALID, "returned %d", err);
        FUZZ_CHECK(strstr(errstr, "fuzz.properties") != NULL, "message does not name the file: %s",
                   errstr);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(props[i].key && props[i].key[0], "entry %zu has an empty key", i);
        FUZZ_CHECK(props[i].value != NULL, "entry %zu has no value", i);
        FUZZ_CHECK(props[i].line >= 1 && (i == 0 || props[i].line >= props[i - 1].line),
                   "entry %zu: line %d after %d", i, props[i].line, i ? props[i - 1].line : 0);
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(props[i].key, props[j].key) != 0, "duplicate key '%s' accepted",
                       props[i].key);
    }
    baton_props_free(props, n);
    return 0;
}
