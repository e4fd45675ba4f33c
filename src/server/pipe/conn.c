/*
 * A host's connection (conn.h): reading in one explicit state, writing
 * whole reply frames without blocking.
 *
 * Reading. A connection is always in one state (rd_state_t): frames
 * arrive in the staging buffer (RD_STAGE) until a frame's header shows a
 * large frame, which moves the connection to the ingest mode that takes
 * it (RD_ROWS: prepared as it is read; RD_BIG: read whole into its own
 * buffer, or parked) until its last byte, and back; RD_CLOSED once it
 * reads no more. rd_step makes one read in the current state and
 * rd_enter is the only place the state changes.
 *
 * Writing. Replies queue as buffers taken from a small pool (their
 * memory is kept for the next reply) and go out with writev when the peer
 * takes them. A connection whose replies pile up unread past
 * OUT_PAUSE_BYTES is not read until they are down to OUT_RESUME_BYTES: a
 * host that sends without reading waits, as it would on a server that
 * writes its replies in order, instead of growing the server's memory and
 * taking the I/O thread from everyone else.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sched/bufpool.h"
#include "server/pipe/conn.h"
#include "server/pipe/ingest.h"
#include "server/core/loop.h"
#include "server/core/stats.h"
#include "wire/frame.h"
#include "log/log.h"

#define STAGE_CAP (256u << 10)     /* frames up to this size are read through the staging buffer */
#define ROWS_MIN (64u << 10)       /* raw frames from this size are prepared as they are read */
#define OUT_PAUSE_BYTES (4u << 20) /* unread replies past which a connection is not read */
#define OUT_RESUME_BYTES (1u << 20) /* ... until they are down to this */
#define OUT_KEEP 64                 /* reply buffers kept for reuse */
#define OUT_KEEP_BYTES (64u << 10)  /* ... each no larger than this */
#define READ_ROUNDS 64              /* reads of one connection before others get a turn */

enum {
    PAUSE_LOADING = 1, /* its handshake's models are loading */
    PAUSE_OUTPUT = 2
}; /* its replies pile up unread */

typedef enum {
    RD_STAGE,  /* headers and small frames, into the staging buffer */
    RD_ROWS,   /* a raw frame prepared as it is read (rows.c) */
    RD_BIG,    /* a large frame read whole, or parked (big.c) */
    RD_CLOSED, /* EOF, a read error, fatal, or the server stopping */
} rd_state_t;

typedef struct outbuf {
    struct outbuf *next;
    osp_jw_t w;
    size_t off; /* bytes already written */
} outbuf_t;

struct conn {
    struct conn *next;
    uint32_t id;
    int rfd, wfd;
    int stdio;
    int handshaken, version;
    rd_state_t rd;
    uint8_t *in; /* the staging buffer */
    size_t in_len, in_cap;
    size_t in_need;     /* bytes the frame at its start needs, when it fits (stage_parse) */
    srv_rows_t *rows;   /* RD_ROWS's state, kept between frames */
    srv_big_t *big;     /* RD_BIG's */
    srv_relay_t *relay; /* large reads from a pipe pass through it (relay.c) */
    int fatal;          /* stop reading; close once replies are out */
    int paused;         /* not reading, for these reasons (PAUSE_*) */
    outbuf_t *out_head, *out_tail;
    size_t out_bytes;
    int want_write;
    int write_failed;
    int inflight;              /* requests accepted and not yet answered */
    struct timespec hello_due; /* a socket: closed if no handshake by then */
    int unpolled;              /* rfd is a file epoll cannot watch (</dev/null, <frames.bin):
                            * always readable, read on every loop pass */
};

struct srv_conns {
    const srv_conn_ops_t *ops; /* what the connections' frames go to */
    conn_t *head;
    uint32_t next_id;
    int awaiting_hello;         /* socket connections not yet handshaken */
    int unpolled;               /* connections epoll cannot watch (at most the stdio one) */
    struct timespec hello_next; /* no such connection is due before this */
    outbuf_t *spare;            /* reply buffers kept for reuse */
    int n_spare;
    osp_jw_t scratch; /* srv_reply_buf */
};

srv_conns_t *srv_conns_new(const srv_conn_ops_t *ops) {
    srv_conns_t *cs = calloc(1, sizeof(srv_conns_t));
    if (cs) cs->ops = ops;
    return cs;
}

