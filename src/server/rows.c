/*
 * A raw frame prepared as it is read.
 *
 * Reading a 1920x1080 RGB frame whole means copying 6 MB out of the
 * connection into a buffer that no cache holds, then reading it all again
 * to resize it, on another thread, after the last byte is in. For a frame
 * that will probably run (srv_likely_shed says no), the I/O thread instead
 * reads the pixels a few hundred kilobytes at a time into one small buffer
 * that stays in cache, and hands each batch of whole rows to the model's
 * row-by-row preparation (osp_prep_stream_*). The frame never exists whole
 * in memory; when its last byte is read its tensor is ready, and it goes
 * straight to a predict worker.
 *
 * A frame that is already whole in the connection's read buffer (a small
 * one, 64 KiB and up) is prepared right there: no copy into a frame
 * buffer, no hand-over to a preparing thread.
 *
 * What is not taken here is read whole as before: frames likely to be shed
 * before they run (srv_likely_shed; they may be parked, spill.c), formats
 * other than RGB and BGR, text models, window batching, anything that fails
 * a check (the whole frame then gets the usual error reply).
 *
 * A frame of a megabyte or more that arrives while nothing else is in
 * flight would leave the other cores idle while the I/O thread both copies
 * and prepares it. Such a frame is aided: the I/O thread only reads, into
 * a few slots that take turns, and a helper thread (one per server)
 * prepares each read's rows while the next read is under way. At one frame
 * in flight this takes the preparation off the path from the frame's first
 * byte to its run.
 *
 * Reads land at a 64-byte boundary where the connection's pipe was just
 * emptied, and contiguously otherwise, for the reason srv_buf_align gives.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/internal.h"

#define RING_CAP (256u << 10) /* bytes one read may bring in; stays in a 1 MiB L2 */
#define ALIGN 64
#define AID_SLOTS 4 /* reads an aided frame's preparation may lag behind by */
#define AID_MIN (4 * RING_CAP) /* a frame read in fewer reads gains too little */

/* The helper that prepares an aided frame's rows. The I/O thread hands it
 * one read's whole rows at a time (an item, in slot put % AID_SLOTS) and
 * reuses a slot only once the helper has finished with it. While a frame
 * is aided both sides wait for each other awake (the waits are tens of
 * microseconds, and a woken thread tends to be put on its waker's core, the
 * one that is busy); between frames the helper sleeps. */
struct srv_aid {
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the helper sleeps on it */
    uint8_t *slot[AID_SLOTS];
    struct {
        const uint8_t *p;
        int n;
    } q[AID_SLOTS];
    atomic_uint put;      /* items handed over (the I/O thread) */
    atomic_uint finished; /* items prepared (the helper) */
    atomic_int active;    /* a frame is aided */
    atomic_uint frames;   /* frames aided so far */
    atomic_int sleeping;  /* the helper is asleep on wake, or about to be */
    atomic_int stop;
    /* the aided frame's, written before active is set */
    osp_prep_stream_t *ps;
    size_t stride;
    double prep_ms; /* the helper's, read once every item is finished */
};

struct srv_rows {
    osp_prep_stream_t *ps;
    uint8_t *ring;    /* the connection's own read buffer */
    uint8_t *buf;     /* where reads go: the ring, or an aid slot */
    int aided;        /* the rows go to the helper (s->aid) */
    size_t lo, hi;    /* bytes in buf not yet handed over */
    size_t left;      /* bytes of the frame not yet read */
    size_t row_bytes;
    int rows_left;    /* rows not yet handed over; the bytes after them are skipped */
    size_t phase;     /* where the next read should land, mod ALIGN */
    /* the request */
    uint32_t req_id;
    uint64_t deadline_ms;
    int idx;
    uint32_t w, h;
    uint8_t fmt;
    loaded_t *model;  /* the model it is prepared for (a reference) */
    osp_infer_ctx_t *ctx;
    double prep_ms;
};

/* ---- the helper ----------------------------------------------------------- */

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

#define AID_SPIN_MS 0.2 /* the helper waits this long awake for the next item */

