/*
 * stream: scoring a live stream with a model that consumes a window of
 * frames (or carries recurrent state), without ever making the producer
 * wait for an inference.
 *
 * The producer pushes one frame at a time (push copies it into a bounded
 * ring and returns); a background worker scores a window whenever it is
 * free and publishes the result; any thread reads the newest result with
 * its age. Three scheduling modes, chosen by the configuration:
 *
 *   window 0            frame-wise: every push is scored inline, on the
 *                       pushing thread (a thread would only add latency).
 *   window W, stride 0  adaptive: the worker scores the NEWEST complete
 *                       window each time it is free, so the stride follows
 *                       the machine. The ring holds exactly W frames.
 *   window W, stride S  in order: every S-th window (ends at W-1, W-1+S,
 *                       ...), for models whose output feeds another model
 *                       at a fixed rate or whose state must see the frames
 *                       in order. The worker may fall `backlog` windows
 *                       behind; beyond that it jumps to the newest aligned
 *                       window and counts the windows it skipped. The ring
 *                       holds W + S*backlog frames.
 *
 * A short buffer is never scored (no padding). Overlapping windows of a
 * per-frame model are folded into a per-frame running mean; entries leave
 * as soon as no future window can reach them.
 *
 * Threads: push, push_n and reset from ONE producer thread; latest,
 * frame_mean, drain and stop from any thread. The score and reset callbacks
 * run on the worker (or, frame-wise, on the producer), never under the
 * scorer's lock. The scorer owns its ring and accumulators; the caller owns
 * the callback context and must keep it alive until stop has returned 0.
 */
#ifndef OSP_STREAM_H
#define OSP_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

enum {
    OSP_STREAM_OK = 0,
    OSP_STREAM_EINVAL = -1, /* bad configuration or arguments */
    OSP_STREAM_ENOMEM = -2,
    OSP_STREAM_ESTOPPED = -3,  /* push after stop: the frame was dropped */
    OSP_STREAM_ETIMEDOUT = -4, /* stop or drain gave up waiting */
    OSP_STREAM_ENOENT = -5,    /* frame_mean: no accumulator for that frame */
    OSP_STREAM_ESCORE = -6,    /* a scoring callback failed */
};

/* Scores per reading, at most. openWakeWord's 96-float embedding fits. */
#define OSP_STREAM_MAX_CHANNELS 256

/* Which frames a call scores. newest_pushed is the index of the newest frame
 * in the ring when the window was taken: in adaptive mode it always equals
 * last (that is the property tests check). */
typedef struct {
    int64_t first, last, newest_pushed;
} osp_stream_span_t;

/* The pluggable scoring function. score gets n_frames * frame_len floats
 * (oldest frame first, the scorer's buffer, valid during the call) and must
 * write exactly out_len floats to out; it returns 0, or a negative value and
 * a reason in err. reset (may be NULL) drops recurrent state; it is called on
 * the scoring thread before the next score after osp_stream_reset. */
typedef struct {
    int (*score)(void *ctx, const float *frames, int n_frames, int frame_len,
                 const osp_stream_span_t *span, float *out, int out_len, char *err, size_t errlen);
    void (*reset)(void *ctx);
    void *ctx;
} osp_stream_fn_t;

typedef struct {
    int frame_len;       /* floats per frame, >= 1 */
    int window;          /* frames per window; 0 = frame-wise, scored inline */
    int stride;          /* 0 = adaptive (newest window); S >= 1 = every S-th, in order */
    int backlog;         /* stride mode: windows the worker may lag (0 = 1) */
    int channels;        /* scores per frame (per_frame) or per window, 1..256 */
    bool per_frame;      /* output is window rows of channels, folded per frame */
    int join_timeout_ms; /* stop's bound on joining the worker; 0 = 5000 */
} osp_stream_config_t;

/* A reading: the newest completed result and how stale it is. */
typedef struct {
    bool warming_up; /* no window has completed yet; scores are not valid */
    int channels;
    float scores[OSP_STREAM_MAX_CHANNELS]; /* the newest frame's (mean) score */
    int64_t frame_index; /* the frame the scores belong to; -1 while warming up */
    int64_t age_frames;  /* frames pushed since: newest pushed - frame_index */
    int64_t pushed;      /* frames pushed so far */
    int64_t windows_completed;
    int64_t failures; /* windows the callback failed on; the stream went on */
    int64_t skipped;  /* stride mode: windows jumped over to catch up */
} osp_stream_reading_t;

/* Called on the scoring thread after each successful window, outside the
 * lock, with the newest frame's index and the callback's raw output. */
typedef void (*osp_stream_sink_fn)(void *ctx, int64_t frame, const float *out, int out_len);

typedef struct osp_stream osp_stream_t;

/* Create a scorer (not started). *out is the caller's, freed with
 * osp_stream_free. Returns 0 or OSP_STREAM_EINVAL/ENOMEM with a reason. */
int osp_stream_new(const osp_stream_config_t *cfg, const osp_stream_fn_t *fn, osp_stream_t **out,
                   char *err, size_t errlen);

/* Output floats per call: window*channels (per_frame) or channels. */
int osp_stream_out_len(const osp_stream_t *s);

/* Set before start. The sink's context is the caller's. */
void osp_stream_set_sink(osp_stream_t *s, osp_stream_sink_fn sink, void *ctx);

/* Feed up's results into down as frames: up's out_len must be a multiple of
 * down's frame_len (each call pushes out_len/frame_len frames). Set before up
 * starts; down must outlive up's worker (stop up first). */
