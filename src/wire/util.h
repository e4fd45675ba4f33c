/*
 * wire/util: the two helpers every file of wire/ uses, kept here so that
 * each parser does not carry its own copy. Private to src/wire/: nothing
 * outside it includes this header.
 */
#ifndef OSP_WIRE_UTIL_H
#define OSP_WIRE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Write the reason into the caller's (err, errlen), when it gave one, and
 * return rc: `return seterr(err, errlen, OSP_WIRE_EINVAL, "...")`. */
static inline int seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline int seterr(char *err, size_t errlen, int rc, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* An ASCII digit, whatever the C locale says (isdigit does not promise that). */
static inline int isdig(uint8_t c) { return c >= '0' && c <= '9'; }

#endif
