/* pipeline: see pipeline.h. */
#define _POSIX_C_SOURCE 200809L
#include "segment/pipeline.h"

#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "segment/onnxscore.h"
#include "segment/queue.h"
#include "segment/scene.h"
#include "video/source.h"

/* Scores waiting for the chunker. The chunker only runs a state machine,
 * so this never fills in practice; a live source still never waits on it. */
#define SCORE_QUEUE 8192
#define CHUNK_QUEUE 256

/* ---- records ---- */

typedef struct {
    double pts, score, wall;
} score_t;

typedef struct record {
    osp_chunk_t chunk;
    bool final;
    double cv_execute_time, t_cv_ready, t_chunk_end;
    int64_t frame_number;
    int vlm_frames;
    /* The VLM request, when one was started: its thread owns body, content
     * and err until the output thread joins it. */
    bool has_req;
    pthread_t th;
    char *body, *content;
    int rc;
    char err[256];
    double t_submit, t_done;
} record_t;

typedef struct {
    const osp_segment_opts_t *o;
    atomic_bool *stop;
    osp_source_t *src;
    bool replay; /* a file paced at its real rate (--live); a live source paces itself */
    double fps, duration;
    osp_chunk_params_t cp;
    bool want_pixels;
    double t_start_wall;
    osp_frameq_t *frames;
    osp_bq_t *scores, *chunks, *results; /* score_t, record_t *, record_t * */
    /* vlm_concurrency tokens: taken before a request starts, given back by
     * its thread when it ends. The results queue alone did not bound the
     * requests: one more ran while the describe thread waited to queue it
     * and one more while the output thread waited for it (N + 2 in all). */
    sem_t slots;
    bool slots_ok;
    int64_t frames_read, described;
    osp_onnxscore_t *onnx; /* NULL: the scene scorer */
    int64_t onnx_skipped;
    char src_err[512];
    int src_rc; /* the source's negative return, when it failed */
} pipe_t;

/* The ONNX scorer's sink, on its worker thread (frames in order). */
static void on_onnx_score(void *ctx, int64_t frame, float score) {
    pipe_t *p = ctx;
    score_t s = {.pts = (double)frame / p->fps, .score = score, .wall = osp_epoch_s()};
    osp_bq_put(p->scores, &s, p->cp.live);
}

static void downscale(const osp_image_t *src, int side, osp_image_t *dst) {
    int w = src->width, h = src->height;
    if (w > side || h > side) {
        if (w >= h) {
            h = (int)((long)h * side / w);
            w = side;
        } else {
            w = (int)((long)w * side / h);
            h = side;
        }
    }
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    if (osp_image_reserve(dst, w, h, OSP_PIX_RGB)) return;
    for (int y = 0; y < h; y++) {
        const uint8_t *srow = src->data + (size_t)((long)y * src->height / h) * (size_t)src->stride;
        uint8_t *drow = dst->data + (size_t)y * (size_t)dst->stride;
        for (int x = 0; x < w; x++) memcpy(drow + 3 * x, srow + 3 * ((long)x * src->width / w), 3);
    }
}

static void *source_main(void *arg) {
    pipe_t *p = arg;
    const osp_segment_opts_t *o = p->o;
    osp_scene_t *scene = NULL;
    osp_image_t rgb = {0}, scratch = {0};
    if (!p->cp.uniform && !p->onnx && osp_scene_create(&scene)) {
        snprintf(p->src_err, sizeof p->src_err, "out of memory");
        goto done;
    }
    double t0 = osp_now_s();
    double speed = o->live_speed > 0 ? o->live_speed : 1.0;
    for (int64_t i = 0;; i++) {
        if (p->stop && atomic_load(p->stop)) break;
        char err[512];
        osp_frame_meta_t meta;
        int r = osp_source_read(p->src, &rgb, &meta, err, sizeof err);
        if (r < 0) {
            snprintf(p->src_err, sizeof p->src_err, "%s", err);
            p->src_rc = r;
        }
        if (r != 1) break;
        /* the source's timeline: frames lost while a camera was down count */
        double pts = (double)meta.index / p->fps;
        if (p->replay) {
            /* Replay at the real rate: the frame is due pts / speed after the first. */
            double due = t0 + pts / speed;
            while (!(p->stop && atomic_load(p->stop))) {
                double left = due - osp_now_s();
                if (left <= 0) break;
                osp_sleep_ms((left > 0.05 ? 0.05 : left) * 1e3);
            }
        }
        double seen = osp_epoch_s();
        score_t s = {.pts = pts, .score = 0, .wall = seen};
        if (scene) {
            osp_view_t v = osp_image_view(&rgb);
            float sc = osp_scene_score(scene, &v);
            s.score = sc < 0 ? 0 : sc;
        }
        if (p->want_pixels) downscale(&rgb, o->vlm_side, &scratch);
        osp_frameq_put(p->frames, pts, seen, &scratch, p->cp.live, p->stop);
        if (p->onnx) {
            /* The frames before the first full window get no score from the
             * model: they open the first chunk with 0. */
            if (i < (o->scorer_window > 0 ? o->scorer_window : 2) - 1)
                osp_bq_put(p->scores, &s, p->cp.live);
            osp_onnxscore_push(p->onnx, &rgb);
        } else {
            osp_bq_put(p->scores, &s, p->cp.live);
        }
        p->frames_read++;
    }
    if (p->onnx) p->onnx_skipped = osp_onnxscore_finish(p->onnx);
done:
    osp_scene_free(scene);
    osp_image_free(&rgb);
    osp_image_free(&scratch);
    osp_frameq_close(p->frames);
    osp_bq_close(p->scores);
    return NULL;
}

