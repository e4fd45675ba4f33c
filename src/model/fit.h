/*
 * fit: for a model file given without a postprocessor (osprey detect
 * --model my.onnx), the detector family its output shapes fit, and the
 * preparation of that family's catalog model.
 */
#ifndef OSP_MODEL_FIT_H
#define OSP_MODEL_FIT_H

#include <stddef.h>

#include "model/model.h"
#include "post/decoder.h"

/* Set m->dec and m->dec_state (owned by m, freed with it) to the first
 * family of osp_decoder_fits that takes the outputs, name it in
 * m->cfg.postprocessor, and, when the catalog has a model of that family,
 * take its fit, mean, std, NMS IoU and built-in labels into m->cfg and
 * m->prep. One line on stderr says what was chosen. OSP_MODEL_EINVAL with
 * the outputs and the --postprocessor values that would read them when
 * none fits. */
int osp_model_fit_decoder(osp_model_t *m, const osp_pdesc_t *descs, int n, const osp_dparams_t *p,
                          char *err, size_t errlen);

#endif
