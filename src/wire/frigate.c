/* Frigate's zmq detector protocol; see frigate.h. */
#include "wire/frigate.h"
#include "wire/http.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "wire/frame.h"

#define FAIL(...)                                       \
    do {                                                \
        if (errlen) snprintf(err, errlen, __VA_ARGS__); \
        rc = OSP_WIRE_EINVAL;                           \
        goto done;                                      \
    } while (0)

/* ---- request headers ---------------------------------------------------------- */

/* A model name field: 1..OSP_FRIGATE_NAME_MAX-1 bytes of text. One that
 * held a NUL (nul) is taken as what C keeps of it followed by "\u0000",
 * which no file name check passes and no model is called: the peer is told
 * that no such model is there, as for any other name that is none. */
static int take_name(const cJSON *root, int nul, char *dst, char *err, size_t errlen) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "model_name");
    if (!cJSON_IsString(n) || !n->valuestring[0]) {
        if (errlen) snprintf(err, errlen, "model_name must be a non-empty string");
        return OSP_WIRE_EINVAL;
    }
    size_t len = strlen(n->valuestring);
    if (len >= OSP_FRIGATE_NAME_MAX) {
        if (errlen)
            snprintf(err, errlen, "model_name is %zu bytes, at most %d", len,
                     OSP_FRIGATE_NAME_MAX - 1);
        return OSP_WIRE_EINVAL;
    }
    memcpy(dst, n->valuestring, len + 1);
    if (nul) snprintf(dst + len, OSP_FRIGATE_NAME_MAX - len, "\\u0000");
    return 0;
}

/* Whether the JSON text escapes a NUL character in a string (\u0000 whose
 * backslash is not itself escaped): cJSON decodes it into a C string that
 * ends there, so "x\u0000y.onnx" would be taken for "x". */
static int has_nul_escape(const uint8_t *json, size_t len) {
    for (size_t i = 0; i + 6 <= len; i++) {
        if (json[i] != '\\' || json[i + 1] != 'u' || memcmp(json + i + 2, "0000", 4) != 0)
            continue;
        size_t run = 0;
        while (run < i && json[i - 1 - run] == '\\') run++;
        if (run % 2 == 0) return 1;
    }
    return 0;
}

/* shape [1,H,W,3] / [H,W,3] (NHWC) or [1,3,H,W] / [3,H,W] (NCHW). */
static int take_shape(const cJSON *shape, osp_frigate_req_t *rq, char *err, size_t errlen) {
    double d[4];
    int rank = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : -1;
    if (rank != 3 && rank != 4) {
        if (errlen) snprintf(err, errlen, "shape must be a list of 3 or 4 integers");
        return OSP_WIRE_EINVAL;
    }
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, shape) {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 ||
            v->valuedouble > 1e9) {
            if (errlen) snprintf(err, errlen, "shape must hold positive integers");
            return OSP_WIRE_EINVAL;
        }
        d[i++] = v->valuedouble;
    }
    const double *s = rank == 4 ? d + 1 : d;
    if (rank == 4 && d[0] != 1) {
        if (errlen) snprintf(err, errlen, "shape: a batch of %.0f, only 1 is served", d[0]);
        return OSP_WIRE_EINVAL;
    }
    double h, w;
    if (s[2] == 3) { /* NHWC first: a 3-pixel-high NHWC frame is likelier than nothing */
        rq->nchw = 0;
        h = s[0];
        w = s[1];
    } else if (s[0] == 3) {
        rq->nchw = 1;
        h = s[1];
        w = s[2];
    } else {
        if (errlen) snprintf(err, errlen, "shape is neither NHWC nor NCHW with 3 channels");
        return OSP_WIRE_EINVAL;
    }
    if (h > OSP_FRIGATE_MAX_SIDE || w > OSP_FRIGATE_MAX_SIDE) {
        if (errlen)
            snprintf(err, errlen, "a %.0fx%.0f tensor: sides are at most %d", w, h,
                     OSP_FRIGATE_MAX_SIDE);
        return OSP_WIRE_EINVAL;
    }
    rq->width = (int)w;
    rq->height = (int)h;
    return 0;
}

