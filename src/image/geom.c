/*
 * geom: where a frame lands inside a model input (PROTOCOL.md §6). Sizes are
 * derived with integer arithmetic: floor(h * 640/1920) computed in floats
 * can land on 359.99998 and lose the row the protocol says is there.
 */
#include <stdint.h>
#include <string.h>

#include "image/image.h"

void osp_geom_compute(int w, int h, int tw, int th, osp_fit_t fit, osp_geom_t *g) {
    memset(g, 0, sizeof(*g));
    if (w <= 0 || h <= 0 || tw <= 0 || th <= 0) return;
    if (fit == OSP_FIT_RESIZE) {
        g->scale_x = (float)tw / (float)w;
        g->scale_y = (float)th / (float)h;
        g->content_w = tw;
        g->content_h = th;
        return;
    }
    /* scale = min(tw/w, th/h); compare tw/w <= th/h as tw*h <= th*w. */
    int64_t cw, ch;
    float scale;
    if ((int64_t)tw * h <= (int64_t)th * w) {
        scale = (float)tw / (float)w;
        cw = tw;
        ch = (int64_t)h * tw / w;
    } else {
        scale = (float)th / (float)h;
        ch = th;
        cw = (int64_t)w * th / h;
    }
    /* A 1 x 5000 sliver still keeps one column rather than vanishing. */
    if (cw < 1) cw = 1;
    if (ch < 1) ch = 1;
    g->scale_x = g->scale_y = scale;
    g->content_w = (int)cw;
    g->content_h = (int)ch;
    g->pad_x = (tw - g->content_w) / 2;
    g->pad_y = (th - g->content_h) / 2;
}
