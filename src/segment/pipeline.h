/*
 * pipeline: `osprey segment` as stage threads joined by bounded queues.
 *
 *   source   read the input (video/source.h: a file, a camera, a stream,
 *            a device or stdin; a live source that drops is reopened), score each frame (scene scorer, or an ONNX
 *            model through the streaming scorer; none in uniform mode), put the frame in the frame queue and its score
 *            in the score queue. The frame queue holds fps x max chunk
 *            length + 10 frames (at least 30): a LIVE source drops the
 *            OLDEST frame when it is full (counted) and never waits; a FILE
 *            source waits, so no frame is lost.
 *   chunker  the chunk state machine (chunk.h) over the scores.
 *   describe ONE thread drains the frame queue in order, chunk by chunk,
 *            samples the chunk's frames evenly and starts its VLM request
 *            (requests run concurrently, at most vlm_concurrency).
 *   output   (the caller's thread) waits for each chunk's reply in chunk
 *            order, runs the procedure check and emits one JSON record.
 *
 * The stop flag (set from a signal handler, say) ends the source as if the
 * stream ended and aborts VLM requests in flight.
 */
#ifndef OSP_SEGMENT_PIPELINE_H
#define OSP_SEGMENT_PIPELINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "segment/chunk.h"
#include "segment/procedure.h"
#include "segment/vlm.h"
#include "video/source.h"

typedef struct {
    const char *input;
    const char *sensor_id;
    osp_chunk_params_t chunk; /* live and duration are filled in by the pipeline */
    bool live;                /* replay the file at its real rate, dropping the oldest frames
                               * (a live source, a camera, is live without it) */
    /* How the input is read: transport, reconnection, the events' callback
     * (on the source thread); its stop is the pipeline's. */
    osp_source_cfg_t source;
    /* An ONNX boundary scorer instead of `scene` (onnxscore.h); NULL: scene. */
    const char *scorer;
    int scorer_size, scorer_window;
    double live_speed; /* replay rate; 1 = real time */
    /* VLM (vlm.url NULL: the stage is skipped and chunks still flow). */
    osp_vlm_cfg_t vlm;
    const char *prompt;
    double vlm_fps;        /* frames sent per second of chunk: 1 */
    int vlm_max_frames;    /* at most this many frames per request: 16 */
    int vlm_side;          /* frames are scaled to at most this side: 448 */
    int vlm_concurrency;   /* requests in flight: 4 */
    bool warmup;           /* a 3-frame request before the stream starts */
    osp_proc_t *procedure; /* NULL: no check; owned by the caller */
    int slow_describe_ms;  /* test hook: stage 3 sleeps this long per chunk */
    atomic_bool *stop;     /* owned by the caller; may be NULL */
    /* Called on the caller's thread with each record (one line, no newline). */
    void (*emit)(void *ctx, const char *line);
    void *emit_ctx;
} osp_segment_opts_t;

typedef struct {
    double fps, duration;
    int64_t frames_read, frames_dropped, frames_described;
    int64_t chunks, vlm_errors;
    int64_t scores_skipped; /* ONNX scorer windows skipped by a live source */
    int frame_queue_cap;
    bool live;                 /* the source was live (a camera, or --live) */
    osp_source_stats_t source; /* drops, reconnects, frames lost */
    int source_rc;             /* 0, or the source's OSP_SOURCE_E… code when it failed */
} osp_segment_stats_t;

void osp_segment_opts_default(osp_segment_opts_t *o);

/* Run to the end of the input (or the stop flag). Returns 0, or negative
 * with a reason in err; a source that failed after its first frame (a
 * truncated file, a camera given up) returns 0 with the reason in err and
 * the frames read in st. */
int osp_segment_run(const osp_segment_opts_t *o, osp_segment_stats_t *st, char *err, size_t errlen);

#endif
