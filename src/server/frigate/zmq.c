/*
 * Frigate's zmq detector (zmq.h). Frigate connects a REQ socket and sends
 * one request at a time per detector; ospreyd binds a ROUTER socket, which
 * a REQ peer cannot tell from a REP (the envelope is the same), so that
 * the frames of several detectors, or of one that timed out and came back
 * with a new socket, are all in flight at once instead of each waiting
 * for the one before (a REP answers strictly in turn).
 *
 * The zmq thread reads a request whole (libzmq caps every part at
 * ZMQ_MAXMSGSIZE before reading it, so a peer cannot make it grow; the
 * cap is --max-frame, uploads or not: see srv_zmq_start),
 * parses its header, and answers what needs nothing of the I/O thread:
 * a bad header or tensor (zero rows, counted as an error), an upload
 * refused. Everything else goes to the I/O thread as an event carrying a
 * zreq_t, the transport's own request, which comes back as the answer.
 * The model a handshake or an upload names, found or loaded, and the
 * directory uploads are written into, are zmqmodels.c's.
 * A frame gets a deadline of Frigate's timeout (--zmq-timeout-ms, 200 ms
 * unless told) less ZMQ_REPLY_MS from its arrival, so a frame
 * that cannot start in time is answered with zeros while Frigate still
 * waits (a late reply makes Frigate tear its socket down), and a frame
 * its model's admission sheds is answered at once (drop-oldest, as on the
 * pipe); both are counted by dispatch as sheds.
 *
 * Ownership: a zreq_t is a message, owned by its holder: the zmq thread,
 * then the I/O thread (and the frame job and its workers), then the zmq
 * thread again when it comes back through `out`. Every zreq_t is also in
 * all[] (zmq thread and shutdown only), so the last free finds them all.
 */
#include "server/frigate/zmq.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "model/model.h"
#include "base/clock.h"
#include "sched/pool.h"
#include "server/core/account.h"
#include "server/core/dispatch.h"
#include "server/core/job.h"
#include "server/core/ledger.h"
#include "server/core/loop.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "server/frigate/zmqmodels.h"
#include "wire/frigate.h"
#include "log/log.h"

#define ZMQ_TIMEOUT_MS 200 /* Frigate's request_timeout_ms unless --zmq-timeout-ms */
#define ZMQ_REPLY_MS 50    /* of it, what carries the zeros back */
#define ZREQ_MAX 64        /* requests past the socket at once; more are answered with zeros */
#define PEERS_MAX 64       /* peers remembered with the model their handshake named */
#define PEER_ID_MAX 32
#define LABELMAP_MAX (1u << 20)

typedef enum { ZQ_FRAME, ZQ_HANDSHAKE, ZQ_UPLOAD } zq_kind_t;

typedef struct zreq {
    srv_job_t h; /* first: the event to the I/O thread; its q link also queues it in `out` */
    struct srv_zmq *z;
    zq_kind_t kind;
    zmq_msg_t id;   /* the peer's routing id */
    zmq_msg_t data; /* a frame's tensor */
    osp_frigate_req_t rq;
    int model_idx;
    uint64_t deadline_ms;
    /* the answer: a JSON text, or rows (zero rows until a result says otherwise) */
    int json;
    char text[96];
    size_t text_len;
    int have_rows;
    uint8_t rows[OSP_FRIGATE_REPLY_BYTES];
    /* kept between uses: a worker's pixels of an NCHW or float tensor, its detections */
    uint8_t *pix;
    size_t pix_cap;
    osp_frigate_det_t *dets;
    int dets_cap;
} zreq_t;

struct srv_zmq {
    server_t *s;
    void *ctx, *sock;
    pthread_t thread;
    int running;
    osp_mailbox_t out; /* answers, from the I/O thread */
    _Atomic int stop;
    osp_frigate_labelmap_t *lm; /* read-only once started (workers read it) */
    srv_zmq_models_t *models;   /* the models a handshake names, and uploads */
    /* the zmq thread's own */
    zreq_t *all[ZREQ_MAX];
    int n_all;
    zreq_t *spare[ZREQ_MAX];
    int n_spare;
    struct {
        uint8_t id[PEER_ID_MAX];
        size_t len;
        int idx;
    } peers[PEERS_MAX];
    int n_peers, next_peer;
    int last_idx; /* the model of the latest handshake: frames of a peer that made none */
    int64_t bad;  /* requests answered with zeros for their bytes */
};

