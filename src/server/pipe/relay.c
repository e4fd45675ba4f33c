/*
 * Large reads through a pipe of the server's own.
 *
 * A pipe has one lock, held by whichever side is copying. A host that
 * write(2)s a 6 MB frame copies it into the pipe a page at a time under
 * that lock, and a server read(2)ing the other end copies it out under the
 * same lock: the two copies take turns instead of overlapping, and each
 * side spins while the other holds it. Splicing the connection's bytes
 * into a pipe of the server's own moves page references, not bytes, so
 * the connection's lock is held only for that; the copy out then runs on
 * the relay pipe, which nobody else touches, while the host goes on
 * copying. A writer thread and a reader thread moving 6 MB frames through
 * a 1 MiB pipe here: with write(2), 1.7-1.9 ms a frame instead of 3.1-3.3;
 * with vmsplice(2), 0.50-0.56 ms instead of 0.59-0.65, and the writer
 * spent half as much CPU waiting for the lock. ospreyd's latency at one
 * frame in flight (loadgen --plain-write, ssd-oidv4 at 1920x1080, paired)
 * went from 5.7-6.7 ms over the raw run to 5.0-5.5.
 *
 * The relay is empty between calls: every byte spliced in is copied out
 * before srv_relay_read returns, so it never holds part of the stream and
 * the connection's descriptor stays the only thing to poll. Sockets, a
 * connection whose descriptor cannot be spliced, or one for which no
 * relay can be made read directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/pipe/ingest.h"
#include "server/core/stats.h"

#define RELAY_MIN (16u << 10) /* smaller reads go straight to the connection */

struct srv_relay {
    int rd, wr; /* the relay pipe */
    size_t cap; /* its size; 0: none (off) */
    int off;    /* the connection is read directly */
};

long srv_pipe_open(int p[2]) {
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC)) return -1;
    (void)fcntl(p[1], F_SETPIPE_SZ, (int)SRV_PIPE_BYTES);
    int cap = fcntl(p[1], F_GETPIPE_SZ);
    return cap > 0 ? cap : 4096;
}

static void relay_close(srv_relay_t *r) {
    if (!r->cap) return;
    close(r->rd);
    close(r->wr);
    r->cap = 0;
}

void srv_relay_free(srv_relay_t *r) {
    if (!r) return;
    relay_close(r);
    free(r);
}

/* The relay, or NULL if there is none to be had (read directly).
 * Only a pipe gains from it: a socket's reader does not take turns with
 * its writer, and splicing from TCP let whole frames pile up in the
 * receive buffer before a read, so frames that should have been parked
 * under overload (spill.c) were copied instead. */
static srv_relay_t *relay_open(srv_relay_t **rp, int fd) {
    srv_relay_t *r = *rp;
    if (r && r->cap) return r;
    if (r && r->off) return NULL;
    if (!r && !(r = *rp = calloc(1, sizeof *r))) return NULL;
    struct stat st;
    int p[2];
    long cap;
    if (fstat(fd, &st) || !S_ISFIFO(st.st_mode) || (cap = srv_pipe_open(p)) < 0) {
        r->off = 1;
        return NULL;
    }
    r->rd = p[0];
    r->wr = p[1];
    r->cap = (size_t)cap;
    return r;
}

/* Copy out n bytes just spliced into the relay: they are all there, so
 * anything short of n is the relay failing. */
static int relay_drain(srv_relay_t *rl, uint8_t *dst, size_t n) {
    size_t at = 0;
    while (at < n) {
        ssize_t r = read(rl->rd, dst + at, n - at);
        if (r > 0) {
            at += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        return -1;
    }
    return 0;
}

ssize_t srv_relay_read(server_t *s, srv_relay_t **rp, int fd, void *dst, size_t want, int *broken) {
    srv_relay_t *rl;
    if (want < RELAY_MIN || !(rl = relay_open(rp, fd))) return read(fd, dst, want);
    /* as read(2), take what is there now and no more: callers take a short
     * read for a connection just emptied (osp_buf_align, parking). Without
     * the limit, splicing on while the host keeps writing would chase it
     * to the end of the frame. */
    int avail = 0;
    if (ioctl(fd, FIONREAD, &avail) == 0 && avail > 0 && (size_t)avail < want)
        want = (size_t)avail;
    uint8_t *d = dst;
    size_t got = 0;
    while (got < want) {
        size_t n = want - got < rl->cap ? want - got : rl->cap;
        ssize_t r = splice(fd, NULL, rl->wr, NULL, n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (r > 0) {
            if (relay_drain(rl, d + got, (size_t)r)) {
                /* the bytes are out of the connection and not in the frame:
                 * the stream cannot go on */
                *broken = 1;
                errno = EIO;
                return -1;
            }
            got += (size_t)r;
            srv_stat_add(s, SRV_ST_BYTES_RELAYED, r);
            if ((size_t)r < n || avail <= 0) break; /* emptied, or nothing was said to be there */
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EINVAL || errno == ENOSYS) && got == 0) {
            /* a descriptor splice cannot take: read it directly from now on */
            relay_close(rl);
            rl->off = 1;
            return read(fd, dst, want);
        }
        if (got > 0) return (ssize_t)got; /* empty now (or closed): what came is the answer */
        return r; /* 0 at the end of the stream, -1 with errno (EAGAIN: nothing yet) */
    }
    return (ssize_t)got;
}
