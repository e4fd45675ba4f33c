/*
 * The motion gate (gate.h). A 4:2:0 frame (a video reader's with
 * osp_video_opts_t.yuv420) is read by its Y plane as it is, at its own
 * range (motion compares levels: either range does), so a still scene
 * costs the decode and the motion pass; from packed RGB (or BGR) the luma
 * is made here first (libyuv, full range).
 */
#include "motion/gate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libyuv/convert.h>

struct osp_motion_gate {
    osp_motion_t *motion; /* made for the first frame's size, and again on a new size */
    int w, h;
    uint8_t *luma;            /* w x h, made from RGB; NULL until an RGB frame comes */
    osp_motion_poly_t *masks; /* the gate's copies, their points after them in one block */
    int n_masks;
    double last_run;
    int ran;  /* the model was run on some frame */
    int knew; /* motion could tell at the last frame (it was active) */
    int owed; /* the last frame let through never reached the model: run the next */
    /* the last frame's motion boxes (the detector's, valid until its next
     * update) */
    const osp_motion_box_t *boxes;
    int n_boxes;
};

/* A detector for w x h frames with the gate's masks into *out. */
static int make_motion(const osp_motion_gate_t *g, int w, int h, osp_motion_t **out, char *err,
                       size_t errlen) {
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    p.masks = g->masks;
    p.n_masks = g->n_masks;
    return osp_motion_create(&p, w, h, out, err, errlen) ? -1 : 0;
}

int osp_motion_gate_new(const osp_motion_poly_t *masks, int n_masks, osp_motion_gate_t **out,
                        char *err, size_t errlen) {
    osp_motion_gate_t *g = *out = calloc(1, sizeof *g);
    if (!g) goto nomem;
    g->n_masks = n_masks; /* a bad count or mask is for motion.h to refuse, below */
    if (n_masks > 0 && masks) {
        size_t points = 0;
        for (int i = 0; i < n_masks; i++) points += masks[i].n > 0 ? (size_t)masks[i].n : 0;
        g->masks = malloc((size_t)n_masks * sizeof *g->masks + points * 2 * sizeof(float));
        if (!g->masks) goto nomem;
        float *at = (float *)(g->masks + n_masks);
        for (int i = 0; i < n_masks; i++) {
            int n = masks[i].n > 0 && masks[i].xy ? masks[i].n : 0;
            if (n) memcpy(at, masks[i].xy, (size_t)n * 2 * sizeof *at);
            g->masks[i] = (osp_motion_poly_t){.xy = masks[i].xy ? at : NULL, .n = masks[i].n};
            at += 2 * n;
        }
    }
    /* the masks checked now, on a small frame, not at the first frame */
    osp_motion_t *probe = NULL;
    if (make_motion(g, 64, 64, &probe, err, errlen)) {
        osp_motion_gate_free(g);
        *out = NULL;
        return -1;
    }
    osp_motion_free(probe);
    return 0;
nomem:
    osp_motion_gate_free(g);
    *out = NULL;
    snprintf(err, errlen, "out of memory");
    return -1;
}

void osp_motion_gate_free(osp_motion_gate_t *g) {
    if (!g) return;
    osp_motion_free(g->motion);
    free(g->luma);
    free(g->masks);
    free(g);
}

static int resize(osp_motion_gate_t *g, int w, int h, char *err, size_t errlen) {
    osp_motion_free(g->motion);
    g->motion = NULL;
    g->w = g->h = 0;
    free(g->luma); /* a 4:2:0 frame's luma is its own: made for RGB only, as it comes */
    g->luma = NULL;
    if (make_motion(g, w, h, &g->motion, err, errlen)) return -1;
    g->w = w;
    g->h = h;
    return 0;
}

int osp_motion_gate_frame(osp_motion_gate_t *g, const osp_image_t *img, double t, int *moved,
                          char *err, size_t errlen) {
    int run = 1;
    if (moved) *moved = 0;
    g->boxes = NULL;
    g->n_boxes = 0;
    int yuv = osp_pixfmt_yuv420(img->fmt);
    if (yuv || img->fmt == OSP_PIX_RGB || img->fmt == OSP_PIX_BGR) {
        if ((img->width != g->w || img->height != g->h) &&
            resize(g, img->width, img->height, err, errlen))
            return -1;
        const uint8_t *luma = img->data; /* a 4:2:0 frame's Y plane comes first */
        int stride = img->stride;
        if (!yuv) {
            if (!g->luma && !(g->luma = malloc((size_t)g->w * (size_t)g->h))) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            /* RAW is libyuv's R,G,B in memory; for BGR the weights of red
             * and blue swap, which moves a level by a few percent at most */
            RAWToJ400(img->data, img->stride, g->luma, g->w, g->w, g->h);
            luma = g->luma, stride = g->w;
        }
        osp_motion_result_t r;
        if (osp_motion_update(g->motion, luma, g->w, g->h, stride, &r, err, errlen)) return -1;
        if (moved) *moved = r.n_boxes > 0;
        g->boxes = r.boxes;
        g->n_boxes = r.n_boxes;
        /* while motion learns a background (its first frames, after a
         * change of light) it cannot tell: the model runs as that starts,
         * and again on the first frame motion can tell about */
        int knows = r.state == OSP_MOTION_ACTIVE;
        run = r.n_boxes > 0 || !g->ran || knows != g->knew ||
              t - g->last_run >= OSP_MOTION_GATE_FULL_S || t < g->last_run || g->owed;
        g->knew = knows;
    }
    if (run) {
        g->ran = 1;
        g->last_run = t;
        g->owed = 0;
    }
    return run;
}

void osp_motion_gate_not_run(osp_motion_gate_t *g) { g->owed = 1; }

int osp_motion_gate_boxes(const osp_motion_gate_t *g, const osp_motion_box_t **boxes) {
    *boxes = g->boxes;
    return g->n_boxes;
}