static void post_back(srv_zmq_t *z, zreq_t *q) { osp_mailbox_post(&z->out, &q->h.q); }

/* ---- the transport: a frame job's three calls (job.h) -------------------------- */

static int tp_prepare(srv_req_t *r, const osp_model_t *m, osp_infer_ctx_t *ctx, char *err,
                      size_t errlen) {
    zreq_t *q = r->tp_arg;
    const uint8_t *px = zmq_msg_data(&q->data);
    size_t need = (size_t)q->rq.width * (size_t)q->rq.height * 3;
    if (q->rq.f32 || q->rq.nchw) {
        if (q->pix_cap < need) {
            uint8_t *p = realloc(q->pix, need);
            if (!p) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            q->pix = p;
            q->pix_cap = need;
        }
        osp_frigate_pixels(&q->rq, px, q->pix);
        px = q->pix;
    }
    osp_view_t v = {.data = px,
                    .width = q->rq.width,
                    .height = q->rq.height,
                    .stride = q->rq.width * 3,
                    .fmt = q->z->s->opts.zmq_bgr ? OSP_PIX_BGR : OSP_PIX_RGB};
    return osp_model_prepare(m, ctx, &v, 0, 0, err, errlen);
}

static void tp_result(srv_req_t *r, const osp_model_t *m, const osp_result_t *res) {
    zreq_t *q = r->tp_arg;
    if (res->kind != OSP_REC_DETECTIONS) return; /* Frigate reads detections only: zero rows */
    if (q->dets_cap < res->n_dets) {
        osp_frigate_det_t *d = realloc(q->dets, (size_t)res->n_dets * sizeof *d);
        if (!d) return;
        q->dets = d;
        q->dets_cap = res->n_dets;
    }
    for (int i = 0; i < res->n_dets; i++) {
        const osp_det_t *d = &res->dets[i];
        q->dets[i] = (osp_frigate_det_t){.id = osp_frigate_label_id(q->z->lm,
                                                                    osp_model_label(m, d->cls)),
                                         .score = d->score,
                                         .x1 = d->x1,
                                         .y1 = d->y1,
                                         .x2 = d->x2,
                                         .y2 = d->y2};
    }
    osp_frigate_rows(q->dets, res->n_dets, res->frame_w, res->frame_h, q->rows);
    q->have_rows = 1;
}

static void tp_send(server_t *s, srv_req_t *r) {
    (void)s;
    zreq_t *q = r->tp_arg;
    post_back(q->z, q);
}

static const srv_transport_t zmq_transport = {.prepare = tp_prepare,
                                              .result = tp_result,
                                              .send = tp_send};

/* ---- on the I/O thread ------------------------------------------------------------ */

static void on_frame(server_t *s, srv_job_t *h) {
    zreq_t *q = (zreq_t *)h;
    srv_stat_add(s, SRV_ST_INFER_ZMQ, 1);
    if (s->set.started && !s->stopping && srv_slot(s, q->model_idx) &&
        srv_submit_frame(s, q->model_idx, q->deadline_ms, &zmq_transport, q) == 0)
        return;
    /* no model for it, or no memory: zero rows */
    srv_fail_t why = srv_slot(s, q->model_idx) ? SRV_FAIL_NO_MEMORY : SRV_FAIL_NOT_LOADED;
    srv_account_received(s, q->model_idx);
    srv_account(s, q->model_idx, 1, SRV_OUTCOME_FAILED(why), 0);
    post_back(q->z, q);
}

static void answer(zreq_t *q, int first, int loaded) {
    q->json = 1;
    q->text_len = q->kind == ZQ_UPLOAD
                      ? osp_frigate_answer_saved(first, loaded, q->text, sizeof q->text)
                      : osp_frigate_answer_available(first, loaded, q->text, sizeof q->text);
}

/* The load a handshake or an upload started, come back. */
static void model_done(server_t *s, void *arg, int idx) {
    (void)s;
    zreq_t *q = arg;
    q->model_idx = idx;
    answer(q, 1, idx >= 0);
    post_back(q->z, q);
}

