/* fence_write.c: baton-fence-write, the fenced file writer of baton/fence.h
 * for shell jobs: a job run by baton-run fences each of its effects with
 * the $BATON_EPOCH it was given, and stops when a newer owner wrote. */
#include <baton/fence.h>

#include "baton_opts.h"
#include "baton_util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_STALE 3

static const char *prog = "baton-fence-write";

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s [--epoch E] --state FILE [--append LINE | --data-file F]\n"
            "\n"
            "Writes FILE only if E is at least the highest epoch FILE has seen, and\n"
            "then remembers E: once a newer owner wrote, an older one is refused. The\n"
            "file's first line is 'baton-fence epoch=E', the data follows (read it\n"
            "with: tail -n +2 FILE). Writes are atomic (flock on FILE.lock, then a\n"
            "rename), for small state; see include/baton/fence.h.\n"
            "\n"
            "  --epoch E          the fencing token (default: $BATON_EPOCH, which\n"
            "                     baton-run sets for its command)\n"
            "  --state FILE       the fenced state file (created if missing)\n"
            "  --append LINE      append LINE and a newline to the data\n"
            "  --data-file F      replace the data with F's content ('-': stdin)\n"
            "                     (neither: only fence, i.e. raise the stored epoch)\n"
            "  --help             this text\n"
            "  --version          print the version and exit\n"
            "\n"
            "exit status: 0 written, 3 refused (FILE saw a higher epoch: stop, a newer\n"
            "owner runs), 1 error (I/O, FILE is not a fence file), 2 bad flags.\n"
            "\n"
            "examples:\n"
            "  baton-run --zk 127.0.0.1:2181 --group jobs --key nightly -- \\\n"
            "      sh -c 'make-report > r.txt && %s --state /srv/report.state --data-file r.txt'\n"
            "  %s --epoch 4294967301 --state /srv/log.state --append \"step 3 done\"\n",
            prog, prog, prog);
}

/* Reads all of f into a heap buffer. */
static int slurp(FILE *f, char **out, size_t *len) {
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

int main(int argc, char **argv) {
    const char *epoch_s = NULL, *state = NULL, *append = NULL, *data_file = NULL;
    static const struct option lo[] = {
        {"epoch", required_argument, NULL, 'e'},
        {"state", required_argument, NULL, 's'},
        {"append", required_argument, NULL, 'a'},
        {"data-file", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (opt) {
        case 'e': epoch_s = optarg; break;
        case 's': state = optarg; break;
        case 'a': append = optarg; break;
        case 'd': data_file = optarg; break;
        case 'h': usage(stdout); return BATON_EXIT_OK;
        case 'V': baton_version_exit(prog);
        default: baton_usage_bad_option(prog, argc, argv);
        }
    }
    if (optind < argc)
        baton_usage_error(prog, "unexpected argument '%s'", argv[optind]);
    const char *flag = "--epoch";
    if (!epoch_s) {
        epoch_s = getenv("BATON_EPOCH");
        flag = "BATON_EPOCH";
    }
    if (!epoch_s)
        baton_usage_error(prog, "--epoch is required (or BATON_EPOCH in the environment)");
    int64_t epoch;
    if (baton_parse_i64(epoch_s, 1, INT64_MAX, &epoch) != 0)
        baton_usage_error(prog, "%s: '%s' is not a positive integer", flag, epoch_s);
    if (!state || !state[0])
        baton_usage_error(prog, "--state FILE is required");
    if (append && data_file)
        baton_usage_error(prog, "--append and --data-file exclude each other");

    char errstr[512];
    int err;
    if (append) {
        size_t len = strlen(append);
        char *line = xmalloc(len + 1);
        memcpy(line, append, len);
        line[len] = '\n';
        err = baton_fence_file_append(state, epoch, line, len + 1, errstr, sizeof(errstr));
        free(line);
    } else if (data_file) {
        FILE *f = strcmp(data_file, "-") == 0 ? stdin : fopen(data_file, "rb");
        if (!f) {
            fprintf(stderr, "%s: cannot open '%s': %s\n", prog, data_file, strerror(errno));
            return BATON_EXIT_FAILURE;
        }
        char *data;
        size_t len;
        int rerr = slurp(f, &data, &len);
        if (f != stdin)
            fclose(f);
        if (rerr != 0) {
            fprintf(stderr, "%s: cannot read '%s'\n", prog, data_file);
            return BATON_EXIT_FAILURE;
        }
        err = baton_fence_file_write(state, epoch, data, len, errstr, sizeof(errstr));
        free(data);
    } else {
        err = baton_fence_file_fence(state, epoch, errstr, sizeof(errstr));
    }
    if (err == BATON_OK)
        return BATON_EXIT_OK;
    fprintf(stderr, "%s: %s\n", prog, errstr);
    return err == BATON_STALE ? EXIT_STALE : BATON_EXIT_FAILURE;
}
