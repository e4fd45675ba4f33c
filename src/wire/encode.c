/*
 * wire/encode: request frames written the way osp_wire_scan,
 * osp_wire_request_parse and peek.h read them (see encode.h). Each type's
 * fixed fields are written here and nowhere else in osprey.
 */
#include "wire/encode.h"

#include <string.h>

#include "wire/frame.h"

/* The frame's header up to and including its deadline prefix, for `fixed`
 * bytes of the type's own header and `bulk` bytes after them, copied when
 * `data` is given. The offset of the type's fields, or 0 when the frame
 * does not fit cap or a u32 total_len. */
static size_t begin(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint8_t type, int prefixed,
                    size_t fixed, const void *data, size_t bulk) {
    size_t at = 9 + (prefixed && r->version >= 2 ? OSP_WIRE_DEADLINE_LEN : 0);
    size_t head = at + fixed;
    if (bulk > UINT32_MAX - (head - 4)) return 0;
    if (cap < head || (data && cap - head < bulk)) return 0;
    osp_wire_wr32(out, (uint32_t)(head - 4 + bulk));
    osp_wire_wr32(out + 4, r->req_id);
    out[8] = type;
    if (at > 9) osp_wire_wr64(out + 9, r->deadline_ms);
    if (data && bulk) memcpy(out + head, data, bulk);
    return at;
}

/* Bytes written: the header, and the bulk when it was copied. */
static size_t written(size_t at, size_t fixed, const void *data, size_t bulk) {
    if (!at) return 0;
    return at + fixed + (data ? bulk : 0);
}

size_t osp_wire_encode_command(uint8_t *out, size_t cap, const osp_wire_req_t *r, const char *json,
                               size_t len) {
    size_t at = begin(out, cap, r, OSP_WIRE_MSG_COMMAND, 0, 0, json, len);
    return written(at, 0, json, len);
}

size_t osp_wire_encode_jpeg(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint8_t model,
                            const void *jpeg, size_t len) {
    size_t at = begin(out, cap, r, OSP_WIRE_MSG_INFER_JPEG, 1, 1, jpeg, len);
    if (at) out[at] = model;
    return written(at, 1, jpeg, len);
}

/* [u32 w][u32 h][u8 fmt] at p */
static void put_dims(uint8_t *p, uint32_t w, uint32_t h, uint8_t fmt) {
    osp_wire_wr32(p, w);
    osp_wire_wr32(p + 4, h);
    p[8] = fmt;
}

size_t osp_wire_encode_raw(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint8_t model,
                           uint32_t w, uint32_t h, uint8_t fmt, const void *pixels, size_t len) {
    size_t at = begin(out, cap, r, OSP_WIRE_MSG_INFER_RAW, 1, 10, pixels, len);
    if (at) {
        out[at] = model;
        put_dims(out + at + 1, w, h, fmt);
    }
    return written(at, 10, pixels, len);
}

size_t osp_wire_encode_batch(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint8_t model,
                             uint8_t count, uint32_t frame_id, const void *items, size_t len) {
    size_t at = begin(out, cap, r, OSP_WIRE_MSG_INFER_BATCH, 1, 6, items, len);
    if (at) {
        out[at] = model;
        out[at + 1] = count;
        osp_wire_wr32(out + at + 2, frame_id);
    }
    return written(at, 6, items, len);
}

size_t osp_wire_encode_item(uint8_t *out, size_t cap, uint32_t w, uint32_t h, uint8_t fmt,
                            const void *pixels, uint32_t size) {
    if (cap < 13 || (pixels && cap - 13 < size)) return 0;
    put_dims(out, w, h, fmt);
    osp_wire_wr32(out + 9, size);
    if (pixels && size) memcpy(out + 13, pixels, size);
    return 13 + (pixels ? (size_t)size : 0);
}

size_t osp_wire_encode_cache_frame(uint8_t *out, size_t cap, const osp_wire_req_t *r,
                                   uint32_t frame_id, uint32_t w, uint32_t h, uint8_t fmt,
                                   const void *pixels, size_t len) {
    size_t at = begin(out, cap, r, OSP_WIRE_MSG_CACHE_FRAME, 0, 13, pixels, len);
    if (at) {
        osp_wire_wr32(out + at, frame_id);
        put_dims(out + at + 4, w, h, fmt);
    }
    return written(at, 13, pixels, len);
}

size_t osp_wire_encode_cached(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint8_t model,
                              uint32_t frame_id) {
    size_t at = begin(out, cap, r, OSP_WIRE_MSG_INFER_CACHED, 1, 5, NULL, 0);
    if (at) {
        out[at] = model;
        osp_wire_wr32(out + at + 1, frame_id);
    }
    return written(at, 5, NULL, 0);
}

size_t osp_wire_encode_shm(uint8_t *out, size_t cap, const osp_wire_req_t *r, const osp_wire_shm_t *m) {
    size_t at = begin(out, cap, r, OSP_WIRE_MSG_INFER_SHM, 1, OSP_WIRE_SHM_HEADER, NULL, 0);
    if (at) {
        uint8_t *p = out + at;
        p[0] = m->model_idx;
        osp_wire_wr32(p + 1, m->region);
        osp_wire_wr64(p + 5, m->offset);
        put_dims(p + 13, m->width, m->height, m->fmt);
        osp_wire_wr32(p + 22, m->stride);
    }
    return written(at, OSP_WIRE_SHM_HEADER, NULL, 0);
}

size_t osp_wire_encode_push(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint32_t stream_id,
                            const void *features, size_t len) {
    size_t at = begin(out, cap, r, OSP_WIRE_MSG_STREAM_PUSH, 0, 4, features, len);
    if (at) osp_wire_wr32(out + at, stream_id);
    return written(at, 4, features, len);
}
