/* track_snap: see track_snap.h. */
#define _POSIX_C_SOURCE 200809L
#include "publish/track_snap.h"
#include "log/log.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What is known of one track's picture. */
typedef struct {
    uint64_t id;
    double start;  /* its start time: the event id's first half */
    bool written;  /* DIR/<id>.jpg exists */
    bool reported; /* its "new" went out: the file stays */
} snap_t;

struct osp_track_snaps {
    char dir[1024];  /* copied: a camera's site may go while the writer stays */
    const char *who; /* names the writer in the log */
    osp_decoder_t *dec;
    osp_image_t img; /* the frame copy drawn on, reused */
    snap_t *s;
    int n, cap;
    bool said; /* a write failure was reported */
};

int osp_track_snaps_new(const char *dir, const char *who, osp_track_snaps_t **out, char *err,
                        size_t errlen) {
    *out = NULL;
    if (strlen(dir) >= sizeof((osp_track_snaps_t *)0)->dir) {
        snprintf(err, errlen, "%.64s...: the folder's path is too long", dir);
        return -1;
    }
    osp_track_snaps_t *s = calloc(1, sizeof *s);
    if (!s || !(s->dec = osp_decoder_new())) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->who = who;
    *out = s;
    return 0;
}

static void path_of(const osp_track_snaps_t *s, const snap_t *e, const char *pre, const char *post,
                    char *out, size_t cap);

void osp_track_snaps_free(osp_track_snaps_t *s) {
    if (!s) return;
    /* a track still waiting for its report when the input ends (a new one
     * whose look has not settled yet) was never reported: no picture */
    for (int i = 0; i < s->n; i++)
        if (s->s[i].written && !s->s[i].reported) {
            char path[1200];
            path_of(s, &s->s[i], "", "", path, sizeof path);
            unlink(path);
        }
    osp_decoder_free(s->dec);
    osp_image_free(&s->img);
    free(s->s);
    free(s);
}

static void path_of(const osp_track_snaps_t *s, const snap_t *e, const char *pre, const char *post,
                    char *out, size_t cap) {
    char id[64];
    snprintf(out, cap, "%s/%s%s%s.jpg", s->dir, pre, osp_events_id(e->start, e->id, id, sizeof id),
             post);
}

static snap_t *entry(osp_track_snaps_t *s, const osp_track_t *tr) {
    for (int i = 0; i < s->n; i++)
        if (s->s[i].id == tr->id) return &s->s[i];
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        snap_t *g = realloc(s->s, (size_t)cap * sizeof *g);
        if (!g) return NULL;
        s->s = g;
        s->cap = cap;
    }
    s->s[s->n] = (snap_t){.id = tr->id, .start = tr->first_seen};
    return &s->s[s->n++];
}

/* The frame with the track's best box and label, into DIR/<id>.jpg. */
static void write_one(osp_track_snaps_t *s, snap_t *e, const osp_track_t *tr,
                      const osp_events_t *ev, const osp_view_t *px, float sx, float sy) {
    int ch = osp_pixfmt_channels(px->fmt);
    if (ch == 0 || osp_image_reserve(&s->img, px->width, px->height, px->fmt) != OSP_IMG_OK)
        return;
    for (int y = 0; y < px->height; y++)
        memcpy(s->img.data + (size_t)y * (size_t)s->img.stride,
               px->data + (size_t)y * (size_t)px->stride, (size_t)px->width * (size_t)ch);
    uint8_t c[3], fg[3];
    osp_draw_class_colour(tr->label, c);
    int luma = (77 * c[0] + 150 * c[1] + 29 * c[2]) >> 8;
    memset(fg, luma > 110 ? 0 : 255, 3);
    int x1 = (int)(tr->top_box.x1 * sx), y1 = (int)(tr->top_box.y1 * sy);
    int x2 = (int)(tr->top_box.x2 * sx), y2 = (int)(tr->top_box.y2 * sy);
    osp_draw_rect(&s->img, x1, y1, x2, y2, 2, c);
    char label[64], text[96];
    snprintf(text, sizeof text, "%s %.2f", osp_events_label(ev, tr->label, label, sizeof label),
             tr->top_score);
    int w, h;
    osp_draw_label_size(&s->img, text, &w, &h);
    osp_draw_label(&s->img, x1, y1 - h >= 0 ? y1 - h : y1, text, fg, c);
    char part[1200], final[1200], err[256];
    path_of(s, e, ".", "-part", part, sizeof part);
    path_of(s, e, "", "", final, sizeof final);
    osp_view_t v = osp_image_view(&s->img);
    if (osp_image_save(s->dec, &v, part, err, sizeof err) || rename(part, final)) {
        if (!s->said)
            osp_log(OSP_LOG_ERROR, "%s: cannot write %s: %s", s->who, final,
                    err[0] ? err : "rename failed");
        s->said = true;
        unlink(part);
        return;
    }
    e->written = true;
}

void osp_track_snaps_frame(osp_track_snaps_t *s, const osp_tracker_t *t, const osp_events_t *ev,
                           const osp_view_t *pixels, int frame_w, int frame_h) {
    const osp_event_t *e;
    for (int i = 0; (e = osp_events_at(ev, i)) != NULL; i++) {
        if (e->type != OSP_EVENT_NEW) continue;
        for (int k = 0; k < s->n; k++)
            if (s->s[k].id == e->after.id) s->s[k].reported = true;
    }
    /* tracks gone, or rejected, without a report leave no picture */
    int kept = 0;
    for (int i = 0; i < s->n; i++) {
        const osp_track_t *tr = osp_track_find(t, s->s[i].id);
        bool gone = !tr || tr->state == OSP_TRACK_REMOVED ||
                    (tr->verdict == OSP_TRACK_REJECTED && !s->s[i].reported);
        if (!gone) {
            s->s[kept++] = s->s[i];
            continue;
        }
        if (s->s[i].written && !s->s[i].reported) {
            char path[1200];
            path_of(s, &s->s[i], "", "", path, sizeof path);
            unlink(path);
        }
    }
    s->n = kept;
    float sx = frame_w > 0 ? (float)pixels->width / (float)frame_w : 1.0f;
    float sy = frame_h > 0 ? (float)pixels->height / (float)frame_h : 1.0f;
    double now = osp_track_now(t);
    int nt = osp_track_count(t);
    for (int i = 0; i < nt; i++) {
        const osp_track_t *tr = osp_track_at(t, i);
        if (tr->unseen != 0 || tr->state == OSP_TRACK_REMOVED ||
            tr->verdict == OSP_TRACK_REJECTED || tr->top_time != now)
            continue;
        snap_t *en = entry(s, tr);
        if (en) write_one(s, en, tr, ev, pixels, sx, sy);
    }
}
