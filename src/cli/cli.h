/* The osprey command's subcommands. Each returns the process exit status:
 * 0 success, 1 failure while working, 2 bad usage or input. */
#ifndef OSP_CLI_H
#define OSP_CLI_H

#include <stdatomic.h>
#include <stdbool.h>

#include "base/args.h" /* option values, shared with ospreyd */

int osp_cmd_detect(int argc, char **argv);
int osp_cmd_models(int argc, char **argv);
int osp_cmd_ocr(int argc, char **argv);
int osp_cmd_compare(int argc, char **argv);
int osp_cmd_faces(int argc, char **argv);
int osp_cmd_listen(int argc, char **argv);
int osp_cmd_segment(int argc, char **argv);
int osp_cmd_quantize(int argc, char **argv);
int osp_cmd_jobs(int argc, char **argv); /* jobs.c: a fleet's host side */

/* From now on SIGINT and SIGTERM set *stop, which must outlive the process;
 * once per process (defined in stop.c). */
void osp_cli_stop_on_signals(atomic_bool *stop);

#endif
