/* stream: the scorer object (ring, worker, running means, readings). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "stream/stream.h"

#define DEFAULT_JOIN_TIMEOUT_MS 5000

typedef enum { WORKER_NONE, WORKER_RUNNING, WORKER_JOINED, WORKER_DETACHED } worker_state_t;

struct osp_stream {
    osp_stream_config_t cfg; /* immutable after new */
    osp_stream_fn_t fn;
    int out_len;
    int cap; /* ring slots (frames) */
    osp_stream_sink_fn sink;
    void *sink_ctx;
    size_t footprint;

    /* Owned by whichever thread scores (the worker, or the producer when
     * frame-wise): the window handed to the callback and its output. */
    float *scratch, *out;

    pthread_mutex_t lock;     /* guards every field below */
    pthread_cond_t frames_cv; /* push -> worker: a frame arrived, or stop */
    pthread_cond_t done_cv;   /* worker -> drain/free: progress, or exit */
    float *ring;              /* cap * frame_len; frame i in slot i % cap */
    int64_t count;            /* frames pushed */
    int64_t last_taken;       /* end of the last window taken (scored or failed); -1 */
    int64_t next_end;         /* stride mode: the next aligned window end */
    bool busy;                /* a callback is running */
    bool reset_pending, stopped, free_requested;
    worker_state_t worker;
    bool worker_alive; /* the thread has not yet left worker_main */
    double *acc_sum;   /* per_frame: window * channels running sums */
    int *acc_count;
    int64_t *acc_frame; /* which frame each accumulator slot holds; -1 empty */
    osp_stream_reading_t latest;

    pthread_mutex_t stop_lock; /* serialises stop (owner vs the atexit handler) */
    pthread_t thread;
    bool listed; /* in the live list (guarded by g_live_lock) */
    osp_stream_t *live_next;
};

/* ---- scorers still running at exit --------------------------------------- */

/* A worker that outlives main is not merely untidy: it may be inside an ONNX
 * Runtime run while exit() tears down state the library registered for exit
 * (the seed saw "recursive_mutex lock failed" at exit, one run in eight).
 * exit() runs handlers newest first, so ours must be registered after the
 * model was loaded: it is registered again each time a scorer starts while
 * none is running (a stopped handler costs one empty pass), at most
 * MAX_ATEXIT times in a process. */
#define MAX_ATEXIT 1024
static pthread_mutex_t g_live_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the three below */
static osp_stream_t *g_live;
static int g_atexit_count;

static void stop_all_at_exit(void) {
    for (;;) {
        pthread_mutex_lock(&g_live_lock);
        osp_stream_t *s = g_live;
        if (s) {
            g_live = s->live_next;
            s->listed = false;
        }
        pthread_mutex_unlock(&g_live_lock);
        if (!s) return;
        osp_stream_stop(s);
    }
}

/* A child of fork() has none of its parent's workers: it must not join them
 * at exit (nor use those scorers at all). */
static void forget_live_in_child(void) {
    g_live = NULL;
    pthread_mutex_unlock(&g_live_lock);
}
static void lock_live(void) { pthread_mutex_lock(&g_live_lock); }
static void unlock_live(void) { pthread_mutex_unlock(&g_live_lock); }
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(lock_live, unlock_live, forget_live_in_child); }

static void live_add(osp_stream_t *s) {
    pthread_once(&g_atfork_once, register_atfork);
    pthread_mutex_lock(&g_live_lock);
    if (!g_live && g_atexit_count < MAX_ATEXIT && atexit(stop_all_at_exit) == 0) g_atexit_count++;
    if (!s->listed) {
        s->live_next = g_live;
        g_live = s;
        s->listed = true;
    }
    pthread_mutex_unlock(&g_live_lock);
}

static void live_remove(osp_stream_t *s) {
    pthread_mutex_lock(&g_live_lock);
    if (s->listed) {
        for (osp_stream_t **p = &g_live; *p; p = &(*p)->live_next)
            if (*p == s) {
                *p = s->live_next;
                break;
            }
        s->listed = false;
    }
    pthread_mutex_unlock(&g_live_lock);
}

/* ---- create / free ---------------------------------------------------------- */

static void *counted_calloc(osp_stream_t *s, size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (p) s->footprint += (n ? n : 1) * size;
    return p;
}

