/*
 * UltraFace (RFB-320) output selection. The graph decodes its own boxes to
 * normalised corners, so there is no prior decode here: applying the SSD
 * prior decode on top gives offset duplicate boxes (ASSETS.md, UltraFace).
 */
#include "post/post.h"

int osp_post_ultraface(const float *scores, const float *boxes, int n, float thresh,
                       osp_det_t *out, int cap)
{
    if (!scores || !boxes || n <= 0)
        return 0;
    if (!out)
        cap = 0;
    int found = 0;
    for (int i = 0; i < n; i++) {
        float s = scores[(size_t)i * 2 + 1]; /* column 0 is background */
        if (!(s >= thresh)) /* NaN scores are dropped too */
            continue;
        if (found < cap) {
            const float *b = boxes + (size_t)i * 4;
            out[found] = (osp_det_t){b[0], b[1], b[2], b[3], s, 0};
        }
        found++;
    }
    return found;
}
