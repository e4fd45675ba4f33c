/*
 * What fuzz_json and fuzz_cmds check of a model config once
 * osp_model_cfg_from_json (src/model/config.c) has read it: the same
 * function a startup config's models and a load or replace command go
 * through before a model's files are looked at. Included by the two
 * targets only.
 */
#ifndef OSP_FUZZ_MODEL_CFG_H
#define OSP_FUZZ_MODEL_CFG_H

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "model/cascade.h"
#include "model/model.h"

/* A config that reads is usable as it is; one that does not says why. */
static void check_model_cfg(const cJSON *config) {
    osp_model_cfg_t cfg;
    char err[600] = "";
    int rc = osp_model_cfg_from_json(config, &cfg, err, sizeof err);
    if (rc) {
        if (rc != OSP_MODEL_EINVAL || !err[0] || strlen(err) >= sizeof err) __builtin_trap();
        return;
    }
    if (!cJSON_IsObject(config) || !cfg.path[0] || strlen(cfg.path) >= sizeof cfg.path ||
        strlen(cfg.name) >= sizeof cfg.name || strlen(cfg.labels_path) >= sizeof cfg.labels_path ||
        strlen(cfg.postprocessor) >= sizeof cfg.postprocessor ||
        strlen(cfg.device) >= sizeof cfg.device)
        __builtin_trap();
    if (cfg.width < 0 || cfg.width > 16384 || cfg.height < 0 || cfg.height > 16384 ||
        (cfg.channels != 1 && cfg.channels != 3) ||
        (cfg.fit != OSP_FIT_LETTERBOX && cfg.fit != OSP_FIT_RESIZE))
        __builtin_trap();
    for (int i = 0; i < 3; i++)
        if (cfg.std[i] == 0 || !isfinite(cfg.std[i]) || !isfinite(cfg.mean[i])) __builtin_trap();
    if (!(cfg.confidence >= 0 && cfg.confidence <= 1) || !(cfg.nms_iou >= 0 && cfg.nms_iou <= 1) ||
        cfg.max_detections < 1 || cfg.max_detections > 100000 || cfg.intra_threads < 0 ||
        cfg.intra_threads > 256 || cfg.graph_opt < -1 || cfg.graph_opt > 3)
        __builtin_trap();
    /* its cascade, if any ("then"): read or refused with a reason */
    osp_cascade_t *c = NULL;
    err[0] = '\0';
    rc = osp_cascade_parse(config, &cfg, &c, err, sizeof err);
    if (rc ? rc != OSP_MODEL_EINVAL || c || !err[0] || strlen(err) >= sizeof err : !cfg.cascade != !c)
        __builtin_trap();
    osp_cascade_free(c);
}

#endif
