/* The cameras' events and line crossings in SQLite: the writer and the
 * readers; see eventdb.h (a peer's parameters are checked in query.c). */
#include "eventdb/eventdb.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "log/log.h"

#define RETAIN_EVERY 256 /* records between two retention passes */

/* One record queued for the writer: an event's (its row made or updated)
 * or a crossing's (a row added). */
typedef struct rec {
    struct rec *next;
    int crossing;
    char id[96], camera[64], label[64];
    char line[64], direction[8];            /* a crossing's */
    uint64_t track_id;                      /* a crossing's */
    double start_time, end_time, top_score; /* a crossing's time: start_time */
    size_t len;
    char json[]; /* len bytes and a NUL */
} rec_t;

struct osp_eventdb {
    osp_eventdb_cfg_t cfg;
    sqlite3 *db;
    sqlite3_stmt *upsert;
    sqlite3_stmt *crossing; /* a crossing's insert */
    pthread_t t;
    pthread_mutex_t mu; /* guards the queue, stop and the counts */
    pthread_cond_t cv;
    rec_t *head, *tail;
    int queued, stop;
    int retain_new;  /* osp_eventdb_retain_set gave new bounds: */
    double new_days; /* taken by the writer, under mu */
    int64_t new_rows;
    osp_eventdb_counts_t counts;
};

static const char SCHEMA[] = "PRAGMA journal_mode=WAL;"
                             "PRAGMA synchronous=NORMAL;"
                             "CREATE TABLE IF NOT EXISTS events ("
                             " id TEXT PRIMARY KEY, camera TEXT NOT NULL, label TEXT NOT NULL,"
                             " start_time REAL NOT NULL, end_time REAL, top_score REAL NOT NULL,"
                             " record TEXT NOT NULL, zones TEXT);"
                             "CREATE INDEX IF NOT EXISTS events_camera ON events(camera, start_time);"
                             "CREATE INDEX IF NOT EXISTS events_label ON events(label, start_time);"
                             "CREATE INDEX IF NOT EXISTS events_start ON events(start_time);"
                             /* the line crossings: a row each, as they came */
                             "CREATE TABLE IF NOT EXISTS crossings ("
                             " camera TEXT NOT NULL, line TEXT NOT NULL, direction TEXT NOT NULL,"
                             " track_id INTEGER NOT NULL, label TEXT NOT NULL, time REAL NOT NULL,"
                             " record TEXT NOT NULL);"
                             "CREATE INDEX IF NOT EXISTS crossings_time ON crossings(time);"
                             "CREATE INDEX IF NOT EXISTS crossings_camera ON crossings(camera, time);"
                             "CREATE INDEX IF NOT EXISTS crossings_line ON crossings(line, time);";

static const char INSERT_CROSSING[] = "INSERT INTO crossings(camera, line, direction, track_id, label, time, record)"
                                      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/* zones: the zones the object entered (its record's after.entered_zones,
 * a JSON array of names), kept beside the record; and each of them a row
 * of event_zones, kept by triggers, so that a query by zone walks that
 * zone's objects newest first: a zone one object in a thousand entered
 * took 150 ms to find by scanning 100 000 rows (bench/bench_eventdb.c), a
 * few ms by its index. */
#define ZONES_OF(rec) \
    "CASE WHEN json_valid(" rec ") THEN json_extract(" rec ", '$.after.entered_zones') END"

static const char UPSERT[] =
    "INSERT INTO events(id, camera, label, start_time, end_time, top_score, record, zones)"
    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, " ZONES_OF(
        "?7") ")"
              " ON CONFLICT(id) DO UPDATE SET label = excluded.label, end_time = excluded.end_time,"
              " top_score = excluded.top_score, record = excluded.record, zones = excluded.zones";

/* A database made before the zones column: the column added and filled. */
/* A trigger's body: the row's zones not yet in event_zones, added. (Not
 * INSERT OR IGNORE: inside a trigger the upsert's own conflict policy
 * overrides it, and a zone already there failed the whole update.) */
#define ADD_ZONES                                                                     \
    "INSERT INTO event_zones(id, zone, start_time)"                                   \
    " SELECT DISTINCT new.id, j.value, new.start_time FROM json_each(new.zones) AS j" \
    " WHERE j.type = 'text' AND NOT EXISTS (SELECT 1 FROM event_zones"                \
    " WHERE event_zones.id = new.id AND event_zones.zone = j.value);"

