/* Video files, streams and devices through libavformat/libavcodec (and
 * libavdevice for V4L2), converted to RGB by libyuv or swscale. */
#include "video/video.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include <libavcodec/avcodec.h>
#include <libavdevice/avdevice.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
#include <libyuv.h>

#include "base/clock.h"
#include "video/url.h"

struct osp_video {
    AVFormatContext *fmt;
    AVCodecContext *dec;
    struct SwsContext *sws;
    AVPacket *pkt;
    AVFrame *frame;
    int stream;
    int draining; /* the demuxer is done; flushing the decoder */
    int finished;
    int read_error; /* the demuxer stopped on an error, not at the end */
    int64_t returned;
    osp_video_info_t info;
    /* FFmpeg polls interrupt() during every blocking open and read: a
     * camera that goes silent must not hang the reader forever */
    int (*stopped)(void *ctx);
    void *stop_ctx;
    double io_timeout, deadline; /* monotonic seconds; 0: none */
    /* A packet that never ends (an MJPEG part with no boundary was read to
     * ~256 MB, issue 32): the stream position when the current read began,
     * and the bound past which interrupt() stops it. */
    int64_t mark;
    size_t max_packet;
    int too_big;
    /* a stream read from the caller's function (osp_video_opts_t.read) */
    AVIOContext *io;
    int (*read)(void *ctx, uint8_t *buf, int n);
    void *read_ctx;
    int yuv420;     /* 4:2:0 frames handed on as decoded (osp_video_opts_t) */
    char why[128];  /* the demuxer's last error */
    char name[256]; /* the input, masked: used in every message */
};

/* FFmpeg polls this before every read of the underlying protocol, so a
 * read that passes max_packet stops within one protocol read of it. */
static int interrupt(void *arg) {
    osp_video_t *v = arg;
    if (v->stopped && v->stopped(v->stop_ctx)) return 1;
    /* counted from where the read began: the packet's header lines and the
     * demuxer's look-ahead come with it (the slack); the packet itself is
     * held to max_packet once whole (demux) */
    if (v->fmt && v->fmt->pb &&
        v->fmt->pb->pos - v->mark > (int64_t)(v->max_packet + OSP_VIDEO_PACKET_SLACK)) {
        v->too_big = 1;
        return 1;
    }
    return v->deadline > 0 && osp_now_s() > v->deadline;
}

/* The read callback of a caller's stream: the interrupt check first, as
 * FFmpeg's protocols make it before every read of a socket. */
static int io_read(void *arg, uint8_t *buf, int n) {
    osp_video_t *v = arg;
    if (interrupt(v)) return AVERROR_EXIT;
    int got = v->read(v->read_ctx, buf, n);
    return got > 0 ? got : got == 0 ? AVERROR_EOF : AVERROR(EIO);
}

#define IO_BUFFER 32768 /* as FFmpeg's own network reads */

static int open_io(osp_video_t *v) {
    uint8_t *buf = av_malloc(IO_BUFFER);
    if (!buf) return -1;
    if (!(v->io = avio_alloc_context(buf, IO_BUFFER, 0, v, io_read, NULL, NULL))) {
        av_free(buf);
        return -1;
    }
    v->io->seekable = 0;
    v->fmt->pb = v->io;
    v->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    return 0;
}

/* Before each open or read: its deadline, and its bound counted afresh
 * (a demuxer's seek while it opened, to a file's index at its end, is no
 * packet of the reads after it). */
static void arm(osp_video_t *v) {
    v->deadline = v->io_timeout > 0 ? osp_now_s() + v->io_timeout : 0;
    v->mark = v->fmt && v->fmt->pb ? v->fmt->pb->pos : 0;
    v->too_big = 0;
}

static pthread_once_t devices_once = PTHREAD_ONCE_INIT;
static void register_devices(void) { avdevice_register_all(); }

