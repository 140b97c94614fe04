/* fuzz_racks.c: fuzz target for the rack lookup's Kafka reply parsers
 * (coord_racks.h): Metadata v4, SaslHandshake v1 and SaslAuthenticate v0,
 * which read bytes a broker (or anyone on the path) sent. The first input
 * byte picks the parser (mod 3), the second the partition count (mod 16)
 * for Metadata; the rest is the reply, from the correlation id on. Checks:
 * no crash, leak or out-of-bounds read; an error has a message and one of
 * the codes the contract names; a Metadata success maps exactly the asked
 * partitions, to racks no longer than the reply. */
#include "fuzz.h"

#include "baton_err.h"
#include "coord_racks.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2)
        return 0;
    int which = data[0] % 3;
    int32_t np = data[1] % 16;
    const unsigned char *reply = data + 2;
    size_t len = size - 2;
    char errstr[512] = "";
    int err;
    if (which == 0) {
        coord_racks_t *r = NULL;
        err = coord_racks_parse_metadata(reply, len, "in", np, &r, errstr, sizeof(errstr));
        if (err == BATON_OK) {
            FUZZ_CHECK(r != NULL, "success without a map");
            FUZZ_CHECK(coord_racks_known(r) <= np, "%d racks for %d partitions",
                       coord_racks_known(r), np);
            FUZZ_CHECK(coord_racks_of(r, np) == NULL && coord_racks_of(r, -1) == NULL,
                       "a rack outside 0..%d", np - 1);
            for (int32_t p = 0; p < np; p++) {
                const char *rack = coord_racks_of(r, p);
                FUZZ_CHECK(!rack || strlen(rack) < len, "partition %d: rack longer than the reply",
                           p);
            }
            FUZZ_CHECK(coord_racks_equal(r, r), "a map differs from itself");
            coord_racks_destroy(r);
            return 0;
        }
        FUZZ_CHECK(r == NULL, "error %d with a map", err);
        FUZZ_CHECK(err == BATON_CORRUPT || err == BATON_NOTFOUND, "returned %d", err);
    } else if (which == 1) {
        err = coord_racks_parse_sasl_handshake(reply, len, "PLAIN", errstr, sizeof(errstr));
        FUZZ_CHECK(err == BATON_OK || err == BATON_CORRUPT || err == BATON_DENIED, "returned %d",
                   err);
    } else {
        err = coord_racks_parse_sasl_authenticate(reply, len, errstr, sizeof(errstr));
        FUZZ_CHECK(err == BATON_OK || err == BATON_CORRUPT || err == BATON_DENIED, "returned %d",
                   err);
    }
    FUZZ_CHECK(err == BATON_OK || errstr[0], "error %d without a message", err);
    return 0;
}
