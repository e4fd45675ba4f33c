/* Inference contexts kept for reuse; see ctxpool.h. */
#include "sched/ctxpool.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct node {
    struct node *next;
    osp_infer_ctx_t ctx;
} node_t;

struct osp_ctxpool {
    pthread_mutex_t mu; /* guards free and total */
    node_t *free;
    int total;
};

osp_ctxpool_t *osp_ctxpool_new(void) {
    osp_ctxpool_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void osp_ctxpool_free(osp_ctxpool_t *p) {
    if (!p) return;
    for (node_t *n = p->free, *next; n; n = next) {
        next = n->next;
        osp_infer_ctx_free(&n->ctx);
        free(n);
    }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

osp_infer_ctx_t *osp_ctxpool_get(osp_ctxpool_t *p) {
    pthread_mutex_lock(&p->mu);
    node_t *n = p->free;
    if (n) p->free = n->next;
    pthread_mutex_unlock(&p->mu);
    if (!n) {
        if (!(n = calloc(1, sizeof *n))) return NULL;
        pthread_mutex_lock(&p->mu);
        p->total++;
        pthread_mutex_unlock(&p->mu);
    }
    n->ctx.params_set = 0;
    return &n->ctx;
}

void osp_ctxpool_put(osp_ctxpool_t *p, osp_infer_ctx_t *ctx) {
    node_t *n = (node_t *)((char *)ctx - offsetof(node_t, ctx));
    pthread_mutex_lock(&p->mu);
    n->next = p->free;
    p->free = n;
    pthread_mutex_unlock(&p->mu);
}

int osp_ctxpool_total(osp_ctxpool_t *p) {
    pthread_mutex_lock(&p->mu);
    int t = p->total;
    pthread_mutex_unlock(&p->mu);
    return t;
}