static const char ZONES_SCHEMA[] =
    "CREATE TABLE event_zones (id TEXT NOT NULL, zone TEXT NOT NULL, start_time REAL NOT NULL,"
    " PRIMARY KEY(id, zone)) WITHOUT ROWID;"
    "CREATE INDEX event_zones_zone ON event_zones(zone, start_time);"
    "CREATE TRIGGER events_zones_in AFTER INSERT ON events BEGIN " ADD_ZONES " END;"
    "CREATE TRIGGER events_zones_more AFTER UPDATE OF zones ON events BEGIN " ADD_ZONES " END;"
    "CREATE TRIGGER events_zones_gone AFTER DELETE ON events BEGIN"
    " DELETE FROM event_zones WHERE id = old.id; END;"
    "INSERT OR IGNORE INTO event_zones(id, zone, start_time)"
    " SELECT events.id, j.value, events.start_time FROM events, json_each(events.zones) AS j"
    " WHERE j.type = 'text';";

static int exists(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    int has = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK)
        has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

/* A database made before the zones were kept: the column added and
 * filled, the zones' table made and filled. */
static int migrate(sqlite3 *db, char **msg) {
    int rc = SQLITE_OK;
    if (!exists(db, "SELECT 1 FROM pragma_table_info('events') WHERE name = 'zones'"))
        rc = sqlite3_exec(db,
                          "ALTER TABLE events ADD COLUMN zones TEXT;"
                          "UPDATE events SET zones = " ZONES_OF("record") ";",
                          NULL, NULL, msg);
    if (rc == SQLITE_OK &&
        !exists(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_zones'"))
        rc = sqlite3_exec(db, ZONES_SCHEMA, NULL, NULL, msg);
    return rc;
}

/* The rows `which` names deleted, and the snapshot of each with them: a
 * picture outlives no row, or the folder would grow without bound. */
static void drop(osp_eventdb_t *db, const char *which) {
    char sql[320];
    sqlite3_exec(db->db, "BEGIN", NULL, NULL, NULL);
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof sql, "SELECT id FROM events WHERE %s", which);
    if (db->cfg.snapshots[0] && sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *id = (const char *)sqlite3_column_text(st, 0);
            char path[1200];
            if (!id || !osp_eventdb_id_ok(id))
                continue; /* never a path made of what is not an id */
            snprintf(path, sizeof path, "%s/%s.jpg", db->cfg.snapshots, id);
            if (unlink(path) && errno != ENOENT)
                osp_log(OSP_LOG_WARN, "events: cannot delete %s: %s", path, strerror(errno));
        }
    }
    sqlite3_finalize(st);
    snprintf(sql, sizeof sql, "DELETE FROM events WHERE %s", which);
    sqlite3_exec(db->db, sql, NULL, NULL, NULL);
    sqlite3_exec(db->db, "COMMIT", NULL, NULL, NULL);
}

/* The bounds hold for the events and, on their own, for the crossings:
 * at most retain_rows of each. */
static void retain(osp_eventdb_t *db) {
    char which[256], sql[400];
    if (db->cfg.retain_days > 0) {
        double oldest = (double)time(NULL) - db->cfg.retain_days * 86400.0;
        snprintf(which, sizeof which, "start_time < %.3f", oldest);
        drop(db, which);
        snprintf(sql, sizeof sql, "DELETE FROM crossings WHERE time < %.3f", oldest);
        sqlite3_exec(db->db, sql, NULL, NULL, NULL);
    }
    if (db->cfg.retain_rows > 0) {
        snprintf(which, sizeof which,
                 "rowid IN (SELECT rowid FROM events ORDER BY start_time DESC, rowid DESC "
                 "LIMIT -1 OFFSET %lld)",
                 (long long)db->cfg.retain_rows);
        drop(db, which);
        snprintf(sql, sizeof sql,
                 "DELETE FROM crossings WHERE rowid IN (SELECT rowid FROM crossings ORDER BY "
                 "time DESC, rowid DESC LIMIT -1 OFFSET %lld)",
                 (long long)db->cfg.retain_rows);
        sqlite3_exec(db->db, sql, NULL, NULL, NULL);
    }
}

