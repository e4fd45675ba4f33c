/*
 * wire/frame: the pool protocol's codec (docs/PROTOCOL.md): split a byte
 * stream into request frames, negotiate the wire version from the startup
 * config, strip v2 deadline prefixes, validate every payload type, and write
 * the fixed replies. Pure functions: no I/O, no threads, no globals. Every
 * parsed struct points INTO the caller's frame bytes (nothing is copied), so
 * it is valid only as long as those bytes are.
 *
 * Error texts are the Python worker's (the seed's), byte for byte, so a host
 * cannot tell the two apart; where osprey refuses something the seed let
 * through (an unknown pixel format, a zero width), the text says so in the
 * seed's style. Errors: negative OSP_WIRE_E* and the human text in the
 * caller's (err, errlen).
 */
#ifndef OSP_WIRE_FRAME_H
#define OSP_WIRE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "wire/jsonw.h"

struct cJSON;

enum {
    OSP_WIRE_OK = 0,
    OSP_WIRE_EINVAL = -1,  /* a malformed payload or config: answer, read on */
    OSP_WIRE_ETOOBIG = -2, /* a frame over the cap: answer if possible, close */
    OSP_WIRE_ENOMEM = -3,
    OSP_WIRE_ESHORT = -4, /* total_len below the 5-byte header: answer, close */
};

/* Message types (the first byte after req_id). */
enum {
    OSP_WIRE_MSG_COMMAND = 0x00,
    OSP_WIRE_MSG_INFER_JPEG = 0x01,
    OSP_WIRE_MSG_INFER_RAW = 0x02,
    OSP_WIRE_MSG_INFER_BATCH = 0x03,
    OSP_WIRE_MSG_CACHE_FRAME = 0x04,
    OSP_WIRE_MSG_INFER_CACHED = 0x05,
    /* osprey's extensions (peek.h reads them; the seed answered "unknown") */
    OSP_WIRE_MSG_INFER_SHM = 0x06,   /* a frame in a registered shared-memory region */
    OSP_WIRE_MSG_STREAM_PUSH = 0x07, /* one frame of features into an open stream */
};

/* Raw pixel formats; the values are the wire's (and image.h's osp_pixfmt_t). */
enum {
    OSP_WIRE_FMT_RGB = 0,
    OSP_WIRE_FMT_BGR = 1,
    OSP_WIRE_FMT_GRAY = 2,
    OSP_WIRE_FMT_NV12 = 3, /* extension: 4:2:0, Y plane then interleaved UV */
    OSP_WIRE_FMT_I420 = 4, /* extension: 4:2:0, Y, U, V planes */
};

#define OSP_WIRE_VERSION 2                     /* this worker's highest */
#define OSP_WIRE_EVENT_REQ_ID 0xFFFFFFFFu      /* unsolicited events */
#define OSP_WIRE_MAX_FRAME_DEFAULT (64u << 20) /* cap on a declared total_len */
#define OSP_WIRE_DEADLINE_LEN 8
#define OSP_WIRE_ERRLEN 160 /* enough for every text this module writes */

/* ---- framing ------------------------------------------------------------------
 *
 * Request: [u32 total_len][u32 req_id][u8 msg_type][payload], little-endian,
 * total_len = 5 + len(payload). A total_len below 5 cannot hold the req_id
 * and msg_type it must count. The seed read 9 header bytes anyway, so a
 * host that wrote only 4 + total_len bytes lost frame sync and got replies
 * on request ids it never sent; osprey refuses such a frame
 * (OSP_WIRE_ESHORT): the stream cannot be trusted past it.
 */

typedef struct {
    uint32_t total_len; /* as declared */
    uint32_t req_id;
    uint8_t msg_type;
    const uint8_t *payload; /* into the scanned buffer; NULL-safe when len 0 */
    size_t payload_len;
    size_t frame_len; /* bytes the frame occupies: 4 + total_len */
} osp_wire_frame_t;

/*
 * Look for one frame at the start of buf[0..len). For a server that owns its
 * buffers and parses in place.
 *  1 (a frame): *f describes buf[0..f->frame_len); consume that many bytes.
 *  0 (incomplete): at least *need (>= 1) more bytes before the answer can
 *    change. From 4 bytes on, f->total_len and f->frame_len are filled (from
 *    9, req_id and msg_type too), so a caller can size a buffer for the
 *    whole frame before reading the rest of it.
 *  OSP_WIRE_ETOOBIG: total_len > max_frame; reported once the req_id is
 *    readable (8 bytes), with f->total_len and f->req_id filled. The stream
 *    cannot be resynchronised: answer (osp_wire_json_too_large) and close.
 *  OSP_WIRE_ESHORT: total_len < 5, reported once the 4 + total_len bytes
 *    the host wrote for it are in, with f->total_len and f->req_id filled
 *    (req_id 0 when total_len < 4 left no room for one): answer
 *    (osp_wire_json_too_short) and close.
 * max_frame 0 means OSP_WIRE_MAX_FRAME_DEFAULT; values below 5 count as 5.
 */
