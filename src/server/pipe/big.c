/*
 * A large frame read whole into a buffer of its own (ingest.h): a frame
 * over the staging buffer's size that is not prepared as it is read
 * (rows.c) — JPEG, formats the rows do not take, window batching, frames
 * likely to be shed. The buffer comes from the server's pool (a fresh
 * 6 MB allocation faults its pages in one by one on every frame).
 *
 * A raw frame due to be shed is parked instead (spill.c): under overload
 * it is likely to be pushed out of its model's queue before it runs
 * (osp_sched_likely_shed), so the rest of its bytes are spliced into pipes
 * of the server's own rather than copied. Parking is tried as soon as the
 * header is read, so that none of its pixels but those already in the
 * staging buffer are copied (the host has usually filled the pipe by
 * then: a pipeful, 1 MiB, that would otherwise be read first), and again
 * at the first read that emptied the pipe.
 *
 * If the frame runs, a prepare worker reads the parked bytes back
 * (srv_rows_parked, or srv_spill_fill into the frame buffer), at full
 * speed only where its reads line up with the host's pages. Pages that
 * follow a point where the connection's pipe was emptied start there, and
 * a host's pages before it end there; so the first such point is noted
 * (srv_spill_mark) and the frame buffer aligned there (osp_buf_align),
 * once parking is under way, or at once when parking starts at one.
 *
 * A raw frame whose header shows its deadline already past is shed at the
 * gate whatever follows, and its pixels are never looked at: they are
 * discarded as they arrive (spliced from a pipe into /dev/null, which
 * frees the host's pages without copying them; read into a small scratch
 * buffer from anything else) instead of copied into a 6 MB buffer. When
 * the last byte is in, the frame goes to the gate as a job without pixels,
 * as a frame prepared as it was read does (rows.c), and is answered and
 * counted as every expired frame is.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/bufpool.h"
#include "sched/gate.h"
#include "sched/sched.h"
#include "server/core/account.h"
#include "server/core/dispatch.h"
#include "server/pipe/conn.h"
#include "server/pipe/ingest.h"
#include "server/pipe/reply.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "wire/frame.h"
#include "wire/peek.h"

#define BIG_REALIGN_MAX (2u << 20) /* bytes of a large frame worth moving to realign it */
#define PARK_MIN (512u << 10)      /* bytes left in a frame worth parking */
#define PARK_MAX (32u << 20)       /* larger frames are read: more pipes than it is worth */
#define SKIP_SCRATCH (64u << 10)   /* reads of an expired frame's bytes that cannot be spliced */

enum { SINK_UNTRIED, SINK_OPEN, SINK_NONE }; /* srv_big.sink_state */

struct srv_big {
    uint8_t *buf; /* the frame being read, from s->bufs; NULL: none */
    size_t len, got;
    int aligns;        /* realignments of the buffer so far (osp_buf_align) */
    int drained;       /* a read into it has emptied the pipe */
    spill_t *spill;    /* its pixels parked in pipes, or NULL */
    size_t spill_from; /* where parking began: the bytes before it are in buf */
    int spill_stopped; /* parking ended early: the rest is read into buf */
    /* a raw frame past its deadline, its bytes discarded as they come */
    int skipping;
    osp_wire_raw_head_t head; /* its header (head.img.pixels is not kept) */
    int sink, sink_state;     /* /dev/null, the pipe's bytes are spliced there */
    int sink_fd;              /* the connection's descriptor it was tried on */
    uint8_t *scratch;         /* SKIP_SCRATCH bytes, where other bytes are read */
};

int srv_big_active(const srv_big_t *b) { return b && (b->buf || b->skipping); }

void srv_big_free(server_t *s, srv_big_t *b) {
    if (!b) return;
    osp_buf_put(s->bufs, b->buf);
    srv_spill_free(b->spill);
    if (b->sink_state == SINK_OPEN) close(b->sink);
    free(b->scratch);
    free(b);
}

/* ---- a frame past its deadline ----------------------------------------------------- */

/* 1 when the frame starting at p is an infer_raw that the whole-frame
 * parser would take and whose deadline has passed (the gate sheds it
 * before anything else is checked: dispatch.c's run_admitted). */
