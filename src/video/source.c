/*
 * One reader for files, streams, devices and stdin, reopening a live source
 * that drops (source.h). The reopen loop runs inside osp_source_read, on the
 * reader's thread: nothing else touches the FFmpeg handles.
 */
#include "video/source.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "video/backoff.h"
#include "video/url.h"

struct osp_source {
    char *input;    /* as given; may hold credentials, never printed */
    char name[256]; /* masked */
    osp_url_kind_t kind;
    osp_source_cfg_t cfg;
    osp_video_opts_t vopts;
    osp_video_t *v; /* NULL while a live source is down */
    osp_video_info_t info;
    double fps; /* the latest opening's rate; 0: unknown */
    int live;
    atomic_bool cancel;
    int64_t next_index;
    double last_frame;  /* monotonic time of the last frame; 0: none yet */
    double drop_at;     /* when the current drop was noticed */
    int attempts;       /* reopens tried since it */
    int reopened;       /* a reconnect to report at the next frame */
    char last_why[256]; /* the last failed reopen's reason */
    osp_source_stats_t stats;
};

static int halted(const osp_source_t *s) {
    return atomic_load(&s->cancel) || (s->cfg.stop && atomic_load(s->cfg.stop));
}

static int stopped_cb(void *ctx) { return halted(ctx); }

void osp_source_cfg_default(osp_source_cfg_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->io_timeout_s = OSP_SOURCE_IO_TIMEOUT_S;
    cfg->reconnect_for_s = -1;
    cfg->backoff_first_s = OSP_BACKOFF_FIRST_S;
    cfg->backoff_max_s = OSP_BACKOFF_MAX_S;
}

static void report(osp_source_t *s, osp_source_event_t *e) {
    e->name = s->name;
    e->time = osp_epoch_s();
    e->frame = s->next_index - 1;
    if (s->cfg.on_event) s->cfg.on_event(s->cfg.ctx, e);
}

/* Frames the source would have sent in `secs` without any arriving. */
static int64_t frames_in(const osp_source_t *s, double secs) {
    if (s->fps <= 0 || secs <= 0) return 0;
    return (int64_t)floor(secs * s->fps + 1e-6);
}

static int reopen(osp_source_t *s, char *err, size_t errlen) {
    const char *path = s->kind == OSP_URL_STDIN ? "pipe:0" : s->input;
    int rc = osp_video_open_opts(path, &s->vopts, &s->v, err, errlen);
    if (rc == 0 && osp_video_info(s->v)->fps > 0) s->fps = osp_video_info(s->v)->fps;
    return rc;
}

int osp_source_open(const char *input, const osp_source_cfg_t *cfg, osp_source_t **out, char *err,
                    size_t errlen) {
    *out = NULL;
    osp_source_t *s = calloc(1, sizeof *s);
    if (!s || !(s->input = strdup(input))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return OSP_SOURCE_EINPUT;
    }
    if (cfg)
        s->cfg = *cfg;
    else
        osp_source_cfg_default(&s->cfg);
    atomic_init(&s->cancel, false);
    s->kind = osp_url_kind(input);
    osp_url_mask(input, s->name, sizeof s->name);
    if (s->kind == OSP_URL_STDIN) snprintf(s->name, sizeof s->name, "-");
    struct stat st;
    if (s->kind == OSP_URL_FILE && stat(input, &st) == 0 && S_ISCHR(st.st_mode))
        s->kind = OSP_URL_DEVICE;
    if (s->kind == OSP_URL_UNKNOWN) {
        snprintf(err, errlen,
                 "%s: not a source osprey reads (files, -, /dev/video*, rtsp://, rtsps://, "
                 "http://, https://, rtmp://, srt://, udp://, tcp://)",
                 s->name);
        goto fail;
    }
    if (s->kind == OSP_URL_FILE && stat(input, &st) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", s->name, strerror(errno));
        goto fail;
    }
    if (s->kind == OSP_URL_DEVICE && stat(input, &st) != 0) {
        snprintf(err, errlen, "cannot open device %s: %s", s->name, strerror(errno));
        goto fail;
    }
    s->vopts.format = s->kind == OSP_URL_DEVICE ? "video4linux2" : NULL;
    s->vopts.rtsp_udp = s->cfg.rtsp_udp;
    s->vopts.max_packet = s->cfg.max_packet;
    s->vopts.decode_threads = s->cfg.decode_threads;
    s->vopts.yuv420 = s->cfg.yuv420;
    s->vopts.io_timeout_s = 0;
    if (osp_url_is_stream(s->kind))
        s->vopts.io_timeout_s = s->cfg.io_timeout_s > 0 ? s->cfg.io_timeout_s
                                                        : OSP_SOURCE_IO_TIMEOUT_S;
    s->vopts.stopped = stopped_cb;
    s->vopts.stop_ctx = s;
    if (reopen(s, err, errlen)) goto fail;
    s->info = *osp_video_info(s->v);
    s->live = s->kind == OSP_URL_DEVICE || (osp_url_is_stream(s->kind) && !s->info.has_duration);
    *out = s;
    return 0;
fail:
    osp_source_close(s);
    return OSP_SOURCE_EINPUT;
}

void osp_source_close(osp_source_t *s) {
    if (!s) return;
    osp_video_close(s->v);
    free(s->input);
    free(s);
}

void osp_source_cancel(osp_source_t *s) { atomic_store(&s->cancel, true); }
const osp_video_info_t *osp_source_info(const osp_source_t *s) { return &s->info; }
const char *osp_source_name(const osp_source_t *s) { return s->name; }
int osp_source_live(const osp_source_t *s) { return s->live; }
osp_source_stats_t osp_source_stats(const osp_source_t *s) { return s->stats; }

