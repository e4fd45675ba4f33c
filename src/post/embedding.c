/* The "embedding" postprocessor: the model's first output as one
 * L2-normalised float vector (face and CLIP-style embedders). */
#include <math.h>
#include <stdio.h>

#include "post/decoder.h"

static int emb_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                     char *err, size_t errlen) {
    (void)p;
    (void)state;
    if (n < 1 || outs[0].dtype != OSP_PDT_F32) {
        snprintf(err, errlen, "postprocessor embedding needs a float32 first output");
        return -1;
    }
    return 0;
}

int osp_l2_normalise(const float *src, float *dst, int dim) {
    double ss = 0;
    for (int i = 0; i < dim; i++) {
        if (!isfinite(src[i])) return -1;
        ss += (double)src[i] * src[i];
    }
    float inv = ss > 0 ? (float)(1.0 / sqrt(ss)) : 0.f;
    for (int i = 0; i < dim; i++) dst[i] = src[i] * inv;
    return 0;
}

static int emb_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                      osp_dres_t *res, char *err, size_t errlen) {
    (void)state;
    (void)n;
    (void)p;
    size_t count = 1;
    for (int i = 0; i < outs[0].rank; i++)
        count *= outs[0].dims[i] > 0 ? (size_t)outs[0].dims[i] : 1;
    if (count == 0 || count > (1u << 20) || osp_dres_reserve_vec(res, (int)count)) {
        snprintf(err, errlen, "embedding output has %zu values", count);
        return -1;
    }
    if (osp_l2_normalise(outs[0].data, res->vec, (int)count)) {
        snprintf(err, errlen, "embedding output is not finite");
        return -1;
    }
    res->kind = OSP_REC_EMBEDDING;
    res->vec_dim = (int)count;
    return 0;
}

const osp_decoder_t osp_decoder_embedding = {"embedding", emb_setup, emb_decode, NULL,
                                             OSP_GIVES_EMBEDDING};
