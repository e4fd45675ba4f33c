/* The cameras' events in SQLite; see eventdb.h. */
#include "server/cameras/eventdb.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "log/log.h"

#define RETAIN_EVERY 256 /* records between two retention passes */

typedef struct rec {
    struct rec *next;
    char id[96], camera[64], label[64];
    double start_time, end_time, top_score;
    size_t len;
    char json[]; /* len bytes and a NUL */
} rec_t;

struct srv_eventdb {
    srv_eventdb_cfg_t cfg;
    sqlite3 *db;
    sqlite3_stmt *upsert;
    pthread_t t;
    pthread_mutex_t mu; /* guards the queue, stop and the counts */
    pthread_cond_t cv;
    rec_t *head, *tail;
    int queued, stop;
    srv_eventdb_counts_t counts;
};

static const char SCHEMA[] = "PRAGMA journal_mode=WAL;"
                             "PRAGMA synchronous=NORMAL;"
                             "CREATE TABLE IF NOT EXISTS events ("
                             " id TEXT PRIMARY KEY, camera TEXT NOT NULL, label TEXT NOT NULL,"
                             " start_time REAL NOT NULL, end_time REAL, top_score REAL NOT NULL,"
                             " record TEXT NOT NULL);"
                             "CREATE INDEX IF NOT EXISTS events_camera ON events(camera, start_time);"
                             "CREATE INDEX IF NOT EXISTS events_label ON events(label, start_time);"
                             "CREATE INDEX IF NOT EXISTS events_start ON events(start_time);";

static const char UPSERT[] =
    "INSERT INTO events(id, camera, label, start_time, end_time, top_score, record)"
    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    " ON CONFLICT(id) DO UPDATE SET label = excluded.label, end_time = excluded.end_time,"
    " top_score = excluded.top_score, record = excluded.record";

static void retain(srv_eventdb_t *db) {
    char sql[256];
    if (db->cfg.retain_days > 0) {
        snprintf(sql, sizeof sql, "DELETE FROM events WHERE start_time < %.3f",
                 (double)time(NULL) - db->cfg.retain_days * 86400.0);
        sqlite3_exec(db->db, sql, NULL, NULL, NULL);
    }
    if (db->cfg.retain_rows > 0) {
        snprintf(sql, sizeof sql,
                 "DELETE FROM events WHERE rowid IN (SELECT rowid FROM events ORDER BY start_time "
                 "DESC, rowid DESC LIMIT -1 OFFSET %lld)",
                 (long long)db->cfg.retain_rows);
        sqlite3_exec(db->db, sql, NULL, NULL, NULL);
    }
}

/* Write a batch in one transaction: a row per record, made or updated. */
static void write_batch(srv_eventdb_t *db, rec_t *r, int64_t *since_retain) {
    int64_t ok = 0, failed = 0;
    sqlite3_exec(db->db, "BEGIN", NULL, NULL, NULL);
    for (; r; r = r->next) {
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
    srv_eventdb_t *db = arg;
    (void)pthread_setname_np(pthread_self(), "osp-eventdb");
    int64_t since_retain = 0;
    for (;;) {
        pthread_mutex_lock(&db->mu);
        while (!db->head && !db->stop) pthread_cond_wait(&db->cv, &db->mu);
        rec_t *batch = db->head;
        int stop = db->stop;
        db->head = db->tail = NULL;
        db->queued = 0;
        pthread_mutex_unlock(&db->mu);
        if (batch) write_batch(db, batch, &since_retain);
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

srv_eventdb_t *srv_eventdb_open(const srv_eventdb_cfg_t *cfg, char *err, size_t errlen) {
    srv_eventdb_t *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    db->cfg = *cfg;
    char *msg = NULL;
    if (sqlite3_open_v2(cfg->path, &db->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(db->db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_prepare_v2(db->db, UPSERT, -1, &db->upsert, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "events database %s: %s", cfg->path,
                 msg      ? msg
                 : db->db ? sqlite3_errmsg(db->db)
                          : "out of memory");
        sqlite3_free(msg);
        sqlite3_finalize(db->upsert);
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
        sqlite3_close(db->db);
        free(db);
        return NULL;
    }
    return db;
}

void srv_eventdb_put(srv_eventdb_t *db, const char *id, const char *camera, const char *label,
                     double start_time, double end_time, double top_score, const char *json,
                     size_t len) {
    rec_t *r = malloc(sizeof *r + len + 1);
    if (r) {
        r->next = NULL;
        snprintf(r->id, sizeof r->id, "%s", id);
        snprintf(r->camera, sizeof r->camera, "%s", camera);
        snprintf(r->label, sizeof r->label, "%s", label);
        r->start_time = start_time;
        r->end_time = end_time;
        r->top_score = top_score;
        r->len = len;
        memcpy(r->json, json, len);
        r->json[len] = '\0';
    }
    pthread_mutex_lock(&db->mu);
    if (!r || db->queued >= SRV_EVENTDB_QUEUE || db->stop) {
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

void srv_eventdb_counts(srv_eventdb_t *db, srv_eventdb_counts_t *out) {
    pthread_mutex_lock(&db->mu);
    *out = db->counts;
    pthread_mutex_unlock(&db->mu);
}

void srv_eventdb_close(srv_eventdb_t *db) {
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
    sqlite3_close(db->db);
    pthread_mutex_destroy(&db->mu);
    pthread_cond_destroy(&db->cv);
    free(db);
}
