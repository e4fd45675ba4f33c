/*
 * The I/O thread: epoll over stdin/stdout or sockets, the mailbox of
 * finished work, signals and timers. It reads frames, hands them to the
 * router, and is the only writer of replies. It never blocks: reads and
 * writes are non-blocking, frame work runs in the pools, model loads on
 * their own threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/internal.h"

#define STAGE_CAP (256u << 10) /* frames up to this size are read through the staging buffer */
#define OUT_PAUSE_BYTES (4u << 20)  /* unread replies past which a connection is not read */
#define OUT_RESUME_BYTES (1u << 20) /* ... until they are down to this */
#define ROWS_MIN (64u << 10)   /* raw frames from this size are prepared as they are read (rows.c) */
#define BIG_REALIGN_MAX (2u << 20) /* bytes of a large frame worth moving to realign it */
#define PARK_MIN (512u << 10)        /* bytes left in a frame worth parking (spill.c) */
#define PARK_MAX (32u << 20)         /* larger frames are read: more pipes than it is worth */
#define TAG_LISTEN 0xFFFFFFF0u
#define TAG_MAILBOX 0xFFFFFFF1u
#define TAG_SIGNAL 0xFFFFFFF2u

double srv_ms_since(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) * 1e3 + (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

int64_t srv_epoch_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Frame buffers are reused: a 1920x1080 raw frame is 6 MB, and a fresh
 * allocation of that size is a fresh mapping whose pages fault in one by
 * one on every frame. Each buffer carries a header just before the frame:
 * its capacity and how far the frame sits from the start of the allocation,
 * which can change (srv_buf_align). Used by the I/O thread only. */
typedef struct {
    size_t cap;   /* bytes the frame may use */
    size_t shift; /* frame start - (allocation start + BUF_HDR), < BUF_SLACK */
} bufhdr_t;
#define BUF_HDR sizeof(bufhdr_t)
#define BUF_SLACK 64

static bufhdr_t buf_hdr(const uint8_t *buf) {
    bufhdr_t h;
    memcpy(&h, buf - BUF_HDR, sizeof h);
    return h;
}

static uint8_t *buf_base(const uint8_t *buf) { return (uint8_t *)buf - BUF_HDR - buf_hdr(buf).shift; }

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

uint8_t *srv_buf_get(server_t *s, size_t need) {
    /* the smallest that fits; among equals the one put back last, whose
     * pages are the most likely still in cache */
    int best = -1;
    for (int i = s->nbufs - 1; i >= 0; i--)
        if (s->bufs_cap[i] >= need && (best < 0 || s->bufs_cap[i] < s->bufs_cap[best])) best = i;
    if (best >= 0) {
        uint8_t *p = s->bufs[best];
        s->bufs[best] = s->bufs[s->nbufs - 1];
        s->bufs_cap[best] = s->bufs_cap[s->nbufs - 1];
        s->nbufs--;
        return p;
    }
    uint8_t *base;
    if (need > SIZE_MAX - BUF_HDR - BUF_SLACK || !(base = malloc(need + BUF_HDR + BUF_SLACK)))
        return NULL;
    return buf_place(base, need, shift_for(base, 0));
}

/* Move the first `used` bytes of a frame so that its byte `at` lands on a
 * 64-byte boundary; returns the frame's new start. The kernel copies pipe
 * pages into a destination at about a third of the speed when the
 * destination is not aligned like the page it copies from. */
uint8_t *srv_buf_align(uint8_t *buf, size_t used, size_t at) {
    uint8_t *base = buf_base(buf);
    bufhdr_t h = buf_hdr(buf);
    size_t shift = shift_for(base, at);
    if (shift == h.shift) return buf;
    uint8_t *to = base + shift + BUF_HDR;
    memmove(to, buf, used);
    return buf_place(base, h.cap, shift);
}

void srv_buf_put(server_t *s, uint8_t *buf) {
    if (!buf) return;
    size_t cap = buf_hdr(buf).cap;
    if (s->nbufs < SRV_BUF_KEEP) {
        s->bufs[s->nbufs] = buf;
        s->bufs_cap[s->nbufs++] = cap;
        return;
    }
    /* full: keep the larger of it and the smallest kept */
    int small = 0;
    for (int i = 1; i < s->nbufs; i++)
        if (s->bufs_cap[i] < s->bufs_cap[small]) small = i;
    if (s->bufs_cap[small] < cap) {
        free(buf_base(s->bufs[small]));
        s->bufs[small] = buf;
        s->bufs_cap[small] = cap;
    } else {
        free(buf_base(buf));
    }
}

void srv_buf_free_all(server_t *s) {
    for (int i = 0; i < s->nbufs; i++) free(buf_base(s->bufs[i]));
    s->nbufs = 0;
}

static void set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* epoll data: connection ids for connections (both of a stdio pair), tags
 * for the rest. */
static int ep_add(server_t *s, int fd, uint32_t events, uint32_t tag) {
    struct epoll_event ev = {.events = events, .data.u32 = tag};
    return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void ep_mod(server_t *s, int fd, uint32_t events, uint32_t tag) {
    struct epoll_event ev = {.events = events, .data.u32 = tag};
    epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev);
}

conn_t *srv_conn_find(server_t *s, uint32_t id) {
    for (conn_t *c = s->conns; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}

static conn_t *conn_new(server_t *s, int rfd, int wfd, int stdio) {
    conn_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->id = ++s->next_conn_id;
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
        ep_add(s, rfd, EPOLLIN, c->id);
    } else {
        ep_add(s, rfd, EPOLLIN | EPOLLRDHUP, c->id);
    }
    c->next = s->conns;
    s->conns = c;
    return c;
}

static void conn_free(server_t *s, conn_t *c) {
    srv_shm_conn_closed(s, c->id);
    srv_streams_conn_closed(s, c->id);
    conn_t **pp = &s->conns;
    while (*pp && *pp != c) pp = &(*pp)->next;
    if (*pp) *pp = c->next;
    if (c->rfd >= 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->rfd, NULL);
        if (!c->stdio) close(c->rfd);
    }
    if (c->stdio && c->want_write) epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->wfd, NULL);
    for (outbuf_t *o = c->out_head, *n; o; o = n) {
        n = o->next;
        osp_jw_free(&o->w);
        free(o);
    }
    free(c->in);
    if (c->big) srv_buf_put(s, c->big);
    srv_spill_free(c->spill);
    srv_rows_free(s, c->rows);
    srv_relay_close(c);
    free(c);
}