int osp_frigate_parse(const uint8_t *json, size_t len, osp_frigate_req_t *rq, char *err,
                      size_t errlen) {
    int rc = 0;
    cJSON *root = NULL;
    memset(rq, 0, sizeof *rq);
    if (len > OSP_FRIGATE_HEADER_MAX)
        FAIL("header of %zu bytes, at most %d", len, OSP_FRIGATE_HEADER_MAX);
    root = cJSON_ParseWithLength((const char *)json, len);
    if (!cJSON_IsObject(root)) FAIL("header is not a JSON object");
    int nul = has_nul_escape(json, len);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "model_request"))) {
        rq->kind = OSP_FRIGATE_MODEL_REQUEST;
        rc = take_name(root, nul, rq->model_name, err, errlen);
        goto done;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "model_data"))) {
        rq->kind = OSP_FRIGATE_MODEL_DATA;
        rc = take_name(root, nul, rq->model_name, err, errlen);
        goto done;
    }
    if (nul) FAIL("a string of the header holds a NUL character (\\u0000)");
    rq->kind = OSP_FRIGATE_TENSOR;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    if (!cJSON_IsString(dt)) FAIL("dtype must be \"uint8\" or \"float32\"");
    if (strcmp(dt->valuestring, "uint8") == 0)
        rq->f32 = 0;
    else if (strcmp(dt->valuestring, "float32") == 0)
        rq->f32 = 1;
    else
        FAIL("dtype must be \"uint8\" or \"float32\"");
    if ((rc = take_shape(cJSON_GetObjectItemCaseSensitive(root, "shape"), rq, err, errlen)))
        goto done;
    rq->bytes = (size_t)rq->width * (size_t)rq->height * 3u * (rq->f32 ? 4u : 1u);
done:
    cJSON_Delete(root);
    return rc;
}

int osp_frigate_check(const osp_frigate_req_t *rq, size_t n, char *err, size_t errlen) {
    if (rq->kind != OSP_FRIGATE_TENSOR || n == rq->bytes) return 0;
    if (errlen)
        snprintf(err, errlen, "a %dx%d %s %s tensor is %zu bytes, got %zu", rq->width, rq->height,
                 rq->nchw ? "NCHW" : "NHWC", rq->f32 ? "float32" : "uint8", rq->bytes, n);
    return OSP_WIRE_EINVAL;
}

/* ---- tensors to pixels ---------------------------------------------------------- */

static float rd_f32(const uint8_t *p) {
    uint32_t u = osp_wire_rd32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint8_t to_u8(float v) {
    if (!(v > 0)) return 0; /* NaN too */
    if (v >= 255) return 255;
    return (uint8_t)(v + 0.5f);
}

void osp_frigate_pixels(const osp_frigate_req_t *rq, const uint8_t *data, uint8_t *dst) {
    size_t plane = (size_t)rq->width * (size_t)rq->height, n = plane * 3;
    if (!rq->f32) {
        if (!rq->nchw) {
            memcpy(dst, data, n);
            return;
        }
        for (size_t i = 0; i < plane; i++)
            for (int c = 0; c < 3; c++) dst[i * 3 + (size_t)c] = data[(size_t)c * plane + i];
        return;
    }
    float scale = 255;
    for (size_t i = 0; i < n; i++)
        if (rd_f32(data + 4 * i) > 1.0f) {
            scale = 1;
            break;
        }
    for (size_t i = 0; i < plane; i++)
        for (size_t c = 0; c < 3; c++) {
            size_t at = rq->nchw ? c * plane + i : i * 3 + c;
            dst[i * 3 + c] = to_u8(rd_f32(data + 4 * at) * scale);
        }
}

/* ---- reply rows ------------------------------------------------------------------- */

static float unit(float v, int side) {
    float u = side > 0 ? v / (float)side : 0;
    if (!(u > 0)) return 0;
    return u > 1 ? 1 : u;
}

int osp_frigate_rows(const osp_frigate_det_t *dets, int n, int w, int h,
                     uint8_t out[OSP_FRIGATE_REPLY_BYTES]) {
    const osp_frigate_det_t *best[OSP_FRIGATE_ROWS];
    int kept = 0;
    for (int i = 0; i < n; i++) {
        const osp_frigate_det_t *d = &dets[i];
        if (d->id < 0 || !(d->score > 0) || !isfinite(d->score)) continue;
        /* insert after every row that scores at least as high: ties keep
         * the decoder's order */
        int at = kept;
        while (at > 0 && best[at - 1]->score < d->score) at--;
        if (at >= OSP_FRIGATE_ROWS) continue;
        int last = kept < OSP_FRIGATE_ROWS ? kept : OSP_FRIGATE_ROWS - 1;
        memmove(&best[at + 1], &best[at], (size_t)(last - at) * sizeof best[0]);
        best[at] = d;
        if (kept < OSP_FRIGATE_ROWS) kept++;
    }
    memset(out, 0, OSP_FRIGATE_REPLY_BYTES);
    for (int r = 0; r < kept; r++) {
        const osp_frigate_det_t *d = best[r];
        float row[6] = {(float)d->id,   d->score > 1 ? 1 : d->score,
                        unit(d->y1, h), unit(d->x1, w),
                        unit(d->y2, h), unit(d->x2, w)};
        for (int k = 0; k < 6; k++) {
            uint32_t u;
            memcpy(&u, &row[k], sizeof u);
            osp_wire_wr32(out + ((size_t)r * 6 + (size_t)k) * 4, u);
        }
    }
    return kept;
}

/* ---- handshake answers ------------------------------------------------------------ */

static size_t answer(const char *k1, int v1, const char *k2, int v2, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "{\"%s\": %s, \"%s\": %s}", k1, v1 ? "true" : "false", k2,
                     v2 ? "true" : "false");
    if (n < 0) return 0;
    return (size_t)n < cap ? (size_t)n : cap ? cap - 1 : 0;
}

