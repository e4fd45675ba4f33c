/*
 * eventdb: the cameras' events kept in SQLite (docs/cameras.md, Events),
 * one row per tracked object, updated by each of its records, and a row
 * per line crossing in a table of its own: WAL mode, so
 * a reader (a person with sqlite3, a dashboard) never blocks the writer;
 * one writer thread, so no camera waits for the disk; retention by age and
 * by rows. A camera hands a record over and goes on: when the writer falls
 * behind by more than OSP_EVENTDB_QUEUE records, the newest are dropped
 * and counted, never a camera slowed.
 *
 * Readers (the HTTP door's /api/events and /api/crossings) open the file
 * read-only, one connection each, and query it with a filter a peer
 * chose: every value is checked here (osp_eventdb_query_set and
 * osp_eventdb_crossings_set, query.c) and bound, never pasted into
 * the SQL. A library below the server, so that any front end may read
 * what the cameras wrote.
 */
#ifndef OSP_EVENTDB_EVENTDB_H
#define OSP_EVENTDB_EVENTDB_H

#include <stddef.h>
#include <stdint.h>

#include "wire/jsonw.h"

#define OSP_EVENTDB_QUEUE 4096

typedef struct osp_eventdb osp_eventdb_t;

typedef struct {
    char path[1024];
    double retain_days;   /* rows whose object started longer ago are deleted; 0: no bound */
    int64_t retain_rows;  /* at most this many rows, the newest kept; 0: no bound */
    char snapshots[1024]; /* DIR of the rows' DIR/<id>.jpg, deleted with their rows; "": none */
} osp_eventdb_cfg_t;

/* Open (creating) the database and start its writer. NULL with err. */
osp_eventdb_t *osp_eventdb_open(const osp_eventdb_cfg_t *cfg, char *err, size_t errlen);
/* Write what is queued, stop the writer, close. */
void osp_eventdb_close(osp_eventdb_t *db);

/* One event record (json, len bytes: Frigate's layout) of object `id` on
 * camera: its row made or updated. Any thread; never blocks on the disk. */
void osp_eventdb_put(osp_eventdb_t *db, const char *id, const char *camera, const char *label,
                     double start_time, double end_time, double top_score, const char *json,
                     size_t len);

/* One line crossing (json, len bytes: the record as the camera logs it)
 * of object track_id (its label) over line, direction "in" or "out", at
 * time t on camera: a row of the crossings table. Any thread; the events'
 * queue, writer and retention (at most retain_rows crossings besides the
 * events' rows, none older than retain_days). */
void osp_eventdb_put_crossing(osp_eventdb_t *db, const char *camera, const char *line,
                              const char *direction, uint64_t track_id, const char *label,
                              double t, const char *json, size_t len);

/* New retention bounds (as the config's retain_days and retain_rows),
 * applied by the writer at once and from then on. Any thread. */
void osp_eventdb_retain_set(osp_eventdb_t *db, double days, int64_t rows);

typedef struct {
    int64_t written, dropped, failed;
} osp_eventdb_counts_t;
void osp_eventdb_counts(osp_eventdb_t *db, osp_eventdb_counts_t *out);

/* ---- readers ------------------------------------------------------------------------ */

#define OSP_EVENTDB_LIMIT 50      /* rows a query returns unless it asks for another number */
#define OSP_EVENTDB_LIMIT_MAX 500 /* at most */
#define OSP_EVENTDB_ID_MAX 96     /* an event id's bytes and its NUL */

/* Which rows, newest first: "" or has_* 0 for no bound. */
typedef struct {
    char camera[64]; /* the camera's name */
    char label[64];
    char zone[64];        /* a zone the object entered */
    char line[64];        /* crossings: the line crossed */
    double after, before; /* its start time (a crossing's time), epoch seconds: after < t < before */
    int has_after, has_before;
    int limit; /* 1..OSP_EVENTDB_LIMIT_MAX */
} osp_eventdb_query_t;

/* Every row, OSP_EVENTDB_LIMIT of them. */
void osp_eventdb_query_init(osp_eventdb_query_t *q);
/* One parameter a peer sent (camera, label, zone, after, before, limit)
 * into q: 0, or -1 with err a sentence for the peer (an unknown key, a
 * value too long, of the wrong characters, not a number, out of range). */
int osp_eventdb_query_set(osp_eventdb_query_t *q, const char *key, const char *value, char *err,
                          size_t errlen);
/* The same for a crossings query: camera, line, after, before, limit. */
int osp_eventdb_crossings_set(osp_eventdb_query_t *q, const char *key, const char *value,
                              char *err, size_t errlen);
/* Whether id is made as event ids are ("<start time>-<track id>": digits,
 * one '.', one '-'), and shorter than OSP_EVENTDB_ID_MAX. */
int osp_eventdb_id_ok(const char *id);

typedef struct osp_eventdb_reader osp_eventdb_reader_t;
/* The database at path, read-only (it must exist); one thread's. NULL with err. */
osp_eventdb_reader_t *osp_eventdb_reader_open(const char *path, char *err, size_t errlen);
void osp_eventdb_reader_close(osp_eventdb_reader_t *r);
/* The rows q asks for, newest first, as a JSON array of objects {id,
 * camera, label, start_time, end_time, top_score, zones, record} into w.
 * How many, or -1 with err. */
int osp_eventdb_query(osp_eventdb_reader_t *r, const osp_eventdb_query_t *q, osp_jw_t *w,
                      char *err, size_t errlen);
/* The crossings q asks for (camera, line, after, before, limit), newest
 * first, as a JSON array of objects {camera, line, direction, trackId,
 * label, time, record}. How many, or -1 with err. */
int osp_eventdb_crossings(osp_eventdb_reader_t *r, const osp_eventdb_query_t *q, osp_jw_t *w,
                          char *err, size_t errlen);
/* 1 when the database has a row of event id, 0 when not, -1 with err. */
int osp_eventdb_has(osp_eventdb_reader_t *r, const char *id, char *err, size_t errlen);

#endif