static int expired_raw(server_t *s, conn_t *c, const uint8_t *p, size_t avail, size_t frame_len,
                       osp_wire_raw_head_t *hd) {
    if (!srv_conn_handshaken(c) || s->stopping || srv_conn_version(c) < 2) return 0;
    if (osp_wire_raw_peek(p, avail, frame_len, srv_conn_version(c), hd, NULL, NULL, 0) != 1)
        return 0;
    return osp_gate_expired(hd->deadline_ms);
}

/* Every byte of the expired frame is in: to the gate, as rows.c's
 * rows_done hands a frame prepared as read (route.c counts a whole
 * frame the same way: received, then shed at the gate). */
static srv_in_t skip_done(server_t *s, conn_t *c, srv_big_t *b) {
    const osp_wire_raw_head_t *hd = &b->head;
    b->skipping = 0;
    b->len = b->got = 0;
    srv_stat_add(s, SRV_ST_INFER_RAW, 1);
    srv_account_received(s, hd->model_idx);
    osp_wire_request_t rq;
    memset(&rq, 0, sizeof rq);
    rq.req_id = hd->req_id;
    rq.msg_type = OSP_WIRE_MSG_INFER_RAW;
    rq.deadline_ms = hd->deadline_ms;
    rq.u.raw.model_idx = hd->model_idx;
    rq.u.raw.img = hd->img;
    rq.u.raw.img.pixels = NULL; /* none kept */
    frame_job_t *j = srv_pipe_frame_job(s, c, &srv_pipe_tp, &rq, NULL, 0);
    if (!j) {
        srv_reply_error(s, c, hd->req_id, SRV_ERR_PLAIN, "out of memory");
        srv_account(s, hd->model_idx, 1, SRV_OUTCOME_FAILED(SRV_FAIL_NO_MEMORY), 0);
        return SRV_IN_DONE;
    }
    j->r.model_idx = hd->model_idx;
    srv_dispatch_submit(s, j);
    return SRV_IN_DONE;
}

/* Discard what has arrived of the expired frame: spliced into /dev/null
 * from a pipe, else read into the scratch buffer. */
/* What a read that brought nothing (r <= 0) means: try again, wait for
 * the peer, or the end. */
static srv_in_t read_failed(ssize_t r) {
    if (r == 0) return SRV_IN_EOF;
    if (errno == EINTR) return SRV_IN_MORE;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return SRV_IN_WAIT;
    return SRV_IN_EOF;
}

