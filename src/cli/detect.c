/*
 * osprey detect: run a model over images and videos. One JSON line per
 * frame on stdout (the protocol's result record plus source and frame),
 * a progress bar and a summary on stderr, and an annotated snapshot of the
 * frame with the most people (or detections) in --out.
 *
 * Videos run as a pipeline: a reader thread decodes frames into a ring of
 * slots, N workers each prepare and predict whole frames on one shared
 * session (one intra-op thread each: on small machines N single-thread runs
 * side by side beat one N-thread run), and the main thread prints results
 * in frame order. Every video input is a source (video/source.h): a file,
 * a camera URL, a device or stdin. A live one is decoded on a thread of its
 * own at the camera's rate (video/newest.h) and the reader takes the newest
 * frame, so a model slower than the camera drops the oldest frames (counted)
 * instead of falling behind; its ring is shorter for the same reason.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/events.h"
#include "model/model.h"
#include "video/newest.h"
#include "video/rate.h"
#include "video/source.h"
#include "video/url.h"
#include "video/video.h"
#include "wire/jsonw.h"

#include <cjson/cJSON.h>

#define MAX_LABELS 256

typedef struct {
    const char *model;
    float threshold; /* < 0: the model's default */
    int every;
    const char *out_dir;
    int workers;
    int quiet; /* no progress bar */
    int no_json;
    const char *postprocessor; /* NULL: the model's */
    const char *config;        /* a JSON model config file, or NULL */
    double fps;                /* --fps: frames per second taken; 0: all */
    osp_source_cfg_t source;   /* transport, reconnection */
} opts_t;

/* SIGINT/SIGTERM: the sources end as if the stream ended; summaries follow. */
static atomic_bool g_stop;

static void on_signal(int sig) {
    (void)sig;
    atomic_store(&g_stop, true);
}

/* Tallies across a whole input, plus the best frame for the snapshot. */
typedef struct {
    long frames;
    long per_label[MAX_LABELS];
    long other;
    int best_count; /* people (or detections) in the best frame so far */
    long best_frame;
    osp_image_t best;       /* copy of that frame */
    float best_sx, best_sy; /* kept pixels per original pixel (a scaled decode) */
    osp_det_t *best_dets;
    int best_n, best_cap;
} tally_t;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *out) {
    fputs("usage: osprey detect [options] INPUT...\n"
          "\n"
          "Run a detector over images (JPEG, PNG) and videos (AVI, MP4, MKV, ...).\n"
          "Prints one JSON line per frame on stdout:\n"
          "  {\"source\":…,\"frame\":…,\"kind\":\"detections\",\"detections\":[{\"label\",\"class\",\n"
          "   \"score\",\"box\":[x1,y1,x2,y2]}…],\"inferenceMs\":…,…,\"frameSize\":\"WxH\"}\n"
          "with boxes in pixels of the original frame. A progress bar (when stderr is\n"
          "a terminal) and a summary per input go to stderr.\n"
          "\n"
          "options:\n"
          "  -m, --model NAME|PATH  a catalog model (see 'osprey models') or an ONNX file\n"
          "                         (default ssd-oidv4-int8)\n"
          "  -t, --threshold T      minimum score, 0..1 (default: the model's, 0.3 for ssd-oidv4-int8)\n"
          "  -e, --every N          run every Nth video frame (default 1: all)\n"
          "      --fps N            take at most N frames a second (by the video's clock,\n"
          "                         a camera's by capture time; default: all)\n"
          "  -o, --out DIR          write an annotated snapshot of the frame with the most\n"
          "                         people (or detections) per input to DIR/<name>-best.jpg\n"
          "  -j, --workers N        frames in flight at once (default: the number of cores)\n"
          "  -q, --quiet            no progress bar\n"
          "      --no-json          print no per-frame lines (summary only)\n"
          "      --postprocessor NAME  decode the outputs with NAME (yolo, yolox, yolonas,\n"
          "                         ssd, ssd-nms, scrfd, ...; default: the catalog's, else yolo)\n"
          "      --config FILE      a JSON model config (docs/protocol.md, Model config) whose\n"
          "                         keys override the model's settings; its path (or model)\n"
          "                         defaults to --model\n"
          "      --reconnect-for S  give up when a live source stays down S seconds (exit\n"
          "                         status 1); default: reconnect forever\n"
          "      --rtsp-transport tcp|udp  how rtsp:// is carried (default tcp)\n"
          "  -h, --help             this text\n"
          "\n"
          "Inputs (docs/sources.md): image and video files; rtsp:// and rtsps:// cameras;\n"
          "http(s):// MJPEG or HLS streams (rtmp://, srt://, udp://, tcp:// as FFmpeg reads\n"
          "them); a V4L2 device (/dev/video0); - for a stream on stdin. A login in a URL\n"
          "is never printed (rtsp://***@host/...).\n"
          "A live source (camera, stream, device) is decoded at its own rate; when the\n"
          "model is slower the newest frame is taken and the older ones dropped (counted\n"
          "in the summary). Each record has \"ageMs\", capture to record. A live source\n"
          "that drops is reopened after 0.5 s, then 1, 2, 4, 8 and every 10 s; each\n"
          "drop and reconnect is a line on stderr and a record {\"event\":\"drop\"|\n"
          "\"reconnect\"|\"gave-up\",\"time\",\"reason\",\"framesLost\",...} on stdout.\n"
          "A read that blocks 5 s counts as a drop. SIGINT/SIGTERM end the inputs and\n"
          "print their summaries.\n"
          "\n"
          "Exit status: 0 when every input was processed (or stopped by a signal), 1 when\n"
          "a model or frame failed or a live source was given up, 2 for bad usage, a\n"
          "missing or unreadable input, or an unknown model.\n",
          out);
}