static void conn_set_pause(server_t *s, conn_t *c, int reason, int on);

/* Write what can be written now; arm EPOLLOUT for the rest. A connection
 * whose replies pile up unread past OUT_PAUSE_BYTES is not read until they
 * are down to OUT_RESUME_BYTES: a host that sends without reading waits,
 * as it would on a server that writes its replies in order, instead of
 * growing the server's memory and taking the I/O thread from everyone
 * else. */
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
            osp_jw_free(&o->w);
            free(o);
        }
    }
    if ((c->paused & PAUSE_OUTPUT) && (c->out_bytes <= OUT_RESUME_BYTES || c->write_failed))
        resume = 1;
    int want = c->out_head != NULL && !c->write_failed;
    if (want != c->want_write) {
        if (c->stdio) {
            if (want)
                ep_add(s, c->wfd, EPOLLOUT, c->id);
            else
                epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->wfd, NULL);
        } else {
            ep_mod(s, c->rfd, (c->read_closed || c->fatal || c->paused ? 0 : EPOLLIN | EPOLLRDHUP) |
                                  (want ? EPOLLOUT : 0), c->id);
        }
        c->want_write = want;
    }
    if (resume) conn_set_pause(s, c, PAUSE_OUTPUT, 0);
}

static void conn_parse(server_t *s, conn_t *c);
static void maybe_park(server_t *s, conn_t *c);

/* Stop or resume reading a connection for one reason (PAUSE_*); it reads
 * again when no reason is left. */
static void conn_set_pause(server_t *s, conn_t *c, int reason, int on) {
    int was = c->paused;
    c->paused = on ? was | reason : was & ~reason;
    if (!was == !c->paused || c->read_closed || c->fatal) return;
    int paused = c->paused != 0;
    if (c->stdio) {
        if (paused)
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->rfd, NULL);
        else
            ep_add(s, c->rfd, EPOLLIN, c->id);
    } else {
        ep_mod(s, c->rfd, (paused ? 0 : EPOLLIN | EPOLLRDHUP) | (c->want_write ? EPOLLOUT : 0), c->id);
    }
    if (!paused && c->in_len) conn_parse(s, c); /* frames that arrived while it was paused */
}