static srv_in_t skip_step(server_t *s, conn_t *c, srv_big_t *b) {
    int fd = srv_conn_fd(c);
    size_t room = b->len - b->got;
    ssize_t r = -1;
    if (b->sink_state == SINK_OPEN && b->sink_fd != fd) {
        close(b->sink); /* kept from another descriptor: try this one afresh */
        b->sink_state = SINK_UNTRIED;
    }
    if (b->sink_state == SINK_UNTRIED) {
        b->sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
        b->sink_state = b->sink >= 0 ? SINK_OPEN : SINK_NONE;
        b->sink_fd = fd;
    }
    if (b->sink_state == SINK_OPEN) {
        r = splice(fd, NULL, b->sink, NULL, room, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (r < 0 && errno == EINVAL) { /* not a pipe: read instead */
            close(b->sink);
            b->sink_state = SINK_NONE;
        }
    }
    if (b->sink_state == SINK_NONE) {
        if (!b->scratch && !(b->scratch = malloc(SKIP_SCRATCH))) return SRV_IN_EOF;
        r = srv_conn_read(s, c, b->scratch, room < SKIP_SCRATCH ? room : SKIP_SCRATCH);
    }
    if (r <= 0) return read_failed(r);
    b->got += (size_t)r;
    if (b->got == b->len) return skip_done(s, c, b);
    return SRV_IN_MORE;
}

static void maybe_park(server_t *s, conn_t *c, srv_big_t *b) {
    if (!srv_conn_handshaken(c) || s->stopping || s->set.batch_mode != OSP_WIRE_BATCH_NONE ||
        b->len - b->got < PARK_MIN || b->len > PARK_MAX)
        return;
    osp_wire_raw_head_t hd;
    if (osp_wire_raw_peek(b->buf, b->got, b->len, srv_conn_version(c), &hd, NULL, NULL, 0) != 1)
        return;
    int idx = hd.model_idx;
    if (!srv_slot(s, idx) || !osp_sched_likely_shed(s->sched, idx)) return;
    if (!(b->spill = srv_spill_new(b->got))) return;
    srv_stat_add(s, SRV_ST_FRAMES_PARKED, 1);
    b->spill_from = b->got;
    if (b->drained) srv_spill_mark(b->spill, b->got); /* buf is lined up already */
}

int srv_big_begin(server_t *s, conn_t *c, srv_big_t **bp, const uint8_t *p, size_t avail,
                  size_t frame_len) {
    srv_big_t *b = *bp;
    if (!b && !(b = *bp = calloc(1, sizeof *b))) return -1;
    if (expired_raw(s, c, p, avail, frame_len, &b->head)) {
        b->head.img.pixels = NULL;
        b->skipping = 1;
        b->len = frame_len;
        b->got = avail;
        srv_stat_add(s, SRV_ST_FRAMES_SKIPPED, 1);
        return 0;
    }
    if (!(b->buf = osp_buf_get(s->bufs, frame_len))) return -1;
    b->len = frame_len;
    b->got = avail;
    b->aligns = 0;
    b->drained = 0;
    b->spill_stopped = 0;
    memcpy(b->buf, p, avail);
    maybe_park(s, c, b);
    return 0;
}

/* Every byte is in: hand the frame on, with its parked part if any. */
static srv_in_t big_done(server_t *s, conn_t *c, srv_big_t *b) {
    uint8_t *frame = b->buf;
    spill_t *sp = b->spill;
    size_t len = b->len;
    b->buf = NULL;
    b->spill = NULL;
    b->len = b->got = 0;
    if (sp) srv_spill_seal(sp);
    srv_conn_deliver(s, c, frame, len, sp);
    return SRV_IN_DONE;
}

/* A parked frame: its bytes go pipe to pipe. */
static srv_in_t park_step(server_t *s, conn_t *c, srv_big_t *b) {
    size_t moved = 0, mark;
    int st = srv_spill_step(b->spill, srv_conn_fd(c), b->len - b->got, &moved);
    b->got += moved;
    if (st == SPILL_WAIT && !srv_spill_lattice(b->spill, &mark)) { /* the pipe was just emptied */
        b->buf = osp_buf_align(b->buf, b->spill_from, b->got);
        srv_spill_mark(b->spill, b->got);
    }
    if (b->got == b->len) return big_done(s, c, b);
    if (st == SPILL_WAIT) return SRV_IN_WAIT;
    if (st == SPILL_EOF) return SRV_IN_EOF;
    if (st == SPILL_STOPPED) b->spill_stopped = 1; /* what is parked stays; the rest is read */
    return SRV_IN_MORE;
}

srv_in_t srv_big_step(server_t *s, conn_t *c, srv_big_t *b) {
    if (b->skipping) return skip_step(s, c, b);
    if (b->spill && !b->spill_stopped) return park_step(s, c, b);
    size_t room = b->len - b->got;
    ssize_t r = srv_conn_read(s, c, b->buf + b->got, room);
    if (r <= 0) return read_failed(r);
    b->got += (size_t)r;
    /* A read that emptied the pipe ended where the writer's pipe pages
     * end, and the pages that follow start there: put that point on a
     * 64-byte boundary while little has been read, so the rest of the
     * frame is copied in at full speed. */
    if ((size_t)r < room && b->got < b->len && b->got <= BIG_REALIGN_MAX && b->aligns < 2 &&
        (uintptr_t)(b->buf + b->got) % 64 != 0) {
        b->buf = osp_buf_align(b->buf, b->got, b->got);
        b->aligns++;
    }
    if ((size_t)r < room && !b->drained) {
        b->drained = 1;
        maybe_park(s, c, b);
    }
    if (b->got == b->len) return big_done(s, c, b);
    return SRV_IN_MORE;
}