static const char *base_name(const char *path) {
    if (strcmp(path, "-") == 0) return "stdin";
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* Which class counts as "people" for the snapshot: a label "person". */
static int person_class(const osp_model_t *m) {
    for (int i = 0; i < m->n_labels; i++)
        if (strcasecmp(m->labels[i], "person") == 0) return i;
    return -1;
}

static void tally_result(tally_t *t, const osp_model_t *m, const osp_result_t *r, long frame,
                         const osp_view_t *pixels) {
    t->frames++;
    int people = 0, pc = person_class(m);
    for (int i = 0; i < r->n_dets; i++) {
        int c = r->dets[i].cls;
        if (c >= 0 && c < MAX_LABELS)
            t->per_label[c]++;
        else
            t->other++;
        if (pc < 0 || c == pc) people++;
    }
    if (!pixels || people <= t->best_count) return;
    /* a new best frame: keep its pixels and boxes for the snapshot */
    size_t need = (size_t)pixels->height * (size_t)pixels->width * 3;
    if (t->best.cap < need) {
        uint8_t *d = realloc(t->best.data, need);
        if (!d) return;
        t->best.data = d;
        t->best.cap = need;
    }
    if (t->best_cap < r->n_dets) {
        osp_det_t *d = realloc(t->best_dets, (size_t)r->n_dets * sizeof *d);
        if (!d) return;
        t->best_dets = d;
        t->best_cap = r->n_dets;
    }
    for (int y = 0; y < pixels->height; y++)
        memcpy(t->best.data + (size_t)y * pixels->width * 3,
               pixels->data + (size_t)y * pixels->stride, (size_t)pixels->width * 3);
    t->best.width = pixels->width;
    t->best.height = pixels->height;
    t->best.stride = pixels->width * 3;
    t->best.fmt = OSP_PIX_RGB;
    t->best_sx = (float)pixels->width / (float)r->frame_w;
    t->best_sy = (float)pixels->height / (float)r->frame_h;
    memcpy(t->best_dets, r->dets, (size_t)r->n_dets * sizeof *r->dets);
    t->best_n = r->n_dets;
    t->best_count = people;
    t->best_frame = frame;
}

static void write_snapshot(const opts_t *o, const char *input, tally_t *t, const osp_model_t *m,
                           osp_decoder_t *dec) {
    if (!o->out_dir || !t->best.data) return;
    char path[2048], err[256];
    const char *b = base_name(input);
    const char *dot = strrchr(b, '.');
    int stem = dot && dot != b ? (int)(dot - b) : (int)strlen(b);
    snprintf(path, sizeof path, "%s/%.*s-best.jpg", o->out_dir, stem, b);
    static const uint8_t green[3] = {40, 220, 60}, black[3] = {0, 0, 0};
    for (int i = 0; i < t->best_n; i++) {
        const osp_det_t *d = &t->best_dets[i];
        char text[96];
        const char *label = osp_model_label(m, d->cls);
        if (label)
            snprintf(text, sizeof text, "%s %.2f", label, d->score);
        else
            snprintf(text, sizeof text, "%d %.2f", d->cls, d->score);
        /* boxes are in original pixels; the kept copy may be a scaled decode */
        int x1 = (int)(d->x1 * t->best_sx), y1 = (int)(d->y1 * t->best_sy);
        int x2 = (int)(d->x2 * t->best_sx), y2 = (int)(d->y2 * t->best_sy);
        osp_draw_rect(&t->best, x1, y1, x2, y2, 2, green);
        osp_draw_label(&t->best, x1, y1 > 12 ? y1 - 12 : y1, text, black, green);
    }
    osp_view_t v = osp_image_view(&t->best);
    if (osp_image_save(dec, &v, path, err, sizeof err))
        fprintf(stderr, "osprey detect: cannot write snapshot: %s\n", err);
    else
        fprintf(stderr, "osprey detect: snapshot of frame %ld (%d %s) -> %s\n", t->best_frame,
                t->best_count, person_class(m) >= 0 ? "people" : "detections", path);
}

static void print_summary(const char *input, const tally_t *t, const osp_model_t *m, double secs) {
    fprintf(stderr, "%s: %ld frame%s in %.2f s (%.1f frames/s)", base_name(input), t->frames,
            t->frames == 1 ? "" : "s", secs, secs > 0 ? (double)t->frames / secs : 0.0);
    /* labels by count, most first */
    int order[MAX_LABELS], n = 0;
    for (int c = 0; c < MAX_LABELS; c++)
        if (t->per_label[c]) order[n++] = c;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t->per_label[order[j]] > t->per_label[order[j - 1]]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    if (n == 0 && t->other == 0) fprintf(stderr, "; no detections");
    for (int i = 0; i < n; i++) {
        const char *label = osp_model_label(m, order[i]);
        if (label)
            fprintf(stderr, "%s %s %ld", i ? "," : ";", label, t->per_label[order[i]]);
        else
            fprintf(stderr, "%s class %d %ld", i ? "," : ";", order[i], t->per_label[order[i]]);
    }
    fputc('\n', stderr);
}

/* One result line: {"source","frame",["t",] record…}. */
/* The record stays open: emit() adds "ageMs" as it is printed. */
static void format_line(osp_jw_t *w, const char *input, long frame, double t, const osp_model_t *m,
                        const osp_result_t *r, const char *error) {
    osp_jw_reset(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "source");
    osp_jw_str(w, input);
    osp_jw_key(w, "frame");
    osp_jw_int(w, frame);
    if (t >= 0) {
        osp_jw_key(w, "t");
        osp_jw_num(w, t, 3);
    }
    if (error) {
        osp_jw_key(w, "error");
        osp_jw_str(w, error);
        osp_jw_key(w, "kind");
        osp_jw_str(w, "detections");
        osp_jw_key(w, "detections");
        osp_jw_arr_open(w);
        osp_jw_arr_close(w);
        osp_jw_key(w, "inferenceMs");
        osp_jw_int(w, 0);
    } else {
        osp_model_put_result(w, m, r, 1);
    }
}

/* Print a line on stdout whole: a source's thread prints event records.
 * flush: a live source's lines are wanted as they happen, not a pipe
 * buffer later. */
static void put_line(const osp_jw_t *w, int flush) {
    flockfile(stdout);
    fwrite(w->buf, 1, w->len, stdout);
    fputc('\n', stdout);
    if (flush) fflush(stdout);
    funlockfile(stdout);
}

/* Close the record with its age (seconds since capture, monotonic) and print it. */
static void emit(const opts_t *o, osp_jw_t *w, double captured, int flush) {
    osp_jw_key(w, "ageMs");
    osp_jw_num(w, (now_s() - captured) * 1000.0, 1);
    osp_jw_obj_close(w);
    if (!o->no_json) put_line(w, flush);
}

/* ---- images ---------------------------------------------------------------- */

static int run_image(const opts_t *o, osp_model_t *m, osp_decoder_t *dec, const char *input) {
    osp_image_t img = {0};
    osp_infer_ctx_t ctx = {0};
    osp_jw_t w = {0};
    tally_t t = {0};
    char err[512];
    int rc = 0, ow = 0, oh = 0;
    double t0 = now_s();
    FILE *f = fopen(input, "rb");
    uint8_t *buf = NULL;
    long len = 0;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc(len ? (size_t)len : 1)) && fread(buf, 1, (size_t)len, f) == (size_t)len) {
        /* ok */
    } else {
        fprintf(stderr, "osprey detect: cannot read %s: %s\n", input, strerror(errno ? errno : EIO));
        rc = 2;
        goto done;
    }
    if (osp_image_decode(dec, buf, (size_t)len, m->prep.width, m->prep.height, &img, &ow, &oh, err,
                         sizeof err)) {
        fprintf(stderr, "osprey detect: %s: %s\n", input, err);
        rc = 2;
        goto done;
    }
    osp_view_t v = osp_image_view(&img);
    osp_result_t r;
    if (osp_model_infer(m, &ctx, &v, ow, oh, &r, err, sizeof err)) {
        fprintf(stderr, "osprey detect: %s: %s\n", input, err);
        format_line(&w, input, 0, -1, m, NULL, err);
        emit(o, &w, t0, 0);
        rc = 1;
        goto done;
    }
    format_line(&w, input, 0, -1, m, &r, NULL);
    emit(o, &w, t0, 0);
    tally_result(&t, m, &r, 0, &v);
    print_summary(input, &t, m, now_s() - t0);
    write_snapshot(o, input, &t, m, dec);
