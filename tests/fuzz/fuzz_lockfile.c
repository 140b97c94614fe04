/* fuzz_lockfile.c: fuzz target for the member lock file's parser
 * (common/baton_incarnation.c), which reads a file in the state directory
 * that a crashed process, an operator or another program may have left.
 * The input is the file's content: written to <dir>/g.m.lock in a private
 * directory the target makes (under $TMPDIR, else /dev/shm, else /tmp:
 * baton_incarnation_commit syncs) and removes at exit, then read by
 * baton_incarnation_open twice: once while the target holds the file's
 * flock itself (the holder's pid and host read for the message) and once
 * free. Checks: no crash, leak or out-of-bounds read; the held open is
 * BATON_EXISTS with the holder's pid > 0 when the file is valid; the free
 * open accepts exactly what an independent reading of baton_incarnation.h's
 * format accepts (text up to the first NUL: '\n'-ended lines, each a
 * comment, blank, incarnation=UUID, pid=N, host=..., or earlier= with 1 to
 * BATON_INC_EARLIER_MAX UUIDs; an incarnation and a pid; the last of a
 * repeated line wins; an empty file is no previous incarnation) with the
 * same previous and earlier ids, refuses the rest as BATON_CORRUPT with a
 * message naming the file, and what it accepted round-trips: commit, then
 * a new open reads our incarnation back as the previous one and the
 * predecessors as earlier. */
#include "fuzz.h"

#include "baton_err.h"
#include "baton_incarnation.h"

#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file's size limit: one this long is "too long to be one". */
#define LOCK_FILE_MAX 4096

static char dir[128], path[160];

static void lockfile_cleanup(void) {
    unlink(path);
    rmdir(dir);
}

/* Makes the private directory on the first call. */
static void lockfile_setup(void) {
    if (dir[0])
        return;
    struct stat st;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !tmp[0])
        tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof(dir), "%s/fuzz_lockfile.XXXXXX", tmp);
    FUZZ_CHECK(mkdtemp(dir) != NULL, "cannot make a directory under %s", tmp);
    snprintf(path, sizeof(path), "%s/g.m.lock", dir);
    atexit(lockfile_cleanup);
}

static void write_input(const uint8_t *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0, "cannot write %s", path);
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);
        FUZZ_CHECK(n > 0, "cannot write %s", path);
        off += (size_t)n;
    }
    close(fd);
}

/* What the format says of a text. */
typedef struct {
    int verdict; /* 1 a lock file, 0 empty, -1 not one */
    char inc[BATON_UUID_LEN + 1];
    char earlier[BATON_INC_EARLIER_MAX][BATON_UUID_LEN + 1];
    int nearlier;
} ref_t;

