/*
 * A raw frame prepared as it is read.
 *
 * Reading a 1920x1080 RGB frame whole means copying 6 MB out of the
 * connection into a buffer that no cache holds, then reading it all again
 * to resize it, on another thread, after the last byte is in. For a frame
 * that will probably run (osp_sched_likely_shed says no), the I/O thread instead
 * reads the pixels up to a pipeful (1 MiB) at a time into one buffer that
 * stays in cache, and hands each batch of whole rows to the model's
 * row-by-row preparation (osp_prep_stream_*). The frame never exists whole
 * in memory; when its last byte is read its tensor is ready, and it goes
 * straight to a predict worker.
 *
 * A frame that is already whole in the connection's read buffer (one of
 * 64 KiB up to the staging buffer's 256 KiB, which conn.c reads whole) is
 * prepared right there: no copy into a frame buffer or the ring, no
 * hand-over to a preparing thread.
 *
 * What is not taken here is read whole as before: frames likely to be shed
 * before they run (osp_sched_likely_shed; they may be parked, spill.c, and are
 * then prepared the same way if they run, srv_rows_parked), formats
 * other than RGB and BGR, text models, models with a cascade (its steps
 * crop from the whole frame), window batching, anything that fails
 * a check (the whole frame then gets the usual error reply).
 *
 * Reads land at a 64-byte boundary where the connection's pipe was just
 * emptied, and contiguously otherwise, for the reason osp_buf_align gives.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/ctxpool.h"
#include "base/clock.h"
#include "sched/gate.h"
#include "sched/sched.h"
#include "server/core/account.h"
#include "server/pipe/conn.h"
#include "server/core/dispatch.h"
#include "server/core/exec.h"
#include "server/pipe/reply.h"
#include "server/pipe/ingest.h"
#include "server/core/ledger.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "wire/peek.h"

/* Bytes one read may bring in: all a full pipe holds. The host's writer is
 * woken by each read that frees room in its full pipe; reading a pipeful
 * at a time wakes it once a megabyte, and it refills the pipe while the
 * rows just read are prepared. Measured with plain reads (before relay.c):
 * with 256 KiB reads, a buffer that stays in a core's 512 KiB L2, the
 * writer spent a third of its time spinning on the pipe's lock while the
 * next read copied; a vmsplice host used 0.13-0.18 of a core for UltraFace
 * at 1920x1080 instead of 0.09-0.12, and served frames/s was higher with
 * the pipeful in 9 of 11 side-by-side pairs of runs (median +3 %). */
#define RING_CAP SRV_PIPE_BYTES
#define ALIGN 64

struct srv_rows {
    osp_prep_stream_t *ps;
    uint8_t *ring;
    size_t lo, hi; /* bytes in the ring not yet handed over */
    size_t left;   /* bytes of the frame not yet read */
    size_t row_bytes;
    int rows_left; /* rows not yet handed over; the bytes after them are skipped */
    size_t phase;  /* where the next read should land, mod ALIGN */
    /* the request */
    uint32_t req_id;
    uint64_t deadline_ms;
    int idx;
    uint32_t w, h;
    uint8_t fmt;
    loaded_t *model; /* the model it is prepared for (a reference) */
    osp_infer_ctx_t *ctx;
    double prep_ms;
};

/* A frame is under way while the stream holds its context. */
int srv_rows_active(const srv_rows_t *r) { return r && r->ctx; }

static void rows_drop(server_t *s, srv_rows_t *r) {
    if (!r->ctx) return;
    osp_ctxpool_put(s->ctxs, r->ctx);
    srv_loaded_release(r->model);
    r->ctx = NULL;
    r->model = NULL;
}

void srv_rows_free(server_t *s, srv_rows_t *r) {
    if (!r) return;
    rows_drop(s, r);
    osp_prep_stream_free(r->ps);
    free(r->ring);
    free(r);
}

/* Hand the whole rows in the ring to the preparation, then move what is
 * left (part of a row) so that the next read lands at the wanted phase. */
