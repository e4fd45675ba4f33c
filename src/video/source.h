/*
 * source: where every `osprey` command that reads video gets its frames —
 * a file, an rtsp:// camera (TCP by default, UDP on request), an http(s)://
 * MJPEG or HLS stream (what FFmpeg reads), a V4L2 device (/dev/video0), or
 * "-" (a stream on standard input). One reader per input, used by one thread
 * at a time (newest.h puts it on a thread of its own).
 *
 * A live source (a device, or a network stream whose container declares no
 * duration) that drops — a read error, a read blocked past io_timeout_s, or
 * the stream ending — is reopened with capped exponential backoff
 * (backoff.h) until it delivers again or reconnect_for_s has passed since the
 * drop; each drop, each reconnect and the giving up are reported to on_event,
 * on the reading thread. A file, stdin or a stream with a duration that ends
 * has ended: that is not a drop.
 *
 * Frames are numbered on the source's own timeline: frames lost in a drop
 * (estimated from its rate and the time without frames) are counted, so
 * index / fps stays the time since the first frame.
 */
#ifndef OSP_VIDEO_SOURCE_H
#define OSP_VIDEO_SOURCE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "video/video.h"

typedef struct osp_source osp_source_t;

#define OSP_SOURCE_EINPUT (-1)  /* cannot be opened or read (a bad file, URL or stream) */
#define OSP_SOURCE_EGAVEUP (-2) /* a live source stayed down past reconnect_for_s */

#define OSP_SOURCE_IO_TIMEOUT_S 5.0

typedef enum { OSP_SOURCE_DROP, OSP_SOURCE_RECONNECT, OSP_SOURCE_GAVE_UP } osp_source_event_kind_t;

typedef struct {
    osp_source_event_kind_t kind;
    const char *name;   /* the source, credentials masked */
    double time;        /* wall clock, seconds since the epoch */
    const char *reason; /* one line: why it dropped, or the last failed open */
    int64_t frame;      /* the last frame before the drop (-1: none yet) */
    /* drop: frames due between the last one and the drop being noticed;
     * reconnect: frames due between the last one and the first after it */
    int64_t frames_lost;
    double down_s;     /* reconnect, gave up: seconds since the drop was noticed */
    int attempts;      /* reconnect, gave up: opens tried */
    double retry_in_s; /* drop: wait before the first reopen */
} osp_source_event_t;

typedef struct {
    int rtsp_udp;           /* rtsp:// over UDP instead of TCP */
    double io_timeout_s;    /* streams: an open or read blocked this long is a drop (0: 5 s) */
    double reconnect_for_s; /* < 0: forever; 0: give up at the first drop */
    double backoff_first_s, backoff_max_s; /* 0: the defaults, 0.5 s and 10 s */
    size_t max_packet;  /* one packet of the input at most (video.h); 0: 64 MiB */
    int decode_threads; /* the decoder's threads (video.h); 0: one */
    int yuv420;         /* 4:2:0 frames as decoded, not made RGB (video.h) */
    atomic_bool *stop;  /* the caller's; set (from any thread or a signal handler): reads end */
    /* Called on the reading thread; the event and its strings live for the call. */
    void (*on_event)(void *ctx, const osp_source_event_t *e);
    void *ctx;
} osp_source_cfg_t;

typedef struct {
    int64_t index;   /* on the source's timeline (frames lost in drops count) */
    double pts;      /* index / fps; 0 when the rate is unknown */
    double captured; /* monotonic seconds (CLOCK_MONOTONIC) when it was decoded */
} osp_frame_meta_t;

typedef struct {
    int64_t drops, reconnects, frames_lost;
} osp_source_stats_t;

/* Fill cfg with the defaults: TCP, 5 s, forever, 0.5 s doubling to 10 s. */
void osp_source_cfg_default(osp_source_cfg_t *cfg);

/* Open input (opening a live source is not retried: a wrong URL fails at
 * once). cfg is copied; its stop and ctx stay the caller's. 0, or
 * OSP_SOURCE_EINPUT with one line in err; *out is the caller's. */
int osp_source_open(const char *input, const osp_source_cfg_t *cfg, osp_source_t **out, char *err,
                    size_t errlen);
void osp_source_close(osp_source_t *s);

/* The next frame into rgb (a reused buffer). 1: a frame; 0: the end (a file
 * or stdin ended, or stop/cancel); OSP_SOURCE_EINPUT: the input cannot be
 * read on (a truncated file); OSP_SOURCE_EGAVEUP. err gets the reason. */
int osp_source_read(osp_source_t *s, osp_image_t *rgb, osp_frame_meta_t *meta, char *err,
                    size_t errlen);

/* Make a read in progress, or the next one, return 0 soon. Any thread. */
void osp_source_cancel(osp_source_t *s);

/* The first opening's description; name is masked; live as above. */
const osp_video_info_t *osp_source_info(const osp_source_t *s);
const char *osp_source_name(const osp_source_t *s);
int osp_source_live(const osp_source_t *s);
/* Read when no read is in progress. */
osp_source_stats_t osp_source_stats(const osp_source_t *s);

/* One line for stderr describing e (no newline). */
void osp_source_event_text(const osp_source_event_t *e, char *buf, size_t n);
/* "drop", "reconnect" or "gave-up". */
const char *osp_source_event_name(osp_source_event_kind_t k);

#endif
