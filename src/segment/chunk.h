/*
 * chunk: turning a stream of per-frame boundary scores into chunks (events).
 * One state machine for files and live sources; only the end differs (a
 * file's last chunk ends at its duration, a live one at the newest frame).
 *
 * Event mode: a score >= threshold opens an anti-jitter window; the window
 * collects candidates for `delay_frames` more frames and the chunk is cut at
 * the highest-scoring candidate. A cut closer than min_len to the chunk's
 * start is skipped. When no cut comes for max_len seconds, the chunk is cut
 * at the frame that reaches max_len.
 * Uniform mode: a chunk every `uniform_len` seconds of frame timestamps,
 * score 1.0, plus a final partial chunk.
 *
 * Pure and single-threaded: no clock, no I/O. The caller owns the chunker
 * (osp_chunker_init on its storage; nothing to free).
 */
#ifndef OSP_SEGMENT_CHUNK_H
#define OSP_SEGMENT_CHUNK_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool uniform;       /* uniform mode: scores ignored */
    double uniform_len; /* seconds per chunk in uniform mode, > 0 */
    double threshold;   /* event mode: 0.8 */
    double min_len;     /* seconds: 1.0 */
    double max_len;     /* seconds: 10.0 */
    int delay_frames;   /* anti-jitter window after a trigger: 8 */
    bool live;          /* the last chunk ends at the newest frame */
    double duration;    /* file duration in seconds; <= 0 unknown */
} osp_chunk_params_t;

/* The defaults above (event mode, file, unknown duration). */
void osp_chunk_params_default(osp_chunk_params_t *p);

typedef struct {
    int64_t idx;
    double start, end; /* seconds, in the frames' timestamps */
    double score;      /* the cut's boundary score; 0 for the final chunk */
} osp_chunk_t;

/* State: read-only for callers. */
typedef struct {
    osp_chunk_params_t p;
    int64_t next_idx;
    bool started;
    double start;    /* the open chunk's start */
    double cur;      /* newest timestamp seen */
    bool pending;    /* inside an anti-jitter window */
    int delayed;     /* frames seen since the window opened */
    double best_pts; /* best candidate so far in the window */
    double best_score;
    bool have_cand;
    double last_pts, last_score; /* the newest candidate */
} osp_chunker_t;

/* Returns 0, or -1 for parameters out of range. */
int osp_chunker_init(osp_chunker_t *c, const osp_chunk_params_t *p);

/* Feed one frame (timestamps non-decreasing). Writes up to cap finished
 * chunks to out and returns how many (uniform mode may owe more after a gap
 * in timestamps; they come on the next calls). */
int osp_chunker_push(osp_chunker_t *c, double pts, double score, osp_chunk_t *out, int cap);

/* End of stream: writes the final chunk and returns 1, or 0 when nothing
 * is left open (no frames, or the open chunk would be empty). Uniform mode
 * may first owe whole chunks: call until it returns 0. */
int osp_chunker_finish(osp_chunker_t *c, osp_chunk_t *out);

#endif