void srv_conn_pause(server_t *s, conn_t *c, int paused) { conn_set_pause(s, c, PAUSE_LOADING, paused); }

void srv_send(server_t *s, conn_t *c, osp_jw_t *frame) {
    if (!c || c->write_failed || frame->len == 0) {
        osp_jw_reset(frame);
        return;
    }
    outbuf_t *o = calloc(1, sizeof *o);
    if (!o) return;
    o->w = *frame; /* take the buffer */
    memset(frame, 0, sizeof *frame);
    if (c->out_tail)
        c->out_tail->next = o;
    else
        c->out_head = o;
    c->out_tail = o;
    c->out_bytes += o->w.len;
    if (!c->want_write) conn_flush(s, c);
    if (c->out_bytes > OUT_PAUSE_BYTES && !c->write_failed) conn_set_pause(s, c, PAUSE_OUTPUT, 1);
}

void srv_send_json_reply(server_t *s, uint32_t conn_id, uint32_t req_id, osp_jw_t *frame) {
    (void)req_id;
    srv_send(s, srv_conn_find(s, conn_id), frame);
}

/* Parse whole frames out of the staging buffer; large frames get their own
 * buffer and are read straight into it. */
static void conn_parse(server_t *s, conn_t *c) {
    size_t off = 0;
    while (!c->fatal && !c->paused && c->in_len - off > 0) {
        osp_wire_frame_t f;
        size_t need = 0;
        int r = osp_wire_scan(c->in + off, c->in_len - off, s->opts.max_frame, &f, &need);
        if (r == OSP_WIRE_ETOOBIG) {
            osp_jw_t w = {0};
            size_t at = osp_wire_reply_begin(&w);
            osp_wire_json_too_large(&w, f.total_len, s->opts.max_frame ? s->opts.max_frame
                                                                       : OSP_WIRE_MAX_FRAME_DEFAULT);
            osp_wire_reply_end(&w, at, f.req_id);
            srv_send(s, c, &w);
            osp_jw_free(&w);
            fprintf(stderr, "ospreyd: frame of %u bytes (req %u) exceeds the limit; closing the connection\n",
                    f.total_len, f.req_id);
            c->fatal = 1;
            s->counters.errors++;
            break;
        }
        if (r == 1 && f.frame_len >= ROWS_MIN && srv_rows_begin(s, c, c->in + off, f.frame_len, f.frame_len)) {
            off += f.frame_len; /* prepared where it lies */
            continue;
        }
        if (r == 1) {
            uint8_t *copy = srv_buf_get(s, f.frame_len);
            if (!copy) {
                c->fatal = 1;
                break;
            }
            memcpy(copy, c->in + off, f.frame_len);
            off += f.frame_len;
            srv_on_frame(s, c, copy, f.frame_len);
            continue;
        }
        /* incomplete: a large frame whose header is known is prepared as it
         * is read (rows.c) or moves to its own buffer */
        if (c->in_len - off >= 9 && f.frame_len >= ROWS_MIN &&
            srv_rows_begin(s, c, c->in + off, c->in_len - off, f.frame_len)) {
            off = c->in_len;
        } else if (c->in_len - off >= 9 && f.frame_len > STAGE_CAP) {
            if (!(c->big = srv_buf_get(s, f.frame_len))) {
                c->fatal = 1;
                break;
            }
            c->big_len = f.frame_len;
            c->big_got = c->in_len - off;
            c->big_aligns = 0;
            c->big_drained = 0;
            c->spill_stopped = 0;
            memcpy(c->big, c->in + off, c->big_got);
            off = c->in_len;
            maybe_park(s, c);
        }
        break;
    }
    if (off) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
}

/* More input on its way: a frame partly read, or bytes waiting in a
 * connection. A frame admitted now that would otherwise run alone will
 * soon have company, and the I/O thread needs a core to read it. */
int srv_input_waiting(server_t *s) {
    for (conn_t *c = s->conns; c; c = c->next) {
        if (c->read_closed || c->fatal) continue;
        if (c->big || srv_rows_active(c->rows)) return 1;
        int n = 0;
        if (ioctl(c->rfd, FIONREAD, &n) == 0 && n > 0) return 1;
    }
    return 0;
}

