/* The osprey command's subcommands. Each returns the process exit status:
 * 0 success, 1 failure while working, 2 bad usage or input. */
#ifndef OSP_CLI_H
#define OSP_CLI_H

int osp_cmd_detect(int argc, char **argv);
int osp_cmd_models(int argc, char **argv);
int osp_cmd_listen(int argc, char **argv);

#define OSP_VERSION "0.1.0"

#endif
