/* fuzz_notice.c: fuzz target for the release notices' receiving side
 * (worker/member_notice.c, mb_notice_feed): datagrams that anyone who can
 * reach a member's notice socket can send (docs/design.md, "What it
 * trusts"). The input is split at each 0xff byte into up to 16 datagrams,
 * fed in order to one membership, so that a SUB, its HLD, HLD+ and a REL
 * meet the state the ones before left.
 *
 * The membership has no ZooKeeper session (m->zk NULL: no watch is set,
 * as in tests/unit/test_member_notice.c); it has 4 partitions and 2 keys,
 * stands by for owner "o1" on p0, p1 and "nightly" and owns p2, each
 * claim waiting behind sequence 7, so a REL can free a claim and promote.
 * Checks: no crash, leak or out-of-bounds access (ASan, UBSan); every
 * subscriber's held rows stay sorted, unique and within the table; a
 * claim is freed only by a REL naming sequence 7 of one of those rows;
 * the subscribers never pass the bound; a standby is marked for a
 * promotion only for a row it stands by for; every log line the
 * datagrams cause, at debug (a base or an item is logged as sent), is one
 * line, and in JSON (inputs of odd length) one that parses. */
#include "fuzz.h"

#include "baton_log.h"
#include "member_int.h"

#include <jansson.h>
#include <netinet/in.h>
#include <string.h>

#define NPARTS 4
#define DGRAMS_MAX 16
#define PRED_SEQ 7

static void claim_behind(baton_membership_t *m, size_t row, int assigned) {
    mpart_t *mp = &m->st[row];
    mp->state = mstate_make(assigned, MPHASE_CLAIMED);
    snprintf(mp->claim, sizeof(mp->claim), "claim-0100045078e900f6-%010d", PRED_SEQ + 1);
    mp->pred_seq = PRED_SEQ;
    mp->pred_for = PRED_SEQ + 2;
}

static void setup(baton_membership_t *m) {
    memset(m, 0, sizeof(*m));
    m->base = strdup("/baton/g");
    m->conf.id = "me";
    m->notice.fd = m->notice.epfd = m->notice.ep_zkfd = -1;
    m->notice.holds = 1;
    baton_res_table_init(&m->res, m->base, NPARTS);
    size_t nightly = mb_key_row(m, "nightly"); /* allocates every row's state */
    mb_key_row(m, "hourly");
    m->standby = calloc(1, sizeof(mstandby_t));
    FUZZ_CHECK(m->base && m->standby, "out of memory");
    m->standby[0].owner = strdup("o1");
    m->standby[0].rows = malloc(3 * sizeof(size_t));
    FUZZ_CHECK(m->standby[0].owner && m->standby[0].rows, "out of memory");
    m->standby[0].rows[0] = 0;
    m->standby[0].rows[1] = 1;
    m->standby[0].rows[2] = nightly;
    m->standby[0].n = 3;
    m->nstandby = 1;
    claim_behind(m, 0, 0);
    claim_behind(m, 1, 0);
    claim_behind(m, nightly, 0);
    claim_behind(m, 2, 1);
}

static void teardown(baton_membership_t *m) {
    mb_notice_close(m);
    mb_standby_clear(m);
    baton_res_table_free(&m->res);
    free(m->st);
    free(m->dirty_rows);
    free(m->base);
}

static void check(const baton_membership_t *m) {
    FUZZ_CHECK(m->notice.nsubs <= 4096, "%zu subscribers", m->notice.nsubs);
    for (size_t i = 0; i < m->notice.nsubs; i++) {
        const msub_t *s = &m->notice.subs[i];
        FUZZ_CHECK(strlen(s->id) > 0, "subscriber %zu has no id", i);
        FUZZ_CHECK(s->rows || s->nrows == 0, "subscriber %s: %zu rows, no list", s->id, s->nrows);
        for (size_t j = 0; j < s->nrows; j++) {
            FUZZ_CHECK(s->rows[j] < m->res.n, "subscriber %s: row %zu of %zu", s->id, s->rows[j],
                       m->res.n);
            FUZZ_CHECK(j == 0 || s->rows[j - 1] < s->rows[j], "subscriber %s: rows not sorted",
                       s->id);
        }
    }
    for (size_t row = 0; row < m->res.n; row++) {
        const mpart_t *mp = &m->st[row];
        if (mp->pred_gone)
            FUZZ_CHECK(mp->pred_for == PRED_SEQ + 2 && mp->noticed_seq1 == PRED_SEQ + 1,
                       "row %zu freed by sequence %lld", row, (long long)mp->noticed_seq1 - 1);
    }
    const mstandby_t *e = &m->standby[0];
    FUZZ_CHECK(e->fired == 0 || e->fired == MB_FIRED_NOTICE, "fired %d", e->fired);
    if (e->fired)
        FUZZ_CHECK(m->st[0].pred_gone || m->st[1].pred_gone || m->st[e->rows[2]].pred_gone,
                   "a promotion with no row of o1 freed");
}

static void log_line(void *opaque, int level, const char *line) {
    (void)opaque;
    (void)level;
    FUZZ_CHECK(!strchr(line, '\n'), "a log line with a newline: %s", line);
    if (line[0] == '{') {
        json_t *j = json_loads(line, 0, NULL);
        FUZZ_CHECK(j != NULL, "a JSON log line that does not parse: %s", line);
        json_decref(j);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const baton_log_sink_t sink = {.cb = log_line, .level = BATON_LOG_DEBUG};
    BATON_LOG_SCOPE(&sink);
    baton_log_set_format(size % 2 ? BATON_LOG_FORMAT_JSON : BATON_LOG_FORMAT_TEXT);
    baton_membership_t m;
    setup(&m);
    struct sockaddr_storage from = {.ss_family = AF_INET};
    size_t start = 0;
    for (int d = 0; d < DGRAMS_MAX && start <= size; d++) {
        const uint8_t *end = memchr(data + start, 0xff, size - start);
        size_t len = end ? (size_t)(end - (data + start)) : size - start;
        char *buf = malloc(len + 1); /* exactly: ASan sees a read past it */
        FUZZ_CHECK(buf, "out of memory");
        memcpy(buf, data + start, len);
        buf[len] = 0;
        mb_notice_feed(&m, buf, len, &from, sizeof(struct sockaddr_in));
        free(buf);
        check(&m);
        if (!end)
            break;
        start += len + 1;
    }
    teardown(&m);
    return 0;
}
