/* Shared between the server's files; not a public interface. */
#ifndef OSP_SERVER_INTERNAL_H
#define OSP_SERVER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "model/model.h"
#include "sched/admit.h"
#include "sched/cache.h"
#include "sched/pool.h"
#include "server/server.h"
#include "wire/frame.h"
#include "wire/jsonw.h"

#define OSP_MAX_SLOTS 256   /* model_idx is a u8 */
#define OSP_PENDING_MAX 2   /* waiting frames per model beyond the running ones */
#define SRV_PIPE_BYTES (1u << 20) /* what the server asks of its stdin, stdout and own pipes */

struct server;

/* A loaded model as the server holds it. refs and the decode settings are
 * touched by the I/O thread only: jobs take their own copy of the settings. */
typedef struct loaded {
    osp_model_t *m;
    int refs;            /* the slot's own + one per job holding it */
    char model_id[128];  /* the file's stem */
    char config_path[1024];
    char postprocessor[32];
    float confidence, nms_iou;
    int max_detections;
} loaded_t;

/* An outgoing buffer of whole reply frames. */
typedef struct outbuf {
    struct outbuf *next;
    osp_jw_t w;
    size_t off; /* bytes already written */
} outbuf_t;

/* A large raw frame's bytes parked in pipes (spill.c). */
typedef struct spill spill_t;
#define SPILL_MAX_PIPES 16
enum { SPILL_MORE, SPILL_WAIT, SPILL_EOF, SPILL_STOPPED };
spill_t *srv_spill_new(size_t off);
void srv_spill_free(spill_t *sp);
/* Move up to `want` bytes from fd `from` into the pipes; *moved says how
 * many. SPILL_WAIT: `from` is empty; SPILL_EOF: it is closed; SPILL_STOPPED:
 * parking is over, read the rest; SPILL_MORE: `want` reached. */
int srv_spill_step(spill_t *sp, int from, size_t want, size_t *moved);
/* All bytes are in: close the writing ends. */
void srv_spill_seal(spill_t *sp);
/* Copy the parked bytes into their place in the frame (a worker; the
 * whole of srv_spill_read at once); 0 or -1. */
int srv_spill_fill(spill_t *sp, uint8_t *frame);
/* The host's pages start at frame position `at` (the connection's pipe was
 * just emptied there), and every 4096 bytes before and after it. */
void srv_spill_mark(spill_t *sp, size_t at);
/* Where the parked bytes belong in the frame, and how many there are. */
size_t srv_spill_off(const spill_t *sp);
size_t srv_spill_len(const spill_t *sp);
/* The position srv_spill_mark gave, if any (1) or 0. */
int srv_spill_lattice(const spill_t *sp, size_t *at);
/* The next parked bytes in order, up to n, into dst (a worker, after the
 * seal): bytes read, 0 when all are read, -1 when some were lost. */
ssize_t srv_spill_read(spill_t *sp, uint8_t *dst, size_t n);

/* A large raw frame prepared as it is read (rows.c). */
typedef struct srv_rows srv_rows_t;
enum { ROWS_MORE, ROWS_WAIT, ROWS_EOF, ROWS_DONE };

enum { PAUSE_LOADING = 1, /* its handshake's models are loading */
       PAUSE_OUTPUT = 2 };  /* its replies pile up unread (server.c) */

typedef struct conn {
    struct conn *next;
    uint32_t id;
    int rfd, wfd;
    int stdio;
    int handshaken, version;
    /* reading: a staging buffer for headers and small frames, or the
     * frame's own buffer once its length is known and it is large */
    uint8_t *in;
    size_t in_len, in_cap;
    uint8_t *big;          /* a large frame being read straight into its buffer */
    size_t big_len, big_got;
    int big_aligns;        /* realignments of that buffer so far (srv_buf_align) */
    int big_drained;       /* a read into it has emptied the pipe */
    spill_t *spill;        /* its pixels parked in pipes, or NULL */
    size_t spill_from;     /* where parking began: the bytes before it are in big */
    int spill_stopped;     /* parking ended early: the rest is read into big */
    srv_rows_t *rows;      /* prepares a large raw frame as it is read (when active) */
    int relay_rd, relay_wr; /* large reads pass through this pipe (relay.c) */
    size_t relay_cap;      /* its size; 0: not open */
    int relay_off;         /* the connection is read directly */
    int read_closed;       /* EOF or error on the read side */
    int paused;            /* not reading, for these reasons (PAUSE_*) */
    uint32_t hello_req_id;
    int hello_loaded, hello_total;
    struct timespec hello_t0;
    int fatal;             /* stop reading; close once replies are out */
    /* writing */
    outbuf_t *out_head, *out_tail;
    size_t out_bytes;
    int want_write;
    int write_failed;
    int inflight;          /* requests accepted and not yet answered */
} conn_t;

