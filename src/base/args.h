/*
 * args: the values of command-line options, for ospreyd and every osprey
 * subcommand alike, so that each option refuses a bad value the same way.
 * The option parsing itself is getopt_long's; these take one optarg.
 *
 * Each returns 0 with the value in *out (untouched on failure), else -1.
 * Those given `who` (the prefix of the message: "ospreyd", "osprey
 * detect") write one line to stderr on failure; the rest write nothing,
 * for their caller's message says what the option takes. Nothing is
 * allocated; any thread.
 */
#ifndef OSP_BASE_ARGS_H
#define OSP_BASE_ARGS_H

/* A whole number written in `base` (10, or 8 for permissions), the whole
 * of s, from lo to hi. Silent. */
int osp_args_whole(const char *s, int base, long long lo, long long hi, long long *out);

/* A whole decimal number from lo to hi. Silent. */
int osp_args_int(const char *s, int lo, int hi, int *out);

/* A whole decimal number from lo to hi for option opt; on failure
 * "who: opt must be from lo to hi, not 's'". */
int osp_args_int_in(const char *who, const char *opt, const char *s, int lo, int hi, int *out);

/* A number >= lo (and <= hi when hi > lo) for option opt; on failure
 * "who: opt must be a number from lo to hi, not 's'" (or ">= lo"). */
int osp_args_num(const char *who, const char *opt, const char *s, double lo, double hi, double *out);

/* A number in [0, 1] for option opt (a threshold, a score), as
 * osp_args_num. */
int osp_args_unit(const char *who, const char *opt, const char *s, float *out);

/* A stream's --max-frame: a byte count from 16 to 4294967295; on failure
 * "who: --max-frame must be a byte count from 16 to 4294967295, not 's'". */
int osp_args_max_frame(const char *who, const char *s, unsigned long long *out);

#endif
