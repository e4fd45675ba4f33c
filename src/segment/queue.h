/*
 * queue: the two bounded hand-offs between the stages of `osprey segment`
 * (pipeline.h), each with one lock and two condition variables.
 *
 *   osp_bq_t      fixed-size items copied in and out (scores, record
 *                 pointers); a put waits while it is full, or with
 *                 drop_oldest loses the oldest item (counted).
 *   osp_frameq_t  frames (a timestamp, a wall-clock time and the pixels);
 *                 pixels move by swapping buffers with the caller's scratch
 *                 image, so a frame is never copied and a slot allocates
 *                 nothing once warm. A live producer never waits: a full
 *                 queue loses its oldest frame (counted).
 *
 * Each is owned by its creator (new / free). Any thread may put, get and
 * close; free only once no thread uses it.
 */
#ifndef OSP_SEGMENT_QUEUE_H
#define OSP_SEGMENT_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/image.h"

typedef struct osp_bq osp_bq_t;

/* cap items of esz bytes. 0, or -1 out of memory. */
int osp_bq_new(size_t esz, int cap, osp_bq_t **out);
void osp_bq_free(osp_bq_t *q); /* NULL: nothing */
void osp_bq_put(osp_bq_t *q, const void *item, bool drop_oldest);
/* 1 with an item, 0 once the queue is closed and empty. */
int osp_bq_get(osp_bq_t *q, void *item);
/* Wakes every getter; items still queued are still got. */
void osp_bq_close(osp_bq_t *q);
int64_t osp_bq_dropped(osp_bq_t *q);

typedef struct osp_frameq osp_frameq_t;

int osp_frameq_new(int cap, osp_frameq_t **out);
void osp_frameq_free(osp_frameq_t *r); /* NULL: nothing; frees the slots' pixels */
/* Queue a frame, its pixels swapped out of *scratch (which gets the slot's
 * old buffer). live: never wait; else wait while full, unless stop is set. */
void osp_frameq_put(osp_frameq_t *r, double pts, double wall_s, osp_image_t *scratch, bool live,
                    const atomic_bool *stop);
/* Take the oldest frame if its timestamp is before `end`: 1 (its pixels
 * swapped into *img), 2 when it belongs to a later chunk (left in place),
 * 0 at the end of the stream. */
int osp_frameq_take(osp_frameq_t *r, double end, double *pts, double *wall_s, osp_image_t *img);
/* The end of the stream: wakes the taker and a waiting producer. */
void osp_frameq_close(osp_frameq_t *r);
int64_t osp_frameq_dropped(osp_frameq_t *r);

#endif
