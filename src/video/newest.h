/*
 * newest: a live source decoded on a thread of its own at the camera's
 * rate, so a consumer slower than the camera always gets the newest frame
 * rather than one that waited in a buffer (drop-oldest). A frame decoded
 * while the one before it was still untaken replaces it and is counted as
 * dropped. The source's events (source.h) are reported on that thread.
 *
 * osp_newest_start takes the source for its thread until osp_newest_stop;
 * the source stays the caller's to close afterwards. One consumer thread.
 */
#ifndef OSP_VIDEO_NEWEST_H
#define OSP_VIDEO_NEWEST_H

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "video/source.h"

typedef struct osp_newest osp_newest_t;

/* 0, or -1 with a reason in err (no thread could be started). */
int osp_newest_start(osp_source_t *src, osp_newest_t **out, char *err, size_t errlen);

/* Wait for a frame newer than the last taken and swap it into rgb (no copy).
 * Returns what osp_source_read returned when the source has ended: 1, 0 or
 * a negative OSP_SOURCE_E… code with its reason in err. */
int osp_newest_read(osp_newest_t *n, osp_image_t *rgb, osp_frame_meta_t *meta, char *err,
                    size_t errlen);

/* Frames replaced before they were taken. */
int64_t osp_newest_dropped(osp_newest_t *n);

/* Cancel the source, join the thread, free n (NULL is fine). */
void osp_newest_stop(osp_newest_t *n);

#endif