static void rows_consume(srv_rows_t *r) {
    size_t have = r->hi - r->lo;
    int n = (int)(have / r->row_bytes);
    if (n > r->rows_left) n = r->rows_left;
    if (n > 0) {
        struct timespec t0;
        osp_now(&t0);
        osp_prep_stream_rows(r->ps, r->ring + r->lo, r->row_bytes, n);
        r->prep_ms += osp_ms_since(&t0);
        r->lo += (size_t)n * r->row_bytes;
        r->rows_left -= n;
    }
    if (r->rows_left == 0)
        r->lo = r->hi; /* bytes after the pixels: ignored, as the protocol says */
    size_t keep = r->hi - r->lo;
    size_t at = (r->phase + ALIGN - keep % ALIGN) % ALIGN;
    if (at != r->lo) memmove(r->ring + at, r->ring + r->lo, keep);
    r->lo = at;
    r->hi = at + keep;
}

static void rows_done(server_t *s, conn_t *c, srv_rows_t *r);

int srv_rows_begin(server_t *s, conn_t *c, srv_rows_t **rp, const uint8_t *p, size_t avail,
                   size_t frame_len) {
    if (!srv_conn_handshaken(c) || s->stopping || s->set.batch_mode != OSP_WIRE_BATCH_NONE)
        return 0;
    osp_wire_raw_head_t hd;
    if (osp_wire_raw_peek(p, avail, frame_len, srv_conn_version(c), &hd, NULL, NULL, 0) != 1)
        return 0;
    if (avail > frame_len) avail = frame_len;
    size_t head = hd.pixel_off; /* bytes before the pixels */
    uint64_t deadline = hd.deadline_ms;
    if (osp_gate_expired(deadline)) return 0;
    osp_wire_image_t img = hd.img;
    if (img.fmt != OSP_WIRE_FMT_RGB && img.fmt != OSP_WIRE_FMT_BGR) return 0;
    int idx = hd.model_idx;
    loaded_t *l = srv_slot(s, idx);
    size_t row_bytes = (size_t)img.width * 3, got = avail - head; /* pixels already read */
    int whole = avail == frame_len; /* all here: prepared from where it lies */
    if (!l || row_bytes > RING_CAP / 4 || (!whole && got > RING_CAP)) return 0;
    if (srv_loaded_model(l)->then) return 0; /* read whole: its cascade crops from it */
    if (osp_sched_likely_shed(s->sched, idx))
        return 0; /* not worth preparing: it is read whole, or parked */

    srv_rows_t *r = *rp;
    if (!r) {
        if (!(r = calloc(1, sizeof *r))) return 0;
        *rp = r;
    }
    if (!r->ps && !(r->ps = osp_prep_stream_new())) return 0;
    if (!whole && !r->ring && !(r->ring = aligned_alloc(ALIGN, RING_CAP + ALIGN))) return 0;
    osp_infer_ctx_t *ctx = osp_ctxpool_get(s->ctxs);
    if (!ctx) return 0;
    char err[256];
    if (osp_model_prepare_rows_begin(srv_loaded_model(l), ctx, r->ps, (int)img.width,
                                     (int)img.height, (osp_pixfmt_t)img.fmt, err, sizeof err)) {
        osp_ctxpool_put(s->ctxs, ctx);
        return 0;
    }
    r->model = srv_loaded_ref(l);
    r->ctx = ctx;
    r->idx = idx;
    r->req_id = hd.req_id;
    r->deadline_ms = deadline;
    r->w = img.width;
    r->h = img.height;
    r->fmt = img.fmt;
    r->row_bytes = row_bytes;
    r->rows_left = (int)img.height;
    r->prep_ms = 0;
    r->left = frame_len - avail;
    srv_stat_add(s, SRV_ST_PREPARED_AS_READ, 1);
    if (whole) {
        struct timespec t0;
        osp_now(&t0);
        osp_prep_stream_rows(r->ps, p + head, row_bytes, r->rows_left);
        r->prep_ms = osp_ms_since(&t0);
        r->rows_left = 0;
        rows_done(s, c, r);
        return 1;
    }
    /* the pixels already read come first; the read that brought them most
     * likely emptied the pipe, so what follows starts on a fresh page */
    r->phase = 0;
    r->lo = 0;
    r->hi = got;
    memcpy(r->ring, p + head, got);
    rows_consume(r);
    return 1;
}

