/* The face library in SQLite (faces.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "faces/faces.h"

/* "OSPF": what tells osprey's file from any other SQLite database */
#define APP_ID 0x4F535046

struct osp_faces {
    sqlite3 *db;
    /* loaded by osp_faces_load: n rows of dim floats each */
    int n, dim;
    float *vecs;
    char (*names)[OSP_FACES_NAME_MAX];
};

static const char SCHEMA[] = "CREATE TABLE IF NOT EXISTS faces ("
                             " id INTEGER PRIMARY KEY,"
                             " name TEXT NOT NULL,"
                             " dim INTEGER NOT NULL,"
                             " embedding BLOB NOT NULL,"
                             " source TEXT NOT NULL DEFAULT '',"
                             " added TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP);"
                             "CREATE INDEX IF NOT EXISTS faces_name ON faces(name);";

void osp_faces_default_path(char *buf, size_t n) {
    const char *x = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (x && x[0] == '/')
        snprintf(buf, n, "%s/osprey/faces.db", x);
    else
        snprintf(buf, n, "%s/.local/share/osprey/faces.db", home && *home ? home : ".");
}

/* mkdir -p of the folder path is in */
static int make_parents(const char *path) {
    char dir[1024];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return -1;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

static int one_int(sqlite3 *db, const char *sql, int *out) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        *out = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* An existing file: osprey's, with the table it needs. An empty file (what
 * SQLite makes when asked to create) becomes one when create is set. */
static int check_or_init(sqlite3 *db, const char *path, int create, char *err, size_t errlen) {
    int app = 0, tables = 0, cols = 0;
    if (one_int(db, "PRAGMA application_id", &app) != SQLITE_OK ||
        one_int(db, "SELECT count(*) FROM sqlite_master", &tables) != SQLITE_OK) {
        snprintf(err, errlen, "%s is not a face library (%s)", path, sqlite3_errmsg(db));
        return OSP_FACES_EFILE;
    }
    if (app == 0 && tables == 0) {
        if (!create) {
            snprintf(err, errlen, "%s is not a face library (an empty database)", path);
            return OSP_FACES_EFILE;
        }
        char *msg = NULL;
        if (sqlite3_exec(db, "PRAGMA application_id = 1330860102", NULL, NULL, &msg) != SQLITE_OK ||
            sqlite3_exec(db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK) {
            snprintf(err, errlen, "cannot make a face library in %s: %s", path, msg ? msg : "?");
            sqlite3_free(msg);
            return OSP_FACES_EFILE;
        }
        return OSP_FACES_OK;
    }
    if (app != APP_ID) {
        snprintf(err, errlen, "%s is not a face library (a SQLite database of something else)", path);
        return OSP_FACES_EFILE;
    }
    if (one_int(db,
                "SELECT count(*) FROM pragma_table_info('faces') WHERE name IN "
                "('name','dim','embedding','source')",
                &cols) != SQLITE_OK ||
        cols != 4) {
        snprintf(err, errlen, "%s is a damaged face library (its table is missing or altered)", path);
        return OSP_FACES_EFILE;
    }
    return OSP_FACES_OK;
}

int osp_faces_open(const char *path, int create, osp_faces_t **out, char *err, size_t errlen) {
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (!create) {
            snprintf(err, errlen, "cannot open face library %s: %s", path, strerror(errno));
            return OSP_FACES_EFILE;
        }
        if (make_parents(path)) {
            snprintf(err, errlen, "cannot make the folder of %s: %s", path, strerror(errno));
            return OSP_FACES_EFILE;
        }
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a face library (not a file)", path);
        return OSP_FACES_EFILE;
    }
    osp_faces_t *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return OSP_FACES_ENOMEM;
    }
    int flags = create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READWRITE;
    if (sqlite3_open_v2(path, &f->db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open face library %s: %s", path,
                 f->db ? sqlite3_errmsg(f->db) : "out of memory");
        osp_faces_close(f);
        return OSP_FACES_EFILE;
    }
    sqlite3_busy_timeout(f->db, 2000);
    int rc = check_or_init(f->db, path, create, err, errlen);
    if (rc) {
        osp_faces_close(f);
        return rc;
    }
    *out = f;
    return OSP_FACES_OK;
}

void osp_faces_close(osp_faces_t *f) {
    if (!f) return;
    sqlite3_close(f->db);
    free(f->vecs);
    free(f->names);
    free(f);
}

int osp_faces_check_name(const char *name, char *err, size_t errlen) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n >= OSP_FACES_NAME_MAX) {
        snprintf(err, errlen, "a name is 1 to %d bytes", OSP_FACES_NAME_MAX - 1);
        return OSP_FACES_EINVAL;
    }
    for (size_t i = 0; i < n; i++)
        if (iscntrl((unsigned char)name[i])) {
            snprintf(err, errlen, "a name has no control characters");
            return OSP_FACES_EINVAL;
        }
    return OSP_FACES_OK;
}

