/* The pool protocol's codec; see frame.h and docs/PROTOCOL.md. */
#include "wire/frame.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/pyjson.h"
#include "wire/util.h"

/* ---- helpers ------------------------------------------------------------------- */

uint32_t osp_wire_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t osp_wire_rd64(const uint8_t *p) {
    return (uint64_t)osp_wire_rd32(p) | (uint64_t)osp_wire_rd32(p + 4) << 32;
}

void osp_wire_wr32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

void osp_wire_wr64(uint8_t *p, uint64_t v) {
    osp_wire_wr32(p, (uint32_t)v);
    osp_wire_wr32(p + 4, (uint32_t)(v >> 32));
}

/* ---- framing ------------------------------------------------------------------- */

static uint32_t frame_cap(uint32_t max_frame) {
    if (max_frame == 0) return OSP_WIRE_MAX_FRAME_DEFAULT;
    if (max_frame < 5) return 5;
#if SIZE_MAX <= UINT32_MAX
    /* 4 + total_len must fit a size_t, with room for a read hint */
    if (max_frame > SIZE_MAX / 2) return (uint32_t)(SIZE_MAX / 2);
#endif
    return max_frame;
}

int osp_wire_scan(const uint8_t *buf, size_t len, uint32_t max_frame, osp_wire_frame_t *f,
                  size_t *need) {
    size_t spare;
    if (!need) need = &spare;
    memset(f, 0, sizeof *f);
    *need = 0;
    if (len < 4) {
        *need = 4 - len; /* 4 bytes can already decide "below the header" */
        return 0;
    }
    uint32_t tl = osp_wire_rd32(buf);
    f->total_len = tl;
    if (len >= 8) f->req_id = osp_wire_rd32(buf + 4);
    if (tl < 5) {
        /* the frame is the 4 + total_len bytes the host wrote; a req_id is
         * among them only from total_len 4 on (else the reply goes on 0) */
        if (len < 4 + (size_t)tl) {
            *need = 4 + (size_t)tl - len;
            return 0;
        }
        f->req_id = tl >= 4 ? osp_wire_rd32(buf + 4) : 0;
        return OSP_WIRE_ESHORT;
    }
    if (tl > frame_cap(max_frame)) {
        if (len < 8) {
            *need = 8 - len;
            return 0;
        }
        return OSP_WIRE_ETOOBIG;
    }
    size_t flen = 4 + (size_t)tl;
    f->frame_len = flen;
    if (len >= 9) f->msg_type = buf[8];
    if (len < flen) {
        *need = flen - len;
        return 0;
    }
    f->payload = buf + 9;
    f->payload_len = flen - 9;
    return 1;
}

int osp_wire_command_parse(const uint8_t *json, size_t len, cJSON **out, char *err, size_t errlen) {
    int rc = osp_pyjson_parse(json, len, out, err, errlen);
    if (rc) return rc;
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return seterr(err, errlen, OSP_WIRE_EINVAL, "command must be a JSON object");
    }
    return 0;
}

/* ---- startup handshake ------------------------------------------------------ */

static int py_falsy(const cJSON *v) {
    if (cJSON_IsNull(v) || cJSON_IsFalse(v)) return 1;
    if (cJSON_IsNumber(v)) return v->valuedouble == 0;
    if (cJSON_IsString(v)) return v->valuestring[0] == '\0';
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) return v->child == NULL;
    return 0;
}

