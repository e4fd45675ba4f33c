/*
 * video: a source of RGB frames from a video file (AVI, MP4, MKV, … — what
 * FFmpeg's libavformat/libavcodec read). One reader per file, used by one
 * thread at a time.
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
} osp_video_info_t;

/* Open a file. On failure returns a negative code and a reason in err. */
int osp_video_open(const char *path, osp_video_t **out, char *err, size_t errlen);
void osp_video_close(osp_video_t *v);
const osp_video_info_t *osp_video_info(const osp_video_t *v);

/* Decode the next frame into rgb (RGB, reused buffer). Returns 1 for a
 * frame, 0 at the end of the stream, negative on an error. A stream that
 * ends well short of the frame count its container declares is reported as
 * an error (a truncated file), after every decodable frame was returned. */
int osp_video_read(osp_video_t *v, osp_image_t *rgb, char *err, size_t errlen);

/* Frames returned so far. */
int64_t osp_video_position(const osp_video_t *v);

/* Is this path's content a video rather than a still image? (by content:
 * JPEG and PNG magic bytes mean an image). */
int osp_path_is_image(const char *path);

#endif
