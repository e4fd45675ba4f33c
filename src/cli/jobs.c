/*
 * osprey jobs: the host side of a fleet (docs/fleet.md). `submit` pushes
 * images, or a video's frames, onto a Redis stream as jobs and prints
 * their results as JSON lines in submission order, each the record
 * `osprey detect` prints for the same frame (the worker writes the
 * detection record; this adds the source, frame and age around it);
 * `status` shows the consumer group. Results come back on a reply stream
 * of this process's own, deleted at the end, and every job entry is
 * deleted once answered, so a submit leaves the stream as it found it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "base/clock.h"
#include "cli/cli.h"
#include "jobs/bounded.h"
#include "jobs/jobs.h"
#include "video/video.h"
#include "wire/jsonw.h"

#define WINDOW 64            /* jobs submitted and not yet answered */
#define STALL_S 120          /* no result for this long: give up */
#define FILE_MAX (64u << 20) /* an image file; a worker's default --max-frame */
/* A reply read from Redis: no item larger than a job, no reply larger than
 * two (results are records of a few KiB; a server that sends more lies). */
#define ITEM_MAX ((size_t)FILE_MAX + (64u << 10))
#define REPLY_MAX (2 * (size_t)FILE_MAX)

typedef struct {
    char source[1024];
    long frame;
    double t; /* seconds into a video; < 0 for an image */
    double submitted;
    char entry[48]; /* the job's stream entry, deleted once answered */
    char *result;   /* the record, once answered (owned) */
    size_t len;
} pending_t;

typedef struct {
    redisContext *c;
    osp_jobs_target_t t;
    char reply[OSP_JOB_NAME_MAX + 200], id_prefix[96], model[OSP_JOB_NAME_MAX + 1];
    char last[48]; /* the reply stream read so far */
    pending_t ring[WINDOW];
    long next, printed; /* jobs submitted, and printed, so far */
    long total;         /* known in advance (files), or -1 */
    double start, last_progress;
    int errors;
} submit_t;

static redisReply *cmd(redisContext *c, int argc, const char **argv, const size_t *lens) {
    char err[300];
    redisReply *r = osp_redis_command(c, argc, argv, lens, ITEM_MAX, REPLY_MAX, err, sizeof err);
    if (!r) fprintf(stderr, "osprey jobs: %s\n", err);
    return r;
}

