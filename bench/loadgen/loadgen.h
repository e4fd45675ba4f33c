/*
 * loadgen's private header: what its files share (the options, the server
 * child, the frame, the figures of a run) and the functions one file
 * offers the others. Not for any other program: every name here is loadgen's.
 */
#ifndef OSP_LOADGEN_H
#define OSP_LOADGEN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "model/model.h"

#define WHO "loadgen"
#define MAX_RUNS 15
#define REC_CAP (1u << 20) /* requests per run, at most */
#define MAX_THREADS 256
#define MAX_LIST 8 /* --batch / --inflight lists */

typedef struct { /* the command line */
    const char *model;
    int jpeg;
    int shm;   /* --frame shm: infer_shm from a registered POSIX shm region */
    int batch; /* infer_batch of this many frames; 0: one frame per request */
    int batches[MAX_LIST], nbatches; /* --batch list: one measurement each */
    int ks[MAX_LIST], nks;           /* --inflight list: one measurement each */
    uint32_t batch_tag;              /* infer_batch frame_id (0: prepare every item) */
    int brief;                       /* one line per measurement */
    int limit_only;                  /* the limit alone, no server */
    int limit_reuse;                 /* take the limit measured for the previous K (same batch) */
    int w, h;                        /* 0: the model input */
    int open;
    int inflight;  /* closed loop K; 0: admission capacity */
    double rate;   /* open loop frames/s */
    double rate_x; /* open loop: this many times the closed-loop capacity */
    double seconds;
    int concurrency;
    int runs;
    int json;
    int limit;
    double limit_seconds;
    double warmup_s;
    double lat_s; /* open loop: the K=1 phase */
    double cal_s; /* open loop Fx: the capacity phase */
    double grace_s;
    double deadline_ms; /* relative deadline put on each request; 0: none, < 0: past */
    int quality;
    int threads;     /* print per-thread CPU of the server */
    int plain_write; /* writev the payload instead of vmsplice */
    const char *image;
    const char *server;
    const char *label;
    const char *model_json; /* --explicit-config: the model's config spelled out */
} opts_t;

enum { ST_NONE = 0, ST_SENT, ST_SERVED, ST_QFULL, ST_DEADLINE, ST_DROP_OTHER, ST_ERROR };

typedef struct {
    int64_t t_send, t_reply; /* ns, monotonic */
    uint8_t state;
} rec_t;

/* Every request of a run, by req_id (REC_CAP of them, main's); the reader
 * thread writes a record's reply under the server's mu. */
extern rec_t *lg_recs;

static inline int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct {
    pid_t pid;
    int wfd, rfd, logfd;
    int version;
    double startup_ms;
    int workers;
    pthread_t reader;
    int reader_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long inflight;
    _Atomic int eof;
    long events, unexpected;
    uint32_t next_id;
    /* the request: header fields and the shared payload */
    uint8_t msg_type; /* OSP_WIRE_MSG_* */
    uint32_t fw, fh;
    int batch;          /* infer_batch: items per request */
    uint32_t batch_tag; /* infer_batch: frame_id */
    uint32_t region;    /* infer_shm: the registered region */
    const uint8_t *payload;
    size_t payload_len;
    int vmsplice; /* hand the payload's pages to the pipe (see lg_push) */
    double deadline_ms;
    char *stats; /* the latest mem_stats reply (lg_server_counters), under mu */
} srv_t; /* one ospreyd child: fields shared by the sending and the reading thread are under mu */

/* The server's own counters of how it handled frames (mem_stats). */
enum { SC_AS_READ, SC_PARKED, SC_SHED_QFULL, SC_RELAYED, SC_LONE, SC_N };

typedef struct { /* one server thread's CPU, from /proc */
    int tid;
    char comm[32];
    long ticks;
} tcpu_t;

typedef struct {          /* one load phase: which requests, when */
    int64_t t0, t_stop;   /* sending window */
    uint32_t first, last; /* ids [first, last) */
    long not_sent;        /* open loop: scheduled, never started (overrun) */
    double late_p99_ms, late_max_ms;
    long late_n; /* frames started > 1 ms after their slot */
    int drained;
} phase_t;

typedef struct {           /* what came of a phase's requests */
    double fps;            /* served replies within the sending window / window */
    double p50, p99, pmax; /* ms, served frames */
    long sent, served, qfull, deadline, drop_other, errors, pending;
} pstats_t;

typedef struct {  /* the frame every request carries; main's */
    uint8_t *rgb; /* the frame, RGB, w x h */
    unsigned char *jpg;
    unsigned long jpg_len;
    uint8_t *items; /* infer_batch: the items after the header, for `nitems` frames */
    size_t items_len;
    int nitems;
} frame_t;

typedef struct {                       /* the limits, as one measurement found them */
    double one, many, limit;           /* raw fps: 1 x N threads, N x 1 thread, best */
    double one_ms;                     /* median time of one run of the 1 x N-thread session */
    double cpu_frame;                  /* CPU s per frame of the best configuration */
    double t_decode, t_resize, t_pack; /* ms, each alone, thread CPU */
    double eff_cores;                  /* CPU the raw run got: limit x cpu_frame */
    double pipe_cpu_ms;                /* cpu_frame + the steps that apply, ms */
    double pipeline;                   /* cores / (cpu_frame + steps), capped at limit */
    int pipeline_applies;
    int batch; /* frames stacked per raw run (1 when the model does not batch) */
} limit_t;

