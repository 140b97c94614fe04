/* fence.c: the fenced state file of baton/fence.h -- the highest epoch
 * kept in the file's first line, every change made under an exclusive
 * flock on a side lock file and published by an atomic rename. */
#include <baton/fence.h>

#include "baton_util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define FENCE_MAGIC "baton-fence epoch="
/* A state file larger than this is refused as corrupt: the whole file is
 * read and rewritten on every change, so it is meant to stay small. */
#define FENCE_MAX_BYTES ((size_t)256 * 1024 * 1024)

typedef enum { FENCE_WRITE, FENCE_APPEND, FENCE_ONLY } fence_op_t;

static int write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Parses "baton-fence epoch=E\n" at the start of buf; returns the header's
 * length, or 0 if buf does not start with a valid header. */
static size_t header_parse(const char *buf, size_t len, int64_t *epoch) {
    size_t m = strlen(FENCE_MAGIC);
    if (len < m + 2 || memcmp(buf, FENCE_MAGIC, m) != 0)
        return 0;
    int64_t e = 0;
    size_t i = m;
    for (; i < len && i < m + 19 && buf[i] >= '0' && buf[i] <= '9'; i++)
        e = e * 10 + (buf[i] - '0');
    if (i == m || i >= len || buf[i] != '\n' || e < 1)
        return 0;
    *epoch = e;
    return i + 1;
}

/* Reads the state file: *epoch (0 if absent) and, if data is not NULL, a
 * heap copy of the data. Call with the lock held for a consistent view
 * (readers without it still see a whole file: writers rename). */
