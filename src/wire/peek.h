/*
 * wire/peek: the layouts a server reads before, or beside, the generic
 * request parser (osp_wire_request_parse):
 *  - the infer_raw header from the first bytes of a frame, as a server has
 *    them after one read (to size, park or prepare the frame while the
 *    pixels are still arriving);
 *  - osprey's extensions the seed did not have: infer_shm (0x06) and
 *    stream_push (0x07).
 * Pure functions like frame.h's: no I/O, no allocation, and every pointer
 * they fill points INTO the caller's bytes. Error texts are the ones the
 * server has always sent for these messages. Negative OSP_WIRE_E* and the
 * text in the caller's (err, errlen), as in frame.h.
 */
#ifndef OSP_WIRE_PEEK_H
#define OSP_WIRE_PEEK_H

#include <stddef.h>
#include <stdint.h>

#include "wire/frame.h"

/* ---- infer_raw, from a frame's first bytes --------------------------------------
 *
 * Frame: [u32 total_len][u32 req_id][u8 0x02][u64 deadline_ms, v2 only]
 *        [u8 model][u32 w][u32 h][u8 fmt][pixels]
 */

typedef struct {
    uint32_t req_id;
    uint64_t deadline_ms; /* 0 = none (and always at v1) */
    uint8_t model_idx;
    osp_wire_image_t img; /* width, height, fmt, channels and len, checked
                             * against the frame's length; img.pixels is
                             * frame + pixel_off, of which only the bytes
                             * below `avail` were given */
    size_t pixel_off;     /* where the pixels start, from the frame's first
                             * byte: 19 at v1, 27 at v2 */
} osp_wire_raw_head_t;

/*
 * Read the header of an infer_raw frame from its first `avail` bytes.
 * frame_len is the whole frame's length as osp_wire_scan reports it
 * (4 + max(total_len, 5)); bytes given past it are ignored.
 *  1: *h is filled and the pixels the header declares fit the frame, as
 *     osp_wire_request_parse would find on the whole frame.
 *  0: avail is short of the header; at least *need (>= 1) more bytes
 *     before the answer can change. Nothing in *h is meaningful.
 *  OSP_WIRE_EINVAL: the frame is not an infer_raw frame ("not an
 *     infer_raw frame: msg_type=N"), or it fails as osp_wire_request_parse
 *     fails on the whole frame, with the same text ("truncated deadline
 *     prefix …", "truncated infer_raw header", "raw wrap failed: …").
 *     Errors that the lengths alone decide are reported from 9 bytes on.
 * need may be NULL.
 */
int osp_wire_raw_peek(const uint8_t *frame, size_t avail, size_t frame_len, int version,
                      osp_wire_raw_head_t *h, size_t *need, char *err, size_t errlen);

/* ---- infer_shm (0x06) -------------------------------------------------------------
 *
 * Payload: [u64 deadline_ms, v2 only][u8 model][u32 region][u64 offset]
 *          [u32 w][u32 h][u8 fmt][u32 stride]; stride 0 = rows packed.
 * Read in two steps, because the server looks the region up in between
 * (its "shm region N not registered" comes before the size checks).
 */

#define OSP_WIRE_SHM_HEADER 26 /* bytes after the deadline prefix */

typedef struct {
    uint64_t deadline_ms; /* 0 = none */
    uint8_t model_idx;
    uint32_t region;
    uint64_t offset; /* of the first pixel, in the region */
    uint32_t width, height;
    uint8_t fmt;     /* OSP_WIRE_FMT_* once checked */
    uint32_t stride; /* as sent; osp_wire_shm_check makes 0 the packed stride */
    uint64_t len;    /* bytes the frame spans in the region (set by the check) */
} osp_wire_shm_t;

/* The deadline prefix (at version >= 2) and the header: "truncated
 * deadline prefix on msg_type=6 (N bytes, need 8)", "truncated infer_shm
 * header". Bytes after the header are ignored. */
int osp_wire_shm_parse(const uint8_t *payload, size_t n, int version, osp_wire_shm_t *m, char *err,
                       size_t errlen);

/*
 * The frame against its region of region_size bytes, sides at most
 * max_side (the caller's image limit, OSP_IMG_MAX_SIDE; values above 2^24
 * count as 2^24): "infer_shm: bad frame size WxH", "infer_shm: unknown
 * pixel format N", "infer_shm: frame at offset O (L bytes) is outside
 * region R (S bytes)" (also for a stride shorter than a row, with L 0).
 * Sets m->stride (0 becomes the packed row) and m->len; sizes are computed
 * without overflow.
 */
int osp_wire_shm_check(osp_wire_shm_t *m, size_t region_size, uint32_t max_side, char *err,
                       size_t errlen);

/* ---- stream_push (0x07) -----------------------------------------------------------
 *
 * Payload: [u32 stream id][float32 features, little-endian]; no deadline.
 */

typedef struct {
    uint32_t stream_id;
    const uint8_t *features; /* into the payload; not aligned for float */
    size_t len;              /* bytes */
} osp_wire_push_t;

/* "truncated stream_push header" when the id is missing. */
int osp_wire_push_parse(const uint8_t *payload, size_t n, osp_wire_push_t *sp, char *err,
                        size_t errlen);

/* The features against the stream's frame of `values` float32s: "stream_push:
 * stream N takes V float32 values per frame, got L bytes". */
int osp_wire_push_check(const osp_wire_push_t *sp, int values, char *err, size_t errlen);

#endif