/* A crossing's row, in the batch's transaction. */
static int write_crossing(osp_eventdb_t *db, const rec_t *r) {
    sqlite3_stmt *st = db->crossing;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, r->camera, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->line, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->direction, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)r->track_id);
    sqlite3_bind_text(st, 5, r->label, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 6, r->start_time);
    sqlite3_bind_text(st, 7, r->json, (int)r->len, SQLITE_STATIC);
    return sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
}

/* Write a batch in one transaction: a row per record, made or updated. */
static void write_batch(osp_eventdb_t *db, rec_t *r, int64_t *since_retain) {
    int64_t ok = 0, failed = 0;
    sqlite3_exec(db->db, "BEGIN", NULL, NULL, NULL);
    for (; r; r = r->next) {
        if (r->crossing) {
            if (write_crossing(db, r) == 0)
                ok++;
            else
                failed++;
            continue;
        }
        sqlite3_stmt *st = db->upsert;
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, r->camera, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, r->label, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 4, r->start_time);
        if (r->end_time >= 0)
            sqlite3_bind_double(st, 5, r->end_time);
        else
            sqlite3_bind_null(st, 5);
        sqlite3_bind_double(st, 6, r->top_score);
        sqlite3_bind_text(st, 7, r->json, (int)r->len, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_DONE)
            ok++;
        else
            failed++;
    }
    if (sqlite3_exec(db->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        osp_log(OSP_LOG_ERROR, "ospreyd: events database %s: %s", db->cfg.path,
                sqlite3_errmsg(db->db));
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
        failed += ok;
        ok = 0;
    }
    *since_retain += ok;
    if (*since_retain >= RETAIN_EVERY) {
        retain(db);
        *since_retain = 0;
    }
    pthread_mutex_lock(&db->mu);
    db->counts.written += ok;
    db->counts.failed += failed;
    pthread_mutex_unlock(&db->mu);
}

static void *writer_main(void *arg) {
    osp_eventdb_t *db = arg;
    (void)pthread_setname_np(pthread_self(), "osp-eventdb");
    int64_t since_retain = 0;
    for (;;) {
        pthread_mutex_lock(&db->mu);
        while (!db->head && !db->stop && !db->retain_new) pthread_cond_wait(&db->cv, &db->mu);
        rec_t *batch = db->head;
        int stop = db->stop, bounds = db->retain_new;
        if (bounds) { /* the writer's own copy: retain() reads it unlocked */
            db->cfg.retain_days = db->new_days;
            db->cfg.retain_rows = db->new_rows;
            db->retain_new = 0;
        }
        db->head = db->tail = NULL;
        db->queued = 0;
        pthread_mutex_unlock(&db->mu);
        if (batch) write_batch(db, batch, &since_retain);
        if (bounds) retain(db);
        while (batch) {
            rec_t *n = batch->next;
            free(batch);
            batch = n;
        }
        if (stop) break;
    }
    retain(db);
    return NULL;
}