static void out_free(outbuf_t *o) {
    osp_jw_free(&o->w);
    free(o);
}

static void conn_free(server_t *s, conn_t *c);

void srv_conns_free(server_t *s) {
    srv_conns_t *cs = s->conns;
    if (!cs) return;
    while (cs->head) conn_free(s, cs->head);
    for (outbuf_t *o = cs->spare, *n; o; o = n) {
        n = o->next;
        out_free(o);
    }
    osp_jw_free(&cs->scratch);
    free(cs);
    s->conns = NULL;
}

conn_t *srv_conn_find(server_t *s, uint32_t id) {
    for (conn_t *c = s->conns->head; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}

uint32_t srv_conn_id(const conn_t *c) { return c->id; }
int srv_conn_is_stdio(const conn_t *c) { return c->stdio; }
int srv_conn_handshaken(const conn_t *c) { return c->handshaken; }
int srv_conn_version(const conn_t *c) { return c->version; }
int srv_conn_fd(const conn_t *c) { return c->rfd; }

void srv_conn_deliver(server_t *s, conn_t *c, uint8_t *frame, size_t len, spill_t *spill) {
    s->conns->ops->frame(s, c, frame, len, spill);
}
void srv_conn_fatal(conn_t *c) { c->fatal = 1; }
void srv_conn_inflight(conn_t *c, int delta) { c->inflight += delta; }
int srv_conns_empty(const server_t *s) { return s->conns->head == NULL; }

static void hello_settled(srv_conns_t *cs, conn_t *c) {
    if (!c->stdio && !c->handshaken) cs->awaiting_hello--;
}

void srv_conn_set_handshaken(server_t *s, conn_t *c, int version) {
    hello_settled(s->conns, c);
    c->handshaken = 1;
    c->version = version;
}

/* A host that connects and never sends its startup config would hold a
 * connection (and its buffers) for as long as it likes; 1 600 of them
 * once did. */
static void hello_arm(server_t *s, conn_t *c) {
    srv_conns_t *cs = s->conns;
    int ms = s->opts.handshake_ms > 0 ? s->opts.handshake_ms : SRV_HELLO_MS_DEFAULT;
    c->hello_due = osp_deadline_in(CLOCK_MONOTONIC, ms);
    if (cs->awaiting_hello++ == 0 || osp_timespec_diff_ms(&c->hello_due, &cs->hello_next) < 0)
        cs->hello_next = c->hello_due;
}

int srv_conns_hello_timer_ms(server_t *s) {
    srv_conns_t *cs = s->conns;
    if (cs->awaiting_hello <= 0) return -1;
    struct timespec now;
    osp_now(&now);
    int64_t ms = osp_timespec_diff_ms(&cs->hello_next, &now) + 1;
    return ms < 0 ? 0 : ms > 3600000 ? 3600000 : (int)ms;
}

static void rd_enter(server_t *s, conn_t *c, rd_state_t to);

void srv_conns_expire_hellos(server_t *s) {
    srv_conns_t *cs = s->conns;
    if (cs->awaiting_hello <= 0) return;
    struct timespec now;
    osp_now(&now);
    if (osp_timespec_diff_ms(&cs->hello_next, &now) > 0) return;
    int first = 1;
    for (conn_t *c = cs->head; c; c = c->next) {
        if (c->stdio || c->handshaken || c->fatal) continue;
        if (osp_timespec_diff_ms(&c->hello_due, &now) <= 0) {
            osp_log(OSP_LOG_WARN, "ospreyd: connection %u sent no startup config in time; closed",
                    c->id);
            c->fatal = 1;
            rd_enter(s, c, RD_CLOSED);
            continue;
        }
        if (first || osp_timespec_diff_ms(&c->hello_due, &cs->hello_next) < 0)
            cs->hello_next = c->hello_due;
        first = 0;
    }
    if (first) cs->hello_next = now; /* those left are closing: nothing to wait for */
}

static void set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

conn_t *srv_conn_new(server_t *s, int rfd, int wfd, int stdio) {
    conn_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->id = ++s->conns->next_id;
    if (c->id >= SRV_TAG_FIRST_RESERVED) c->id = s->conns->next_id = 1;
    c->rfd = rfd;
    c->wfd = wfd;
    c->stdio = stdio;
    c->version = 1;
    c->in_cap = 64u << 10;
    if (!(c->in = malloc(c->in_cap))) {
        free(c);
        return NULL;
    }
    set_nonblock(rfd);
    set_nonblock(wfd);
    if (stdio) {
        /* A 64 KiB pipe moves a 6 MB frame in about a hundred reads, each a
         * round trip with the writer; a 1 MiB pipe (the default ceiling of
         * /proc/sys/fs/pipe-max-size) in six. Not a pipe: nothing happens. */
        fcntl(rfd, F_SETPIPE_SZ, (int)SRV_PIPE_BYTES);
        fcntl(wfd, F_SETPIPE_SZ, (int)SRV_PIPE_BYTES);
        /* stdout gets its own registration once there is something to write */
        if (srv_loop_add(s, rfd, EPOLLIN, c->id) && errno == EPERM) {
            c->unpolled = 1;
            s->conns->unpolled++;
        }
    } else {
        srv_loop_add(s, rfd, EPOLLIN | EPOLLRDHUP, c->id);
        hello_arm(s, c);
    }
    c->next = s->conns->head;
    s->conns->head = c;
    return c;
}

static void conn_free(server_t *s, conn_t *c) {
    hello_settled(s->conns, c);
    s->conns->unpolled -= c->unpolled;
    s->conns->ops->closed(s, c->id);
    conn_t **pp = &s->conns->head;
    while (*pp && *pp != c) pp = &(*pp)->next;
    if (*pp) *pp = c->next;
    if (c->rfd >= 0) {
        srv_loop_del(s, c->rfd);
        if (!c->stdio) close(c->rfd);
    }
    if (c->stdio && c->want_write) srv_loop_del(s, c->wfd);
    for (outbuf_t *o = c->out_head, *n; o; o = n) {
        n = o->next;
        out_free(o);
    }
    free(c->in);
    s->conns->ops->big_free(s, c->big);
    s->conns->ops->rows_free(s, c->rows);
    srv_relay_free(c->relay);
    free(c);
}

/* ---- writing ------------------------------------------------------------------- */

static void conn_set_pause(server_t *s, conn_t *c, int reason, int on);

static void out_recycle(server_t *s, outbuf_t *o) {
    srv_conns_t *cs = s->conns;
    if (cs->n_spare >= OUT_KEEP || o->w.cap > OUT_KEEP_BYTES) {
        out_free(o);
        return;
    }
    osp_jw_reset(&o->w);
    o->off = 0;
    o->next = cs->spare;
    cs->spare = o;
    cs->n_spare++;
}

/* Write what can be written now; arm EPOLLOUT for the rest. */
static void conn_flush(server_t *s, conn_t *c) {
    int resume = 0;
    while (c->out_head && !c->write_failed) {
        struct iovec iov[16];
        int n = 0;
        for (outbuf_t *o = c->out_head; o && n < 16; o = o->next, n++) {
            iov[n].iov_base = o->w.buf + o->off;
            iov[n].iov_len = o->w.len - o->off;
        }
        ssize_t w = writev(c->wfd, iov, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            c->write_failed = 1; /* the peer is gone: drop what is queued */
            break;
        }
        size_t left = (size_t)w;
        while (c->out_head && left) {
            outbuf_t *o = c->out_head;
            size_t rem = o->w.len - o->off;
            if (left < rem) {
                o->off += left;
                left = 0;
                break;
            }
            left -= rem;
            c->out_bytes -= o->w.len;
            c->out_head = o->next;
            if (!c->out_head) c->out_tail = NULL;
            out_recycle(s, o);
        }
    }
    if ((c->paused & PAUSE_OUTPUT) && (c->out_bytes <= OUT_RESUME_BYTES || c->write_failed))
        resume = 1;
    int want = c->out_head != NULL && !c->write_failed;
    if (want != c->want_write) {
        if (c->stdio) {
            if (want)
                srv_loop_add(s, c->wfd, EPOLLOUT, c->id);
            else
                srv_loop_del(s, c->wfd);
        } else {
            srv_loop_mod(s, c->rfd,
                         (c->rd == RD_CLOSED || c->fatal || c->paused ? 0 : EPOLLIN | EPOLLRDHUP) |
                             (want ? EPOLLOUT : 0),
                         c->id);
        }
        c->want_write = want;
    }
    if (resume) conn_set_pause(s, c, PAUSE_OUTPUT, 0);
}

void srv_send(server_t *s, conn_t *c, osp_jw_t *frame) {
    if (!c || c->write_failed || frame->len == 0) {
        osp_jw_reset(frame);
        return;
    }
    srv_conns_t *cs = s->conns;
    outbuf_t *o = cs->spare;
    if (o) {
        cs->spare = o->next;
        cs->n_spare--;
    } else if (!(o = calloc(1, sizeof *o))) {
        osp_jw_reset(frame);
        return;
    }
    /* take the frame's bytes; the caller gets the spare's empty buffer */
    osp_jw_t empty = o->w;
    o->w = *frame;
    *frame = empty;
    osp_jw_reset(frame);
    o->next = NULL;
    o->off = 0;
    if (c->out_tail)
        c->out_tail->next = o;
    else
        c->out_head = o;
    c->out_tail = o;
    c->out_bytes += o->w.len;
    if (!c->want_write) conn_flush(s, c);
    if (c->out_bytes > OUT_PAUSE_BYTES && !c->write_failed) conn_set_pause(s, c, PAUSE_OUTPUT, 1);
}

osp_jw_t *srv_reply_buf(server_t *s) {
    osp_jw_reset(&s->conns->scratch);
    return &s->conns->scratch;
}

void srv_broadcast(server_t *s, const osp_jw_t *frame) {
    for (conn_t *c = s->conns->head; c; c = c->next) {
        if (!c->handshaken) continue;
        osp_jw_t copy = {0};
        osp_jw_raw(&copy, frame->buf, frame->len);
        srv_send(s, c, &copy);
        osp_jw_free(&copy);
    }
}

/* ---- reading -------------------------------------------------------------------- */

/* The replies to a frame the stream cannot be resynchronised after
 * (counted and logged; the caller closes the connection): over the size
 * cap, or a total_len (below 5) that cannot hold its header. */
static void reply_too_large(server_t *s, conn_t *c, uint32_t total_len, uint32_t req_id) {
    uint32_t cap = s->opts.max_frame ? s->opts.max_frame : OSP_WIRE_MAX_FRAME_DEFAULT;
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_too_large(w, total_len, cap);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, c, w);
    osp_log(OSP_LOG_ERROR,
            "ospreyd: frame of %u bytes (req %u) exceeds the limit; closing the connection",
            total_len, req_id);
    srv_stat_add(s, SRV_ST_ERRORS, 1);
}

