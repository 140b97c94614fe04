/* baton_incarnation.c: the member lock file of baton_incarnation.h. */
#include "baton_incarnation.h"

#include "baton/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file is small; anything longer is not ours. */
#define INC_FILE_MAX 4096

int baton_incarnation_dir(const char *dir, char *out, size_t size) {
    const char *env = getenv("BATON_STATE_DIR"), *sysd = getenv("STATE_DIRECTORY");
    if (dir && dir[0])
        snprintf(out, size, "%s", dir);
    else if (env && env[0])
        snprintf(out, size, "%s", env);
    else if (sysd && sysd[0]) /* systemd lists several, separated by ':' */
        snprintf(out, size, "%.*s", (int)strcspn(sysd, ":"), sysd);
    else {
        snprintf(out, size, "%s", BATON_STATE_DIR_DEFAULT);
        return 0;
    }
    return 1;
}

/* Creates dir and its missing parents (0700 for what it creates). */
static int mkdir_p(const char *dir) {
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
        return ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return errno;
        *p = '/';
    }
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return errno;
    struct stat st;
    if (stat(buf, &st) != 0)
        return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* Reads an earlier= line's comma-separated ids into inc (NULL: checks
 * only). Returns 0, or -1 with why. */
static int parse_earlier(const char *v, size_t len, baton_incarnation_t *inc, const char **why) {
    int k = 0;
    for (size_t i = 0; len > 0 && v[len - 1] != ','; k++) {
        if (i >= len) {
            if (inc)
                inc->nearlier = k;
            return 0;
        }
        size_t n = strcspn(v + i, ",\n");
        char id[BATON_UUID_LEN + 1];
        if (n != BATON_UUID_LEN || k >= BATON_INC_EARLIER_MAX)
            break;
        memcpy(id, v + i, n);
        id[n] = 0;
        if (baton_uuid_valid(id) != 0)
            break;
        if (inc)
            memcpy(inc->earlier[k], id, sizeof(id));
        i += n + (v[i + n] == ',');
    }
    *why = "its earlier= line is not a short list of UUIDs";
    return -1;
}

/* Reads the file's fields (the earlier= list into inc when not NULL).
 * Returns 0; 1 for an empty file; -1 if it is not a lock file of ours (why
 * says what is wrong). */
static int parse(const char *text, char *inc, long *pid, char *host, size_t hostsz,
                 baton_incarnation_t *earlier, const char **why) {
    if (!text[0])
        return 1;
    int have_inc = 0, have_pid = 0;
    const char *line = text;
    while (*line) {
        size_t len = strcspn(line, "\n");
        if (line[len] != '\n') {
            *why = "its last line is unfinished";
            return -1;
        }
        if (line[0] == '#' || len == 0) {
            /* a comment */
        } else if (strncmp(line, "incarnation=", 12) == 0 && len - 12 == BATON_UUID_LEN) {
            memcpy(inc, line + 12, BATON_UUID_LEN);
            inc[BATON_UUID_LEN] = 0;
            if (baton_uuid_valid(inc) != 0) {
                *why = "its incarnation is not a UUID";
                return -1;
            }
            have_inc = 1;
        } else if (strncmp(line, "pid=", 4) == 0 && len > 4 && len < 24) {
            char num[24];
            memcpy(num, line + 4, len - 4);
            num[len - 4] = 0;
            char *end = NULL;
            long v = strtol(num, &end, 10);
            if (*end || v <= 0) { /* *pid stays as it was: a pid, or 0 */
                *why = "its pid is not a number";
                return -1;
            }
            *pid = v;
            have_pid = 1;
        } else if (strncmp(line, "host=", 5) == 0) {
            snprintf(host, hostsz, "%.*s", (int)(len - 5), line + 5);
        } else if (strncmp(line, "earlier=", 8) == 0) {
            if (parse_earlier(line + 8, len - 8, earlier, why) != 0)
                return -1;
        } else {
            *why = "it has a line that is none of incarnation=, pid=, host=, earlier=";
            return -1;
        }
        line += len + 1;
    }
    if (!have_inc || !have_pid) {
        *why = have_inc ? "it has no pid" : "it has no incarnation";
        return -1;
    }
    return 0;
}

