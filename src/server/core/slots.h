/*
 * slots: the loaded models, by the index hosts name them with. A slot
 * holds a reference to its model; every job that uses a model holds one
 * more, so a replace or unload while frames run frees the old model only
 * after the last of them. I/O thread only (the references too); workers
 * read a job's model through srv_loaded_model, which does not change.
 */
#ifndef OSP_SLOTS_H
#define OSP_SLOTS_H

#include "model/model.h"
#include "server/core/srv.h"

typedef struct loaded loaded_t;

srv_slots_t *srv_slots_new(void);
/* Releases every slot's reference. */
void srv_slots_free(srv_slots_t *sl);

/* The model in slot idx, or NULL (empty, or out of range). */
loaded_t *srv_slot(const server_t *s, int idx);
/* Slots in use: one past the highest index ever named. */
int srv_slots_count(const server_t *s);
/* Make index count as named (a load started for it). */
void srv_slots_grow(server_t *s, int index);
/* Put l in slot index (taking its reference) and release what was there. */
void srv_slot_install(server_t *s, int index, loaded_t *l);
/* Empty slot index; 1 when it held a model. */
int srv_slot_clear(server_t *s, int index);
/* Models loaded now. */
int srv_slots_loaded(const server_t *s);

/* How a name a peer sends picks a loaded model. Either way the model's own
 * name (cfg.name: its catalog name, or its file's stem) and its file's
 * name count. Beyond those, a fleet job may leave the extension off the
 * file's name (SRV_FIND_FILE_STEM: "ssd-oidv4-int8-v2" for the catalog's
 * ssd-oidv4-int8, whose file is ssd-oidv4-int8-v2.onnx), and Frigate's
 * handshake may put one on the model's own name (SRV_FIND_NAME_STEM:
 * "ssd-oidv4-int8.onnx"). Each front end kept its own rule. */
typedef enum { SRV_FIND_FILE_STEM, SRV_FIND_NAME_STEM } srv_find_t;
/* The lowest slot whose model `name` names, or -1. */
int srv_slots_find(const server_t *s, const char *name, srv_find_t how);

/* A model wrapped for a slot with one reference (the caller's); NULL when
 * out of memory (m is then still the caller's). */
loaded_t *srv_loaded_new(osp_model_t *m, const osp_model_cfg_t *cfg);
loaded_t *srv_loaded_ref(loaded_t *l);
void srv_loaded_release(loaded_t *l); /* NULL is ignored */
osp_model_t *srv_loaded_model(const loaded_t *l);
const char *srv_loaded_path(const loaded_t *l); /* as configured */
const char *srv_loaded_postprocessor(const loaded_t *l);
/* The decode settings a frame snapshots when it is dispatched. */
void srv_loaded_params(const loaded_t *l, float *confidence, float *nms_iou, int *max_detections);
void srv_loaded_set_params(loaded_t *l, float confidence, float nms_iou, int max_detections);
/* A model whose run passed its bound is refused new frames until its
 * reload replaces it (watchdog.c): the reason, or NULL when it serves. */
const char *srv_loaded_stuck(const loaded_t *l);
void srv_loaded_set_stuck(loaded_t *l, const char *why);

#endif
