/*
 * wire/encode: request frames as a host writes them, for osprey's own
 * clients (bench/loadgen, tests) so that no byte layout is spelled out
 * outside wire/. The inverse of osp_wire_request_parse and peek.h.
 *
 * Frame: [u32 total_len][u32 req_id][u8 msg_type][payload], with the
 * [u64 deadline_ms] prefix first in the payload of the types that carry
 * one (osp_wire_sheddable, and infer_shm) at wire version >= 2.
 *
 * Each function writes into the caller's out[0..cap) and returns the
 * bytes written, or 0 when they do not fit cap or the frame would be
 * longer than total_len can say. A type with a bulk part (JSON, JPEG,
 * pixels, batch items, features) takes it as a pointer and its length:
 * given, it is copied after the header and the whole frame written; NULL,
 * only the header is written (at most OSP_WIRE_HEAD_MAX bytes), its
 * total_len counting the bulk that the caller sends after it (with
 * writev or vmsplice, say). No allocation.
 */
#ifndef OSP_WIRE_ENCODE_H
#define OSP_WIRE_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "wire/peek.h"

#define OSP_WIRE_HEAD_MAX 48 /* the longest header below: infer_shm at v2, 43 bytes */

/* What every request header carries. */
typedef struct {
    uint32_t req_id;
    int version;          /* the negotiated wire version: >= 2 writes the deadline prefix */
    uint64_t deadline_ms; /* absolute, wall-clock ms since the epoch; 0 = none */
} osp_wire_req_t;

/* 0x00: [JSON]; never a deadline. */
size_t osp_wire_encode_command(uint8_t *out, size_t cap, const osp_wire_req_t *r, const char *json,
                               size_t len);
/* 0x01: [model][JPEG bytes] */
size_t osp_wire_encode_jpeg(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint8_t model,
                            const void *jpeg, size_t len);
/* 0x02: [model][u32 w][u32 h][u8 fmt][pixels]; len is what follows the
 * header (normally osp_wire_image_check's size for w, h, fmt). */
size_t osp_wire_encode_raw(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint8_t model,
                           uint32_t w, uint32_t h, uint8_t fmt, const void *pixels, size_t len);
/* 0x03: [model][u8 count][u32 frame_id][items]; items as osp_wire_encode_item writes them. */
size_t osp_wire_encode_batch(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint8_t model,
                             uint8_t count, uint32_t frame_id, const void *items, size_t len);
/* One infer_batch item: [u32 w][u32 h][u8 fmt][u32 size][size pixel bytes]. */
size_t osp_wire_encode_item(uint8_t *out, size_t cap, uint32_t w, uint32_t h, uint8_t fmt,
                            const void *pixels, uint32_t size);
/* 0x04: [u32 frame_id][u32 w][u32 h][u8 fmt][pixels]; never a deadline. */
size_t osp_wire_encode_cache_frame(uint8_t *out, size_t cap, const osp_wire_req_t *r,
                                   uint32_t frame_id, uint32_t w, uint32_t h, uint8_t fmt,
                                   const void *pixels, size_t len);
/* 0x05: [model][u32 frame_id]; no bulk. */
size_t osp_wire_encode_cached(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint8_t model,
                              uint32_t frame_id);
/* 0x06: the osp_wire_shm_t fields (its deadline_ms and len are not read:
 * the deadline is r's); no bulk. */
size_t osp_wire_encode_shm(uint8_t *out, size_t cap, const osp_wire_req_t *r, const osp_wire_shm_t *m);
/* 0x07: [u32 stream id][float32 features, little-endian]; never a deadline. */
size_t osp_wire_encode_push(uint8_t *out, size_t cap, const osp_wire_req_t *r, uint32_t stream_id,
                            const void *features, size_t len);

#endif
