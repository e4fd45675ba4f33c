/*
 * camboard: what other threads may know of the cameras, as board.h is for
 * the models. The cameras' front end publishes, for each camera, its name,
 * model and state, its counters, and — only while someone looks at it —
 * its newest processed frame with the boxes found in it; a front end that
 * shows cameras (the HTTP door) reads copies and never includes the
 * cameras. It also says where the cameras' events are kept (the database
 * and the snapshots' directory), so a reader can find them.
 *
 * Locking: the board's mutex guards its list of cameras and the events'
 * paths; each camera has one mutex guarding its state, counters and
 * frame, taken by its publisher once per processed frame for a small copy
 * (plus, while looked at, the frame's pixels: one memcpy) and by a reader
 * for as long as it copies out. The JPEG of the newest frame is encoded
 * on the reader's thread, outside both, at most once per frame: the
 * reader swaps the frame out and keeps the bytes for the next reader.
 *
 * Ownership: the board is the server's (s->camboard, made by core.c).
 * A camera's handle is the board's; its publisher uses it from
 * srv_camboard_add until srv_camboard_remove, after which it is freed as
 * soon as no reader holds it.
 */
#ifndef OSP_CAMBOARD_H
#define OSP_CAMBOARD_H

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "server/core/srv.h"
#include "track/zones.h"

#define SRV_CAMBOARD_MAX 64   /* cameras on the board */
#define SRV_CAMBOARD_BOXES 64 /* boxes kept with a frame */
/* A camera copies its frames for the board only this long after the last
 * look at them; longer unwatched, the copies are freed. */
#define SRV_CAMBOARD_WATCH_S 30

typedef enum {
    SRV_CAM_CONNECTING,   /* its source is being opened for the first time */
    SRV_CAM_UP,           /* frames come */
    SRV_CAM_RECONNECTING, /* a live source dropped and is being reopened */
    SRV_CAM_DOWN,         /* its source cannot be opened (retried), or ended */
} srv_cam_state_t;

/* "connecting", "up", "reconnecting", "down" */
const char *srv_cam_state_name(srv_cam_state_t st);

/* A camera's counts since it started, as its thread keeps them. */
typedef struct {
    int64_t frames_in; /* read from its source */
    int64_t submitted; /* sent to its model */
    int64_t detected;  /* answered with a result */
    int64_t shed;      /* answered shed (past their deadline, or pushed out) */
    int64_t failed;
    int64_t events; /* event records written */
    int64_t reconnects;
    int64_t skipped;     /* taken, but not sent to its model: nothing moved (motion/gate.h) */
    int64_t crossings;   /* line crossings counted, every line, both ways */
    int64_t runs;        /* model runs for its frames: one a frame run whole, one a crop */
    int64_t region_runs; /* of them, runs of crops (camregions.h) */
    int64_t step_runs;   /* detections its model's cascade ran on (camobjs.h) */
    int tracks_active;   /* tracks of objects (confirmed or lost, not removed) */
    int decode_threads;  /* its decoder's, as configured */
    double decode_ms;    /* mean time to read and decode a frame; < 0: not measured */
    double motion;       /* share of frames with motion (0..1); < 0: not measured */
} srv_cam_counts_t;

typedef struct {
    char name[64];
    char model[128];
    double fps_max; /* configured */
    double fps;     /* frames answered with a result per second, over the last seconds */
    srv_cam_state_t state;
    srv_cam_counts_t c;
    double frame_time; /* epoch seconds of the newest frame answered; 0: none yet */
} srv_camboard_entry_t;

/* A box of a frame, in its pixels. */
typedef struct {
    float x1, y1, x2, y2;
    float score;
    char label[48];
} srv_cam_box_t;

typedef struct srv_camboard srv_camboard_t;
typedef struct srv_cam_pub srv_cam_pub_t; /* one camera's place on the board */

srv_camboard_t *srv_camboard_new(void);
/* Every camera must have been removed. */
void srv_camboard_free(srv_camboard_t *b);

/* ---- the publisher (the cameras' front end) ------------------------------------ */

/* Put a camera on the board (state connecting, counts 0); zones (may be
 * NULL) are copied, to be drawn on its frames. NULL when out of memory or
 * the board is full. */
srv_cam_pub_t *srv_camboard_add(srv_camboard_t *b, const char *name, const char *model,
                                double fps_max, const osp_zones_cfg_t *zones);
/* Take it off (NULL is ignored); the handle is not used again. */
void srv_camboard_remove(srv_camboard_t *b, srv_cam_pub_t *p);
/* The cameras will start (the server calls it before its first front
 * end opens): until the events are set, the readers are told "starting",
 * not "none". */
void srv_camboard_starting(srv_camboard_t *b);
/* Where the cameras' events are kept: the database file and the
 * directory of their best snapshots (either NULL or "": none). */
void srv_camboard_set_events(srv_camboard_t *b, const char *db_path, const char *snapshots);

void srv_camboard_state(srv_cam_pub_t *p, srv_cam_state_t st);
void srv_camboard_counts(srv_cam_pub_t *p, const srv_cam_counts_t *c);
/* A frame answered at time t (epoch seconds) with its boxes (at most
 * SRV_CAMBOARD_BOXES kept): its pixels are copied only while someone
 * looks at the camera (SRV_CAMBOARD_WATCH_S). */
void srv_camboard_frame(srv_cam_pub_t *p, const osp_view_t *px, const srv_cam_box_t *boxes, int n,
                        double t);

/* ---- readers (any thread) -------------------------------------------------------- */

/* The cameras, in the order they were added, into out (max entries); how many. */
int srv_camboard_read(srv_camboard_t *b, srv_camboard_entry_t *out, int max);
/* The events' paths into db / snapshots ("" when none): 0, or 1 while the
 * cameras are starting (both ""). */
int srv_camboard_events(srv_camboard_t *b, char *db, size_t db_cap, char *snapshots, size_t snap_cap);

/* Encode img (the frame, drawn on) as JPEG into *jpg (malloc'd, the
 * caller's): 0, or -1. boxes and zones (may be NULL) are to be drawn. */
typedef int (*srv_cam_encode_fn)(void *ctx, osp_image_t *img, const srv_cam_box_t *boxes, int n,
                                 const osp_zones_cfg_t *zones, uint8_t **jpg, size_t *len);

enum {
    SRV_CAMBOARD_OK = 0,
    SRV_CAMBOARD_UNKNOWN = -1,  /* no camera of that name */
    SRV_CAMBOARD_NO_FRAME = -2, /* none within wait_ms */
    SRV_CAMBOARD_FAILED = -3,   /* encode failed or out of memory */
};
/* The named camera's newest frame as a JPEG into *jpg (malloc'd, the
 * caller's): encoded by encode (on this thread) when no reader has
 * encoded that frame yet, else the bytes kept from the last encoding.
 * Marks the camera watched; when it has no frame copied yet, waits up to
 * wait_ms for one. */
int srv_camboard_jpeg(srv_camboard_t *b, const char *name, int wait_ms, srv_cam_encode_fn encode,
                      void *ctx, uint8_t **jpg, size_t *len);

#endif