/* Connected, authenticated and on the URL's database; NULL after a line on stderr. */
static redisContext *connect_to(const osp_jobs_target_t *t) {
    char shown[600];
    osp_jobs_target_show(t, shown, sizeof shown);
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(t->host, t->port, tv);
    if (!c || c->err) {
        fprintf(stderr, "osprey jobs: cannot connect to %s: %s\n", shown,
                c ? c->errstr : "out of memory");
        if (c) redisFree(c);
        return NULL;
    }
    char db[16];
    snprintf(db, sizeof db, "%d", t->db);
    const char *auth[] = {"AUTH", t->user[0] ? t->user : t->pass, t->pass};
    const char *sel[] = {"SELECT", db};
    for (int step = 0; step < 2; step++) {
        if (step == 0 && !t->pass[0]) continue;
        redisReply *r = step == 0 ? cmd(c, t->user[0] ? 3 : 2, auth, NULL) : cmd(c, 2, sel, NULL);
        int bad = !r || r->type == REDIS_REPLY_ERROR;
        if (r && bad)
            fprintf(stderr, "osprey jobs: %s: %s\n", shown,
                    step == 0 ? "the URL's credentials were refused" : r->str);
        if (r) freeReplyObject(r);
        if (bad) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

/* ---- results ---------------------------------------------------------------------- */

static void print_ready(submit_t *S) {
    while (S->printed < S->next && S->ring[S->printed % WINDOW].result) {
        pending_t *p = &S->ring[S->printed % WINDOW];
        osp_jw_t w = {0};
        osp_jw_obj_open(&w);
        osp_jw_key(&w, "source");
        osp_jw_str(&w, p->source);
        osp_jw_key(&w, "frame");
        osp_jw_int(&w, p->frame);
        if (p->t >= 0) {
            osp_jw_key(&w, "t");
            osp_jw_num(&w, p->t, 3);
        }
        /* the worker's record, its braces dropped: its members follow these */
        const char *rec = p->result;
        size_t len = p->len;
        if (len > 2 && rec[0] == '{' && rec[len - 1] == '}') osp_jw_raw(&w, rec + 1, len - 2);
        osp_jw_key(&w, "ageMs");
        osp_jw_num(&w, (osp_now_s() - p->submitted) * 1000.0, 1);
        osp_jw_obj_close(&w);
        if (!w.oom) {
            fwrite(w.buf, 1, w.len, stdout);
            fputc('\n', stdout);
        }
        osp_jw_free(&w);
        free(p->result);
        p->result = NULL;
        S->printed++;
    }
    fflush(stdout);
}

static void progress(submit_t *S, int final) {
    if (!isatty(2) || (!final && osp_now_s() - S->last_progress < 0.2)) return;
    S->last_progress = osp_now_s();
    double rate = S->printed / (osp_now_s() - S->start + 1e-9);
    if (S->total > 0) {
        int bar = (int)(30 * S->printed / S->total);
        fprintf(stderr, "\r[%.*s%*s] %ld/%ld jobs, %.1f/s", bar,
                "==============================", 30 - bar, "", S->printed, S->total, rate);
    } else {
        fprintf(stderr, "\r%ld jobs answered, %.1f/s", S->printed, rate);
    }
    if (final) fputs("\n", stderr);
}

/* A string of the reply that C reads whole (no NUL inside). */
static int whole(const redisReply *r) {
    return r->type == REDIS_REPLY_STRING && strlen(r->str) == r->len;
}

/* A field name, compared byte for byte. */
static int named(const redisReply *r, const char *name) {
    return r->type == REDIS_REPLY_STRING && r->len == strlen(name) &&
           memcmp(r->str, name, r->len) == 0;
}

/* Read the results that have arrived (waiting up to block_ms); -1 when
 * the connection failed. */
static int read_results(submit_t *S, int block_ms) {
    char block[16];
    snprintf(block, sizeof block, "%d", block_ms);
    const char *argv[] = {"XREAD", "COUNT", "256", "BLOCK", block, "STREAMS", S->reply, S->last};
    redisReply *r = cmd(S->c, 8, argv, NULL);
    if (!r) return -1;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->elements == 2) {
        redisReply *list = r->element[0]->element[1];
        for (size_t i = 0; i < list->elements; i++) {
            redisReply *e = list->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !whole(e->element[0]))
                continue;
            snprintf(S->last, sizeof S->last, "%s", e->element[0]->str);
            const redisReply *kv = e->element[1];
            const char *id = NULL, *status = NULL, *rec = NULL;
            size_t rec_len = 0;
            for (size_t k = 0; kv->type == REDIS_REPLY_ARRAY && k + 1 < kv->elements; k += 2) {
                const redisReply *name = kv->element[k], *val = kv->element[k + 1];
                if (val->type != REDIS_REPLY_STRING) continue;
                if (named(name, "id") && whole(val)) id = val->str;
                if (named(name, "status") && whole(val)) status = val->str;
                if (named(name, "result")) {
                    rec = val->str;
                    rec_len = val->len;
                }
            }
            size_t plen = strlen(S->id_prefix);
            if (!id || !rec || strncmp(id, S->id_prefix, plen) != 0) continue;
            long seq = strtol(id + plen, NULL, 10);
            if (seq < S->printed || seq >= S->next) continue; /* answered before */
            pending_t *p = &S->ring[seq % WINDOW];
            if (p->result || !(p->result = malloc(rec_len + 1))) continue;
            memcpy(p->result, rec, rec_len);
            p->result[rec_len] = '\0';
            p->len = rec_len;
            if (status && strcmp(status, "served") != 0) S->errors += strcmp(status, "error") == 0;
            const char *del[] = {"XDEL", S->t.stream, p->entry};
            redisReply *d = cmd(S->c, 3, del, NULL);
            if (d) freeReplyObject(d);
        }
    }
    freeReplyObject(r);
    print_ready(S);
    progress(S, 0);
    return 0;
}

