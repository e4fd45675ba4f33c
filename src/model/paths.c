/* Confining and opening the files a configuration names; see paths.h. */
#include "model/paths.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct osp_paths {
    int n;
    char *root[OSP_PATHS_MAX_ROOTS]; /* resolved, no trailing slash (except "/") */
};

osp_paths_t *osp_paths_new(void) { return calloc(1, sizeof(osp_paths_t)); }

void osp_paths_free(osp_paths_t *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(p->root[i]);
    free(p);
}

int osp_paths_count(const osp_paths_t *p) { return p ? p->n : 0; }

const char *osp_paths_root(const osp_paths_t *p, int i) {
    return p && i >= 0 && i < p->n ? p->root[i] : NULL;
}

static int add_resolved(osp_paths_t *p, const char *real, char *err, size_t errlen) {
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->root[i], real) == 0) return OSP_PATHS_OK;
    if (p->n == OSP_PATHS_MAX_ROOTS) {
        snprintf(err, errlen, "at most %d model roots", OSP_PATHS_MAX_ROOTS);
        return OSP_PATHS_EINVAL;
    }
    if (!(p->root[p->n] = strdup(real))) {
        snprintf(err, errlen, "out of memory");
        return OSP_PATHS_EINVAL;
    }
    p->n++;
    return OSP_PATHS_OK;
}

int osp_paths_add(osp_paths_t *p, const char *dir, char *err, size_t errlen) {
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(dir, real) || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "model root %s is not a directory", dir);
        return OSP_PATHS_ENOENT;
    }
    return add_resolved(p, real, err, errlen);
}

int osp_paths_add_dir_of(osp_paths_t *p, const char *file, char *err, size_t errlen) {
    char real[PATH_MAX];
    if (!realpath(file, real)) {
        snprintf(err, errlen, "%s: %s", file, strerror(errno));
        return OSP_PATHS_ENOENT;
    }
    char *slash = strrchr(real, '/');
    if (slash == real)
        real[1] = '\0'; /* a file in / */
    else if (slash)
        *slash = '\0';
    return add_resolved(p, real, err, errlen);
}

/* Whether real (resolved) is root itself or lies below it. */
static int inside(const char *root, const char *real) {
    size_t n = strlen(root);
    if (strncmp(root, real, n) != 0) return 0;
    if (n == 1) return 1; /* "/" */
    return real[n] == '/' || real[n] == '\0';
}

int osp_paths_confine(const osp_paths_t *p, const char *path, const char *what, char *out,
                      size_t outlen, char *err, size_t errlen) {
    char real[PATH_MAX];
    int ok = p && path && path[0] && realpath(path, real) && strlen(real) < outlen;
    for (int i = 0; ok && i < p->n; i++) {
        if (inside(p->root[i], real)) {
            memcpy(out, real, strlen(real) + 1);
            return OSP_PATHS_OK;
        }
    }
    /* the same words whether it is missing, outside, or unresolvable */
    snprintf(err, errlen, "%s not found or not allowed: %s", what, path ? path : "");
    return OSP_PATHS_ENOENT;
}

int osp_paths_open(const char *path, const char *what, uint64_t max_bytes, uint64_t *size,
                   char *err, size_t errlen) {
    char real[PATH_MAX];
    struct stat st;
    int fd = -1;
    /* resolved first, so O_NOFOLLOW refuses only a link swapped in since */
    if (!realpath(path, real) ||
        (fd = open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s not found: %s (%s)", what, path, strerror(errno));
        if (fd >= 0) close(fd);
        return OSP_PATHS_ENOENT;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file: %s", what, path);
        close(fd);
        return OSP_PATHS_EKIND;
    }
    if ((uint64_t)st.st_size > max_bytes) {
        snprintf(err, errlen, "%s is larger than %llu bytes: %s", what,
                 (unsigned long long)max_bytes, path);
        close(fd);
        return OSP_PATHS_EBIG;
    }
    if (size) *size = (uint64_t)st.st_size;
    return fd;
}

void osp_paths_stem(const char *path, char *out, size_t n) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (len >= n) len = n - 1;
    memcpy(out, base, len);
    out[len] = '\0';
}