size_t osp_frigate_answer_available(int available, int loaded, char *buf, size_t cap) {
    return answer("model_available", available, "model_loaded", loaded, buf, cap);
}

size_t osp_frigate_answer_saved(int saved, int loaded, char *buf, size_t cap) {
    return answer("model_saved", saved, "model_loaded", loaded, buf, cap);
}

int osp_frigate_name_ok(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n >= OSP_FRIGATE_NAME_MAX || name[0] == '.') return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-') return 0;
    }
    return 1;
}

/* ---- labelmaps ------------------------------------------------------------------- */

/* COCO's 91 ids minus one, the unused ones named as COCO's paper names them. */
static const char *const COCO91[] =
    {"person",       "bicycle",      "car",           "motorcycle",    "airplane",
     "bus",          "train",        "truck",         "boat",          "traffic light",
     "fire hydrant", "street sign",  "stop sign",     "parking meter", "bench",
     "bird",         "cat",          "dog",           "horse",         "sheep",
     "cow",          "elephant",     "bear",          "zebra",         "giraffe",
     "hat",          "backpack",     "umbrella",      "shoe",          "eye glasses",
     "handbag",      "tie",          "suitcase",      "frisbee",       "skis",
     "snowboard",    "sports ball",  "kite",          "baseball bat",  "baseball glove",
     "skateboard",   "surfboard",    "tennis racket", "bottle",        "plate",
     "wine glass",   "cup",          "fork",          "knife",         "spoon",
     "bowl",         "banana",       "apple",         "sandwich",      "orange",
     "broccoli",     "carrot",       "hot dog",       "pizza",         "donut",
     "cake",         "chair",        "couch",         "potted plant",  "bed",
     "mirror",       "dining table", "window",        "desk",          "toilet",
     "door",         "tv",           "laptop",        "mouse",         "remote",
     "keyboard",     "cell phone",   "microwave",     "oven",          "toaster",
     "sink",         "refrigerator", "blender",       "book",          "clock",
     "vase",         "scissors",     "teddy bear",    "hair drier",    "toothbrush",
     "hair brush"};

/* Other data sets' names for COCO's things (Open Images, Pascal VOC), as
 * the catalog's detectors label them. */
static const char *const ALIASES[][2] = {{"cattle", "cow"},
                                         {"computer mouse", "mouse"},
                                         {"computer monitor", "tv"},
                                         {"television", "tv"},
                                         {"tvmonitor", "tv"},
                                         {"coffee cup", "cup"},
                                         {"mug", "cup"},
                                         {"table", "dining table"},
                                         {"diningtable", "dining table"},
                                         {"footwear", "shoe"},
                                         {"motorbike", "motorcycle"},
                                         {"aeroplane", "airplane"},
                                         {"sofa", "couch"},
                                         {"pottedplant", "potted plant"},
                                         {"mobile phone", "cell phone"}};

