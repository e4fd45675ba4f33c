/*
 * eventdb: the cameras' events kept in SQLite (docs/cameras.md, Events),
 * one row per tracked object, updated by each of its records: WAL mode, so
 * a reader (a person with sqlite3, a dashboard) never blocks the writer;
 * one writer thread, so no camera waits for the disk; retention by age and
 * by rows. A camera hands a record over and goes on: when the writer falls
 * behind by more than SRV_EVENTDB_QUEUE records, the newest are dropped
 * and counted, never a camera slowed.
 */
#ifndef OSP_EVENTDB_H
#define OSP_EVENTDB_H

#include <stddef.h>
#include <stdint.h>

#define SRV_EVENTDB_QUEUE 4096

typedef struct srv_eventdb srv_eventdb_t;

typedef struct {
    char path[1024];
    double retain_days;  /* rows whose object started longer ago are deleted; 0: no bound */
    int64_t retain_rows; /* at most this many rows, the newest kept; 0: no bound */
} srv_eventdb_cfg_t;

/* Open (creating) the database and start its writer. NULL with err. */
srv_eventdb_t *srv_eventdb_open(const srv_eventdb_cfg_t *cfg, char *err, size_t errlen);
/* Write what is queued, stop the writer, close. */
void srv_eventdb_close(srv_eventdb_t *db);

/* One event record (json, len bytes: Frigate's layout) of object `id` on
 * camera: its row made or updated. Any thread; never blocks on the disk. */
void srv_eventdb_put(srv_eventdb_t *db, const char *id, const char *camera, const char *label,
                     double start_time, double end_time, double top_score, const char *json,
                     size_t len);

typedef struct {
    int64_t written, dropped, failed;
} srv_eventdb_counts_t;
void srv_eventdb_counts(srv_eventdb_t *db, srv_eventdb_counts_t *out);

#endif
