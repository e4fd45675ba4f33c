/*
 * backoff: how long a live source waits before reopening attempt n after a
 * drop. Capped exponential: first, 2 x first, 4 x first, ... up to max
 * (osprey's defaults: 0.5 s doubling to 10 s). Pure function.
 */
#ifndef OSP_VIDEO_BACKOFF_H
#define OSP_VIDEO_BACKOFF_H

#define OSP_BACKOFF_FIRST_S 0.5
#define OSP_BACKOFF_MAX_S 10.0

/* Seconds to wait before attempt (0 for the first reopen). first <= 0 and
 * max <= 0 take the defaults; a max below first is first. */
double osp_backoff_delay(double first, double max, int attempt);

#endif