static int py_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* int(s) for base 10: blanks around, a sign, digits with single '_' between. */
static int py_int_str(const char *s, int64_t *out) {
    const char *p = s, *e = s + strlen(s);
    while (p < e && py_space(*p)) p++;
    while (e > p && py_space(e[-1])) e--;
    int neg = 0;
    if (p < e && (*p == '+' || *p == '-')) neg = *p++ == '-';
    if (p == e || !isdig((uint8_t)*p)) return -1;
    uint64_t v = 0;
    int sat = 0;
    for (; p < e; p++) {
        if (*p == '_') {
            if (p + 1 >= e || !isdig((uint8_t)p[1])) return -1;
            continue;
        }
        if (!isdig((uint8_t)*p)) return -1;
        if (v > (UINT64_MAX - 9) / 10)
            sat = 1;
        else
            v = v * 10 + (uint64_t)(*p - '0');
    }
    if (sat || v > (uint64_t)INT64_MAX)
        *out = neg ? INT64_MIN : INT64_MAX;
    else
        *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* Python's int(v or dflt) for a JSON value (v NULL = key missing). */
static int py_int(const cJSON *v, int64_t dflt, int64_t *out, const char *key, char *err,
                  size_t errlen) {
    if (!v || py_falsy(v)) {
        *out = dflt;
        return 0;
    }
    if (cJSON_IsTrue(v)) {
        *out = 1;
        return 0;
    }
    if (cJSON_IsNumber(v)) {
        double d = trunc(v->valuedouble);
        if (!isfinite(d))
            return seterr(err, errlen, OSP_WIRE_EINVAL,
                          "%s: cannot convert float infinity to integer", key);
        *out = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
        return 0;
    }
    if (cJSON_IsString(v)) {
        if (py_int_str(v->valuestring, out) == 0) return 0;
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "%s: invalid literal for int() with base 10: '%.60s'", key, v->valuestring);
    }
    return seterr(err, errlen, OSP_WIRE_EINVAL,
                  "%s: int() argument must be a string, a bytes-like object or a real number, "
                  "not '%s'",
                  key, cJSON_IsArray(v) ? "list" : "dict");
}

static int clamp_int(int64_t v, int64_t lo) {
    if (v < lo) v = lo;
    return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
}

int osp_wire_negotiate(const cJSON *declared, int worker_version) {
    int64_t d;
    if (py_int(declared, 1, &d, "", NULL, 0)) d = 1; /* garbage: an old host */
    int64_t v = d < worker_version ? d : worker_version;
    return v < 1 ? 1 : (int)v;
}

int osp_wire_hello_parse(uint8_t msg_type, const uint8_t *json, size_t len, int worker_version,
                         osp_wire_hello_t *h, char *err, size_t errlen) {
    memset(h, 0, sizeof *h);
    if (msg_type != OSP_WIRE_MSG_COMMAND)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "Expected startup config (cmd), got msg_type=%u", msg_type);
    cJSON *root;
    int rc = osp_pyjson_parse(json, len, &root, err, errlen);
    if (rc) return rc;
    h->root = root;
    rc = OSP_WIRE_EINVAL;
    if (!cJSON_IsObject(root)) {
        seterr(err, errlen, rc, "startup config must be a JSON object");
        goto fail;
    }

    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "runtime");
    if (v && !cJSON_IsString(v)) {
        seterr(err, errlen, rc, "runtime must be a string");
        goto fail;
    }
    h->runtime = v ? v->valuestring : NULL;

    /* str(device or "") */
    v = cJSON_GetObjectItemCaseSensitive(root, "device");
    h->device = "";
    if (v && !py_falsy(v)) {
        if (cJSON_IsString(v)) {
            h->device = v->valuestring;
        } else if (cJSON_IsTrue(v)) {
            h->device = "True";
        } else if (cJSON_IsNumber(v)) {
            double d = v->valuedouble;
            if (d == trunc(d) && fabs(d) < 1e16)
                snprintf(h->device_buf, sizeof h->device_buf, "%.0f", d);
            else
                snprintf(h->device_buf, sizeof h->device_buf, "%.17g", d);
            h->device = h->device_buf;
        } else {
            seterr(err, errlen, rc, "device must be a string");
            goto fail;
        }
    }

    int64_t n;
    if (py_int(cJSON_GetObjectItemCaseSensitive(root, "concurrency"), 1, &n, "concurrency", err, errlen))
        goto fail;
    h->concurrency = clamp_int(n, INT_MIN);

    v = cJSON_GetObjectItemCaseSensitive(root, "batch_mode");
    h->batch_mode = OSP_WIRE_BATCH_NONE;
    if (cJSON_IsString(v) && strcmp(v->valuestring, "list") == 0)
        h->batch_mode = OSP_WIRE_BATCH_LIST;
    if (cJSON_IsString(v) && strcmp(v->valuestring, "window") == 0)
        h->batch_mode = OSP_WIRE_BATCH_WINDOW;

    if (py_int(cJSON_GetObjectItemCaseSensitive(root, "window_ms"), 0, &n, "window_ms", err, errlen))
        goto fail;
    h->window_ms = clamp_int(n, 0);
    if (py_int(cJSON_GetObjectItemCaseSensitive(root, "max_batch_size"), 1, &n, "max_batch_size",
               err, errlen))
        goto fail;
    h->max_batch_size = clamp_int(n, 1);

    v = cJSON_GetObjectItemCaseSensitive(root, "modelLoadTimeoutMs");
    h->model_load_timeout_ms = cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 120000.0;

    v = cJSON_GetObjectItemCaseSensitive(root, "models");
    if (v && !cJSON_IsArray(v)) {
        /* the seed iterated whatever it got: "" and {} are empty, the rest crashed */
        if (!((cJSON_IsString(v) && !v->valuestring[0]) || (cJSON_IsObject(v) && !v->child))) {
            seterr(err, errlen, rc, "models must be a list");
            goto fail;
        }
        v = NULL;
    }
    h->models = v;

    v = cJSON_GetObjectItemCaseSensitive(root, "protocolVersion");
    if (py_int(v, 1, &h->protocol_declared, "", NULL, 0)) h->protocol_declared = 1;
    h->wire_version = osp_wire_negotiate(v, worker_version);
    return 0;
