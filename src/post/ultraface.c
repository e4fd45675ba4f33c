/*
 * UltraFace (RFB-320) output selection. The graph decodes its own boxes to
 * normalised corners, so there is no prior decode here: applying the SSD
 * prior decode on top gives offset duplicate boxes (ASSETS.md, UltraFace).
 */
#include "post/post.h"

int osp_post_ultraface(const float *scores, const float *boxes, int n, float thresh,
                       osp_det_t *out, int cap) {
    if (!scores || !boxes || n <= 0) return 0;
    if (!out) cap = 0;
    int found = 0;
    for (int i = 0; i < n; i++) {
        float s = scores[(size_t)i * 2 + 1]; /* column 0 is background */
        if (!(s >= thresh))                  /* NaN scores are dropped too */
            continue;
        if (found < cap) {
            const float *b = boxes + (size_t)i * 4;
            out[found] = (osp_det_t){.x1 = b[0], .y1 = b[1], .x2 = b[2], .y2 = b[3], .score = s, .cls = 0};
        }
        found++;
    }
    return found;
}

/* ---- the "ultraface" postprocessor ------------------------------------------- */

#include <stdio.h>
#include <stdlib.h>

#include "post/decoder.h"

typedef struct {
    int boxes, scores;
} uf_state_t;

static int uf_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                    char *err, size_t errlen) {
    (void)p;
    int ob, os;
    if (osp_pdesc_find_pair(outs, n, 2, &ob, &os)) {
        snprintf(err, errlen,
                 "postprocessor ultraface needs outputs scores [1,N,2] and boxes [1,N,4]");
        return -1;
    }
    uf_state_t st = {.boxes = ob, .scores = os};
    return osp_decoder_state_dup(&st, sizeof st, state, err, errlen);
}

static int uf_fill(const void *state, const osp_pout_t *outs, const osp_dparams_t *p,
                   osp_det_t *out, int cap) {
    const uf_state_t *st = state;
    const osp_pout_t *b = &outs[st->boxes], *s = &outs[st->scores];
    return osp_post_ultraface(s->data, b->data, (int)b->dims[1], p->confidence, out, cap);
}

static int uf_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                     osp_dres_t *res, char *err, size_t errlen) {
    (void)n;
    const uf_state_t *st = state;
    if (outs[st->boxes].dims[1] != outs[st->scores].dims[1]) {
        snprintf(err, errlen, "ultraface outputs disagree on the box count");
        return -1;
    }
    return osp_dres_fill_normalised(res, uf_fill, st, outs, p, err, errlen);
}

const osp_decoder_t osp_decoder_ultraface = {"ultraface", uf_setup, uf_decode, free, OSP_GIVES_BOXES};
