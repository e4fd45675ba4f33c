/*
 * wire/cmdargs: the arguments of osprey's own commands (see cmdargs.h).
 * Apart from frame.c because they are not the seed's protocol: the seed
 * had no streams, no shared memory and no thread keys, so these have no
 * Python texts to match, only the bounds that keep one peer from taking
 * the machine's memory and threads.
 */
#include "wire/cmdargs.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wire/util.h"

const char *osp_wire_cmd_name(const cJSON *cmd) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(cmd, "cmd");
    return cJSON_IsString(c) ? c->valuestring : "unknown";
}

int osp_wire_cmd_index(const cJSON *cmd, int slots, int *index) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cmd, "index");
    /* NaN fails the first test, the infinities the range */
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble >= slots)
        return -1;
    *index = (int)v->valuedouble;
    return 0;
}

/* ---- reconfigure ----------------------------------------------------------------- */

static const char *const RECONFIGURABLE[] = {"confidence", "maxDetections", "nmsIouThreshold"};
#define N_RECONF (sizeof RECONFIGURABLE / sizeof RECONFIGURABLE[0])

int osp_wire_reconfigure_keys(const cJSON *config, char *err, size_t errlen) {
    if (!config) return 0;
    /* a list's items have no key: reading one as a key's name crashed the
     * server */
    if (!cJSON_IsObject(config))
        return seterr(err, errlen, OSP_WIRE_EINVAL, "reconfigure needs a \"config\" object");
    /* refuse any key outside the allow-list, naming them: a path accepted
     * here while the old session kept serving would be a silent lie */
    char refused[300] = "";
    size_t rl = 0;
    const cJSON *kv;
    cJSON_ArrayForEach(kv, config) {
        int ok = 0;
        for (size_t i = 0; i < N_RECONF; i++) ok |= strcmp(kv->string, RECONFIGURABLE[i]) == 0;
        if (!ok && rl < sizeof refused - 1)
            rl += (size_t)snprintf(refused + rl, sizeof refused - rl, "%s%s", rl ? ", " : "",
                                   kv->string);
    }
    if (rl)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "keys not reconfigurable without a reload: %s (allowed: confidence, "
                      "maxDetections, nmsIouThreshold)",
                      refused);
    return 0;
}

int osp_wire_reconfigure_values(const cJSON *config, float *confidence, float *nms_iou,
                                int *max_detections, char *err, size_t errlen) {
    float conf = *confidence, nms = *nms_iou;
    int maxdet = *max_detections;
    const cJSON *kv, *obj = cJSON_IsObject(config) ? config : NULL;
    cJSON_ArrayForEach(kv, obj) {
        double v = kv->valuedouble;
        int is_num = cJSON_IsNumber(kv) && isfinite(v);
        if (strcmp(kv->string, "maxDetections") == 0) {
            if (!is_num || v < 1 || v > 100000 || v != floor(v))
                return seterr(err, errlen, OSP_WIRE_EINVAL,
                              "maxDetections must be an integer from 1 to 100000");
            maxdet = (int)v;
        } else {
            if (!is_num || v < 0 || v > 1)
                return seterr(err, errlen, OSP_WIRE_EINVAL, "%s must be a number from 0 to 1",
                              kv->string);
            if (strcmp(kv->string, "confidence") == 0)
                conf = (float)v;
            else
                nms = (float)v;
        }
    }
    *confidence = conf;
    *nms_iou = nms;
    *max_detections = maxdet;
    return 0;
}

/* ---- open_stream ----------------------------------------------------------------- */

