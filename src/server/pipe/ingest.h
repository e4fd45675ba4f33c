/*
 * ingest: the ways a large frame's bytes come in, each in its own file,
 * each a state of the connection's reader (conn.c):
 *
 *  - rows.c: a raw RGB/BGR frame that will probably run is prepared as it
 *    is read, a pipeful at a time through a ring that stays in cache;
 *  - big.c: any other large frame is read whole into a pooled buffer,
 *    and a raw frame that will probably be shed is parked instead
 *    (spill.c: its pixels spliced into pipes of the server's own);
 *  - relay.c: large reads from a pipe pass through a pipe of the
 *    server's own, so the host's copy in and ours out overlap.
 *
 * Every step returns an srv_in_t: go on, wait for the connection, it
 * ended, or the frame is done (handed on: the core's door for a frame
 * prepared as read, the connection's ops->frame for a whole one). conn.c
 * reaches the modes only through its ops table (conn.h).
 */
#ifndef OSP_INGEST_H
#define OSP_INGEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/core/job.h"
#include "server/core/srv.h"

typedef enum { SRV_IN_MORE, SRV_IN_WAIT, SRV_IN_EOF, SRV_IN_DONE } srv_in_t;

/* ---- rows.c ---------------------------------------------------------------- */

typedef struct srv_rows srv_rows_t;
/* Take over the frame whose first `avail` bytes are at p (1: it is now
 * being read, or was prepared and submitted when avail == frame_len), or
 * leave it to be read otherwise (0). *rp: the connection's own, made on
 * first use. */
int srv_rows_begin(server_t *s, conn_t *c, srv_rows_t **rp, const uint8_t *p, size_t avail,
                   size_t frame_len);
srv_in_t srv_rows_step(server_t *s, conn_t *c, srv_rows_t *r);
int srv_rows_active(const srv_rows_t *r);
/* s may be NULL for a prepare worker's (srv_rows_parked): it holds no context. */
void srv_rows_free(server_t *s, srv_rows_t *r);
/* A prepare worker makes the tensor of job j, a parked RGB/BGR frame, from
 * its pipes a ring at a time (*rp: the worker's own, made on first use):
 * 1 when it is made, 0 when this frame is not for it (nothing was read:
 * fill the frame and prepare it whole), -1 on an error (err says it). */
int srv_rows_parked(srv_rows_t **rp, frame_job_t *j, char *err, size_t errlen);
/* The same as the core's parked-frame ops (exec.h), the spill read back
 * and given up too. */
extern const struct srv_parked_ops srv_rows_parked_ops;

/* ---- big.c ----------------------------------------------------------------- */

typedef struct srv_big srv_big_t;
/* Read the frame whose first `avail` (< frame_len) bytes are at p into a
 * buffer of its own, parking it if it will probably be shed. *bp: the
 * connection's own, made on first use. 0, or -1 when out of memory. */
int srv_big_begin(server_t *s, conn_t *c, srv_big_t **bp, const uint8_t *p, size_t avail,
                  size_t frame_len);
srv_in_t srv_big_step(server_t *s, conn_t *c, srv_big_t *b);
int srv_big_active(const srv_big_t *b);
void srv_big_free(server_t *s, srv_big_t *b);

/* ---- spill.c --------------------------------------------------------------- */

#define SPILL_MAX_PIPES 16
enum { SPILL_MORE, SPILL_WAIT, SPILL_EOF, SPILL_STOPPED };
spill_t *srv_spill_new(size_t off);
void srv_spill_free(spill_t *sp);
/* Move up to `want` bytes from fd `from` into the pipes; *moved says how
 * many. SPILL_WAIT: `from` is empty; SPILL_EOF: it is closed; SPILL_STOPPED:
 * parking is over, read the rest; SPILL_MORE: `want` reached. */
int srv_spill_step(spill_t *sp, int from, size_t want, size_t *moved);
/* All bytes are in: close the writing ends. */
void srv_spill_seal(spill_t *sp);
/* Copy the parked bytes into their place in the frame (a worker; the
 * whole of srv_spill_read at once); 0 or -1. */
int srv_spill_fill(spill_t *sp, uint8_t *frame);
/* The host's pages start at frame position `at` (the connection's pipe was
 * just emptied there), and every 4096 bytes before and after it. */
void srv_spill_mark(spill_t *sp, size_t at);
/* Where the parked bytes belong in the frame, and how many there are. */
size_t srv_spill_off(const spill_t *sp);
size_t srv_spill_len(const spill_t *sp);
/* The position srv_spill_mark gave, if any (1) or 0. */
int srv_spill_lattice(const spill_t *sp, size_t *at);
/* The next parked bytes in order, up to n, into dst (a worker, after the
 * seal): bytes read, 0 when all are read, -1 when some were lost. */
ssize_t srv_spill_read(spill_t *sp, uint8_t *dst, size_t n);

/* ---- relay.c --------------------------------------------------------------- */

typedef struct srv_relay srv_relay_t;
/* A large read from fd through the relay (*rp: made on first use, or
 * marked as not to be had): read(2)'s contract; *broken is set when bytes
 * were lost between the two pipes (the stream cannot go on). */
ssize_t srv_relay_read(server_t *s, srv_relay_t **rp, int fd, void *dst, size_t want, int *broken);
void srv_relay_free(srv_relay_t *r);
/* A non-blocking pipe of the server's own, asked to hold SRV_PIPE_BYTES
 * (relay.c, spill.c): its size, or -1. */
long srv_pipe_open(int p[2]);

#endif