fail:
    osp_wire_hello_free(h);
    return rc;
}

void osp_wire_hello_free(osp_wire_hello_t *h) {
    cJSON_Delete(h->root);
    memset(h, 0, sizeof *h);
}

/* ---- request payloads ------------------------------------------------------------ */

int osp_wire_sheddable(uint8_t t) {
    return t == OSP_WIRE_MSG_INFER_JPEG || t == OSP_WIRE_MSG_INFER_RAW ||
           t == OSP_WIRE_MSG_INFER_BATCH || t == OSP_WIRE_MSG_INFER_CACHED;
}

int osp_wire_split_deadline(uint8_t msg_type, const uint8_t *p, size_t n, int version,
                            uint64_t *deadline_ms, const uint8_t **rest, size_t *rest_len,
                            char *err, size_t errlen) {
    if (!osp_wire_sheddable(msg_type)) version = 1;
    return osp_wire_strip_deadline(msg_type, p, n, version, deadline_ms, rest, rest_len, err, errlen);
}

int osp_wire_strip_deadline(uint8_t msg_type, const uint8_t *p, size_t n, int version,
                            uint64_t *deadline_ms, const uint8_t **rest, size_t *rest_len,
                            char *err, size_t errlen) {
    *deadline_ms = 0;
    *rest = p;
    *rest_len = n;
    if (version < 2) return 0;
    if (n < OSP_WIRE_DEADLINE_LEN)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "truncated deadline prefix on msg_type=%u (%zu bytes, need %d)", msg_type, n,
                      OSP_WIRE_DEADLINE_LEN);
    *deadline_ms = osp_wire_rd64(p);
    *rest = p + OSP_WIRE_DEADLINE_LEN;
    *rest_len = n - OSP_WIRE_DEADLINE_LEN;
    return 0;
}

int osp_wire_image_check(const uint8_t *p, size_t n, uint32_t w, uint32_t h, uint8_t fmt,
                         osp_wire_image_t *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    if (fmt > OSP_WIRE_FMT_I420)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "unknown pixel format %u", fmt);
    /* the seed's imaging library took sides as C ints */
    if (w > INT32_MAX || h > INT32_MAX)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "signed integer is greater than maximum");
    if (w == 0 || h == 0)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "width and height must be > 0");
    unsigned ch = fmt == OSP_WIRE_FMT_RGB || fmt == OSP_WIRE_FMT_BGR ? 3 : 1;
    uint64_t need = (uint64_t)w * h * ch;                     /* < 2^62 * 3: no overflow */
    if (fmt == OSP_WIRE_FMT_NV12 || fmt == OSP_WIRE_FMT_I420) /* 4:2:0: luma + 2 quarter planes */
        need += 2 * (((uint64_t)w + 1) / 2) * (((uint64_t)h + 1) / 2);
    if (need > n)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "%s",
                      ch == 1 ? "buffer is not large enough" : "not enough image data");
    img->width = w;
    img->height = h;
    img->fmt = fmt;
    img->channels = (uint8_t)ch;
    img->pixels = p;
    img->len = (size_t)need;
    return 0;
}

