/*
 * scores: the best class of a row of class scores, for the decoders that
 * take each anchor's best class (yolo, yolox, yolonas). Inline, as they
 * were in each decoder: they run once per anchor, 8400 times a frame at 640.
 */
#ifndef OSP_POST_SCORES_H
#define OSP_POST_SCORES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* The largest of c contiguous scores (NaN ignored; -inf when none), in
 * fixed blocks of 8 that -O2 vectorises: most rows end at this test. */
static inline float osp_post_max_score(const float *restrict s, int64_t c) {
    float m[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                  -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t j = 0;
    for (; j + 8 <= c; j += 8)
        for (int t = 0; t < 8; t++) m[t] = s[j + t] > m[t] ? s[j + t] : m[t];
    for (; j < c; j++) m[0] = s[j] > m[0] ? s[j] : m[0];
    float b = m[0];
    for (int t = 1; t < 8; t++) b = m[t] > b ? m[t] : b;
    return b;
}

/* Best class of a row of c scores `step` apart, ignoring NaN and Inf: its
 * index (the first of equal scores), its score in *score; -1 and -inf when
 * no score is finite. */
static inline int osp_post_best_class(const float *s, int c, size_t step, float *score) {
    int bc = -1;
    float b = -INFINITY;
    for (int j = 0; j < c; j++) {
        float v = s[(size_t)j * step];
        if (v > b && isfinite(v)) {
            b = v;
            bc = j;
        }
    }
    *score = b;
    return bc;
}

#endif