done:
    if (f) fclose(f);
    free(buf);
    osp_image_free(&img);
    osp_infer_ctx_free(&ctx);
    osp_jw_free(&w);
    osp_image_free(&t.best);
    free(t.best_dets);
    return rc;
}

/* ---- videos ---------------------------------------------------------------- */

enum { SLOT_FREE, SLOT_READY, SLOT_BUSY, SLOT_DONE };

typedef struct {
    int state;
    long seq, frame;
    double t, captured; /* pts (-1: unknown rate), monotonic capture time */
    osp_image_t img;
    osp_jw_t line;
    osp_det_t *dets;
    int n_dets, det_cap, failed;
    osp_result_t res; /* dets point into this slot */
} slot_t;

typedef struct {
    const opts_t *o;
    osp_model_t *m;
    osp_source_t *src;
    osp_newest_t *newest; /* a live source's decoding thread, else NULL */
    const char *input;    /* the source's name: credentials masked */
    pthread_mutex_t mu;   /* guards every field below and the slot states */
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
        pthread_mutex_lock(&p->mu);
        s->seq = p->read_seq++;
        s->state = SLOT_READY;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    osp_image_free(&img);
    return NULL;
}

static void *worker_main(void *arg) {
    pipe_t *p = arg;
    osp_infer_ctx_t ctx = {0};
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
                return NULL;
            }
            pthread_cond_wait(&p->cv, &p->mu);
        }
        s->state = SLOT_BUSY;
        p->take_seq++;
        pthread_mutex_unlock(&p->mu);

        osp_view_t v = osp_image_view(&s->img);
        osp_result_t r;
        s->failed = osp_model_infer(p->m, &ctx, &v, 0, 0, &r, err, sizeof err) != 0;
        if (s->failed) {
            format_line(&s->line, p->input, s->frame, s->t, p->m, NULL, err);
            s->n_dets = 0;
        } else {
            format_line(&s->line, p->input, s->frame, s->t, p->m, &r, NULL);
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
        fprintf(stderr, "\r%s [%s] %ld/%ld frames %.1f fps ", base_name(input), bar, done, total,
                secs > 0 ? (double)done / secs : 0.0);
    else
        fprintf(stderr, "\r%s %ld frames %.1f fps ", base_name(input), done,
                secs > 0 ? (double)done / secs : 0.0);
    if (final) fputs("\r\033[K", stderr);
}

