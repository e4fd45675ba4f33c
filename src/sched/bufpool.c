/* Frame buffers kept for reuse; see bufpool.h. Each buffer carries a header
 * just before the frame: its capacity and how far the frame sits from the
 * start of the allocation, which osp_buf_align can change. */
#include "sched/bufpool.h"

#include <stdlib.h>
#include <string.h>

#define KEEP_MAX 64
#define BUF_SLACK 64

typedef struct {
    size_t cap;   /* bytes the frame may use */
    size_t shift; /* frame start - (allocation start + BUF_HDR), < BUF_SLACK */
} bufhdr_t;
#define BUF_HDR sizeof(bufhdr_t)

struct osp_bufpool {
    uint8_t *bufs[KEEP_MAX];
    size_t caps[KEEP_MAX];
    int n, keep;
};

static bufhdr_t buf_hdr(const uint8_t *buf) {
    bufhdr_t h;
    memcpy(&h, buf - BUF_HDR, sizeof h);
    return h;
}

static uint8_t *buf_base(const uint8_t *buf) {
    return (uint8_t *)buf - BUF_HDR - buf_hdr(buf).shift;
}

/* The frame start within the allocation at base for a given shift. */
static uint8_t *buf_place(uint8_t *base, size_t cap, size_t shift) {
    bufhdr_t h = {cap, shift};
    memcpy(base + shift, &h, sizeof h);
    return base + shift + BUF_HDR;
}

/* The shift that puts byte `at` of a frame on a 64-byte boundary. */
static size_t shift_for(const uint8_t *base, size_t at) {
    return (BUF_SLACK - ((uintptr_t)(base + BUF_HDR + at) % BUF_SLACK)) % BUF_SLACK;
}

osp_bufpool_t *osp_bufpool_new(int keep) {
    osp_bufpool_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->keep = keep < 0 ? 0 : keep > KEEP_MAX ? KEEP_MAX : keep;
    return p;
}

void osp_bufpool_free(osp_bufpool_t *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(buf_base(p->bufs[i]));
    free(p);
}

int osp_bufpool_kept(const osp_bufpool_t *p) { return p->n; }

uint8_t *osp_buf_get(osp_bufpool_t *p, size_t need) {
    /* the smallest that fits; among equals the one put back last, whose
     * pages are the most likely still in cache */
    int best = -1;
    for (int i = p->n - 1; i >= 0; i--)
        if (p->caps[i] >= need && (best < 0 || p->caps[i] < p->caps[best])) best = i;
    if (best >= 0) {
        uint8_t *b = p->bufs[best];
        p->bufs[best] = p->bufs[p->n - 1];
        p->caps[best] = p->caps[p->n - 1];
        p->n--;
        /* a buffer osp_buf_align moved comes back to the aligned start */
        uint8_t *base = buf_base(b);
        return buf_place(base, buf_hdr(b).cap, shift_for(base, 0));
    }
    uint8_t *base;
    if (need > SIZE_MAX - BUF_HDR - BUF_SLACK || !(base = malloc(need + BUF_HDR + BUF_SLACK)))
        return NULL;
    return buf_place(base, need, shift_for(base, 0));
}

uint8_t *osp_buf_align(uint8_t *buf, size_t used, size_t at) {
    uint8_t *base = buf_base(buf);
    bufhdr_t h = buf_hdr(buf);
    size_t shift = shift_for(base, at);
    if (shift == h.shift) return buf;
    uint8_t *to = base + shift + BUF_HDR;
    memmove(to, buf, used);
    return buf_place(base, h.cap, shift);
}

void osp_buf_put(osp_bufpool_t *p, uint8_t *buf) {
    if (!buf) return;
    size_t cap = buf_hdr(buf).cap;
    if (p->n < p->keep) {
        p->bufs[p->n] = buf;
        p->caps[p->n++] = cap;
        return;
    }
    /* full: keep the larger of it and the smallest kept */
    int small = -1;
    for (int i = 0; i < p->n; i++)
        if (small < 0 || p->caps[i] < p->caps[small]) small = i;
    if (small >= 0 && p->caps[small] < cap) {
        free(buf_base(p->bufs[small]));
        p->bufs[small] = buf;
        p->caps[small] = cap;
    } else {
        free(buf_base(buf));
    }
}
