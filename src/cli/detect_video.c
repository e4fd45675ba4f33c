/*
 * osprey detect on a video source: a file, a camera URL, a device or stdin
 * (video/source.h), run as a pipeline. A reader thread decodes frames into
 * a ring of slots, N workers each prepare and predict whole frames on one
 * shared session (one intra-op thread each: on small machines N
 * single-thread runs side by side beat one N-thread run), and the calling
 * thread prints results in frame order. A live source is decoded on a
 * thread of its own at the camera's rate (video/newest.h) and the reader
 * takes the newest frame, so a model slower than the camera drops the
 * oldest frames (counted) instead of falling behind; its ring is shorter
 * for the same reason. Unless --per-frame the calling thread also follows
 * the objects (detect_track.c) before it writes each frame's record (their
 * ids and events only with --track), and keeps
 * the frame's slot until then: the looks are taken on its pixels; and the
 * reader asks the motion gate (motion/gate.h) whether anything moved: a
 * frame where nothing did is not run, its record holds the objects as the
 * last frame run left them, with "still": true.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/detect.h"
#include "cli/events.h"
#include "cli/snapshot.h"
#include "cli/tally.h"
#include "video/newest.h"
#include "video/rate.h"
#include "video/source.h"
#include "log/log.h"
#include "motion/gate.h"

enum { SLOT_FREE, SLOT_READY, SLOT_BUSY, SLOT_DONE };

typedef struct {
    int state;
    long seq, frame;
    double t, captured; /* pts (-1: unknown rate), monotonic capture time */
    osp_image_t img;
    osp_jw_t line;
    osp_det_t *dets;
    int n_dets, det_cap, failed;
    int still;        /* tracked: nothing moved, the model is not run (motion/gate.h) */
    osp_result_t res; /* dets point into this slot */
} slot_t;

typedef struct {
    const osp_detect_opts_t *o;
    osp_model_t *m;
    osp_source_t *src;
    osp_newest_t *newest;    /* a live source's decoding thread, else NULL */
    osp_motion_gate_t *gate; /* tracked: the reader's motion gate, else NULL */
    const char *input;       /* the source's name: credentials masked */
    pthread_mutex_t mu;      /* guards every field below and the slot states */
    pthread_cond_t cv;
    slot_t *slots;
    int nslots;
    long read_seq, take_seq;
    int reader_done, stop;
    long total;  /* slots the reader filled in all, once reader_done */
    int read_rc; /* the source's last return, once reader_done */
    char read_err[512];
} pipe_t;

static int next_frame(pipe_t *p, osp_image_t *img, osp_frame_meta_t *meta, char *err, size_t errlen) {
    if (p->newest) return osp_newest_read(p->newest, img, meta, err, errlen);
    return osp_source_read(p->src, img, meta, err, errlen);
}

