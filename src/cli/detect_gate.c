/*
 * osprey detect --track: whether the model needs to run on a frame at all.
 * A camera mostly films a scene where nothing happens, and a frame in which
 * nothing moved holds the objects the last frame held. The reader thread
 * hands each frame here, in order: the motion detector (src/motion/) runs
 * on its luma, and the model is run when something moved, when the
 * detector starts and stops learning a background (its first frames, a
 * change of light: it cannot tell meanwhile), and every
 * FULL_EVERY_S seconds of the video's clock whatever it says, so that
 * what stands still and was never seen is found. Regions (motion/regions.h)
 * are not used: on vtest.avi they cost 1.43 model runs a frame, where a
 * whole frame costs one (docs/tracking.md, Motion and regions).
 *
 * A still scene then costs the decode, the luma and the motion pass. The
 * video reader hands out RGB, so the luma is made from it here (libyuv,
 * full range: motion compares levels, either range does).
 */
#include <stdio.h>
#include <stdlib.h>

#include <libyuv/convert.h>

#include "cli/detect.h"
#include "motion/motion.h"

/* Seconds between whole-frame runs when nothing moves: as Frigate's, and
 * motion/regions.h's full_every_s. */
#define FULL_EVERY_S 10.0

struct osp_detect_gate {
    osp_motion_t *motion; /* made for the first frame's size, and again on a new size */
    int w, h;
    uint8_t *luma; /* w x h */
    double last_run;
    int ran;  /* the model was run on some frame */
    int knew; /* motion could tell at the last frame (it was active) */
};

int osp_detect_gate_new(osp_detect_gate_t **out) {
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -1;
}

void osp_detect_gate_free(osp_detect_gate_t *g) {
    if (!g) return;
    osp_motion_free(g->motion);
    free(g->luma);
    free(g);
}

static int resize(osp_detect_gate_t *g, int w, int h, char *err, size_t errlen) {
    osp_motion_free(g->motion);
    g->motion = NULL;
    free(g->luma);
    g->luma = malloc((size_t)w * (size_t)h);
    if (!g->luma) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    if (osp_motion_create(&p, w, h, &g->motion, err, errlen)) return -1;
    g->w = w;
    g->h = h;
    return 0;
}

int osp_detect_gate_frame(osp_detect_gate_t *g, const osp_image_t *img, double t, char *err,
                          size_t errlen) {
    int run = 1;
    if (img->fmt == OSP_PIX_RGB || img->fmt == OSP_PIX_BGR) {
        if ((img->width != g->w || img->height != g->h) &&
            resize(g, img->width, img->height, err, errlen))
            return -1;
        /* RAW is libyuv's R,G,B in memory; for BGR the weights of red and
         * blue swap, which moves a level by a few percent at most */
        RAWToJ400(img->data, img->stride, g->luma, g->w, g->w, g->h);
        osp_motion_result_t r;
        if (osp_motion_update(g->motion, g->luma, g->w, g->h, g->w, &r, err, errlen)) return -1;
        /* while motion learns a background (its first frames, after a
         * change of light) it cannot tell: the model runs as that starts,
         * and again on the first frame motion can tell about */
        int knows = r.state == OSP_MOTION_ACTIVE;
        run = r.n_boxes > 0 || !g->ran || knows != g->knew || t - g->last_run >= FULL_EVERY_S ||
              t < g->last_run;
        g->knew = knows;
    }
    if (run) {
        g->ran = 1;
        g->last_run = t;
    }
    return run;
}
