/*
 * ctxpool: inference contexts kept for reuse. A frame holds one from the
 * moment it is prepared until its reply is written; a context keeps its
 * tensor and scratch memory between frames, so the steady state allocates
 * none. Any thread (one lock, guarding the free list). The pool owns every
 * context it made; a context taken is the caller's until put back.
 */
#ifndef OSP_CTXPOOL_H
#define OSP_CTXPOOL_H

#include "model/model.h"

typedef struct osp_ctxpool osp_ctxpool_t;

osp_ctxpool_t *osp_ctxpool_new(void);
/* Frees the contexts put back; every one taken must have been put back. */
void osp_ctxpool_free(osp_ctxpool_t *p);
/* A context with no decode settings of its own (params_set 0); NULL when
 * out of memory. */
osp_infer_ctx_t *osp_ctxpool_get(osp_ctxpool_t *p);
void osp_ctxpool_put(osp_ctxpool_t *p, osp_infer_ctx_t *ctx);
/* Contexts made so far (the most ever out at once). */
int osp_ctxpool_total(osp_ctxpool_t *p);

#endif
