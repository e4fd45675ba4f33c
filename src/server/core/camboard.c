/* The cameras as other threads see them; see camboard.h. */
#include "server/core/camboard.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

#define RATE_S 2.0    /* the fps shown is measured over this long, at least... */
#define STALE_S 5.0   /* counts not published for this long: the camera shows 0 fps... */
#define RATE_FRAMES 3 /* ...and over this many frame intervals of its fps, at least */

struct srv_cam_pub {
    int refs;    /* the board's one while listed, plus one per reader: under the board's mu */
    int removed; /* under mu */
    pthread_mutex_t enc_mu; /* one reader encodes at a time; guards spare and spare_boxes */
    pthread_mutex_t mu;     /* guards everything below */
    pthread_cond_t cv;      /* CLOCK_MONOTONIC: a frame copied */
    srv_camboard_entry_t e;
    struct timespec published; /* the last counts */
    struct timespec rate_at;   /* the start of the fps measurement */
    int64_t rate_detected;     /* detected then */
    struct timespec watched;   /* the last look; watched_ever says there was one */
    int watched_ever;
    osp_image_t px;                          /* the newest frame copied, when px_seq */
    srv_cam_box_t boxes[SRV_CAMBOARD_BOXES]; /* px's */
    int n_boxes;
    uint64_t seq, px_seq, jpeg_seq; /* frames copied; px's (0: none); the JPEG's (0: none) */
    uint8_t *jpeg;
    size_t jpeg_len;
    osp_zones_cfg_t *zones; /* or NULL; fixed at add */
    /* a reader's, under enc_mu */
    osp_image_t spare;
    srv_cam_box_t spare_boxes[SRV_CAMBOARD_BOXES];
};

struct srv_camboard {
    pthread_mutex_t mu; /* guards cams, n, the paths and every pub's refs */
    srv_cam_pub_t *cams[SRV_CAMBOARD_MAX];
    int n;
    char db[1024], snapshots[1024];
    int starting; /* the cameras will start and have not yet set the events */
};

const char *srv_cam_state_name(srv_cam_state_t st) {
    static const char *const names[] = {"connecting", "up", "reconnecting", "down"};
    return (unsigned)st < sizeof names / sizeof names[0] ? names[st] : "unknown";
}

srv_camboard_t *srv_camboard_new(void) {
    srv_camboard_t *b = calloc(1, sizeof *b);
    if (b) pthread_mutex_init(&b->mu, NULL);
    return b;
}

void srv_camboard_free(srv_camboard_t *b) {
    if (!b) return;
    pthread_mutex_destroy(&b->mu);
    free(b);
}

static void pub_free(srv_cam_pub_t *p) {
    pthread_mutex_destroy(&p->enc_mu);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    osp_image_free(&p->px);
    osp_image_free(&p->spare);
    free(p->jpeg);
    free(p->zones);
    free(p);
}

/* Under the board's mu; the caller frees when it returns 1. */
static int unref(srv_cam_pub_t *p) { return --p->refs == 0; }

srv_cam_pub_t *srv_camboard_add(srv_camboard_t *b, const char *name, const char *model,
                                double fps_max, const osp_zones_cfg_t *zones) {
    srv_cam_pub_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (zones && !(p->zones = malloc(sizeof *p->zones))) {
        free(p);
        return NULL;
    }
    if (zones) *p->zones = *zones;
    pthread_mutex_init(&p->enc_mu, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &a);
    pthread_condattr_destroy(&a);
    snprintf(p->e.name, sizeof p->e.name, "%s", name);
    snprintf(p->e.model, sizeof p->e.model, "%s", model ? model : "");
    p->e.fps_max = fps_max;
    p->e.state = SRV_CAM_CONNECTING;
    p->e.c.decode_ms = p->e.c.motion = -1;
    osp_now(&p->published);
    p->rate_at = p->published;
    p->refs = 1;
    pthread_mutex_lock(&b->mu);
    int full = b->n >= SRV_CAMBOARD_MAX;
    if (!full) b->cams[b->n++] = p;
    pthread_mutex_unlock(&b->mu);
    if (full) {
        pub_free(p);
        return NULL;
    }
    return p;
}