/* Hand finished jobs to the router: replies out, freed run slots refilled. */
static void drain_done(server_t *s) {
    osp_qnode_t *q = osp_mailbox_take(&s->done);
    while (q) {
        osp_qnode_t *next = q->next;
        srv_on_job_done(s, (job_t *)q);
        q = next;
    }
}

/* The large frame being read is complete: hand it on (with its parked
 * part, if any). */
static void big_done(server_t *s, conn_t *c) {
    uint8_t *frame = c->big;
    size_t len = c->big_len;
    c->big = NULL;
    c->big_len = c->big_got = 0;
    if (c->spill) {
        srv_spill_seal(c->spill);
        s->frame_spill = c->spill;
        c->spill = NULL;
    }
    srv_on_frame(s, c, frame, len);
    srv_spill_free(s->frame_spill); /* not taken by a job: an error reply needed no pixels */
    s->frame_spill = NULL;
}

/* Park the rest of a large raw frame in pipes (spill.c) under overload: it
 * is likely to be shed before it runs (srv_likely_shed). Tried as soon as
 * the frame's header is read, so that none of its pixels but those already
 * in the staging buffer are copied (the host has usually filled the pipe
 * by then: a pipeful, 1 MiB, that would otherwise be read first), and again
 * at the first read that emptied the pipe.
 *
 * If the frame runs, a prepare worker reads the parked bytes back
 * (srv_rows_parked, or srv_spill_fill into the frame buffer), at full speed
 * only where its reads line up with the host's pages. Pages that follow a
 * point where the connection's pipe was emptied start there, and a host's
 * pages before it end there; so the first such point is noted
 * (srv_spill_mark) and the frame buffer aligned there (srv_buf_align), once
 * parking is under way (conn_read), or at once when parking starts at one. */
static void maybe_park(server_t *s, conn_t *c) {
    if (!c->handshaken || s->stopping || s->batch_mode != OSP_WIRE_BATCH_NONE ||
        c->big_len - c->big_got < PARK_MIN || c->big_len > PARK_MAX || c->big[8] != OSP_WIRE_MSG_INFER_RAW)
        return;
    size_t at = 9 + (c->version >= 2 ? 8 : 0); /* the raw header, after any deadline prefix */
    if (c->big_got <= at) return;
    int idx = c->big[at];
    if (idx >= s->nslots || !s->slots[idx] || !srv_likely_shed(s, idx)) return;
    if (!(c->spill = srv_spill_new(c->big_got))) return;
    s->frames_parked++;
    c->spill_from = c->big_got;
    if (c->big_drained) srv_spill_mark(c->spill, c->big_got); /* big is lined up already */
}