static void destroy(osp_stream_t *s) {
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->stop_lock);
    pthread_cond_destroy(&s->frames_cv);
    pthread_cond_destroy(&s->done_cv);
    free(s->ring);
    free(s->scratch);
    free(s->out);
    free(s->acc_sum);
    free(s->acc_count);
    free(s->acc_frame);
    free(s);
}

int osp_stream_new(const osp_stream_config_t *cfg, const osp_stream_fn_t *fn, osp_stream_t **out,
                   char *err, size_t errlen) {
    *out = NULL;
    if (!cfg || !fn || !fn->score) {
        snprintf(err, errlen, "a scorer needs a configuration and a scoring function");
        return OSP_STREAM_EINVAL;
    }
    osp_stream_config_t c = *cfg;
    if (c.frame_len < 1 || c.window < 0 || c.stride < 0 || c.backlog < 0 || c.channels < 1 ||
        c.channels > OSP_STREAM_MAX_CHANNELS || c.join_timeout_ms < 0) {
        snprintf(err, errlen,
                 "bad scorer configuration (frame_len %d >= 1, window %d >= 0, stride %d >= 0, "
                 "backlog %d >= 0, channels %d in 1..%d)",
                 c.frame_len, c.window, c.stride, c.backlog, c.channels, OSP_STREAM_MAX_CHANNELS);
        return OSP_STREAM_EINVAL;
    }
    if (c.window == 0 && c.stride > 0) {
        snprintf(err, errlen, "a frame-wise scorer (window 0) has no stride");
        return OSP_STREAM_EINVAL;
    }
    if (c.backlog == 0) c.backlog = 1;
    if (c.join_timeout_ms == 0) c.join_timeout_ms = DEFAULT_JOIN_TIMEOUT_MS;
    int rows = c.per_frame && c.window > 0 ? c.window : 1;
    /* the ring and the output are sized in int: refuse what would overflow */
    int64_t cap = c.window == 0   ? 0
                  : c.stride == 0 ? c.window
                                  : c.window + (int64_t)c.stride * c.backlog;
    if (cap * c.frame_len > (1 << 28) || (int64_t)rows * c.channels > (1 << 28)) {
        snprintf(err, errlen, "scorer buffers too large (%lld frames of %d floats)",
                 (long long)cap, c.frame_len);
        return OSP_STREAM_EINVAL;
    }

    osp_stream_t *s = calloc(1, sizeof *s);
    if (!s) goto nomem;
    s->footprint = sizeof *s;
    s->cfg = c;
    s->fn = *fn;
    s->cap = (int)cap;
    s->out_len = rows * c.channels;
    s->last_taken = -1;
    s->next_end = c.window - 1;
    s->latest.warming_up = true;
    s->latest.frame_index = -1;
    s->latest.channels = c.channels;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->stop_lock, NULL);
    pthread_cond_init(&s->frames_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    s->out = counted_calloc(s, (size_t)s->out_len, sizeof(float));
    if (!s->out) goto nomem;
    if (c.window > 0) {
        s->ring = counted_calloc(s, (size_t)cap * (size_t)c.frame_len, sizeof(float));
        s->scratch = counted_calloc(s, (size_t)c.window * (size_t)c.frame_len, sizeof(float));
        if (!s->ring || !s->scratch) goto nomem;
        if (c.per_frame) {
            s->acc_sum = counted_calloc(s, (size_t)c.window * (size_t)c.channels, sizeof(double));
            s->acc_count = counted_calloc(s, (size_t)c.window, sizeof(int));
            s->acc_frame = counted_calloc(s, (size_t)c.window, sizeof(int64_t));
            if (!s->acc_sum || !s->acc_count || !s->acc_frame) goto nomem;
            for (int i = 0; i < c.window; i++) s->acc_frame[i] = -1;
        }
    }
    *out = s;
    return OSP_STREAM_OK;
nomem:
    if (s) destroy(s);
    snprintf(err, errlen, "out of memory creating a scorer");
    return OSP_STREAM_ENOMEM;
}

int osp_stream_out_len(const osp_stream_t *s) { return s->out_len; }

size_t osp_stream_footprint(const osp_stream_t *s) { return s->footprint; }