/* A handshake, or an upload just written: the model served, or loaded. */
static void on_model(server_t *s, srv_job_t *h) {
    zreq_t *q = (zreq_t *)h;
    int first = q->kind == ZQ_UPLOAD; /* saved: it was written */
    int idx = srv_zmq_models_pick(s, q->z->models, q->rq.model_name, model_done, q);
    if (idx == SRV_ZMQ_MODELS_LOADING) return;
    q->model_idx = idx;
    if (idx >= 0)
        answer(q, 1, 1);
    else
        answer(q, first, 0); /* Frigate uploads it next, when it may */
    post_back(q->z, q);
}

/* ---- on the zmq thread ------------------------------------------------------------ */

static zreq_t *zreq_get(srv_zmq_t *z) {
    if (z->n_spare) return z->spare[--z->n_spare];
    if (z->n_all == ZREQ_MAX) return NULL;
    zreq_t *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->z = z;
    zmq_msg_init(&q->id);
    zmq_msg_init(&q->data);
    z->all[z->n_all++] = q;
    return q;
}

static void zreq_put(srv_zmq_t *z, zreq_t *q) {
    zmq_msg_close(&q->id);
    zmq_msg_close(&q->data);
    zmq_msg_init(&q->id);
    zmq_msg_init(&q->data);
    q->json = q->have_rows = 0;
    z->spare[z->n_spare++] = q;
}