/* Room for one more job: wait for results while WINDOW are out. */
static int make_room(submit_t *S) {
    double since = osp_now_s();
    long before = S->printed;
    while (S->next - S->printed >= WINDOW) {
        if (read_results(S, 1000)) return -1;
        if (S->printed != before) {
            before = S->printed;
            since = osp_now_s();
        } else if (osp_now_s() - since > STALL_S) {
            fprintf(stderr, "osprey jobs: no result for %d s: is a worker serving %s?\n", STALL_S,
                    S->t.stream);
            return -1;
        }
    }
    return 0;
}

static int push(submit_t *S, const char *source, long frame, double t, const char *kind,
                const void *data, size_t len, int w, int h) {
    if (make_room(S)) return -1;
    char id[sizeof S->id_prefix + 24], ws[16], hs[16];
    snprintf(id, sizeof id, "%s%ld", S->id_prefix, S->next);
    snprintf(ws, sizeof ws, "%d", w);
    snprintf(hs, sizeof hs, "%d", h);
    const char *argv[] = {"XADD",
                          S->t.stream,
                          "*",
                          "id",
                          id,
                          "model",
                          S->model,
                          "kind",
                          kind,
                          "reply_to",
                          S->reply,
                          "data",
                          (const char *)data,
                          "w",
                          ws,
                          "h",
                          hs,
                          "fmt",
                          "rgb"};
    size_t lens[19];
    for (int i = 0; i < 19; i++) lens[i] = i == 12 ? len : strlen(argv[i]);
    redisReply *r = cmd(S->c, w ? 19 : 13, argv, lens);
    if (!r) return -1;
    int ok = whole(r);
    if (!ok)
        fprintf(stderr, "osprey jobs: XADD: %s\n", r->type == REDIS_REPLY_ERROR ? r->str : "?");
    pending_t *p = &S->ring[S->next % WINDOW];
    if (ok) {
        snprintf(p->source, sizeof p->source, "%s", source);
        p->frame = frame;
        p->t = t;
        p->submitted = osp_now_s();
        snprintf(p->entry, sizeof p->entry, "%s", r->str);
        S->next++;
    }
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static int is_image(const uint8_t *b, size_t n) {
    return (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) ||
           (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0);
}

/* An image file as one job, or a video's frames (every `every`th) as raw RGB jobs. */
static int push_input(submit_t *S, const char *path, int every) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "osprey jobs: cannot read %s: %s\n", path, strerror(errno));
        return 2;
    }
    uint8_t head[8] = {0};
    size_t n = fread(head, 1, sizeof head, f);
    if (is_image(head, n)) {
        uint8_t *buf = NULL;
        long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
        int rc = 2;
        if (len > 0 && (size_t)len <= FILE_MAX && fseek(f, 0, SEEK_SET) == 0 &&
            (buf = malloc((size_t)len)) && fread(buf, 1, (size_t)len, f) == (size_t)len)
            rc = push(S, path, 0, -1, head[0] == 0xFF ? "jpeg" : "png", buf, (size_t)len, 0, 0) ? 1
                                                                                                : 0;
        else
            fprintf(stderr, "osprey jobs: cannot read %s (at most %u bytes)\n", path, FILE_MAX);
        free(buf);
        fclose(f);
        return rc;
    }
    fclose(f);
    osp_video_t *v = NULL;
    osp_image_t img = {0};
    char err[512];
    if (osp_video_open(path, &v, err, sizeof err)) {
        fprintf(stderr, "osprey jobs: %s: neither a JPEG, a PNG nor a video: %s\n", path, err);
        return 2;
    }
    double fps = osp_video_info(v)->fps;
    int rc = 0, got;
    for (long frame = 0; (got = osp_video_read(v, &img, err, sizeof err)) == 1; frame++) {
        if (frame % every) continue;
        osp_view_t view = osp_image_view(&img);
        if (push(S, path, frame, fps > 0 ? frame / fps : -1, "raw", view.data,
                 (size_t)view.stride * (size_t)view.height, view.width, view.height)) {
            rc = 1;
            break;
        }
    }
    if (got < 0) {
        fprintf(stderr, "osprey jobs: %s: %s\n", path, err);
        rc = 1;
    }
    osp_image_free(&img);
    osp_video_close(v);
    return rc;
}

