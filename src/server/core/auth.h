/*
 * auth: the token a socket connection presents in its startup config
 * ("authToken"), and an HTTP request as `Authorization: Bearer`, when
 * ospreyd was started with --auth-token-file (docs/security.md). The
 * token is read once at startup, compared in constant time, and never
 * written anywhere (logs included). The struct is private to auth.c.
 */
#ifndef OSP_AUTH_H
#define OSP_AUTH_H

#include <stddef.h>

#include "server/core/srv.h"

#define SRV_AUTH_MIN_BYTES 16 /* a shorter token is refused at startup */
#define SRV_AUTH_MAX_BYTES 4096

/* Read the token from `path` (one line; trailing newline dropped). NULL
 * with the reason in err. The caller owns the result (srv_auth_free). */
srv_auth_t *srv_auth_load(const char *path, char *err, size_t errlen);
void srv_auth_free(srv_auth_t *a);
/* 1 when `given` (NULL: none was sent) is the token. Its time depends on
 * the token's length only, not on where the two differ. */
int srv_auth_check(const srv_auth_t *a, const char *given, size_t given_len);

#endif