osp_eventdb_t *osp_eventdb_open(const osp_eventdb_cfg_t *cfg, char *err, size_t errlen) {
    osp_eventdb_t *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    db->cfg = *cfg;
    char *msg = NULL;
    if (sqlite3_open_v2(cfg->path, &db->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(db->db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK ||
        migrate(db->db, &msg) != SQLITE_OK ||
        sqlite3_prepare_v2(db->db, UPSERT, -1, &db->upsert, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->db, INSERT_CROSSING, -1, &db->crossing, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "events database %s: %s", cfg->path,
                 msg      ? msg
                 : db->db ? sqlite3_errmsg(db->db)
                          : "out of memory");
        sqlite3_free(msg);
        sqlite3_finalize(db->upsert);
        sqlite3_finalize(db->crossing);
        sqlite3_close(db->db);
        free(db);
        return NULL;
    }
    sqlite3_busy_timeout(db->db, 5000); /* a reader's checkpoint, not a writer's wait */
    retain(db);                         /* what an earlier run left past the bounds */
    pthread_mutex_init(&db->mu, NULL);
    pthread_cond_init(&db->cv, NULL);
    if (pthread_create(&db->t, NULL, writer_main, db)) {
        snprintf(err, errlen, "events database: cannot start its writer");
        pthread_mutex_destroy(&db->mu);
        pthread_cond_destroy(&db->cv);
        sqlite3_finalize(db->upsert);
        sqlite3_finalize(db->crossing);
        sqlite3_close(db->db);
        free(db);
        return NULL;
    }
    return db;
}

/* A record of len bytes of JSON, its other fields zeroed; NULL out of memory. */
static rec_t *rec_new(const char *camera, const char *label, const char *json, size_t len) {
    rec_t *r = calloc(1, sizeof *r + len + 1);
    if (!r) return NULL;
    snprintf(r->camera, sizeof r->camera, "%s", camera);
    snprintf(r->label, sizeof r->label, "%s", label);
    r->len = len;
    memcpy(r->json, json, len);
    r->json[len] = '\0';
    return r;
}

/* r (NULL: out of memory) onto the writer's queue, or dropped and counted. */
static void enqueue(osp_eventdb_t *db, rec_t *r) {
    pthread_mutex_lock(&db->mu);
    if (!r || db->queued >= OSP_EVENTDB_QUEUE || db->stop) {
        db->counts.dropped++;
        pthread_mutex_unlock(&db->mu);
        free(r);
        return;
    }
    if (db->tail)
        db->tail->next = r;
    else
        db->head = r;
    db->tail = r;
    db->queued++;
    pthread_cond_signal(&db->cv);
    pthread_mutex_unlock(&db->mu);
}

void osp_eventdb_put(osp_eventdb_t *db, const char *id, const char *camera, const char *label,
                     double start_time, double end_time, double top_score, const char *json,
                     size_t len) {
    rec_t *r = rec_new(camera, label, json, len);
    if (r) {
        snprintf(r->id, sizeof r->id, "%s", id);
        r->start_time = start_time;
        r->end_time = end_time;
        r->top_score = top_score;
    }
    enqueue(db, r);
}

void osp_eventdb_put_crossing(osp_eventdb_t *db, const char *camera, const char *line,
                              const char *direction, uint64_t track_id, const char *label,
                              double t, const char *json, size_t len) {
    rec_t *r = rec_new(camera, label, json, len);
    if (r) {
        r->crossing = 1;
        snprintf(r->line, sizeof r->line, "%s", line);
        snprintf(r->direction, sizeof r->direction, "%s", direction);
        r->track_id = track_id;
        r->start_time = t;
    }
    enqueue(db, r);
}

void osp_eventdb_retain_set(osp_eventdb_t *db, double days, int64_t rows) {
    pthread_mutex_lock(&db->mu);
    db->new_days = days;
    db->new_rows = rows;
    db->retain_new = 1;
    pthread_cond_signal(&db->cv);
    pthread_mutex_unlock(&db->mu);
}

void osp_eventdb_counts(osp_eventdb_t *db, osp_eventdb_counts_t *out) {
    pthread_mutex_lock(&db->mu);
    *out = db->counts;
    pthread_mutex_unlock(&db->mu);
}

void osp_eventdb_close(osp_eventdb_t *db) {
    if (!db) return;
    pthread_mutex_lock(&db->mu);
    db->stop = 1;
    pthread_cond_signal(&db->cv);
    pthread_mutex_unlock(&db->mu);
    pthread_join(db->t, NULL);
    osp_log(OSP_LOG_INFO,
            "ospreyd: events database %s: %lld record(s) written, %lld dropped, %lld failed",
            db->cfg.path, (long long)db->counts.written, (long long)db->counts.dropped,
            (long long)db->counts.failed);
    sqlite3_finalize(db->upsert);
    sqlite3_finalize(db->crossing);
    sqlite3_close(db->db);
    pthread_mutex_destroy(&db->mu);
    pthread_cond_destroy(&db->cv);
    free(db);
}

/* ---- readers ------------------------------------------------------------------------ */

struct osp_eventdb_reader {
    sqlite3 *db;
};

osp_eventdb_reader_t *osp_eventdb_reader_open(const char *path, char *err, size_t errlen) {
    osp_eventdb_reader_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "the events database cannot be opened: %s",
                 r->db ? sqlite3_errmsg(r->db) : "out of memory");
        sqlite3_close(r->db);
        free(r);
        return NULL;
    }
    /* the writer's checkpoint may hold the WAL's index for a moment */
    sqlite3_busy_timeout(r->db, 1000);
    return r;
}