void osp_stream_set_sink(osp_stream_t *s, osp_stream_sink_fn sink, void *ctx) {
    s->sink = sink;
    s->sink_ctx = ctx;
}

static void chain_sink(void *ctx, int64_t frame, const float *out, int out_len) {
    (void)frame;
    osp_stream_t *down = ctx;
    osp_stream_push_n(down, out, out_len / down->cfg.frame_len);
}

int osp_stream_chain(osp_stream_t *up, osp_stream_t *down, char *err, size_t errlen) {
    if (up == down || up->out_len % down->cfg.frame_len != 0) {
        snprintf(err, errlen,
                 "cannot chain: the upstream scorer gives %d floats per call, not a multiple of "
                 "the downstream frame (%d floats)",
                 up->out_len, down->cfg.frame_len);
        return OSP_STREAM_EINVAL;
    }
    osp_stream_set_sink(up, chain_sink, down);
    return OSP_STREAM_OK;
}

/* ---- the worker ------------------------------------------------------------- */

/* Under the lock: the window to score next, if any. Marks it taken. */
static bool take_window(osp_stream_t *s, int64_t *end) {
    const int w = s->cfg.window;
    int64_t newest = s->count - 1;
    if (s->count < w) return false; /* never padded */
    if (s->cfg.stride == 0) {
        if (newest <= s->last_taken) return false;
        *end = newest;
    } else {
        if (newest < s->next_end) return false;
        if (s->next_end - w + 1 < s->count - s->cap) {
            /* fell further behind than the ring holds: jump to the newest */
            int64_t aligned = (w - 1) + ((newest - (w - 1)) / s->cfg.stride) * s->cfg.stride;
            s->latest.skipped += (aligned - s->next_end) / s->cfg.stride;
            s->next_end = aligned;
        }
        *end = s->next_end;
        s->next_end += s->cfg.stride;
    }
    s->last_taken = *end;
    return true;
}

/* Under the lock: fold a window's output into the running means and publish
 * the newest frame's value. */
static void publish(osp_stream_t *s, int64_t first, int64_t end) {
    const int ch = s->cfg.channels;
    osp_stream_reading_t *r = &s->latest;
    if (s->cfg.per_frame && s->cfg.window > 0) {
        const int w = s->cfg.window;
        for (int64_t f = first; f <= end; f++) {
            int slot = (int)(f % w);
            double *sum = s->acc_sum + (size_t)slot * ch;
            if (s->acc_frame[slot] != f) { /* the previous occupant is out of reach */
                memset(sum, 0, (size_t)ch * sizeof *sum);
                s->acc_count[slot] = 0;
                s->acc_frame[slot] = f;
            }
            const float *row = s->out + (size_t)(f - first) * ch;
            for (int c = 0; c < ch; c++) sum[c] += row[c];
            s->acc_count[slot]++;
        }
        int slot = (int)(end % w);
        for (int c = 0; c < ch; c++)
            r->scores[c] = (float)(s->acc_sum[(size_t)slot * ch + c] / s->acc_count[slot]);
    } else {
        memcpy(r->scores, s->out, (size_t)ch * sizeof(float));
    }
    r->frame_index = end;
    r->warming_up = false;
    r->windows_completed++;
}

static void *worker_main(void *arg) {
    osp_stream_t *s = arg;
    const int w = s->cfg.window, flen = s->cfg.frame_len;
    char err[256];
    pthread_mutex_lock(&s->lock);
    while (!s->stopped) {
        int64_t end;
        if (!take_window(s, &end)) {
            pthread_cond_wait(&s->frames_cv, &s->lock);
            continue;
        }
        int64_t first = end - w + 1;
        for (int64_t f = first; f <= end; f++)
            memcpy(s->scratch + (size_t)(f - first) * flen, s->ring + (size_t)(f % s->cap) * flen,
                   (size_t)flen * sizeof(float));
        osp_stream_span_t span = {.first = first, .last = end, .newest_pushed = s->count - 1};
        bool reset = s->reset_pending;
        s->reset_pending = false;
        s->busy = true;
        pthread_mutex_unlock(&s->lock);

        if (reset && s->fn.reset) s->fn.reset(s->fn.ctx);
        err[0] = '\0';
        int rc = s->fn.score(s->fn.ctx, s->scratch, w, flen, &span, s->out, s->out_len, err,
                             sizeof err);

        pthread_mutex_lock(&s->lock);
        /* a stop that arrived mid-run means shutdown: drop this result */
        if (s->stopped) break;
        if (rc != 0) {
            s->latest.failures++;
        } else {
            publish(s, first, end);
            if (s->sink) {
                /* still busy: drain waits until a chained scorer has the result */
                pthread_mutex_unlock(&s->lock);
                s->sink(s->sink_ctx, end, s->out, s->out_len);
                pthread_mutex_lock(&s->lock);
            }
        }
        s->busy = false;
        pthread_cond_broadcast(&s->done_cv);
    }
    s->worker_alive = false;
    bool orphan = s->free_requested;
    pthread_cond_broadcast(&s->done_cv);
    pthread_mutex_unlock(&s->lock);
    if (orphan) destroy(s); /* osp_stream_free handed the memory to us */
    return NULL;
}

