/*
 * watchdog: a bound on every model run, on the I/O thread. A run that
 * does not return within its model's bound (the model config's
 * runTimeoutMs, else --run-timeout-ms, else 20 x the model's measured p99
 * and at least 5 s, per frame of the run) is given up: its requests are
 * answered with an error that names the model, its thread is abandoned
 * (never killed) and counted, the model's frames are refused while a
 * fresh session of it loads in the background, and every connection is
 * told on request id 0xFFFFFFFF. Well before its bound, a run far slower
 * than its model's others has its predict worker lent: a new thread takes
 * its place in the pool, so a stuck model never holds every worker. The
 * struct is private to watchdog.c.
 */
#ifndef OSP_WATCHDOG_H
#define OSP_WATCHDOG_H

#include "server/core/srv.h"

srv_watchdog_t *srv_watchdog_new(void);
/* The runs still stuck keep their jobs: nothing of theirs is freed here. */
void srv_watchdog_free(srv_watchdog_t *wd);

/* Milliseconds until the nearest run or reload reaches its bound (-1:
 * none), and what to do once one has. */
int srv_watchdog_timer_ms(server_t *s);
void srv_watchdog_check(server_t *s);

#endif