void osp_wire_batch_iter_init(osp_wire_batch_iter_t *it, const osp_wire_batch_t *b) {
    it->p = b->items;
    it->n = b->items_len;
    it->off = 0;
    it->index = 0;
    it->count = b->count;
}

int osp_wire_batch_next(osp_wire_batch_iter_t *it, osp_wire_image_t *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    if (it->index >= it->count) return 0;
    /* nothing advances on an error: asking again gives the same answer */
    if (it->n - it->off < 13)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated batch item header");
    const uint8_t *q = it->p + it->off;
    uint32_t size = osp_wire_rd32(q + 9);
    if (size > it->n - it->off - 13)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated batch item payload");
    char why[64];
    if (osp_wire_image_check(q + 13, size, osp_wire_rd32(q), osp_wire_rd32(q + 4), q[8], img, why,
                             sizeof why))
        return seterr(err, errlen, OSP_WIRE_EINVAL, "raw wrap failed: %s", why);
    it->off += 13 + (size_t)size;
    it->index++;
    return 1;
}

int osp_wire_request_parse(const osp_wire_frame_t *f, int version, osp_wire_request_t *rq,
                           char *err, size_t errlen) {
    memset(rq, 0, sizeof *rq);
    rq->req_id = f->req_id;
    rq->msg_type = f->msg_type;
    rq->err_shape = OSP_WIRE_ERR_PLAIN;
    const uint8_t *p;
    size_t n;
    int rc = osp_wire_split_deadline(f->msg_type, f->payload, f->payload_len, version,
                                     &rq->deadline_ms, &p, &n, err, errlen);
    if (rc) return rc;
    rq->body = p;
    rq->body_len = n;
    char why[64];
    switch (f->msg_type) {
    case OSP_WIRE_MSG_COMMAND:
        rq->u.command.json = p;
        rq->u.command.len = n;
        return 0;
    case OSP_WIRE_MSG_INFER_JPEG:
        if (n < 1) return seterr(err, errlen, OSP_WIRE_EINVAL, "empty infer_jpeg payload");
        rq->u.jpeg.model_idx = p[0];
        rq->u.jpeg.data = p + 1;
        rq->u.jpeg.len = n - 1;
        return 0;
    case OSP_WIRE_MSG_INFER_RAW:
        if (n < 10) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated infer_raw header");
        rq->u.raw.model_idx = p[0];
        if (osp_wire_image_check(p + 10, n - 10, osp_wire_rd32(p + 1), osp_wire_rd32(p + 5), p[9],
                                 &rq->u.raw.img, why, sizeof why))
            return seterr(err, errlen, OSP_WIRE_EINVAL, "raw wrap failed: %s", why);
        return 0;
    case OSP_WIRE_MSG_INFER_BATCH: {
        if (n < 6) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated infer_batch header");
        osp_wire_batch_t *b = &rq->u.batch;
        b->model_idx = p[0];
        b->count = p[1];
        b->frame_id = osp_wire_rd32(p + 2);
        b->items = p + 6;
        b->items_len = n - 6;
        osp_wire_batch_iter_t it;
        osp_wire_image_t img;
        osp_wire_batch_iter_init(&it, b);
        while ((rc = osp_wire_batch_next(&it, &img, err, errlen)) > 0) {
        }
        if (rc < 0) rq->err_shape = OSP_WIRE_ERR_RESULTS;
        return rc;
    }
    case OSP_WIRE_MSG_CACHE_FRAME:
        if (n < 13) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated cache_frame header");
        rq->u.cache.frame_id = osp_wire_rd32(p);
        if (osp_wire_image_check(p + 13, n - 13, osp_wire_rd32(p + 4), osp_wire_rd32(p + 8), p[12],
                                 &rq->u.cache.img, why, sizeof why))
            return seterr(err, errlen, OSP_WIRE_EINVAL, "cache_frame wrap failed: %s", why);
        return 0;
    case OSP_WIRE_MSG_INFER_CACHED:
        if (n < 5) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated infer_cached header");
        rq->u.cached.model_idx = p[0];
        rq->u.cached.frame_id = osp_wire_rd32(p + 1);
        return 0;
    default: return seterr(err, errlen, OSP_WIRE_EINVAL, "unknown msg_type: %u", f->msg_type);
    }
}

