/*
 * The annotated snapshot of osprey detect's best frame: every box in its
 * label's colour, each label where it hides the least of the other boxes
 * and labels (image/draw.c), and a detection's landmarks (BlazeFace's eyes,
 * ears, nose and mouth; SCRFD's five points) as dots.
 */
#include "cli/snapshot.h"
#include "log/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/detect.h"

/* A label's text colour on its background: black on the bright ones. */
static void text_colour(const uint8_t bg[3], uint8_t fg[3]) {
    int luma = (77 * bg[0] + 150 * bg[1] + 29 * bg[2]) >> 8;
    memset(fg, luma > 110 ? 0 : 255, 3);
}

static void draw(osp_tally_best_t *b, const osp_model_t *m) {
    int n = b->n_dets;
    osp_draw_box_t *boxes = calloc((size_t)(n ? n : 1), sizeof *boxes);
    int *w = calloc((size_t)(n ? n : 1) * 4, sizeof *w), *h = w + n, *x = h + n, *y = x + n;
    char(*text)[96] = calloc((size_t)(n ? n : 1), sizeof *text);
    if (!boxes || !w || !text) goto done;
    osp_image_t *img = b->pixels;
    int dot = 1 + img->height / 300; /* a landmark's half side */
    for (int i = 0; i < n; i++) {
        const osp_det_t *d = &b->dets[i];
        const char *label = osp_model_label(m, d->cls);
        if (label)
            snprintf(text[i], sizeof text[i], "%s %.2f", label, d->score);
        else
            snprintf(text[i], sizeof text[i], "%d %.2f", d->cls, d->score);
        /* boxes are in original pixels; the kept copy may be a scaled decode */
        boxes[i] = (osp_draw_box_t){(int)(d->x1 * b->sx), (int)(d->y1 * b->sy),
                                    (int)(d->x2 * b->sx), (int)(d->y2 * b->sy)};
        osp_draw_label_size(img, text[i], &w[i], &h[i]);
        uint8_t c[3];
        osp_draw_class_colour(d->cls, c);
        osp_draw_rect(img, boxes[i].x1, boxes[i].y1, boxes[i].x2, boxes[i].y2, 2, c);
        for (int k = 0; k < d->n_kp && k < OSP_MAX_KP; k++) {
            int kx = (int)(d->kp[k][0] * b->sx), ky = (int)(d->kp[k][1] * b->sy);
            osp_draw_rect(img, kx - dot, ky - dot, kx + dot, ky + dot, dot + 1, c);
        }
    }
    /* the labels last, so that no box is drawn over one */
    osp_draw_place_labels(boxes, w, h, n, img->width, img->height, x, y);
    for (int i = 0; i < n; i++) {
        uint8_t c[3], fg[3];
        osp_draw_class_colour(b->dets[i].cls, c);
        text_colour(c, fg);
        osp_draw_label(img, x[i], y[i], text[i], fg, c);
    }
done:
    free(boxes);
    free(w);
    free(text);
}

void osp_snapshot_write(const char *out_dir, const char *input, osp_tally_t *t,
                        const osp_model_t *m, osp_decoder_t *dec) {
    if (!out_dir) return;
    const char *name = osp_detect_base_name(input);
    osp_tally_best_t b;
    if (!osp_tally_best(t, &b)) {
        osp_log(OSP_LOG_INFO, "osprey detect: %s: no detections, no snapshot", name);
        return;
    }
    char path[2048], err[256];
    const char *dot = strrchr(name, '.');
    int stem = dot && dot != name ? (int)(dot - name) : (int)strlen(name);
    snprintf(path, sizeof path, "%s/%.*s-best.jpg", out_dir, stem, name);
    draw(&b, m);
    osp_view_t v = osp_image_view(b.pixels);
    if (osp_image_save(dec, &v, path, err, sizeof err))
        osp_log(OSP_LOG_ERROR, "osprey detect: cannot write snapshot: %s", err);
    else if (b.people > 0)
        osp_log(OSP_LOG_INFO, "osprey detect: snapshot of frame %ld (%d %s) -> %s", b.frame,
                b.people, b.people == 1 ? "person" : "people", path);
    else
        osp_log(OSP_LOG_INFO, "osprey detect: snapshot of frame %ld (%d detection%s) -> %s",
                b.frame, b.n_dets, b.n_dets == 1 ? "" : "s", path);
}