static void send_chunk(pipe_t *p, const osp_chunk_t *c, bool final, double *t_last) {
    record_t *r = calloc(1, sizeof(*r));
    if (!r) return; /* out of memory: the chunk's frames go to the next one */
    double now = osp_now_s();
    r->chunk = *c;
    r->final = final;
    r->cv_execute_time = now - *t_last;
    r->t_cv_ready = osp_epoch_s();
    *t_last = now;
    osp_bq_put(p->chunks, &r, false);
}

static void *chunker_main(void *arg) {
    pipe_t *p = arg;
    osp_chunker_t ch;
    osp_chunker_init(&ch, &p->cp);
    osp_chunk_t out[8];
    score_t s;
    double t_last = osp_now_s();
    while (osp_bq_get(p->scores, &s)) {
        int n = osp_chunker_push(&ch, s.pts, s.score, out, 8);
        for (int i = 0; i < n; i++) send_chunk(p, &out[i], false, &t_last);
    }
    /* Uniform mode may owe whole chunks before the final one; the final one
     * (the one that takes every remaining frame) is the last returned. */
    osp_chunk_t c, next;
    int have = osp_chunker_finish(&ch, &c);
    while (have) {
        int more = osp_chunker_finish(&ch, &next);
        send_chunk(p, &c, !more, &t_last);
        c = next;
        have = more;
    }
    osp_bq_close(p->chunks);
    return NULL;
}

static void *request_main(void *arg) {
    record_t *r = arg;
    pipe_t *p = (pipe_t *)r->content; /* handed over through content, see start_request */
    r->content = NULL;
    r->rc = osp_vlm_post(&p->o->vlm, r->body, p->stop, &r->content, r->err, sizeof r->err);
    r->t_done = osp_now_s();
    free(r->body);
    r->body = NULL;
    sem_post(&p->slots);
    return NULL;
}

static void start_request(pipe_t *p, record_t *r) {
    while (sem_wait(&p->slots) != 0) continue; /* EINTR */
    r->t_submit = osp_now_s();
    r->content = (char *)p;
    if (pthread_create(&r->th, NULL, request_main, r) != 0) {
        sem_post(&p->slots);
        r->content = NULL;
        r->rc = OSP_VLM_ENOMEM;
        snprintf(r->err, sizeof r->err, "cannot start a request thread");
        free(r->body);
        r->body = NULL;
        return;
    }
    r->has_req = true;
}