static void usage(FILE *out) {
    fputs("usage: osprey jobs submit --redis redis://HOST:PORT[/DB]/STREAM [--model M] [--every N]\n"
          "                          FILE...|VIDEO\n"
          "       osprey jobs status --redis redis://HOST:PORT[/DB]/STREAM [--group G]\n"
          "\n"
          "submit: push images (JPEG, PNG: as they are) or a video's frames (raw RGB) as jobs\n"
          "for the ospreyd --jobs workers of STREAM (docs/fleet.md), and print their results\n"
          "as JSON lines in submission order, the records osprey detect prints, with a\n"
          "progress bar on a terminal. At most 64 jobs are out at once.\n"
          "  --model M    the model the workers serve the jobs with (default ssd-oidv4)\n"
          "  --every N    a video's every Nth frame (default 1)\n"
          "status: the consumer group (default osprey): its consumers, what each holds and\n"
          "how long it has been idle, the jobs not yet delivered (lag), results waiting.\n",
          out);
}

static int status(const osp_jobs_target_t *t, const char *group);

int osp_cmd_jobs(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *verb = argv[1], *url = NULL, *model = "ssd-oidv4", *group = "osprey";
    int every = 1;
    static const struct option longopts[] = {{"redis", required_argument, NULL, 'r'},
                                             {"model", required_argument, NULL, 'm'},
                                             {"every", required_argument, NULL, 'e'},
                                             {"group", required_argument, NULL, 'g'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    optind = 1;
    int c;
    double v;
    while ((c = getopt_long(argc - 1, argv + 1, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': url = optarg; break;
        case 'm': model = optarg; break;
        case 'g': group = optarg; break;
        case 'e':
            if (osp_args_num("osprey jobs", "--every", optarg, 1, 1e6, &v)) return 2;
            every = (int)v;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    osp_jobs_target_t t;
    char err[300];
    if (!url || osp_jobs_target_parse(url, &t, err, sizeof err) || strcmp(t.scheme, "redis") != 0) {
        fprintf(stderr, "osprey jobs: --redis: %s\n",
                url ? err : "required (redis://HOST:PORT/STREAM)");
        return 2;
    }
    if (strlen(model) > OSP_JOB_NAME_MAX) {
        fprintf(stderr, "osprey jobs: --model: at most %d characters\n", OSP_JOB_NAME_MAX);
        return 2;
    }
    if (strcmp(verb, "status") == 0) return status(&t, group);
    if (strcmp(verb, "submit") != 0) {
        fprintf(stderr, "osprey jobs: unknown verb '%s' (submit or status)\n", verb);
        return 2;
    }
    int first = optind + 1;
    if (first >= argc) {
        fprintf(stderr, "osprey jobs submit: no FILE or VIDEO\n");
        return 2;
    }
    submit_t *S = calloc(1, sizeof *S);
    if (!S || !(S->c = connect_to(&t))) {
        free(S);
        return 1;
    }
    S->t = t;
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    /* job ids are remembered as done for a day: this run's must be new */
    snprintf(S->id_prefix, sizeof S->id_prefix, "%s-%ld-%lld-", host, (long)getpid(),
             (long long)osp_epoch_ms());
    snprintf(S->reply, sizeof S->reply, "%s:reply:%s", t.stream, S->id_prefix);
    snprintf(S->model, sizeof S->model, "%s", model);
    snprintf(S->last, sizeof S->last, "0-0");
    S->start = osp_now_s();
    S->total = -1;
    int all_images = 1, rc = 0;
    for (int i = first; i < argc && all_images; i++) {
        const char *dot = strrchr(argv[i], '.');
        all_images = dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0 ||
                             strcasecmp(dot, ".png") == 0);
    }
    if (all_images) S->total = argc - first;
    for (int i = first; i < argc && rc < 1; i++) {
        int r = push_input(S, argv[i], every);
        rc = r > rc ? r : rc;
    }
    double since = osp_now_s();
    long before = S->printed;
    while (rc < 1 && S->printed < S->next) {
        if (read_results(S, 1000)) {
            rc = 1;
        } else if (S->printed != before) {
            before = S->printed;
            since = osp_now_s();
        } else if (osp_now_s() - since > STALL_S) {
            fprintf(stderr, "osprey jobs: %ld job(s) unanswered after %d s\n",
                    S->next - S->printed, STALL_S);
            rc = 1;
        }
    }
    progress(S, 1);
    const char *del[] = {"DEL", S->reply};
    redisReply *r = cmd(S->c, 2, del, NULL);
    if (r) freeReplyObject(r);
    for (int i = 0; i < WINDOW; i++) free(S->ring[i].result);
    redisFree(S->c);
    free(S);
    return rc;
}

/* ---- status ----------------------------------------------------------------------- */

/* A reply's [name, value, ...] pairs written as JSON object members. */
static void put_pairs(osp_jw_t *w, const redisReply *kv) {
    for (size_t i = 0; kv && kv->type == REDIS_REPLY_ARRAY && i + 1 < kv->elements; i += 2) {
        const redisReply *k = kv->element[i], *v = kv->element[i + 1];
        if (k->type != REDIS_REPLY_STRING && k->type != REDIS_REPLY_STATUS) continue;
        osp_jw_key(w, k->str);
        if (v->type == REDIS_REPLY_INTEGER)
            osp_jw_int(w, v->integer);
        else if (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS)
            osp_jw_str(w, v->str);
        else
            osp_jw_null(w);
    }
}

static int status(const osp_jobs_target_t *t, const char *group) {
    redisContext *c = connect_to(t);
    if (!c) return 1;
    char results[OSP_JOB_NAME_MAX + 16];
    snprintf(results, sizeof results, "%s:results", t->stream);
    const char *groups[] = {"XINFO", "GROUPS", t->stream};
    const char *consumers[] = {"XINFO", "CONSUMERS", t->stream, group};
    const char *xlen[] = {"XLEN", t->stream}, *rlen[] = {"XLEN", results};
    redisReply *g = cmd(c, 3, groups, NULL), *k = g ? cmd(c, 4, consumers, NULL) : NULL;
    redisReply *n = k ? cmd(c, 2, xlen, NULL) : NULL, *rn = n ? cmd(c, 2, rlen, NULL) : NULL;
    int rc = 1;
    if (!rn) goto done;
    if (k->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "osprey jobs status: %s: %s\n", t->stream, k->str);
        goto done;
    }
    osp_jw_t w = {0};
    osp_jw_obj_open(&w);
    osp_jw_key(&w, "stream");
    osp_jw_str(&w, t->stream);
    osp_jw_key(&w, "entries");
    osp_jw_int(&w, n->type == REDIS_REPLY_INTEGER ? n->integer : 0);
    osp_jw_key(&w, "resultsWaiting");
    osp_jw_int(&w, rn->type == REDIS_REPLY_INTEGER ? rn->integer : 0);
    osp_jw_key(&w, "group");
    osp_jw_obj_open(&w);
    for (size_t i = 0; g->type == REDIS_REPLY_ARRAY && i < g->elements; i++) {
        const redisReply *kv = g->element[i];
        for (size_t j = 0; kv->type == REDIS_REPLY_ARRAY && j + 1 < kv->elements; j += 2)
            if (named(kv->element[j], "name") && named(kv->element[j + 1], group))
                put_pairs(&w, kv); /* name, consumers, pending, last-delivered-id, lag, ... */
    }
    osp_jw_obj_close(&w);
    osp_jw_key(&w, "consumers");
    osp_jw_arr_open(&w);
    for (size_t i = 0; k->type == REDIS_REPLY_ARRAY && i < k->elements; i++) {
        osp_jw_obj_open(&w);
        put_pairs(&w, k->element[i]); /* name, pending, idle (ms), inactive */
        osp_jw_obj_close(&w);
    }
    osp_jw_arr_close(&w);
    osp_jw_obj_close(&w);
    fwrite(w.buf, 1, w.len, stdout);
    fputc('\n', stdout);
    osp_jw_free(&w);
    rc = 0;
done:
    if (g) freeReplyObject(g);
    if (k) freeReplyObject(k);
    if (n) freeReplyObject(n);
    if (rn) freeReplyObject(rn);
    redisFree(c);
    return rc;
}