typedef struct { /* one run's figures */
    pstats_t main;
    double lat1_p50, lat1_p99; /* K=1 phase (open loop) */
    double pair_lat, pair_raw; /* K=1 paired phase (closed loop, --limit): medians, ms */
    double pair_pipe;          /* the same bytes through a pipe alone (lg_phase_paired), ms */
    double capacity; /* closed-loop K=cap phase (open loop Fx): the mean of before and after */
    double cap_before, cap_after;
    double rate;
    phase_t ph;
    long rss_mark, rss_end, rss_max; /* KiB: after 5 s, at the end of the load, peak (1/s samples) */
    long rss_drained;                /* after every reply came back */
    long lost, late_answers, unexpected, events;
    double srv_cpu_frame; /* server CPU s per served frame, main phase */
    double srv_cpu_shed;  /* server CPU s per shed frame, main phase, when none was served */
    double srv_cpu_util;  /* server CPU s per wall s, main phase */
    double cli_cpu_util;  /* loadgen CPU s per wall s, main phase */
    int threads_n;
    tcpu_t tdelta[MAX_THREADS];
    long counters[SC_N]; /* --threads: the server's counters over the main phase (-1: none) */
    limit_t lim;
    int exit_status, killed;
    double startup_ms;
    int workers;
    long samples[700];
    int nsamples;
} run_t;

extern const char *const lg_sc_keys[SC_N];

static inline double ticks_s(long t) { return (double)t / (double)sysconf(_SC_CLK_TCK); }

/* ---- the server process ---------------------------------------------------- */

/* Start `path` with pipes for stdin/stdout, its stderr in a temporary file. */
int lg_spawn_server(srv_t *s, const char *path);
/* The config frame, then the ready reply (read before the reader starts). */
int lg_handshake(srv_t *s, const opts_t *o);
/* A command answered before the reader thread starts; its reply in body. */
int lg_command_sync(srv_t *s, const char *json, char *body, size_t cap);
/* The reader thread: every reply, into its request's record. */
void *lg_reader_main(void *arg);
/* The next request's header into hdr (OSP_WIRE_HEAD_MAX bytes), its length
 * in *hlen; marked sent and in flight. The payload follows it. */
uint32_t lg_begin_request(srv_t *s, uint8_t *hdr, size_t *hlen);
/* One non-blocking write of iov[0..cnt) (the payload's pages spliced). */
ssize_t lg_push(srv_t *s, int fd, struct iovec *iov, int cnt);
/* Every byte of iov[0..cnt) to fd (or the server's stdin), polling when full. */
int lg_write_fd(srv_t *s, int fd, struct iovec *iov, int cnt);
int lg_write_all(srv_t *s, struct iovec *iov, int cnt);
/* Until inflight < k or the monotonic deadline: 1 when it got there. */
int lg_wait_inflight_below(srv_t *s, long k, int64_t until_ns);
/* The server's mem_stats counters, once the reader runs; 0 or -1. */
int lg_server_counters(srv_t *s, long out[SC_N]);
/* Close its stdin, wait for the exit (SIGKILL after grace_s); the status. */
int lg_stop_server(srv_t *s, double grace_s, int *killed);
void lg_server_log_tail(srv_t *s);
/* The value after "key": in a flat JSON reply, or NULL. */
const char *lg_json_val(const char *body, const char *key);

/* ---- the frame --------------------------------------------------------------- */

int lg_make_frame(const opts_t *o, frame_t *f);
int lg_make_batch_items(const opts_t *o, frame_t *f, int n);
/* The region for --frame shm, the frame written once; unlinked at exit. */
int lg_shm_create(const uint8_t *frame, size_t bytes);
void lg_shm_cleanup(void);
/* register_shm of that region on this server; sets s->region. */
int lg_shm_register(srv_t *s, size_t bytes);

/* ---- one run ----------------------------------------------------------------- */

int lg_do_run(const opts_t *o, const char *server, const frame_t *f, const osp_model_t *m, run_t *R);

/* ---- the limits --------------------------------------------------------------- */

/* bench_util's model loads without their per-load line, from now on. */
void lg_quiet_loads(void);
osp_model_t *lg_open_model(const char *model, int threads);
void lg_measure_limit(const opts_t *o, const frame_t *f, const osp_model_t *m, limit_t *L);
void lg_limit_mean(limit_t *a, const limit_t *b);
void lg_phase_paired(srv_t *s, const opts_t *o, const osp_model_t *m, double seconds,
                     double *lat_ms, double *raw_ms, double *pipe_ms);
double lg_raw_gain_paired(const opts_t *o, int nb, int rounds, double seconds);
extern void *lg_tensor; /* the frame's input tensor, as the last limit measurement packed it */

/* ---- reporting ----------------------------------------------------------------- */

/* One configuration: o->runs runs and the report; 0, 1 (every run failed)
 * or 3 (a request was lost). */
int lg_measure_config(const opts_t *op, const char *server, const frame_t *fp,
                      const osp_model_t *m, run_t *runs, double *fps_out, double *lim_out);
void lg_batch_gain(const opts_t *o, const osp_model_t *m);
void lg_loadavg(char *buf, size_t n);
const char *lg_limit_name(const opts_t *o, int batch);
/* per batch size (and K): the medians the batch-gain summary compares */
extern double lg_lim_fps[MAX_LIST], lg_fps_at[MAX_LIST][MAX_LIST], lg_lim_cpu[MAX_LIST];
extern int lg_cur_b, lg_cur_q; /* the configuration being measured */

#endif