#define OSP_MSG_INFER_SHM 0x06 /* extension: a frame in a registered shared-memory region */

/* A POSIX shared-memory region a host registered (register_shm). Touched
 * by the I/O thread only; jobs reading from it hold a reference, so an
 * unregister while frames are in flight unmaps only after they finish. */
typedef struct shm_region {
    struct shm_region *next;
    uint32_t id;
    uint32_t owner;  /* the connection that registered it */
    char name[256];
    const uint8_t *base;
    size_t size;
    int refs;        /* 1 while registered + one per job */
} shm_region_t;

typedef enum { JOB_INFER, JOB_BATCH, JOB_LOAD_DONE, JOB_WINDOW, JOB_HELLO_DONE, JOB_STREAM_OPEN } job_kind_t;

#define OSP_MSG_STREAM_PUSH 0x07 /* extension: one frame of features into an open stream */
typedef struct srv_stream srv_stream_t;

#define OSP_WINDOW_MAX 64 /* frames one window flush may carry */

/* Models a socket connection's handshake asked for that were not loaded:
 * loaded on a thread so the I/O thread keeps serving everyone else. */
typedef struct {
    int n;
    int index[OSP_MAX_SLOTS];
    osp_model_cfg_t *cfg;   /* n entries */
    osp_model_t **m;        /* n entries: NULL where the load failed */
    const osp_backend_t *backend;
} hello_plan_t;

typedef struct job {
    osp_qnode_t q;         /* pool and mailbox link: must stay first */
    job_kind_t kind;
    struct server *srv;
    uint32_t conn_id, req_id;
    uint8_t msg_type;
    uint64_t deadline_ms;
    int model_idx;
    loaded_t *model;       /* a reference, released by the I/O thread */
    float confidence, nms_iou;
    int max_detections;
    uint8_t *frame;        /* the request frame's bytes (owned); NULL for a frame
                              prepared as it was read (rows.c) */
    size_t frame_len;
    osp_wire_request_t rq; /* points into frame */
    osp_cframe_t *cached;  /* infer_cached: the frame, referenced */
    shm_region_t *shm;     /* infer_shm: the region, referenced */
    osp_view_t shm_view;   /* the frame inside it */
    osp_infer_ctx_t *ctx;  /* from the server's pool, once prepared */
    int prepared;          /* ctx holds a tensor */
    int shed;              /* answered as dropped by the deadline gate in a worker */
    int failed;
    int admitted;          /* counts against the model's admission */
    int lone;              /* no other frame of its model admitted at dispatch */
    spill_t *spill;        /* part of frame still parked in pipes (infer_raw) */
    osp_jw_t out;          /* the reply frame(s), written by a worker */
    struct timespec t0;
    double prep_ms;
    /* JOB_WINDOW: the frames of one window flush, run by one predict worker */
    struct job *items[OSP_WINDOW_MAX];
    int n_items;
    /* JOB_STREAM_OPEN */
    void *stream_open;
    /* JOB_HELLO_DONE */
    hello_plan_t *plan;
    /* JOB_LOAD_DONE */
    int load_seq;
    osp_model_t *loaded_model;
    int load_rc;
    char load_err[512];
    double load_ms;
} job_t;

/* A queued command (load, replace, unload, reconfigure, status, unknown). */
typedef struct cmdq {
    struct cmdq *next;
    uint32_t conn_id, req_id;
    cJSON *cmd;
} cmdq_t;

/* What one pool thread keeps between frames (indexed by its worker number):
 * the JPEG decoder and its buffer, contexts for batch items, the stacking
 * buffer of batched runs. */
typedef struct {
    osp_decoder_t *dec;
    osp_image_t img;
    osp_infer_ctx_t ctx[OSP_WINDOW_MAX];
    osp_batch_buf_t buf;
    srv_rows_t *rows; /* a prepare worker's ring for parked frames (srv_rows_parked) */
} wstate_t;

/* Reusable inference contexts: a job takes one from prepare to reply. */
typedef struct ctxnode {
    struct ctxnode *next;
    osp_infer_ctx_t ctx;
} ctxnode_t;

