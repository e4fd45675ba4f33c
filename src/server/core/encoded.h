/*
 * encoded: a frame that arrives as JPEG or PNG bytes (infer_jpeg, a fleet
 * job), made into its model's tensor on a worker thread; see encoded.c.
 */
#ifndef OSP_SRV_ENCODED_H
#define OSP_SRV_ENCODED_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* Frames held whole (a JPEG after its scaled decode, an interlaced PNG, a
 * frame for a model not prepared row by row) are at most this many pixels:
 * an 8K UHD frame, 7680 x 4320, is 33 million. */
#define SRV_WHOLE_PIXELS 50000000u

typedef struct srv_encoded srv_encoded_t;

/* Decode buf (len bytes, JPEG or PNG) into ctx's tensor for m. *ep: the
 * worker's own state, made on first use. 0; -1 when the bytes do not decode
 * (err: the decoder's reason, "png decode failed: ..."); -2 when out of
 * memory or the model refused the frame (err says which). */
int srv_encoded_prepare(srv_encoded_t **ep, const osp_model_t *m, osp_infer_ctx_t *ctx,
                        const uint8_t *buf, size_t len, char *err, size_t errlen);
/* The same for a model with a cascade (model->then), whose steps crop from
 * the frame: decoded whole at its own size into img (the caller's, kept
 * until the steps ran), at most SRV_WHOLE_PIXELS. */
int srv_encoded_prepare_whole(srv_encoded_t **ep, const osp_model_t *m, osp_infer_ctx_t *ctx,
                              const uint8_t *buf, size_t len, osp_image_t *img, char *err,
                              size_t errlen);
void srv_encoded_free(srv_encoded_t *e);

#endif