static void reply_too_short(server_t *s, conn_t *c, uint32_t total_len, uint32_t req_id) {
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_too_short(w, total_len);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, c, w);
    osp_log(OSP_LOG_ERROR,
            "ospreyd: frame length %u (req %u) is below the 5-byte header; closing the connection",
            total_len, req_id);
    srv_stat_add(s, SRV_ST_ERRORS, 1);
}


static void stage_parse(server_t *s, conn_t *c);

/* Stop or resume reading a connection for one reason (PAUSE_*); it reads
 * again when no reason is left. */
static void conn_set_pause(server_t *s, conn_t *c, int reason, int on) {
    int was = c->paused;
    c->paused = on ? was | reason : was & ~reason;
    if (!was == !c->paused || c->rd == RD_CLOSED || c->fatal) return;
    int paused = c->paused != 0;
    if (c->stdio) {
        if (paused)
            srv_loop_del(s, c->rfd);
        else
            srv_loop_add(s, c->rfd, EPOLLIN, c->id);
    } else {
        srv_loop_mod(s, c->rfd,
                     (paused ? 0 : EPOLLIN | EPOLLRDHUP) | (c->want_write ? EPOLLOUT : 0), c->id);
    }
    if (!paused && c->in_len) stage_parse(s, c); /* frames that arrived while it was paused */
}