void srv_camboard_remove(srv_camboard_t *b, srv_cam_pub_t *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->removed = 1;
    pthread_cond_broadcast(&p->cv); /* a reader waiting for a frame gives up */
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < b->n; i++)
        if (b->cams[i] == p) {
            memmove(&b->cams[i], &b->cams[i + 1], (size_t)(b->n - i - 1) * sizeof b->cams[0]);
            b->n--;
            break;
        }
    int last = unref(p);
    pthread_mutex_unlock(&b->mu);
    if (last) pub_free(p);
}

void srv_camboard_starting(srv_camboard_t *b) {
    pthread_mutex_lock(&b->mu);
    b->starting = 1;
    pthread_mutex_unlock(&b->mu);
}

void srv_camboard_set_events(srv_camboard_t *b, const char *db_path, const char *snapshots) {
    pthread_mutex_lock(&b->mu);
    b->starting = 0;
    snprintf(b->db, sizeof b->db, "%s", db_path ? db_path : "");
    snprintf(b->snapshots, sizeof b->snapshots, "%s", snapshots ? snapshots : "");
    pthread_mutex_unlock(&b->mu);
}

void srv_camboard_state(srv_cam_pub_t *p, srv_cam_state_t st) {
    pthread_mutex_lock(&p->mu);
    p->e.state = st;
    pthread_mutex_unlock(&p->mu);
}

void srv_camboard_counts(srv_cam_pub_t *p, const srv_cam_counts_t *c) {
    struct timespec now;
    osp_now(&now);
    pthread_mutex_lock(&p->mu);
    p->e.c = *c;
    p->published = now;
    double dt = (double)osp_timespec_diff_ms(&now, &p->rate_at) / 1000.0;
    if (dt >= RATE_S && dt * p->e.fps_max >= RATE_FRAMES) {
        p->e.fps = (double)(c->detected - p->rate_detected) / dt;
        p->rate_detected = c->detected;
        p->rate_at = now;
    }
    pthread_mutex_unlock(&p->mu);
}

/* Under mu. */
static int watched(const srv_cam_pub_t *p, const struct timespec *now) {
    return p->watched_ever &&
           osp_timespec_diff_ms(now, &p->watched) <= (int64_t)SRV_CAMBOARD_WATCH_S * 1000;
}