typedef struct {
    int64_t infer_jpeg, infer_raw, infer_batch, infer_cached, commands, frames_cached;
    int64_t shed_deadline, shed_queue_full, errors, infer_shm;
} counters_t;

typedef struct server {
    osp_server_opts_t opts;
    int epfd, sigfd, listen_fd;
    int stopping;
    uint32_t next_conn_id;
    conn_t *conns;
    osp_mailbox_t done;
    osp_pool_t *prepare, *predict;
    wstate_t *prep_ws, *pred_ws; /* one per worker of each pool */
    pthread_mutex_t ctx_mu;      /* guards ctx_free */
    ctxnode_t *ctx_free;
    int ctx_total;
    int workers;
    int intra_threads;
    int lone_threads;   /* threads of a lone frame's run (the wider session); 0 = none */
    int predict_nice;   /* predict workers run this much nicer than the rest (choose_threads) */
    spill_t *frame_spill; /* the parked part of the frame srv_on_frame is handling */
    int64_t frames_parked; /* large raw frames whose pixels went through spill pipes */
    int64_t bytes_relayed; /* bytes read through relay pipes (relay.c) */
    int64_t frames_prepared_as_read; /* large raw frames prepared row by row (rows.c) */
    double shed_at_ms[OSP_MAX_SLOTS]; /* when each model last shed a frame from its queue (since started) */
    int cores;
    char threads_source[16]; /* "config" or "cores" */
    const osp_backend_t *backend;
    char runtime_name[64];
    char device[32];
    double load_bound_ms;
    /* models */
    loaded_t *slots[OSP_MAX_SLOTS];
    int nslots;
    osp_admit_t admit[OSP_MAX_SLOTS];
    /* commands */
    cmdq_t *cmd_head, *cmd_tail;
    int load_busy;           /* a load/replace of the queue is in flight */
    int load_seq;            /* identifies the load in flight */
    cmdq_t *load_cmd;        /* the command being loaded */
    int load_index;
    char load_model_id[128];
    struct timespec load_started;
    /* poisoning (a load abandoned past its bound) */
    int poisoned;
    int poison_seq, poison_index;
    char poison_model_id[128];
    struct timespec poison_started;
    int64_t poison_at_ms;
    int64_t loads_completed, loads_failed, loads_timed_out, loads_finished_late;
    /* window batching (batch_mode "window") */
    int batch_mode;          /* osp_wire_batch_mode_t */
    int window_ms, max_batch;
    job_t *win[OSP_MAX_SLOTS][OSP_WINDOW_MAX];
    int win_n[OSP_MAX_SLOTS];
    struct timespec win_t0[OSP_MAX_SLOTS];
    int win_open;            /* models with frames waiting in a window */
    /* frame buffers kept for reuse (I/O thread only) */
#define SRV_BUF_KEEP 24
    uint8_t *bufs[SRV_BUF_KEEP];
    size_t bufs_cap[SRV_BUF_KEEP];
    int nbufs;
    /* streams (extension) */
    srv_stream_t *streams;
    uint32_t next_stream_id;
    /* shared memory (extension) */
    shm_region_t *shm_head;
    uint32_t next_shm_id;
    /* caches and counters */
    osp_cache_t *cache;
    counters_t counters;
    struct timespec started;
    int jobs_inflight;
} server_t;

/* server.c */
conn_t *srv_conn_find(server_t *s, uint32_t id);
void srv_send(server_t *s, conn_t *c, osp_jw_t *frame); /* takes the buffer's contents */
void srv_conn_pause(server_t *s, conn_t *c, int paused);
uint8_t *srv_buf_get(server_t *s, size_t need);
void srv_buf_put(server_t *s, uint8_t *buf);
uint8_t *srv_buf_align(uint8_t *buf, size_t used, size_t at);
void srv_buf_free_all(server_t *s);
void srv_send_json_reply(server_t *s, uint32_t conn_id, uint32_t req_id, osp_jw_t *body_frame);
double srv_ms_since(const struct timespec *t);
int64_t srv_epoch_ms(void);

int srv_loop(server_t *s);

/* commands.c */
int srv_start(server_t *s);
void srv_stop(server_t *s);
void srv_load_done(server_t *s, job_t *j);
void srv_hello_done(server_t *s, job_t *j);
void srv_window_flush_due(server_t *s);
int srv_window_timer_ms(server_t *s);
void srv_on_command(server_t *s, conn_t *c, const osp_wire_request_t *rq);
void srv_on_hello(server_t *s, conn_t *c, const osp_wire_frame_t *f);
/* A command reply: begin writes {"cmd": name[, "index": i], "status": status
 * (index < 0: none); the caller adds its keys; send closes and sends it. */