void srv_conn_pause_loading(server_t *s, conn_t *c, int paused) {
    conn_set_pause(s, c, PAUSE_LOADING, paused);
}

/* The one place the read state changes. Closing stops watching for input
 * (a socket is still watched for room to write what it owes). */
static void rd_enter(server_t *s, conn_t *c, rd_state_t to) {
    if (c->rd == to) return;
    c->rd = to;
    if (to != RD_CLOSED) return;
    if (c->rfd >= 0) {
        srv_loop_del(s, c->rfd);
        if (!c->stdio && c->want_write) srv_loop_add(s, c->rfd, EPOLLOUT, c->id);
    }
}

ssize_t srv_conn_read(server_t *s, conn_t *c, void *dst, size_t want) {
    int broken = 0;
    ssize_t r = srv_relay_read(s, &c->relay, c->rfd, dst, want, &broken);
    if (broken) c->fatal = 1;
    return r;
}

/* Whole frames out of the staging buffer; a large frame whose header is
 * in moves the connection to the mode that reads the rest. */
static void stage_parse(server_t *s, conn_t *c) {
    size_t off = 0;
    uint32_t cap = s->opts.max_frame;
    c->in_need = 0;
    while (!c->fatal && !c->paused && c->rd == RD_STAGE && c->in_len - off > 0) {
        osp_wire_frame_t f;
        size_t need = 0;
        const uint8_t *p = c->in + off;
        size_t avail = c->in_len - off;
        int r = osp_wire_scan(p, avail, cap, &f, &need);
        if (r == OSP_WIRE_ETOOBIG || r == OSP_WIRE_ESHORT) {
            /* the stream cannot be trusted past this frame's header */
            if (r == OSP_WIRE_ETOOBIG)
                reply_too_large(s, c, f.total_len, f.req_id);
            else
                reply_too_short(s, c, f.total_len, f.req_id);
            c->fatal = 1;
            break;
        }
        if (r == 1 && f.frame_len >= ROWS_MIN &&
            s->conns->ops->rows_begin(s, c, &c->rows, p, f.frame_len, f.frame_len)) {
            off += f.frame_len; /* prepared where it lies */
            continue;
        }
        if (r == 1) {
            uint8_t *copy = osp_buf_get(s->bufs, f.frame_len);
            if (!copy) {
                c->fatal = 1;
                break;
            }
            memcpy(copy, p, f.frame_len);
            off += f.frame_len;
            s->conns->ops->frame(s, c, copy, f.frame_len, NULL);
            continue;
        }
        /* incomplete: a frame that fits the staging buffer is read whole
         * into it (stage_step makes room) and prepared where it lies; a
         * larger one whose header is known is prepared as it is read or read
         * into a buffer of its own. UltraFace's 320x240 frames (230 KB)
         * used to arrive as 64 KiB in the staging buffer, copied into the
         * rows' ring, and the rest spliced into the relay and read out of
         * it: three more syscalls and a copy a frame. */
        if (avail >= 9 && f.frame_len <= STAGE_CAP) {
            c->in_need = f.frame_len;
        } else if (avail >= 9 && f.frame_len >= ROWS_MIN &&
                   s->conns->ops->rows_begin(s, c, &c->rows, p, avail, f.frame_len)) {
            off = c->in_len;
            rd_enter(s, c, RD_ROWS);
        } else if (avail >= 9 && f.frame_len > STAGE_CAP) {
            if (s->conns->ops->big_begin(s, c, &c->big, p, avail, f.frame_len)) {
                c->fatal = 1;
                break;
            }
            off = c->in_len;
            rd_enter(s, c, RD_BIG);
        }
        break;
    }
    if (off) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
}