static void conn_read(server_t *s, conn_t *c) {
    for (int rounds = 0; rounds < 64 && !c->read_closed && !c->fatal && !c->paused; rounds++) {
        /* a host that keeps the pipe full keeps this loop busy for many
         * frames; a worker that finished meanwhile must not wait for it to
         * get its next frame */
        if (rounds && osp_mailbox_waiting(&s->done)) drain_done(s);
        if (c->read_closed || c->fatal || c->paused) break;
        if (srv_rows_active(c->rows)) {
            int st = srv_rows_step(s, c);
            if (st == ROWS_WAIT) break;
            if (st == ROWS_EOF) {
                c->read_closed = 1;
                break;
            }
            continue;
        }
        if (c->spill && !c->spill_stopped) { /* a parked frame: its bytes go pipe to pipe */
            size_t moved = 0;
            int st = srv_spill_step(c->spill, c->rfd, c->big_len - c->big_got, &moved);
            c->big_got += moved;
            size_t mark;
            if (st == SPILL_WAIT && !srv_spill_lattice(c->spill, &mark)) { /* the pipe was just emptied */
                c->big = srv_buf_align(c->big, c->spill_from, c->big_got);
                srv_spill_mark(c->spill, c->big_got);
            }
            if (c->big_got == c->big_len) {
                big_done(s, c);
                continue;
            }
            if (st == SPILL_WAIT) break;
            if (st == SPILL_EOF) {
                c->read_closed = 1;
                break;
            }
            if (st == SPILL_STOPPED) c->spill_stopped = 1; /* what is parked stays; the rest is read */
            continue;
        }
        uint8_t *dst;
        size_t room;
        if (c->big) {
            dst = c->big + c->big_got;
            room = c->big_len - c->big_got;
        } else {
            if (c->in_cap - c->in_len < 4096) {
                size_t cap = c->in_cap * 2;
                if (cap > STAGE_CAP + 64) cap = STAGE_CAP + 64;
                if (cap > c->in_cap) {
                    uint8_t *n = realloc(c->in, cap);
                    if (!n) {
                        c->fatal = 1;
                        break;
                    }
                    c->in = n;
                    c->in_cap = cap;
                }
            }
            dst = c->in + c->in_len;
            room = c->in_cap - c->in_len;
        }
        ssize_t r = c->big ? srv_relay_read(s, c, dst, room) : read(c->rfd, dst, room);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            c->read_closed = 1;
            break;
        }
        if (r == 0) {
            c->read_closed = 1;
            break;
        }
        if (c->big) {
            c->big_got += (size_t)r;
            /* A read that emptied the pipe ended where the writer's pipe
             * pages end, and the pages that follow start there: put that
             * point on a 64-byte boundary while little has been read, so the
             * rest of the frame is copied in at full speed. */
            if ((size_t)r < room && c->big_got < c->big_len && c->big_got <= BIG_REALIGN_MAX &&
                c->big_aligns < 2 && (uintptr_t)(c->big + c->big_got) % 64 != 0) {
                c->big = srv_buf_align(c->big, c->big_got, c->big_got);
                c->big_aligns++;
            }
            if ((size_t)r < room && !c->big_drained) {
                c->big_drained = 1;
                maybe_park(s, c);
            }
            if (c->big_got == c->big_len) big_done(s, c);
        } else {
            c->in_len += (size_t)r;
            conn_parse(s, c);
        }
    }
    if (c->read_closed || c->fatal) {
        if (c->rfd >= 0) {
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->rfd, NULL);
            if (!c->stdio && c->want_write) ep_add(s, c->rfd, EPOLLOUT, c->id);
        }
        if (c->stdio && c->read_closed && (c->in_len || c->big || srv_rows_active(c->rows)))
            fprintf(stderr, "ospreyd: stdin closed inside a frame; the partial frame is ignored\n");
    }
}

/* A connection is finished when it reads no more, owes no replies and has
 * written everything (or its peer is gone). */
static int conn_done(const conn_t *c) {
    return (c->read_closed || c->fatal) && c->inflight == 0 &&
           (c->out_head == NULL || c->write_failed);
}

static int listen_on(const char *spec, char *err, size_t errlen) {
    int fd = -1;
    if (strncmp(spec, "unix:", 5) == 0) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(spec + 5) >= sizeof sa.sun_path) {
            snprintf(err, errlen, "socket path too long: %s", spec + 5);
            return -1;
        }
        strcpy(sa.sun_path, spec + 5);
        unlink(sa.sun_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) goto sys_fail;
    } else if (strncmp(spec, "tcp:", 4) == 0) {
        char host[256];
        const char *colon = strrchr(spec + 4, ':');
        if (!colon || (size_t)(colon - (spec + 4)) >= sizeof host) {
            snprintf(err, errlen, "--listen tcp: needs HOST:PORT, got %s", spec);
            return -1;
        }
        memcpy(host, spec + 4, (size_t)(colon - (spec + 4)));
        host[colon - (spec + 4)] = '\0';
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *ai = NULL;
        int gr = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
        if (gr != 0) {
            snprintf(err, errlen, "cannot resolve %s: %s", spec, gai_strerror(gr));
            return -1;
        }
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
            freeaddrinfo(ai);
            goto sys_fail;
        }
        freeaddrinfo(ai);
    } else {
        snprintf(err, errlen, "--listen takes unix:PATH or tcp:HOST:PORT, not '%s'", spec);
        return -1;
    }
    if (listen(fd, 64) < 0) goto sys_fail;
    set_nonblock(fd);
    return fd;
sys_fail:
    snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
}

static void on_accept(server_t *s) {
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        if (s->stopping || !conn_new(s, fd, fd, 0)) close(fd);
    }
}

