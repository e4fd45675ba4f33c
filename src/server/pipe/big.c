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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/bufpool.h"
#include "sched/sched.h"
#include "server/pipe/conn.h"
#include "server/pipe/ingest.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "wire/frame.h"
#include "wire/peek.h"

#define BIG_REALIGN_MAX (2u << 20) /* bytes of a large frame worth moving to realign it */
#define PARK_MIN (512u << 10)      /* bytes left in a frame worth parking */
#define PARK_MAX (32u << 20)       /* larger frames are read: more pipes than it is worth */

struct srv_big {
    uint8_t *buf; /* the frame being read, from s->bufs; NULL: none */
    size_t len, got;
    int aligns;        /* realignments of the buffer so far (osp_buf_align) */
    int drained;       /* a read into it has emptied the pipe */
    spill_t *spill;    /* its pixels parked in pipes, or NULL */
    size_t spill_from; /* where parking began: the bytes before it are in buf */
    int spill_stopped; /* parking ended early: the rest is read into buf */
};

int srv_big_active(const srv_big_t *b) { return b && b->buf; }

void srv_big_free(server_t *s, srv_big_t *b) {
    if (!b) return;
    osp_buf_put(s->bufs, b->buf);
    srv_spill_free(b->spill);
    free(b);
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
    if (b->spill && !b->spill_stopped) return park_step(s, c, b);
    size_t room = b->len - b->got;
    ssize_t r = srv_conn_read(s, c, b->buf + b->got, room);
    if (r < 0) {
        if (errno == EINTR) return SRV_IN_MORE;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return SRV_IN_WAIT;
        return SRV_IN_EOF;
    }
    if (r == 0) return SRV_IN_EOF;
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