/* One read into the staging buffer. */
static srv_in_t stage_step(server_t *s, conn_t *c) {
    if (c->in_cap - c->in_len < 4096 || c->in_cap < c->in_need) {
        size_t cap = c->in_cap * 2;
        if (cap < c->in_need) cap = c->in_need;
        if (cap > STAGE_CAP + 64) cap = STAGE_CAP + 64;
        if (cap > c->in_cap) {
            uint8_t *n = realloc(c->in, cap);
            if (!n) {
                c->fatal = 1;
                return SRV_IN_EOF;
            }
            c->in = n;
            c->in_cap = cap;
        }
    }
    ssize_t r = read(c->rfd, c->in + c->in_len, c->in_cap - c->in_len);
    if (r < 0) {
        if (errno == EINTR) return SRV_IN_MORE;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return SRV_IN_WAIT;
        return SRV_IN_EOF;
    }
    if (r == 0) return SRV_IN_EOF;
    c->in_len += (size_t)r;
    stage_parse(s, c);
    return SRV_IN_MORE;
}

/* One read in the connection's current state. */
static srv_in_t rd_step(server_t *s, conn_t *c) {
    srv_in_t st;
    switch (c->rd) {
    case RD_ROWS: st = s->conns->ops->rows_step(s, c, c->rows); break;
    case RD_BIG: st = s->conns->ops->big_step(s, c, c->big); break;
    case RD_STAGE: return stage_step(s, c);
    default: return SRV_IN_EOF;
    }
    if (st == SRV_IN_DONE) {
        rd_enter(s, c, RD_STAGE);
        return SRV_IN_MORE;
    }
    return st;
}