int osp_stream_start(osp_stream_t *s, char *err, size_t errlen) {
    if (s->cfg.window == 0) return OSP_STREAM_OK;
    pthread_mutex_lock(&s->lock);
    if (s->stopped) {
        pthread_mutex_unlock(&s->lock);
        snprintf(err, errlen, "the scorer was stopped; create a new one");
        return OSP_STREAM_EINVAL;
    }
    if (s->worker != WORKER_NONE) {
        pthread_mutex_unlock(&s->lock);
        return OSP_STREAM_OK;
    }
    s->worker_alive = true;
    int rc = pthread_create(&s->thread, NULL, worker_main, s);
    if (rc != 0) {
        s->worker_alive = false;
        pthread_mutex_unlock(&s->lock);
        snprintf(err, errlen, "cannot start the scoring worker: %s", strerror(rc));
        return OSP_STREAM_ENOMEM;
    }
    s->worker = WORKER_RUNNING;
    pthread_mutex_unlock(&s->lock);
    live_add(s);
    return OSP_STREAM_OK;
}

/* ---- the producer ----------------------------------------------------------- */

static int push_inline(osp_stream_t *s, const float *frame) {
    char err[256];
    pthread_mutex_lock(&s->lock);
    if (s->stopped) {
        pthread_mutex_unlock(&s->lock);
        return OSP_STREAM_ESTOPPED;
    }
    int64_t index = s->count++;
    bool reset = s->reset_pending;
    s->reset_pending = false;
    s->busy = true;
    pthread_mutex_unlock(&s->lock);

    if (reset && s->fn.reset) s->fn.reset(s->fn.ctx);
    osp_stream_span_t span = {.first = index, .last = index, .newest_pushed = index};
    err[0] = '\0';
    int rc = s->fn.score(s->fn.ctx, frame, 1, s->cfg.frame_len, &span, s->out, s->out_len, err,
                         sizeof err);

    pthread_mutex_lock(&s->lock);
    s->busy = false;
    if (rc != 0)
        s->latest.failures++;
    else
        publish(s, index, index);
    pthread_mutex_unlock(&s->lock);
    if (rc == 0 && s->sink) s->sink(s->sink_ctx, index, s->out, s->out_len);
    return OSP_STREAM_OK;
}

int osp_stream_push(osp_stream_t *s, const float *frame) {
    if (s->cfg.window == 0) return push_inline(s, frame);
    const int flen = s->cfg.frame_len;
    pthread_mutex_lock(&s->lock);
    if (s->stopped) {
        pthread_mutex_unlock(&s->lock);
        return OSP_STREAM_ESTOPPED;
    }
    memcpy(s->ring + (size_t)(s->count % s->cap) * flen, frame, (size_t)flen * sizeof(float));
    s->count++;
    pthread_cond_signal(&s->frames_cv);
    pthread_mutex_unlock(&s->lock);
    return OSP_STREAM_OK;
}

int osp_stream_push_n(osp_stream_t *s, const float *frames, int n) {
    for (int i = 0; i < n; i++) {
        int rc = osp_stream_push(s, frames + (size_t)i * s->cfg.frame_len);
        if (rc != 0) return rc;
    }
    return OSP_STREAM_OK;
}

