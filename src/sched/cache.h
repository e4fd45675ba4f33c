/*
 * cache: frames a host stored with cache_frame, and preprocessed input
 * tensors keyed by frame (per model for infer_cached; per input size for the
 * tagged frames of infer_batch, the "bench" cache). Bounded by entry count
 * and bytes, oldest evicted first; safe to use from any thread (one mutex
 * guards everything; tensors are copied in and out under it, never held).
 */
#ifndef OSP_CACHE_H
#define OSP_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"

typedef enum { OSP_TCACHE_FRAME = 0, OSP_TCACHE_BENCH = 1 } osp_tcache_kind_t;

/* A cached frame; pixels owned by the cache, kept alive by references. */
typedef struct osp_cframe {
    uint32_t id;
    osp_image_t img;
    int refs;   /* guarded by the cache mutex */
    int linked; /* still in the table (not uncached/replaced) */
} osp_cframe_t;

/* What a tensor entry remembers besides its bytes. */
typedef struct {
    osp_geom_t geom;
    int frame_w, frame_h, view_w, view_h;
} osp_tmeta_t;

typedef struct osp_cache osp_cache_t;

osp_cache_t *osp_cache_new(int max_frames, int max_tensors, size_t max_bytes);
void osp_cache_free(osp_cache_t *c);

/* Store a copy of v under id (replacing an older frame of that id and its
 * tensors). Returns 0 or -1 (out of memory). */
int osp_cache_put_frame(osp_cache_t *c, uint32_t id, const osp_view_t *v);
/* A referenced frame or NULL; release it with osp_cache_release_frame. */
osp_cframe_t *osp_cache_get_frame(osp_cache_t *c, uint32_t id);
void osp_cache_release_frame(osp_cache_t *c, osp_cframe_t *f);
/* Forget a frame and every tensor cached for it (both kinds). */
void osp_cache_drop_frame(osp_cache_t *c, uint32_t id);

/* Copy a cached tensor into dst (bytes must match). 1 hit, 0 miss. Bench
 * lookups count hits and misses. */
int osp_cache_get_tensor(osp_cache_t *c, osp_tcache_kind_t kind, uint32_t id, uint32_t key,
                         void *dst, size_t bytes, osp_tmeta_t *meta);
void osp_cache_put_tensor(osp_cache_t *c, osp_tcache_kind_t kind, uint32_t id, uint32_t key,
                          const void *src, size_t bytes, const osp_tmeta_t *meta);

/* The tensor a worker made from the referenced frame f, stored only while f
 * is still the frame cached under its id. */
void osp_cache_put_frame_tensor(osp_cache_t *c, const osp_cframe_t *f, uint32_t key,
                                const void *src, size_t bytes, const osp_tmeta_t *meta);

typedef struct {
    int frames, tensors_frame, tensors_bench;
    int64_t bench_hits, bench_misses;
    size_t bytes;
} osp_cache_stats_t;
void osp_cache_stats(osp_cache_t *c, osp_cache_stats_t *s);

#endif
