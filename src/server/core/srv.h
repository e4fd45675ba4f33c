/*
 * The server as its files share it: one handle per part, each part's
 * struct private to the file that owns it (its header says which), plus
 * the settings the first handshake fixes. Nothing here is a field another
 * file may change except through its owner's functions.
 */
#ifndef OSP_SRV_H
#define OSP_SRV_H

#include <stdint.h>
#include <time.h>

#include "runtime/runtime.h"
#include "server/server.h"
#include "wire/jsonw.h"

#define OSP_MAX_SLOTS 256         /* model_idx is a u8 */
#define OSP_PENDING_MAX 2         /* waiting frames per model beyond the running ones */
#define SRV_PIPE_BYTES (1u << 20) /* what the server asks of its stdin, stdout and own pipes */

typedef struct server server_t;
typedef struct conn conn_t;                 /* conn.h */
typedef struct srv_conns srv_conns_t;       /* conn.h */
typedef struct srv_loop srv_loop_t;         /* loop.h */
typedef struct srv_slots srv_slots_t;       /* slots.h */
typedef struct srv_exec srv_exec_t;         /* exec.h */
typedef struct srv_jobs srv_jobs_t;         /* job.h */
typedef struct srv_cmds srv_cmds_t;         /* cmds.h */
typedef struct srv_stats srv_stats_t;       /* stats.h */
typedef struct srv_ledger srv_ledger_t;     /* ledger.h */
typedef struct srv_shm srv_shm_t;           /* shm.h */
typedef struct srv_streams srv_streams_t;   /* streams.h */
typedef struct srv_auth srv_auth_t;         /* auth.h */
typedef struct srv_board srv_board_t;       /* board.h */
typedef struct srv_camboard srv_camboard_t; /* camboard.h */
typedef struct srv_http srv_http_t;         /* http.h */
typedef struct srv_zmq srv_zmq_t;           /* zmq.h */
typedef struct srv_watchdog srv_watchdog_t; /* watchdog.h */
typedef struct srv_fleet srv_fleet_t;       /* fleet.h */
typedef struct srv_cameras srv_cameras_t;   /* cameras.h */
typedef struct srv_loads srv_loads_t;       /* loads.h */
struct osp_sched;
struct osp_window;
struct osp_cache;
struct osp_bufpool;
struct osp_ctxpool;
struct osp_loader;
struct osp_paths;
struct srv_parked_ops; /* exec.h */

/* Written once, when the worker pools start (the first handshake, or the
 * startup config of --listen --config: hello.c); read-only after. */
typedef struct {
    int started; /* the pools run */
    int cores;
    int workers;             /* prepare workers = predict workers = run slots per model */
    int intra_threads;       /* threads inside one run */
    int lone_threads;        /* threads of a lone frame's run (the wider session); 0 = none */
    int predict_nice;        /* predict workers run this much nicer than the rest */
    char threads_source[16]; /* "config" or "cores" */
    const osp_backend_t *backend;
    char runtime_name[64];
    char device[32];
    double load_bound_ms;
    int batch_mode; /* osp_wire_batch_mode_t */
    int window_ms, max_batch;
} srv_settings_t;

struct server {
    osp_server_opts_t opts;
    srv_settings_t set;
    int stopping; /* SIGTERM/SIGINT or the end of stdin: no new work */
    struct timespec started;
    srv_loop_t *loop;
    srv_conns_t *conns;
    srv_slots_t *slots;
    srv_exec_t *exec;
    srv_jobs_t *jobs;
    srv_cmds_t *cmds;
    srv_stats_t *stats;
    srv_ledger_t *ledger; /* every inference request's outcome (ledger.h) */
    srv_shm_t *shm;
    srv_streams_t *streams;
    srv_board_t *board;        /* model states for other threads (board.h) */
    srv_camboard_t *camboard;  /* camera states and frames for other threads (camboard.h) */
    srv_http_t *http;          /* the HTTP door, or NULL (http.h) */
    srv_zmq_t *zmq;            /* Frigate's detector protocol (--zmq), or NULL */
    srv_watchdog_t *watchdog;  /* the bound on each run (watchdog.h) */
    srv_fleet_t *fleet;        /* the shared job queue (--jobs), or NULL */
    srv_cameras_t *cameras;    /* the --config file's cameras, or NULL */
    struct osp_sched *sched;   /* admission (sched/sched.h) */
    struct osp_window *window; /* window batching (sched/window.h) once started, or NULL */
    struct osp_loader *loader; /* bounded model loads (model/loader.h), loads.c's */
    srv_loads_t *loads;        /* every model load, queued for the loader (loads.h) */
    struct osp_cache *cache;   /* frames and tensors (sched/cache.h) */
    struct osp_bufpool *bufs;  /* frame buffers, I/O thread only (sched/bufpool.h) */
    struct osp_ctxpool *ctxs;  /* inference contexts (sched/ctxpool.h) */
    struct osp_paths *roots; /* where socket peers' files may lie (model/paths.h); fixed at startup */
    srv_auth_t *auth;        /* the socket token, or NULL (auth.h) */
    /* What the core asks of the host connections without knowing them,
     * set by server.c before anything runs: */
    int (*input_waiting)(server_t *s); /* more frames on their way (a frame partly read, bytes
                                        * waiting): a frame admitted now will soon have company */
    void (*announce)(server_t *s, const osp_jw_t *event); /* an event to every host */
    const struct srv_parked_ops *parked; /* frames whose pixels were parked as they were read */
};

#endif