static void *describe_main(void *arg) {
    pipe_t *p = arg;
    const osp_segment_opts_t *o = p->o;
    osp_vlm_body_t body;
    osp_vlm_body_init(&body);
    osp_image_t img = {0};
    record_t *r;
    while (osp_bq_get(p->chunks, &r)) {
        double start = r->chunk.start, end = r->final ? INFINITY : r->chunk.end;
        double len = r->chunk.end - start;
        int n = 0;
        bool vlm = o->vlm.url && !(p->stop && atomic_load(p->stop));
        if (vlm) {
            n = (int)floor(len * o->vlm_fps + 0.5);
            if (n < 1) n = 1;
            if (n > o->vlm_max_frames) n = o->vlm_max_frames;
        }
        body.len = 0;
        body.n_frames = 0;
        int k = 0;
        double pts, seen;
        while (osp_frameq_take(p->frames, end, &pts, &seen, &img) == 1) {
            r->frame_number++;
            r->t_chunk_end = seen;
            if (k >= n) continue;
            /* Even sampling: the first frame at or after each target time. */
            double target = start + (k + 0.5) * len / n;
            if (pts + 0.5 / p->fps < target) continue;
            osp_view_t v = osp_image_view(&img);
            if (osp_vlm_body_add_frame(&body, &v, 85) == 0) r->vlm_frames++;
            while (k < n && start + (k + 0.5) * len / n <= pts + 0.5 / p->fps) k++;
        }
        p->described += r->frame_number;
        osp_sleep_ms(o->slow_describe_ms);
        if (vlm && r->vlm_frames > 0) {
            r->body = osp_vlm_body_finish(&body, &o->vlm, o->prompt);
            if (r->body)
                start_request(p, r);
            else
                snprintf(r->err, sizeof r->err, "out of memory");
        }
        /* Waits while vlm_concurrency records wait for the output thread. */
        osp_bq_put(p->results, &r, false);
    }
    osp_vlm_body_free(&body);
    osp_image_free(&img);
    osp_bq_close(p->results);
    return NULL;
}

static void add_num(cJSON *o, const char *k, double v) { cJSON_AddNumberToObject(o, k, v); }

static void emit_json(pipe_t *p, cJSON *j) {
    char *s = cJSON_PrintUnformatted(j);
    if (s && p->o->emit) p->o->emit(p->o->emit_ctx, s);
    free(s);
}

static void output(pipe_t *p, record_t *r, osp_segment_stats_t *st) {
    const osp_segment_opts_t *o = p->o;
    double vlm_time = 0;
    if (r->has_req) {
        pthread_join(r->th, NULL);
        vlm_time = r->t_done - r->t_submit;
        if (r->rc) st->vlm_errors++;
    }
    cJSON *j = cJSON_CreateObject();
    add_num(j, "chunk_idx", (double)r->chunk.idx);
    add_num(j, "start_time", r->chunk.start);
    add_num(j, "end_time", r->chunk.end);
    add_num(j, "cv_boundary_score", r->chunk.score);
    add_num(j, "frame_number", (double)r->frame_number);
    cJSON_AddStringToObject(j, "response", r->content ? r->content : "");
    if (o->procedure) {
        cJSON *c = osp_proc_check(o->procedure, r->content ? r->content : "");
        cJSON_AddItemToObject(j, "checker_result", c ? c : cJSON_CreateNull());
    } else {
        cJSON_AddNullToObject(j, "checker_result");
    }
    add_num(j, "cv_execute_time", r->cv_execute_time);
    add_num(j, "vlm_execute_time", vlm_time);
    add_num(j, "vlm_frames", r->vlm_frames);
    if (r->err[0]) cJSON_AddStringToObject(j, "vlm_error", r->err);
    add_num(j, "pipeline_starting_timestamp", p->t_start_wall);
    add_num(j, "pipeline_cv_ready_timestamp", r->t_cv_ready);
    add_num(j, "pipeline_chunk_end_timestamp", r->t_chunk_end);
    add_num(j, "pipeline_vlm_ready_timestamp", osp_epoch_s());
    cJSON_AddStringToObject(j, "sensor_id", o->sensor_id ? o->sensor_id : "");
    emit_json(p, j);
    cJSON_Delete(j);
    free(r->content);
    free(r);
    st->chunks++;
}

void osp_segment_opts_default(osp_segment_opts_t *o) {
    memset(o, 0, sizeof(*o));
    osp_chunk_params_default(&o->chunk);
    o->live_speed = 1.0;
    o->vlm.system_prompt = "Answer the questions.";
    o->vlm.max_tokens = 256;
    o->vlm.temperature = 0.0;
    o->prompt = "Describe what happens in this video clip.";
    o->vlm_fps = 1.0;
    o->vlm_max_frames = 16;
    o->vlm_side = 448;
    o->vlm_concurrency = 4;
    o->warmup = true;
    o->scorer_size = 64;
    o->scorer_window = 2;
    osp_source_cfg_default(&o->source);
}

