/* Option values shared by the subcommands (cli.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

int osp_cli_parse_num(const char *cmd, const char *opt, const char *s, double lo, double hi,
                      double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo) || (hi > lo && !(v <= hi))) {
        if (hi > lo)
            fprintf(stderr, "osprey %s: %s must be a number from %g to %g, not '%s'\n", cmd, opt,
                    lo, hi, s);
        else
            fprintf(stderr, "osprey %s: %s must be a number >= %g, not '%s'\n", cmd, opt, lo, s);
        return -1;
    }
    *out = v;
    return 0;
}

int osp_cli_parse_unit(const char *cmd, const char *opt, const char *s, float *out) {
    double v;
    if (osp_cli_parse_num(cmd, opt, s, 0, 1, &v)) return -1;
    *out = (float)v;
    return 0;
}

int osp_cli_parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}
