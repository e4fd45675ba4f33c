/* The cameras' pages; see campages.h. */
#include "server/http/campages.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "server/core/camboard.h"

#define LATEST_WAIT_MS 2000 /* a first look waits this long for a frame to be copied */
#define LATEST_QUALITY 80   /* a frame to look at in a browser, refreshed every second or so */
#define SNAPSHOT_MAX (16u << 20) /* a snapshot file larger than this is not served */

/* Every camera on the board (SRV_CAMBOARD_MAX entries, malloc'd: the
 * caller frees), *n of them; NULL when out of memory. */
static srv_camboard_entry_t *cameras(server_t *s, int *n) {
    srv_camboard_entry_t *e = malloc(SRV_CAMBOARD_MAX * sizeof *e);
    *n = e ? srv_camboard_read(s->camboard, e, SRV_CAMBOARD_MAX) : 0;
    return e;
}

static void num_or_null(osp_jw_t *w, const char *key, double v, int digits) {
    osp_jw_key(w, key);
    if (v >= 0)
        osp_jw_num(w, v, digits);
    else
        osp_jw_null(w);
}

void srv_page_cameras(server_t *s, osp_jw_t *w) {
    int n;
    srv_camboard_entry_t *e = cameras(s, &n);
    osp_jw_obj_open(w);
    osp_jw_key(w, "cameras");
    osp_jw_arr_open(w);
    for (int i = 0; i < n; i++) {
        const srv_cam_counts_t *c = &e[i].c;
        osp_jw_obj_open(w);
        osp_jw_key(w, "name");
        osp_jw_str(w, e[i].name);
        osp_jw_key(w, "state");
        osp_jw_str(w, srv_cam_state_name(e[i].state));
        osp_jw_key(w, "model");
        osp_jw_str(w, e[i].model);
        osp_jw_key(w, "fpsMax");
        osp_jw_num(w, e[i].fps_max, 2);
        osp_jw_key(w, "fps");
        osp_jw_num(w, e[i].fps, 2);
        static const char *const keys[] = {"framesIn",  "submitted", "skipped",    "detected",
                                           "shed",      "failed",    "events",     "reconnects",
                                           "crossings", "runs",      "regionRuns", "stepRuns"};
        const int64_t vals[] = {c->frames_in, c->submitted, c->skipped,     c->detected,
                                c->shed,      c->failed,    c->events,      c->reconnects,
                                c->crossings, c->runs,      c->region_runs, c->step_runs};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            osp_jw_key(w, keys[k]);
            osp_jw_int(w, vals[k]);
        }
        osp_jw_key(w, "tracksActive");
        osp_jw_int(w, c->tracks_active);
        osp_jw_key(w, "decodeThreads");
        osp_jw_int(w, c->decode_threads);
        num_or_null(w, "motion", c->motion, 3);
        num_or_null(w, "decodeMs", c->decode_ms, 2);
        num_or_null(w, "frameTime", e[i].frame_time > 0 ? e[i].frame_time : -1, 3);
        osp_jw_obj_close(w);
    }
    osp_jw_arr_close(w);
    osp_jw_obj_close(w);
    free(e);
}

/* ---- /metrics ----------------------------------------------------------------------- */

static void labels(char *out, size_t cap, const char *camera, const char *key, const char *val) {
    const char *kv[4] = {"camera", camera, key, val};
    osp_prom_labels(out, cap, key ? 2 : 1, kv);
}

/* One series a camera: name{camera} = value(entry); none for a camera
 * whose value is < 0 (it does not measure it). */
static void per_camera(osp_text_t *t, const char *name, const char *type, const char *help,
                       const srv_camboard_entry_t *e, int n,
                       double (*value)(const srv_camboard_entry_t *)) {
    char lb[256];
    osp_prom_family(t, name, type, help);
    for (int i = 0; i < n; i++)
        if (value(&e[i]) >= 0) {
            labels(lb, sizeof lb, e[i].name, NULL, NULL);
            osp_prom_sample(t, name, lb, value(&e[i]));
        }
}

