/*
 * snapshot: the annotated picture `osprey detect --out DIR` writes of an
 * input's best frame (tally.h), DIR/<input stem>-best.jpg, with one line on
 * stderr saying which frame it shows, or why there is none.
 */
#ifndef OSP_CLI_SNAPSHOT_H
#define OSP_CLI_SNAPSHOT_H

#include "cli/tally.h"
#include "image/image.h"
#include "model/model.h"

/* Draws on the tally's copy of the frame. */
void osp_snapshot_write(const char *out_dir, const char *input, osp_tally_t *t,
                        const osp_model_t *m, osp_decoder_t *dec);

#endif