void osp_stream_reset(osp_stream_t *s) {
    pthread_mutex_lock(&s->lock);
    s->reset_pending = true;
    pthread_mutex_unlock(&s->lock);
}

/* ---- readers ---------------------------------------------------------------- */

void osp_stream_latest(osp_stream_t *s, osp_stream_reading_t *r) {
    pthread_mutex_lock(&s->lock);
    *r = s->latest;
    r->pushed = s->count;
    r->age_frames = r->warming_up ? 0 : s->count - 1 - r->frame_index;
    pthread_mutex_unlock(&s->lock);
}

int osp_stream_frame_mean(osp_stream_t *s, int64_t frame, float *out, int *count) {
    if (!s->cfg.per_frame || s->cfg.window == 0) return OSP_STREAM_EINVAL;
    const int w = s->cfg.window, ch = s->cfg.channels;
    int rc = OSP_STREAM_ENOENT;
    pthread_mutex_lock(&s->lock);
    int64_t newest = s->latest.frame_index;
    if (frame >= 0 && newest >= 0 && frame <= newest && frame > newest - w) {
        int slot = (int)(frame % w);
        if (s->acc_frame[slot] == frame) {
            for (int c = 0; c < ch; c++)
                out[c] = (float)(s->acc_sum[(size_t)slot * ch + c] / s->acc_count[slot]);
            if (count) *count = s->acc_count[slot];
            rc = OSP_STREAM_OK;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Under the lock: nothing the worker would still take from what is pushed. */
static bool caught_up(const osp_stream_t *s) {
    if (s->busy) return false;
    if (s->count < s->cfg.window) return true;
    if (s->cfg.stride == 0) return s->last_taken >= s->count - 1;
    return s->count - 1 < s->next_end;
}

int osp_stream_drain(osp_stream_t *s, int timeout_ms) {
    if (s->cfg.window == 0) return OSP_STREAM_OK;
    struct timespec until = osp_deadline_in(CLOCK_REALTIME, timeout_ms);
    int rc = OSP_STREAM_OK;
    pthread_mutex_lock(&s->lock);
    while (!caught_up(s) && !s->stopped) {
        if (s->worker != WORKER_RUNNING ||
            pthread_cond_timedwait(&s->done_cv, &s->lock, &until) == ETIMEDOUT) {
            rc = caught_up(s) ? OSP_STREAM_OK : OSP_STREAM_ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* ---- stop ------------------------------------------------------------------- */

int osp_stream_stop(osp_stream_t *s) {
    if (!s) return OSP_STREAM_OK;
    int rc = OSP_STREAM_OK;
    pthread_mutex_lock(&s->stop_lock);
    pthread_mutex_lock(&s->lock);
    s->stopped = true;
    pthread_cond_signal(&s->frames_cv);
    pthread_cond_broadcast(&s->done_cv);
    worker_state_t state = s->worker;
    bool alive = s->worker_alive;
    pthread_mutex_unlock(&s->lock);

    if (state == WORKER_RUNNING) {
        struct timespec until = osp_deadline_in(CLOCK_REALTIME, s->cfg.join_timeout_ms);
        int jr = pthread_timedjoin_np(s->thread, NULL, &until);
        pthread_mutex_lock(&s->lock);
        if (jr == 0) {
            s->worker = WORKER_JOINED;
        } else {
            /* the callback has hung: let the thread go; free hands it the memory */
            pthread_detach(s->thread);
            s->worker = WORKER_DETACHED;
            rc = OSP_STREAM_ETIMEDOUT;
        }
        pthread_mutex_unlock(&s->lock);
    } else if (state == WORKER_DETACHED && alive) {
        rc = OSP_STREAM_ETIMEDOUT;
    }
    if (rc == OSP_STREAM_OK) live_remove(s);
    pthread_mutex_unlock(&s->stop_lock);
    return rc;
}

void osp_stream_free(osp_stream_t *s) {
    if (!s) return;
    osp_stream_stop(s);
    live_remove(s);
    pthread_mutex_lock(&s->lock);
    if (s->worker == WORKER_DETACHED && s->worker_alive) {
        s->free_requested = true; /* the worker frees on its way out */
        pthread_mutex_unlock(&s->lock);
        return;
    }
    pthread_mutex_unlock(&s->lock);
    destroy(s);
}
