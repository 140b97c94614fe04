/* test_zkbatch.c: the batch object of common/baton_zkbatch.h against a real
 * ZooKeeper (it_zkbatch.sh starts one): mixed requests in one flight, each
 * result in its own slot and in the session's order; a slot no request went
 * to; a request the client refuses; and a wait that gives up, leaving the
 * batch to its last completion (run under the sanitizers, a use after free
 * or a leak there fails the test); a whole-batch read counts as heard by
 * the silence clock only if the server answered it. Exit 0 on success, 1 with a message. */
#include "baton_err.h"
#include "baton_zk.h"
#include "baton_zkbatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failed;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "test_zkbatch: " __VA_ARGS__); \
            fputc('\n', stderr);                           \
            failed = 1;                                    \
        }                                                  \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_zkbatch ZK_HOSTS\n");
        return 2;
    }
    char errstr[256];
    baton_zk_t *zk = NULL;
    if (baton_zk_connect(argv[1], 10000, 10000, NULL, &zk, errstr, sizeof(errstr)) != BATON_OK) {
        fprintf(stderr, "test_zkbatch: %s\n", errstr);
        return 1;
    }
    int err = baton_zk_create(zk, "/zkb", "", 0, 0, NULL, 0, NULL);
    CHECK(err == BATON_OK || err == BATON_EXISTS, "create /zkb: %s", baton_err_name(err));

    /* Mixed requests, answered in order: the listing sees the create. */
    baton_zkbatch_t *b = baton_zkbatch_new(zk, 6);
    baton_zkbatch_add_create(b, 0, "/zkb/n-", "x", 1, ZOO_SEQUENCE);
    baton_zkbatch_add_children(b, 1, "/zkb", 0);
    baton_zkbatch_add_exists(b, 2, "/zkb/missing", 1);
    baton_zkbatch_add_set(b, 3, "/zkb", "y", 1, -1);
    baton_zkbatch_add_exists(b, 4, "no-leading-slash", 0); /* refused by the client */
    /* slot 5: no request */
    CHECK(baton_zkbatch_wait(b, 10000) == 1, "the batch did not complete");
    const baton_zkread_t *r = baton_zkbatch_slot(b, 0);
    CHECK(r->err == BATON_OK && r->created && strncmp(r->created, "/zkb/n-", 7) == 0 &&
              r->stat.czxid > 0,
          "create: err=%s created=%s", baton_err_name(r->err), r->created ? r->created : "");
    r = baton_zkbatch_slot(b, 1);
    CHECK(r->err == BATON_OK && r->count == 1 && strncmp(r->names[0], "n-", 2) == 0,
          "children: err=%s count=%zu", baton_err_name(r->err), r->count);
    r = baton_zkbatch_slot(b, 2);
    CHECK(r->err == BATON_NOTFOUND, "exists of a missing node: %s", baton_err_name(r->err));
    r = baton_zkbatch_slot(b, 3);
    CHECK(r->err == BATON_OK && r->stat.version == 1, "set: err=%s version=%d",
          baton_err_name(r->err), r->stat.version);
    r = baton_zkbatch_slot(b, 4);
    CHECK(r->err != BATON_OK, "a bad path was not refused");
    r = baton_zkbatch_slot(b, 5);
    CHECK(r->err == BATON_INTERNAL, "an unused slot reads %s", baton_err_name(r->err));
    baton_zkbatch_free(b);
    baton_zkbatch_free(NULL);

    /* The silence clock's note (baton_zk_answered_ms): a whole-batch read
     * the client refused (a bad path) was never answered by the server and
     * must not count as heard; one the server answered does. */
    int64_t before = baton_zk_answered_ms(zk);
    usleep(20000);
    char *bad[] = {"no-leading-slash", "another-bad-path"};
    baton_zkread_t refused[2] = {{0}};
    baton_zkbatch_get(zk, bad, 2, refused);
    CHECK(refused[0].err != BATON_OK && refused[1].err != BATON_OK, "bad paths were read");
    CHECK(baton_zk_answered_ms(zk) == before,
          "a batch the client refused counted as answered (%lld -> %lld)", (long long)before,
          (long long)baton_zk_answered_ms(zk));
    for (size_t i = 0; i < 2; i++)
        baton_zkread_release(&refused[i]);
    char *good[] = {"/zkb"};
    baton_zkread_t answered = {0};
    baton_zkbatch_get(zk, good, 1, &answered);
    CHECK(answered.err == BATON_OK && baton_zk_answered_ms(zk) > before,
          "an answered batch was not noted (err=%s, %lld -> %lld)", baton_err_name(answered.err),
          (long long)before, (long long)baton_zk_answered_ms(zk));
    baton_zkread_release(&answered);

    /* An empty batch is complete at once. */
    b = baton_zkbatch_new(zk, 0);
    CHECK(baton_zkbatch_wait(b, 0) == 1, "an empty batch did not complete");
    baton_zkbatch_free(b);

    /* A wait that gives up: the batch is the completions' to free. */
    int gave_up = 0;
    for (int round = 0; round < 5 && !gave_up; round++) {
        b = baton_zkbatch_new(zk, 300);
        for (size_t i = 0; i < 300; i++)
            baton_zkbatch_add_children(b, i, "/zkb", 0);
        if (baton_zkbatch_wait(b, 0))
            baton_zkbatch_free(b); /* all answered already: try again */
        else
            gave_up = 1; /* b must not be touched again */
    }
    CHECK(gave_up, "no wait gave up in 5 rounds of 300 reads with no time to wait");
    /* Every request is still answered (or cut off by the close). */
    sleep(1);
    baton_zk_destroy(zk);
    if (!failed)
        printf("zkbatch=ok\n");
    return failed;
}
