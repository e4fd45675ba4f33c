/*
 * policy: what a request may name (docs/security.md). A model config's
 * files are trusted as given when the host that started the worker or the
 * operator's --config names them, and confined to the model roots when a
 * socket peer does; the server's defaults fill what a config leaves out.
 */
#ifndef OSP_POLICY_H
#define OSP_POLICY_H

#include <stddef.h>

#include "model/model.h"
#include "server/core/srv.h"

struct cJSON;

/* Who named a model config's files, which says what they may reach
 * (docs/security.md). */
typedef enum {
    SRV_FROM_HOST,     /* the stdio host that started the worker: as given, as the Python worker */
    SRV_FROM_OPERATOR, /* the --config file: as given, resolved; its folders become roots */
    SRV_FROM_PEER,     /* a socket connection: confined to the model roots */
} srv_from_t;
/* The trust of a connection's requests (NULL, a connection gone: a peer's). */
srv_from_t srv_from(const conn_t *c);
/* A model config from its JSON, with the server's defaults for what it
 * leaves out (device, threads). A peer's model and labels paths are
 * resolved inside the roots, or refused with one text for "not found or
 * not allowed", and so are its cascade's face libraries. A config with
 * "then" gives its cascade (model/cascade.h, parsed, not opened) in *then
 * (the caller's; NULL for none); then == NULL only checks it. */
struct osp_cascade;
int srv_model_cfg(server_t *s, srv_from_t from, const struct cJSON *config,
                  struct osp_cascade **then, osp_model_cfg_t *cfg, char *err, size_t errlen);
/* The largest runTimeoutMs (and --run-timeout-ms): a day. */
#define SRV_RUN_TIMEOUT_MAX_MS 86400000

#endif