int osp_wire_scan(const uint8_t *buf, size_t len, uint32_t max_frame, osp_wire_frame_t *f,
                  size_t *need);

/* ---- startup handshake ----------------------------------------------------- */

typedef enum {
    OSP_WIRE_BATCH_NONE = 0,
    OSP_WIRE_BATCH_LIST = 1,
    OSP_WIRE_BATCH_WINDOW = 2,
} osp_wire_batch_mode_t;

/*
 * The startup config, read the way the seed reads it: JSON as for
 * osp_wire_command_parse, Python's `int(value or default)` for the integers
 * (numbers truncate toward zero, numeric strings parse, true is 1, anything
 * falsy takes the default). Values that made the seed die at startup
 * (int("abc"), a non-object config, a non-list models) are errors here: the
 * server logs the text and exits 1, as the seed did. Owns `root`; every
 * pointer below points into it or into the struct.
 */
typedef struct {
    struct cJSON *root;
    const char *runtime; /* NULL when absent (the seed then used "coreml") */
    const char *device;  /* never NULL; "" = auto */
    int concurrency;     /* as given (default 1); the pool size is max(1, it) */
    osp_wire_batch_mode_t batch_mode;
    int window_ms;                /* >= 0 */
    int max_batch_size;           /* >= 1 */
    double model_load_timeout_ms; /* > 0; default 120000; may be +inf */
    const struct cJSON *models;   /* the models array, NULL when absent */
    int64_t protocol_declared;    /* the host's protocolVersion; 1 when missing/garbage */
    int wire_version;             /* effective: max(1, min(worker, declared)) */
    char device_buf[40];          /* `device` when it had to be converted to text */
} osp_wire_hello_t;

/*
 * Parse the first frame. A msg_type other than 0x00 is an error with the
 * seed's stderr text ("Expected startup config (cmd), got msg_type=N").
 * worker_version is this worker's highest (OSP_WIRE_VERSION; a parameter so
 * tests and extensions can vary it). On error *h holds nothing to free.
 */
int osp_wire_hello_parse(uint8_t msg_type, const uint8_t *json, size_t len, int worker_version,
                         osp_wire_hello_t *h, char *err, size_t errlen);
void osp_wire_hello_free(osp_wire_hello_t *h);

/* The effective version for a protocolVersion node (NULL = missing). */
int osp_wire_negotiate(const struct cJSON *declared, int worker_version);

/* ---- request payloads ------------------------------------------------------ */

/* The little-endian integers every wire layout uses. */
uint32_t osp_wire_rd32(const uint8_t *p);
uint64_t osp_wire_rd64(const uint8_t *p);
void osp_wire_wr32(uint8_t *p, uint32_t v);
void osp_wire_wr64(uint8_t *p, uint64_t v);

/* Whether the type carries a deadline prefix at version >= 2. */
int osp_wire_sheddable(uint8_t msg_type);

/*
 * Strip the deadline prefix: at version >= 2 a sheddable payload starts with
 * [u64 deadline_ms] (0 = none). Otherwise the payload passes through with
 * deadline 0. Error "truncated deadline prefix on msg_type=T (N bytes, need 8)".
 */
int osp_wire_split_deadline(uint8_t msg_type, const uint8_t *p, size_t n, int version,
                            uint64_t *deadline_ms, const uint8_t **rest, size_t *rest_len,
                            char *err, size_t errlen);
/* The same for a type osp_wire_sheddable does not know (an extension that
 * carries the prefix at version >= 2, e.g. infer_shm): at version >= 2 the
 * prefix is stripped whatever msg_type is; msg_type only names it in the
 * error text. */
int osp_wire_strip_deadline(uint8_t msg_type, const uint8_t *p, size_t n, int version,
                            uint64_t *deadline_ms, const uint8_t **rest, size_t *rest_len,
                            char *err, size_t errlen);

/* Raw pixels checked against their header. `pixels` is exactly
 * width*height*channels bytes; the seed ignores any bytes after them. */
typedef struct {
    uint32_t width, height;
    uint8_t fmt;      /* OSP_WIRE_FMT_* */
    uint8_t channels; /* 3 or 1 */
    const uint8_t *pixels;
    size_t len;
} osp_wire_image_t;

