/*
 * secret: passwords and API keys for the commands, from a file or the
 * environment, and never from osprey back onto a screen.
 *
 * A file wins over the environment variable, which wins over whatever the
 * URL carries (the caller applies that last step). A secret file is its
 * first line (a trailing CR/LF dropped), a regular file of at most 4 KiB; a
 * file others can read is warned about, by name only.
 */
#ifndef OSP_CLI_SECRET_H
#define OSP_CLI_SECRET_H

#include <stddef.h>

/* Fill out (n bytes) from the file when path is not NULL, else from the
 * environment variable env when it is set and not empty. Returns 1 with a
 * secret, 0 when neither gives one, -1 after one line on stderr ("osprey
 * CMD: OPT FILE: ...", never the content). */
int osp_cli_secret(const char *cmd, const char *opt, const char *path, const char *env, char *out,
                   size_t n);

/* Overwrite, in place, the password of a URL given on the command line
 * (scheme://user:PASSWORD@host...) with '*', so that ps and /proc/PID/cmdline
 * do not show it once the command has read it. */
void osp_cli_hide_url_password(char *arg);

/* Clear a secret buffer (a memset the compiler keeps). */
void osp_cli_forget(char *buf, size_t n);

#endif
