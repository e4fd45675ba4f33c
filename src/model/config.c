/* Model configuration: defaults, the catalog, and the protocol's JSON keys. */
#include "model/model.h"
#include "model/paths.h"
#include "base/text.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void osp_model_cfg_defaults(osp_model_cfg_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    /* the Python worker decodes as YOLO when a config names no postprocessor */
    snprintf(cfg->postprocessor, sizeof cfg->postprocessor, "yolo");
    cfg->channels = 3;
    cfg->fit = OSP_FIT_LETTERBOX;
    (void)osp_norm_named("none", cfg->mean, cfg->std);
    cfg->confidence = 0.25f;
    cfg->nms_iou = 0.45f;
    cfg->max_detections = 100;
    cfg->cross_iou = -1; /* per-class NMS only, as the Python worker */
    cfg->contain = -1;
}

static void known_models(char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < osp_catalog_count() && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", osp_catalog_at(i)->name);
}

int osp_model_cfg_from_catalog(const char *name, osp_model_cfg_t *cfg, char *err, size_t errlen) {
    const osp_catalog_entry_t *e = osp_catalog_find(name);
    if (!e) {
        char names[256];
        known_models(names, sizeof names);
        snprintf(err, errlen, "unknown model '%s' (known: %s; or give a path to a model file)",
                 name, names);
        return OSP_MODEL_EINVAL;
    }
    osp_model_cfg_defaults(cfg);
    snprintf(cfg->name, sizeof cfg->name, "%s", e->name);
    osp_catalog_path(e, cfg->path, sizeof cfg->path);
    snprintf(cfg->postprocessor, sizeof cfg->postprocessor, "%s", e->postprocessor);
    cfg->width = e->width;
    cfg->height = e->height;
    cfg->channels = e->channels;
    cfg->fit = e->fit;
    memcpy(cfg->mean, e->mean, sizeof cfg->mean);
    memcpy(cfg->std, e->std, sizeof cfg->std);
    cfg->confidence = e->confidence;
    cfg->nms_iou = e->nms_iou;
    cfg->builtin_labels = e->labels;
    if (e->labels_file)
        osp_catalog_file(e->labels_file, cfg->labels_path, sizeof cfg->labels_path);
    return OSP_MODEL_OK;
}

int osp_model_cfg_resolve(const char *name_or_path, osp_model_cfg_t *cfg, char *err, size_t errlen) {
    if (osp_catalog_find(name_or_path))
        return osp_model_cfg_from_catalog(name_or_path, cfg, err, errlen);
    if (!strchr(name_or_path, '/') && !strchr(name_or_path, '.'))
        return osp_model_cfg_from_catalog(name_or_path, cfg, err, errlen); /* names the catalog */
    osp_model_cfg_defaults(cfg);
    if (strlen(name_or_path) >= sizeof cfg->path) {
        snprintf(err, errlen, "model path too long");
        return OSP_MODEL_EINVAL;
    }
    snprintf(cfg->path, sizeof cfg->path, "%s", name_or_path);
    osp_paths_stem(name_or_path, cfg->name, sizeof cfg->name);
    return OSP_MODEL_OK;
}

static int get_num(const cJSON *obj, const char *key, double lo, double hi, double *out, char *err,
                   size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi) {
        snprintf(err, errlen, "model config: %s must be a number in [%g, %g]", key, lo, hi);
        return -1;
    }
    *out = v->valuedouble;
    return 1;
}

static int get_str(const cJSON *obj, const char *key, char *out, size_t n, char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= n) {
        snprintf(err, errlen, "model config: %s must be a string (at most %zu bytes)", key, n - 1);
        return -1;
    }
    snprintf(out, n, "%s", v->valuestring);
    return 1;
}