/* [id, "", parts...] to the peer; a peer gone meanwhile drops it (ROUTER). */
static void send_to(srv_zmq_t *z, zmq_msg_t *id, const void *a, size_t alen, const void *b,
                    size_t blen) {
    if (zmq_msg_send(id, z->sock, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) return;
    zmq_send(z->sock, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(z->sock, a, alen, (b ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT);
    if (b) zmq_send(z->sock, b, blen, ZMQ_DONTWAIT);
}

static void send_zeros(srv_zmq_t *z, zmq_msg_t *id) {
    static const uint8_t zeros[OSP_FRIGATE_REPLY_BYTES];
    send_to(z, id, OSP_FRIGATE_REPLY_HEADER, strlen(OSP_FRIGATE_REPLY_HEADER), zeros, sizeof zeros);
}

static void remember_peer(srv_zmq_t *z, zmq_msg_t *id, int idx) {
    size_t len = zmq_msg_size(id);
    if (len > PEER_ID_MAX) return;
    int at = -1;
    for (int i = 0; i < z->n_peers && at < 0; i++)
        if (z->peers[i].len == len && memcmp(z->peers[i].id, zmq_msg_data(id), len) == 0) at = i;
    if (at < 0) {
        at = z->n_peers < PEERS_MAX ? z->n_peers++ : z->next_peer++ % PEERS_MAX;
        memcpy(z->peers[at].id, zmq_msg_data(id), len);
        z->peers[at].len = len;
    }
    z->peers[at].idx = idx;
    z->last_idx = idx;
}

static int peer_model(const srv_zmq_t *z, zmq_msg_t *id) {
    size_t len = zmq_msg_size(id);
    for (int i = 0; i < z->n_peers; i++)
        if (z->peers[i].len == len && memcmp(z->peers[i].id, zmq_msg_data(id), len) == 0)
            return z->peers[i].idx;
    return z->last_idx;
}

static void send_answers(srv_zmq_t *z) {
    osp_qnode_t *n = osp_mailbox_take(&z->out);
    while (n) {
        osp_qnode_t *next = n->next;
        zreq_t *q = (zreq_t *)n;
        if (q->kind != ZQ_FRAME && q->model_idx >= 0) remember_peer(z, &q->id, q->model_idx);
        if (q->json)
            send_to(z, &q->id, q->text, q->text_len, NULL, 0);
        else if (!q->have_rows)
            send_zeros(z, &q->id);
        else
            send_to(z, &q->id, OSP_FRIGATE_REPLY_HEADER, strlen(OSP_FRIGATE_REPLY_HEADER), q->rows,
                    sizeof q->rows);
        zreq_put(z, q);
        n = next;
    }
}

/* A bad request answered with zeros: counted by the caller. */
static void log_bad(srv_zmq_t *z, const char *why) {
    if (z->bad++ % 500 == 0)
        osp_log(OSP_LOG_WARN, "ospreyd: zmq: answered zeros to a bad request (%lld so far): %s",
                (long long)z->bad, why);
}

/* One request from the socket: 1 when one was read, 0 when none waits. */
static int receive_one(srv_zmq_t *z) {
    enum { PARTS = 3 };
    zmq_msg_t id, part[PARTS];
    int n = 0, more, empty_delim;
    zmq_msg_init(&id);
    if (zmq_msg_recv(&id, z->sock, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&id);
        return 0;
    }
    more = zmq_msg_more(&id);
    empty_delim = 0;
    if (more) { /* the REQ envelope's empty delimiter */
        zmq_msg_t d;
        zmq_msg_init(&d);
        zmq_msg_recv(&d, z->sock, 0);
        empty_delim = zmq_msg_size(&d) == 0;
        more = zmq_msg_more(&d);
        zmq_msg_close(&d);
    }
    while (more) { /* the parts; any past PARTS are read and dropped */
        zmq_msg_t m;
        zmq_msg_init(&m);
        zmq_msg_recv(&m, z->sock, 0);
        more = zmq_msg_more(&m);
        if (n < PARTS) {
            zmq_msg_init(&part[n]);
            zmq_msg_move(&part[n++], &m);
        }
        zmq_msg_close(&m);
    }
    char err[OSP_WIRE_ERRLEN + 64];
    osp_frigate_req_t rq;
    zreq_t *q = NULL;
    if (!empty_delim) { /* not a REQ: nothing to answer it with */
        srv_stat_add(z->s, SRV_ST_ERRORS, 1);
        goto done;
    }
    if (n == 0 ||
        osp_frigate_parse(zmq_msg_data(&part[0]), zmq_msg_size(&part[0]), &rq, err, sizeof err)) {
        if (n == 0) snprintf(err, sizeof err, "an empty request");
        if (n > 0) { /* a frame's header that does not parse */
            srv_stat_add(z->s, SRV_ST_INFER_ZMQ, 1);
            srv_account_received(z->s, SRV_LEDGER_NO_MODEL);
            srv_account(z->s, SRV_LEDGER_NO_MODEL, 1, SRV_OUTCOME_FAILED(SRV_FAIL_BAD_REQUEST), 0);
        } else {
            srv_stat_add(z->s, SRV_ST_ERRORS, 1);
        }
        log_bad(z, err);
        send_zeros(z, &id);
        goto done;
    }
    if (rq.kind == OSP_FRIGATE_TENSOR &&
        (n != 2 || osp_frigate_check(&rq, zmq_msg_size(&part[1]), err, sizeof err))) {
        if (n != 2) snprintf(err, sizeof err, "%d parts, a frame is a header and a tensor", n);
        srv_stat_add(z->s, SRV_ST_INFER_ZMQ, 1);
        srv_account_received(z->s, SRV_LEDGER_NO_MODEL);
        srv_account(z->s, SRV_LEDGER_NO_MODEL, 1, SRV_OUTCOME_FAILED(SRV_FAIL_BAD_REQUEST), 0);
        log_bad(z, err);
        send_zeros(z, &id);
        goto done;
    }
    if (rq.kind == OSP_FRIGATE_MODEL_DATA) {
        int accept = srv_zmq_models_accept(z->models);
        int saved = accept && n == 2 && osp_frigate_name_ok(rq.model_name) &&
                    srv_zmq_models_save(z->models, rq.model_name, zmq_msg_data(&part[1]),
                                        zmq_msg_size(&part[1])) == 0;
        if (accept)
            osp_log(OSP_LOG_INFO, "ospreyd: zmq: an upload of %s (%zu bytes) %s", rq.model_name,
                    n == 2 ? zmq_msg_size(&part[1]) : 0, saved ? "saved" : "refused");
        if (!saved) {
            char text[96];
            size_t len = osp_frigate_answer_saved(0, 0, text, sizeof text);
            send_to(z, &id, text, len, NULL, 0);
            goto done;
        }
    }
    if (!(q = zreq_get(z))) { /* ZREQ_MAX past the socket: saturated */
        if (rq.kind == OSP_FRIGATE_TENSOR) {
            srv_stat_add(z->s, SRV_ST_INFER_ZMQ, 1);
            srv_account_received(z->s, SRV_LEDGER_NO_MODEL);
            srv_account(z->s, SRV_LEDGER_NO_MODEL, 1, SRV_OUTCOME_SHED(SRV_SHED_QUEUE_FULL), 0);
            send_zeros(z, &id);
        } else {
            srv_stat_add(z->s, SRV_ST_ERRORS, 1);
        }
        goto done;
    }
    q->rq = rq;
    q->h.kind = SRV_JOB_EVENT;
    zmq_msg_move(&q->id, &id);
    if (rq.kind == OSP_FRIGATE_TENSOR) {
        q->kind = ZQ_FRAME;
        q->h.done = on_frame;
        q->model_idx = peer_model(z, &q->id);
        int timeout = z->s->opts.zmq_timeout_ms ? z->s->opts.zmq_timeout_ms : ZMQ_TIMEOUT_MS;
        q->deadline_ms = (uint64_t)(osp_epoch_ms() + timeout - ZMQ_REPLY_MS);
        zmq_msg_move(&q->data, &part[1]);
    } else {
        q->kind = rq.kind == OSP_FRIGATE_MODEL_DATA ? ZQ_UPLOAD : ZQ_HANDSHAKE;
        q->h.done = on_model;
        q->model_idx = -1;
    }
    srv_post(z->s, &q->h);
done:
    zmq_msg_close(&id);
    for (int i = 0; i < n; i++) zmq_msg_close(&part[i]);
    return 1;
}

static void *zmq_main(void *arg) {
    srv_zmq_t *z = arg;
    (void)pthread_setname_np(pthread_self(), "osp-zmq");
    zmq_pollitem_t items[2] = {{z->sock, 0, ZMQ_POLLIN, 0}, {NULL, z->out.efd, ZMQ_POLLIN, 0}};
    while (!atomic_load(&z->stop)) {
        if (zmq_poll(items, 2, -1) < 0) {
            if (zmq_errno() == EINTR) continue;
            osp_log(OSP_LOG_ERROR, "ospreyd: zmq: poll: %s; Frigate is no longer served",
                    zmq_strerror(zmq_errno()));
            break;
        }
        if (items[1].revents & ZMQ_POLLIN) send_answers(z);
        if (items[0].revents & ZMQ_POLLIN)
            while (receive_one(z)) {
            }
    }
    return NULL;
}

/* ---- start and stop --------------------------------------------------------------- */

static int load_labelmap(srv_zmq_t *z, const char *path, char *err, size_t errlen) {
    if (!path) {
        osp_frigate_labelmap_default(z->lm);
        return 0;
    }
    char perr[160];
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(LABELMAP_MAX + 1) : NULL;
    size_t n = buf ? fread(buf, 1, LABELMAP_MAX + 1, f) : 0;
    int rc = -1;
    if (!f)
        snprintf(err, errlen, "--zmq-labelmap %s: %s", path, strerror(errno));
    else if (!buf)
        snprintf(err, errlen, "out of memory");
    else if (n > LABELMAP_MAX)
        snprintf(err, errlen, "--zmq-labelmap %s: larger than %u bytes", path, LABELMAP_MAX);
    else if (osp_frigate_labelmap_parse(buf, n, z->lm, perr, sizeof perr))
        snprintf(err, errlen, "--zmq-labelmap %s: %s", path, perr);
    else
        rc = 0;
    free(buf);
    if (f) fclose(f);
    return rc;
}

srv_zmq_t *srv_zmq_start(server_t *s, char *err, size_t errlen) {
    const char *ep = s->opts.zmq;
    srv_zmq_t *z = calloc(1, sizeof *z);
    if (!z || !(z->lm = calloc(1, sizeof *z->lm)) || osp_mailbox_init(&z->out)) {
        if (z) free(z->lm);
        free(z);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    z->s = s;
    if (load_labelmap(z, s->opts.zmq_labelmap, err, errlen) ||
        !(z->models = srv_zmq_models_new(s->opts.zmq_accept_models, err, errlen)))
        goto fail;
    if (strncmp(ep, "tcp://", 6) != 0 && strncmp(ep, "ipc://", 6) != 0) {
        snprintf(err, errlen, "--zmq takes ipc://PATH or tcp://HOST:PORT, not '%s'", ep);
        goto fail;
    }
    /* One cap for every part, uploads included. With uploads on it was 512
     * MiB, and a 200 MB frame part then took 195 MB of RSS before it could
     * be refused (issue 32). libzmq cannot cap one message and not another:
     * ZMQ_MAXMSGSIZE is copied into each listener at bind, and a message's
     * first part is seen only once its last has been read (multipart
     * delivery is atomic), so a frame cannot be told from an upload before
     * it is in memory. A model larger than --max-frame therefore needs a
     * larger --max-frame, and the start-up line says so. */
    uint64_t cap = s->opts.max_frame ? s->opts.max_frame : (64u << 20);
    int64_t maxmsg = (int64_t)cap;
    int zero = 0;
    if (!(z->ctx = zmq_ctx_new()) || !(z->sock = zmq_socket(z->ctx, ZMQ_ROUTER)) ||
        zmq_setsockopt(z->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) ||
        zmq_setsockopt(z->sock, ZMQ_LINGER, &zero, sizeof zero) || zmq_bind(z->sock, ep)) {
        snprintf(err, errlen, "cannot bind %s: %s", ep, zmq_strerror(zmq_errno()));
        goto fail;
    }
    if (!osp_frigate_endpoint_is_local(ep)) /* main() refuses it without --zmq-allow-remote */
        osp_log(OSP_LOG_WARN,
                "ospreyd: zmq: %s is reachable from other machines (--zmq-allow-remote); anyone "
                "who can reach it gets detections%s, with no authentication: keep it on a "
                "private network (docs/frigate.md)",
                ep, srv_zmq_models_accept(z->models) ? " and may upload models" : "");
    if (pthread_create(&z->thread, NULL, zmq_main, z)) {
        snprintf(err, errlen, "cannot start the zmq thread");
        goto fail;
    }
    z->running = 1;
    osp_log(OSP_LOG_INFO,
            "ospreyd: serving Frigate's zmq detector on %s (%s labelmap, %s, a frame answered "
            "within %d ms; every message part at most %llu bytes, --max-frame%s)",
            ep, s->opts.zmq_labelmap ? s->opts.zmq_labelmap : "Frigate's default",
            s->opts.zmq_bgr ? "BGR" : "RGB",
            s->opts.zmq_timeout_ms ? s->opts.zmq_timeout_ms : ZMQ_TIMEOUT_MS, (unsigned long long)cap,
            srv_zmq_models_accept(z->models) ? ", uploaded models included" : "");
    return z;
fail:
    srv_zmq_free(z);
    return NULL;
}

void srv_zmq_free(srv_zmq_t *z) {
    if (!z) return;
    if (z->running) {
        atomic_store(&z->stop, 1);
        osp_eventfd_wake(z->out.efd);
        pthread_join(z->thread, NULL);
    }
    for (int i = 0; i < z->n_all; i++) {
        zmq_msg_close(&z->all[i]->id);
        zmq_msg_close(&z->all[i]->data);
        free(z->all[i]->pix);
        free(z->all[i]->dets);
        free(z->all[i]);
    }
    if (z->sock) zmq_close(z->sock);
    if (z->ctx) zmq_ctx_term(z->ctx);
    srv_zmq_models_free(z->models);
    osp_mailbox_destroy(&z->out);
    free(z->lm);
    free(z);
}

/* ---- the front end's table (core/frontend.h) ---------------------------------- */

static int fe_wanted(const osp_server_opts_t *o) { return o->zmq != NULL; }

static int fe_start(server_t *s, char *err, size_t errlen) {
    return (s->zmq = srv_zmq_start(s, err, errlen)) ? 0 : -1;
}

static void fe_stop(server_t *s) {
    srv_zmq_free(s->zmq);
    s->zmq = NULL;
}

const srv_frontend_t srv_zmq_frontend = {"--zmq: ", 0, fe_wanted, fe_start, NULL, fe_stop, NULL};
