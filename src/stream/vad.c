/* stream: speech segments from per-frame speech probabilities. */
#include "stream/stream.h"

void osp_vad_seg_init(osp_vad_seg_t *v, float threshold, int min_silence_frames,
                      int min_speech_frames) {
    *v = (osp_vad_seg_t){0};
    v->threshold = threshold;
    /* Silero's own rule: a segment is only left well below where it began,
     * so a score hovering at the threshold does not chop speech apart. */
    v->neg_threshold = threshold - 0.15f > 0.01f ? threshold - 0.15f : 0.01f;
    v->min_silence_frames = min_silence_frames < 1 ? 1 : min_silence_frames;
    v->min_speech_frames = min_speech_frames < 1 ? 1 : min_speech_frames;
}

static int close_segment(osp_vad_seg_t *v, osp_vad_segment_t *seg) {
    v->in_speech = false;
    if (v->last_speech + 1 - v->start < v->min_speech_frames) return 0;
    *seg = (osp_vad_segment_t){.start = v->start, .end = v->last_speech + 1, .peak = v->peak};
    return 1;
}

static int feed_one(osp_vad_seg_t *v, int64_t frame, float p, osp_vad_segment_t *seg) {
    v->next = frame + 1;
    if (!v->in_speech) {
        if (p >= v->threshold) {
            v->in_speech = true;
            v->start = v->last_speech = frame;
            v->peak = p;
        }
        return 0;
    }
    if (p > v->peak) v->peak = p;
    if (p >= v->neg_threshold) v->last_speech = frame;
    if (frame - v->last_speech >= v->min_silence_frames) return close_segment(v, seg);
    return 0;
}

int osp_vad_seg_feed(osp_vad_seg_t *v, int64_t frame, float p, osp_vad_segment_t *seg) {
    if (frame < v->next) return 0; /* not in order: ignored */
    /* frames never scored (a scorer that skipped to catch up) are silence;
     * one segment at most can close within a gap, the first silent frames
     * past min_silence do it */
    int closed = 0;
    for (int64_t f = v->next; f < frame && v->in_speech; f++) closed |= feed_one(v, f, 0.0f, seg);
    if (closed) { /* the segment ended in the gap; this frame may open the next */
        osp_vad_segment_t unused;
        feed_one(v, frame, p, &unused);
        return 1;
    }
    return feed_one(v, frame, p, seg);
}

int osp_vad_seg_finish(osp_vad_seg_t *v, osp_vad_segment_t *seg) {
    if (!v->in_speech) return 0;
    return close_segment(v, seg);
}
