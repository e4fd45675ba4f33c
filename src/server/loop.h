/*
 * loop: the I/O thread's event loop — epoll over the connections, the
 * listening socket, the mailbox through which workers hand back finished
 * jobs, signals, and the timers of model loads and batch windows. It
 * never blocks on anything but epoll_wait. The struct is private to
 * loop.c.
 */
#ifndef OSP_LOOP_H
#define OSP_LOOP_H

#include <stdint.h>

#include "server/job.h"
#include "server/srv.h"

/* epoll tags at or above this are not connections */
#define SRV_TAG_FIRST_RESERVED 0xFFFFFFF0u

srv_loop_t *srv_loop_new(void);
void srv_loop_free(srv_loop_t *l);

/* Watch fd for events, reported to connection `tag` (srv_conn_event). */
int srv_loop_add(server_t *s, int fd, uint32_t events, uint32_t tag);
void srv_loop_mod(server_t *s, int fd, uint32_t events, uint32_t tag);
void srv_loop_del(server_t *s, int fd);

/* Serve connections on spec ("unix:PATH" or "tcp:HOST:PORT"); 0 or -1
 * with the reason in err. A unix socket file at PATH that a server
 * answers on is refused, one that none answers on is replaced; the file
 * is removed when the server stops listening. */
int srv_loop_listen(server_t *s, const char *spec, char *err, size_t errlen);
/* Whether srv_loop_listen would refuse spec because of what is at its
 * path now (checked before the models load, and again at the bind);
 * touches nothing. 0, or -1 with the reason in err. */
int srv_loop_listen_check(const char *spec, char *err, size_t errlen);

/* Hand a finished job back to the I/O thread: any thread. */
void srv_post(server_t *s, srv_job_t *j);
/* On the I/O thread: finish every job posted so far (each one's done). */
void srv_drain(server_t *s);
/* Whether jobs wait in the mailbox (cheap: no system call). */
int srv_posted(server_t *s);

/* Run until the server is finished; returns the exit status. */
int srv_loop_run(server_t *s);

#endif