int osp_segment_run(const osp_segment_opts_t *o, osp_segment_stats_t *st, char *err, size_t errlen) {
    osp_segment_stats_t local;
    if (!st) st = &local;
    memset(st, 0, sizeof(*st));
    pipe_t p;
    memset(&p, 0, sizeof p);
    atomic_bool own_stop = false;
    p.o = o;
    p.stop = o->stop ? o->stop : &own_stop;
    p.t_start_wall = osp_epoch_s();
    osp_source_cfg_t scfg = o->source;
    scfg.stop = p.stop;
    int rc = osp_source_open(o->input, &scfg, &p.src, err, errlen);
    if (rc) return rc;
    const osp_video_info_t *info = osp_source_info(p.src);
    bool live = o->live || osp_source_live(p.src);
    p.replay = o->live && !osp_source_live(p.src);
    p.fps = info->fps > 0 ? info->fps : 30.0;
    p.duration = (!live && info->frames > 0 && info->fps > 0) ? (double)info->frames / info->fps : 0;
    p.cp = o->chunk;
    p.cp.live = live;
    p.cp.duration = p.duration;
    osp_chunker_t probe;
    if (osp_chunker_init(&probe, &p.cp)) {
        snprintf(err, errlen, "bad chunking parameters");
        rc = -1;
        goto out;
    }
    p.want_pixels = o->vlm.url != NULL;
    double span = p.cp.uniform ? p.cp.uniform_len : p.cp.max_len;
    double want = ceil(p.fps * span) + 10;
    int cap = want < 30 ? 30 : want > 100000 ? 100000 : (int)want;
    st->frame_queue_cap = cap;
    st->fps = p.fps;
    st->duration = p.duration;
    int conc = o->vlm_concurrency > 0 ? o->vlm_concurrency : 1;
    if (osp_frameq_new(cap, &p.frames) || osp_bq_new(sizeof(score_t), SCORE_QUEUE, &p.scores) ||
        osp_bq_new(sizeof(record_t *), CHUNK_QUEUE, &p.chunks) ||
        osp_bq_new(sizeof(record_t *), conc, &p.results)) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
        goto out;
    }
    if (sem_init(&p.slots, 0, (unsigned)conc) != 0) {
        snprintf(err, errlen, "cannot create the request bound");
        rc = -1;
        goto out;
    }
    p.slots_ok = true;
    if (o->scorer && !p.cp.uniform) {
        osp_onnxscore_cfg_t sc = {.path = o->scorer,
                                  .size = o->scorer_size,
                                  .window = o->scorer_window,
                                  .live = live};
        char e[256];
        if (osp_onnxscore_open(&sc, on_onnx_score, &p, &p.onnx, e, sizeof e)) {
            snprintf(err, errlen, "scorer %s: %s", o->scorer, e);
            rc = -1;
            goto out;
        }
    }
    if (o->vlm.url && o->warmup) {
        char e[256];
        if ((rc = osp_vlm_warmup(&o->vlm, p.stop, e, sizeof e))) {
            snprintf(err, errlen, "VLM warm-up request failed: %s", e);
            goto out;
        }
    }
    pthread_t th[3];
    void *(*fn[3])(void *) = {source_main, chunker_main, describe_main};
    int started = 0;
    for (; started < 3; started++)
        if (pthread_create(&th[started], NULL, fn[started], &p)) break;
    if (started < 3) {
        /* Cannot happen short of thread exhaustion; stop what runs. */
        atomic_store(p.stop, true);
        osp_frameq_close(p.frames);
        osp_bq_close(p.scores);
        osp_bq_close(p.chunks);
        osp_bq_close(p.results);
        for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
        snprintf(err, errlen, "cannot start the stage threads");
        rc = -1;
        goto out;
    }
    record_t *r;
    while (osp_bq_get(p.results, &r)) output(&p, r, st);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    if (o->procedure) {
        cJSON *j = cJSON_CreateObject();
        add_num(j, "chunk_idx", -1);
        add_num(j, "start_time", 0);
        add_num(j, "end_time", 0);
        cJSON *sum = osp_proc_summary(o->procedure);
        cJSON_AddItemToObject(j, "checker_result", sum ? sum : cJSON_CreateNull());
        cJSON_AddStringToObject(j, "sensor_id", o->sensor_id ? o->sensor_id : "");
        emit_json(&p, j);
        cJSON_Delete(j);
    }
    st->frames_read = p.frames_read;
    st->frames_dropped = osp_frameq_dropped(p.frames) + osp_bq_dropped(p.scores);
    st->frames_described = p.described;
    st->scores_skipped = p.onnx_skipped;
    st->live = live;
    st->source_rc = p.src_rc;
    st->source = osp_source_stats(p.src);
    if (p.src_err[0]) snprintf(err, errlen, "%s", p.src_err);
out:
    osp_onnxscore_close(p.onnx);
    osp_frameq_free(p.frames);
    osp_bq_free(p.scores);
    osp_bq_free(p.chunks);
    osp_bq_free(p.results);
    if (p.slots_ok) sem_destroy(&p.slots);
    osp_source_close(p.src);
    return rc;
}