/* Sleep until an item is put, a frame is taken on, or stop. */
static void aid_sleep(srv_aid_t *a, unsigned taken, unsigned *frames) {
    pthread_mutex_lock(&a->mu);
    atomic_store(&a->sleeping, 1);
    while (!atomic_load(&a->stop) && atomic_load(&a->put) == taken &&
           atomic_load(&a->frames) == *frames)
        pthread_cond_wait(&a->wake, &a->mu);
    *frames = atomic_load(&a->frames);
    atomic_store(&a->sleeping, 0);
    pthread_mutex_unlock(&a->mu);
}

static void aid_wake(srv_aid_t *a) {
    if (!atomic_load(&a->sleeping)) return;
    pthread_mutex_lock(&a->mu);
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->mu);
}

static void *aid_main(void *arg) {
    srv_aid_t *a = arg;
    unsigned taken = 0, frames = 0;
    struct timespec idle;
    clock_gettime(CLOCK_MONOTONIC, &idle);
    while (!atomic_load(&a->stop)) {
        if (atomic_load(&a->put) == taken) {
            if (atomic_load(&a->active) && srv_ms_since(&idle) < AID_SPIN_MS) {
                cpu_relax();
                continue;
            }
            aid_sleep(a, taken, &frames);
            clock_gettime(CLOCK_MONOTONIC, &idle);
            continue;
        }
        const uint8_t *p = a->q[taken % AID_SLOTS].p;
        int n = a->q[taken % AID_SLOTS].n;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        osp_prep_stream_rows(a->ps, p, a->stride, n);
        clock_gettime(CLOCK_MONOTONIC, &idle);
        a->prep_ms += srv_ms_since(&t0);
        atomic_store(&a->finished, ++taken);
    }
    return NULL;
}

/* The helper for a frame of this stream, or NULL: only when nothing else
 * is in flight and there is a core for it. */
static srv_aid_t *aid_take(server_t *s, osp_prep_stream_t *ps, size_t stride) {
    if (s->cores < 2 || s->jobs_inflight > 0) return NULL;
    srv_aid_t *a = s->aid;
    if (!a) {
        if (!(a = calloc(1, sizeof *a))) return NULL;
        pthread_mutex_init(&a->mu, NULL);
        pthread_cond_init(&a->wake, NULL);
        s->aid = a;
    }
    if (atomic_load(&a->active)) return NULL;
    for (int i = 0; i < AID_SLOTS; i++)
        if (!a->slot[i] && !(a->slot[i] = aligned_alloc(ALIGN, RING_CAP + ALIGN))) return NULL;
    if (!a->started) {
        if (pthread_create(&a->th, NULL, aid_main, a)) return NULL;
        a->started = 1;
    }
    a->ps = ps;
    a->stride = stride;
    a->prep_ms = 0;
    atomic_store(&a->active, 1);
    atomic_fetch_add(&a->frames, 1);
    aid_wake(a); /* awake by the time the first read is in */
    return a;
}

static void aid_put(srv_aid_t *a, const uint8_t *p, int n) {
    unsigned put = atomic_load(&a->put);
    a->q[put % AID_SLOTS].p = p;
    a->q[put % AID_SLOTS].n = n;
    atomic_store(&a->put, put + 1);
    aid_wake(a);
}

/* Wait until at most `pending` items are unfinished; the slot of the next
 * item is free once fewer than AID_SLOTS are. The helper is at work on
 * them: a short wait, awake, that lets others run once it grows long. */
static void aid_wait(srv_aid_t *a, unsigned pending) {
    for (int i = 0; atomic_load(&a->put) - atomic_load(&a->finished) > pending; i++) {
        if (i < 4096) cpu_relax();
        else sched_yield();
    }
}

/* Every item finished: the frame's preparation is the I/O thread's again. */
static double aid_release(srv_aid_t *a) {
    aid_wait(a, 0);
    double ms = a->prep_ms;
    a->ps = NULL;
    atomic_store(&a->active, 0);
    return ms;
}

void srv_rows_aid_free(server_t *s) {
    srv_aid_t *a = s->aid;
    if (!a) return;
    if (a->started) {
        pthread_mutex_lock(&a->mu);
        atomic_store(&a->stop, 1);
        pthread_cond_signal(&a->wake);
        pthread_mutex_unlock(&a->mu);
        pthread_join(a->th, NULL);
    }
    for (int i = 0; i < AID_SLOTS; i++) free(a->slot[i]);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->wake);
    free(a);
    s->aid = NULL;
}

