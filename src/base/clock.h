/*
 * clock: the clocks osprey reads, and the arithmetic on their deadlines.
 * At the bottom of the tree (libc only) so that every module reads time
 * the same way instead of keeping a copy of its own.
 *
 * Two clocks:
 *   monotonic  CLOCK_MONOTONIC: durations, timers and deadlines within the
 *              process; a wall-clock step (NTP, an operator) never moves it
 *   epoch      CLOCK_REALTIME: what other hosts read, such as a request's
 *              deadline (milliseconds since the epoch, as the protocol says)
 *              and the times printed in records and logs
 *
 * Pure reads of the clock and arithmetic on the caller's values: any
 * thread; nothing is allocated.
 */
#ifndef OSP_BASE_CLOCK_H
#define OSP_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The monotonic clock now, into *t: the origin osp_ms_since and
 * osp_ms_until measure from. */
void osp_now(struct timespec *t);

/* The monotonic clock now, in milliseconds or seconds (arbitrary origin:
 * only differences mean anything). */
double osp_now_ms(void);
double osp_now_s(void);

/* Monotonic milliseconds since *t (taken with osp_now); negative when *t
 * is still ahead. */
double osp_ms_since(const struct timespec *t);

/* Whole milliseconds from now until the monotonic *t, negative once past.
 * Seconds and nanoseconds are subtracted apart and the nanoseconds
 * truncated, so a deadline less than a millisecond away reads 0: a
 * caller that must sleep until it adds 1. */
int64_t osp_ms_until(const struct timespec *t);

/* *a - *b in whole milliseconds, truncated as osp_ms_until is (one read of
 * the clock shared by many comparisons). */
int64_t osp_timespec_diff_ms(const struct timespec *a, const struct timespec *b);

/* Move *t ms milliseconds later (earlier when negative), fractions of a
 * millisecond included, nanoseconds kept within [0, 1e9). */
void osp_timespec_add_ms(struct timespec *t, double ms);

/* The time on `clock` ms milliseconds from now: CLOCK_MONOTONIC for the
 * process's own deadlines and condition variables set to it,
 * CLOCK_REALTIME for pthread_cond_timedwait on a default condition
 * variable and pthread_timedjoin_np. */
struct timespec osp_deadline_in(clockid_t clock, double ms);

/* Wall-clock milliseconds and seconds since the epoch. */
int64_t osp_epoch_ms(void);
double osp_epoch_s(void);

/* Sleep ms milliseconds (nothing when ms <= 0), resumed after a signal:
 * a caller that must wake for a stop flag sleeps in short steps. */
void osp_sleep_ms(double ms);

/* Sleep until the monotonic *t (at once when it has passed), resumed after
 * a signal: a pace kept from one absolute time to the next does not drift
 * by the time spent between sleeps. */
void osp_sleep_until(const struct timespec *t);

#endif
