/* Option values; see args.h. */
#include "base/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int osp_args_whole(const char *s, int base, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, base);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int osp_args_int(const char *s, int lo, int hi, int *out) {
    long long v;
    if (osp_args_whole(s, 10, lo, hi, &v)) return -1;
    *out = (int)v;
    return 0;
}

int osp_args_int_in(const char *who, const char *opt, const char *s, int lo, int hi, int *out) {
    if (osp_args_int(s, lo, hi, out) == 0) return 0;
    fprintf(stderr, "%s: %s must be from %d to %d, not '%s'\n", who, opt, lo, hi, s);
    return -1;
}

int osp_args_max_frame(const char *who, const char *s, unsigned long long *out) {
    long long v;
    if (osp_args_whole(s, 10, 16, 4294967295LL, &v) == 0) {
        *out = (unsigned long long)v;
        return 0;
    }
    fprintf(stderr, "%s: --max-frame must be a byte count from 16 to 4294967295, not '%s'\n", who, s);
    return -1;
}

int osp_args_num(const char *who, const char *opt, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo) || (hi > lo && !(v <= hi))) {
        if (hi > lo)
            fprintf(stderr, "%s: %s must be a number from %g to %g, not '%s'\n", who, opt, lo, hi, s);
        else
            fprintf(stderr, "%s: %s must be a number >= %g, not '%s'\n", who, opt, lo, s);
        return -1;
    }
    *out = v;
    return 0;
}

int osp_args_unit(const char *who, const char *opt, const char *s, float *out) {
    double v;
    if (osp_args_num(who, opt, s, 0, 1, &v)) return -1;
    *out = (float)v;
    return 0;
}
