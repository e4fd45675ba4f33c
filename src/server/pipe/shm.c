/*
 * Shared-memory frames (an osprey extension, docs/protocol.md): a host maps
 * its frames into a POSIX shared-memory region, registers it once, and then
 * sends infer_shm requests that name a frame by region, offset, size and
 * pixel format instead of carrying its pixels through the pipe. Every
 * reference is checked against the region; nothing outside the mapping is
 * ever read.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sched/bufpool.h"
#include "server/core/account.h"
#include "server/pipe/cmds.h"
#include "server/pipe/reply.h"
#include "server/core/guard.h"
#include "server/pipe/conn.h"
#include "server/core/dispatch.h"
#include "server/core/job.h"
#include "server/core/ledger.h"
#include "server/pipe/shm.h"
#include "server/core/stats.h"
#include "wire/cmdargs.h"
#include "wire/peek.h"
#include "log/log.h"


/* Registrations a peer may hold: each is a mapping of the server's
 * address space and a descriptor's worth of kernel state; 2 000 were once
 * taken by one connection without limit. */
#define SHM_PER_CONN 64
#define SHM_MAX 256

struct shm_region {
    struct shm_region *next;
    int fd; /* kept open: its size is checked before each frame */
    uint32_t id;
    uint32_t owner; /* the connection that registered it */
    char name[256];
    const uint8_t *base;
    size_t size;
    int refs; /* 1 while registered + one per job */
};

struct srv_shm {
    shm_region_t *head;
    uint32_t next_id;
};

/* A host can truncate its file at any time: the size is checked before
 * each frame is dispatched, and the worker reads it under a guard
 * (guard.h). */

srv_shm_t *srv_shm_new(void) { return calloc(1, sizeof(srv_shm_t)); }

int srv_shm_registered(const server_t *s) { return s->shm->head != NULL; }

/* A region of connection `owner`: a peer reaches only its own. */
static shm_region_t *find(server_t *s, uint32_t id, uint32_t owner) {
    for (shm_region_t *r = s->shm->head; r; r = r->next)
        if (r->id == id && r->owner == owner) return r;
    return NULL;
}

static void region_free(shm_region_t *r) {
    munmap((void *)r->base, r->size);
    close(r->fd);
    free(r);
}

/* Regions registered by connection owner, and in all. */
static int regions_of(const srv_shm_t *sh, uint32_t owner, int *all) {
    int mine = 0;
    *all = 0;
    for (const shm_region_t *r = sh->head; r; r = r->next) {
        (*all)++;
        mine += r->owner == owner;
    }
    return mine;
}

void srv_shm_release(server_t *s, shm_region_t *r) {
    (void)s;
    if (--r->refs > 0) return;
    region_free(r);
}

static void unlink_region(server_t *s, shm_region_t *r) {
    shm_region_t **pp = &s->shm->head;
    while (*pp && *pp != r) pp = &(*pp)->next;
    if (*pp) *pp = r->next;
    srv_shm_release(s, r); /* the registration's own reference */
}

void srv_shm_conn_closed(server_t *s, uint32_t conn_id) {
    for (shm_region_t *r = s->shm->head, *n; r; r = n) {
        n = r->next;
        if (r->owner == conn_id) unlink_region(s, r);
    }
}

void srv_shm_free(srv_shm_t *sh) {
    if (!sh) return;
    while (sh->head) {
        shm_region_t *r = sh->head;
        sh->head = r->next;
        region_free(r);
    }
    free(sh);
}

static void reply(server_t *s, conn_t *c, uint32_t req_id, const char *cmd, const char *error,
                  const shm_region_t *r) {
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = srv_cmd_begin(w, cmd, -1, error ? "error" : "ok");
    if (error) {
        osp_jw_key(w, "error");
        osp_jw_str(w, error);
    } else if (r) {
        osp_jw_key(w, "regionId");
        osp_jw_uint(w, r->id);
        osp_jw_key(w, "name");
        osp_jw_str(w, r->name);
        osp_jw_key(w, "size");
        osp_jw_uint(w, r->size);
    }
    srv_cmd_send(s, srv_conn_id(c), w, at, req_id);
}

/* register_shm {"name": "/cam1"[, "size": bytes]} and unregister_shm
 * {"regionId": id}. Returns 1 when `name` was one of them. */