/* Every byte is in: finish the tensor and submit the frame. */
static void rows_done(server_t *s, conn_t *c, srv_rows_t *r) {
    char err[256];
    srv_stat_add(s, SRV_ST_INFER_RAW, 1);
    srv_account_received(s, r->idx);
    if (osp_model_prepare_rows_end(r->ctx, r->ps, (int)r->w, (int)r->h, r->prep_ms, err, sizeof err)) {
        rows_drop(s, r);
        srv_reply_error(s, c, r->req_id, SRV_ERR_INFER, err);
        srv_account(s, r->idx, 1, SRV_OUTCOME_FAILED(SRV_FAIL_FAILED), 0);
        return;
    }
    osp_wire_request_t rq;
    memset(&rq, 0, sizeof rq);
    rq.req_id = r->req_id;
    rq.msg_type = OSP_WIRE_MSG_INFER_RAW;
    rq.deadline_ms = r->deadline_ms;
    rq.u.raw.model_idx = (uint8_t)r->idx;
    rq.u.raw.img.width = r->w;
    rq.u.raw.img.height = r->h;
    rq.u.raw.img.fmt = r->fmt;
    rq.u.raw.img.channels = 3;
    rq.u.raw.img.len = (size_t)r->w * r->h * 3; /* pixels: none kept, the tensor is made */
    frame_job_t *j = srv_pipe_frame_job(s, c, &srv_pipe_tp, &rq, NULL, 0);
    if (!j) {
        rows_drop(s, r);
        srv_reply_error(s, c, r->req_id, SRV_ERR_PLAIN, "out of memory");
        srv_account(s, r->idx, 1, SRV_OUTCOME_FAILED(SRV_FAIL_NO_MEMORY), 0);
        return;
    }
    j->r.model_idx = r->idx;
    j->r.model = r->model; /* the reference moves to the job */
    j->ctx = r->ctx;
    j->prepared = 1;
    r->model = NULL;
    r->ctx = NULL;
    srv_dispatch_submit(s, j);
}

srv_in_t srv_rows_step(server_t *s, conn_t *c, srv_rows_t *r) {
    size_t room = RING_CAP + ALIGN - r->hi;
    size_t want = room < r->left ? room : r->left;
    ssize_t got = srv_conn_read(s, c, r->ring + r->hi, want);
    if (got < 0) {
        if (errno == EINTR) return SRV_IN_MORE;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return SRV_IN_WAIT;
        return SRV_IN_EOF; /* what it holds goes with the connection (srv_rows_free) */
    }
    if (got == 0) return SRV_IN_EOF;
    r->hi += (size_t)got;
    r->left -= (size_t)got;
    /* a read that emptied the pipe: what follows starts on a fresh page */
    r->phase = (size_t)got < want ? 0 : (r->phase + (size_t)got) % ALIGN;
    rows_consume(r);
    if (r->left == 0) {
        rows_done(s, c, r);
        return SRV_IN_DONE;
    }
    return (size_t)got < want ? SRV_IN_WAIT : SRV_IN_MORE;
}

/* ---- a parked frame, on a prepare worker ------------------------------------- */

/* Copy n bytes from memory into the ring, handing over whole rows as they
 * complete. */
static void rows_feed(srv_rows_t *r, const uint8_t *p, size_t n) {
    while (n > 0 && r->rows_left > 0) {
        size_t room = RING_CAP + ALIGN - r->hi, k = n < room ? n : room;
        memcpy(r->ring + r->hi, p, k);
        r->hi += k;
        p += k;
        n -= k;
        rows_consume(r);
    }
}

/* (a - b) mod ALIGN for frame positions in either order. */
static size_t phase_of(size_t a, size_t b) { return (a % ALIGN + ALIGN - b % ALIGN) % ALIGN; }