/* s[0..n) without its surrounding blanks. */
static void trim(const char **s, size_t *n) {
    while (*n && isspace((unsigned char)**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

/* The name as compared: lower case, '_' as a blank, no surrounding blanks. */
static void norm(const char *s, char out[OSP_FRIGATE_LABEL_LEN]) {
    size_t n = strlen(s), k = 0;
    trim(&s, &n);
    for (size_t i = 0; i < n && k < OSP_FRIGATE_LABEL_LEN - 1; i++)
        out[k++] = s[i] == '_' ? ' ' : (char)tolower((unsigned char)s[i]);
    out[k] = '\0';
}

void osp_frigate_labelmap_default(osp_frigate_labelmap_t *lm) {
    memset(lm, 0, sizeof *lm);
    lm->n = (int)(sizeof COCO91 / sizeof COCO91[0]);
    for (int i = 0; i < lm->n; i++) {
        snprintf(lm->name[i], sizeof lm->name[i], "%s", COCO91[i]);
        norm(lm->name[i], lm->key[i]);
    }
}

int osp_frigate_labelmap_parse(const char *text, size_t len, osp_frigate_labelmap_t *lm, char *err,
                               size_t errlen) {
    int rc = 0;
    memset(lm, 0, sizeof *lm);
    /* Frigate's rule: numbered lines when the first line's first word is a number */
    size_t first = 0;
    while (first < len && text[first] != ' ' && text[first] != '\n' && text[first] != '\r')
        first++;
    int numbered = first > 0;
    for (size_t i = 0; i < first; i++)
        if (!isdigit((unsigned char)text[i])) numbered = 0;
    int line = 0, named = 0;
    size_t at = 0;
    while (at < len) {
        const char *s = text + at;
        const char *nl = memchr(s, '\n', len - at);
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl ? 1 : 0);
        line++;
        trim(&s, &n);
        long id = line - 1;
        if (numbered) {
            if (n == 0) continue;
            size_t k = 0;
            id = 0;
            while (k < n && isdigit((unsigned char)s[k])) {
                id = id * 10 + (s[k] - '0');
                if (id >= OSP_FRIGATE_LABELS_MAX)
                    FAIL("line %d: id past %d", line, OSP_FRIGATE_LABELS_MAX - 1);
                k++;
            }
            if (k == 0 || k == n || !isspace((unsigned char)s[k]))
                FAIL("line %d: not \"ID  label\"", line);
            s += k;
            n -= k;
            trim(&s, &n);
        } else if (id >= OSP_FRIGATE_LABELS_MAX) {
            FAIL("line %d: more than %d labels", line, OSP_FRIGATE_LABELS_MAX);
        }
        if (n >= OSP_FRIGATE_LABEL_LEN)
            FAIL("line %d: a label of %zu bytes, at most %d", line, n, OSP_FRIGATE_LABEL_LEN - 1);
        if (memchr(s, '\0', n)) FAIL("line %d: a NUL byte", line);
        memcpy(lm->name[id], s, n);
        lm->name[id][n] = '\0';
        norm(lm->name[id], lm->key[id]);
        if (n) named++;
        if (id + 1 > lm->n) lm->n = (int)id + 1;
    }
    if (!named) FAIL("no labels");
done:
    if (rc) memset(lm, 0, sizeof *lm);
    return rc;
}

static int find(const osp_frigate_labelmap_t *lm, const char *want) {
    for (int i = 0; i < lm->n; i++)
        if (strcmp(lm->key[i], want) == 0) return i;
    return -1;
}

int osp_frigate_label_id(const osp_frigate_labelmap_t *lm, const char *label) {
    char want[OSP_FRIGATE_LABEL_LEN];
    if (!label) return -1;
    norm(label, want);
    if (!want[0]) return -1;
    int id = find(lm, want);
    if (id >= 0) return id;
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
        if (strcmp(want, ALIASES[i][0]) == 0) return find(lm, ALIASES[i][1]);
    return -1;
}

int osp_frigate_endpoint_is_local(const char *ep) {
    if (!ep) return 0;
    if (strncmp(ep, "ipc://", 6) == 0) return 1;
    if (strncmp(ep, "tcp://", 6) != 0) return 0;
    const char *h = ep + 6, *colon = strrchr(h, ':');
    if (!colon) return 0;
    size_t n = (size_t)(colon - h);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    char host[64];
    if (n == 0 || n >= sizeof host) return 0;
    memcpy(host, h, n);
    host[n] = '\0';
    return osp_http_host_is_loopback(host);
}