static void dropped(osp_source_t *s, const char *why) {
    osp_video_close(s->v);
    s->v = NULL;
    s->drop_at = osp_now_s();
    s->attempts = 0;
    s->stats.drops++;
    osp_source_event_t e = {.kind = OSP_SOURCE_DROP,
                            .reason = why,
                            .retry_in_s = s->cfg.reconnect_for_s == 0
                                              ? 0
                                              : osp_backoff_delay(s->cfg.backoff_first_s,
                                                                  s->cfg.backoff_max_s, 0)};
    e.frames_lost = s->last_frame > 0 ? frames_in(s, s->drop_at - s->last_frame) : 0;
    report(s, &e);
}

/* Sleep up to secs, waking early when halted. */
static void nap(const osp_source_t *s, double secs) {
    double until = osp_now_s() + secs;
    while (!halted(s)) {
        double left = until - osp_now_s();
        if (left <= 0) return;
        if (left > 0.05) left = 0.05;
        osp_sleep_ms(left * 1e3);
    }
}

/* Reopen a dropped live source: 0 once open, 1 when halted, OSP_SOURCE_EGAVEUP. */
static int reconnect(osp_source_t *s, char *err, size_t errlen) {
    double bound = s->cfg.reconnect_for_s;
    for (;;) {
        if (halted(s)) return 1;
        double down = osp_now_s() - s->drop_at;
        if (bound >= 0 && down >= bound) {
            osp_source_event_t e = {.kind = OSP_SOURCE_GAVE_UP,
                                    .reason = s->last_why[0] ? s->last_why : "no reopen tried",
                                    .down_s = down,
                                    .attempts = s->attempts};
            report(s, &e);
            snprintf(err, errlen, "%s: no frames for %.1f s, gave up (--reconnect-for %g)%s%s",
                     s->name, down, bound, s->last_why[0] ? ": " : "", s->last_why);
            return OSP_SOURCE_EGAVEUP;
        }
        double wait = osp_backoff_delay(s->cfg.backoff_first_s, s->cfg.backoff_max_s, s->attempts);
        if (bound >= 0 && down + wait > bound) wait = bound - down; /* a last try at the bound */
        nap(s, wait);
        if (halted(s)) return 1;
        s->attempts++;
        if (reopen(s, s->last_why, sizeof s->last_why) == 0) {
            s->reopened = 1;
            return 0;
        }
    }
}

int osp_source_read(osp_source_t *s, osp_image_t *rgb, osp_frame_meta_t *meta, char *err,
                    size_t errlen) {
    char why[256];
    for (;;) {
        if (halted(s)) return 0;
        if (!s->v) {
            int rc = reconnect(s, err, errlen);
            if (rc) return rc > 0 ? 0 : rc;
        }
        int r = osp_video_read(s->v, rgb, why, sizeof why);
        if (r == 1) {
            double now = osp_now_s();
            if (s->reopened) {
                /* frames due strictly between the last one and this one */
                int64_t lost = s->last_frame > 0 ? frames_in(s, now - s->last_frame) : 0;
                if (lost > 0) lost--;
                s->stats.reconnects++;
                s->stats.frames_lost += lost;
                osp_source_event_t e = {.kind = OSP_SOURCE_RECONNECT,
                                        .reason = "reopened",
                                        .frames_lost = lost,
                                        .down_s = now - s->drop_at,
                                        .attempts = s->attempts};
                report(s, &e);
                s->next_index += lost;
                s->reopened = 0;
            }
            s->last_frame = now;
            meta->index = s->next_index++;
            meta->pts = s->fps > 0 ? (double)meta->index / s->fps : 0;
            meta->captured = now;
            return 1;
        }
        if (halted(s)) return 0;
        if (!s->live) {
            if (r == 0) return 0;
            snprintf(err, errlen, "%s", why);
            return OSP_SOURCE_EINPUT;
        }
        if (s->reopened) {
            /* opened but no frame came: still the same drop, still bounded */
            osp_video_close(s->v);
            s->v = NULL;
            s->reopened = 0;
            snprintf(s->last_why, sizeof s->last_why, "%s",
                     r < 0 ? why : "the stream ended before a frame");
            continue;
        }
        dropped(s, r < 0 ? why : "the stream ended");
    }
}

const char *osp_source_event_name(osp_source_event_kind_t k) {
    switch (k) {
    case OSP_SOURCE_DROP: return "drop";
    case OSP_SOURCE_RECONNECT: return "reconnect";
    default: return "gave-up";
    }
}

void osp_source_event_text(const osp_source_event_t *e, char *buf, size_t n) {
    switch (e->kind) {
    case OSP_SOURCE_DROP:
        if (e->retry_in_s > 0)
            snprintf(buf, n, "%s: dropped after frame %lld (%s); reconnecting, first try in %.1f s",
                     e->name, (long long)e->frame, e->reason, e->retry_in_s);
        else
            snprintf(buf, n, "%s: dropped after frame %lld (%s)", e->name, (long long)e->frame,
                     e->reason);
        break;
    case OSP_SOURCE_RECONNECT:
        snprintf(buf, n, "%s: reconnected after %.1f s (%d attempt%s), %lld frames lost", e->name,
                 e->down_s, e->attempts, e->attempts == 1 ? "" : "s", (long long)e->frames_lost);
        break;
    default:
        snprintf(buf, n, "%s: gave up reconnecting after %.1f s (%d attempt%s; last: %s)", e->name,
                 e->down_s, e->attempts, e->attempts == 1 ? "" : "s", e->reason);
        break;
    }
}