static const char *str_key(const cJSON *o, const char *k, const char *dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* A whole number in [lo, hi], or dflt when absent. */
static int int_key(const cJSON *o, const char *k, int dflt, int lo, int hi, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return -1;
    *out = (int)v->valuedouble;
    return 0;
}

int osp_wire_stream_open_parse(const cJSON *cfg, osp_wire_stream_open_t *o, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    if (!cJSON_IsObject(cfg))
        return seterr(err, errlen, OSP_WIRE_EINVAL, "open_stream needs a \"config\" object");
    const char *model = str_key(cfg, "model", NULL);
    if (model && strcmp(model, "silero-vad") == 0) {
        o->silero = 1;
        return 0;
    }
    if (model)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "open_stream: unknown model '%s' (known: silero-vad; or give a path)", model);
    o->path = str_key(cfg, "path", NULL);
    if (!o->path || strlen(o->path) >= OSP_WIRE_STREAM_PATH_MAX)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "open_stream needs \"config\" with \"model\" or \"path\"");
    if (int_key(cfg, "frameLen", 0, 1, OSP_WIRE_STREAM_MAX_FRAME_LEN, &o->frame_len) ||
        o->frame_len == 0 || int_key(cfg, "window", 1, 1, OSP_WIRE_STREAM_MAX_WINDOW, &o->window) ||
        int_key(cfg, "stride", 0, 0, OSP_WIRE_STREAM_MAX_STRIDE, &o->stride) ||
        int_key(cfg, "backlog", 0, 0, OSP_WIRE_STREAM_MAX_BACKLOG, &o->backlog) ||
        int_key(cfg, "channels", 1, 1, OSP_WIRE_STREAM_MAX_CHANNELS, &o->channels) ||
        int_key(cfg, "intValue", 0, -2147483647, 2147483647, &o->int_value))
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "open_stream: frameLen (required, 1 to %d), window (1 to %d), stride (0 to "
                      "%d), backlog (0 to %d), channels (1 to %d) and intValue must be whole "
                      "numbers in range",
                      OSP_WIRE_STREAM_MAX_FRAME_LEN, OSP_WIRE_STREAM_MAX_WINDOW,
                      OSP_WIRE_STREAM_MAX_STRIDE, OSP_WIRE_STREAM_MAX_BACKLOG,
                      OSP_WIRE_STREAM_MAX_CHANNELS);
    /* each factor is capped above, so the product fits in 64 bits */
    o->ring = ((uint64_t)o->window + (uint64_t)o->stride * (uint64_t)(o->backlog ? o->backlog : 1)) *
              (uint64_t)o->frame_len;
    if (o->ring > OSP_WIRE_STREAM_MAX_RING)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "open_stream: (window + stride x backlog) x frameLen is %llu values; at most %u",
                      (unsigned long long)o->ring, OSP_WIRE_STREAM_MAX_RING);
    o->input = str_key(cfg, "input", "input");
    o->output = str_key(cfg, "output", "output");
    o->int_input = str_key(cfg, "intInput", NULL);
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(cfg, "state"), *pair;
    cJSON_ArrayForEach(pair, state) {
        const cJSON *in = cJSON_GetArrayItem(pair, 0), *out = cJSON_GetArrayItem(pair, 1);
        if (o->n_state == OSP_WIRE_STREAM_MAX_STATE || !cJSON_IsString(in) || !cJSON_IsString(out))
            return seterr(err, errlen, OSP_WIRE_EINVAL,
                          "open_stream: \"state\" is a list of up to %d [input, output] name pairs",
                          OSP_WIRE_STREAM_MAX_STATE);
        o->state_in[o->n_state] = in->valuestring;
        o->state_out[o->n_state++] = out->valuestring;
    }
    return 0;
}

/* ---- register_shm / unregister_shm ------------------------------------------------ */

int osp_wire_shm_register_parse(const cJSON *cmd, osp_wire_shm_register_t *r, char *err,
                                size_t errlen) {
    memset(r, 0, sizeof *r);
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(cmd, "name");
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(cmd, "size");
    if (!cJSON_IsString(nm) || nm->valuestring[0] != '/' ||
        strlen(nm->valuestring) >= OSP_WIRE_SHM_NAME_MAX || strchr(nm->valuestring + 1, '/'))
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "register_shm needs \"name\": a POSIX shared-memory name like "
                      "\"/osprey-cam1\"");
    /* 2^53: past it a double is not a count of bytes (and Infinity would
     * not convert to one at all) */
    if (sz && (!cJSON_IsNumber(sz) || !(sz->valuedouble >= 1) || sz->valuedouble > 0x1p53 ||
               sz->valuedouble != floor(sz->valuedouble)))
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "register_shm: \"size\" must be a positive whole number of bytes");
    r->name = nm->valuestring;
    r->size = sz ? (uint64_t)sz->valuedouble : 0;
    return 0;
}

int osp_wire_shm_unregister_parse(const cJSON *cmd, uint32_t *region, char *err, size_t errlen) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(cmd, "regionId");
    if (!cJSON_IsNumber(id) || !(id->valuedouble >= 0) || id->valuedouble > 4294967295.0)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "unregister_shm: no such \"regionId\"");
    *region = (uint32_t)id->valuedouble;
    return 0;
}

/* ---- startup config ------------------------------------------------------------------ */

/* 0..256, or -1. The test is written so that NaN fails it: converting
 * NaN to int is undefined. */
static int ext_int(const cJSON *root, const char *key) {
    const cJSON *v = root ? cJSON_GetObjectItemCaseSensitive(root, key) : NULL;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 256)) return -1;
    return (int)v->valuedouble;
}

void osp_wire_hello_ext(const osp_wire_hello_t *h, osp_wire_hello_ext_t *x) {
    const cJSON *root = h ? h->root : NULL;
    x->auto_concurrency = !cJSON_IsFalse(root ? cJSON_GetObjectItemCaseSensitive(root, "autoConcurrency")
                                              : NULL);
    x->intra_op_threads = ext_int(root, "intraOpThreads");
    x->lone_frame_threads = ext_int(root, "loneFrameThreads");
    x->predict_nice = ext_int(root, "predictNice");
}