static int state_read(const char *path, int64_t *epoch, char **data, size_t *dlen, char *errstr,
                      size_t n) {
    *epoch = 0;
    if (data) {
        *data = xstrdup("");
        *dlen = 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return BATON_OK;
        return baton_seterr(errstr, n, BATON_IO, "cannot open '%s': %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return baton_seterr(errstr, n, BATON_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > FENCE_MAX_BYTES) {
        close(fd);
        return baton_seterr(errstr, n, BATON_CORRUPT,
                            "'%s' is not a baton fence file (not a regular file, or over %zu "
                            "bytes)",
                            path, FENCE_MAX_BYTES);
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return baton_seterr(errstr, n, BATON_IO, "cannot read '%s': %s", path, strerror(e));
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = 0;
    size_t h = header_parse(buf, len, epoch);
    if (h == 0) {
        free(buf);
        return baton_seterr(
            errstr, n, BATON_CORRUPT,
            "'%s' is not a baton fence file (its first line is not '" FENCE_MAGIC "N')", path);
    }
    if (data) {
        free(*data);
        *dlen = len - h;
        *data = xmalloc(*dlen + 1);
        memcpy(*data, buf + h, *dlen);
        (*data)[*dlen] = 0;
    }
    free(buf);
    return BATON_OK;
}

/* Writes header + a + b to "<path>.tmp", fsyncs it, renames it over path
 * and fsyncs the directory. Called with the lock held. */
static int state_replace(const char *path, int64_t epoch, const void *a, size_t alen, const void *b,
                         size_t blen, char *errstr, size_t n) {
    char *tmp = xasprintf("%s.tmp", path);
    char hdr[64];
    int hlen = snprintf(hdr, sizeof(hdr), FENCE_MAGIC "%lld\n", (long long)epoch);
    int err = BATON_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        err = baton_seterr(errstr, n, BATON_IO, "cannot create '%s': %s", tmp, strerror(errno));
        goto out;
    }
    if (write_all(fd, hdr, (size_t)hlen) != 0 || (alen && write_all(fd, a, alen) != 0) ||
        (blen && write_all(fd, b, blen) != 0) || fsync(fd) != 0) {
        err = baton_seterr(errstr, n, BATON_IO, "cannot write '%s': %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    if (close(fd) != 0) {
        err = baton_seterr(errstr, n, BATON_IO, "cannot write '%s': %s", tmp, strerror(errno));
        unlink(tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        err = baton_seterr(errstr, n, BATON_IO, "cannot rename '%s' to '%s': %s", tmp, path,
                           strerror(errno));
        unlink(tmp);
        goto out;
    }
    /* The rename is durable only once the directory is. */
    char *dcopy = xstrdup(path);
    int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(dcopy);
out:
    free(tmp);
    return err;
}

/* Opens "<path>.lock" and takes the exclusive lock; returns the descriptor
 * (closing it releases the lock) or -1 with errstr set. */
static int lock_take(const char *path, char *errstr, size_t n) {
    char *lpath = xasprintf("%s.lock", path);
    int fd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        baton_seterr(errstr, n, BATON_IO, "cannot open '%s': %s", lpath, strerror(errno));
        free(lpath);
        return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR)
            continue;
        baton_seterr(errstr, n, BATON_IO, "cannot lock '%s': %s", lpath, strerror(errno));
        close(fd);
        free(lpath);
        return -1;
    }
    free(lpath);
    return fd;
}

static int fence_update(const char *path, int64_t epoch, fence_op_t op, const void *data,
                        size_t len, char *errstr, size_t n) {
    if (errstr && n)
        errstr[0] = 0;
    if (!path || !path[0])
        return baton_seterr(errstr, n, BATON_INVALID, "the state file path is empty");
    if (epoch < 1)
        return baton_seterr(errstr, n, BATON_INVALID, "epoch %lld is not a positive integer",
                            (long long)epoch);
    if (len && !data)
        return baton_seterr(errstr, n, BATON_INVALID, "data is NULL with length %zu", len);
    int lfd = lock_take(path, errstr, n);
    if (lfd < 0)
        return BATON_IO;
    int64_t stored = 0;
    char *old = NULL;
    size_t olen = 0;
    int err = state_read(path, &stored, op == FENCE_WRITE ? NULL : &old, &olen, errstr, n);
    if (err != BATON_OK)
        goto out;
    if (stored > epoch) {
        err = baton_seterr(errstr, n, BATON_STALE,
                           "epoch %lld refused: '%s' already saw epoch %lld (a newer owner)",
                           (long long)epoch, path, (long long)stored);
        goto out;
    }
    if (op == FENCE_WRITE)
        err = state_replace(path, epoch, data, len, NULL, 0, errstr, n);
    else if (op == FENCE_APPEND)
        err = state_replace(path, epoch, old, olen, data, len, errstr, n);
    else if (stored != epoch) /* fence: rewrite only if the epoch rises (or no file yet) */
        err = state_replace(path, epoch, old, olen, NULL, 0, errstr, n);
out:
    free(old);
    close(lfd);
    return err;
}

int baton_fence_file_write(const char *state_path, int64_t epoch, const void *data, size_t len,
                           char *errstr, size_t n) {
    return fence_update(state_path, epoch, FENCE_WRITE, data, len, errstr, n);
}

int baton_fence_file_append(const char *state_path, int64_t epoch, const void *data, size_t len,
                            char *errstr, size_t n) {
    return fence_update(state_path, epoch, FENCE_APPEND, data, len, errstr, n);
}

int baton_fence_file_fence(const char *state_path, int64_t epoch, char *errstr, size_t n) {
    return fence_update(state_path, epoch, FENCE_ONLY, NULL, 0, errstr, n);
}

int baton_fence_file_read(const char *state_path, int64_t *epoch, char **data, size_t *len,
                          char *errstr, size_t n) {
    if (errstr && n)
        errstr[0] = 0;
    if (!state_path || !state_path[0])
        return baton_seterr(errstr, n, BATON_INVALID, "the state file path is empty");
    size_t dummy;
    int err = state_read(state_path, epoch, data, len ? len : &dummy, errstr, n);
    if (err != BATON_OK && data) {
        free(*data);
        *data = NULL;
    }
    return err;
}
