/*
 * loop: the I/O thread's event loop — epoll over what registers with it,
 * the listening socket, the mailbox through which workers hand back
 * finished jobs, signals, and the timers of whatever registers one. Like
 * Redis's ae, it serves what is registered and names none of it: loop.c
 * includes no other part of the server. It never blocks on anything but
 * epoll_wait. The struct is private to loop.c; every call is the I/O
 * thread's but srv_post.
 */
#ifndef OSP_LOOP_H
#define OSP_LOOP_H

#include <stdint.h>

#include "server/core/job.h"
#include "server/core/srv.h"

/* epoll tags at or above this are the loop's own */
#define SRV_TAG_FIRST_RESERVED 0xFFFFFFF0u

srv_loop_t *srv_loop_new(void);
void srv_loop_free(srv_loop_t *l);

/* What the registered fd handler is told: events on an fd added with tag. */
typedef void (*srv_fd_fn)(server_t *s, uint32_t tag, uint32_t events);
/* The one handler of the fds added below (the connections'). */
void srv_loop_on_fd(server_t *s, srv_fd_fn fn);
/* Watch fd for events, reported to the fd handler with tag (below
 * SRV_TAG_FIRST_RESERVED). */
int srv_loop_add(server_t *s, int fd, uint32_t events, uint32_t tag);
void srv_loop_mod(server_t *s, int fd, uint32_t events, uint32_t tag);
void srv_loop_del(server_t *s, int fd);

/* A timer source: due_ms says in how many milliseconds it is next due
 * (-1: not), and fire runs what is due; fire is called after every wakeup
 * (it finds out itself whether anything is due). 0, or -1 when the table
 * (SRV_LOOP_TIMERS) is full. */
#define SRV_LOOP_TIMERS 8
int srv_loop_timer(server_t *s, int (*due_ms)(server_t *s), void (*fire)(server_t *s));
/* fn is called once, in the order registered, when a signal starts the
 * server's stop. 0, or -1 when the table (SRV_LOOP_TIMERS long) is full. */
int srv_loop_on_stop(server_t *s, void (*fn)(server_t *s));
/* fn is called, in the order registered, each time SIGHUP arrives (before
 * the stop; SIGHUP never stops the server). 0, or -1 when the table is
 * full. */
int srv_loop_on_hup(server_t *s, void (*fn)(server_t *s));

/* Serve connections on spec ("unix:PATH" or "tcp:HOST:PORT"): each
 * accepted socket goes to on_accept, which owns it. 0 or -1 with the
 * reason in err. A unix socket file at PATH that a server answers on is
 * refused, one that none answers on is replaced; the file is removed when
 * the server stops listening. */
int srv_loop_listen(server_t *s, const char *spec, void (*on_accept)(server_t *s, int fd),
                    char *err, size_t errlen);
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

/* Run until finished says the server is (1, with *exit_code set or left
 * at 0), asked before each wait; busy says there is work that needs no
 * event, so the wait must not sleep. Returns the exit status. */
typedef struct {
    int (*finished)(server_t *s, int *exit_code);
    int (*busy)(server_t *s);
} srv_loop_run_t;
int srv_loop_run(server_t *s, const srv_loop_run_t *run);

#endif