int osp_stream_chain(osp_stream_t *up, osp_stream_t *down, char *err, size_t errlen);

/* Start the worker (nothing to start frame-wise). Idempotent. */
int osp_stream_start(osp_stream_t *s, char *err, size_t errlen);

/* Copy one frame (frame_len floats) in. Windowed: returns at once.
 * Frame-wise: scores it first (a failure is counted, not returned). */
int osp_stream_push(osp_stream_t *s, const float *frame);
int osp_stream_push_n(osp_stream_t *s, const float *frames, int n);

/* The newest completed result. Frames newer than it carry this same value:
 * nothing is interpolated. */
void osp_stream_latest(osp_stream_t *s, osp_stream_reading_t *r);

/* The running mean of a frame (channels floats into out) while it is still
 * inside the newest scored window; OSP_STREAM_ENOENT once no future window
 * can reach it or before any window covered it. Per-frame models only. */
int osp_stream_frame_mean(osp_stream_t *s, int64_t frame, float *out, int *count);

/* Drop recurrent state before the next scored window (or frame). */
void osp_stream_reset(osp_stream_t *s);

/* Wait until the worker has scored everything it will score from the frames
 * pushed so far (adaptive: the newest window; stride: every aligned window),
 * at most timeout_ms. 0, or OSP_STREAM_ETIMEDOUT. */
int osp_stream_drain(osp_stream_t *s, int timeout_ms);

/* Ask the worker to finish and join it within join_timeout_ms. Safe twice
 * and safe on a scorer never started. 0, or OSP_STREAM_ETIMEDOUT when the
 * callback is still running (it is then detached; osp_stream_free hands the
 * memory to it). A result finishing after stop is discarded. Scorers still
 * running at exit() are stopped by an atexit handler. */
int osp_stream_stop(osp_stream_t *s);

/* Stop (if needed) and free. NULL is fine. */
void osp_stream_free(osp_stream_t *s);

/* Bytes the scorer allocated: constant for its life, whatever the count of
 * frames pushed. */
size_t osp_stream_footprint(const osp_stream_t *s);

/* ---- the ONNX Runtime scoring function ------------------------------------- */

/* How a model's inputs are fed. The frames go to `input`: its declared dims,
 * batch 1 and the one remaining dynamic dim sized to n_frames*frame_len.
 * State pairs (Silero v5: state -> stateN; v4: h -> hn, c -> cn) are zeros at
 * first and after reset, and carried from each run's output to the next
 * run's input. int_input (Silero: "sr") gets int_value as an int64 of its
 * declared rank (0 = a scalar). Every declared input must be covered. The
 * output's floats are copied to out and must number out_len. */
#define OSP_STREAM_ORT_MAX_STATE 4
typedef struct {
    const char *input;
    const char *output;
    int n_state;
    const char *state_in[OSP_STREAM_ORT_MAX_STATE];
    const char *state_out[OSP_STREAM_ORT_MAX_STATE];
    const char *int_input;
    int64_t int_value;
} osp_stream_ort_spec_t;

typedef struct osp_stream_ort osp_stream_ort_t;

/* Bind a loaded model (the caller's; it must outlive the binding) to spec.
 * *out is the caller's, freed with osp_stream_ort_free. */
int osp_stream_ort_new(osp_rt_model_t *model, const osp_stream_ort_spec_t *spec,
                       osp_stream_ort_t **out, char *err, size_t errlen);
/* The scoring function for osp_stream_new (ctx = o). */
osp_stream_fn_t osp_stream_ort_fn(osp_stream_ort_t *o);
void osp_stream_ort_free(osp_stream_ort_t *o);

/* ---- speech segments from per-frame probabilities -------------------------- */

/* A streaming hysteresis segmenter (Silero's rule): speech starts at a frame
 * >= threshold, ends after min_silence_frames frames below threshold - 0.15;
 * segments shorter than min_speech_frames are dropped. Frames are fed in
 * order; a gap in frame indices counts as silence. Single-threaded. */
typedef struct {
    float threshold, neg_threshold;
    int min_silence_frames, min_speech_frames;
    bool in_speech;
    int64_t start, last_speech, next;
    float peak;
} osp_vad_seg_t;

typedef struct {
    int64_t start, end; /* frames [start, end) */
    float peak;
} osp_vad_segment_t;

void osp_vad_seg_init(osp_vad_seg_t *v, float threshold, int min_silence_frames,
                      int min_speech_frames);
/* Feed frame `frame` with probability p. Returns 1 and fills *seg when a
 * segment closed, else 0. */
int osp_vad_seg_feed(osp_vad_seg_t *v, int64_t frame, float p, osp_vad_segment_t *seg);
/* End of input: closes an open segment (1) or not (0). */
int osp_vad_seg_finish(osp_vad_seg_t *v, osp_vad_segment_t *seg);

/* ---- WAV input ------------------------------------------------------------- */

/* Read a PCM 16-bit mono or stereo WAV file of any rate into mono float
 * samples in [-1, 1) at rate_out (linear resampling when the rates differ).
 * *samples is the caller's (free()). Returns 0, OSP_STREAM_EINVAL with a
 * reason (not a WAV, another encoding, truncated) or OSP_STREAM_ENOMEM. */
int osp_wav_read(const char *path, int rate_out, float **samples, size_t *n, int *rate_in,
                 char *err, size_t errlen);
/* The same from a buffer in memory (for tests and fuzzing). */
int osp_wav_parse(const uint8_t *buf, size_t len, int rate_out, float **samples, size_t *n,
                  int *rate_in, char *err, size_t errlen);

#endif
