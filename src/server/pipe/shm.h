/*
 * shm: shared-memory frames (an osprey extension, docs/protocol.md). A
 * host registers a POSIX shared-memory region once and then sends
 * infer_shm requests that name a frame in it by offset, size and pixel
 * format instead of carrying its pixels. I/O thread only; a job reading
 * a region holds a reference, so an unregister while frames are in flight
 * unmaps it only after they finish. The structs are private to shm.c.
 */
#ifndef OSP_SHM_H
#define OSP_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "server/core/srv.h"
#include "wire/frame.h"

struct cJSON;
typedef struct shm_region shm_region_t;

srv_shm_t *srv_shm_new(void);
/* Unmaps every region (no job may hold one any more). */
void srv_shm_free(srv_shm_t *sh);
/* Whether any region is registered (otherwise 0x06 is an unknown type). */
int srv_shm_registered(const server_t *s);
/* register_shm / unregister_shm: 1 when cmd was one (it is answered). */
int srv_shm_command(server_t *s, conn_t *c, uint32_t req_id, const char *name,
                    const struct cJSON *cmd);
void srv_shm_release(server_t *s, shm_region_t *r);
void srv_shm_conn_closed(server_t *s, uint32_t conn_id);
/* An infer_shm frame: checked against its region, then dispatched; takes frame. */
void srv_on_infer_shm(server_t *s, conn_t *c, const osp_wire_frame_t *f, uint8_t *frame, size_t len);

#endif