/* ---- the frame --------------------------------------------------------------- */

/* A frame is under way while the stream holds its context. */
int srv_rows_active(const srv_rows_t *r) { return r && r->ctx; }

/* The helper, if the frame has it, finishes what it was given and is let go. */
static void rows_unaid(server_t *s, srv_rows_t *r) {
    if (!r->aided) return;
    r->prep_ms += aid_release(s->aid);
    r->aided = 0;
}

static void rows_drop(server_t *s, srv_rows_t *r) {
    if (!r->ctx) return;
    rows_unaid(s, r);
    srv_ctx_put(s, r->ctx);
    srv_release_model(s, r->model);
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

/* Hand the whole rows read so far to the preparation (or to the helper),
 * then move what is left (part of a row) so that the next read lands at
 * the wanted phase: within the ring, or into the next aid slot. */
static void rows_consume(server_t *s, srv_rows_t *r) {
    size_t have = r->hi - r->lo;
    int n = (int)(have / r->row_bytes);
    if (n > r->rows_left) n = r->rows_left;
    uint8_t *from = r->buf;
    if (n > 0) {
        if (r->aided) {
            aid_put(s->aid, r->buf + r->lo, n);
        } else {
            struct timespec t0;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            osp_prep_stream_rows(r->ps, r->buf + r->lo, r->row_bytes, n);
            r->prep_ms += srv_ms_since(&t0);
        }
        r->lo += (size_t)n * r->row_bytes;
        r->rows_left -= n;
    }
    if (r->rows_left == 0) r->lo = r->hi; /* bytes after the pixels: ignored, as the protocol says */
    size_t keep = r->hi - r->lo;
    size_t at = (r->phase + ALIGN - keep % ALIGN) % ALIGN;
    if (r->aided && r->rows_left == 0) { /* any bytes left go to the ring, not a slot in use */
        rows_unaid(s, r);
        r->buf = r->ring;
    } else if (r->aided && n > 0) {
        srv_aid_t *a = s->aid;
        aid_wait(a, AID_SLOTS - 1);
        r->buf = a->slot[atomic_load(&a->put) % AID_SLOTS];
    }
    if (r->buf != from || at != r->lo) memmove(r->buf + at, from + r->lo, keep);
    r->lo = at;
    r->hi = at + keep;
}

static void rows_done(server_t *s, conn_t *c, srv_rows_t *r);

int srv_rows_begin(server_t *s, conn_t *c, const uint8_t *p, size_t avail, size_t frame_len) {
    if (!c->handshaken || s->stopping || s->batch_mode != OSP_WIRE_BATCH_NONE || avail < 9 ||
        p[8] != OSP_WIRE_MSG_INFER_RAW)
        return 0;
    if (avail > frame_len) avail = frame_len;
    uint64_t deadline = 0;
    const uint8_t *body;
    size_t body_avail;
    if (osp_wire_split_deadline(p[8], p + 9, avail - 9, c->version, &deadline, &body, &body_avail,
                                NULL, 0) ||
        body_avail < 10)
        return 0;
    size_t head = (size_t)(body - p) + 10; /* bytes before the pixels */
    if (deadline && (uint64_t)srv_epoch_ms() > deadline) return 0;
    osp_wire_image_t img;
    if (osp_wire_image_check(body + 10, frame_len - head, osp_wire_rd32(body + 1),
                             osp_wire_rd32(body + 5), body[9], &img, NULL, 0) ||
        (img.fmt != OSP_WIRE_FMT_RGB && img.fmt != OSP_WIRE_FMT_BGR))
        return 0;
    int idx = body[0];
    loaded_t *l = idx < s->nslots ? s->slots[idx] : NULL;
    size_t row_bytes = (size_t)img.width * 3, got = avail - head; /* pixels already read */
    int whole = avail == frame_len; /* all here: prepared from where it lies */
    if (!l || row_bytes > RING_CAP / 4 || (!whole && got > RING_CAP)) return 0;
    if (srv_likely_shed(s, idx)) return 0; /* not worth preparing: it is read whole, or parked */

    srv_rows_t *r = c->rows;
    if (!r) {
        if (!(r = calloc(1, sizeof *r))) return 0;
        c->rows = r;
    }
    if (!r->ps && !(r->ps = osp_prep_stream_new())) return 0;
    if (!whole && !r->ring && !(r->ring = aligned_alloc(ALIGN, RING_CAP + ALIGN))) return 0;
    osp_infer_ctx_t *ctx = srv_ctx_get(s);
    if (!ctx) return 0;
    char err[256];
    if (osp_model_prepare_rows_begin(l->m, ctx, r->ps, (int)img.width, (int)img.height,
                                     (osp_pixfmt_t)img.fmt, err, sizeof err)) {
        srv_ctx_put(s, ctx);
        return 0;
    }
    l->refs++;
    r->model = l;
    r->ctx = ctx;
    r->idx = idx;
    r->req_id = osp_wire_rd32(p + 4);
    r->deadline_ms = deadline;
    r->w = img.width;
    r->h = img.height;
    r->fmt = img.fmt;
    r->row_bytes = row_bytes;
    r->rows_left = (int)img.height;
    r->prep_ms = 0;
    r->left = frame_len - avail;
    r->buf = r->ring;
    r->aided = 0;
    s->frames_prepared_as_read++;
    if (whole) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        osp_prep_stream_rows(r->ps, p + head, row_bytes, r->rows_left);
        r->prep_ms = srv_ms_since(&t0);
        r->rows_left = 0;
        rows_done(s, c, r);
        return 1;
    }
    /* the pixels already read come first; the read that brought them most
     * likely emptied the pipe, so what follows starts on a fresh page */
    srv_aid_t *a = r->left >= AID_MIN ? aid_take(s, r->ps, row_bytes) : NULL;
    if (a) {
        r->aided = 1;
        s->frames_aided++;
        r->buf = a->slot[atomic_load(&a->put) % AID_SLOTS];
    }
    r->phase = 0;
    r->lo = 0;
    r->hi = got;
    memcpy(r->buf, p + head, got);
    rows_consume(s, r);
    return 1;
}

