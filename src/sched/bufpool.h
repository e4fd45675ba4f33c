/*
 * bufpool: frame buffers kept for reuse. A 1920x1080 raw frame is 6 MB,
 * and a fresh allocation of that size is a fresh mapping whose pages fault
 * in one by one on every frame; a kept buffer's pages are already there.
 * The pool keeps up to `keep` buffers, preferring large ones. A buffer's
 * start can be moved within its allocation (osp_buf_align) so that a
 * chosen byte lands on a 64-byte boundary. One thread only (the I/O
 * thread): no locks. The pool owns what it keeps; a buffer taken with
 * osp_buf_get is the caller's until osp_buf_put.
 */
#ifndef OSP_BUFPOOL_H
#define OSP_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct osp_bufpool osp_bufpool_t;

osp_bufpool_t *osp_bufpool_new(int keep);
/* Frees every kept buffer; buffers still out must not be put back after. */
void osp_bufpool_free(osp_bufpool_t *p);
/* A buffer of at least `need` bytes, its start on a 64-byte boundary; NULL
 * when out of memory or `need` is absurd. */
uint8_t *osp_buf_get(osp_bufpool_t *p, size_t need);
/* Give a buffer back (NULL is ignored): kept, or freed when the pool is
 * full of larger ones. */
void osp_buf_put(osp_bufpool_t *p, uint8_t *buf);
/* Move the first `used` bytes of buf so that its byte `at` lands on a
 * 64-byte boundary; returns the buffer's new start (the same allocation).
 * The kernel copies pipe pages into a destination at about a third of the
 * speed when the destination is not aligned like the page it copies from. */
uint8_t *osp_buf_align(uint8_t *buf, size_t used, size_t at);
/* Buffers kept now. */
int osp_bufpool_kept(const osp_bufpool_t *p);

#endif
