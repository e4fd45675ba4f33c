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
 * in frame order.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "model/model.h"
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
} opts_t;

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
          "                         (default ssd-oidv4)\n"
          "  -t, --threshold T      minimum score, 0..1 (default: the model's, 0.3 for ssd-oidv4)\n"
          "  -e, --every N          run every Nth video frame (default 1: all)\n"
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
          "  -h, --help             this text\n"
          "\n"
          "Exit status: 0 when every input was processed, 1 when a model or frame failed,\n"
          "2 for bad usage, a missing or unreadable input, or an unknown model.\n",
          out);
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
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
static void format_line(osp_jw_t *w, const char *input, long frame, double fps,
                        const osp_model_t *m, const osp_result_t *r, const char *error) {
    osp_jw_reset(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "source");
    osp_jw_str(w, input);
    osp_jw_key(w, "frame");
    osp_jw_int(w, frame);
    if (fps > 0) {
        osp_jw_key(w, "t");
        osp_jw_num(w, (double)frame / fps, 3);
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
    osp_jw_obj_close(w);
}

static void emit(const opts_t *o, const osp_jw_t *w) {
    if (o->no_json) return;
    fwrite(w->buf, 1, w->len, stdout);
    fputc('\n', stdout);
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
        format_line(&w, input, 0, 0, m, NULL, err);
        emit(o, &w);
        rc = 1;
        goto done;
    }
    format_line(&w, input, 0, 0, m, &r, NULL);
    emit(o, &w);
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
    osp_image_t img;
    osp_jw_t line;
    osp_det_t *dets;
    int n_dets, det_cap, failed;
    osp_result_t res; /* dets point into this slot */
} slot_t;

typedef struct {
    const opts_t *o;
    osp_model_t *m;
    osp_video_t *v;
    const char *input;
    double fps;
    pthread_mutex_t mu; /* guards every field below and the slot states */
    pthread_cond_t cv;
    slot_t *slots;
    int nslots;
    long read_seq, take_seq;
    int reader_done, stop;
    long total; /* slots the reader filled in all, once reader_done */
    char read_err[512];
} pipe_t;

static void *reader_main(void *arg) {
    pipe_t *p = arg;
    osp_image_t img = {0};
    char err[512];
    long frame = 0;
    for (;;) {
        int r = osp_video_read(p->v, &img, err, sizeof err);
        if (r <= 0) {
            pthread_mutex_lock(&p->mu);
            if (r < 0) snprintf(p->read_err, sizeof p->read_err, "%s", err);
            p->reader_done = 1;
            p->total = p->read_seq;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        long f = frame++;
        if (f % p->o->every) continue;
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
        s->frame = f;
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
            format_line(&s->line, p->input, s->frame, p->fps, p->m, NULL, err);
            s->n_dets = 0;
        } else {
            format_line(&s->line, p->input, s->frame, p->fps, p->m, &r, NULL);
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

static int run_video(const opts_t *o, osp_model_t *m, osp_decoder_t *dec, const char *input) {
    char err[512];
    osp_video_t *v = NULL;
    if (osp_video_open(input, &v, err, sizeof err)) {
        fprintf(stderr, "osprey detect: %s\n", err);
        return 2;
    }
    const osp_video_info_t *info = osp_video_info(v);
    pipe_t p = {.o = o, .m = m, .v = v, .input = input, .fps = info->fps};
    p.nslots = o->workers * 2 + 2;
    p.slots = calloc((size_t)p.nslots, sizeof *p.slots);
    if (!p.slots) {
        osp_video_close(v);
        fprintf(stderr, "osprey detect: out of memory\n");
        return 1;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t reader, workers[64];
    int nw = 0, rc = 0;
    tally_t t = {0};
    long expect = info->frames > 0 ? (info->frames + o->every - 1) / o->every : 0;
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
        emit(o, &s->line);
        if (s->failed) {
            rc = 1;
            t.frames++;
        } else {
            osp_view_t pv = osp_image_view(&s->img);
            tally_result(&t, m, &s->res, s->frame, &pv);
        }
        double now = now_s();
        if (bar && now - last_bar > 0.1) {
            progress(input, seq + 1, expect, now - t0, 0);
            last_bar = now;
        }
        pthread_mutex_lock(&p.mu);
        s->state = SLOT_FREE;
        pthread_cond_broadcast(&p.cv);
        pthread_mutex_unlock(&p.mu);
    }
    pthread_join(reader, NULL);
    for (int i = 0; i < nw; i++) pthread_join(workers[i], NULL);
    fflush(stdout);
    if (bar) progress(input, t.frames, expect, now_s() - t0, 1);
    print_summary(input, &t, m, now_s() - t0);
    write_snapshot(o, input, &t, m, dec);
    if (p.read_err[0]) {
        fprintf(stderr, "osprey detect: %s: %s\n", input, p.read_err);
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
    osp_video_close(v);
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
    opts_t o = {.model = "ssd-oidv4", .threshold = -1, .every = 1};
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
        case 'h': usage(stdout); return 0;
        default: fprintf(stderr, "osprey detect: see 'osprey detect --help'\n"); return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr,
                "osprey detect: no input given (images or videos); see 'osprey detect --help'\n");
        return 2;
    }
    /* every input must exist before any work starts */
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "osprey detect: cannot open %s: %s\n", argv[i], strerror(errno));
            return 2;
        }
        if (!S_ISREG(st.st_mode)) {
            fprintf(stderr, "osprey detect: %s is not a file\n", argv[i]);
            return 2;
        }
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
    int status = 0;
    for (int i = optind; i < argc; i++) {
        int r = osp_path_is_image(argv[i]) ? run_image(&o, m, dec, argv[i])
                                           : run_video(&o, m, dec, argv[i]);
        if (r > status) status = r;
    }
    fflush(stdout);
    osp_decoder_free(dec);
    osp_model_free(m);
    return status;
}