static int get_triple(const cJSON *obj, const char *key, float out[3], char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (cJSON_IsNumber(v)) {
        /* NaN, an infinity, or a number no float holds would turn the
         * input values into NaN */
        if (!isfinite(v->valuedouble) || fabs(v->valuedouble) > FLT_MAX) goto bad;
        out[0] = out[1] = out[2] = (float)v->valuedouble;
        return 1;
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3) goto bad;
    for (int i = 0; i < 3; i++) {
        const cJSON *e = cJSON_GetArrayItem(v, i);
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || fabs(e->valuedouble) > FLT_MAX)
            goto bad;
        out[i] = (float)e->valuedouble;
    }
    return 1;
bad:
    snprintf(err, errlen, "model config: %s must be a number or an array of 3 numbers", key);
    return -1;
}

/* Every key a model config may carry: the Python worker's and osprey's. */
static const char *const KNOWN_KEYS[] = {
    "path",
    "model",
    "postprocessor",
    "inputSize",
    "inputWidth",
    "inputHeight",
    "inputChannels",
    "preprocessMode",
    "inputNormalization",
    "mean",
    "std",
    "confidence",
    "nmsIouThreshold",
    "maxDetections",
    "crossClassIou",
    "nmsContainment",
    "device",
    "gpuInferencePrecision",
    "labels",
    "embeddingEncoding",
    "graphOptimization",
    "threads",
    "then",
};

/* A key osprey does not know is ignored, as the Python worker ignored it (a
 * host's config must keep loading), but said on stderr with the nearest
 * known key: "confidnce" was a silent default threshold. Keys starting with
 * "_" are a host's own. */
static void warn_unknown_keys(const cJSON *obj) {
    for (const cJSON *k = obj->child; k; k = k->next) {
        if (!k->string || k->string[0] == '_') continue;
        const char *near = NULL;
        int best = 99, known = 0;
        for (size_t i = 0; i < sizeof KNOWN_KEYS / sizeof KNOWN_KEYS[0] && !known; i++) {
            if (strcmp(k->string, KNOWN_KEYS[i]) == 0) known = 1;
            int d = osp_text_distance(k->string, KNOWN_KEYS[i]);
            /* a known key's start ("nmsIou") is as near as a typo */
            if (strlen(k->string) >= 4 && strncasecmp(KNOWN_KEYS[i], k->string, strlen(k->string)) == 0)
                d = 1;
            if (d < best) best = d, near = KNOWN_KEYS[i];
        }
        if (known) continue;
        /* a suggestion only when it is plausibly the same word */
        if (near && best <= 1 + (int)strlen(near) / 4)
            fprintf(stderr,
                    "osprey: model config: unknown key \"%.64s\" ignored (did you mean \"%s\"?)\n",
                    k->string, near);
        else
            fprintf(stderr, "osprey: model config: unknown key \"%.64s\" ignored\n", k->string);
    }
}

