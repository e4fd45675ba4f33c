/*
 * open: what the one-shot subcommands (ocr, compare, quantize) open by the
 * names on their command line: a model from the catalog or a file, and an
 * image file run through a model.
 *
 * Each returns 0, or the exit status (cli.h) after one line on stderr that
 * starts "osprey CMD: " and names the problem.
 */
#ifndef OSP_CLI_OPEN_H
#define OSP_CLI_OPEN_H

#include "image/image.h"
#include "model/model.h"

/* A catalog model or a model file, with its confidence set to threshold
 * when >= 0; 2 when it cannot be had. *out owned by the caller
 * (osp_model_free). */
int osp_cli_open_model(const char *cmd, const char *name, float threshold, osp_model_t **out);

/* Load the image file input into img (the caller's, reused across calls)
 * and run m on all of it; the result *r lives in ctx. 2 when the image
 * cannot be read, 1 when the model fails ("osprey CMD: INPUT: WHAT failed:
 * ..."). */
int osp_cli_run_image(const char *cmd, const char *what, osp_decoder_t *dec, const char *input,
                      osp_image_t *img, osp_model_t *m, osp_infer_ctx_t *ctx, osp_result_t *r);

#endif
