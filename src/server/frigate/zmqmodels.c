/*
 * The models Frigate's zmq detector names (zmqmodels.h). A handshake's
 * name is a model already served, or a file found here and loaded into a
 * slot of its own: a catalog model once its file is fetched, else a file
 * of that name in the upload directory or the cache's models directory.
 * The load runs on a thread of its own (the I/O thread never loads) and
 * comes back to the I/O thread as an event. Frigate waits 30 s for the
 * answer; a load that takes longer still lands in its slot for later.
 */
#include "server/frigate/zmqmodels.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model.h"
#include "server/core/board.h"
#include "server/core/loads.h"
#include "server/core/slots.h"
#include "wire/frigate.h"
#include "log/log.h"

/* Read-only once made: the zmq thread saves uploads, the I/O thread finds
 * files, at once. */
struct srv_zmq_models {
    int fd; /* the upload directory (--zmq-accept-models), or -1 */
    char dir[1024];
};

/* A model Frigate names that is not loaded: a catalog name, or a file in
 * the upload directory or the cache's models directory. 0 and *cfg, or -1. */
static int resolve(const srv_zmq_models_t *zm, const char *name, osp_model_cfg_t *cfg) {
    char err[512], path[2048], stem[OSP_FRIGATE_NAME_MAX];
    snprintf(stem, sizeof stem, "%s", name);
    char *dot = strrchr(stem, '.');
    if (dot && dot != stem) *dot = '\0';
    struct stat st;
    if (osp_catalog_find(stem)) /* only once its file is fetched: else Frigate may upload it */
        return osp_model_cfg_from_catalog(stem, cfg, err, sizeof err) || stat(cfg->path, &st) ? -1
                                                                                              : 0;
    if (!osp_frigate_name_ok(name)) return -1; /* a file name, never a path */
    if (zm->fd >= 0 && fstatat(zm->fd, name, &st, 0) == 0 && S_ISREG(st.st_mode)) {
        snprintf(path, sizeof path, "%s/%s", zm->dir, name);
    } else if (!osp_catalog_file(name, path, sizeof path)) {
        return -1;
    }
    return osp_model_cfg_resolve(path, cfg, err, sizeof err) ? -1 : 0;
}

/* A model load for a handshake or an upload, on a thread of its own,
 * back as an event. */
/* A model Frigate named, on its way through the loads (loads.h). */
typedef struct {
    char name[OSP_FRIGATE_NAME_MAX];
    srv_zmq_models_done_fn done;
    void *arg;
} zload_t;

static void load_done(server_t *s, void *arg, srv_load_end_t *end) {
    zload_t *L = arg;
    int idx = srv_slots_find(s, L->name, SRV_FIND_NAME_STEM);
    if (idx < 0 && end->model) {
        idx = srv_slots_count(s); /* past every slot a host has named */
        loaded_t *l = idx < OSP_MAX_SLOTS ? srv_loaded_new(end->model, &end->model->cfg) : NULL;
        if (l) {
            end->model = NULL;
            srv_slot_install(s, idx, l);
            srv_board_sync(s, idx, end->load_ms);
            if (idx != end->index) srv_board_sync(s, end->index, -1); /* slots grew meanwhile */
            osp_log(OSP_LOG_INFO, "ospreyd: zmq: model %s loaded into slot %d for Frigate",
                    srv_loaded_path(l), idx);
        } else {
            idx = -1;
        }
    } else if (end->status != SRV_LOAD_OK) {
        osp_log(OSP_LOG_ERROR, "ospreyd: zmq: %s: %s", L->name, end->err);
    }
    srv_zmq_models_done_fn done = L->done;
    void *done_arg = L->arg;
    free(L);
    done(s, done_arg, idx);
}

/* 0: the load is queued and answers through done; -1: it could not be. */
static int start_load(server_t *s, const char *name, const osp_model_cfg_t *cfg,
                      srv_zmq_models_done_fn done, void *arg) {
    zload_t *L = calloc(1, sizeof *L);
    if (!L) return -1;
    snprintf(L->name, sizeof L->name, "%s", name);
    L->done = done;
    L->arg = arg;
    osp_model_cfg_t c = *cfg;
    if (!c.device[0]) snprintf(c.device, sizeof c.device, "%s", s->set.device);
    if (!c.intra_threads) c.intra_threads = s->set.intra_threads;
    if (!c.lone_threads) c.lone_threads = s->set.lone_threads;
    if (srv_load(s, &c, srv_slots_count(s), name, load_done, L)) {
        free(L);
        return -1;
    }
    return 0;
}

int srv_zmq_models_pick(server_t *s, const srv_zmq_models_t *zm, const char *name,
                        srv_zmq_models_done_fn done, void *arg) {
    osp_model_cfg_t cfg;
    if (!s->set.started || s->stopping) return -1;
    int idx = srv_slots_find(s, name, SRV_FIND_NAME_STEM);
    if (idx >= 0) return idx;
    if (resolve(zm, name, &cfg) || start_load(s, name, &cfg, done, arg)) return -1;
    return SRV_ZMQ_MODELS_LOADING;
}

/* Through a hidden name (never resolved), renamed into place once whole. */
int srv_zmq_models_save(const srv_zmq_models_t *zm, const char *name, const void *data, size_t len) {
    char tmp[OSP_FRIGATE_NAME_MAX + 16];
    snprintf(tmp, sizeof tmp, ".upload-%s", name);
    int fd = openat(zm->fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    const uint8_t *p = data;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        p += w;
        left -= (size_t)w;
    }
    int rc = left == 0 && fsync(fd) == 0 ? 0 : -1;
    close(fd);
    if (rc == 0) rc = renameat(zm->fd, tmp, zm->fd, name);
    if (rc) unlinkat(zm->fd, tmp, 0);
    return rc;
}

int srv_zmq_models_accept(const srv_zmq_models_t *zm) { return zm->fd >= 0; }

srv_zmq_models_t *srv_zmq_models_new(const char *dir, char *err, size_t errlen) {
    srv_zmq_models_t *zm = calloc(1, sizeof *zm);
    if (!zm) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    zm->fd = -1;
    if (dir) {
        snprintf(zm->dir, sizeof zm->dir, "%s", dir);
        zm->fd = open(zm->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (zm->fd < 0) {
            snprintf(err, errlen, "--zmq-accept-models %s: %s", zm->dir, strerror(errno));
            free(zm);
            return NULL;
        }
    }
    return zm;
}

void srv_zmq_models_free(srv_zmq_models_t *zm) {
    if (!zm) return;
    if (zm->fd >= 0) close(zm->fd);
    free(zm);
}