static void start_stopping(server_t *s) {
    if (s->stopping) return;
    s->stopping = 1;
    if (s->listen_fd >= 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->listen_fd, NULL);
        close(s->listen_fd);
        s->listen_fd = -1;
    }
    for (conn_t *c = s->conns; c; c = c->next)
        if (!c->read_closed) {
            c->read_closed = 1;
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->rfd, NULL);
            if (!c->stdio && c->want_write) ep_add(s, c->rfd, EPOLLOUT, c->id);
        }
}

int srv_loop(server_t *s) {
    struct epoll_event evs[64];
    int exit_code = 0;
    for (;;) {
        /* retire finished connections; in stdio mode that is the end */
        for (conn_t *c = s->conns, *n; c; c = n) {
            n = c->next;
            if (!conn_done(c)) continue;
            if (c->stdio) {
                if (c->fatal) exit_code = 1;
                if (!srv_idle(s)) continue; /* a load or command may still answer */
                conn_free(s, c);
                return exit_code;
            }
            conn_free(s, c);
        }
        if (s->stopping && !s->conns && srv_idle(s)) return exit_code;
        int timeout = srv_timer_ms(s), wt = srv_window_timer_ms(s);
        if (wt >= 0 && (timeout < 0 || wt < timeout)) timeout = wt;
        int n = epoll_wait(s->epfd, evs, 64, timeout);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "ospreyd: epoll_wait: %s\n", strerror(errno));
            return 1;
        }
        for (int i = 0; i < n; i++) {
            uint32_t tag = evs[i].data.u32;
            if (tag == TAG_MAILBOX) {
                drain_done(s);
            } else if (tag == TAG_SIGNAL) {
                struct signalfd_siginfo si;
                while (read(s->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
                    fprintf(stderr, "ospreyd: %s: finishing what is in flight, then exiting\n",
                            strsignal((int)si.ssi_signo));
                start_stopping(s);
            } else if (tag == TAG_LISTEN) {
                on_accept(s);
            } else {
                conn_t *c = srv_conn_find(s, tag);
                if (!c) continue;
                if (evs[i].events & EPOLLOUT) conn_flush(s, c);
                if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR) && !c->read_closed &&
                    !c->fatal)
                    conn_read(s, c);
                if (c->stdio && (evs[i].events & (EPOLLERR | EPOLLHUP)) && c->want_write &&
                    !(evs[i].events & EPOLLIN))
                    c->write_failed = 1;
            }
        }
        srv_check_timers(s);
        srv_window_flush_due(s);
    }
}

static server_t *g_server_for_exit;

int osp_server_run(const osp_server_opts_t *opts) {
    server_t *s = calloc(1, sizeof *s);
    if (!s) return 1;
    g_server_for_exit = s;
    s->opts = *opts;
    s->listen_fd = -1;
    pthread_mutex_init(&s->ctx_mu, NULL);
    clock_gettime(CLOCK_MONOTONIC, &s->started);
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (s->epfd < 0 || osp_mailbox_init(&s->done)) {
        fprintf(stderr, "ospreyd: cannot set up the event loop: %s\n", strerror(errno));
        return 1;
    }
    ep_add(s, s->done.efd, EPOLLIN, TAG_MAILBOX);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    pthread_sigmask(SIG_BLOCK, &mask, NULL); /* inherited by every thread started after */
    signal(SIGPIPE, SIG_IGN);
    s->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s->sigfd >= 0) ep_add(s, s->sigfd, EPOLLIN, TAG_SIGNAL);
    if (!(s->cache = osp_cache_new(256, 256, (size_t)1 << 30))) return 1;

    int rc = srv_start(s);
    if (rc) return rc;
    if (opts->listen) {
        char err[256];
        if ((s->listen_fd = listen_on(opts->listen, err, sizeof err)) < 0) {
            fprintf(stderr, "ospreyd: %s\n", err);
            return 1;
        }
        ep_add(s, s->listen_fd, EPOLLIN, TAG_LISTEN);
        fprintf(stderr, "ospreyd: listening on %s\n", opts->listen);
    } else {
        if (!conn_new(s, 0, 1, 1)) return 1;
    }
    rc = srv_loop(s);
    srv_stop(s);
    return rc;
}
