/* The annotated snapshot of osprey detect's best frame. */
#include "cli/snapshot.h"

#include <stdio.h>
#include <string.h>

#include "cli/detect.h"

void osp_snapshot_write(const char *out_dir, const char *input, osp_tally_t *t,
                        const osp_model_t *m, osp_decoder_t *dec) {
    osp_tally_best_t b;
    if (!out_dir || !osp_tally_best(t, &b)) return;
    char path[2048], err[256];
    const char *name = osp_detect_base_name(input);
    const char *dot = strrchr(name, '.');
    int stem = dot && dot != name ? (int)(dot - name) : (int)strlen(name);
    snprintf(path, sizeof path, "%s/%.*s-best.jpg", out_dir, stem, name);
    static const uint8_t green[3] = {40, 220, 60}, black[3] = {0, 0, 0};
    for (int i = 0; i < b.n_dets; i++) {
        const osp_det_t *d = &b.dets[i];
        char text[96];
        const char *label = osp_model_label(m, d->cls);
        if (label)
            snprintf(text, sizeof text, "%s %.2f", label, d->score);
        else
            snprintf(text, sizeof text, "%d %.2f", d->cls, d->score);
        /* boxes are in original pixels; the kept copy may be a scaled decode */
        int x1 = (int)(d->x1 * b.sx), y1 = (int)(d->y1 * b.sy);
        int x2 = (int)(d->x2 * b.sx), y2 = (int)(d->y2 * b.sy);
        osp_draw_rect(b.pixels, x1, y1, x2, y2, 2, green);
        osp_draw_label(b.pixels, x1, y1 > 12 ? y1 - 12 : y1, text, black, green);
    }
    osp_view_t v = osp_image_view(b.pixels);
    if (osp_image_save(dec, &v, path, err, sizeof err))
        fprintf(stderr, "osprey detect: cannot write snapshot: %s\n", err);
    else
        fprintf(stderr, "osprey detect: snapshot of frame %ld (%d %s) -> %s\n", b.frame,
                b.people >= 0 ? b.people : b.n_dets, b.people >= 0 ? "people" : "detections", path);
}