void srv_camboard_frame(srv_cam_pub_t *p, const osp_view_t *px, const srv_cam_box_t *boxes, int n,
                        double t) {
    struct timespec now;
    osp_now(&now);
    pthread_mutex_lock(&p->mu);
    p->e.frame_time = t;
    int ch = osp_pixfmt_channels(px->fmt);
    if (!watched(p, &now)) {
        /* nobody looks: what was copied for the last look goes */
        if (p->px.cap) osp_image_free(&p->px);
        p->px_seq = 0;
        if (p->jpeg && pthread_mutex_trylock(&p->enc_mu) == 0) {
            osp_image_free(&p->spare);
            pthread_mutex_unlock(&p->enc_mu);
            free(p->jpeg);
            p->jpeg = NULL;
            p->jpeg_len = 0;
            p->jpeg_seq = 0;
        }
    } else if (ch && osp_image_reserve(&p->px, px->width, px->height, px->fmt) == OSP_IMG_OK) {
        for (int y = 0; y < px->height; y++)
            memcpy(p->px.data + (size_t)y * (size_t)p->px.stride,
                   px->data + (size_t)y * (size_t)px->stride, (size_t)px->width * (size_t)ch);
        p->n_boxes = n < SRV_CAMBOARD_BOXES ? n : SRV_CAMBOARD_BOXES;
        if (p->n_boxes) memcpy(p->boxes, boxes, (size_t)p->n_boxes * sizeof *boxes);
        p->px_seq = ++p->seq;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
}

int srv_camboard_read(srv_camboard_t *b, srv_camboard_entry_t *out, int max) {
    struct timespec now;
    osp_now(&now);
    pthread_mutex_lock(&b->mu);
    int n = 0;
    for (int i = 0; i < b->n && n < max; i++) {
        srv_cam_pub_t *p = b->cams[i];
        pthread_mutex_lock(&p->mu);
        out[n] = p->e;
        double stale = p->e.fps_max > 0 && RATE_FRAMES / p->e.fps_max > STALE_S
                           ? RATE_FRAMES / p->e.fps_max
                           : STALE_S;
        if (osp_timespec_diff_ms(&now, &p->published) > (int64_t)(stale * 1000)) out[n].fps = 0;
        pthread_mutex_unlock(&p->mu);
        n++;
    }
    pthread_mutex_unlock(&b->mu);
    return n;
}

int srv_camboard_events(srv_camboard_t *b, char *db, size_t db_cap, char *snapshots, size_t snap_cap) {
    pthread_mutex_lock(&b->mu);
    snprintf(db, db_cap, "%s", b->db);
    snprintf(snapshots, snap_cap, "%s", b->snapshots);
    int starting = b->starting;
    pthread_mutex_unlock(&b->mu);
    return starting;
}

int srv_camboard_jpeg(srv_camboard_t *b, const char *name, int wait_ms, srv_cam_encode_fn encode,
                      void *ctx, uint8_t **jpg, size_t *len) {
    *jpg = NULL;
    *len = 0;
    srv_cam_pub_t *p = NULL;
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < b->n && !p; i++)
        if (strcmp(b->cams[i]->e.name, name) == 0) p = b->cams[i];
    if (p) p->refs++;
    pthread_mutex_unlock(&b->mu);
    if (!p) return SRV_CAMBOARD_UNKNOWN;

    int rc = SRV_CAMBOARD_OK;
    pthread_mutex_lock(&p->enc_mu);
    pthread_mutex_lock(&p->mu);
    struct timespec now;
    osp_now(&now);
    if (!watched(p, &now)) { /* a look after a long while: what was kept is stale */
        free(p->jpeg);
        p->jpeg = NULL;
        p->jpeg_len = 0;
        p->jpeg_seq = 0;
    }
    p->watched = now;
    p->watched_ever = 1;
    struct timespec until = osp_deadline_in(CLOCK_MONOTONIC, wait_ms);
    while (!p->px_seq && !p->jpeg && !p->removed &&
           pthread_cond_timedwait(&p->cv, &p->mu, &until) != ETIMEDOUT) {
    }
    if (p->px_seq > p->jpeg_seq) { /* a frame no reader has encoded: take it out and encode it */
        osp_image_t t = p->px;
        p->px = p->spare;
        p->spare = t;
        int n = p->n_boxes;
        memcpy(p->spare_boxes, p->boxes, (size_t)n * sizeof p->boxes[0]);
        uint64_t seq = p->px_seq;
        p->px_seq = 0;
        pthread_mutex_unlock(&p->mu);
        uint8_t *out = NULL;
        size_t out_len = 0;
        int enc = encode(ctx, &p->spare, p->spare_boxes, n, p->zones, &out, &out_len);
        pthread_mutex_lock(&p->mu);
        if (enc == 0) {
            free(p->jpeg);
            p->jpeg = out;
            p->jpeg_len = out_len;
            p->jpeg_seq = seq;
        } else {
            rc = SRV_CAMBOARD_FAILED;
        }
    }
    if (rc == SRV_CAMBOARD_OK && !p->jpeg) rc = SRV_CAMBOARD_NO_FRAME;
    if (rc == SRV_CAMBOARD_OK) {
        if ((*jpg = malloc(p->jpeg_len))) {
            memcpy(*jpg, p->jpeg, p->jpeg_len);
            *len = p->jpeg_len;
        } else {
            rc = SRV_CAMBOARD_FAILED;
        }
    }
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->enc_mu);

    pthread_mutex_lock(&b->mu);
    int last = unref(p);
    pthread_mutex_unlock(&b->mu);
    if (last) pub_free(p);
    return rc;
}
