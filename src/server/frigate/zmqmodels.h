/*
 * zmqmodels: the models Frigate's zmq detector names (docs/frigate.md),
 * for zmq.c: the directory its uploads are written into
 * (--zmq-accept-models), the file a handshake's name means, and that
 * model's load into a slot of its own, bounded like every load (loads.h). The struct is private to
 * zmqmodels.c; once made it is read-only, used by the zmq thread (accept,
 * save) and the I/O thread (pick) at once.
 */
#ifndef OSP_ZMQMODELS_H
#define OSP_ZMQMODELS_H

#include <stddef.h>

#include "server/core/srv.h"

typedef struct srv_zmq_models srv_zmq_models_t;

/* The upload directory dir (NULL: uploads are refused). NULL with the
 * reason in err. */
srv_zmq_models_t *srv_zmq_models_new(const char *dir, char *err, size_t errlen);
/* After every load pick started has come back. NULL is ignored. */
void srv_zmq_models_free(srv_zmq_models_t *zm);

/* Whether uploads are taken (there is a directory). */
int srv_zmq_models_accept(const srv_zmq_models_t *zm);
/* An upload of len bytes (the caller's) written whole into the directory
 * as name, a name osp_frigate_name_ok accepts. 0 or -1. */
int srv_zmq_models_save(const srv_zmq_models_t *zm, const char *name, const void *data, size_t len);

/* A model's load come back, on the I/O thread: idx its slot, or -1. */
typedef void (*srv_zmq_models_done_fn)(server_t *s, void *arg, int idx);
#define SRV_ZMQ_MODELS_LOADING (-2)
/* On the I/O thread: the slot of the model name means, when it is served
 * (>= 0); -1 when there is none, or none can be loaded now (the server
 * has not started or is stopping, no file by that name, its load could not
 * start); SRV_ZMQ_MODELS_LOADING when its load has started: done(s, arg,
 * slot or -1) comes later, once (shutdown waits for it). */
int srv_zmq_models_pick(server_t *s, const srv_zmq_models_t *zm, const char *name,
                        srv_zmq_models_done_fn done, void *arg);

#endif