/*
 * Check w x h pixels of fmt in p[0..n). On error writes the reason as the
 * seed's imaging library worded it, WITHOUT the "raw wrap failed: " prefix
 * the callers add: "not enough image data" (RGB/BGR short), "buffer is not
 * large enough" (GRAY short), "signed integer is greater than maximum" (a
 * side >= 2^31); osprey also refuses "unknown pixel format N" (the seed
 * read it as RGB) and "width and height must be > 0" (the seed failed later,
 * in preprocessing). Sizes are checked without overflow.
 */
int osp_wire_image_check(const uint8_t *p, size_t n, uint32_t w, uint32_t h, uint8_t fmt,
                         osp_wire_image_t *img, char *err, size_t errlen);

typedef struct {
    uint8_t model_idx;
    uint8_t count;
    uint32_t frame_id;    /* 0 = untagged */
    const uint8_t *items; /* count x [u32 w][u32 h][u8 fmt][u32 size][size bytes] */
    size_t items_len;
} osp_wire_batch_t;

typedef struct {
    const uint8_t *p;
    size_t n, off;
    unsigned index, count;
} osp_wire_batch_iter_t;

void osp_wire_batch_iter_init(osp_wire_batch_iter_t *it, const osp_wire_batch_t *b);
/* 1: *img is the next item. 0: all `count` items seen (bytes after them are
 * ignored, as the seed did). Negative: "truncated batch item header",
 * "truncated batch item payload" or "raw wrap failed: <reason>"; the
 * iteration stops there. No allocation. */
int osp_wire_batch_next(osp_wire_batch_iter_t *it, osp_wire_image_t *img, char *err, size_t errlen);

/* How an error for a request is shaped on the wire. */
typedef enum {
    OSP_WIRE_ERR_PLAIN = 0,   /* {"error": text} */
    OSP_WIRE_ERR_RESULTS = 1, /* {"error": text, "results": []} (batch items) */
} osp_wire_err_shape_t;

/* One request, parsed and validated; everything points into the frame. */
typedef struct {
    uint32_t req_id;
    uint8_t msg_type;
    uint64_t deadline_ms; /* 0 = none (v1, commands, cache_frame) */
    const uint8_t *body;  /* payload after the deadline prefix */
    size_t body_len;
    osp_wire_err_shape_t err_shape; /* set on error */
    union {
        struct {
            const uint8_t *json; /* parse with osp_wire_command_parse */
            size_t len;
        } command;
        struct {
            uint8_t model_idx;
            const uint8_t *data; /* may be empty: the decoder reports that */
            size_t len;
        } jpeg;
        struct {
            uint8_t model_idx;
            osp_wire_image_t img;
        } raw;
        osp_wire_batch_t batch; /* every item already validated */
        struct {
            uint32_t frame_id;
            osp_wire_image_t img;
        } cache;
        struct {
            uint8_t model_idx;
            uint32_t frame_id;
        } cached;
    } u;
} osp_wire_request_t;

/*
 * Deadline split + the payload check for f's type at `version`, in the
 * seed's order, with its texts: "empty infer_jpeg payload", "truncated
 * infer_raw header", "raw wrap failed: …", "truncated infer_batch header",
 * the batch item errors (ERR_RESULTS shape), "truncated cache_frame header",
 * "cache_frame wrap failed: …", "truncated infer_cached header",
 * "unknown msg_type: N". An infer_batch with count 0 is valid (the seed
 * answers {"results": []}). Returns 0 or OSP_WIRE_EINVAL.
 */
int osp_wire_request_parse(const osp_wire_frame_t *f, int version, osp_wire_request_t *rq,
                           char *err, size_t errlen);

/*
 * A command payload read as Python's json.loads reads it (osp_pyjson_parse,
 * pyjson.h: its messages and positions, NaN/Infinity, duplicate keys
 * collapsed like a dict). *out is the caller's (cJSON_Delete). Text Python
 * rejects gets Python's message, to be sent as {"cmd": "unknown",
 * "status": "error", "error": text}. A JSON value that is not an object is
 * refused ("command must be a JSON object"; the seed crashed on it).
 * Returns 0, OSP_WIRE_EINVAL or OSP_WIRE_ENOMEM.
 */
int osp_wire_command_parse(const uint8_t *json, size_t len, struct cJSON **out, char *err,
                           size_t errlen);

/* ---- replies ------------------------------------------------------------------
 *
 * Reply frame: [u32 total_len][u32 req_id][JSON], total_len = 4 + len(JSON).
 * Write a frame into a jsonw buffer without copying:
 *     size_t at = osp_wire_reply_begin(w);   // 8 placeholder bytes
 *     osp_wire_json_…(w, …);                 // or any jsonw value
 *     osp_wire_reply_end(w, at, req_id);     // fills the header
 * Frames may be appended one after another to the same buffer. The JSON
 * writers below append one value at the current position (key order as the
 * seed's dicts); the osp_wire_reply_* shortcuts write a whole frame.
 */
