/*
 * server: ospreyd's event loop. One I/O thread reads request frames from
 * stdin (the drop-in mode) or from socket connections, admits work, and is
 * the only writer of replies; a prepare pool and a predict pool do the
 * frame work; model loads run on their own threads under a bound. See
 * docs/protocol.md for what goes over the wire.
 */
#ifndef OSP_SERVER_H
#define OSP_SERVER_H

#include <stdint.h>

#define OSP_SERVER_MAX_ROOTS 16

typedef struct {
    const char *listen;      /* NULL: stdin/stdout; "unix:PATH" or "tcp:HOST:PORT" */
    const char *config_path; /* socket mode: a startup config whose models preload */
    uint32_t max_frame;      /* declared-length cap; 0 = 64 MiB */
    const char *http; /* "[HOST:]PORT": health, metrics and the dashboard (http.h), or NULL */
    int stdio_in, stdio_out; /* without listen: the host's pipes (ospreyd: 0 and 1) */
    /* what socket peers may reach (docs/security.md); stdio is the host's own */
    const char *model_roots[OSP_SERVER_MAX_ROOTS]; /* none: <cache>/models */
    int n_model_roots;
    const char *auth_token_file; /* NULL: no token; required for a non-loopback bind */
    int socket_mode;             /* a unix socket's permissions; 0 = 0660 */
    int read_only;               /* sockets may not load, replace, unload or reconfigure */
    int handshake_ms;            /* a socket's handshake must arrive within it; 0 = 10000 */
    int run_timeout_ms; /* the bound on one run of a model without runTimeoutMs; 0 = measured */
    const char *zmq;    /* Frigate's detector protocol on this endpoint, or NULL */
    const char *zmq_labelmap; /* the Frigate labelmap to answer in; NULL = Frigate's default */
    const char *zmq_accept_models; /* a directory for models Frigate uploads; NULL = refuse them */
    int zmq_bgr;                   /* Frigate sends BGR (input_pixel_format: bgr) */
    int zmq_timeout_ms;            /* Frigate's request_timeout_ms; 0 = 200 */
    /* a worker of a fleet fed by a job queue (docs/fleet.md), or NULL */
    const char *jobs;          /* redis://HOST:PORT[/DB]/STREAM */
    const char *jobs_group;    /* NULL: "osprey" */
    const char *jobs_consumer; /* NULL: <hostname>-<pid> */
    int jobs_claim_idle_ms;    /* 0: from the models' measured predict */
    int jobs_max_deliveries;   /* 0: 3 */
} osp_server_opts_t;

/* Run until stdin closes (stdio) or SIGTERM/SIGINT; returns the exit status.
 * With zmq or jobs and config_path but no listen there is no stdio host:
 * it runs until a signal. */
int osp_server_run(const osp_server_opts_t *opts);

/* Whether the --config file at config_path lists cameras ("cameras":
 * docs/cameras.md): ospreyd then serves them with no other front end. */
int osp_server_config_has_cameras(const char *config_path);

#endif