/* ---- replies --------------------------------------------------------------------- */

size_t osp_wire_reply_begin(osp_jw_t *w) {
    static const char hdr[8];
    size_t at = w->len;
    w->need_comma = 0;
    osp_jw_raw(w, hdr, sizeof hdr);
    w->need_comma = 0; /* the JSON that follows is the frame's first value */
    return at;
}

int osp_wire_reply_header(uint8_t out[8], uint32_t req_id, size_t json_len) {
    if (json_len > UINT32_MAX - 4) return OSP_WIRE_ETOOBIG;
    osp_wire_wr32(out, (uint32_t)json_len + 4);
    osp_wire_wr32(out + 4, req_id);
    return 0;
}

int osp_wire_reply_end(osp_jw_t *w, size_t at, uint32_t req_id) {
    w->need_comma = 0;
    if (w->oom) return OSP_WIRE_ENOMEM;
    if (at > w->len || w->len - at < 8) return OSP_WIRE_ENOMEM;
    int rc = osp_wire_reply_header((uint8_t *)w->buf + at, req_id, w->len - at - 8);
    if (rc) w->len = at; /* drop the oversized frame; earlier ones stay */
    return rc;
}

void osp_wire_json_error(osp_jw_t *w, const char *msg) {
    osp_wire_json_error_shaped(w, OSP_WIRE_ERR_PLAIN, msg);
}

void osp_wire_json_error_shaped(osp_jw_t *w, osp_wire_err_shape_t shape, const char *msg) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    if (shape == OSP_WIRE_ERR_RESULTS) {
        osp_jw_key(w, "results");
        osp_jw_arr_open(w);
        osp_jw_arr_close(w);
    }
    osp_jw_obj_close(w);
}

void osp_wire_json_empty_detections(osp_jw_t *w) {
    osp_jw_key(w, "kind");
    osp_jw_str(w, "detections");
    osp_jw_key(w, "detections");
    osp_jw_arr_open(w);
    osp_jw_arr_close(w);
    osp_jw_key(w, "inferenceMs");
    osp_jw_int(w, 0);
}

void osp_wire_json_infer_error(osp_jw_t *w, const char *msg) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    osp_wire_json_empty_detections(w);
    osp_jw_obj_close(w);
}

void osp_wire_json_cmd_error(osp_jw_t *w, const char *cmd, const char *msg) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "cmd");
    osp_jw_str(w, cmd);
    osp_jw_key(w, "status");
    osp_jw_str(w, "error");
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    osp_jw_obj_close(w);
}

void osp_wire_json_dropped(osp_jw_t *w, osp_wire_shed_t why) {
    osp_jw_obj_open(w);
    osp_wire_json_empty_detections(w);
    osp_jw_key(w, "dropped");
    osp_jw_bool(w, 1);
    if (why != OSP_WIRE_SHED_BARE) {
        osp_jw_key(w, "shedReason");
        osp_jw_str(w, why == OSP_WIRE_SHED_QUEUE_FULL ? "queue-full" : "deadline-expired");
    }
    osp_jw_obj_close(w);
}

void osp_wire_json_dropped_batch(osp_jw_t *w, osp_wire_shed_t why, unsigned count) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "results");
    osp_jw_arr_open(w);
    for (unsigned i = 0; i < count; i++) osp_wire_json_dropped(w, why);
    osp_jw_arr_close(w);
    osp_jw_obj_close(w);
}