/* Reads the whole file at fd into buf (NUL-terminated). Returns the length
 * or -1 (errno) ; -2 if it does not fit (more than size - 1 bytes: a full
 * buffer is refused only when one more byte is there to read). */
static ssize_t read_all(int fd, char *buf, size_t size) {
    size_t got = 0;
    if (lseek(fd, 0, SEEK_SET) < 0)
        return -1;
    for (;;) {
        char more;
        int full = got == size - 1;
        ssize_t n = full ? read(fd, &more, 1) : read(fd, buf + got, size - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        if (full)
            return -2;
        got += (size_t)n;
    }
    buf[got] = 0;
    return (ssize_t)got;
}

int baton_incarnation_open(baton_incarnation_t *inc, const char *dir, const char *group,
                           const char *id, char *errstr, size_t n) {
    memset(inc, 0, sizeof(*inc));
    inc->fd = -1;
    char dirbuf[4096];
    inc->dir_chosen = baton_incarnation_dir(dir, dirbuf, sizeof(dirbuf));
    dir = dirbuf;
    int e = mkdir_p(dir);
    if (e)
        return baton_seterr(errstr, n, BATON_IO, "state directory '%s': %s", dir, strerror(e));
    size_t plen = strlen(dir) + strlen(group) + strlen(id) + 8;
    inc->path = malloc(plen);
    if (!inc->path)
        abort();
    snprintf(inc->path, plen, "%s/%s.%s.lock", dir, group, id);
    inc->fd = open(inc->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (inc->fd < 0) {
        int err =
            baton_seterr(errstr, n, BATON_IO, "member lock '%s': %s", inc->path, strerror(errno));
        baton_incarnation_close(inc);
        return err;
    }
    char text[INC_FILE_MAX];
    const char *why = NULL;
    if (flock(inc->fd, LOCK_EX | LOCK_NB) != 0) {
        int busy = errno == EWOULDBLOCK;
        int err;
        if (busy) {
            char prev[BATON_UUID_LEN + 1];
            if (read_all(inc->fd, text, sizeof(text)) >= 0)
                parse(text, prev, &inc->holder_pid, inc->holder_host, sizeof(inc->holder_host),
                      NULL, &why);
            char who[320] = "";
            if (inc->holder_pid > 0)
                snprintf(who, sizeof(who), " (pid %ld on %s)", inc->holder_pid,
                         inc->holder_host[0] ? inc->holder_host : "this host");
            err = baton_seterr(errstr, n, BATON_EXISTS,
                               "member id '%s' of group '%s' is held by a live process on this "
                               "host%s: it holds %s",
                               id, group, who, inc->path);
        } else {
            err = baton_seterr(errstr, n, BATON_IO, "member lock '%s': %s", inc->path,
                               strerror(errno));
        }
        long pid = inc->holder_pid;
        char host[sizeof(inc->holder_host)];
        memcpy(host, inc->holder_host, sizeof(host));
        baton_incarnation_close(inc);
        inc->holder_pid = pid;
        memcpy(inc->holder_host, host, sizeof(host));
        return err;
    }
    ssize_t len = read_all(inc->fd, text, sizeof(text));
    long pid = 0;
    char host[256] = "";
    int rc = len == -2 ? (why = "it is too long to be one", -1)
             : len < 0 ? -2
                       : parse(text, inc->previous, &pid, host, sizeof(host), inc, &why);
    if (rc == -2 || rc == -1) {
        int err = rc == -2 ? baton_seterr(errstr, n, BATON_IO, "member lock '%s': %s", inc->path,
                                          strerror(errno))
                           : baton_seterr(errstr, n, BATON_CORRUPT,
                                          "member lock '%s' is not a baton lock file (%s); "
                                          "remove it once no member '%s' of group '%s' runs on "
                                          "this host",
                                          inc->path, why, id, group);
        baton_incarnation_close(inc);
        return err;
    }
    if (rc == 1) {
        inc->previous[0] = 0;
        inc->nearlier = 0;
    }
    if (baton_uuid_new(inc->current) != 0) {
        baton_incarnation_close(inc);
        return baton_seterr(errstr, n, BATON_IO, "no randomness for an incarnation id");
    }
    return BATON_OK;
}

/* Writes the file: our incarnation, pid and host, and the earlier ids
 * (earlier=, if n > 0); synced if sync. */
static int write_file(baton_incarnation_t *inc, char earlier[][BATON_UUID_LEN + 1], int ne,
                      int sync, char *errstr, size_t n) {
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "unknown");
    char text[INC_FILE_MAX];
    int len = snprintf(text, sizeof(text),
                       "# baton member lock: the process holding flock(2) on this file is the "
                       "member; do not edit\n"
                       "incarnation=%s\npid=%ld\nhost=%s\n",
                       inc->current, (long)getpid(), host);
    for (int k = 0; k < ne && len > 0 && (size_t)len < sizeof(text); k++)
        len += snprintf(text + len, sizeof(text) - (size_t)len, "%s%s%s",
                        k ? "," : "earlier=", earlier[k], k == ne - 1 ? "\n" : "");
    if (inc->fd < 0 || len <= 0 || (size_t)len >= sizeof(text))
        return baton_seterr(errstr, n, BATON_IO, "member lock '%s': not open",
                            inc->path ? inc->path : "?");
    /* Truncate and write in place (the lock is on this inode: a rename
     * would move it away from the lock). */
    if (ftruncate(inc->fd, 0) != 0 || pwrite(inc->fd, text, (size_t)len, 0) != len ||
        (sync && fsync(inc->fd) != 0))
        return baton_seterr(errstr, n, BATON_IO, "member lock '%s': cannot write: %s", inc->path,
                            strerror(errno));
    return BATON_OK;
}

int baton_incarnation_commit(baton_incarnation_t *inc, char *errstr, size_t n) {
    /* Our predecessors that may still have a live node: the previous one
     * and its own earlier ones, newest first, at most BATON_INC_EARLIER_MAX. */
    char list[BATON_INC_EARLIER_MAX][BATON_UUID_LEN + 1];
    int ne = 0;
    if (inc->previous[0] && strcmp(inc->previous, inc->current) != 0)
        memcpy(list[ne++], inc->previous, sizeof(list[0]));
    for (int k = 0; k < inc->nearlier && ne < BATON_INC_EARLIER_MAX; k++)
        if (strcmp(inc->earlier[k], inc->previous) != 0)
            memcpy(list[ne++], inc->earlier[k], sizeof(list[0]));
    return write_file(inc, list, ne, 1, errstr, n);
}

int baton_incarnation_confirm(baton_incarnation_t *inc, char *errstr, size_t n) {
    inc->previous[0] = 0; /* gone: our node could be created */
    inc->nearlier = 0;
    return write_file(inc, NULL, 0, 0, errstr, n);
}

int baton_incarnation_known(const baton_incarnation_t *inc, const char *id) {
    if (!id || !id[0])
        return 0;
    if (strcmp(id, inc->current) == 0 || (inc->previous[0] && strcmp(id, inc->previous) == 0))
        return 1;
    for (int k = 0; k < inc->nearlier; k++)
        if (strcmp(id, inc->earlier[k]) == 0)
            return 1;
    return 0;
}

void baton_incarnation_close(baton_incarnation_t *inc) {
    if (inc->fd >= 0)
        close(inc->fd);
    inc->fd = -1;
    free(inc->path);
    inc->path = NULL;
}