int osp_faces_add(osp_faces_t *f, const char *name, const float *vec, int dim, const char *source,
                  char *err, size_t errlen) {
    if (osp_faces_check_name(name, err, errlen)) return OSP_FACES_EINVAL;
    if (dim < 1 || dim > OSP_FACES_DIM_MAX) {
        snprintf(err, errlen, "an embedding of %d values", dim);
        return OSP_FACES_EINVAL;
    }
    for (int i = 0; i < dim; i++)
        if (!isfinite(vec[i])) {
            snprintf(err, errlen, "an embedding that is not finite");
            return OSP_FACES_EINVAL;
        }
    int rows = 0;
    if (one_int(f->db, "SELECT count(*) FROM faces", &rows) != SQLITE_OK ||
        rows >= OSP_FACES_ROWS_MAX) {
        snprintf(err, errlen,
                 rows >= OSP_FACES_ROWS_MAX ? "the library is full (%d embeddings)"
                                            : "cannot read the library",
                 OSP_FACES_ROWS_MAX);
        return OSP_FACES_EFILE;
    }
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(f->db,
                                "INSERT INTO faces(name, dim, embedding, source) VALUES (?, ?, ?, ?)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, dim);
        sqlite3_bind_blob(st, 3, vec, dim * (int)sizeof *vec, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, source ? source : "", -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "cannot write the library: %s", sqlite3_errmsg(f->db));
        return OSP_FACES_EFILE;
    }
    return OSP_FACES_OK;
}

int osp_faces_remove(osp_faces_t *f, const char *name, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(f->db, "DELETE FROM faces WHERE name = ?", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "cannot write the library: %s", sqlite3_errmsg(f->db));
        return OSP_FACES_EFILE;
    }
    return sqlite3_changes(f->db);
}

int osp_faces_list(osp_faces_t *f, osp_faces_each_fn fn, void *arg, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(f->db,
                                "SELECT name, count(*), max(dim) FROM faces GROUP BY name ORDER BY name",
                                -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(st, 0);
        fn(arg, name ? (const char *)name : "", sqlite3_column_int(st, 1), sqlite3_column_int(st, 2));
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "cannot read the library: %s", sqlite3_errmsg(f->db));
        return OSP_FACES_EFILE;
    }
    return OSP_FACES_OK;
}

int osp_faces_load(osp_faces_t *f, char *err, size_t errlen) {
    int rows = 0, rc;
    const char *why = "unreadable";
    free(f->vecs);
    free(f->names);
    f->vecs = NULL, f->names = NULL, f->n = f->dim = 0;
    if (one_int(f->db, "SELECT count(*) FROM faces", &rows) != SQLITE_OK) goto damaged;
    if (rows > OSP_FACES_ROWS_MAX) {
        snprintf(err, errlen, "the library holds %d embeddings, more than %d", rows,
                 OSP_FACES_ROWS_MAX);
        return OSP_FACES_EFILE;
    }
    if (rows == 0) return OSP_FACES_OK;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(f->db, "SELECT name, dim, embedding FROM faces ORDER BY id", -1, &st,
                           NULL) != SQLITE_OK)
        goto damaged;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(st, 0);
        int dim = sqlite3_column_int(st, 1);
        const float *blob = sqlite3_column_blob(st, 2);
        int bytes = sqlite3_column_bytes(st, 2);
        if (!name || osp_faces_check_name((const char *)name, err, errlen) || dim < 1 ||
            dim > OSP_FACES_DIM_MAX || (f->dim && dim != f->dim) || !blob ||
            bytes != dim * (int)sizeof(float) || f->n >= rows) {
            sqlite3_finalize(st);
            why = "a row is not a stored face";
            goto damaged;
        }
        if (!f->vecs) {
            f->dim = dim;
            f->vecs = malloc((size_t)rows * (size_t)dim * sizeof *f->vecs);
            f->names = malloc((size_t)rows * sizeof *f->names);
            if (!f->vecs || !f->names) {
                sqlite3_finalize(st);
                snprintf(err, errlen, "out of memory");
                return OSP_FACES_ENOMEM;
            }
        }
        float *v = f->vecs + (size_t)f->n * (size_t)dim;
        memcpy(v, blob, (size_t)bytes);
        for (int i = 0; i < dim; i++)
            if (!isfinite(v[i])) {
                sqlite3_finalize(st);
                why = "an embedding is not finite";
                goto damaged;
            }
        snprintf(f->names[f->n++], OSP_FACES_NAME_MAX, "%s", (const char *)name);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) goto damaged;
    return OSP_FACES_OK;
damaged:
    free(f->vecs);
    free(f->names);
    f->vecs = NULL, f->names = NULL, f->n = f->dim = 0;
    snprintf(err, errlen, "the face library is damaged (%s)", why);
    return OSP_FACES_EFILE;
}

void osp_faces_match(const osp_faces_t *f, const float *vec, int dim, const char **name, float *score) {
    *name = NULL;
    *score = -2;
    if (!f || dim != f->dim) return;
    for (int i = 0; i < f->n; i++) {
        const float *v = f->vecs + (size_t)i * (size_t)dim;
        double dot = 0;
        for (int k = 0; k < dim; k++) dot += (double)v[k] * vec[k];
        if (dot > *score) {
            *score = (float)dot;
            *name = f->names[i];
        }
    }
}

int osp_faces_count(const osp_faces_t *f) { return f ? f->n : 0; }
