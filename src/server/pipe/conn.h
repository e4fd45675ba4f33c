/*
 * conn: a host's connection — the stdin/stdout pair of the drop-in mode,
 * or one accepted socket. Reading follows one explicit state (conn.c): the
 * staging buffer for headers and small frames, or one of the ingest modes
 * of ingest.h for a large frame. Writing queues whole reply frames and
 * writes what the peer takes without blocking. I/O thread only; the
 * struct is private to conn.c.
 */
#ifndef OSP_CONN_H
#define OSP_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/pipe/ingest.h"
#include "server/core/srv.h"
#include "wire/jsonw.h"

/* What a connection's input goes to, set when the connections are made
 * (server.c): conn.c names none of it. A whole request frame (taken;
 * spill: the part of its pixels parked in pipes, or NULL), a connection
 * gone (its id), whether nothing is left that may still answer the stdio
 * host (its end waits for that), and the ingest modes a large frame is
 * read in (ingest.h). */
typedef struct {
    void (*frame)(server_t *s, conn_t *c, uint8_t *frame, size_t len, spill_t *spill);
    void (*closed)(server_t *s, uint32_t conn_id);
    int (*idle)(server_t *s);
    int (*rows_begin)(server_t *s, conn_t *c, srv_rows_t **rp, const uint8_t *p, size_t avail,
                      size_t frame_len);
    srv_in_t (*rows_step)(server_t *s, conn_t *c, srv_rows_t *r);
    int (*rows_active)(const srv_rows_t *r);
    void (*rows_free)(server_t *s, srv_rows_t *r);
    int (*big_begin)(server_t *s, conn_t *c, srv_big_t **bp, const uint8_t *p, size_t avail,
                     size_t frame_len);
    srv_in_t (*big_step)(server_t *s, conn_t *c, srv_big_t *b);
    int (*big_active)(const srv_big_t *b);
    void (*big_free)(server_t *s, srv_big_t *b);
} srv_conn_ops_t;

srv_conns_t *srv_conns_new(const srv_conn_ops_t *ops);
/* Frees every connection left (their replies unsent). */
void srv_conns_free(server_t *s);

/* A connection on rfd/wfd (the same descriptor for a socket), watched by
 * the loop; stdio: the drop-in pair, never closed here. NULL when out of
 * memory. */
conn_t *srv_conn_new(server_t *s, int rfd, int wfd, int stdio);
conn_t *srv_conn_find(server_t *s, uint32_t id);
uint32_t srv_conn_id(const conn_t *c);
int srv_conn_is_stdio(const conn_t *c);
int srv_conn_handshaken(const conn_t *c);
int srv_conn_version(const conn_t *c); /* the negotiated wire version (1 before the handshake) */
void srv_conn_set_handshaken(server_t *s, conn_t *c, int version);
/* Stop reading; the connection closes once its replies are out (stdio:
 * the process exits 1). */
void srv_conn_fatal(conn_t *c);
/* Requests accepted on it and not yet answered. */
void srv_conn_inflight(conn_t *c, int delta);
/* Stop or resume reading while its handshake's models load. */
void srv_conn_pause_loading(server_t *s, conn_t *c, int paused);

/* Queue a reply frame (NULL c: the peer is gone, it is dropped). Takes the
 * frame's bytes and leaves *frame empty but with room, ready for reuse. */
void srv_send(server_t *s, conn_t *c, osp_jw_t *frame);
/* A reply buffer of the I/O thread's, empty and with room: write one
 * frame into it and srv_send it (which leaves it empty again). */
osp_jw_t *srv_reply_buf(server_t *s);
/* A copy of frame to every connection past its handshake (events). */
void srv_broadcast(server_t *s, const osp_jw_t *frame);

/* The loop's calls: an event on connection `id`, the end of a loop pass
 * (retire finished connections: returns 1 and *exit_code when the stdio
 * connection is finished, which ends the server), and shutdown (stop
 * reading everything). */
void srv_conn_event(server_t *s, uint32_t id, uint32_t events);
int srv_conns_retire(server_t *s, int *exit_code);
int srv_conns_empty(const server_t *s);
/* Socket connections must send their startup config within
 * opts.handshake_ms (SRV_HELLO_MS_DEFAULT when 0): milliseconds until the
 * next is due (-1: none waits), and close those past it. */
#define SRV_HELLO_MS_DEFAULT 10000
int srv_conns_hello_timer_ms(server_t *s);
void srv_conns_expire_hellos(server_t *s);
/* Read the connections epoll cannot watch (a stdin that is a file: always
 * readable); 1 when one was read, so the loop must not sleep before it
 * has looked again (it may have more, or be finished). */
int srv_conns_read_unpolled(server_t *s);
void srv_conns_stop_reading(server_t *s);
/* More input on its way: a frame partly read, or bytes waiting in a
 * connection (a frame admitted now will soon have company). */
int srv_input_waiting(server_t *s);

/* For the ingest modes (ingest.h): a read from the connection (through its
 * relay pipe for large reads from a pipe: relay.c), read(2)'s contract;
 * its descriptor (to splice from); and whether it can be parked (a pipe or
 * socket the kernel splices). */
ssize_t srv_conn_read(server_t *s, conn_t *c, void *dst, size_t want);
int srv_conn_fd(const conn_t *c);
/* An ingest mode's whole frame, to the connection's ops->frame (taken). */
void srv_conn_deliver(server_t *s, conn_t *c, uint8_t *frame, size_t len, spill_t *spill);

#endif