static void *reader_main(void *arg) {
    pipe_t *p = arg;
    osp_image_t img = {0};
    osp_frame_meta_t meta;
    osp_rate_t rate;
    osp_rate_init(&rate, p->o->fps);
    double fps = osp_source_info(p->src)->fps;
    char err[512];
    long taken = 0;
    for (;;) {
        int r = next_frame(p, &img, &meta, err, sizeof err);
        if (r <= 0) {
            pthread_mutex_lock(&p->mu);
            p->read_rc = r;
            if (r < 0) snprintf(p->read_err, sizeof p->read_err, "%s", err);
            p->reader_done = 1;
            p->total = p->read_seq;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        /* a camera's clock is its capture times; a file's, its timestamps */
        if (!osp_rate_take(&rate, osp_source_live(p->src) || fps <= 0 ? meta.captured : meta.pts))
            continue;
        if (taken++ % p->o->every) continue;
        pthread_mutex_lock(&p->mu);
        slot_t *s = &p->slots[p->read_seq % p->nslots];
        while (s->state != SLOT_FREE && !p->stop) pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop) {
            p->reader_done = 1;
            p->total = p->read_seq;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        pthread_mutex_unlock(&p->mu);
        /* the slot is ours until marked ready: swap buffers, no copy */
        osp_image_t tmp = s->img;
        s->img = img;
        img = tmp;
        s->frame = (long)meta.index;
        s->t = fps > 0 ? meta.pts : -1;
        s->captured = meta.captured;
        s->still = 0;
        if (p->gate) {
            int run = osp_motion_gate_frame(p->gate, &s->img, fps > 0 ? meta.pts : meta.captured,
                                            NULL, err, sizeof err);
            if (run < 0) /* the model runs: it costs time, not a result */
                osp_log(OSP_LOG_WARN, "osprey detect: %s: motion: %s", p->input, err);
            s->still = run == 0;
        }
        pthread_mutex_lock(&p->mu);
        s->seq = p->read_seq++;
        s->state = SLOT_READY;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    osp_image_free(&img);
    return NULL;
}

/* A 4:2:0 frame (the reader's when tracked: the gate read its luma) made
 * RGB in place, spare's buffer taking its planes for the next one. */
static int make_rgb(osp_image_t *img, osp_image_t *spare, char *err, size_t errlen) {
    if (!osp_pixfmt_yuv420(img->fmt)) return 0;
    osp_view_t yuv = osp_image_view(img);
    if (osp_yuv_to_rgb(&yuv, spare, err, errlen)) return -1;
    osp_image_t t = *img;
    *img = *spare;
    *spare = t;
    return 0;
}

static void *worker_main(void *arg) {
    pipe_t *p = arg;
    osp_infer_ctx_t ctx = {0}, look = {0};
    osp_image_t spare = {0};
    char err[512];
    for (;;) {
        pthread_mutex_lock(&p->mu);
        slot_t *s;
        for (;;) {
            s = &p->slots[p->take_seq % p->nslots];
            if (s->state == SLOT_READY && s->seq == p->take_seq) break;
            if (p->reader_done && p->take_seq >= p->total) {
                pthread_mutex_unlock(&p->mu);
                osp_infer_ctx_free(&ctx);
                osp_infer_ctx_free(&look);
                osp_image_free(&spare);
                return NULL;
            }
            pthread_cond_wait(&p->cv, &p->mu);
        }
        s->state = SLOT_BUSY;
        p->take_seq++;
        pthread_mutex_unlock(&p->mu);

        osp_result_t r;
        if (s->still) { /* the objects of the last frame run stand for it */
            s->failed = 0;
            s->n_dets = 0;
            pthread_mutex_lock(&p->mu);
            s->state = SLOT_DONE;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
            continue;
        }
        s->failed = make_rgb(&s->img, &spare, err, sizeof err) != 0;
        osp_view_t v = osp_image_view(&s->img);
        s->failed = s->failed ||
                    osp_detect_infer(p->o, p->m, &ctx, &look, &v, 0, 0, &r, err, sizeof err) != 0;
        if (s->failed) {
            osp_detect_format(&s->line, p->input, s->frame, s->t, p->m, NULL, err);
            s->n_dets = 0;
        } else {
            /* tracked: the record is written once the objects are known */
            if (!p->o->tracked)
                osp_detect_format(&s->line, p->input, s->frame, s->t, p->m, &r, NULL);
            if (s->det_cap < r.n_dets) {
                osp_det_t *d = realloc(s->dets, (size_t)r.n_dets * sizeof *d);
                if (d) {
                    s->dets = d;
                    s->det_cap = r.n_dets;
                }
            }
            s->n_dets = r.n_dets <= s->det_cap ? r.n_dets : s->det_cap;
            if (s->n_dets) memcpy(s->dets, r.dets, (size_t)s->n_dets * sizeof *s->dets);
            s->res = r;
            s->res.dets = s->dets;
            s->res.n_dets = s->n_dets;
            s->res.look = NULL; /* the worker's, gone with its next frame */
        }
        pthread_mutex_lock(&p->mu);
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

static void progress(const char *input, long done, long total, double secs, int final) {
    char bar[31];
    int fill = total > 0 ? (int)(30.0 * (double)done / (double)total) : 0;
    if (fill > 30) fill = 30;
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '-';
    bar[30] = '\0';
    if (total > 0)
        fprintf(stderr, "\r%s [%s] %ld/%ld frames %.1f fps ", osp_detect_base_name(input), bar,
                done, total, secs > 0 ? (double)done / secs : 0.0);
    else
        fprintf(stderr, "\r%s %ld frames %.1f fps ", osp_detect_base_name(input), done,
                secs > 0 ? (double)done / secs : 0.0);
    if (final) fputs("\r\033[K", stderr);
}

/* A live source's drops and reconnects, on its reading thread. */
static void on_source_event(void *ctx, const osp_source_event_t *e) {
    const osp_detect_opts_t *o = ctx;
    osp_cli_event_log("detect", e);
    if (o->no_json && !o->sink) return;
    osp_jw_t w = {0};
    osp_cli_event_record(&w, e, NULL);
    if (!o->no_json) osp_detect_put_line(&w, 1);
    if (o->sink && !w.oom) osp_sink_put(o->sink, w.buf);
    osp_jw_free(&w);
}

/* The runs of every step of c so far (a step's own steps included). */
static long step_runs(const osp_cascade_t *c) {
    osp_cascade_count_t n[OSP_CASCADE_STEPS];
    int steps = c ? osp_cascade_counts(c, n, OSP_CASCADE_STEPS) : 0;
    long runs = 0;
    for (int i = 0; i < steps && i < OSP_CASCADE_STEPS; i++) runs += n[i].runs;
    return runs;
}

int osp_detect_video(const osp_detect_opts_t *o, osp_model_t *m, osp_decoder_t *dec,
                     const char *input) {
    char err[512];
    osp_source_t *src = NULL;
    osp_source_cfg_t scfg = o->source;
    scfg.stop = o->stop;
    scfg.on_event = on_source_event;
    scfg.ctx = (void *)o;
    /* tracked: the motion gate reads a frame's luma as decoded, and only
     * the frames it lets through are made RGB (make_rgb) */
    scfg.yuv420 = o->tracked;
    if (osp_source_open(input, &scfg, &src, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey detect: %s", err);
        return 2;
    }
    const osp_video_info_t *info = osp_source_info(src);
    int live = osp_source_live(src);
    const char *name = osp_source_name(src);
    pipe_t p = {.o = o, .m = m, .src = src, .input = name};
    /* live: one frame waiting beyond those running, or it ages in the ring */
    p.nslots = live ? o->workers + 1 : o->workers * 2 + 2;
    p.slots = calloc((size_t)p.nslots, sizeof *p.slots);
    osp_tally_t *t = osp_tally_new(m);
    osp_detect_track_t *trk = NULL;
    if (!p.slots || !t) snprintf(err, sizeof err, "out of memory");
    if (!p.slots || !t || (o->tracked && osp_detect_track_new(o, m, name, &trk, err, sizeof err)) ||
        (o->tracked && osp_motion_gate_new(NULL, 0, &p.gate, err, sizeof err)) ||
        (live && osp_newest_start(src, &p.newest, err, sizeof err))) {
        free(p.slots);
        osp_tally_free(t);
        osp_detect_track_free(trk);
        osp_motion_gate_free(p.gate);
        osp_source_close(src);
        osp_log(OSP_LOG_ERROR, "osprey detect: %s", err);
        return 1;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t reader, workers[64];
    int nw = 0, rc = 0;
    long expect = info->frames > 0 && o->fps <= 0 ? (info->frames + o->every - 1) / o->every : 0;
    int bar = !o->quiet && isatty(STDERR_FILENO);
    double t0 = osp_now_s(), last_bar = 0;
    long runs0 = step_runs(o->cascade);

    pthread_create(&reader, NULL, reader_main, &p);
    for (int i = 0; i < o->workers; i++)
        if (pthread_create(&workers[nw], NULL, worker_main, &p) == 0) nw++;
    for (long seq = 0;; seq++) {
        pthread_mutex_lock(&p.mu);
        slot_t *s = &p.slots[seq % p.nslots];
        while (!(s->state == SLOT_DONE && s->seq == seq) && !(p.reader_done && seq >= p.total))
            pthread_cond_wait(&p.cv, &p.mu);
        int end = !(s->state == SLOT_DONE && s->seq == seq);
        pthread_mutex_unlock(&p.mu);
        if (end) break;
        osp_view_t pv = osp_image_view(&s->img);
        /* the frame's time for the tracker: its timestamp, else when it came */
        double ft = s->t >= 0 ? s->t : s->captured;
        if (trk && !s->failed && s->still) {
            osp_detect_track_still(trk, &s->res);
            if (!o->track) s->res.track_ids = NULL; /* the ids are --track's */
            osp_detect_format(&s->line, name, s->frame, s->t, m, &s->res, NULL);
            osp_jw_key(&s->line, "still");
            osp_jw_bool(&s->line, 1);
        } else if (trk && !s->failed) {
            char terr[512];
            if (osp_detect_track_frame(trk, &s->res, s->dets, &pv, ft, terr, sizeof terr)) {
                s->failed = 1;
                osp_detect_format(&s->line, name, s->frame, s->t, m, NULL, terr);
            } else {
                if (!o->track) s->res.track_ids = NULL;
                osp_detect_format(&s->line, name, s->frame, s->t, m, &s->res, NULL);
            }
        }
        osp_detect_emit(o, &s->line, s->captured, live);
        if (s->failed) {
            rc = 1;
            osp_tally_add_failed(t);
        } else {
            osp_tally_add(t, &s->res, s->frame, &pv);
            if (trk && o->track) osp_detect_track_emit(trk, s->frame, s->t, live);
        }
        double now = osp_now_s();
        if (bar && now - last_bar > 0.1) {
            progress(name, seq + 1, expect, now - t0, 0);
            last_bar = now;
        }
        pthread_mutex_lock(&p.mu);
        s->state = SLOT_FREE;
        pthread_cond_broadcast(&p.cv);
        pthread_mutex_unlock(&p.mu);
    }
    pthread_join(reader, NULL);
    for (int i = 0; i < nw; i++) pthread_join(workers[i], NULL);
    int64_t dropped = p.newest ? osp_newest_dropped(p.newest) : 0;
    osp_newest_stop(p.newest);
    fflush(stdout);
    if (bar) progress(name, osp_tally_frames(t), expect, osp_now_s() - t0, 1);
    char more[1024] = "";
    if (trk) osp_detect_track_summary(trk, more, sizeof more);
    if (o->cascade) { /* tracked once per object, else on every box of every frame */
        size_t at = strlen(more);
        long runs = step_runs(o->cascade) - runs0, frames = osp_tally_frames(t);
        snprintf(more + at, sizeof more - at, "; %ld cascade step run%s (%.2f a frame)", runs,
                 runs == 1 ? "" : "s", frames ? (double)runs / (double)frames : 0.0);
    }
    osp_tally_print(t, osp_detect_base_name(name), osp_now_s() - t0, more);
    if (o->events) fflush(o->events);
    if (live) {
        osp_source_stats_t ss = osp_source_stats(src);
        fprintf(stderr,
                "%s: live: %lld frame%s dropped for newer ones, %lld drop%s, %lld reconnect%s, "
                "%lld frame%s lost\n",
                osp_detect_base_name(name), (long long)dropped, dropped == 1 ? "" : "s",
                (long long)ss.drops, ss.drops == 1 ? "" : "s", (long long)ss.reconnects,
                ss.reconnects == 1 ? "" : "s", (long long)ss.frames_lost,
                ss.frames_lost == 1 ? "" : "s");
    }
    osp_snapshot_write(o->out_dir, name, t, m, dec);
    if (p.read_rc == OSP_SOURCE_EGAVEUP) {
        osp_log(OSP_LOG_ERROR, "osprey detect: %s", p.read_err);
        rc = 1;
    } else if (p.read_err[0]) {
        osp_log(OSP_LOG_ERROR, "osprey detect: %s: %s", name, p.read_err);
        rc = 2;
    }
    for (int i = 0; i < p.nslots; i++) {
        osp_image_free(&p.slots[i].img);
        osp_jw_free(&p.slots[i].line);
        free(p.slots[i].dets);
    }
    free(p.slots);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    osp_source_close(src);
    osp_tally_free(t);
    osp_detect_track_free(trk);
    osp_motion_gate_free(p.gate);
    return rc;
}