int srv_shm_command(server_t *s, conn_t *c, uint32_t req_id, const char *name, const cJSON *cmd) {
    char err[400];
    if (strcmp(name, "register_shm") == 0) {
        osp_wire_shm_register_t rg;
        if (osp_wire_shm_register_parse(cmd, &rg, err, sizeof err)) {
            reply(s, c, req_id, name, err, NULL);
            return 1;
        }
        int all, mine = regions_of(s->shm, srv_conn_id(c), &all);
        if (mine >= SHM_PER_CONN || all >= SHM_MAX) {
            snprintf(err, sizeof err, "register_shm: at most %d regions on a connection and %d in all",
                     SHM_PER_CONN, SHM_MAX);
            reply(s, c, req_id, name, err, NULL);
            return 1;
        }
        int fd = shm_open(rg.name, O_RDONLY, 0);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            snprintf(err, sizeof err, "cannot open shared memory %s: %s", rg.name, strerror(errno));
            if (fd >= 0) close(fd);
            reply(s, c, req_id, name, err, NULL);
            return 1;
        }
        size_t size = rg.size ? (size_t)rg.size : (size_t)st.st_size;
        if (size == 0 || (off_t)size > st.st_size) {
            snprintf(err, sizeof err, "shared memory %s holds %lld bytes, not %zu", rg.name,
                     (long long)st.st_size, size);
            close(fd);
            reply(s, c, req_id, name, err, NULL);
            return 1;
        }
        void *base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        shm_region_t *r = base == MAP_FAILED ? NULL : calloc(1, sizeof *r);
        if (!r) {
            snprintf(err, sizeof err, "cannot map shared memory %s: %s", rg.name,
                     base == MAP_FAILED ? strerror(errno) : "out of memory");
            if (base != MAP_FAILED) munmap(base, size);
            close(fd);
            reply(s, c, req_id, name, err, NULL);
            return 1;
        }
        r->fd = fd;
        srv_guard_install(); /* before any frame in it is read */
        r->id = ++s->shm->next_id;
        r->owner = srv_conn_id(c);
        snprintf(r->name, sizeof r->name, "%s", rg.name);
        r->base = base;
        r->size = size;
        r->refs = 1;
        r->next = s->shm->head;
        s->shm->head = r;
        osp_log(OSP_LOG_INFO, "ospreyd: shared memory %s registered as region %u (%zu bytes)",
                r->name, r->id, size);
        reply(s, c, req_id, name, NULL, r);
        return 1;
    }
    if (strcmp(name, "unregister_shm") == 0) {
        uint32_t id;
        shm_region_t *r = osp_wire_shm_unregister_parse(cmd, &id, err, sizeof err) == 0
                              ? find(s, id, srv_conn_id(c))
                              : NULL;
        if (!r) {
            reply(s, c, req_id, name, "unregister_shm: no such \"regionId\"", NULL);
            return 1;
        }
        unlink_region(s, r);
        reply(s, c, req_id, name, NULL, NULL);
        return 1;
    }
    return 0;
}

static void shm_error(server_t *s, conn_t *c, uint32_t req_id, int idx, srv_fail_t kind,
                      const char *msg) {
    srv_reply_error(s, c, req_id, SRV_ERR_PLAIN, msg);
    srv_account(s, idx, 1, SRV_OUTCOME_FAILED(kind), 0);
}

/* A frame job in a region holds a reference to it until released. */
static void shm_job_release(server_t *s, srv_req_t *r) {
    frame_job_t *j = (frame_job_t *)r;
    if (j->shm) srv_shm_release(s, j->shm);
    j->shm = NULL;
}

static const srv_transport_t shm_tp = {.send = srv_pipe_send, .release = shm_job_release};

void srv_on_infer_shm(server_t *s, conn_t *c, const osp_wire_frame_t *f, uint8_t *frame, size_t len) {
    char err[512];
    osp_wire_shm_t m;
    if (osp_wire_shm_parse(f->payload, f->payload_len, srv_conn_version(c), &m, err, sizeof err)) {
        srv_account_received(s, SRV_LEDGER_NO_MODEL);
        shm_error(s, c, f->req_id, SRV_LEDGER_NO_MODEL, SRV_FAIL_BAD_REQUEST, err);
        osp_buf_put(s->bufs, frame);
        return;
    }
    srv_account_received(s, m.model_idx);
    shm_region_t *r = find(s, m.region, srv_conn_id(c));
    if (!r) {
        snprintf(err, sizeof err, "shm region %u not registered", m.region);
        shm_error(s, c, f->req_id, m.model_idx, SRV_FAIL_BAD_REQUEST, err);
        osp_buf_put(s->bufs, frame);
        return;
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0 || st.st_size < (off_t)r->size) {
        /* reading the missing pages would raise SIGBUS */
        snprintf(err, sizeof err,
                 "infer_shm: shared memory %s holds %lld bytes now, not the %zu it was registered with",
                 r->name, (long long)st.st_size, r->size);
        shm_error(s, c, f->req_id, m.model_idx, SRV_FAIL_BAD_REQUEST, err);
        osp_buf_put(s->bufs, frame);
        return;
    }
    if (osp_wire_shm_check(&m, r->size, OSP_IMG_MAX_SIDE, err, sizeof err)) {
        shm_error(s, c, f->req_id, m.model_idx, SRV_FAIL_BAD_REQUEST, err);
        osp_buf_put(s->bufs, frame);
        return;
    }
    osp_wire_request_t rq = {.req_id = f->req_id,
                             .msg_type = OSP_WIRE_MSG_INFER_SHM,
                             .deadline_ms = m.deadline_ms};
    frame_job_t *j = srv_pipe_frame_job(s, c, &shm_tp, &rq, frame, len);
    if (!j) {
        osp_buf_put(s->bufs, frame);
        shm_error(s, c, f->req_id, m.model_idx, SRV_FAIL_NO_MEMORY, "out of memory");
        return;
    }
    j->r.model_idx = m.model_idx;
    j->shm = r;
    r->refs++;
    j->shm_view = (osp_view_t){.data = r->base + m.offset,
                               .width = (int)m.width,
                               .height = (int)m.height,
                               .stride = (int)m.stride,
                               .fmt = (osp_pixfmt_t)m.fmt};
    srv_dispatch_submit(s, j);
}
