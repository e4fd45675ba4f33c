/*
 * The fleet front end (fleet.h). Backpressure is the claim bound: a
 * worker holds at most one model's admission bound of jobs (run slots
 * plus OSP_PENDING_MAX waiting), so a busy worker leaves the rest in the
 * stream for the others, and a job it holds never waits long enough to
 * look dead. A dead worker's jobs are taken over once Redis has seen them
 * idle for claim_idle_ms; the default is CLAIM_IDLE_PREDICTS times the
 * slowest model's predict, measured once at start (a live worker answers
 * a held job within about (bound / workers) predicts), and never under
 * CLAIM_IDLE_FLOOR_MS, which covers a model's first runs and a busy
 * machine's scheduling.
 *
 * Ownership: an fjob_t is a message, owned by its holder: the reader
 * thread that fills it, then the I/O thread (and the frame job and its
 * workers), then the writer thread that files it and puts it back on the
 * free list. All of them live in jobs[], made at start and freed at the
 * end; the free list is the only state two threads touch (its lock).
 */
#include "server/fleet/fleet.h"
#include "log/log.h"

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "image/image.h"
#include "jobs/jobs.h"
#include "model/model.h"
#include "base/clock.h"
#include "sched/pool.h"
#include "sched/sched.h"
#include "server/core/dispatch.h"
#include "server/core/encoded.h"
#include "server/core/job.h"
#include "server/core/ledger.h"
#include "server/core/loop.h"
#include "server/core/slots.h"
#include "server/core/stats.h"

#define CLAIM_IDLE_FLOOR_MS 2000
#define CLAIM_IDLE_PREDICTS 20
#define BLOCK_MS 500 /* a claim's wait for new jobs: how soon a stop is noticed */
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
#define FLUSH_BOUND_MS 10000 /* at exit, how long results wait for a queue that is away */
#define WIRE_HEAD 8          /* [u32 total_len][u32 req_id] before a reply's JSON */

_Static_assert((int)OSP_JOB_RGB == (int)OSP_PIX_RGB && (int)OSP_JOB_BGR == (int)OSP_PIX_BGR &&
                   (int)OSP_JOB_GRAY == (int)OSP_PIX_GRAY &&
                   (int)OSP_JOB_NV12 == (int)OSP_PIX_NV12 && (int)OSP_JOB_I420 == (int)OSP_PIX_I420,
               "jobs.h numbers pixel formats as image.h does");

typedef enum {
    FJ_RUN,     /* to the I/O thread, to be run */
    FJ_ANSWER,  /* answered without running: err */
    FJ_RELEASE, /* given back unanswered: it stays pending, taken over later */
} fj_fate_t;

typedef struct fjob {
    srv_job_t h; /* first: the event to the I/O thread; its q link also queues it for the writer */
    srv_fleet_t *f;
    _Atomic int busy; /* claimed and not yet given back */
    char token[48];   /* the delivery (written by the reader only) */
    int deliveries;
    osp_job_t job; /* data points into buf */
    uint8_t *buf;
    size_t cap;
    fj_fate_t fate;
    const char *status; /* served, dropped, error */
    char err[400];
    osp_jw_t rec; /* the result record */
    int have_rec;
    struct timespec claimed;
    /* kept between uses, touched by one prepare worker at a time */
    srv_encoded_t *enc; /* a JPEG or PNG job's decoding (encoded.c) */
    osp_image_t img;    /* an NV12 or I420 job's RGB */
    /* a model with a cascade: the frame its steps crop from (the job's
     * pixels, img, or whole), lent to the frame job until it is released */
    osp_image_t whole; /* a JPEG or PNG job decoded whole */
    osp_view_t view;
    int has_view, lent;
} fjob_t;

struct srv_fleet {
    server_t *s;
    const osp_jobs_engine_t *eng;
    osp_jobs_target_t target;
    char shown[OSP_JOB_NAME_MAX + 320]; /* the URL as logs show it */
    char group[OSP_JOB_NAME_MAX + 1], consumer[OSP_JOB_NAME_MAX + 1];
    int64_t claim_idle_ms;
    int max_deliveries;
    size_t max_data;
    int n_jobs;
    fjob_t *jobs;
    pthread_mutex_t mu; /* guards spare[] and n_spare */
    fjob_t **spare;
    int n_spare;
    int slot_efd;      /* a job was given back: wakes the reader */
    osp_mailbox_t out; /* jobs to file, from the I/O thread and the reader */
    pthread_t reader, writer;
    int reader_on, writer_on;
    _Atomic int stop_claiming, stop;
    int writer_again;      /* the writer has connected before (its own) */
    srv_job_t reader_done; /* the reader's last word to the I/O thread */
};

