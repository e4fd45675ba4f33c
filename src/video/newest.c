/* The newest frame of a live source, decoded on its own thread (newest.h). */
#include "video/newest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct osp_newest {
    osp_source_t *src;
    pthread_t th;
    pthread_mutex_t mu; /* guards every field below */
    pthread_cond_t cv;
    osp_image_t latest; /* the newest frame, when fresh */
    osp_frame_meta_t meta;
    int fresh;
    int done, rc; /* the source's last return, once done */
    char err[512];
    int64_t dropped;
};

static void swap_img(osp_image_t *a, osp_image_t *b) {
    osp_image_t t = *a;
    *a = *b;
    *b = t;
}

static void *decode_main(void *arg) {
    osp_newest_t *n = arg;
    osp_image_t work = {0};
    osp_frame_meta_t meta;
    char err[512] = "";
    int rc;
    while ((rc = osp_source_read(n->src, &work, &meta, err, sizeof err)) == 1) {
        pthread_mutex_lock(&n->mu);
        swap_img(&work, &n->latest);
        if (n->fresh) n->dropped++;
        n->meta = meta;
        n->fresh = 1;
        pthread_cond_signal(&n->cv);
        pthread_mutex_unlock(&n->mu);
    }
    pthread_mutex_lock(&n->mu);
    n->done = 1;
    n->rc = rc;
    snprintf(n->err, sizeof n->err, "%s", err);
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    osp_image_free(&work);
    return NULL;
}

int osp_newest_start(osp_source_t *src, osp_newest_t **out, char *err, size_t errlen) {
    *out = NULL;
    osp_newest_t *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    n->src = src;
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    if (pthread_create(&n->th, NULL, decode_main, n) != 0) {
        pthread_mutex_destroy(&n->mu);
        pthread_cond_destroy(&n->cv);
        free(n);
        snprintf(err, errlen, "cannot start the decoding thread");
        return -1;
    }
    *out = n;
    return 0;
}

int osp_newest_read(osp_newest_t *n, osp_image_t *rgb, osp_frame_meta_t *meta, char *err,
                    size_t errlen) {
    pthread_mutex_lock(&n->mu);
    while (!n->fresh && !n->done) pthread_cond_wait(&n->cv, &n->mu);
    int rc = 1;
    if (n->fresh) {
        swap_img(rgb, &n->latest);
        *meta = n->meta;
        n->fresh = 0;
    } else {
        rc = n->rc;
        snprintf(err, errlen, "%s", n->err);
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

int64_t osp_newest_dropped(osp_newest_t *n) {
    pthread_mutex_lock(&n->mu);
    int64_t d = n->dropped;
    pthread_mutex_unlock(&n->mu);
    return d;
}

void osp_newest_stop(osp_newest_t *n) {
    if (!n) return;
    osp_source_cancel(n->src);
    pthread_join(n->th, NULL);
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->cv);
    osp_image_free(&n->latest);
    free(n);
}