static void conn_read(server_t *s, conn_t *c) {
    for (int rounds = 0; rounds < READ_ROUNDS && c->rd != RD_CLOSED && !c->fatal && !c->paused;
         rounds++) {
        /* a host that keeps the pipe full keeps this loop busy for many
         * frames; a worker that finished meanwhile must not wait for it to
         * get its next frame */
        if (rounds && srv_posted(s)) srv_drain(s);
        if (c->rd == RD_CLOSED || c->fatal || c->paused) break;
        srv_in_t st = rd_step(s, c);
        if (st == SRV_IN_WAIT) break;
        if (st == SRV_IN_EOF) {
            if (c->stdio && !c->handshaken && !c->fatal) {
                /* nothing to serve without a config: a failed start, as the
                 * Python worker's was */
                osp_log(OSP_LOG_ERROR, "ospreyd: stdin closed before the startup config");
                c->fatal = 1;
            } else if (c->stdio && (c->in_len || c->rd != RD_STAGE)) {
                osp_log(OSP_LOG_WARN,
                        "ospreyd: stdin closed inside a frame; the partial frame is ignored");
            }
            rd_enter(s, c, RD_CLOSED);
            break;
        }
    }
    if (c->fatal) rd_enter(s, c, RD_CLOSED);
}

void srv_conn_event(server_t *s, uint32_t id, uint32_t events) {
    conn_t *c = srv_conn_find(s, id);
    if (!c) return;
    if (events & EPOLLOUT) conn_flush(s, c);
    if (events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR) && c->rd != RD_CLOSED && !c->fatal)
        conn_read(s, c);
    if (c->stdio && (events & (EPOLLERR | EPOLLHUP)) && c->want_write && !(events & EPOLLIN))
        c->write_failed = 1;
}

int srv_conns_read_unpolled(server_t *s) {
    int read = 0;
    if (!s->conns->unpolled) return 0;
    for (conn_t *c = s->conns->head; c; c = c->next) {
        if (!c->unpolled || c->rd == RD_CLOSED || c->fatal || c->paused) continue;
        conn_read(s, c);
        read = 1;
    }
    return read;
}

int srv_input_waiting(server_t *s) {
    for (conn_t *c = s->conns->head; c; c = c->next) {
        if (c->rd == RD_CLOSED || c->fatal) continue;
        /* a frame partly read (its mode still holds it: a frame whose last
         * byte was just read is dispatched before the state changes) */
        if ((c->rd == RD_ROWS && s->conns->ops->rows_active(c->rows)) ||
            (c->rd == RD_BIG && s->conns->ops->big_active(c->big)))
            return 1;
        int n = 0;
        if (ioctl(c->rfd, FIONREAD, &n) == 0 && n > 0) return 1;
    }
    return 0;
}

void srv_conns_stop_reading(server_t *s) {
    for (conn_t *c = s->conns->head; c; c = c->next) rd_enter(s, c, RD_CLOSED);
}

/* A connection is finished when it reads no more, owes no replies and has
 * written everything (or its peer is gone). */
static int conn_done(const conn_t *c) {
    return (c->rd == RD_CLOSED || c->fatal) && c->inflight == 0 &&
           (c->out_head == NULL || c->write_failed);
}

int srv_conns_retire(server_t *s, int *exit_code) {
    for (conn_t *c = s->conns->head, *n; c; c = n) {
        n = c->next;
        if (!conn_done(c)) continue;
        if (c->stdio) {
            if (c->fatal) *exit_code = 1;
            if (!s->conns->ops->idle(s)) continue; /* a load or command may still answer */
            conn_free(s, c);
            return 1;
        }
        conn_free(s, c);
    }
    return 0;
}
