/*
 * libFuzzer target for what a Frigate peer sends over --zmq:
 * src/wire/frigate.c. Every input is read four ways:
 *
 *  - [u16 header length][header JSON][tensor bytes]: the header through
 *    osp_frigate_parse; a tensor header's size must be its shape times its
 *    dtype, within the side cap; when the rest is exactly that size it is
 *    turned into pixels in a buffer of exactly W*H*3 (an overwrite shows);
 *  - the whole input as a labelmap file: when it parses, every label is
 *    found again under an id of the same name, no id past the cap;
 *  - the input as detections (24 bytes each: i32 id, f32 score, f32 box):
 *    the reply rows fall in score order, boxes inside 0..1, zeros after;
 *  - the header text as an upload's file name: an accepted one has no
 *    separator and does not start with a dot.
 * Deterministic. See README.md.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/frame.h"
#include "wire/frigate.h"
#include "check.h"

static osp_frigate_labelmap_t lm;

static float rd_f(const uint8_t *p) {
    uint32_t u = osp_wire_rd32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void header_and_tensor(const uint8_t *data, size_t size) {
    if (size < 2) return;
    size_t hl = (size_t)data[0] | (size_t)data[1] << 8;
    if (hl > size - 2) hl = size - 2;
    uint8_t *h = malloc(hl ? hl : 1); /* exactly sized: an overread shows */
    memcpy(h, data + 2, hl);
    char err[OSP_WIRE_ERRLEN + 64];
    osp_frigate_req_t rq;
    int rc = osp_frigate_parse(h, hl, &rq, err, sizeof err);
    CHECK(rc == 0 || rc == OSP_WIRE_EINVAL);
    CHECK(strlen(err) < sizeof err);
    if (rc == 0 && rq.kind != OSP_FRIGATE_TENSOR) {
        CHECK(rq.model_name[0] && strlen(rq.model_name) < OSP_FRIGATE_NAME_MAX);
    } else if (rc == 0) {
        CHECK(rq.width >= 1 && rq.width <= OSP_FRIGATE_MAX_SIDE);
        CHECK(rq.height >= 1 && rq.height <= OSP_FRIGATE_MAX_SIDE);
        CHECK(rq.bytes == (size_t)rq.width * (size_t)rq.height * 3 * (rq.f32 ? 4 : 1));
        size_t n = size - 2 - hl;
        int ok = osp_frigate_check(&rq, n, err, sizeof err) == 0;
        CHECK(ok == (n == rq.bytes));
        if (ok) {
            uint8_t *t = malloc(n ? n : 1), *px = malloc(rq.bytes / (rq.f32 ? 4 : 1));
            memcpy(t, data + 2 + hl, n);
            osp_frigate_pixels(&rq, t, px);
            if (!rq.f32 && !rq.nchw) CHECK(memcmp(px, t, n) == 0);
            free(t);
            free(px);
        }
    }
    free(h);
}

static void labelmap(const uint8_t *data, size_t size) {
    char err[OSP_WIRE_ERRLEN + 64];
    char *text = malloc(size ? size : 1);
    memcpy(text, data, size);
    if (osp_frigate_labelmap_parse(text, size, &lm, err, sizeof err) == 0) {
        CHECK(lm.n >= 1 && lm.n <= OSP_FRIGATE_LABELS_MAX);
        for (int i = 0; i < lm.n; i++) {
            CHECK(strlen(lm.name[i]) < OSP_FRIGATE_LABEL_LEN);
            if (!lm.key[i][0]) continue;
            int id = osp_frigate_label_id(&lm, lm.name[i]);
            CHECK(id >= 0 && id <= i && strcmp(lm.key[id], lm.key[i]) == 0);
        }
    } else {
        CHECK(lm.n == 0);
    }
    free(text);
}

static void rows(const uint8_t *data, size_t size) {
    int n = (int)(size / 24);
    osp_frigate_det_t *d = malloc((size_t)(n ? n : 1) * sizeof *d);
    for (int i = 0; i < n; i++) {
        const uint8_t *p = data + 24 * (size_t)i;
        d[i] = (osp_frigate_det_t){.id = (int32_t)osp_wire_rd32(p),
                                   .score = rd_f(p + 4),
                                   .x1 = rd_f(p + 8),
                                   .y1 = rd_f(p + 12),
                                   .x2 = rd_f(p + 16),
                                   .y2 = rd_f(p + 20)};
    }
    int w = size ? data[0] : 0, h = size > 1 ? data[1] : 0;
    uint8_t out[OSP_FRIGATE_REPLY_BYTES];
    int kept = osp_frigate_rows(d, n, w, h, out);
    CHECK(kept >= 0 && kept <= OSP_FRIGATE_ROWS && kept <= n);
    for (int r = 0; r < OSP_FRIGATE_ROWS; r++) {
        const uint8_t *row = out + (size_t)r * 24;
        float score = rd_f(row + 4);
        if (r >= kept) {
            for (int k = 0; k < 24; k++) CHECK(row[k] == 0);
            continue;
        }
        CHECK(rd_f(row) >= 0 && score > 0 && score <= 1);
        if (r) CHECK(score <= rd_f(row - 24 + 4));
        for (int k = 2; k < 6; k++) CHECK(rd_f(row + 4 * k) >= 0 && rd_f(row + 4 * k) <= 1);
    }
    free(d);
}

static void name(const uint8_t *data, size_t size) {
    char s[OSP_FRIGATE_NAME_MAX + 8];
    size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
    memcpy(s, data, n);
    s[n] = '\0';
    if (osp_frigate_name_ok(s))
        CHECK(!strchr(s, '/') && s[0] != '.' && strlen(s) < OSP_FRIGATE_NAME_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    header_and_tensor(data, size);
    labelmap(data, size);
    rows(data, size);
    name(data, size);
    return 0;
}
