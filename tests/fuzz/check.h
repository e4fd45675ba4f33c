/*
 * What every fuzz target uses: CHECK, which stops the run as a finding
 * (the line on stderr, then a trap libFuzzer reports with the input), and cstr, the input as a C
 * string (a copy ending in NUL; NUL bytes inside stay, so a parser that
 * reads it as C sees a shorter string, as it would from C code).
 */
#ifndef OSP_FUZZ_CHECK_H
#define OSP_FUZZ_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                         \
    do {                                                                 \
        if (!(c)) {                                                      \
            fprintf(stderr, "CHECK failed line %d: %s\n", __LINE__, #c); \
            __builtin_trap();                                            \
        }                                                                \
    } while (0)

/* The caller frees it. */
static inline char *cstr(const uint8_t *d, size_t n) {
    char *s = malloc(n + 1);
    CHECK(s);
    memcpy(s, d, n);
    s[n] = '\0';
    return s;
}

#endif