static void av_err(int code, char *buf, size_t n) {
    char e[AV_ERROR_MAX_STRING_SIZE] = {0};
    av_strerror(code, e, sizeof e);
    snprintf(buf, n, "%s", e);
}

int osp_path_is_image(const char *path) {
    unsigned char m[8] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(m, 1, sizeof m, f);
    fclose(f);
    if (n >= 3 && m[0] == 0xFF && m[1] == 0xD8 && m[2] == 0xFF) return 1;
    if (n >= 8 && memcmp(m, "\x89PNG\r\n\x1a\n", 8) == 0) return 1;
    return 0;
}

int osp_video_open(const char *path, osp_video_t **out, char *err, size_t errlen) {
    return osp_video_open_opts(path, NULL, out, err, errlen);
}

/* Why an open failed, in words a person can act on. */
static void open_reason(osp_video_t *v, int rc, char *why, size_t n) {
    if (v->too_big)
        snprintf(why, n, "a packet of more than %zu bytes (--max-frame)", v->max_packet);
    else if (rc == AVERROR_EXIT && v->stopped && v->stopped(v->stop_ctx))
        snprintf(why, n, "stopped");
    else if (rc == AVERROR_EXIT)
        snprintf(why, n, "no answer within %.0f s", v->io_timeout);
    else
        av_err(rc, why, n);
}