void osp_wire_json_not_loaded(osp_jw_t *w, uint8_t msg_type, unsigned model_idx) {
    char msg[48];
    /* the seed's infer_cached check is its own, in lower case */
    snprintf(msg, sizeof msg, "%s %u not loaded",
             msg_type == OSP_WIRE_MSG_INFER_CACHED ? "model" : "Model", model_idx);
    if (msg_type == OSP_WIRE_MSG_INFER_CACHED)
        osp_wire_json_error(w, msg);
    else if (msg_type == OSP_WIRE_MSG_INFER_BATCH)
        osp_wire_json_error_shaped(w, OSP_WIRE_ERR_RESULTS, msg);
    else
        osp_wire_json_infer_error(w, msg);
}

void osp_wire_json_not_cached(osp_jw_t *w, uint32_t frame_id) {
    char msg[48];
    snprintf(msg, sizeof msg, "frame %u not in cache", frame_id);
    osp_wire_json_error(w, msg);
}

void osp_wire_json_too_large(osp_jw_t *w, uint32_t total_len, uint32_t max_frame) {
    char msg[80];
    snprintf(msg, sizeof msg, "frame too large: %u bytes (max %u)", total_len, frame_cap(max_frame));
    osp_wire_json_error(w, msg);
}

void osp_wire_json_too_short(osp_jw_t *w, uint32_t total_len) {
    char msg[80];
    snprintf(msg, sizeof msg, "frame length %u is below the 5-byte header", total_len);
    osp_wire_json_error(w, msg);
}

void osp_wire_json_cached(osp_jw_t *w, uint32_t frame_id, uint32_t width, uint32_t height) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "status");
    osp_jw_str(w, "cached");
    osp_jw_key(w, "frameId");
    osp_jw_uint(w, frame_id);
    osp_jw_key(w, "width");
    osp_jw_uint(w, width);
    osp_jw_key(w, "height");
    osp_jw_uint(w, height);
    osp_jw_obj_close(w);
}

void osp_wire_json_ready(osp_jw_t *w, const osp_wire_ready_t *r) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "status");
    osp_jw_str(w, "ready");
    osp_jw_key(w, "models");
    osp_jw_int(w, r->models);
    osp_jw_key(w, "total");
    osp_jw_int(w, r->total);
    osp_jw_key(w, "startupMs");
    osp_jw_int(w, r->startup_ms);
    osp_jw_key(w, "runtime");
    osp_jw_str(w, r->runtime);
    osp_jw_key(w, "workers");
    osp_jw_int(w, r->workers);
    osp_jw_key(w, "protocolVersion");
    osp_jw_int(w, r->protocol_version);
    osp_jw_obj_close(w);
}

void osp_wire_json_late(osp_jw_t *w, const osp_wire_late_t *e) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "event");
    osp_jw_str(w, "compile-finished-late");
    osp_jw_key(w, "index");
    osp_jw_int(w, e->index);
    osp_jw_key(w, "modelId");
    osp_jw_str(w, e->model_id);
    osp_jw_key(w, "ok");
    osp_jw_bool(w, e->ok);
    osp_jw_key(w, "elapsedMs");
    osp_jw_int(w, e->elapsed_ms);
    if (e->error) {
        osp_jw_key(w, "error");
        osp_jw_str(w, e->error);
    }
    osp_jw_obj_close(w);
}

int osp_wire_reply_error(osp_jw_t *w, uint32_t req_id, osp_wire_err_shape_t shape, const char *msg) {
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_error_shaped(w, shape, msg);
    return osp_wire_reply_end(w, at, req_id);
}

int osp_wire_reply_dropped(osp_jw_t *w, uint32_t req_id, osp_wire_shed_t why) {
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_dropped(w, why);
    return osp_wire_reply_end(w, at, req_id);
}

int osp_wire_reply_event_late(osp_jw_t *w, const osp_wire_late_t *e) {
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_late(w, e);
    return osp_wire_reply_end(w, at, OSP_WIRE_EVENT_REQ_ID);
}