/* A live source's drops and reconnects, on its reading thread. */
static void on_source_event(void *ctx, const osp_source_event_t *e) {
    const opts_t *o = ctx;
    osp_cli_event_log("detect", e);
    if (o->no_json) return;
    osp_jw_t w = {0};
    osp_cli_event_record(&w, e, NULL);
    put_line(&w, 1);
    osp_jw_free(&w);
}

static int run_video(const opts_t *o, osp_model_t *m, osp_decoder_t *dec, const char *input) {
    char err[512];
    osp_source_t *src = NULL;
    osp_source_cfg_t scfg = o->source;
    scfg.stop = &g_stop;
    scfg.on_event = on_source_event;
    scfg.ctx = (void *)o;
    if (osp_source_open(input, &scfg, &src, err, sizeof err)) {
        fprintf(stderr, "osprey detect: %s\n", err);
        return 2;
    }
    const osp_video_info_t *info = osp_source_info(src);
    int live = osp_source_live(src);
    const char *name = osp_source_name(src);
    pipe_t p = {.o = o, .m = m, .src = src, .input = name};
    /* live: one frame waiting beyond those running, or it ages in the ring */
    p.nslots = live ? o->workers + 1 : o->workers * 2 + 2;
    p.slots = calloc((size_t)p.nslots, sizeof *p.slots);
    if (!p.slots) snprintf(err, sizeof err, "out of memory");
    if (!p.slots || (live && osp_newest_start(src, &p.newest, err, sizeof err))) {
        free(p.slots);
        osp_source_close(src);
        fprintf(stderr, "osprey detect: %s\n", err);
        return 1;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t reader, workers[64];
    int nw = 0, rc = 0;
    tally_t t = {0};
    long expect = info->frames > 0 && o->fps <= 0 ? (info->frames + o->every - 1) / o->every : 0;
    int bar = !o->quiet && isatty(STDERR_FILENO);
    double t0 = now_s(), last_bar = 0;

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
        emit(o, &s->line, s->captured, live);
        if (s->failed) {
            rc = 1;
            t.frames++;
        } else {
            osp_view_t pv = osp_image_view(&s->img);
            tally_result(&t, m, &s->res, s->frame, &pv);
        }
        double now = now_s();
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
    if (bar) progress(name, t.frames, expect, now_s() - t0, 1);
    print_summary(name, &t, m, now_s() - t0);
    if (live) {
        osp_source_stats_t ss = osp_source_stats(src);
        fprintf(stderr,
                "%s: live: %lld frame%s dropped for newer ones, %lld drop%s, %lld reconnect%s, "
                "%lld frame%s lost\n",
                base_name(name), (long long)dropped, dropped == 1 ? "" : "s", (long long)ss.drops,
                ss.drops == 1 ? "" : "s", (long long)ss.reconnects, ss.reconnects == 1 ? "" : "s",
                (long long)ss.frames_lost, ss.frames_lost == 1 ? "" : "s");
    }
    write_snapshot(o, name, &t, m, dec);
    if (p.read_rc == OSP_SOURCE_EGAVEUP) {
        fprintf(stderr, "osprey detect: %s\n", p.read_err);
        rc = 1;
    } else if (p.read_err[0]) {
        fprintf(stderr, "osprey detect: %s: %s\n", name, p.read_err);
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
    osp_image_free(&t.best);
    free(t.best_dets);
    return rc;
}

/* ---- command ---------------------------------------------------------------- */

/* --config FILE: the model config of the protocol; without "path" or
 * "model" it configures the --model given (a catalog name or a file). */
static int load_config(const char *file, const char *model, osp_model_cfg_t *cfg, char *err,
                       size_t errlen) {
    FILE *f = fopen(file, "rb");
    char *text = NULL;
    long len = -1;
    int rc = -1;
    if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || len > (1 << 20) ||
        fseek(f, 0, SEEK_SET) || !(text = calloc(1, (size_t)len + 1)) ||
        fread(text, 1, (size_t)len, f) != (size_t)len) {
        snprintf(err, errlen, "cannot read config %s: %s", file,
                 len > (1 << 20) ? "larger than 1 MiB" : strerror(errno ? errno : EIO));
        goto done;
    }
    cJSON *obj = cJSON_Parse(text);
    if (!cJSON_IsObject(obj)) {
        snprintf(err, errlen, "config %s is not a JSON object", file);
        cJSON_Delete(obj);
        goto done;
    }
    if (!cJSON_GetObjectItemCaseSensitive(obj, "path") &&
        !cJSON_GetObjectItemCaseSensitive(obj, "model"))
        cJSON_AddStringToObject(obj, osp_catalog_find(model) ? "model" : "path", model);
    char inner[512];
    rc = osp_model_cfg_from_json(obj, cfg, inner, sizeof inner);
    if (rc) snprintf(err, errlen, "config %s: %s", file, inner);
    cJSON_Delete(obj);
done:
    if (f) fclose(f);
    free(text);
    return rc ? -1 : 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int osp_cmd_detect(int argc, char **argv) {
    opts_t o = {.model = "ssd-oidv4-int8", .threshold = -1, .every = 1};
    osp_source_cfg_default(&o.source);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o.workers = ncpu > 0 ? (int)(ncpu > 64 ? 64 : ncpu) : 1;
    static const struct option longopts[] = {{"model", required_argument, NULL, 'm'},
                                             {"threshold", required_argument, NULL, 't'},
                                             {"every", required_argument, NULL, 'e'},
                                             {"out", required_argument, NULL, 'o'},
                                             {"workers", required_argument, NULL, 'j'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"no-json", no_argument, NULL, 'J'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"postprocessor", required_argument, NULL, 'P'},
                                             {"config", required_argument, NULL, 'C'},
                                             {"fps", required_argument, NULL, 'F'},
                                             {"reconnect-for", required_argument, NULL, 'R'},
                                             {"rtsp-transport", required_argument, NULL, 'T'},
                                             {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:t:e:o:j:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': o.model = optarg; break;
        case 't': {
            char *end;
            errno = 0;
            double t = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(t >= 0 && t <= 1)) {
                fprintf(stderr, "osprey detect: --threshold must be a number from 0 to 1, not '%s'\n",
                        optarg);
                return 2;
            }
            o.threshold = (float)t;
            break;
        }
        case 'e':
            if (parse_int(optarg, 1, 1000000, &o.every)) {
                fprintf(stderr, "osprey detect: --every must be a whole number >= 1, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'o': o.out_dir = optarg; break;
        case 'j':
            if (parse_int(optarg, 1, 64, &o.workers)) {
                fprintf(stderr, "osprey detect: --workers must be from 1 to 64, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'q': o.quiet = 1; break;
        case 'J': o.no_json = 1; break;
        case 'P': o.postprocessor = optarg; break;
        case 'C': o.config = optarg; break;
        case 'F':
            if (osp_cli_parse_num("detect", "--fps", optarg, 0.001, 1000, &o.fps)) return 2;
            break;
        case 'R':
            if (osp_cli_parse_num("detect", "--reconnect-for", optarg, 0, 0, &o.source.reconnect_for_s))
                return 2;
            break;
        case 'T':
            if (strcmp(optarg, "tcp") != 0 && strcmp(optarg, "udp") != 0) {
                fprintf(stderr, "osprey detect: --rtsp-transport must be tcp or udp, not '%s'\n",
                        optarg);
                return 2;
            }
            o.source.rtsp_udp = optarg[0] == 'u';
            break;
        case 'h': usage(stdout); return 0;
        default: fprintf(stderr, "osprey detect: see 'osprey detect --help'\n"); return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr,
                "osprey detect: no input given (images or videos); see 'osprey detect --help'\n");
        return 2;
    }
    /* every file must exist before any work starts (streams are opened in turn) */
    int stdin_inputs = 0;
    for (int i = optind; i < argc; i++) {
        struct stat st;
        char name[256];
        osp_url_kind_t kind = osp_url_kind(argv[i]);
        osp_url_mask(argv[i], name, sizeof name);
        if (kind == OSP_URL_UNKNOWN) {
            fprintf(stderr,
                    "osprey detect: %s is not a source osprey reads; see 'osprey detect --help'\n",
                    name);
            return 2;
        }
        stdin_inputs += kind == OSP_URL_STDIN;
        if (kind != OSP_URL_FILE) continue;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "osprey detect: cannot open %s: %s\n", name, strerror(errno));
            return 2;
        }
        if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
            fprintf(stderr, "osprey detect: %s is not a file\n", name);
            return 2;
        }
    }
    if (stdin_inputs > 1) {
        fprintf(stderr, "osprey detect: - (stdin) can be given once\n");
        return 2;
    }
    if (o.out_dir && mkdir(o.out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "osprey detect: cannot create %s: %s\n", o.out_dir, strerror(errno));
        return 2;
    }

    char err[1024];
    osp_model_cfg_t cfg;
    if (osp_model_cfg_resolve(o.model, &cfg, err, sizeof err) ||
        (o.config && load_config(o.config, o.model, &cfg, err, sizeof err))) {
        fprintf(stderr, "osprey detect: %s\n", err);
        return 2;
    }
    if (o.postprocessor && snprintf(cfg.postprocessor, sizeof cfg.postprocessor, "%s",
                                    o.postprocessor) >= (int)sizeof cfg.postprocessor) {
        fprintf(stderr, "osprey detect: --postprocessor '%s' is too long\n", o.postprocessor);
        return 2;
    }
    struct stat st;
    if (stat(cfg.path, &st) != 0) {
        if (osp_catalog_find(o.model))
            fprintf(stderr,
                    "osprey detect: model %s is not downloaded (expected %s); run scripts/fetch-assets.sh\n",
                    o.model, cfg.path);
        else
            fprintf(stderr, "osprey detect: cannot open model %s: %s\n", cfg.path, strerror(errno));
        return 2;
    }
    if (o.threshold >= 0) cfg.confidence = o.threshold;
    /* N single-thread runs side by side beat one N-thread run on small machines */
    cfg.intra_threads = o.workers > 1 ? 1 : 0;
    osp_model_t *m = NULL;
    if (osp_model_open(&cfg, NULL, &m, err, sizeof err)) {
        fprintf(stderr, "osprey detect: %s\n", err);
        return 2;
    }
    osp_decoder_t *dec = osp_decoder_new();
    if (!dec) {
        fprintf(stderr, "osprey detect: out of memory\n");
        osp_model_free(m);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int status = 0;
    for (int i = optind; i < argc && !atomic_load(&g_stop); i++) {
        int image = osp_url_kind(argv[i]) == OSP_URL_FILE && osp_path_is_image(argv[i]);
        int r = image ? run_image(&o, m, dec, argv[i]) : run_video(&o, m, dec, argv[i]);
        if (r > status) status = r;
    }
    fflush(stdout);
    osp_decoder_free(dec);
    osp_model_free(m);
    return status;
}