void osp_eventdb_reader_close(osp_eventdb_reader_t *r) {
    if (!r) return;
    sqlite3_close(r->db);
    free(r);
}

static void text_or_null(osp_jw_t *w, sqlite3_stmt *st, int col) {
    const unsigned char *t = sqlite3_column_text(st, col);
    if (t)
        osp_jw_strn(w, (const char *)t, (size_t)sqlite3_column_bytes(st, col));
    else
        osp_jw_null(w);
}

static void real_or_null(osp_jw_t *w, sqlite3_stmt *st, int col, int digits) {
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        osp_jw_null(w);
    else
        osp_jw_num(w, sqlite3_column_double(st, col), digits);
}

/* A column of JSON the writer stored, written as it is; absent is dflt. */
static void json_or(osp_jw_t *w, sqlite3_stmt *st, int col, const char *dflt) {
    const char *j = (const char *)sqlite3_column_text(st, col);
    if (j)
        osp_jw_raw(w, j, (size_t)sqlite3_column_bytes(st, col));
    else if (dflt)
        osp_jw_raw(w, dflt, strlen(dflt));
    else
        osp_jw_null(w);
}

static sqlite3_stmt *prepare(osp_eventdb_reader_t *r, const char *sql, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "the events database cannot be read: %s", sqlite3_errmsg(r->db));
        return NULL;
    }
    return st;
}

static int limit_of(const osp_eventdb_query_t *q) {
    return q->limit >= 1 && q->limit <= OSP_EVENTDB_LIMIT_MAX ? q->limit : OSP_EVENTDB_LIMIT;
}

/* The values of q into the parameters a page's SQL names (:camera,
 * :label, :zone, :line, :after, :before, :limit): the SQL names only those
 * q gives, so every page binds the same way whatever it filters on. */
static void bind_query(sqlite3_stmt *st, const osp_eventdb_query_t *q) {
    const char *text[][2] = {{":camera", q->camera},
                             {":label", q->label},
                             {":zone", q->zone},
                             {":line", q->line}};
    int i;
    for (size_t k = 0; k < sizeof text / sizeof text[0]; k++)
        if ((i = sqlite3_bind_parameter_index(st, text[k][0])))
            sqlite3_bind_text(st, i, text[k][1], -1, SQLITE_STATIC);
    if ((i = sqlite3_bind_parameter_index(st, ":after"))) sqlite3_bind_double(st, i, q->after);
    if ((i = sqlite3_bind_parameter_index(st, ":before"))) sqlite3_bind_double(st, i, q->before);
    if ((i = sqlite3_bind_parameter_index(st, ":limit"))) sqlite3_bind_int(st, i, limit_of(q));
}

/* A page's columns, in its SELECT's order: each a member of a row's
 * object. */
typedef enum { COL_TEXT, COL_REAL, COL_UINT, COL_JSON } col_kind_t;
typedef struct {
    const char *key;
    col_kind_t kind;
    int digits;        /* COL_REAL: after the point */
    const char *empty; /* COL_JSON: written for NULL (NULL: null) */
} col_t;

/* zones and record are JSON the writer stored (json_extract's, and the
 * records it was handed); record is the record the camera logged */
static const col_t EVENT_COLS[] = {
    {"id", COL_TEXT, 0, NULL},       {"camera", COL_TEXT, 0, NULL},
    {"label", COL_TEXT, 0, NULL},    {"start_time", COL_REAL, 6, NULL},
    {"end_time", COL_REAL, 6, NULL}, {"top_score", COL_REAL, 4, NULL},
    {"zones", COL_JSON, 0, "[]"},    {"record", COL_JSON, 0, NULL},
};
static const col_t CROSSING_COLS[] = {
    {"camera", COL_TEXT, 0, NULL},  {"line", COL_TEXT, 0, NULL},  {"direction", COL_TEXT, 0, NULL},
    {"trackId", COL_UINT, 0, NULL}, {"label", COL_TEXT, 0, NULL}, {"time", COL_REAL, 6, NULL},
    {"record", COL_JSON, 0, NULL},
};

