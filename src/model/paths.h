/*
 * paths: reading the files a configuration names (model files, labels
 * files, alphabets) without letting that name reach anything else.
 *
 * Two steps, kept apart because they run in different places:
 *
 *  - osp_paths_confine (the I/O thread, when a peer's config arrives):
 *    the name is resolved with realpath and must lie inside one of the
 *    model roots; every refusal (missing, outside, unresolvable) is the
 *    same text, so a peer learns nothing about files outside the roots.
 *  - osp_paths_open (wherever the file is read, a loader thread too):
 *    the resolved name is opened O_NOFOLLOW|O_NONBLOCK, and must be a
 *    regular file of at most a stated size. A FIFO or a device
 *    (/dev/zero) is refused at once instead of blocking a loader or
 *    growing memory without end.
 *
 * A roots set is built once at startup and read-only after: any thread
 * may confine against it. The caller owns it (osp_paths_free).
 *
 * And the name a model file gives its model (osp_paths_stem), the one
 * spelling of it that the config and the server's messages share.
 */
#ifndef OSP_MODEL_PATHS_H
#define OSP_MODEL_PATHS_H

#include <stddef.h>
#include <stdint.h>

enum {
    OSP_PATHS_OK = 0,
    OSP_PATHS_ENOENT = -1, /* missing, or not allowed: one answer for both */
    OSP_PATHS_EKIND = -2,  /* exists, but not a regular file */
    OSP_PATHS_EBIG = -3,   /* larger than the cap */
    OSP_PATHS_EINVAL = -4, /* a roots set that cannot take the directory */
};

#define OSP_PATHS_MAX_ROOTS 32
#define OSP_LABELS_MAX_BYTES (1u << 20)  /* labels files and alphabets */
#define OSP_LABELS_MAX_COUNT 65536       /* ... and the lines read from them */
#define OSP_MODEL_MAX_BYTES (4ull << 30) /* model files */

typedef struct osp_paths osp_paths_t;

/* An empty set (NULL when out of memory): it allows nothing until a root
 * is added. */
osp_paths_t *osp_paths_new(void);
void osp_paths_free(osp_paths_t *p);
/* Add a directory, resolved now. A directory that does not exist is
 * OSP_PATHS_ENOENT (the caller decides whether that matters); one already
 * in the set is not added twice. */
int osp_paths_add(osp_paths_t *p, const char *dir, char *err, size_t errlen);
/* Add the directory a file lies in (realpath of the file, then its
 * parent). */
int osp_paths_add_dir_of(osp_paths_t *p, const char *file, char *err, size_t errlen);
int osp_paths_count(const osp_paths_t *p);
/* The i-th root, resolved; owned by the set. */
const char *osp_paths_root(const osp_paths_t *p, int i);

/* Resolve `path` into out[0..outlen) when it lies inside a root; else
 * OSP_PATHS_ENOENT and err = "<what> not found or not allowed: <path>". */
int osp_paths_confine(const osp_paths_t *p, const char *path, const char *what, char *out,
                      size_t outlen, char *err, size_t errlen);

/* Open path for reading: resolved, then opened O_RDONLY|O_NOFOLLOW|
 * O_NONBLOCK|O_CLOEXEC, a regular file of at most max_bytes. Returns the
 * descriptor (the caller's) or a negative OSP_PATHS_* with the reason in
 * err: ENOENT "<what> not found: <path> (<errno text>)", EKIND "<what> is
 * not a regular file: <path>", EBIG "<what> is larger than N bytes:
 * <path>". *size, if not NULL, gets the file's size. */
int osp_paths_open(const char *path, const char *what, uint64_t max_bytes, uint64_t *size,
                   char *err, size_t errlen);

/* The stem of path into out[0..n), cut to fit: its last component without
 * the extension ("/m/ssd.v2.onnx" -> "ssd.v2"; a leading dot is no
 * extension: ".onnx" stays). "" when path ends in '/'. Touches no file. */
void osp_paths_stem(const char *path, char *out, size_t n);

#endif