/*
 * A frame parked under overload (spill.c) that is to run after all. Its
 * pixels are in three parts: those read with its header (in j->frame), the
 * parked ones (in pipes), and any read after parking stopped (in j->frame
 * again). Filling the frame buffer and preparing it whole writes 6 MB to
 * memory and reads them back; here they pass through the worker's ring,
 * which stays in cache, straight into the row-by-row preparation, as a
 * frame that is expected to run is prepared while it is read. Reads from
 * the pipes land so that the host's pages start on 64-byte boundaries of
 * the ring (srv_spill_mark), which keeps the kernel's copy at full speed.
 */
int srv_rows_parked(srv_rows_t **rp, frame_job_t *j, char *err, size_t errlen) {
    const osp_wire_image_t *im = &j->r.rq.u.raw.img;
    spill_t *sp = j->spill;
    uint8_t *frame = j->r.frame;
    if (!sp || !frame || !j->r.model || (im->fmt != OSP_WIRE_FMT_RGB && im->fmt != OSP_WIRE_FMT_BGR))
        return 0;
    if (srv_loaded_model(j->r.model)->then) return 0; /* read whole: its cascade crops from it */
    size_t row_bytes = (size_t)im->width * 3;
    size_t pix = (size_t)(im->pixels - frame), pix_end = pix + im->len;
    size_t off = srv_spill_off(sp), end = off + srv_spill_len(sp);
    if (row_bytes == 0 || row_bytes > RING_CAP / 4 || off < pix || end > j->r.frame_len)
        return 0; /* parking began inside the header, or a frame this ring cannot take */
    srv_rows_t *r = *rp;
    if (!r) {
        if (!(r = calloc(1, sizeof *r))) return 0;
        *rp = r;
    }
    if (!r->ps && !(r->ps = osp_prep_stream_new())) return 0;
    if (!r->ring && !(r->ring = aligned_alloc(ALIGN, RING_CAP + ALIGN))) return 0;
    if (osp_model_prepare_rows_begin(srv_loaded_model(j->r.model), j->ctx, r->ps, (int)im->width,
                                     (int)im->height, (osp_pixfmt_t)im->fmt, err, errlen))
        return 0; /* the whole-frame path says what is wrong, if anything */
    r->row_bytes = row_bytes;
    r->rows_left = (int)im->height;
    r->prep_ms = 0;
    r->lo = r->hi = 0;
    size_t lattice = off;
    srv_spill_lattice(sp, &lattice);

    r->phase = phase_of(off, lattice); /* where the first parked byte should land */
    rows_feed(r, frame + pix, off - pix);
    size_t pos = off;
    while (pos < end && r->rows_left > 0) {
        size_t room = RING_CAP + ALIGN - r->hi, want = end - pos;
        ssize_t got = srv_spill_read(sp, r->ring + r->hi, want < room ? want : room);
        if (got <= 0) break;
        r->hi += (size_t)got;
        pos += (size_t)got;
        r->phase = phase_of(pos, lattice);
        rows_consume(r);
    }
    if (r->rows_left > 0 && pos == end && end < pix_end) rows_feed(r, frame + end, pix_end - end);
    if (r->rows_left > 0) {
        snprintf(err, errlen, "frame bytes lost in transit");
        return -1;
    }
    if (osp_model_prepare_rows_end(j->ctx, r->ps, (int)im->width, (int)im->height, r->prep_ms, err,
                                   errlen))
        return -1;
    return 1;
}

/* A raw frame parked in pipes (exec.h's parked frames): its tensor made
 * from them (1), its bytes filled into the frame to be prepared whole
 * (0), or an error (-1). */
static int parked_prepare(void **state, frame_job_t *j, char *err, size_t errlen) {
    int st = srv_rows_parked((srv_rows_t **)state, j, err, errlen);
    int lost = st == 0 ? srv_spill_fill(j->spill, j->r.frame) : 0;
    srv_spill_free(j->spill);
    j->spill = NULL;
    if (st < 0) return -1;
    if (lost) {
        snprintf(err, errlen, "frame bytes lost in transit");
        return -1;
    }
    return st;
}

static void parked_free(void *state) { srv_rows_free(NULL, state); }

const srv_parked_ops_t srv_rows_parked_ops = {parked_prepare, parked_free};
