/* baton/fence.h: a tiny fenced resource -- a file that remembers the
 * highest epoch that ever wrote it and refuses writes with a lower one.
 *
 * It is what a job run by baton-run (or a member library application)
 * needs to make its effects safe: the library's ownership is a lease, a
 * paused process can wake up still believing it owns its key, so the
 * protected resource itself must refuse the old owner once a newer one
 * wrote. Pass the epoch baton gave you (on_acquired's epoch, or
 * $BATON_EPOCH under baton-run):
 *
 *     if (baton_fence_file_append(path, epoch, line, len, err, sizeof(err)) == BATON_STALE)
 *         ... a newer owner exists: stop ...
 *
 * The file: a first line "baton-fence epoch=E\n", then the data bytes.
 * Every write takes an exclusive flock(2) on "<path>.lock", reads the
 * stored epoch, refuses (BATON_STALE) if it is higher than ours, and
 * otherwise writes "<path>.tmp", fsyncs it and renames it over the file
 * (then fsyncs the directory): readers see the old or the new content,
 * never a mix, and a crash leaves one of the two. An equal epoch is
 * accepted (the same owner writing again). Each write rewrites the whole
 * file: meant for small state (a counter, a job's log of a few thousand
 * lines), not for bulk data -- use a database sink for that (docs/sinks.md).
 * Works on a local file system; flock over NFS is not reliable.
 *
 * Errors (baton/err.h): BATON_OK; BATON_STALE (the file saw a higher
 * epoch: errstr names both); BATON_INVALID (epoch < 1, NULL path);
 * BATON_CORRUPT (the file exists but is not a fence file: it is never
 * overwritten); BATON_IO (a system call failed, errno's text in errstr).
 * No function keeps state between calls; all are safe from any thread and
 * any process at once. */
#ifndef BATON_FENCE_H
#define BATON_FENCE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Replaces the data with len bytes at data (NULL is fine when len is 0)
 * and stores epoch. */
BATON_EXPORT int baton_fence_file_write(const char *state_path, int64_t epoch, const void *data,
                                        size_t len, char *errstr, size_t errstr_size);

/* Appends len bytes to the data (add your own newline) and stores epoch. */
BATON_EXPORT int baton_fence_file_append(const char *state_path, int64_t epoch, const void *data,
                                         size_t len, char *errstr, size_t errstr_size);

/* Stores epoch without changing the data: a new owner calls it first, so
 * that from then on the previous owner's writes are refused, and only then
 * reads the state it continues from. Creates an empty fence file if there
 * is none. */
BATON_EXPORT int baton_fence_file_fence(const char *state_path, int64_t epoch, char *errstr,
                                        size_t errstr_size);

/* Reads the stored epoch (0 if the file does not exist yet) and, if data
 * is not NULL, a heap copy of the data, NUL-terminated for convenience
 * (*len excludes the NUL; the caller frees *data). */
BATON_EXPORT int baton_fence_file_read(const char *state_path, int64_t *epoch, char **data,
                                       size_t *len, char *errstr, size_t errstr_size);

#ifdef __cplusplus
}
#endif

#endif
