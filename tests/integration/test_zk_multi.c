/* test_zk_multi.c: baton_zk_multi (common/baton_zk.h) against a real
 * ZooKeeper that it_zk_multi.sh starts and whose pid it passes:
 *  - a multi that commits: ZOK, each create's name in its result;
 *  - a multi that fails: the first failing op's code, and each op's own
 *    code in its result (the coordinator's publish tells a vanished node
 *    from a changed assignment by them);
 *  - a multi in flight while the server is frozen (SIGSTOP, and every
 *    thread of it seen stopped first): it ends with
 *    a lost connection (ZOPERATIONTIMEOUT) once the client gives it up. The 3.8
 *    client's zoo_multi leaked its ops' bookkeeping on that path (168 bytes
 *    an op, seen by LeakSanitizer in a chaos run); run under the
 *    sanitizers, a leak there fails this test at exit.
 * The server is resumed (SIGCONT) before the program exits, whatever
 * happened. Exit 0 with "zk_multi=ok" on success, 1 with a message. */
#include "baton_err.h"
#include "baton_zk.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

static int failed;

/* Whether every thread of pid is stopped (state T in its /proc stat). A
 * SIGSTOP stops a process's threads as each next leaves the kernel, not
 * when kill() returns: a JVM thread already running can go on for a
 * moment. -1 when the tasks cannot be read. */
static int all_stopped(pid_t pid) {
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%ld/task", (long)pid);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int stopped = 1, seen = 0;
    struct dirent *e;
    while (stopped && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[sizeof(dir) + sizeof(e->d_name) + 8], buf[512];
        snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* a thread that ended */
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *close_paren = strrchr(buf, ')'); /* the name may hold spaces */
        seen++;
        if (!close_paren || close_paren[1] != ' ' || close_paren[2] != 'T')
            stopped = 0;
    }
    closedir(d);
    return seen ? stopped : -1;
}

#define CHECK(cond, ...)                                    \
    do {                                                    \
        if (!(cond)) {                                      \
            fprintf(stderr, "test_zk_multi: " __VA_ARGS__); \
            fputc('\n', stderr);                            \
            failed = 1;                                     \
        }                                                   \
    } while (0)

#define NOPS 6

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_zk_multi ZK_HOSTS ZK_SERVER_PID\n");
        return 2;
    }
    pid_t server = (pid_t)atol(argv[2]);
    if (server <= 1) {
        fprintf(stderr, "test_zk_multi: bad server pid '%s'\n", argv[2]);
        return 2;
    }
    char errstr[256];
    baton_zk_t *zk = NULL;
    /* A 3 s session: the client gives a silent connection up after 2 s. */
    if (baton_zk_connect(argv[1], 3000, 10000, NULL, &zk, errstr, sizeof(errstr)) != BATON_OK) {
        fprintf(stderr, "test_zk_multi: %s\n", errstr);
        return 1;
    }
    int err = baton_zk_create(zk, "/zkm", "", 0, 0, NULL, 0, NULL);
    CHECK(err == BATON_OK || err == BATON_EXISTS, "create /zkm: %s", baton_err_name(err));

    zoo_op_t ops[NOPS];
    zoo_op_result_t res[NOPS];
    char names[NOPS][64];
    for (int i = 0; i < NOPS; i++)
        zoo_create_op_init(&ops[i], "/zkm/n-", "x", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_SEQUENCE, names[i],
                           sizeof(names[i]));
    int rc = baton_zk_multi(zk, NOPS, ops, res);
    CHECK(rc == ZOK, "a multi of %d creates: %s", NOPS, zerror(rc));
    for (int i = 0; rc == ZOK && i < NOPS; i++)
        CHECK(res[i].err == ZOK && strncmp(names[i], "/zkm/n-", 7) == 0,
              "create %d: err=%d name=%s", i, res[i].err, names[i]);

    /* A create that would commit, a set at a wrong version, a delete of a
     * missing node: nothing commits, and each op says why. */
    zoo_op_t bad[3];
    zoo_op_result_t bres[3];
    zoo_create_op_init(&bad[0], "/zkm/never", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_set_op_init(&bad[1], "/zkm", "v", 1, 7, NULL);
    zoo_delete_op_init(&bad[2], "/zkm/missing", -1);
    rc = baton_zk_multi(zk, 3, bad, bres);
    CHECK(rc == ZBADVERSION, "the failing multi returned %s, wanted ZBADVERSION", zerror(rc));
    CHECK(bres[1].err == ZBADVERSION, "the set's result: %s", zerror(bres[1].err));
    CHECK(bres[0].err != ZBADVERSION && bres[2].err != ZOK && bres[2].err != ZBADVERSION,
          "the other ops' results: %s, %s", zerror(bres[0].err), zerror(bres[2].err));
    CHECK(baton_zk_exists(zk, "/zkm/never", 0, NULL) == BATON_NOTFOUND,
          "a failed multi's create committed");

    /* In flight while the server is frozen. */
    if (kill(server, SIGSTOP) != 0) {
        perror("test_zk_multi: SIGSTOP");
        return 1;
    }
    int st = 0;
    for (int i = 0; i < 400 && (st = all_stopped(server)) == 0; i++)
        nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
    if (st != 1) {
        kill(server, SIGCONT);
        fprintf(stderr, "test_zk_multi: the server (pid %ld) %s\n", (long)server,
                st < 0 ? "has no readable threads" : "did not stop within 2 s of SIGSTOP");
        return 1;
    }
    rc = baton_zk_multi(zk, NOPS, ops, res);
    kill(server, SIGCONT);
    CHECK(baton_zk_err(rc) == BATON_CONNECTION,
          "a multi to a frozen server returned %s, wanted a lost connection", zerror(rc));

    baton_zk_destroy(zk);
    if (!failed)
        printf("zk_multi=ok\n");
    return failed;
}
