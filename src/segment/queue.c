/* queue: see queue.h. */
#define _POSIX_C_SOURCE 200809L
#include "segment/queue.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- items copied in and out ---- */

struct osp_bq {
    pthread_mutex_t mu; /* guards every field below */
    pthread_cond_t can_get, can_put;
    char *buf;
    size_t esz;
    int cap, head, n;
    bool closed;
    int64_t dropped;
};

int osp_bq_new(size_t esz, int cap, osp_bq_t **out) {
    osp_bq_t *q = calloc(1, sizeof(*q));
    if (q) q->buf = calloc((size_t)cap, esz);
    if (!q || !q->buf) {
        free(q);
        return -1;
    }
    q->esz = esz;
    q->cap = cap;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->can_get, NULL);
    pthread_cond_init(&q->can_put, NULL);
    *out = q;
    return 0;
}

void osp_bq_free(osp_bq_t *q) {
    if (!q) return;
    free(q->buf);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->can_get);
    pthread_cond_destroy(&q->can_put);
    free(q);
}

void osp_bq_put(osp_bq_t *q, const void *item, bool drop_oldest) {
    pthread_mutex_lock(&q->mu);
    while (q->n == q->cap && !drop_oldest) pthread_cond_wait(&q->can_put, &q->mu);
    if (q->n == q->cap) {
        q->head = (q->head + 1) % q->cap;
        q->n--;
        q->dropped++;
    }
    memcpy(q->buf + (size_t)((q->head + q->n) % q->cap) * q->esz, item, q->esz);
    q->n++;
    pthread_cond_signal(&q->can_get);
    pthread_mutex_unlock(&q->mu);
}

int osp_bq_get(osp_bq_t *q, void *item) {
    pthread_mutex_lock(&q->mu);
    while (q->n == 0 && !q->closed) pthread_cond_wait(&q->can_get, &q->mu);
    int got = q->n > 0;
    if (got) {
        memcpy(item, q->buf + (size_t)q->head * q->esz, q->esz);
        q->head = (q->head + 1) % q->cap;
        q->n--;
        pthread_cond_signal(&q->can_put);
    }
    pthread_mutex_unlock(&q->mu);
    return got;
}

void osp_bq_close(osp_bq_t *q) {
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_broadcast(&q->can_get);
    pthread_mutex_unlock(&q->mu);
}

int64_t osp_bq_dropped(osp_bq_t *q) {
    pthread_mutex_lock(&q->mu);
    int64_t d = q->dropped;
    pthread_mutex_unlock(&q->mu);
    return d;
}

/* ---- frames: the slots own their pixels ---- */

typedef struct {
    double pts, wall;
    osp_image_t img; /* empty when no VLM wants the pixels */
} frame_t;

struct osp_frameq {
    pthread_mutex_t mu; /* guards every field below */
    pthread_cond_t can_get, can_put;
    frame_t *slots;
    int cap, head, n;
    bool closed;
    int64_t dropped;
};

int osp_frameq_new(int cap, osp_frameq_t **out) {
    osp_frameq_t *r = calloc(1, sizeof(*r));
    if (r) r->slots = calloc((size_t)cap, sizeof(frame_t));
    if (!r || !r->slots) {
        free(r);
        return -1;
    }
    r->cap = cap;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->can_get, NULL);
    pthread_cond_init(&r->can_put, NULL);
    *out = r;
    return 0;
}

void osp_frameq_free(osp_frameq_t *r) {
    if (!r) return;
    for (int i = 0; i < r->cap; i++) osp_image_free(&r->slots[i].img);
    free(r->slots);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->can_get);
    pthread_cond_destroy(&r->can_put);
    free(r);
}

static void swap_img(osp_image_t *a, osp_image_t *b) {
    osp_image_t t = *a;
    *a = *b;
    *b = t;
}

void osp_frameq_put(osp_frameq_t *r, double pts, double wall_s, osp_image_t *scratch, bool live,
                    const atomic_bool *stop) {
    pthread_mutex_lock(&r->mu);
    while (!live && r->n == r->cap && !(stop && atomic_load(stop)))
        pthread_cond_wait(&r->can_put, &r->mu);
    if (r->n == r->cap) {
        r->head = (r->head + 1) % r->cap;
        r->n--;
        r->dropped++;
    }
    frame_t *f = &r->slots[(r->head + r->n) % r->cap];
    f->pts = pts;
    f->wall = wall_s;
    swap_img(&f->img, scratch);
    r->n++;
    pthread_cond_signal(&r->can_get);
    pthread_mutex_unlock(&r->mu);
}

int osp_frameq_take(osp_frameq_t *r, double end, double *pts, double *wall_s, osp_image_t *img) {
    pthread_mutex_lock(&r->mu);
    while (r->n == 0 && !r->closed) pthread_cond_wait(&r->can_get, &r->mu);
    int rc = 0;
    if (r->n > 0) {
        frame_t *f = &r->slots[r->head];
        if (f->pts >= end - 1e-6) {
            rc = 2;
        } else {
            *pts = f->pts;
            *wall_s = f->wall;
            swap_img(&f->img, img);
            r->head = (r->head + 1) % r->cap;
            r->n--;
            pthread_cond_signal(&r->can_put);
            rc = 1;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void osp_frameq_close(osp_frameq_t *r) {
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    pthread_cond_broadcast(&r->can_get);
    pthread_cond_broadcast(&r->can_put);
    pthread_mutex_unlock(&r->mu);
}


int64_t osp_frameq_dropped(osp_frameq_t *r) {
    pthread_mutex_lock(&r->mu);
    int64_t d = r->dropped;
    pthread_mutex_unlock(&r->mu);
    return d;
}
