/* fuzz_plan.c: fuzz target for the plan step (assignment/plan.h). The
 * input's bytes describe a snapshot: the strategy, the partition count, the
 * members (capacity, rack, drained, absent, keys-only, a key filter), named
 * keys, pins (to members, to nobody, to an unknown id), leader racks and the
 * rack policy, and
 * published nodes (of members or of departed ids; partitions out of range,
 * repeated or unsorted; keys the group no longer has; any generation).
 * Checks: no crash, leak or out-of-bounds read; an error is BATON_INVALID
 * with a message; a plan's generation is past every one written, every
 * create/set payload decodes with that generation and the member's
 * partitions, a delete names a published id that is no member, the diff is
 * sorted losers first, and no partition has two owners. */
#include "fuzz.h"

#include "baton_err.h"
#include "baton_util.h"
#include "plan.h"

#include <string.h>

typedef struct {
    const uint8_t *d;
    size_t n, i;
} reader_t;

static unsigned next_byte(reader_t *r) { return r->i < r->n ? r->d[r->i++] : 0; }

#define FMAXW 10
#define FMAXP 64
#define FMAXK 6
#define FMAXPUB 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader_t r = {data, size, 0};
    static const char *const ids[] = {"a", "b", "c", "d",  "e",  "f", "g",
                                      "h", "i", "j", "x0", "x1", "x2"};
    static const char *const racks[] = {"", "r0", "r1", "r2"};
    static const char *const filters[] = {"k0", "k1,k2", "k9", "k0,k3,k5"};
    baton_plan_member_t members[FMAXW];
    char *keys[FMAXK];
    const char *pin_of[FMAXP], *leader_rack[FMAXP];
    int32_t parts[FMAXPUB][8];
    char *pkeys[FMAXPUB][3];
    baton_plan_published_t pub[FMAXPUB];
    baton_plan_snapshot_t s = {.strategy = (baton_strategy_t)(next_byte(&r) % 4),
                               .npartitions = (int32_t)(next_byte(&r) % FMAXP)};
    size_t nw = next_byte(&r) % (FMAXW + 1);
    for (size_t i = 0; i < nw; i++) {
        unsigned f = next_byte(&r);
        members[i] = (baton_plan_member_t){.id = ids[i],
                                           .capacity = (int)(next_byte(&r) % 4),
                                           .rack = racks[next_byte(&r) % 4],
                                           .flags = (f & 1 ? BATON_ASSIGN_DRAINED : 0) |
                                                    (f & 2 ? BATON_ASSIGN_ABSENT : 0),
                                           .no_partitions = (f & 4) != 0,
                                           .keys_filter = (f & 8) != 0,
                                           .keys = filters[(f >> 4) % 4]};
    }
    s.members = members;
    s.nmembers = nw;
    size_t nk = next_byte(&r) % (FMAXK + 1);
    for (size_t k = 0; k < nk; k++)
        keys[k] = xasprintf("k%zu", k);
    s.keys = keys;
    s.nkeys = nk;
    for (int32_t p = 0; p < s.npartitions; p++) {
        unsigned b = next_byte(&r);
        pin_of[p] = b % 5 == 0 ? ids[(b / 5) % 13] : NULL;
        leader_rack[p] = racks[(b >> 4) % 4];
    }
    s.pin_of = pin_of;
    s.leader_rack = next_byte(&r) & 1 ? leader_rack : NULL;
    size_t np = next_byte(&r) % (FMAXPUB + 1), npub = 0;
    int used[13] = {0};
    for (size_t i = 0; i < np; i++) {
        unsigned who = next_byte(&r) % 13;
        if (used[who])
            continue;
        used[who] = 1;
        size_t cnt = next_byte(&r) % 8, kc = next_byte(&r) % 3;
        for (size_t j = 0; j < cnt; j++)
            parts[npub][j] = (int32_t)next_byte(&r) - 16;
        for (size_t j = 0; j < kc; j++)
            pkeys[npub][j] = (char *)(j == 0 ? "k1" : j == 1 ? "k4" : "k8");
        pub[npub] = (baton_plan_published_t){.id = ids[who],
                                             .partitions = parts[npub],
                                             .npartitions = cnt,
                                             .keys = pkeys[npub],
                                             .nkeys = kc,
                                             .generation = (int64_t)(next_byte(&r) % 8),
                                             .valid = (next_byte(&r) % 8) != 0};
        npub++;
    }
    s.published = pub;
    s.npublished = npub;
    unsigned opts = next_byte(&r);
    s.standbys = opts & 1;
    s.republish = (opts & 2) != 0;
    s.generation = (int64_t)((opts >> 2) % 8);
    s.rack_policy = opts & 0x80 ? BATON_RACK_REALIGN : BATON_RACK_TIEBREAK;

    baton_plan_t pl;
    char errstr[256] = "";
    int err = baton_plan_compute(&s, &pl, errstr, sizeof(errstr));
    if (err != BATON_OK) {
        FUZZ_CHECK(err == BATON_INVALID, "returned %d", err);
        FUZZ_CHECK(errstr[0] != 0, "an error without a message");
    } else {
        FUZZ_CHECK(pl.generation > s.generation, "generation %lld not past %lld",
                   (long long)pl.generation, (long long)s.generation);
        for (size_t i = 0; i < npub; i++)
            FUZZ_CHECK(pl.generation > pub[i].generation, "generation %lld not past node %s's",
                       (long long)pl.generation, pub[i].id);
        for (int32_t p = 0; p < s.npartitions; p++)
            FUZZ_CHECK(pl.next[p] >= -1 && pl.next[p] < (int)nw, "partition %d to %d", p,
                       pl.next[p]);
        for (size_t i = 0; i < pl.nops; i++) {
            const baton_plan_op_t *o = &pl.ops[i];
            FUZZ_CHECK(i == 0 || pl.ops[i - 1].delta <= o->delta, "diff not sorted at %zu", i);
            int mi = -1;
            for (size_t k = 0; k < nw; k++)
                if (strcmp(members[k].id, o->id) == 0)
                    mi = (int)k;
            if (o->kind == BATON_PLAN_DELETE) {
                FUZZ_CHECK(mi < 0, "deletes member %s's node", o->id);
                continue;
            }
            FUZZ_CHECK(mi >= 0, "writes a node for %s, no member", o->id);
            baton_worker_assignment_t wa;
            char why[256];
            FUZZ_CHECK(baton_worker_assignment_decode(o->payload, strlen(o->payload), &wa, why,
                                                      sizeof(why)) == BATON_OK,
                       "payload for %s does not decode: %s", o->id, why);
            FUZZ_CHECK(wa.generation == pl.generation, "payload generation %lld",
                       (long long)wa.generation);
            for (size_t j = 0; j < wa.npartitions; j++)
                FUZZ_CHECK(pl.next[wa.partitions[j]] == mi, "%s lists partition %d it does not own",
                           o->id, wa.partitions[j]);
            baton_worker_assignment_release(&wa);
        }
    }
    baton_plan_release(&pl, nw);
    for (size_t k = 0; k < nk; k++)
        free(keys[k]);
    return 0;
}
