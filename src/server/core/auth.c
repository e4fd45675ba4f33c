/* The socket token (auth.h). */
#include "server/core/auth.h"
#include "log/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct srv_auth {
    size_t len;
    char token[SRV_AUTH_MAX_BYTES + 1];
};

srv_auth_t *srv_auth_load(const char *path, char *err, size_t errlen) {
    srv_auth_t *a = NULL;
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot read --auth-token-file %s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > SRV_AUTH_MAX_BYTES + 2) {
        snprintf(err, errlen, "--auth-token-file %s must be a regular file of at most %d bytes",
                 path, SRV_AUTH_MAX_BYTES);
        goto done;
    }
    if (!(a = calloc(1, sizeof *a))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    ssize_t n = read(fd, a->token, SRV_AUTH_MAX_BYTES);
    size_t len = n > 0 ? (size_t)n : 0;
    while (len && (a->token[len - 1] == '\n' || a->token[len - 1] == '\r')) len--;
    a->token[len] = '\0';
    a->len = len;
    if (len < SRV_AUTH_MIN_BYTES || memchr(a->token, '\0', len) || memchr(a->token, '\n', len)) {
        snprintf(err, errlen, "--auth-token-file %s must hold one line of at least %d bytes", path,
                 SRV_AUTH_MIN_BYTES);
        srv_auth_free(a);
        a = NULL;
        goto done;
    }
    if (st.st_mode & 0077)
        osp_log(OSP_LOG_WARN,
                "ospreyd: warning: --auth-token-file %s can be read by others (mode %03o)", path,
                (unsigned)(st.st_mode & 0777));
done:
    if (fd >= 0) close(fd);
    return a;
}

void srv_auth_free(srv_auth_t *a) {
    if (!a) return;
    /* volatile: the compiler may not drop the wipe of memory about to be freed */
    volatile char *p = a->token;
    for (size_t i = 0; i < sizeof a->token; i++) p[i] = 0;
    free(a);
}

int srv_auth_check(const srv_auth_t *a, const char *given, size_t given_len) {
    if (!a) return 1;
    if (!given) return 0;
    unsigned char diff = given_len != a->len;
    for (size_t i = 0; i < a->len; i++)
        diff |= (unsigned char)a->token[i] ^ (unsigned char)(i < given_len ? given[i] : 0);
    return diff == 0;
}
