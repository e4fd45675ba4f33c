/* Frame and tensor caches; see cache.h. */
#include "sched/cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    osp_tcache_kind_t kind;
    uint32_t id, key;
    void *data;
    size_t bytes;
    osp_tmeta_t meta;
    uint64_t age;
} tentry_t;

struct osp_cache {
    pthread_mutex_t mu; /* guards everything below */
    osp_cframe_t **frames;
    int nframes, max_frames;
    tentry_t *tens;
    int ntens, max_tensors;
    size_t bytes, max_bytes;
    uint64_t clock;
    uint64_t *frame_age;
    int64_t bench_hits, bench_misses;
};

osp_cache_t *osp_cache_new(int max_frames, int max_tensors, size_t max_bytes) {
    osp_cache_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->max_frames = max_frames > 0 ? max_frames : 1;
    c->max_tensors = max_tensors > 0 ? max_tensors : 1;
    c->max_bytes = max_bytes;
    c->frames = calloc((size_t)c->max_frames, sizeof *c->frames);
    c->frame_age = calloc((size_t)c->max_frames, sizeof *c->frame_age);
    c->tens = calloc((size_t)c->max_tensors, sizeof *c->tens);
    if (!c->frames || !c->frame_age || !c->tens) {
        osp_cache_free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void frame_free(osp_cframe_t *f) {
    osp_image_free(&f->img);
    free(f);
}

/* Unlink frame slot i; the frame itself goes when its last reference does. */
static void unlink_frame(osp_cache_t *c, int i) {
    osp_cframe_t *f = c->frames[i];
    c->bytes -= f->img.cap;
    f->linked = 0;
    if (f->refs == 0) frame_free(f);
    c->frames[i] = c->frames[c->nframes - 1];
    c->frame_age[i] = c->frame_age[c->nframes - 1];
    c->nframes--;
}

static void drop_tensor(osp_cache_t *c, int i) {
    c->bytes -= c->tens[i].bytes;
    free(c->tens[i].data);
    c->tens[i] = c->tens[c->ntens - 1];
    c->ntens--;
}

void osp_cache_free(osp_cache_t *c) {
    if (!c) return;
    while (c->nframes) unlink_frame(c, 0);
    while (c->ntens) drop_tensor(c, 0);
    free(c->frames);
    free(c->frame_age);
    free(c->tens);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static int find_frame(osp_cache_t *c, uint32_t id) {
    for (int i = 0; i < c->nframes; i++)
        if (c->frames[i]->id == id) return i;
    return -1;
}

static void drop_tensors_of(osp_cache_t *c, uint32_t id) {
    for (int i = 0; i < c->ntens;)
        if (c->tens[i].id == id)
            drop_tensor(c, i);
        else
            i++;
}

/* Evict the oldest tensors, then the oldest frames, until `need` more bytes fit. */
static void make_room(osp_cache_t *c, size_t need) {
    while (c->max_bytes && c->bytes + need > c->max_bytes && (c->ntens || c->nframes)) {
        if (c->ntens) {
            int old = 0;
            for (int i = 1; i < c->ntens; i++)
                if (c->tens[i].age < c->tens[old].age) old = i;
            drop_tensor(c, old);
        } else {
            int old = 0;
            for (int i = 1; i < c->nframes; i++)
                if (c->frame_age[i] < c->frame_age[old]) old = i;
            drop_tensors_of(c, c->frames[old]->id);
            unlink_frame(c, old);
        }
    }
}

int osp_cache_put_frame(osp_cache_t *c, uint32_t id, const osp_view_t *v) {
    osp_cframe_t *f = calloc(1, sizeof *f);
    if (!f) return -1;
    int ch = osp_pixfmt_channels(v->fmt);
    size_t row = (size_t)v->width * (size_t)ch, need = row * (size_t)v->height;
    if (!(f->img.data = malloc(need ? need : 1))) {
        free(f);
        return -1;
    }
    for (int y = 0; y < v->height; y++)
        memcpy(f->img.data + (size_t)y * row, v->data + (size_t)y * (size_t)v->stride, row);
    f->img.cap = need;
    f->img.width = v->width;
    f->img.height = v->height;
    f->img.stride = (int)row;
    f->img.fmt = v->fmt;
    f->id = id;
    f->linked = 1;
    pthread_mutex_lock(&c->mu);
    int i = find_frame(c, id);
    if (i >= 0) {
        drop_tensors_of(c, id);
        unlink_frame(c, i);
    }
    make_room(c, need);
    if (c->nframes == c->max_frames) {
        int old = 0;
        for (int k = 1; k < c->nframes; k++)
            if (c->frame_age[k] < c->frame_age[old]) old = k;
        drop_tensors_of(c, c->frames[old]->id);
        unlink_frame(c, old);
    }
    c->frames[c->nframes] = f;
    c->frame_age[c->nframes] = ++c->clock;
    c->nframes++;
    c->bytes += need;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

osp_cframe_t *osp_cache_get_frame(osp_cache_t *c, uint32_t id) {
    pthread_mutex_lock(&c->mu);
    int i = find_frame(c, id);
    osp_cframe_t *f = i >= 0 ? c->frames[i] : NULL;
    if (f) f->refs++;
    pthread_mutex_unlock(&c->mu);
    return f;
}

void osp_cache_release_frame(osp_cache_t *c, osp_cframe_t *f) {
    if (!f) return;
    pthread_mutex_lock(&c->mu);
    int gone = --f->refs == 0 && !f->linked;
    pthread_mutex_unlock(&c->mu);
    if (gone) frame_free(f);
}

void osp_cache_drop_frame(osp_cache_t *c, uint32_t id) {
    pthread_mutex_lock(&c->mu);
    drop_tensors_of(c, id);
    int i = find_frame(c, id);
    if (i >= 0) unlink_frame(c, i);
    pthread_mutex_unlock(&c->mu);
}

int osp_cache_get_tensor(osp_cache_t *c, osp_tcache_kind_t kind, uint32_t id, uint32_t key,
                         void *dst, size_t bytes, osp_tmeta_t *meta) {
    int hit = 0;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->ntens; i++) {
        tentry_t *t = &c->tens[i];
        if (t->kind == kind && t->id == id && t->key == key && t->bytes == bytes) {
            memcpy(dst, t->data, bytes);
            *meta = t->meta;
            t->age = ++c->clock;
            hit = 1;
            break;
        }
    }
    if (kind == OSP_TCACHE_BENCH) {
        if (hit)
            c->bench_hits++;
        else
            c->bench_misses++;
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

static void put_tensor(osp_cache_t *c, const osp_cframe_t *f, osp_tcache_kind_t kind, uint32_t id,
                       uint32_t key, const void *src, size_t bytes, const osp_tmeta_t *meta) {
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy) return; /* a cache is an optimisation: skip it */
    memcpy(copy, src, bytes);
    pthread_mutex_lock(&c->mu);
    if (f && !f->linked) { /* evicted, dropped or replaced while it was prepared */
        pthread_mutex_unlock(&c->mu);
        free(copy);
        return;
    }
    for (int i = 0; i < c->ntens; i++)
        if (c->tens[i].kind == kind && c->tens[i].id == id && c->tens[i].key == key) {
            drop_tensor(c, i);
            break;
        }
    make_room(c, bytes);
    if (c->ntens == c->max_tensors) {
        int old = 0;
        for (int i = 1; i < c->ntens; i++)
            if (c->tens[i].age < c->tens[old].age) old = i;
        drop_tensor(c, old);
    }
    c->tens[c->ntens++] = (tentry_t){.kind = kind,
                                     .id = id,
                                     .key = key,
                                     .data = copy,
                                     .bytes = bytes,
                                     .meta = *meta,
                                     .age = ++c->clock};
    c->bytes += bytes;
    pthread_mutex_unlock(&c->mu);
}

void osp_cache_put_tensor(osp_cache_t *c, osp_tcache_kind_t kind, uint32_t id, uint32_t key,
                          const void *src, size_t bytes, const osp_tmeta_t *meta) {
    put_tensor(c, NULL, kind, id, key, src, bytes, meta);
}

void osp_cache_put_frame_tensor(osp_cache_t *c, const osp_cframe_t *f, uint32_t key,
                                const void *src, size_t bytes, const osp_tmeta_t *meta) {
    put_tensor(c, f, OSP_TCACHE_FRAME, f->id, key, src, bytes, meta);
}

void osp_cache_stats(osp_cache_t *c, osp_cache_stats_t *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&c->mu);
    s->frames = c->nframes;
    for (int i = 0; i < c->ntens; i++) {
        if (c->tens[i].kind == OSP_TCACHE_BENCH)
            s->tensors_bench++;
        else
            s->tensors_frame++;
    }
    s->bench_hits = c->bench_hits;
    s->bench_misses = c->bench_misses;
    s->bytes = c->bytes;
    pthread_mutex_unlock(&c->mu);
}
