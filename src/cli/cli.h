/* The osprey command's subcommands. Each returns the process exit status:
 * 0 success, 1 failure while working, 2 bad usage or input. */
#ifndef OSP_CLI_H
#define OSP_CLI_H

#include <stdatomic.h>
#include <stdbool.h>

int osp_cmd_detect(int argc, char **argv);
int osp_cmd_models(int argc, char **argv);
int osp_cmd_ocr(int argc, char **argv);
int osp_cmd_compare(int argc, char **argv);
int osp_cmd_listen(int argc, char **argv);
int osp_cmd_segment(int argc, char **argv);
int osp_cmd_quantize(int argc, char **argv);
int osp_cmd_jobs(int argc, char **argv); /* jobs.c: a fleet's host side */

/* Option values, shared by the subcommands (defined in args.c): 0 with the
 * value in *out, else -1. */
/* A number in [0, 1] for option opt; -1 after one line on stderr. */
int osp_cli_parse_unit(const char *cmd, const char *opt, const char *s, float *out);
/* A number >= lo (and <= hi when hi > lo) for option opt; -1 after one
 * line on stderr. */
int osp_cli_parse_num(const char *cmd, const char *opt, const char *s, double lo, double hi,
                      double *out);
/* A whole decimal number from lo to hi; -1 with nothing on stderr, for the
 * caller says what its option takes. */
int osp_cli_parse_int(const char *s, int lo, int hi, int *out);

/* From now on SIGINT and SIGTERM set *stop, which must outlive the process;
 * once per process (defined in stop.c). */
void osp_cli_stop_on_signals(atomic_bool *stop);

#endif