/* Every row of st as an object of a JSON array, its members cols[0..n);
 * st is finalized. The rows written, or -1 with err. */
static int rows_out(osp_eventdb_reader_t *r, sqlite3_stmt *st, osp_jw_t *w, const col_t *cols,
                    int ncols, char *err, size_t errlen) {
    int n = 0, rc;
    osp_jw_arr_open(w);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        osp_jw_obj_open(w);
        for (int i = 0; i < ncols; i++) {
            osp_jw_key(w, cols[i].key);
            switch (cols[i].kind) {
            case COL_TEXT: text_or_null(w, st, i); break;
            case COL_REAL: real_or_null(w, st, i, cols[i].digits); break;
            case COL_UINT: osp_jw_uint(w, (uint64_t)sqlite3_column_int64(st, i)); break;
            case COL_JSON: json_or(w, st, i, cols[i].empty); break;
            }
        }
        osp_jw_obj_close(w);
        n++;
    }
    osp_jw_arr_close(w);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "the events database cannot be read: %s", sqlite3_errmsg(r->db));
        n = -1;
    }
    sqlite3_finalize(st);
    return n;
}

int osp_eventdb_query(osp_eventdb_reader_t *r, const osp_eventdb_query_t *q, osp_jw_t *w,
                      char *err, size_t errlen) {
    /* the SQL is made of these fixed pieces only; every value is bound */
    char sql[600] = "SELECT e.id, e.camera, e.label, e.start_time, e.end_time, e.top_score,"
                    " e.zones, e.record FROM ";
    /* by zone: that zone's objects, newest first, each looked up */
    /* (CROSS JOIN: SQLite keeps that order, so a rare zone is not looked
     * for among a camera's every object) */
    strcat(sql, q->zone[0] ? "event_zones z CROSS JOIN events e ON e.id = z.id WHERE z.zone = :zone"
                           : "events e WHERE 1");
    if (q->camera[0]) strcat(sql, " AND e.camera = :camera");
    if (q->label[0]) strcat(sql, " AND e.label = :label");
    if (q->has_after) strcat(sql, " AND e.start_time > :after");
    if (q->has_before) strcat(sql, " AND e.start_time < :before");
    strcat(sql, q->zone[0] ? " ORDER BY z.start_time DESC, z.id DESC LIMIT :limit"
                           : " ORDER BY e.start_time DESC, e.id DESC LIMIT :limit");
    sqlite3_stmt *st = prepare(r, sql, err, errlen);
    if (!st) return -1;
    bind_query(st, q);
    return rows_out(r, st, w, EVENT_COLS, (int)(sizeof EVENT_COLS / sizeof EVENT_COLS[0]), err,
                    errlen);
}

int osp_eventdb_crossings(osp_eventdb_reader_t *r, const osp_eventdb_query_t *q, osp_jw_t *w,
                          char *err, size_t errlen) {
    /* fixed pieces only, as osp_eventdb_query's; every value bound */
    char sql[400] = "SELECT camera, line, direction, track_id, label, time, record FROM crossings"
                    " WHERE 1";
    if (q->camera[0]) strcat(sql, " AND camera = :camera");
    if (q->line[0]) strcat(sql, " AND line = :line");
    if (q->has_after) strcat(sql, " AND time > :after");
    if (q->has_before) strcat(sql, " AND time < :before");
    strcat(sql, " ORDER BY time DESC, rowid DESC LIMIT :limit");
    sqlite3_stmt *st = prepare(r, sql, err, errlen);
    if (!st) return -1;
    bind_query(st, q);
    return rows_out(r, st, w, CROSSING_COLS, (int)(sizeof CROSSING_COLS / sizeof CROSSING_COLS[0]),
                    err, errlen);
}

int osp_eventdb_has(osp_eventdb_reader_t *r, const char *id, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM events WHERE id = ?1", -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "the events database cannot be read: %s", sqlite3_errmsg(r->db));
        return -1;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), has = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
    if (has < 0)
        snprintf(err, errlen, "the events database cannot be read: %s", sqlite3_errmsg(r->db));
    sqlite3_finalize(st);
    return has;
}