static double v_in(const srv_camboard_entry_t *e) { return (double)e->c.frames_in; }
static double v_events(const srv_camboard_entry_t *e) { return (double)e->c.events; }
static double v_reconnects(const srv_camboard_entry_t *e) { return (double)e->c.reconnects; }
static double v_tracks(const srv_camboard_entry_t *e) { return e->c.tracks_active; }
static double v_fps(const srv_camboard_entry_t *e) { return e->fps; }
static double v_skipped(const srv_camboard_entry_t *e) { return (double)e->c.skipped; }
static double v_steps(const srv_camboard_entry_t *e) { return (double)e->c.step_runs; }
static double v_motion(const srv_camboard_entry_t *e) { return e->c.motion; }
static double v_decode(const srv_camboard_entry_t *e) {
    return e->c.decode_ms < 0 ? -1 : e->c.decode_ms / 1000.0;
}

void srv_page_camera_metrics(server_t *s, osp_text_t *t) {
    int n;
    srv_camboard_entry_t *e = cameras(s, &n);
    if (!n) {
        free(e);
        return;
    }
    char lb[256];
    per_camera(t, "osprey_camera_frames_in_total", "counter",
               "Frames a camera's source gave (decoded), before its fps took some.", e, n, v_in);
    osp_prom_family(t, "osprey_camera_frames_total", "counter",
                    "A camera's frames sent to its model, by outcome: detected (answered with a "
                    "result), shed (past their deadline of one frame interval, or pushed out), "
                    "failed.");
    for (int i = 0; i < n; i++) {
        const char *outcome[] = {"detected", "shed", "failed"};
        const int64_t v[] = {e[i].c.detected, e[i].c.shed, e[i].c.failed};
        for (int k = 0; k < 3; k++) {
            labels(lb, sizeof lb, e[i].name, "outcome", outcome[k]);
            osp_prom_sample(t, "osprey_camera_frames_total", lb, (double)v[k]);
        }
    }
    osp_prom_family(t, "osprey_camera_runs_total", "counter",
                    "Model runs for a camera's frames, by kind: whole (a frame run whole) or "
                    "region (a crop of a frame around what moved or is tracked).");
    for (int i = 0; i < n; i++) {
        const char *kind[] = {"whole", "region"};
        const int64_t v[] = {e[i].c.runs - e[i].c.region_runs, e[i].c.region_runs};
        for (int k = 0; k < 2; k++) {
            labels(lb, sizeof lb, e[i].name, "kind", kind[k]);
            osp_prom_sample(t, "osprey_camera_runs_total", lb, (double)v[k]);
        }
    }
    per_camera(t, "osprey_camera_step_runs_total", "counter",
               "Detections of a camera's frames its model's cascade ran on: once an object, "
               "again when it came closer or its result was unsure, a few times at most.",
               e, n, v_steps);
    per_camera(t, "osprey_camera_events_total", "counter",
               "Event records (new, update, end) of a camera's tracked objects.", e, n, v_events);
    per_camera(t, "osprey_camera_reconnects_total", "counter",
               "Times a camera's live source came back after a drop.", e, n, v_reconnects);
    per_camera(t, "osprey_camera_tracks_active", "gauge",
               "Objects a camera tracks now (confirmed, or lost for a moment).", e, n, v_tracks);
    per_camera(t, "osprey_camera_fps", "gauge",
               "Frames a second a camera's model answered with a result, over the last seconds.",
               e, n, v_fps);
    osp_prom_family(t, "osprey_camera_state", "gauge",
                    "1 for a camera's state: connecting, up, reconnecting or down; 0 for the others.");
    for (int i = 0; i < n; i++)
        for (int k = SRV_CAM_CONNECTING; k <= SRV_CAM_DOWN; k++) {
            labels(lb, sizeof lb, e[i].name, "state", srv_cam_state_name((srv_cam_state_t)k));
            osp_prom_sample(t, "osprey_camera_state", lb, e[i].state == (srv_cam_state_t)k);
        }
    per_camera(t, "osprey_camera_frames_skipped_total", "counter",
               "Frames a camera took but did not send to its model: nothing moved in them.", e, n,
               v_skipped);
    per_camera(t, "osprey_camera_motion_ratio", "gauge",
               "Share of the frames a camera took in which motion was found, 0-1 "
               "(cameras with their motion pass on).",
               e, n, v_motion);
    per_camera(t, "osprey_camera_decode_seconds", "gauge",
               "Mean time to read and decode one frame of a camera played from a file "
               "(a live source decodes on a thread of its own, not measured).",
               e, n, v_decode);
    free(e);
}