int osp_model_cfg_from_json(const cJSON *obj, osp_model_cfg_t *cfg, char *err, size_t errlen) {
    char tmp[1024];
    double d;
    int r;
    if (!cJSON_IsObject(obj)) {
        snprintf(err, errlen, "model config must be a JSON object");
        return OSP_MODEL_EINVAL;
    }
    osp_model_cfg_defaults(cfg);
    warn_unknown_keys(obj);
    if ((r = get_str(obj, "model", tmp, 64, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r && osp_model_cfg_from_catalog(tmp, cfg, err, errlen)) return OSP_MODEL_EINVAL;
    if ((r = get_str(obj, "path", tmp, sizeof cfg->path, err, errlen)) < 0)
        return OSP_MODEL_EINVAL;
    if (r) {
        snprintf(cfg->path, sizeof cfg->path, "%s", tmp);
        if (!cfg->name[0]) osp_paths_stem(tmp, cfg->name, sizeof cfg->name);
    }
    if (!cfg->path[0]) {
        snprintf(err, errlen, "model config: path (or model) is required");
        return OSP_MODEL_EINVAL;
    }
    if (get_str(obj, "postprocessor", cfg->postprocessor, sizeof cfg->postprocessor, err, errlen) < 0 ||
        get_str(obj, "device", cfg->device, sizeof cfg->device, err, errlen) < 0 ||
        get_str(obj, "labels", cfg->labels_path, sizeof cfg->labels_path, err, errlen) < 0)
        return OSP_MODEL_EINVAL;

    if ((r = get_num(obj, "inputSize", 1, 16384, &d, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) cfg->width = cfg->height = (int)d;
    if ((r = get_num(obj, "inputWidth", 0, 16384, &d, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r && d > 0) cfg->width = (int)d;
    if ((r = get_num(obj, "inputHeight", 0, 16384, &d, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r && d > 0) cfg->height = (int)d;
    if ((r = get_num(obj, "inputChannels", 1, 3, &d, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) {
        if (d != 1 && d != 3) {
            snprintf(err, errlen, "model config: inputChannels must be 1 or 3");
            return OSP_MODEL_EINVAL;
        }
        cfg->channels = (int)d;
    }
    if ((r = get_str(obj, "preprocessMode", tmp, 32, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) {
        if (strcmp(tmp, "letterbox") == 0)
            cfg->fit = OSP_FIT_LETTERBOX;
        else if (strcmp(tmp, "resize") == 0)
            cfg->fit = OSP_FIT_RESIZE;
        else {
            snprintf(err, errlen,
                     "model config: preprocessMode must be letterbox or resize, not '%s'", tmp);
            return OSP_MODEL_EINVAL;
        }
    }
    if ((r = get_str(obj, "inputNormalization", tmp, 32, err, errlen)) < 0)
        return OSP_MODEL_EINVAL;
    if (r && osp_norm_named(tmp, cfg->mean, cfg->std) != 0) {
        snprintf(err, errlen,
                 "model config: inputNormalization must be none, zero-one, imagenet or scrfd, not '%s'",
                 tmp);
        return OSP_MODEL_EINVAL;
    }
    if (get_triple(obj, "mean", cfg->mean, err, errlen) < 0 ||
        get_triple(obj, "std", cfg->std, err, errlen) < 0)
        return OSP_MODEL_EINVAL;
    for (int i = 0; i < 3; i++)
        if (cfg->std[i] == 0) {
            snprintf(err, errlen, "model config: std must not be 0");
            return OSP_MODEL_EINVAL;
        }
    if ((r = get_num(obj, "confidence", 0, 1, &d, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) cfg->confidence = (float)d;
    if ((r = get_num(obj, "nmsIouThreshold", 0, 1, &d, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) cfg->nms_iou = (float)d;
    if ((r = get_num(obj, "maxDetections", 1, 100000, &d, err, errlen)) < 0)
        return OSP_MODEL_EINVAL;
    if (r) cfg->max_detections = (int)d;
    if ((r = get_num(obj, "crossClassIou", 0, 1, &d, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) cfg->cross_iou = (float)d;
    if ((r = get_num(obj, "nmsContainment", 0, 1, &d, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) cfg->contain = (float)d;
    if ((r = get_str(obj, "embeddingEncoding", tmp, 32, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) {
        if (strcmp(tmp, "base64") != 0 && strcmp(tmp, "json") != 0) {
            snprintf(err, errlen,
                     "model config: embeddingEncoding must be json or base64, not '%s'", tmp);
            return OSP_MODEL_EINVAL;
        }
        cfg->embedding_b64 = strcmp(tmp, "base64") == 0;
    }
    if ((r = get_str(obj, "graphOptimization", tmp, 32, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) {
        static const char *const levels[] = {"none", "basic", "extended", "all"};
        int found = -2;
        for (int i = 0; i < 4; i++)
            if (strcmp(tmp, levels[i]) == 0) found = i == 0 ? -1 : i;
        if (found == -2) {
            snprintf(err, errlen,
                     "model config: graphOptimization must be none, basic, extended or all, not '%s'",
                     tmp);
            return OSP_MODEL_EINVAL;
        }
        cfg->graph_opt = found;
    }
    if ((r = get_num(obj, "threads", 0, 256, &d, err, errlen)) < 0) return OSP_MODEL_EINVAL;
    if (r) cfg->intra_threads = (int)d;
    cfg->cascade = cJSON_GetObjectItemCaseSensitive(obj, "then") != NULL;
    return OSP_MODEL_OK;
}
