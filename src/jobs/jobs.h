/*
 * jobs: fleet work taken from a durable queue that many ospreyd share
 * (docs/fleet.md). Two halves. What a job is: the fields of one queue
 * entry, parsed and bounded here by pure functions (job.c), and the
 * queue's address (a redis:// URL, whose password never reaches a log).
 * And the engine that claims entries for this worker and files their
 * results: a const table of functions, so that the server's fleet front
 * end (server/fleet.c) names no queue product. redis.c is the engine of
 * Redis Streams consumer groups; another (NATS JetStream, Kafka consumer
 * groups) is one more table.
 *
 * An engine connection is used by one thread at a time; a front end that
 * claims on one thread and files results on another opens two.
 */
#ifndef OSP_JOBS_H
#define OSP_JOBS_H

#include <stddef.h>
#include <stdint.h>

#define OSP_JOB_ID_MAX 128   /* the caller's job id */
#define OSP_JOB_NAME_MAX 200 /* a model or stream name */
#define OSP_JOB_SIDE_MAX 16384
#define OSP_JOB_FIELDS_MAX 32            /* an entry with more fields is answered with an error */
#define OSP_JOB_DATA_DEFAULT (64u << 20) /* a job's data: ospreyd's default --max-frame */

/* Raw pixel formats, numbered as the image module's osp_pixfmt_t. */
enum { OSP_JOB_RGB = 0, OSP_JOB_BGR = 1, OSP_JOB_GRAY = 2, OSP_JOB_NV12 = 3, OSP_JOB_I420 = 4 };
typedef enum { OSP_JOB_JPEG, OSP_JOB_PNG, OSP_JOB_RAW } osp_job_kind_t;

/* One field of an entry as the engine read it (borrowed). */
typedef struct {
    const char *name;
    size_t name_len;
    const uint8_t *value;
    size_t len;
} osp_job_field_t;

/* A job. data points into the fields it was parsed from (borrowed). */
typedef struct {
    char id[OSP_JOB_ID_MAX + 1];
    char model[OSP_JOB_NAME_MAX + 1];
    char reply_to[OSP_JOB_NAME_MAX + 1]; /* empty: the stream's results stream */
    osp_job_kind_t kind;
    int w, h, fmt;        /* raw only */
    uint64_t deadline_ms; /* absolute, epoch ms; 0 = none */
    const uint8_t *data;
    size_t len;
} osp_job_t;

/* Parse the n fields kept of an entry that had n_total into j (more than
 * n is refused); data larger than max_data is refused. 0, or -1 with the
 * reason in err (the text of the job's error result). id and reply_to
 * are read first and kept even when something else is wrong, so that a
 * bad job can still be answered where its caller looks. */
int osp_job_parse(const osp_job_field_t *f, int n, int n_total, size_t max_data, osp_job_t *j,
                  char *err, size_t errlen);

/* ---- where the queue is ------------------------------------------------------ */

typedef struct {
    char scheme[16];
    char host[256];
    int port;
    int db;
    char user[128], pass[256]; /* empty: none */
    char stream[OSP_JOB_NAME_MAX + 1];
    /* Set by the caller, not the URL: the largest job data it accepts (its
     * --max-frame; 0: OSP_JOB_DATA_DEFAULT). The engine reads no reply
     * item much larger (a lying server is dropped, not buffered). */
    size_t max_data;
} osp_jobs_target_t;

/* redis://[[USER]:PASS@]HOST:PORT[/DB]/STREAM. 0, or -1 with the reason in
 * err, which never repeats the URL (it may hold a password). */
int osp_jobs_target_parse(const char *url, osp_jobs_target_t *t, char *err, size_t errlen);
/* The URL as a log shows it: the password, when there is one, as *** (the
 * user too), then HOST:PORT/DB/STREAM. */
void osp_jobs_target_show(const osp_jobs_target_t *t, char *out, size_t cap);

/* ---- the engine --------------------------------------------------------------- */

#define OSP_JOBS_ENGINE_VERSION 1

typedef struct osp_jobs_conn osp_jobs_conn_t;

/* One claimed entry, valid during the take callback only. */
typedef struct {
    const char *token; /* the engine's name of this delivery (a stream entry id) */
    int deliveries;    /* times it was delivered, this one included */
    const osp_job_field_t *fields;
    int n_fields; /* kept: at most OSP_JOB_FIELDS_MAX */
    int n_total;  /* the entry had */
    /* a field the engine left unread, being larger than the target's
     * max_data: its length (0: none). Its job is answered with an error. */
    size_t unread;
} osp_jobs_entry_t;

typedef void (*osp_jobs_take_fn)(void *arg, const osp_jobs_entry_t *e);

/* A result to file. */
typedef struct {
    const char *token;         /* the delivery it answers */
    const char *id;            /* the job id results are deduplicated by */
    const char *reply_to;      /* NULL or empty: the stream's results stream */
    const char *const *fields; /* name, value, name, value...: the result entry */
    const size_t *lens;
    int n_fields; /* names plus values */
} osp_jobs_result_t;

typedef struct {
    int version;
    const char *scheme;
    /* Connect, and create the consumer group (from the stream's start) if
     * it is absent. NULL with the reason in err. */
    osp_jobs_conn_t *(*open)(const osp_jobs_target_t *t, const char *group, const char *consumer,
                             char *err, size_t errlen);
    void (*close)(osp_jobs_conn_t *c); /* NULL is ignored */
    /* Claim at most max entries never delivered, waiting up to block_ms for
     * the first; take is called for each. The count, or -1 when the
     * connection failed (err; close it and open another). */
    int (*claim)(osp_jobs_conn_t *c, int max, int block_ms, osp_jobs_take_fn take, void *arg,
                 char *err, size_t errlen);
    /* Take over at most max entries that other consumers have held for
     * idle_ms or more without an answer (a worker that died); as claim. */
    int (*reclaim)(osp_jobs_conn_t *c, int64_t idle_ms, int max, osp_jobs_take_fn take, void *arg,
                   char *err, size_t errlen);
    /* File r and acknowledge its delivery, in one step, at most once per
     * job id: 1 filed, 0 a result for the id was filed before (the
     * delivery is acknowledged all the same), -1 the connection failed
     * (file it again on a new connection), -2 the queue refused it (say,
     * reply_to names a key that is not a stream): nothing happened. */
    int (*finish)(osp_jobs_conn_t *c, const osp_jobs_result_t *r, char *err, size_t errlen);
} osp_jobs_engine_t;

/* The engine for a target's scheme, or NULL. */
const osp_jobs_engine_t *osp_jobs_engine(const char *scheme);

#endif
