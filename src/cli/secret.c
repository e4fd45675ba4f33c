/* secret: see secret.h. */
#define _POSIX_C_SOURCE 200809L
#include "cli/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET_MAX 4096

void osp_cli_forget(char *buf, size_t n) {
    volatile char *p = buf;
    for (size_t i = 0; i < n; i++) p[i] = 0;
}

static int read_file(const char *cmd, const char *opt, const char *path, char *out, size_t n) {
    /* O_NONBLOCK: a FIFO named by mistake does not hang the start. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "osprey %s: %s %s: %s\n", cmd, opt, path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > SECRET_MAX) {
        fprintf(stderr, "osprey %s: %s %s: not a regular file of at most %d bytes\n", cmd, opt,
                path, SECRET_MAX);
        close(fd);
        return -1;
    }
    char buf[SECRET_MAX + 1];
    ssize_t got = read(fd, buf, SECRET_MAX);
    close(fd);
    if (got < 0) {
        fprintf(stderr, "osprey %s: %s %s: %s\n", cmd, opt, path, strerror(errno));
        return -1;
    }
    size_t len = strcspn(buf, "\r\n") < (size_t)got ? strcspn(buf, "\r\n") : (size_t)got;
    int rc = -1;
    if (len == 0)
        fprintf(stderr, "osprey %s: %s %s: the first line is empty\n", cmd, opt, path);
    else if (len >= n)
        fprintf(stderr, "osprey %s: %s %s: longer than %zu bytes\n", cmd, opt, path, n - 1);
    else {
        memcpy(out, buf, len);
        out[len] = '\0';
        rc = 1;
        if (st.st_mode & S_IROTH)
            fprintf(stderr, "osprey %s: warning: %s %s can be read by other users\n", cmd, opt, path);
    }
    osp_cli_forget(buf, sizeof buf);
    return rc;
}

int osp_cli_secret(const char *cmd, const char *opt, const char *path, const char *env, char *out,
                   size_t n) {
    if (n) out[0] = '\0';
    if (path) return read_file(cmd, opt, path, out, n);
    const char *v = env ? getenv(env) : NULL;
    if (!v || !v[0]) return 0;
    if (strlen(v) >= n) {
        fprintf(stderr, "osprey %s: %s is longer than %zu bytes\n", cmd, env, n - 1);
        return -1;
    }
    memcpy(out, v, strlen(v) + 1);
    return 1;
}

void osp_cli_hide_url_password(char *arg) {
    char *p = strstr(arg, "://");
    if (!p) return;
    p += 3;
    char *end = p + strcspn(p, "/?#");
    char *at = NULL;
    for (char *q = p; q < end; q++)
        if (*q == '@') at = q;
    char *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
    if (colon)
        for (char *q = colon + 1; q < at; q++) *q = '*';
}
