/*
 * window: batch windows (the protocol's batch_mode "window"). Frames of a
 * model gather in its window from the first one's arrival until
 * `window_ms` have passed or `max_items` are in, and then go to one
 * predict worker together. I/O thread only; stores the caller's pointers
 * and never frees them.
 */
#ifndef OSP_WINDOW_H
#define OSP_WINDOW_H

#define OSP_WINDOW_MAX 64 /* frames one window may carry */

typedef struct osp_window osp_window_t;

/* Windows for models 0..models-1; max_items is capped at OSP_WINDOW_MAX. */
osp_window_t *osp_window_new(int models, int max_items, double window_ms);
void osp_window_free(osp_window_t *w);
/* Add an item to model idx's window (opening it); 1 when it is now full
 * and must be taken. */
int osp_window_add(osp_window_t *w, int idx, void *item);
/* Take model idx's items (up to OSP_WINDOW_MAX into out); the window
 * closes. Returns how many. */
int osp_window_take(osp_window_t *w, int idx, void **out);
/* Put items back at the front of a closed window (a flush that could not
 * be handed on, retried at the next pass). */
void osp_window_restore(osp_window_t *w, int idx, void **items, int n);
/* Milliseconds until the next window is due (0: one is due now), -1: none open. */
int osp_window_timer_ms(const osp_window_t *w);
/* A model whose window is due now, or -1. */
int osp_window_due(const osp_window_t *w);

#endif
