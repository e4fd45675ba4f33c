/* chunk: see chunk.h. */
#include "segment/chunk.h"

#include <stddef.h>

void osp_chunk_params_default(osp_chunk_params_t *p) {
    *p = (osp_chunk_params_t){
        .uniform = false,
        .uniform_len = 0,
        .threshold = 0.8,
        .min_len = 1.0,
        .max_len = 10.0,
        .delay_frames = 8,
        .live = false,
        .duration = 0,
    };
}

int osp_chunker_init(osp_chunker_t *c, const osp_chunk_params_t *p) {
    if (!c || !p) return -1;
    if (p->uniform && !(p->uniform_len > 0)) return -1;
    if (!p->uniform && (!(p->max_len > 0) || p->min_len < 0 || p->delay_frames < 0)) return -1;
    *c = (osp_chunker_t){.p = *p};
    return 0;
}

static void emit(osp_chunker_t *c, double end, double score, osp_chunk_t *out) {
    *out = (osp_chunk_t){.idx = c->next_idx++, .start = c->start, .end = end, .score = score};
    c->start = end;
}

static void clear_window(osp_chunker_t *c) {
    c->pending = false;
    c->delayed = 0;
    c->have_cand = false;
}

static void add_candidate(osp_chunker_t *c, double pts, double score) {
    if (!c->have_cand || score > c->best_score) {
        c->best_pts = pts;
        c->best_score = score;
    }
    c->have_cand = true;
    c->last_pts = pts;
    c->last_score = score;
}

/* The window is ready: cut at the best candidate (the newest one when none
 * reached the threshold, i.e. a max-length cut), unless that is too close
 * to the chunk's start. */
static int decide(osp_chunker_t *c, osp_chunk_t *out) {
    int n = 0;
    if (c->have_cand) {
        double pts = c->best_pts, score = c->best_score;
        if (score < c->p.threshold) {
            pts = c->last_pts;
            score = c->last_score;
        }
        if (pts - c->start > c->p.min_len) {
            emit(c, pts, score, out);
            n = 1;
        }
    }
    clear_window(c);
    return n;
}

static int push_uniform(osp_chunker_t *c, osp_chunk_t *out, int cap) {
    int n = 0;
    while (n < cap && c->cur >= c->start + c->p.uniform_len) {
        emit(c, c->start + c->p.uniform_len, 1.0, &out[n]);
        n++;
    }
    return n;
}

int osp_chunker_push(osp_chunker_t *c, double pts, double score, osp_chunk_t *out, int cap) {
    if (cap < 1) return 0;
    if (!c->started) {
        /* The first frame opens the first chunk; its score compares it with
         * nothing and is not a boundary. */
        c->started = true;
        c->start = pts;
        c->cur = pts;
        return 0;
    }
    if (pts > c->cur) c->cur = pts;
    if (c->p.uniform) return push_uniform(c, out, cap);

    bool ready = false;
    if (score >= c->p.threshold) {
        add_candidate(c, pts, score);
        if (!c->pending) {
            c->pending = true;
            c->delayed = 0;
            if (c->p.delay_frames == 0) ready = true;
            goto check;
        }
    } else if (pts - c->start >= c->p.max_len) {
        add_candidate(c, pts, score);
        ready = true;
    }
    if (c->pending && ++c->delayed >= c->p.delay_frames) ready = true;
check:
    if (ready) return decide(c, out);
    return 0;
}

int osp_chunker_finish(osp_chunker_t *c, osp_chunk_t *out) {
    if (!c->started) return 0;
    if (c->p.uniform) {
        if (push_uniform(c, out, 1)) return 1;
    }
    double end = c->cur;
    if (!c->p.live && c->p.duration > 0 && c->p.duration > end) end = c->p.duration;
    clear_window(c);
    if (!(end > c->start)) return 0;
    emit(c, end, c->p.uniform ? 1.0 : 0.0, out);
    return 1;
}
