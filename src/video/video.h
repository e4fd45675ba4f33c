/*
 * video: RGB frames from one opening of a video file (AVI, MP4, MKV, … —
 * what FFmpeg's libavformat/libavcodec read), a network stream or a capture
 * device. One reader per opening, used by one thread at a time; it never
 * reopens anything (source.h does, for live streams). Messages name the
 * input with its credentials masked (url.h).
 */
#ifndef OSP_VIDEO_H
#define OSP_VIDEO_H

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"

typedef struct osp_video osp_video_t;

typedef struct {
    int width, height;
    double fps;     /* 0 when unknown */
    int64_t frames; /* as the container declares it; 0 when unknown */
    char codec[32];
    int has_duration; /* the container declares a duration (a file, a VOD stream) */
} osp_video_info_t;

typedef struct {
    const char *format;  /* an FFmpeg input format ("video4linux2"); NULL: probe */
    int rtsp_udp;        /* rtsp:// over UDP; default TCP (no loss, passes NAT) */
    double io_timeout_s; /* an open, or a read, blocked longer than this fails; 0: never */
    /* polled during blocking calls (any thread's flag, read atomically):
     * nonzero makes them return at once; may be NULL */
    int (*stopped)(void *ctx);
    void *stop_ctx;
    /* The most bytes one packet (an MJPEG part, an RTSP frame) may take;
     * 0: OSP_VIDEO_MAX_PACKET. Read through an AVIOContext (HTTP, files,
     * stdin), a packet is refused once this many bytes have come without
     * it being whole; else (RTSP) once it is whole. */
    size_t max_packet;
    /* Read the bytes from this function instead of opening path (which then
     * only names the input in messages; format names the demuxer, e.g.
     * "mpjpeg"). It returns how many bytes it put in buf (at most n), 0 at
     * the end, negative on an error. The bytes go through FFmpeg's buffered
     * reader as a network stream's do, with the same bound, checked before
     * every call as FFmpeg checks it before every read of a socket. */
    int (*read)(void *ctx, uint8_t *buf, int n);
    void *read_ctx;
    /* The decoder's threads (FFmpeg's thread_count, frame and slice
     * threading as the codec allows); 0 or 1: one, the caller's own */
    int decode_threads;
    /* Hand 4:2:0 frames on as decoded (OSP_PIX_I420, or OSP_PIX_J420 at
     * JPEG's full range; image.h), not converted to RGB; frames of other
     * formats are converted still. For a reader that looks at the luma
     * before the pixels (the motion gate), and converts only the frames a
     * model reads. */
    int yuv420;
} osp_video_opts_t;

#define OSP_VIDEO_MAX_PACKET (64u << 20) /* as ospreyd's default --max-frame */
/* The most pixels a decoded frame may have (an 8K frame has 33 million),
 * as many as the server holds of a picture whole. A stream's frames are
 * checked as their headers are read, before the decoder allocates them: a
 * JPEG of a few hundred bytes may say it is 8000 x 27000. */
#define OSP_VIDEO_MAX_PIXELS 50000000
/* What a read may take past max_packet before it is stopped: the part's own
 * header lines and the demuxer's look-ahead for the next boundary (a packet
 * handed on is never larger than max_packet). */
#define OSP_VIDEO_PACKET_SLACK (16u << 10)

/* Open a file (or URL) with FFmpeg's defaults. On failure returns a negative
 * code and a reason in err; *out is the caller's (osp_video_close). */
int osp_video_open(const char *path, osp_video_t **out, char *err, size_t errlen);
/* The same with options (opts may be NULL). */
int osp_video_open_opts(const char *path, const osp_video_opts_t *opts, osp_video_t **out,
                        char *err, size_t errlen);
void osp_video_close(osp_video_t *v);
const osp_video_info_t *osp_video_info(const osp_video_t *v);

/* Decode the next frame into rgb (RGB, or 4:2:0 as opts.yuv420 says; a
 * reused buffer). Returns 1 for a
 * frame, 0 at the end of the stream, negative on an error. A stream that
 * ends well short of the frame count its container declares is reported as
 * an error (a truncated file), after every decodable frame was returned. */
int osp_video_read(osp_video_t *v, osp_image_t *rgb, char *err, size_t errlen);

/* The next packet of the video stream, undecoded, as osp_video_read would
 * decode it (same bound, same checks): 1 with *data and *size valid until
 * the next call or osp_video_close, 0 at the end, negative on an error with
 * the reason in err. Use either this or osp_video_read on one opening. */
int osp_video_packet(osp_video_t *v, const uint8_t **data, size_t *size, char *err, size_t errlen);

/* Frames returned so far. */
int64_t osp_video_position(const osp_video_t *v);

/* Is this path's content a video rather than a still image? (by content:
 * JPEG and PNG magic bytes mean an image). */
int osp_path_is_image(const char *path);

#endif
