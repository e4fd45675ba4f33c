/*
 * encoded: JPEG and PNG frames into a model's tensor.
 *
 * A PNG is small on the wire and large decoded: 2 MB of one colour can be
 * 16384 x 16384 pixels, 805 MB held whole, on every worker at once. So a
 * non-interlaced PNG goes a row at a time into the model's row-by-row
 * preparation (osp_prep_stream_*, whose tensor is the one preparing it
 * whole gives): one row in memory, whatever its size. A JPEG is decoded
 * scaled to about the model's input (image/decode.c); it, an interlaced
 * PNG and a frame for a model that needs it whole (text recognizers) are
 * held whole, at most SRV_WHOLE_PIXELS, and a buffer grown past KEEP_BYTES
 * for one such frame is given back after it.
 */
#include "server/core/encoded.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "image/image.h"
#include "base/clock.h"

/* A whole frame's buffer kept from one frame to the next: a 4K frame in RGB
 * is 25 MB. */
#define KEEP_BYTES (32u << 20)

struct srv_encoded {
    osp_decoder_t *dec;
    osp_image_t img;       /* the frame held whole */
    osp_prep_stream_t *ps; /* a PNG's rows on their way into the tensor */
};

typedef struct {
    srv_encoded_t *e;
    const osp_model_t *m;
    osp_infer_ctx_t *ctx;
    int w, h;
    int nomem; /* begin failed for want of memory, not because the model needs it whole */
} rows_job_t;

static int rows_begin(void *arg, int w, int h, char *err, size_t errlen) {
    rows_job_t *a = arg;
    int rc = osp_model_prepare_rows_begin(a->m, a->ctx, a->e->ps, w, h, OSP_PIX_RGB, err, errlen);
    if (rc == OSP_MODEL_ENOMEM) {
        a->nomem = 1;
        return OSP_IMG_ENOMEM;
    }
    if (rc) return OSP_IMG_ENOTROWS; /* held whole instead, which says what is wrong */
    a->w = w;
    a->h = h;
    return 0;
}

static void rows_take(void *arg, const uint8_t *rows, size_t stride, int n) {
    rows_job_t *a = arg;
    osp_prep_stream_rows(a->e->ps, rows, stride, n);
}

/* The worker's state, made on first use; NULL when out of memory. */
static srv_encoded_t *state(srv_encoded_t **ep, char *err, size_t errlen) {
    srv_encoded_t *e = *ep;
    if (!e) {
        if (!(e = calloc(1, sizeof *e)) || !(e->dec = osp_decoder_new()) ||
            !(e->ps = osp_prep_stream_new())) {
            srv_encoded_free(e);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        osp_decoder_limit_pixels(e->dec, SRV_WHOLE_PIXELS);
        *ep = e;
    }
    return e;
}

int srv_encoded_prepare_whole(srv_encoded_t **ep, const osp_model_t *m, osp_infer_ctx_t *ctx,
                              const uint8_t *buf, size_t len, osp_image_t *img, char *err,
                              size_t errlen) {
    srv_encoded_t *e = state(ep, err, errlen);
    if (!e) return -2;
    int ow = 0, oh = 0;
    int rc = osp_image_decode(e->dec, buf, len, 0, 0, img, &ow, &oh, err, errlen);
    if (rc != OSP_IMG_OK) return rc == OSP_IMG_ENOMEM ? -2 : -1;
    osp_view_t v = osp_image_view(img);
    return osp_model_prepare(m, ctx, &v, ow, oh, err, errlen) ? -2 : 0;
}

int srv_encoded_prepare(srv_encoded_t **ep, const osp_model_t *m, osp_infer_ctx_t *ctx,
                        const uint8_t *buf, size_t len, char *err, size_t errlen) {
    srv_encoded_t *e = state(ep, err, errlen);
    if (!e) return -2;
    struct timespec t0;
    osp_now(&t0);
    rows_job_t a = {.e = e, .m = m, .ctx = ctx};
    osp_row_sink_t sink = {rows_begin, rows_take, &a};
    int rc = osp_image_decode_rows(e->dec, buf, len, &sink, err, errlen);
    if (rc == OSP_IMG_OK)
        return osp_model_prepare_rows_end(ctx, e->ps, a.w, a.h, osp_ms_since(&t0), err, errlen) ? -2
                                                                                                : 0;
    if (rc != OSP_IMG_ENOTROWS) return a.nomem || rc == OSP_IMG_ENOMEM ? -2 : -1;

    int ow = 0, oh = 0;
    rc = osp_image_decode(e->dec, buf, len, m->prep.width, m->prep.height, &e->img, &ow, &oh, err,
                          errlen);
    if (rc == OSP_IMG_OK) {
        osp_view_t v = osp_image_view(&e->img);
        rc = osp_model_prepare(m, ctx, &v, ow, oh, err, errlen) ? -2 : 0;
    } else {
        rc = rc == OSP_IMG_ENOMEM ? -2 : -1;
    }
    if (e->img.cap > KEEP_BYTES) osp_image_free(&e->img);
    return rc;
}

void srv_encoded_free(srv_encoded_t *e) {
    if (!e) return;
    osp_decoder_free(e->dec);
    osp_image_free(&e->img);
    osp_prep_stream_free(e->ps);
    free(e);
}