static int ref_uuid(const char *s, size_t n) {
    if (n != BATON_UUID_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

static int ref_line(ref_t *r, const char *l, size_t n, int *have_inc, int *have_pid) {
    if (n == 0 || l[0] == '#')
        return 1;
    if (n >= 12 && !strncmp(l, "incarnation=", 12)) {
        if (!ref_uuid(l + 12, n - 12))
            return 0;
        memcpy(r->inc, l + 12, BATON_UUID_LEN);
        r->inc[BATON_UUID_LEN] = 0;
        return *have_inc = 1;
    }
    if (n >= 4 && !strncmp(l, "pid=", 4)) {
        /* N as strtol reads it, whole, positive, at most 19 characters. */
        char num[24];
        if (n == 4 || n - 4 > 19)
            return 0;
        memcpy(num, l + 4, n - 4);
        num[n - 4] = 0;
        char *end = NULL;
        long pid = strtol(num, &end, 10);
        return *have_pid = !*end && pid > 0;
    }
    if (n >= 5 && !strncmp(l, "host=", 5))
        return 1;
    if (n >= 8 && !strncmp(l, "earlier=", 8)) {
        int k = 0;
        for (size_t i = 8;; k++) {
            size_t e = i;
            while (e < n && l[e] != ',')
                e++;
            if (k == BATON_INC_EARLIER_MAX || !ref_uuid(l + i, e - i))
                return 0;
            memcpy(r->earlier[k], l + i, BATON_UUID_LEN);
            r->earlier[k][BATON_UUID_LEN] = 0;
            if (e == n)
                break;
            i = e + 1;
        }
        r->nearlier = k + 1;
        return 1;
    }
    return 0;
}

static void ref_read(const char *text, ref_t *r) {
    memset(r, 0, sizeof(*r));
    if (!text[0])
        return;
    int have_inc = 0, have_pid = 0;
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        if (!nl || !ref_line(r, l, (size_t)(nl - l), &have_inc, &have_pid)) {
            r->verdict = -1;
            return;
        }
        l = nl + 1;
    }
    r->verdict = have_inc && have_pid ? 1 : -1;
}

/* Commits inc, and checks that a new open reads it back. */
static void round_trip(baton_incarnation_t *inc) {
    char err[512] = "";
    /* What commit must list: the previous incarnation, then its earlier
     * ones (newest first), at most BATON_INC_EARLIER_MAX. */
    char want[BATON_INC_EARLIER_MAX][BATON_UUID_LEN + 1];
    int nwant = 0;
    if (inc->previous[0])
        memcpy(want[nwant++], inc->previous, sizeof(want[0]));
    for (int k = 0; k < inc->nearlier && nwant < BATON_INC_EARLIER_MAX; k++)
        if (strcmp(inc->earlier[k], inc->previous) != 0)
            memcpy(want[nwant++], inc->earlier[k], sizeof(want[0]));
    char current[BATON_UUID_LEN + 1];
    memcpy(current, inc->current, sizeof(current));
    FUZZ_CHECK(baton_incarnation_commit(inc, err, sizeof(err)) == BATON_OK, "commit: %s", err);
    baton_incarnation_close(inc);
    baton_incarnation_t re;
    int rc = baton_incarnation_open(&re, dir, "g", "m", err, sizeof(err));
    FUZZ_CHECK(rc == BATON_OK, "our own file refused (%d): %s", rc, err);
    FUZZ_CHECK(!strcmp(re.previous, current), "previous '%s', wrote '%s'", re.previous, current);
    FUZZ_CHECK(re.nearlier == nwant, "%d earlier read back, %d written", re.nearlier, nwant);
    for (int k = 0; k < nwant; k++)
        FUZZ_CHECK(!strcmp(re.earlier[k], want[k]), "earlier %d: '%s', wrote '%s'", k,
                   re.earlier[k], want[k]);
    baton_incarnation_close(&re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lockfile_setup();
    write_input(data, size);
    char text[LOCK_FILE_MAX];
    size_t tlen = strnlen((const char *)data, size < sizeof(text) ? size : sizeof(text) - 1);
    memcpy(text, data, tlen);
    text[tlen] = 0;
    ref_t ref;
    ref_read(text, &ref);
    if (size >= LOCK_FILE_MAX - 1)
        ref.verdict = -1; /* too long to be one, whatever it starts with */

    /* Held by us: another holder, named from the file. */
    char err[512] = "";
    int hold = open(path, O_RDWR | O_CLOEXEC);
    FUZZ_CHECK(hold >= 0 && flock(hold, LOCK_EX | LOCK_NB) == 0, "cannot lock %s", path);
    baton_incarnation_t inc;
    int rc = baton_incarnation_open(&inc, dir, "g", "m", err, sizeof(err));
    close(hold);
    FUZZ_CHECK(rc == BATON_EXISTS, "held: returned %d: %s", rc, err);
    FUZZ_CHECK(inc.fd == -1 && inc.path == NULL, "held: left open");
    FUZZ_CHECK(strstr(err, "held by a live process") != NULL, "held: message '%s'", err);
    FUZZ_CHECK(memchr(inc.holder_host, 0, sizeof(inc.holder_host)) != NULL, "host unterminated");
    FUZZ_CHECK(inc.holder_pid >= 0 && (ref.verdict != 1 || inc.holder_pid > 0),
               "held: holder pid %ld", inc.holder_pid);

    /* Free: ours, refused, or empty. */
    rc = baton_incarnation_open(&inc, dir, "g", "m", err, sizeof(err));
    if (ref.verdict < 0) {
        FUZZ_CHECK(rc == BATON_CORRUPT, "'%s' (%zu bytes): returned %d, not CORRUPT: %s", text,
                   size, rc, err);
        FUZZ_CHECK(inc.fd == -1, "refused but left open");
        FUZZ_CHECK(strstr(err, path) && strstr(err, "is not a baton lock file"),
                   "message '%s' does not name %s", err, path);
        return 0;
    }
    FUZZ_CHECK(rc == BATON_OK, "'%s': returned %d: %s", text, rc, err);
    FUZZ_CHECK(inc.fd >= 0, "accepted but not open");
    FUZZ_CHECK(baton_uuid_valid(inc.current) == 0, "current '%s'", inc.current);
    FUZZ_CHECK(!strcmp(inc.previous, ref.inc), "previous '%s', file says '%s'", inc.previous,
               ref.inc);
    FUZZ_CHECK(inc.nearlier == ref.nearlier, "%d earlier, file lists %d", inc.nearlier,
               ref.nearlier);
    for (int k = 0; k < ref.nearlier; k++)
        FUZZ_CHECK(!strcmp(inc.earlier[k], ref.earlier[k]), "earlier %d: '%s', file says '%s'", k,
                   inc.earlier[k], ref.earlier[k]);
    FUZZ_CHECK(baton_incarnation_known(&inc, inc.current) &&
                   (!ref.inc[0] || baton_incarnation_known(&inc, ref.inc)),
               "an incarnation of the file is not known");
    round_trip(&inc);
    return 0;
}