size_t srv_cmd_begin(osp_jw_t *w, const char *name, int index, const char *status);
void srv_cmd_send(server_t *s, uint32_t conn_id, osp_jw_t *w, size_t at, uint32_t req_id);

/* router.c */
void srv_on_frame(server_t *s, conn_t *c, uint8_t *frame, size_t len);
void srv_on_job_done(server_t *s, job_t *j);
void srv_check_timers(server_t *s);
int srv_timer_ms(server_t *s);
int srv_idle(server_t *s);
int srv_input_waiting(server_t *s);
void srv_handshake_models(server_t *s, const cJSON *models, int *loaded, int *total);
void srv_release_model(server_t *s, loaded_t *l);
void srv_write_mem_stats(server_t *s, osp_jw_t *w);

/* rows.c: srv_rows_begin takes over the frame whose first `avail` bytes
 * are at p (1) or leaves it to be read whole (0); srv_rows_step reads on
 * and returns ROWS_*: DONE when the frame was submitted, EOF when the
 * connection ended inside it. */
int srv_rows_begin(server_t *s, conn_t *c, const uint8_t *p, size_t avail, size_t frame_len);
int srv_rows_step(server_t *s, conn_t *c);
int srv_rows_active(const srv_rows_t *r);
/* s may be NULL for a prepare worker's (srv_rows_parked): it holds no context. */
void srv_rows_free(server_t *s, srv_rows_t *r);
/* A prepare worker makes the tensor of job j, a parked RGB/BGR frame, from
 * its pipes a ring at a time (*rp: the worker's own, made on first use):
 * 1 when it is made, 0 when this frame is not for it (nothing was read:
 * fill the frame and prepare it whole), -1 on an error (err says it). */
int srv_rows_parked(srv_rows_t **rp, job_t *j, char *err, size_t errlen);

/* relay.c: a large read from a connection, through a pipe of the
 * server's own; read(2)'s contract. */
ssize_t srv_relay_read(server_t *s, conn_t *c, void *dst, size_t want);
void srv_relay_close(conn_t *c);
/* A non-blocking pipe of the server's own, asked to hold SRV_PIPE_BYTES
 * (relay.c, spill.c): its size, or -1. */
long srv_pipe_open(int p[2]);

/* shm.c */
int srv_shm_command(server_t *s, conn_t *c, uint32_t req_id, const char *name, const cJSON *cmd);
void srv_shm_release(server_t *s, shm_region_t *r);
void srv_shm_conn_closed(server_t *s, uint32_t conn_id);
void srv_shm_free_all(server_t *s);
void srv_on_infer_shm(server_t *s, conn_t *c, const osp_wire_frame_t *f, uint8_t *frame, size_t len);

/* streams.c */
int srv_stream_command(server_t *s, conn_t *c, uint32_t req_id, const char *name, const cJSON *cmd);
void srv_stream_opened(server_t *s, job_t *j);
void srv_on_stream_push(server_t *s, conn_t *c, const osp_wire_frame_t *f);
void srv_streams_conn_closed(server_t *s, uint32_t conn_id);
void srv_streams_free_all(server_t *s);

/* router.c: one reply frame for req_id whose JSON body writes (with arg);
 * bodies for a plain error and an inference-shaped one (arg: the text). */
void srv_reply_frame(server_t *s, conn_t *c, uint32_t req_id,
                     void (*body)(osp_jw_t *, const void *), const void *arg);
void srv_body_error(osp_jw_t *w, const void *msg);
void srv_body_infer_error(osp_jw_t *w, const void *msg);

/* router.c: whether a frame for model idx arriving now will probably be
 * shed before it runs (its run slots are taken and its queue is full, or
 * holds another while the model has been shedding). */
int srv_likely_shed(const server_t *s, int idx);

/* router.c, for shm.c */
job_t *srv_job_new(server_t *s, conn_t *c, const osp_wire_request_t *rq, uint8_t *frame, size_t len);
void srv_submit_frame(server_t *s, job_t *j);

/* exec.c: pool entry points and the context pool */
osp_infer_ctx_t *srv_ctx_get(server_t *s);
void srv_ctx_put(server_t *s, osp_infer_ctx_t *c);
void srv_wstate_free(wstate_t *w);
void exec_prepare(void *ctx, osp_qnode_t *item, int worker);
void exec_predict(void *ctx, osp_qnode_t *item, int worker);

#endif
