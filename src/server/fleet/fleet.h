/*
 * fleet: ospreyd as one worker of many that share a durable job queue
 * (--jobs URL, docs/fleet.md). Two threads of its own, each with its own
 * engine connection (jobs/jobs.h): osp-fleet claims jobs, never more than
 * the admission bound admits, and takes over the jobs of dead workers;
 * osp-fleet-ack files each result and acknowledges its job in one step.
 * The I/O thread owns everything in between: each job comes to it as an
 * event through the loop's mailbox (srv_post) and becomes a frame job
 * that passes the same deadline gate, admission and pools as a pipe
 * host's (srv_dispatch_submit). The struct is private to fleet.c.
 */
#ifndef OSP_FLEET_H
#define OSP_FLEET_H

#include <stddef.h>

#include "server/core/frontend.h"
#include "server/core/srv.h"

/* Check s->opts.jobs, measure the models, start both threads (a queue
 * that cannot be reached yet is retried, logged). NULL with the reason in
 * err: a bad URL or option, no model to serve. Main thread, after the
 * models are loaded and before the loop runs. */
srv_fleet_t *srv_fleet_start(server_t *s, char *err, size_t errlen);
/* SIGTERM or SIGINT (I/O thread): claim nothing more. What is held is
 * finished, filed and acknowledged. */
void srv_fleet_stop_claiming(srv_fleet_t *f);
/* File what is still to be filed (bounded: a queue that stays away
 * leaves those jobs pending, for another worker), stop both threads, free
 * everything. After the pools. NULL is ignored. */
void srv_fleet_free(srv_fleet_t *f);

/* The front end, as server.c starts and stops it (core/frontend.h). */
extern const srv_frontend_t srv_fleet_frontend;

#endif
