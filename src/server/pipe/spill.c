/*
 * Parking a large raw frame's pixels in pipes instead of memory.
 *
 * Under overload most large frames are shed: a newer one displaces them
 * from the pending queue before they run. Reading a 1920x1080 frame copies
 * 6 MB out of the connection's pipe (about 2 ms of the I/O thread here), a
 * cost wasted on every frame that is then shed. When a raw frame arrives
 * while its model has no free run slot and a full pending queue (it will
 * wait, and likely be shed), the I/O thread instead splices the rest of its
 * bytes into a few pipes of its own:
 * the kernel moves page references, nothing is copied. A frame that is shed
 * just closes them; one that runs is read out of them by the prepare
 * worker that takes it, off the I/O thread: through a ring into the
 * row-by-row preparation (srv_rows_parked, srv_spill_read), or, for formats
 * the rows do not take, into its buffer (srv_spill_fill).
 *
 * Parking starts with the read that brought the frame's header, so that
 * no more than the staging buffer took with it is copied. Where the
 * connection's pipe is first emptied the reader notes the position
 * (srv_spill_mark): the host's pages start there and every 4096 bytes
 * before and after, and the reads out of the pipes land those starts on
 * 64-byte boundaries (the frame buffer is lined up the same way,
 * osp_buf_align), so the kernel's copy runs at full speed. Anything
 * unexpected (a connection that cannot splice, more pipes than allowed)
 * stops parking and the rest is read as usual.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "server/pipe/ingest.h"

struct spill {
    int rd[SPILL_MAX_PIPES], wr[SPILL_MAX_PIPES];
    int n;          /* pipes opened */
    size_t off;     /* where the parked bytes belong in the frame */
    size_t len;     /* bytes parked */
    size_t lattice; /* a frame position where the host's pages start */
    int has_lattice;
    int cur;      /* srv_spill_read: the pipe being read */
    size_t taken; /* srv_spill_read: bytes read so far */
};

static int add_pipe(spill_t *sp) {
    if (sp->n == SPILL_MAX_PIPES) return -1;
    int p[2];
    if (srv_pipe_open(p) < 0) return -1; /* a smaller pipe only means more pipes */
    sp->rd[sp->n] = p[0];
    sp->wr[sp->n] = p[1];
    sp->n++;
    return 0;
}

spill_t *srv_spill_new(size_t off) {
    spill_t *sp = calloc(1, sizeof *sp);
    if (!sp) return NULL;
    sp->off = off;
    if (add_pipe(sp)) {
        free(sp);
        return NULL;
    }
    return sp;
}

void srv_spill_free(spill_t *sp) {
    if (!sp) return;
    for (int i = 0; i < sp->n; i++) {
        close(sp->rd[i]);
        if (sp->wr[i] >= 0) close(sp->wr[i]);
    }
    free(sp);
}

int srv_spill_step(spill_t *sp, int from, size_t want, size_t *moved) {
    *moved = 0;
    while (want > 0) {
        ssize_t r = splice(from, NULL, sp->wr[sp->n - 1], NULL, want,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (r > 0) {
            sp->len += (size_t)r;
            *moved += (size_t)r;
            want -= (size_t)r;
            continue;
        }
        if (r == 0) return SPILL_EOF;
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return SPILL_STOPPED; /* not spliceable: read the rest */
        int avail = 0;
        if (ioctl(from, FIONREAD, &avail) == 0 && avail == 0) return SPILL_WAIT;
        /* data waits but this pipe is full: the next one */
        if (add_pipe(sp)) return SPILL_STOPPED;
    }
    return SPILL_MORE;
}

void srv_spill_seal(spill_t *sp) {
    for (int i = 0; i < sp->n; i++) {
        if (sp->wr[i] >= 0) close(sp->wr[i]);
        sp->wr[i] = -1;
    }
}

void srv_spill_mark(spill_t *sp, size_t at) {
    sp->lattice = at;
    sp->has_lattice = 1;
}

size_t srv_spill_off(const spill_t *sp) { return sp->off; }

size_t srv_spill_len(const spill_t *sp) { return sp->len; }

int srv_spill_lattice(const spill_t *sp, size_t *at) {
    *at = sp->lattice;
    return sp->has_lattice;
}

ssize_t srv_spill_read(spill_t *sp, uint8_t *dst, size_t n) {
    while (sp->cur < sp->n && n > 0) {
        ssize_t r = read(sp->rd[sp->cur], dst, n);
        if (r > 0) {
            sp->taken += (size_t)r;
            return r;
        }
        if (r < 0 && errno == EINTR) continue;
        sp->cur++; /* this pipe is empty (sealed: end of its part) */
    }
    if (n == 0) return 0;
    return sp->taken == sp->len ? 0 : -1;
}

int srv_spill_fill(spill_t *sp, uint8_t *frame) {
    uint8_t *dst = frame + sp->off;
    ssize_t r;
    do r = srv_spill_read(sp, dst + sp->taken, sp->len - sp->taken);
    while (r > 0);
    return r < 0 ? -1 : 0;
}
