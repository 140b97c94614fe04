/* fuzz_replay.c: a main() for the fuzz targets when they are built without
 * libFuzzer (gcc, the CI build): it runs LLVMFuzzerTestOneInput once on every
 * file named on the command line, or on every regular file in a named
 * directory, so a crashing input reproduces with any compiler and under the
 * sanitizers. Arguments that start with '-' are libFuzzer flags and are
 * ignored, so one command line works with both builds.
 *   fuzz_codec tests/fuzz/corpus/fuzz_codec crash-1234 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* Reads a whole file into a fresh heap buffer (the caller frees it). A
 * zero-length file gives a non-NULL buffer of size 0. Returns NULL with a
 * message on error. */
static uint8_t *replay_file_read(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz-replay: cannot open '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf)
                abort();
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "fuzz-replay: cannot read '%s'\n", path);
        free(buf);
        return NULL;
    }
    /* Exactly `len` bytes, so ASan sees any read past the input's end. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact)
        abort();
    memcpy(exact, buf, len);
    free(buf);
    *size = len;
    return exact;
}

static int replay_one(const char *path) {
    size_t size = 0;
    uint8_t *data = replay_file_read(path, &size);
    if (!data)
        return -1;
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays every regular file of dir, in name order. Returns the number run,
 * or -1 on error. */
static long replay_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fuzz-replay: cannot open directory '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof(*names));
            if (!names)
                abort();
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n])
            abort();
        snprintf(names[n], len, "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof(*names), name_cmp);
    long run = 0;
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_one(names[i]) != 0)
                failed = 1;
            else
                run++;
        }
        free(names[i]);
    }
    free(names);
    return failed ? -1 : run;
}

int main(int argc, char **argv) {
    long total = 0;
    int paths = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        paths++;
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz-replay: '%s': %s\n", argv[i], strerror(errno));
            return 1;
        }
        long run = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : (replay_one(argv[i]) ? -1 : 1);
        if (run < 0)
            return 1;
        total += run;
    }
    if (paths == 0) {
        fprintf(stderr, "usage: %s FILE|DIR... (replays each input through the fuzz target)\n",
                argv[0]);
        return 2;
    }
    if (total == 0) {
        fprintf(stderr, "fuzz-replay: no inputs found\n");
        return 1;
    }
    printf("fuzz-replay: %s: %ld inputs, no crash\n", argv[0], total);
    return 0;
}