/* Every byte is in: finish the tensor and submit the frame. */
static void rows_done(server_t *s, conn_t *c, srv_rows_t *r) {
    char err[256];
    rows_unaid(s, r);
    s->counters.infer_raw++;
    if (osp_model_prepare_rows_end(r->ctx, r->ps, (int)r->w, (int)r->h, r->prep_ms, err,
                                   sizeof err)) {
        rows_drop(s, r);
        s->counters.errors++;
        srv_reply_frame(s, c, r->req_id, srv_body_infer_error, err);
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
    job_t *j = srv_job_new(s, c, &rq, NULL, 0);
    if (!j) {
        rows_drop(s, r);
        srv_reply_frame(s, c, r->req_id, srv_body_error, "out of memory");
        return;
    }
    j->kind = JOB_INFER;
    j->model_idx = r->idx;
    j->model = r->model; /* the reference moves to the job */
    j->ctx = r->ctx;
    j->prepared = 1;
    r->model = NULL;
    r->ctx = NULL;
    srv_submit_frame(s, j);
}

int srv_rows_step(server_t *s, conn_t *c) {
    srv_rows_t *r = c->rows;
    size_t room = RING_CAP + ALIGN - r->hi;
    size_t want = room < r->left ? room : r->left;
    ssize_t got = read(c->rfd, r->buf + r->hi, want);
    if (got < 0) {
        if (errno == EINTR) return ROWS_MORE;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return ROWS_WAIT;
        return ROWS_EOF; /* what it holds goes with the connection (srv_rows_free) */
    }
    if (got == 0) return ROWS_EOF;
    r->hi += (size_t)got;
    r->left -= (size_t)got;
    /* a read that emptied the pipe: what follows starts on a fresh page */
    r->phase = (size_t)got < want ? 0 : (r->phase + (size_t)got) % ALIGN;
    rows_consume(s, r);
    if (r->left == 0) {
        rows_done(s, c, r);
        return ROWS_DONE;
    }
    return (size_t)got < want ? ROWS_WAIT : ROWS_MORE;
}
