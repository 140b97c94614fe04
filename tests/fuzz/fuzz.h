/* fuzz.h: what every fuzz target in tests/fuzz/ shares: the libFuzzer entry
 * point each target defines, and FUZZ_CHECK, which turns a broken property
 * into a crash (abort) that both libFuzzer and the replay main report with
 * the input that caused it. */
#ifndef BATON_FUZZ_H
#define BATON_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs one input; returns 0. Called by libFuzzer, or by fuzz_replay.c's main
 * once per corpus file. The input is owned by the caller and is not
 * NUL-terminated. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                                 \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz: %s:%d: property failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

#endif