/* ---- latest.jpg --------------------------------------------------------------------- */

/* The same colour for a label on every frame and camera. */
static void label_colour(const char *label, uint8_t rgb[3]) {
    unsigned h = 2166136261u;
    for (const char *p = label; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    osp_draw_class_colour((int)(h % 12), rgb);
}

static void draw_zones(osp_image_t *img, const osp_zones_cfg_t *z) {
    static const uint8_t ZONE[3] = {255, 214, 0}, LINE[3] = {0, 220, 255}, BLACK[3] = {0, 0, 0};
    int w = img->width, h = img->height, th = 1 + h / 360;
    for (int i = 0; i < z->n_zones; i++) {
        const osp_zone_def_t *d = &z->zones[i];
        for (int k = 0; k < d->n_pts; k++) {
            const osp_zones_pt_t *a = &d->pts[k], *b = &d->pts[(k + 1) % d->n_pts];
            osp_draw_line(img, (int)(a->x * w), (int)(a->y * h), (int)(b->x * w), (int)(b->y * h),
                          th, ZONE);
        }
        osp_draw_label(img, (int)(d->pts[0].x * w), (int)(d->pts[0].y * h), d->name, BLACK, ZONE);
    }
    for (int i = 0; i < z->n_lines; i++) {
        const osp_line_def_t *l = &z->lines[i];
        osp_draw_line(img, (int)(l->a.x * w), (int)(l->a.y * h), (int)(l->b.x * w),
                      (int)(l->b.y * h), th, LINE);
        osp_draw_label(img, (int)(l->a.x * w), (int)(l->a.y * h), l->name, BLACK, LINE);
    }
}

static int encode(void *ctx, osp_image_t *img, const srv_cam_box_t *boxes, int n,
                  const osp_zones_cfg_t *zones, uint8_t **jpg, size_t *len) {
    (void)ctx;
    if (zones) draw_zones(img, zones);
    osp_draw_box_t b[SRV_CAMBOARD_BOXES];
    int w[SRV_CAMBOARD_BOXES], h[SRV_CAMBOARD_BOXES], x[SRV_CAMBOARD_BOXES], y[SRV_CAMBOARD_BOXES];
    char text[SRV_CAMBOARD_BOXES][64];
    if (n > SRV_CAMBOARD_BOXES) n = SRV_CAMBOARD_BOXES;
    for (int i = 0; i < n; i++) {
        uint8_t c[3];
        label_colour(boxes[i].label, c);
        b[i] = (osp_draw_box_t){(int)boxes[i].x1, (int)boxes[i].y1, (int)boxes[i].x2,
                                (int)boxes[i].y2};
        osp_draw_rect(img, b[i].x1, b[i].y1, b[i].x2, b[i].y2, 2, c);
        snprintf(text[i], sizeof text[i], "%s %.2f", boxes[i].label, boxes[i].score);
        osp_draw_label_size(img, text[i], &w[i], &h[i]);
    }
    /* the labels last, so that no box is drawn over one */
    osp_draw_place_labels(b, w, h, n, img->width, img->height, x, y);
    for (int i = 0; i < n; i++) {
        uint8_t c[3], fg[3];
        label_colour(boxes[i].label, c);
        memset(fg, (77 * c[0] + 150 * c[1] + 29 * c[2]) >> 8 > 110 ? 0 : 255, 3);
        osp_draw_label(img, x[i], y[i], text[i], fg, c);
    }
    osp_decoder_t *dec = osp_decoder_new();
    char err[256];
    osp_view_t v = osp_image_view(img);
    int rc = dec ? osp_image_encode_jpeg(dec, &v, LATEST_QUALITY, jpg, len, err, sizeof err) : -1;
    osp_decoder_free(dec);
    return rc == OSP_IMG_OK ? 0 : -1;
}

unsigned srv_page_camera_latest(server_t *s, const char *name, uint8_t **jpg, size_t *len,
                                const char **why) {
    int rc = srv_camboard_jpeg(s->camboard, name, LATEST_WAIT_MS, encode, NULL, jpg, len);
    switch (rc) {
    case SRV_CAMBOARD_OK: *why = NULL; return 200;
    case SRV_CAMBOARD_UNKNOWN: *why = "no camera of that name\n"; return 404;
    case SRV_CAMBOARD_NO_FRAME: *why = "the camera has no frame yet; try again\n"; return 503;
    default: *why = "the frame could not be encoded\n"; return 500;
    }
}

/* ---- /api/events, /api/crossings and the snapshots --------------------------------- */

void srv_page_error(osp_jw_t *w, const char *msg) {
    osp_jw_reset(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    osp_jw_obj_close(w);
}

unsigned srv_page_camera_events(server_t *s, const osp_eventdb_query_t *q, int crossings, osp_jw_t *w) {
    char path[1024], snaps[1024], err[512];
    if (srv_camboard_events(s->camboard, path, sizeof path, snaps, sizeof snaps)) {
        srv_page_error(w, "the cameras are starting: their events database opens once the "
                          "startup models are loaded");
        return 503;
    }
    if (!path[0]) {
        srv_page_error(w, "no events database: the config names none (\"events\": {\"db\": ...})");
        return 404;
    }
    osp_eventdb_reader_t *r = osp_eventdb_reader_open(path, err, sizeof err);
    int n = !r          ? -1
            : crossings ? osp_eventdb_crossings(r, q, w, err, sizeof err)
                        : osp_eventdb_query(r, q, w, err, sizeof err);
    osp_eventdb_reader_close(r);
    if (n < 0) {
        srv_page_error(w, err);
        return 500;
    }
    return 200;
}

/* The whole regular file at path (no link followed), at most SNAPSHOT_MAX
 * bytes: 0, or -1 (absent, not a regular file, too big, unreadable). */
static int read_snapshot(const char *path, uint8_t **out, size_t *len) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0) return -1;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (uint64_t)st.st_size > SNAPSHOT_MAX) {
        close(fd);
        return -1;
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(n);
    while (buf && got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != n) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

unsigned srv_page_event_snapshot(server_t *s, const char *id, uint8_t **jpg, size_t *len,
                                 const char **why) {
    char db[1024], snaps[1024], err[512], path[1200];
    *jpg = NULL;
    *len = 0;
    /* the id is the file's name: only what event ids are made of (digits,
     * '.', '-'), never a path a peer can steer */
    if (!osp_eventdb_id_ok(id)) {
        *why = "no such event\n";
        return 404;
    }
    if (srv_camboard_events(s->camboard, db, sizeof db, snaps, sizeof snaps)) {
        *why = "the cameras are starting\n";
        return 503;
    }
    if (!db[0] || !snaps[0]) {
        *why = "no snapshots: the config names no events database or snapshots directory\n";
        return 404;
    }
    osp_eventdb_reader_t *r = osp_eventdb_reader_open(db, err, sizeof err);
    int has = r ? osp_eventdb_has(r, id, err, sizeof err) : -1;
    osp_eventdb_reader_close(r);
    if (has < 0) {
        *why = "the events database cannot be read\n";
        return 500;
    }
    if (!has) {
        *why = "no such event\n";
        return 404;
    }
    snprintf(path, sizeof path, "%s/%s.jpg", snaps, id);
    if (read_snapshot(path, jpg, len)) {
        *why = "the event has no snapshot\n";
        return 404;
    }
    *why = NULL;
    return 200;
}