int osp_video_open_opts(const char *path, const osp_video_opts_t *o, osp_video_t **out, char *err,
                        size_t errlen) {
    *out = NULL;
    char why[128];
    int rc;
    AVDictionary *dict = NULL;
    /* FFmpeg's own lines only when fatal; a caller that quieted them
     * (AV_LOG_QUIET: the fuzz target) keeps them quiet */
    if (av_log_get_level() > AV_LOG_FATAL) av_log_set_level(AV_LOG_FATAL);
    osp_video_t *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    osp_url_mask(path, v->name, sizeof v->name);
    const char *name = v->name;
    const AVInputFormat *ifmt = NULL;
    v->max_packet = o && o->max_packet ? o->max_packet : OSP_VIDEO_MAX_PACKET;
    if (o) {
        v->read = o->read;
        v->read_ctx = o->read_ctx;
        v->stopped = o->stopped;
        v->stop_ctx = o->stop_ctx;
        v->io_timeout = o->io_timeout_s;
        v->yuv420 = o->yuv420;
        if (o->format) {
            pthread_once(&devices_once, register_devices);
            if (!(ifmt = av_find_input_format(o->format))) {
                snprintf(err, errlen, "cannot open %s: this FFmpeg has no '%s' input", name,
                         o->format);
                goto fail;
            }
        }
        if (osp_url_kind(path) == OSP_URL_RTSP)
            av_dict_set(&dict, "rtsp_transport", o->rtsp_udp ? "udp" : "tcp", 0);
    }
    if (!(v->fmt = avformat_alloc_context())) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    v->fmt->interrupt_callback.callback = interrupt;
    v->fmt->interrupt_callback.opaque = v;
    if (v->read && open_io(v)) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    arm(v);
    /* on failure avformat_open_input frees the context */
    if ((rc = avformat_open_input(&v->fmt, path, ifmt, &dict)) < 0) {
        open_reason(v, rc, why, sizeof why);
        /* the capability query of a device that is no camera (a serial
         * port, /dev/null) */
        if (ifmt && rc == AVERROR(ENOTTY))
            snprintf(err, errlen, "cannot open device %s: not a V4L2 video device (%s)", name, why);
        else
            snprintf(err, errlen, "cannot open video %s: %s", name, why);
        goto fail;
    }
    arm(v);
    /* the frames decoded to learn the streams are held to the same size */
    AVDictionary **probe = av_calloc(v->fmt->nb_streams ? v->fmt->nb_streams : 1, sizeof *probe);
    if (!probe) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    for (unsigned i = 0; i < v->fmt->nb_streams; i++)
        av_dict_set_int(&probe[i], "max_pixels", OSP_VIDEO_MAX_PIXELS, 0);
    rc = avformat_find_stream_info(v->fmt, probe);
    for (unsigned i = 0; i < v->fmt->nb_streams; i++) av_dict_free(&probe[i]);
    av_free(probe);
    if (rc < 0) {
        open_reason(v, rc, why, sizeof why);
        snprintf(err, errlen, "cannot read video %s: %s", name, why);
        goto fail;
    }
    const AVCodec *codec = NULL;
    v->stream = av_find_best_stream(v->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (v->stream < 0 || !codec) {
        snprintf(err, errlen, "cannot read video %s: no decodable video stream", name);
        goto fail;
    }
    AVStream *st = v->fmt->streams[v->stream];
    if (!(v->dec = avcodec_alloc_context3(codec)) ||
        avcodec_parameters_to_context(v->dec, st->codecpar) < 0) {
        snprintf(err, errlen, "cannot read video %s: decoder set-up failed", name);
        goto fail;
    }
    /* one by default: the caller's pipeline owns the cores; more made as
     * the codec opens (frame threads add a frame of delay each) */
    v->dec->thread_count = o && o->decode_threads > 1 ? o->decode_threads : 1;
    v->dec->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    v->dec->max_pixels = OSP_VIDEO_MAX_PIXELS; /* refused before it is allocated */
    if ((rc = avcodec_open2(v->dec, codec, NULL)) < 0) {
        av_err(rc, why, sizeof why);
        snprintf(err, errlen, "cannot decode video %s: %s", name, why);
        goto fail;
    }
    if (v->dec->width <= 0 || v->dec->height <= 0 || v->dec->width > 16384 || v->dec->height > 16384) {
        snprintf(err, errlen, "cannot read video %s: bad frame size %dx%d", name, v->dec->width,
                 v->dec->height);
        goto fail;
    }
    if (!(v->pkt = av_packet_alloc()) || !(v->frame = av_frame_alloc())) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    v->info.width = v->dec->width;
    v->info.height = v->dec->height;
    AVRational fr = st->avg_frame_rate.num ? st->avg_frame_rate : st->r_frame_rate;
    v->info.fps = fr.den ? av_q2d(fr) : 0;
    v->info.frames = st->nb_frames > 0 ? st->nb_frames : 0;
    snprintf(v->info.codec, sizeof v->info.codec, "%s", codec->name);
    v->info.has_duration = v->fmt->duration != AV_NOPTS_VALUE && v->fmt->duration > 0;
    av_dict_free(&dict);
    *out = v;
    return 0;
fail:
    /* a read stopped by the bound can surface as another failure (no
     * stream, no frame size): name the cause */
    if (v->too_big)
        snprintf(err, errlen, "cannot read video %s: a packet of more than %zu bytes (--max-frame)",
                 name, v->max_packet);
    av_dict_free(&dict);
    osp_video_close(v);
    return -1;
}

void osp_video_close(osp_video_t *v) {
    if (!v) return;
    sws_freeContext(v->sws);
    av_frame_free(&v->frame);
    av_packet_free(&v->pkt);
    avcodec_free_context(&v->dec);
    avformat_close_input(&v->fmt);
    if (v->io) av_freep(&v->io->buffer); /* a caller's stream: ours to free */
    avio_context_free(&v->io);
    free(v);
}

const osp_video_info_t *osp_video_info(const osp_video_t *v) { return &v->info; }
int64_t osp_video_position(const osp_video_t *v) { return v->returned; }

/* The decoded frame into rgb: RGB, or its 4:2:0 planes with yuv420. */
static int to_image(osp_video_t *v, osp_image_t *rgb, char *err, size_t errlen) {
    AVFrame *f = v->frame;
    if (f->width <= 0 || f->height <= 0 || f->width > 16384 || f->height > 16384 ||
        (int64_t)f->width * f->height > OSP_VIDEO_MAX_PIXELS) {
        snprintf(err, errlen, "video frame has a bad size %dx%d", f->width, f->height);
        return -1;
    }
    int yuv = v->yuv420 && (f->format == AV_PIX_FMT_YUV420P || f->format == AV_PIX_FMT_YUVJ420P);
    size_t stride = (size_t)f->width * (yuv ? 1 : 3);
    /* (the sides were checked above, as osp_yuv420_bytes wants them) */
    size_t need = yuv ? osp_yuv420_bytes(f->width, f->height) : stride * (size_t)f->height;
    if (rgb->cap < need) {
        uint8_t *d = realloc(rgb->data, need);
        if (!d) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        rgb->data = d;
        rgb->cap = need;
    }
    rgb->width = f->width;
    rgb->height = f->height;
    rgb->stride = (int)stride;
    if (yuv) { /* the planes as they are, tightly packed (image.h's I420) */
        int cw = (f->width + 1) / 2, ch = (f->height + 1) / 2;
        uint8_t *u = rgb->data + stride * (size_t)f->height, *w = u + (size_t)cw * (size_t)ch;
        if (I420Copy(f->data[0], f->linesize[0], f->data[1], f->linesize[1], f->data[2],
                     f->linesize[2], rgb->data, (int)stride, u, cw, w, cw, f->width, f->height)) {
            snprintf(err, errlen, "video frame of %dx%d could not be copied", f->width, f->height);
            return -1;
        }
        rgb->fmt = f->format == AV_PIX_FMT_YUVJ420P ? OSP_PIX_J420 : OSP_PIX_I420;
        return 0;
    }
    rgb->fmt = OSP_PIX_RGB;
    /* libyuv converts the common 4:2:0 case several times faster than
     * swscale (libyuv's "RAW" is R,G,B in memory) */
    if (f->format == AV_PIX_FMT_YUV420P &&
        I420ToRAW(f->data[0], f->linesize[0], f->data[1], f->linesize[1], f->data[2],
                  f->linesize[2], rgb->data, (int)stride, f->width, f->height) == 0)
        return 0;
    if (f->format == AV_PIX_FMT_YUVJ420P &&
        J420ToRAW(f->data[0], f->linesize[0], f->data[1], f->linesize[1], f->data[2],
                  f->linesize[2], rgb->data, (int)stride, f->width, f->height) == 0)
        return 0;
    v->sws = sws_getCachedContext(v->sws, f->width, f->height, (enum AVPixelFormat)f->format, f->width,
                                  f->height, AV_PIX_FMT_RGB24, SWS_BILINEAR, NULL, NULL, NULL);
    if (!v->sws) {
        snprintf(err, errlen, "cannot convert video frames of format %d to RGB", f->format);
        return -1;
    }
    uint8_t *dst[4] = {rgb->data, NULL, NULL, NULL};
    int dst_stride[4] = {(int)stride, 0, 0, 0};
    sws_scale(v->sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst, dst_stride);
    return 0;
}

/* A file that ends this far short of its declared frame count was cut. */
static int truncated(const osp_video_t *v) {
    if (v->read_error) return 1;
    return v->info.frames > 0 && v->returned + 2 < v->info.frames;
}

static void corrupt(const osp_video_t *v, char *err, size_t errlen) {
    if (v->info.frames > 0)
        snprintf(err, errlen, "video is truncated or corrupt: it ends after %lld of %lld frames",
                 (long long)v->returned, (long long)v->info.frames);
    else /* a stream that does not say how long it is */
        snprintf(err, errlen, "video is corrupt: a frame could not be decoded (%lld were)",
                 (long long)v->returned);
}

/* The next packet of any stream into v->pkt, bounded: 0, or a negative
 * code (AVERROR_EOF at the end; on an error v->why says why). */
static int demux(osp_video_t *v) {
    arm(v);
    int rc = av_read_frame(v->fmt, v->pkt);
    if (rc >= 0 && ((size_t)v->pkt->size > v->max_packet || v->too_big)) {
        /* larger than allowed (what RTSP assembles is checked here), or
         * stopped by the bound: the part of it read so far is not handed on */
        av_packet_unref(v->pkt);
        v->too_big = 1;
        rc = AVERROR_INVALIDDATA;
    } else if (rc >= 0 && (v->pkt->flags & AV_PKT_FLAG_CORRUPT) && v->pkt->pos >= 0 &&
               v->fmt->pb && v->pkt->pos + v->pkt->size >= v->fmt->pb->pos) {
        /* shorter than it said it was (an MJPEG part's Content-Length) and
         * ending where the stream's bytes end: the stream ended inside it.
         * (FFmpeg flags a part without a length too when its look-ahead for
         * the boundary met the end; that part ends before the boundary.) */
        av_packet_unref(v->pkt);
        v->read_error = 1;
        if ((v->deadline > 0 && osp_now_s() > v->deadline) || (v->stopped && v->stopped(v->stop_ctx)))
            open_reason(v, AVERROR_EXIT, v->why, sizeof v->why); /* cut by us, not the peer */
        else
            snprintf(v->why, sizeof v->why, "truncated: the stream ended inside a packet");
        return AVERROR_INVALIDDATA;
    }
    if (rc < 0 && rc != AVERROR_EOF) {
        v->read_error = 1;
        open_reason(v, rc, v->why, sizeof v->why);
    }
    return rc;
}

int osp_video_packet(osp_video_t *v, const uint8_t **data, size_t *size, char *err, size_t errlen) {
    av_packet_unref(v->pkt);
    while (!v->finished) {
        int rc = demux(v);
        if (rc < 0) {
            v->finished = 1;
            if (rc == AVERROR_EOF) break;
            snprintf(err, errlen, "reading failed: %s", v->why);
            return -1;
        }
        if (v->pkt->stream_index == v->stream) {
            *data = v->pkt->data;
            *size = (size_t)v->pkt->size;
            return 1;
        }
        av_packet_unref(v->pkt);
    }
    return 0;
}

int osp_video_read(osp_video_t *v, osp_image_t *rgb, char *err, size_t errlen) {
    char why[128];
    if (v->finished) return 0;
    for (;;) {
        int rc = avcodec_receive_frame(v->dec, v->frame);
        if (rc == 0) {
            rc = to_image(v, rgb, err, errlen);
            av_frame_unref(v->frame);
            if (rc) return -1;
            v->returned++;
            return 1;
        }
        if (rc == AVERROR_EOF) {
            v->finished = 1;
            if (truncated(v)) {
                if (v->why[0])
                    snprintf(err, errlen, "reading failed after %lld frames: %s",
                             (long long)v->returned, v->why);
                else
                    corrupt(v, err, errlen);
                return -1;
            }
            return 0;
        }
        if (rc != AVERROR(EAGAIN)) v->read_error = 1; /* a damaged frame: skip it, remember */
        if (v->draining) {
            v->finished = 1;
            if (truncated(v)) {
                if (v->why[0])
                    snprintf(err, errlen, "reading failed after %lld frames: %s",
                             (long long)v->returned, v->why);
                else
                    snprintf(err, errlen, "video is corrupt: decoding failed after %lld frames",
                             (long long)v->returned);
                return -1;
            }
            return 0;
        }
        if (demux(v) < 0) {
            v->draining = 1;
            avcodec_send_packet(v->dec, NULL);
            continue;
        }
        if (v->pkt->stream_index == v->stream) {
            rc = avcodec_send_packet(v->dec, v->pkt);
            if (rc < 0 && rc != AVERROR(EAGAIN)) {
                av_err(rc, why, sizeof why);
                v->read_error = 1; /* corrupt packet: keep going, report at the end */
            }
        }
        av_packet_unref(v->pkt);
    }
}
