/*
 * MediaPipe BlazeFace (front camera, 128x128): 896 fixed-size anchors on
 * two grids (16x16 with 2 anchors per cell at stride 8, 8x8 with 6 at
 * stride 16), regressors [dx, dy, w, h, 6 keypoints x (x, y)] in input
 * pixels relative to the anchor centre, scores as logits.
 */
#include <math.h>

#include "post/post.h"

int osp_blazeface_anchors(int input_size, osp_anchor_t *out, int cap) {
    /* MediaPipe's front model: layers at strides 8, 16, 16, 16; layers of
     * equal stride share a grid, each adding 2 anchors per cell */
    static const int strides[] = {8, 16, 16, 16};
    int n = 0, layer = 0;
    while (layer < 4) {
        int per_cell = 0, stride = strides[layer];
        while (layer < 4 && strides[layer] == stride) {
            per_cell += 2;
            layer++;
        }
        int grid = (input_size + stride - 1) / stride;
        for (int y = 0; y < grid; y++)
            for (int x = 0; x < grid; x++)
                for (int a = 0; a < per_cell; a++, n++)
                    if (n < cap)
                        out[n] = (osp_anchor_t){.y = ((float)y + 0.5f) / (float)grid,
                                                .x = ((float)x + 0.5f) / (float)grid,
                                                .h = 1.f, .w = 1.f};
    }
    return n;
}

int osp_post_blazeface(const float *scores, const float *regs, int n, int reg_len,
                       const osp_anchor_t *anchors, int input_size, float thresh, osp_det_t *out,
                       int cap) {
    if (thresh <= 0.f || thresh >= 1.f || reg_len < 4) return 0;
    const float logit_min = logf(thresh / (1.f - thresh));
    const float s = (float)input_size;
    int found = 0;
    for (int i = 0; i < n; i++) {
        float l = scores[i];
        if (!(l >= logit_min)) continue; /* also skips NaN */
        if (l > 100.f) l = 100.f;
        float score = 1.f / (1.f + expf(-l));
        if (score < thresh) continue;
        const float *r = regs + (size_t)i * (size_t)reg_len;
        float xc = r[0] / s * anchors[i].w + anchors[i].x;
        float yc = r[1] / s * anchors[i].h + anchors[i].y;
        float w = r[2] / s * anchors[i].w, h = r[3] / s * anchors[i].h;
        if (found < cap)
            out[found] = (osp_det_t){.x1 = xc - w / 2, .y1 = yc - h / 2, .x2 = xc + w / 2,
                                     .y2 = yc + h / 2, .score = score, .cls = 0};
        found++;
    }
    return found;
}
