/*
 * wire/peek: the infer_raw header read from a frame's first bytes, and the
 * infer_shm and stream_push extensions (see peek.h). Apart from frame.c
 * because these are read by the server's own paths (a frame prepared or
 * parked while it arrives, a frame in shared memory, a stream's features),
 * not by osp_wire_request_parse; each layout is still decoded in wire/ only.
 */
#include "wire/peek.h"

#include <inttypes.h>
#include <string.h>

#include "wire/util.h"

/* [u8 model][u32 w][u32 h][u8 fmt]: the raw header after any deadline prefix */
#define RAW_HEADER 10

int osp_wire_raw_peek(const uint8_t *frame, size_t avail, size_t frame_len, int version,
                      osp_wire_raw_head_t *h, size_t *need, char *err, size_t errlen) {
    size_t spare;
    if (!need) need = &spare;
    memset(h, 0, sizeof *h);
    *need = 0;
    if (avail > frame_len) avail = frame_len;
    if (frame_len < 9) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated infer_raw header");
    if (avail < 9) {
        *need = 9 - avail;
        return 0;
    }
    if (frame[8] != OSP_WIRE_MSG_INFER_RAW)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "not an infer_raw frame: msg_type=%u", frame[8]);
    size_t prefix = version >= 2 ? OSP_WIRE_DEADLINE_LEN : 0, head = 9 + prefix + RAW_HEADER;
    uint64_t deadline;
    const uint8_t *body;
    size_t body_len;
    if (frame_len - 9 < prefix) /* short of the prefix: the split says so without reading */
        return osp_wire_split_deadline(OSP_WIRE_MSG_INFER_RAW, frame + 9, frame_len - 9, version,
                                       &deadline, &body, &body_len, err, errlen);
    if (frame_len < head)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated infer_raw header");
    if (avail < head) {
        *need = head - avail;
        return 0;
    }
    osp_wire_split_deadline(OSP_WIRE_MSG_INFER_RAW, frame + 9, avail - 9, version, &deadline,
                            &body, &body_len, NULL, 0); /* cannot fail: the prefix is here */
    h->req_id = osp_wire_rd32(frame + 4);
    h->deadline_ms = deadline;
    h->model_idx = body[0];
    h->pixel_off = head;
    char why[64];
    if (osp_wire_image_check(frame + head, frame_len - head, osp_wire_rd32(body + 1),
                             osp_wire_rd32(body + 5), body[9], &h->img, why, sizeof why))
        return seterr(err, errlen, OSP_WIRE_EINVAL, "raw wrap failed: %s", why);
    return 1;
}

int osp_wire_shm_parse(const uint8_t *payload, size_t n, int version, osp_wire_shm_t *m, char *err,
                       size_t errlen) {
    memset(m, 0, sizeof *m);
    const uint8_t *p;
    int rc = osp_wire_strip_deadline(OSP_WIRE_MSG_INFER_SHM, payload, n, version, &m->deadline_ms,
                                     &p, &n, err, errlen);
    if (rc) return rc;
    if (n < OSP_WIRE_SHM_HEADER)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated infer_shm header");
    m->model_idx = p[0];
    m->region = osp_wire_rd32(p + 1);
    m->offset = osp_wire_rd64(p + 5);
    m->width = osp_wire_rd32(p + 13);
    m->height = osp_wire_rd32(p + 17);
    m->fmt = p[21];
    m->stride = osp_wire_rd32(p + 22);
    return 0;
}

int osp_wire_shm_check(osp_wire_shm_t *m, size_t region_size, uint32_t max_side, char *err,
                       size_t errlen) {
    if (max_side > 1u << 24) max_side = 1u << 24; /* keeps a row's bytes in a u32 */
    uint64_t w = m->width, h = m->height;
    if (w == 0 || h == 0 || w > max_side || h > max_side)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "infer_shm: bad frame size %ux%u", m->width,
                      m->height);
    uint64_t len; /* 0: the stride is shorter than a row */
    if (m->fmt == OSP_WIRE_FMT_NV12 || m->fmt == OSP_WIRE_FMT_I420) {
        if (m->stride == 0) m->stride = m->width;
        uint64_t s = m->stride, pad = s >= w ? s - w : 0;
        len = s < w ? 0 : w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2) + pad * h * 2;
    } else if (m->fmt <= OSP_WIRE_FMT_GRAY) {
        uint64_t row = w * (m->fmt == OSP_WIRE_FMT_GRAY ? 1 : 3);
        if (m->stride == 0) m->stride = (uint32_t)row;
        len = m->stride < row ? 0 : (uint64_t)m->stride * (h - 1) + row;
    } else {
        return seterr(err, errlen, OSP_WIRE_EINVAL, "infer_shm: unknown pixel format %u", m->fmt);
    }
    m->len = len;
    if (len == 0 || m->offset > region_size || len > region_size - m->offset)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "infer_shm: frame at offset %" PRIu64 " (%" PRIu64
                      " bytes) is outside region %u (%zu bytes)",
                      m->offset, len, m->region, region_size);
    return 0;
}

int osp_wire_push_parse(const uint8_t *payload, size_t n, osp_wire_push_t *sp, char *err,
                        size_t errlen) {
    memset(sp, 0, sizeof *sp);
    if (n < 4) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated stream_push header");
    sp->stream_id = osp_wire_rd32(payload);
    sp->features = payload + 4;
    sp->len = n - 4;
    return 0;
}

int osp_wire_push_check(const osp_wire_push_t *sp, int values, char *err, size_t errlen) {
    if (sp->len != (size_t)values * 4)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "stream_push: stream %u takes %d float32 values per frame, got %zu bytes",
                      sp->stream_id, values, sp->len);
    return 0;
}
