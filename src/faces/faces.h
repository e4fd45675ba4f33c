/*
 * faces: a library of known faces in one SQLite file — names, each with
 * the L2-normalised embeddings of the photos it was added from — and the
 * match of an embedding against it (the best cosine over every stored
 * embedding). `osprey faces` fills it; a cascade step with "faceLibrary"
 * (model/cascade.h) and `osprey detect --recognize` read it.
 *
 * A file is a face library when SQLite opens it, its application id is
 * osprey's ("OSPF") and its table has the columns below; anything else is
 * refused with the reason, and a library whose rows are damaged (a vector
 * of the wrong size, values that are not finite) is refused whole rather
 * than matched against. One handle is used from one thread at a time.
 */
#ifndef OSP_FACES_H
#define OSP_FACES_H

#include <stddef.h>

#define OSP_FACES_NAME_MAX 64 /* bytes of a name, its terminator included */
#define OSP_FACES_DIM_MAX 4096
#define OSP_FACES_ROWS_MAX 100000 /* embeddings a library holds at most */

enum {
    OSP_FACES_OK = 0,
    OSP_FACES_EINVAL = -1, /* a bad name or vector */
    OSP_FACES_EFILE = -2,  /* not a face library, damaged, or unreadable */
    OSP_FACES_ENOMEM = -3,
};

typedef struct osp_faces osp_faces_t;

/* The library a user has when they name none:
 * $XDG_DATA_HOME/osprey/faces.db, else ~/.local/share/osprey/faces.db. */
void osp_faces_default_path(char *buf, size_t n);

/* Open the library at path; create: make it (and its folder) when it is
 * not there, else a missing file is an error. *out is the caller's, freed
 * with osp_faces_close. */
int osp_faces_open(const char *path, int create, osp_faces_t **out, char *err, size_t errlen);
void osp_faces_close(osp_faces_t *f);

/* A name is 1..63 bytes of printable text (no control characters).
 * 0, or OSP_FACES_EINVAL with the reason. */
int osp_faces_check_name(const char *name, char *err, size_t errlen);

/* Store one embedding of dim floats (L2-normalised by the caller) under
 * name; source says where it came from (an image's file name). */
int osp_faces_add(osp_faces_t *f, const char *name, const float *vec, int dim, const char *source,
                  char *err, size_t errlen);
/* Remove every embedding of name: how many there were, or < 0. */
int osp_faces_remove(osp_faces_t *f, const char *name, char *err, size_t errlen);

/* Each name with its count of embeddings, in name order. */
typedef void (*osp_faces_each_fn)(void *arg, const char *name, int embeddings, int dim);
int osp_faces_list(osp_faces_t *f, osp_faces_each_fn fn, void *arg, char *err, size_t errlen);

/* Read every embedding into memory for osp_faces_match (again after a
 * change). OSP_FACES_EFILE when a row is damaged. */
int osp_faces_load(osp_faces_t *f, char *err, size_t errlen);
/* The name whose stored embedding is nearest vec (cosine: both are
 * L2-normalised), and that cosine; *name NULL and *score -2 when the
 * library holds no embedding of dim floats. *name lives until the next
 * load or close. Thread-safe between loads (it only reads). */
void osp_faces_match(const osp_faces_t *f, const float *vec, int dim, const char **name, float *score);
/* Embeddings loaded. */
int osp_faces_count(const osp_faces_t *f);

#endif
