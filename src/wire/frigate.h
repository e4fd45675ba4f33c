/*
 * wire/frigate: Frigate's `zmq` detector protocol, as pure functions: the
 * JSON header that starts every request (a model handshake, a model
 * upload, or a tensor to detect on), the tensor checked against its bytes
 * and turned into interleaved pixels, the 20 x 6 float32 rows of the
 * reply, the handshake's answers, and Frigate's labelmap (its class ids,
 * looked up by label name). No I/O, no threads, no state that changes:
 * the server's zmq transport (server/zmq.c) calls these on whichever
 * thread holds the bytes. docs/frigate.md says what goes over the socket.
 *
 * Errors: negative OSP_WIRE_E* (wire/frame.h) and the reason in the
 * caller's (err, errlen).
 */
#ifndef OSP_WIRE_FRIGATE_H
#define OSP_WIRE_FRIGATE_H

#include <stddef.h>
#include <stdint.h>

#define OSP_FRIGATE_ROWS 20
#define OSP_FRIGATE_REPLY_BYTES (OSP_FRIGATE_ROWS * 6 * 4)
/* the header part of every reply (Frigate reshapes the rows by it) */
#define OSP_FRIGATE_REPLY_HEADER "{\"shape\": [20, 6], \"dtype\": \"float32\"}"
#define OSP_FRIGATE_HEADER_MAX 4096 /* a longer header is refused unread */
#define OSP_FRIGATE_NAME_MAX 128    /* model names, with their terminator */
#define OSP_FRIGATE_MAX_SIDE 4096   /* tensor sides Frigate's regions never exceed */
#define OSP_FRIGATE_LABELS_MAX 1024 /* labelmap ids 0..1023 */
#define OSP_FRIGATE_LABEL_LEN 48    /* label names, with their terminator */

typedef enum {
    OSP_FRIGATE_TENSOR = 0,    /* [header, tensor bytes]: detect */
    OSP_FRIGATE_MODEL_REQUEST, /* {"model_request": true, "model_name": N} */
    OSP_FRIGATE_MODEL_DATA,    /* [{"model_data": true, "model_name": N}, file bytes] */
} osp_frigate_kind_t;

/* One request header, parsed. */
typedef struct {
    osp_frigate_kind_t kind;
    char model_name[OSP_FRIGATE_NAME_MAX]; /* MODEL_REQUEST, MODEL_DATA */
    /* TENSOR: shape [1,H,W,3] (NHWC) or [1,3,H,W] (NCHW), the leading 1
     * optional; dtype uint8 or float32 */
    int width, height;
    int nchw;
    int f32;
    size_t bytes; /* what the tensor part must hold: W*H*3*(1 or 4) */
} osp_frigate_req_t;

/* Parse a request's first part (JSON, at most OSP_FRIGATE_HEADER_MAX
 * bytes). A header is a handshake when it has "model_request": true, an
 * upload when it has "model_data": true (both need a string
 * "model_name"), else a tensor header ("shape", "dtype"; "model_type" is
 * not needed: the model served decides how its outputs are decoded). */
int osp_frigate_parse(const uint8_t *json, size_t len, osp_frigate_req_t *rq, char *err,
                      size_t errlen);

/* Whether a tensor part of n bytes is what rq's shape and dtype need. */
int osp_frigate_check(const osp_frigate_req_t *rq, size_t n, char *err, size_t errlen);

/* The tensor (rq->bytes at data, any alignment) as W*H*3 interleaved
 * pixels in dst, in the tensor's own channel order. uint8 NHWC is the
 * pixels already (callers use it in place); NCHW is interleaved; float32
 * is rounded and clamped to 0..255, after scaling by 255 when every value
 * is at most 1 (Frigate's "float" input: 0..1; "float_denorm": 0..255). */
void osp_frigate_pixels(const osp_frigate_req_t *rq, const uint8_t *data, uint8_t *dst);

/* One detection to report: a Frigate class id (negative: left out), its
 * score, and its box in pixels of the w x h frame received. */
typedef struct {
    int id;
    float score;
    float x1, y1, x2, y2;
} osp_frigate_det_t;

/* The reply rows: the OSP_FRIGATE_ROWS best of dets (id >= 0, a score
 * above 0) in falling score order, each [id, score, y_min, x_min, y_max,
 * x_max] with the box divided by the frame's sides and clamped to 0..1,
 * then zero rows; little-endian float32. Returns the rows that are
 * detections. */
int osp_frigate_rows(const osp_frigate_det_t *dets, int n, int w, int h,
                     uint8_t out[OSP_FRIGATE_REPLY_BYTES]);

/* The handshake's answers as one JSON text, the way Python's json.dumps
 * writes them: {"model_available": a, "model_loaded": l} and
 * {"model_saved": s, "model_loaded": l}. Returns its length (< cap; 64
 * bytes are always enough). */
size_t osp_frigate_answer_available(int available, int loaded, char *buf, size_t cap);
size_t osp_frigate_answer_saved(int saved, int loaded, char *buf, size_t cap);

/* Whether an uploaded model's name may become a file name inside a
 * directory: 1..127 characters of [A-Za-z0-9._-], not starting with a
 * dot (so never "." or ".." or hidden), no separator. */
int osp_frigate_name_ok(const char *name);

/* Frigate's labelmap: the label of each id (empty: none). */
typedef struct {
    int n; /* one past the highest id named */
    char name[OSP_FRIGATE_LABELS_MAX][OSP_FRIGATE_LABEL_LEN];
    char key[OSP_FRIGATE_LABELS_MAX][OSP_FRIGATE_LABEL_LEN]; /* each name as compared */
} osp_frigate_labelmap_t;

/* Frigate's default: the COCO-91 ids minus one (0 person, 1 bicycle, 2
 * car, 3 motorcycle, 5 bus, 7 truck, 15 bird, 16 cat, 17 dog, ...). */
void osp_frigate_labelmap_default(osp_frigate_labelmap_t *lm);
/* A labelmap file as Frigate reads one: "ID  label" lines when the first
 * line starts with a number, else one label a line, ids counting from 0.
 * Blank lines are skipped; a repeated id keeps its last label. Errors: an
 * id out of range, a line without a label, a "ID" line after plain ones,
 * no labels at all. */
int osp_frigate_labelmap_parse(const char *text, size_t len, osp_frigate_labelmap_t *lm, char *err,
                               size_t errlen);
/* The id of a model's label: the lowest id whose label is the same name
 * (case, '_' and surrounding blanks ignored), else through a short list of
 * other data sets' names for the same things (Open Images' "Cattle" is
 * "cow", "Computer monitor" is "tv", ...); -1 when there is none. */
int osp_frigate_label_id(const osp_frigate_labelmap_t *lm, const char *label);

/* 1 when a --zmq endpoint reaches this machine only: ipc://PATH, or
 * tcp://HOST:PORT whose HOST is a loopback address (127.0.0.0/8, [::1],
 * localhost). Anything else — *, 0.0.0.0, an interface's name or
 * address — is 0: reachable from other machines. */
int osp_frigate_endpoint_is_local(const char *ep);

#endif