/* ---- the spare jobs ------------------------------------------------------------- */

static fjob_t *take_spare(srv_fleet_t *f) {
    pthread_mutex_lock(&f->mu);
    fjob_t *q = f->n_spare ? f->spare[--f->n_spare] : NULL;
    pthread_mutex_unlock(&f->mu);
    if (q) atomic_store(&q->busy, 1);
    return q;
}

static int spare_count(srv_fleet_t *f) {
    pthread_mutex_lock(&f->mu);
    int n = f->n_spare;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static void give_back(srv_fleet_t *f, fjob_t *q) {
    atomic_store(&q->busy, 0);
    pthread_mutex_lock(&f->mu);
    f->spare[f->n_spare++] = q;
    pthread_mutex_unlock(&f->mu);
    osp_eventfd_wake(f->slot_efd);
}

static void to_writer(fjob_t *q) { osp_mailbox_post(&q->f->out, &q->h.q); }

static void answer_error(fjob_t *q, const char *fmt, const char *arg) {
    q->fate = FJ_ANSWER;
    q->status = "error";
    snprintf(q->err, sizeof q->err, fmt, arg);
}

/* ---- the transport: a frame job's three calls (job.h) ------------------------------ */

static int tp_prepare(srv_req_t *r, const osp_model_t *m, osp_infer_ctx_t *ctx, char *err,
                      size_t errlen) {
    fjob_t *q = r->tp_arg;
    const osp_job_t *j = &q->job;
    osp_view_t v;
    char why[320];
    q->has_view = 0;
    if (j->kind != OSP_JOB_RAW) {
        int rc = m->then ? srv_encoded_prepare_whole(&q->enc, m, ctx, j->data, j->len, &q->whole,
                                                     why, sizeof why)
                         : srv_encoded_prepare(&q->enc, m, ctx, j->data, j->len, why, sizeof why);
        if (rc == 0 && m->then) {
            q->view = osp_image_view(&q->whole);
            q->has_view = 1;
        }
        if (rc == -1)
            snprintf(err, errlen, "%s decode failed: %s", j->kind == OSP_JOB_PNG ? "png" : "jpeg",
                     why);
        else if (rc)
            snprintf(err, errlen, "%s", why);
        return rc ? -1 : 0;
    } else if (j->fmt == OSP_JOB_NV12 || j->fmt == OSP_JOB_I420) {
        osp_view_t yuv = {.data = j->data,
                          .width = j->w,
                          .height = j->h,
                          .stride = j->w,
                          .fmt = (osp_pixfmt_t)j->fmt};
        if (osp_yuv_to_rgb(&yuv, &q->img, why, sizeof why)) {
            snprintf(err, errlen, "raw %s: %s", j->fmt == OSP_JOB_NV12 ? "nv12" : "i420", why);
            return -1;
        }
        v = osp_image_view(&q->img);
    } else if (osp_view_wrap(j->data, j->len, j->w, j->h, j->fmt, &v, why, sizeof why)) {
        snprintf(err, errlen, "raw wrap failed: %s", why);
        return -1;
    }
    int rc = osp_model_prepare(m, ctx, &v, 0, 0, err, errlen);
    q->view = v; /* the job's bytes or img: both kept until the job is filed */
    q->has_view = rc == 0 && m->then;
    return rc;
}

/* The frame tp_prepare kept for a cascade: lent until tp_release. */
static int tp_pixels(srv_req_t *r, osp_view_t *v) {
    fjob_t *q = r->tp_arg;
    if (!q->has_view) return -1;
    *v = q->view;
    q->lent = 1;
    return 0;
}

/* The record exactly as the pipe writes it for a single frame (exec.c). */
static void tp_result(srv_req_t *r, const osp_model_t *m, const osp_result_t *res) {
    fjob_t *q = r->tp_arg;
    osp_jw_reset(&q->rec);
    osp_jw_obj_open(&q->rec);
    osp_model_put_result(&q->rec, m, res, 1);
    osp_jw_obj_close(&q->rec);
    q->have_rec = !q->rec.oom;
}

/* Whatever the outcome: a record from the predict worker, or the reply
 * the gate, admission or a worker wrote into the request (dropped, or an
 * error), which is the pipe's reply without its frame header. */
static void tp_send(server_t *s, srv_req_t *r) {
    (void)s;
    fjob_t *q = r->tp_arg;
    if (q->have_rec) {
        q->status = "served";
    } else if (r->out.len > WIRE_HEAD) {
        const char *json = r->out.buf + WIRE_HEAD;
        size_t len = r->out.len - WIRE_HEAD;
        osp_jw_reset(&q->rec);
        osp_jw_raw(&q->rec, json, len);
        q->status = r->outcome.fate == SRV_SHED ? "dropped" : "error";
    } else {
        answer_error(q, "%s", "no reply was made");
    }
    if (!q->lent) to_writer(q); /* else once the cascade's run let go of its pixels */
}

/* Right after tp_send, or once a run given up has returned: a job whose
 * pixels a cascade read is filed (and its buffers reused) only now. */
static void tp_release(server_t *s, srv_req_t *r) {
    (void)s;
    fjob_t *q = r->tp_arg;
    osp_image_free(&q->whole); /* a whole frame may be large: not kept between jobs */
    q->has_view = 0;
    if (!q->lent) return;
    q->lent = 0;
    to_writer(q);
}

static const srv_transport_t fleet_transport = {.prepare = tp_prepare,
                                                .result = tp_result,
                                                .send = tp_send,
                                                .release = tp_release,
                                                .pixels = tp_pixels};

/* ---- on the I/O thread ------------------------------------------------------------ */

static void on_job(server_t *s, srv_job_t *h) {
    fjob_t *q = (fjob_t *)h;
    int idx = s->set.started ? srv_slots_find(s, q->job.model, SRV_FIND_FILE_STEM) : -1;
    if (idx < 0) {
        answer_error(q, "model %s is not served here", q->job.model);
        to_writer(q);
        return;
    }
    int running, pending;
    osp_sched_depth(s->sched, idx, &running, &pending);
    if (running >= s->set.workers && pending >= OSP_PENDING_MAX) {
        /* pipe hosts filled the model meanwhile: another worker, or this
         * one later, takes the job over rather than it being shed */
        q->fate = FJ_RELEASE;
        to_writer(q);
        return;
    }
    q->have_rec = 0;
    if (srv_submit_frame(s, idx, q->job.deadline_ms, &fleet_transport, q)) {
        q->fate = FJ_RELEASE; /* another worker, or this one later, takes it over */
        to_writer(q);
    }
}

static void on_reader_done(server_t *s, srv_job_t *h) {
    (void)h;
    srv_jobs_hold(s, -1); /* every job it claimed came before this, and is counted in flight */
}

/* ---- connections ------------------------------------------------------------------ */

/* A connection, retried with capped backoff until one is made, *stop is
 * set (stop may be NULL) or give_up_at (epoch ms; 0 = never) passes.
 * Logs the first failure and the recovery, not every attempt. */
static osp_jobs_conn_t *connect_retrying(srv_fleet_t *f, const char *who, int again,
                                         _Atomic int *stop, int64_t give_up_at) {
    char err[400];
    int delay = BACKOFF_FIRST_MS;
    for (int attempt = 0;; attempt++) {
        osp_jobs_conn_t *c = f->eng->open(&f->target, f->group, f->consumer, err, sizeof err);
        if (c) {
            if (attempt || again)
                osp_log(OSP_LOG_INFO, "ospreyd: jobs (%s): connected to %s after %d attempt(s)",
                        who, f->shown, attempt + 1);
            return c;
        }
        if (attempt == 0)
            osp_log(OSP_LOG_WARN, "ospreyd: jobs (%s): %s: %s; retrying every %d ms at most", who,
                    f->shown, err, BACKOFF_MAX_MS);
        for (int waited = 0; waited < delay; waited += 50) {
            if ((stop && atomic_load(stop)) || (give_up_at && osp_epoch_ms() > give_up_at))
                return NULL;
            osp_sleep_ms(50);
        }
        delay = delay * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay * 2;
    }
}

/* A connection lost: closed, and a pause before the next, doubling from
 * BACKOFF_FIRST_MS to BACKOFF_MAX_MS while connections keep being lost
 * (*pause; the caller zeroes it once one serves). A server that answers
 * the connection and lies in every reply (issue 32) is so met at most
 * every 5 s, not in a loop. */
static void lost(srv_fleet_t *f, const char *who, osp_jobs_conn_t **c, const char *err, int *pause,
                 _Atomic int *stop) {
    osp_log(OSP_LOG_WARN, "ospreyd: jobs (%s): lost %s: %s; reconnecting", who, f->shown, err);
    f->eng->close(*c);
    *c = NULL;
    for (int waited = 0; waited < *pause && !(stop && atomic_load(stop)); waited += 50)
        osp_sleep_ms(50);
    *pause = *pause ? (*pause * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *pause * 2) : BACKOFF_FIRST_MS;
}

/* ---- the reader: claims ----------------------------------------------------------- */

static int held(srv_fleet_t *f, const char *token) {
    for (int i = 0; i < f->n_jobs; i++)
        if (atomic_load(&f->jobs[i].busy) && strcmp(f->jobs[i].token, token) == 0) return 1;
    return 0;
}

static void take(srv_fleet_t *f, const osp_jobs_entry_t *e, int reclaimed) {
    if (reclaimed && held(f, e->token)) return; /* its own, slow: not a dead worker's */
    fjob_t *q = strlen(e->token) < sizeof q->token ? take_spare(f) : NULL;
    if (!q) return; /* cannot happen: claims ask for the spare count at most */
    snprintf(q->token, sizeof q->token, "%s", e->token);
    q->deliveries = e->deliveries;
    q->fate = FJ_RUN;
    q->status = NULL;
    q->have_rec = 0;
    osp_now(&q->claimed);
    srv_stat_add(f->s, SRV_ST_JOBS_CLAIMED, 1);
    if (reclaimed) srv_stat_add(f->s, SRV_ST_JOBS_RECLAIMED, 1);
    char err[sizeof q->err];
    int bad = osp_job_parse(e->fields, e->n_fields, e->n_total, f->max_data, &q->job, err, sizeof err);
    if (e->unread) { /* never read: its first delivery was dropped as too large */
        char why[128];
        snprintf(why, sizeof why, "a field of %zu bytes, more than --max-frame %zu: not read",
                 e->unread, f->max_data);
        answer_error(q, "%s", why);
        osp_log(OSP_LOG_WARN, "ospreyd: jobs: entry %s: %s; answered with an error", q->token, why);
    } else if (bad) {
        answer_error(q, "%s", err);
    } else if (e->deliveries > f->max_deliveries) {
        char why[96];
        snprintf(why, sizeof why, "delivered %d times, more than --max-deliveries %d",
                 e->deliveries, f->max_deliveries);
        answer_error(q, "%s: not run again", why);
        srv_stat_add(f->s, SRV_ST_JOBS_POISONED, 1);
        osp_log(OSP_LOG_WARN, "ospreyd: jobs: job %s (entry %s) %s: answered with an error",
                q->job.id, q->token, why);
    } else {
        if (q->cap < q->job.len) {
            uint8_t *b = realloc(q->buf, q->job.len);
            if (!b) {
                answer_error(q, "%s", "out of memory");
                to_writer(q);
                return;
            }
            q->buf = b;
            q->cap = q->job.len;
        }
        memcpy(q->buf, q->job.data, q->job.len);
        q->job.data = q->buf;
        srv_post(f->s, &q->h);
        return;
    }
    to_writer(q);
}

static void take_new(void *arg, const osp_jobs_entry_t *e) { take(arg, e, 0); }
static void take_over(void *arg, const osp_jobs_entry_t *e) { take(arg, e, 1); }

static void wait_for_spare(srv_fleet_t *f, int ms) {
    struct pollfd p = {.fd = f->slot_efd, .events = POLLIN};
    if (poll(&p, 1, ms) > 0) {
        uint64_t v;
        ssize_t r = read(f->slot_efd, &v, sizeof v);
        (void)r;
    }
}

static void *reader_main(void *arg) {
    srv_fleet_t *f = arg;
    (void)pthread_setname_np(pthread_self(), "osp-fleet");
    osp_jobs_conn_t *c = NULL;
    int64_t next_reclaim = 0;
    int again = 0, pause = 0;
    char err[400];
    while (!atomic_load(&f->stop_claiming)) {
        if (!c && !(c = connect_retrying(f, "claims", again, &f->stop_claiming, 0))) break;
        again = 1;
        int room = spare_count(f);
        if (room == 0) {
            wait_for_spare(f, BLOCK_MS);
            continue;
        }
        if (osp_epoch_ms() >= next_reclaim) {
            int n = f->eng->reclaim(c, f->claim_idle_ms, room, take_over, f, err, sizeof err);
            if (n < 0) {
                lost(f, "claims", &c, err, &pause, &f->stop_claiming);
                continue;
            }
            pause = 0;
            /* a full take may have left more: look again at once */
            next_reclaim = n == room ? 0
                                     : osp_epoch_ms() +
                                           (f->claim_idle_ms / 4 > 100 ? f->claim_idle_ms / 4 : 100);
            if (n > 0) continue;
        }
        int64_t until = next_reclaim - osp_epoch_ms();
        int block = until < BLOCK_MS ? (until > 1 ? (int)until : 1) : BLOCK_MS;
        if (f->eng->claim(c, room, block, take_new, f, err, sizeof err) < 0)
            lost(f, "claims", &c, err, &pause, &f->stop_claiming);
        else
            pause = 0;
    }
    f->eng->close(c);
    srv_post(f->s, &f->reader_done);
    return NULL;
}

/* ---- the writer: results ---------------------------------------------------------- */

/* File q's result; 0 when filed (or found filed before), -1 when it could
 * not be before the bound at exit (the job stays pending). */
static int file_one(srv_fleet_t *f, osp_jobs_conn_t **c, fjob_t *q) {
    char err[400], deliveries[16], worker_ms[32], marker[OSP_JOB_ID_MAX + 56];
    if (q->fate == FJ_ANSWER) {
        osp_jw_reset(&q->rec);
        osp_jw_obj_open(&q->rec);
        osp_jw_key(&q->rec, "error");
        osp_jw_str(&q->rec, q->err);
        osp_jw_obj_close(&q->rec);
    }
    snprintf(deliveries, sizeof deliveries, "%d", q->deliveries);
    snprintf(worker_ms, sizeof worker_ms, "%.3f", osp_ms_since(&q->claimed));
    /* a job without an id is deduplicated by its delivery instead */
    snprintf(marker, sizeof marker, "%s%s", q->job.id[0] ? "" : "#",
             q->job.id[0] ? q->job.id : q->token);
    const char *fields[] = {"id",       q->job.id,   "status",
                            q->status,  "result",    q->rec.buf ? q->rec.buf : "",
                            "worker",   f->consumer, "deliveries",
                            deliveries, "workerMs",  worker_ms};
    size_t lens[12];
    for (int i = 0; i < 12; i++) lens[i] = strlen(fields[i]);
    lens[5] = q->rec.len;
    osp_jobs_result_t r = {q->token, marker, q->job.reply_to, fields, lens, 12};
    int64_t give_up_at = 0;
    int pause = 0;
    for (;;) {
        if (atomic_load(&f->stop) && !give_up_at) give_up_at = osp_epoch_ms() + FLUSH_BOUND_MS;
        /* until the exit, a result waits for the queue as long as it takes */
        if (!*c && !(*c = connect_retrying(f, "results", f->writer_again,
                                           give_up_at ? NULL : &f->stop, give_up_at))) {
            if (give_up_at && osp_epoch_ms() > give_up_at) return -1;
            continue;
        }
        f->writer_again = 1;
        int rc = f->eng->finish(*c, &r, err, sizeof err);
        if (rc == 1 || rc == 0) {
            if (rc == 0)
                srv_stat_add(f->s, SRV_ST_JOBS_DEDUPLICATED, 1);
            else if (strcmp(q->status, "served") == 0)
                srv_stat_add(f->s, SRV_ST_JOBS_SERVED, 1);
            else if (strcmp(q->status, "dropped") == 0)
                srv_stat_add(f->s, SRV_ST_JOBS_DROPPED, 1);
            else
                srv_stat_add(f->s, SRV_ST_JOBS_FAILED, 1);
            return 0;
        }
        if (rc == -2 && r.reply_to && r.reply_to[0]) {
            osp_log(OSP_LOG_WARN, "ospreyd: jobs: job %s: %s; filing it on %s:results instead",
                    q->job.id, err, f->target.stream);
            r.reply_to = NULL;
            continue;
        }
        if (rc == -2) {
            osp_log(OSP_LOG_WARN, "ospreyd: jobs: job %s: %s; left pending", q->job.id, err);
            return -1;
        }
        lost(f, "results", c, err, &pause, give_up_at ? NULL : &f->stop);
    }
}

static void *writer_main(void *arg) {
    srv_fleet_t *f = arg;
    (void)pthread_setname_np(pthread_self(), "osp-fleet-ack");
    osp_jobs_conn_t *c = NULL;
    int unfiled = 0;
    for (;;) {
        struct pollfd p = {.fd = f->out.efd, .events = POLLIN};
        int stopping = atomic_load(&f->stop);
        if (!stopping) (void)poll(&p, 1, 200);
        osp_qnode_t *n = osp_mailbox_take(&f->out);
        if (!n && stopping) break;
        while (n) {
            osp_qnode_t *next = n->next;
            fjob_t *q = (fjob_t *)n;
            if (q->fate != FJ_RELEASE && file_one(f, &c, q)) unfiled++;
            give_back(f, q);
            n = next;
        }
    }
    if (unfiled)
        osp_log(OSP_LOG_ERROR,
                "ospreyd: jobs: %d result(s) could not be filed before exit; their jobs stay pending "
                "and another worker takes them over",
                unfiled);
    f->eng->close(c);
    return NULL;
}

/* ---- start and stop --------------------------------------------------------------- */

/* The slowest model's predict, in ms: one run of each on a grey frame. */
static double slowest_predict_ms(server_t *s) {
    double worst = 0;
    for (int i = 0; i < srv_slots_count(s); i++) {
        loaded_t *l = srv_slot(s, i);
        if (!l) continue;
        osp_model_t *m = srv_loaded_model(l);
        int w = m->prep.width > 0 ? m->prep.width : 64, h = m->prep.height > 0 ? m->prep.height : 64;
        uint8_t *px = malloc((size_t)w * (size_t)h * 3);
        if (!px) continue;
        memset(px, 128, (size_t)w * (size_t)h * 3);
        osp_view_t v = {.data = px, .width = w, .height = h, .stride = w * 3, .fmt = OSP_PIX_RGB};
        osp_infer_ctx_t ctx;
        memset(&ctx, 0, sizeof ctx);
        osp_result_t res;
        char err[256];
        for (int k = 0; k < 2; k++) /* the first run of a session is its slowest: count the second */
            if (osp_model_infer(m, &ctx, &v, 0, 0, &res, err, sizeof err) == 0 && k == 1 &&
                res.predict_ms > worst)
                worst = res.predict_ms;
        osp_infer_ctx_free(&ctx);
        free(px);
    }
    return worst;
}

static int check_name(const char *what, const char *v, char *err, size_t errlen) {
    if (v && (strlen(v) == 0 || strlen(v) > OSP_JOB_NAME_MAX)) {
        snprintf(err, errlen, "%s must be 1 to %d characters", what, OSP_JOB_NAME_MAX);
        return -1;
    }
    return 0;
}

srv_fleet_t *srv_fleet_start(server_t *s, char *err, size_t errlen) {
    const osp_server_opts_t *o = &s->opts;
    if (check_name("--group", o->jobs_group, err, errlen) ||
        check_name("--consumer", o->jobs_consumer, err, errlen))
        return NULL;
    if (!s->set.started || srv_slots_loaded(s) == 0) {
        snprintf(err, errlen, "no model loaded from --config: nothing to serve jobs with");
        return NULL;
    }
    srv_fleet_t *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->s = s;
    f->slot_efd = -1;
    pthread_mutex_init(&f->mu, NULL);
    if (osp_mailbox_init(&f->out)) {
        pthread_mutex_destroy(&f->mu);
        free(f);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (osp_jobs_target_parse(o->jobs, &f->target, err, errlen)) goto fail;
    if (!(f->eng = osp_jobs_engine(f->target.scheme))) {
        snprintf(err, errlen, "no jobs engine for %s:// (redis:// is)", f->target.scheme);
        goto fail;
    }
    osp_jobs_target_show(&f->target, f->shown, sizeof f->shown);
    snprintf(f->group, sizeof f->group, "%s", o->jobs_group ? o->jobs_group : "osprey");
    if (o->jobs_consumer) {
        snprintf(f->consumer, sizeof f->consumer, "%s", o->jobs_consumer);
    } else {
        char host[128] = "ospreyd";
        gethostname(host, sizeof host - 1);
        snprintf(f->consumer, sizeof f->consumer, "%s-%ld", host, (long)getpid());
    }
    f->max_deliveries = o->jobs_max_deliveries > 0 ? o->jobs_max_deliveries : 3;
    f->max_data = o->max_frame ? o->max_frame : OSP_JOB_DATA_DEFAULT;
    f->target.max_data = f->max_data;
    double worst = slowest_predict_ms(s);
    const char *source = "set by --claim-idle-ms";
    f->claim_idle_ms = o->jobs_claim_idle_ms;
    if (f->claim_idle_ms <= 0) {
        f->claim_idle_ms = (int64_t)(worst * CLAIM_IDLE_PREDICTS);
        source = "20 x the slowest predict";
        if (f->claim_idle_ms < CLAIM_IDLE_FLOOR_MS) {
            f->claim_idle_ms = CLAIM_IDLE_FLOOR_MS;
            source = "the floor, above 20 x the slowest predict";
        }
    }
    f->n_jobs = s->set.workers + OSP_PENDING_MAX;
    f->jobs = calloc((size_t)f->n_jobs, sizeof *f->jobs);
    f->spare = calloc((size_t)f->n_jobs, sizeof *f->spare);
    f->slot_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!f->jobs || !f->spare || f->slot_efd < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < f->n_jobs; i++) {
        fjob_t *q = &f->jobs[i];
        q->f = f;
        q->h.kind = SRV_JOB_EVENT;
        q->h.done = on_job;
        f->spare[f->n_spare++] = q;
    }
    f->reader_done.kind = SRV_JOB_EVENT;
    f->reader_done.done = on_reader_done;
    if (pthread_create(&f->writer, NULL, writer_main, f)) {
        snprintf(err, errlen, "cannot start the jobs threads");
        goto fail;
    }
    f->writer_on = 1;
    srv_jobs_hold(s, 1); /* until the reader has stopped: on_reader_done */
    if (pthread_create(&f->reader, NULL, reader_main, f)) {
        srv_jobs_hold(s, -1);
        snprintf(err, errlen, "cannot start the jobs threads");
        goto fail;
    }
    f->reader_on = 1;
    osp_log(OSP_LOG_INFO,
            "ospreyd: serving jobs from %s as %s of group %s: at most %d held at once; taking over "
            "jobs idle %" PRId64 " ms (%s, %.1f ms); a job delivered more than %d times is "
            "answered with an error",
            f->shown, f->consumer, f->group, f->n_jobs, f->claim_idle_ms, source, worst,
            f->max_deliveries);
    return f;
fail:
    srv_fleet_free(f);
    return NULL;
}

void srv_fleet_stop_claiming(srv_fleet_t *f) {
    if (!f) return;
    atomic_store(&f->stop_claiming, 1);
    osp_eventfd_wake(f->slot_efd);
}

void srv_fleet_free(srv_fleet_t *f) {
    if (!f) return;
    if (f->reader_on) {
        srv_fleet_stop_claiming(f);
        pthread_join(f->reader, NULL);
    }
    if (f->writer_on) {
        atomic_store(&f->stop, 1);
        osp_eventfd_wake(f->out.efd);
        pthread_join(f->writer, NULL);
    }
    for (int i = 0; f->jobs && i < f->n_jobs; i++) {
        free(f->jobs[i].buf);
        srv_encoded_free(f->jobs[i].enc);
        osp_image_free(&f->jobs[i].img);
        osp_image_free(&f->jobs[i].whole);
        osp_jw_free(&f->jobs[i].rec);
    }
    free(f->jobs);
    free(f->spare);
    if (f->slot_efd >= 0) close(f->slot_efd);
    osp_mailbox_destroy(&f->out);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

/* ---- the front end's table (core/frontend.h) ---------------------------------- */

static int fe_wanted(const osp_server_opts_t *o) { return o->jobs != NULL; }

static int fe_start(server_t *s, char *err, size_t errlen) {
    return (s->fleet = srv_fleet_start(s, err, errlen)) ? 0 : -1;
}

static void fe_quiesce(server_t *s) { srv_fleet_stop_claiming(s->fleet); }

static void fe_stop(server_t *s) {
    srv_fleet_free(s->fleet);
    s->fleet = NULL;
}

const srv_frontend_t srv_fleet_frontend = {"--jobs: ", 0,       fe_wanted, fe_start,
                                           fe_quiesce, fe_stop, NULL};