size_t osp_wire_reply_begin(osp_jw_t *w);
/* 0, OSP_WIRE_ENOMEM (the writer ran out of memory) or OSP_WIRE_ETOOBIG
 * (the JSON is longer than 2^32 - 5 bytes). */
int osp_wire_reply_end(osp_jw_t *w, size_t at, uint32_t req_id);
/* The 8 header bytes for a JSON body of json_len bytes; ETOOBIG if too long. */
int osp_wire_reply_header(uint8_t out[8], uint32_t req_id, size_t json_len);

typedef enum {
    OSP_WIRE_SHED_DEADLINE = 0,   /* "shedReason": "deadline-expired" */
    OSP_WIRE_SHED_QUEUE_FULL = 1, /* "shedReason": "queue-full" (osprey adds it) */
    OSP_WIRE_SHED_BARE = 2,       /* the seed's queue-full record, no shedReason */
} osp_wire_shed_t;

/* {"error": msg} */
void osp_wire_json_error(osp_jw_t *w, const char *msg);
/* {"error": msg} or {"error": msg, "results": []} */
void osp_wire_json_error_shaped(osp_jw_t *w, osp_wire_err_shape_t shape, const char *msg);
/* "kind": "detections", "detections": [], "inferenceMs": 0 into an object
 * the caller opened and closes: the head of every empty record, the
 * wire's and osprey detect's alike. */
void osp_wire_json_empty_detections(osp_jw_t *w);
/* A failed inference: {"error", "kind": "detections", "detections": [], "inferenceMs": 0} */
void osp_wire_json_infer_error(osp_jw_t *w, const char *msg);
/* {"cmd": cmd, "status": "error", "error": msg} */
void osp_wire_json_cmd_error(osp_jw_t *w, const char *cmd, const char *msg);
/* {"kind": "detections", "detections": [], "inferenceMs": 0, "dropped": true[, "shedReason"]} */
void osp_wire_json_dropped(osp_jw_t *w, osp_wire_shed_t why);
/* {"results": [<dropped record> x count]} */
void osp_wire_json_dropped_batch(osp_jw_t *w, osp_wire_shed_t why, unsigned count);
/* The seed's "model not loaded" reply for a request type, each with its own
 * text and shape: single frames {"error": "Model i not loaded", "kind", …},
 * batches {"error": "Model i not loaded", "results": []}, infer_cached
 * {"error": "model i not loaded"}. */
void osp_wire_json_not_loaded(osp_jw_t *w, uint8_t msg_type, unsigned model_idx);
/* {"error": "frame <id> not in cache"} */
void osp_wire_json_not_cached(osp_jw_t *w, uint32_t frame_id);
/* {"error": "frame too large: N bytes (max M)"}: the reply before closing. */
void osp_wire_json_too_large(osp_jw_t *w, uint32_t total_len, uint32_t max_frame);
/* {"error": "frame length N is below the 5-byte header"}: the reply before closing. */
void osp_wire_json_too_short(osp_jw_t *w, uint32_t total_len);
/* {"status": "cached", "frameId", "width", "height"} */
void osp_wire_json_cached(osp_jw_t *w, uint32_t frame_id, uint32_t width, uint32_t height);

typedef struct {
    int64_t models; /* loaded */
    int64_t total;  /* slots */
    int64_t startup_ms;
    const char *runtime;
    int64_t workers;
    int protocol_version; /* the worker's own highest, not the negotiated one */
} osp_wire_ready_t;
/* {"status": "ready", "models", "total", "startupMs", "runtime", "workers", "protocolVersion"} */
void osp_wire_json_ready(osp_jw_t *w, const osp_wire_ready_t *r);

typedef struct {
    int64_t index;
    const char *model_id;
    int ok;
    int64_t elapsed_ms;
    const char *error; /* NULL: no "error" key */
} osp_wire_late_t;
/* {"event": "compile-finished-late", "index", "modelId", "ok", "elapsedMs"[, "error"]} */
void osp_wire_json_late(osp_jw_t *w, const osp_wire_late_t *e);

/* Whole frames. Each returns what osp_wire_reply_end returns. */
int osp_wire_reply_error(osp_jw_t *w, uint32_t req_id, osp_wire_err_shape_t shape, const char *msg);
int osp_wire_reply_dropped(osp_jw_t *w, uint32_t req_id, osp_wire_shed_t why);
int osp_wire_reply_event_late(osp_jw_t *w, const osp_wire_late_t *e); /* on 0xFFFFFFFF */

#endif
