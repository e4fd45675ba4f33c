/*
 * url: what kind of source an `osprey` input names, and its name as osprey
 * prints it. Pure string functions: no I/O, no allocation.
 *
 * Cameras carry their login in the URL (rtsp://admin:secret@cam/...) or in
 * its query (?user=admin&password=secret); osprey never prints either. Every
 * message, record and summary that names a source uses osp_url_mask.
 */
#ifndef OSP_VIDEO_URL_H
#define OSP_VIDEO_URL_H

#include <stddef.h>

typedef enum {
    OSP_URL_FILE,    /* a path (an image or a video file) */
    OSP_URL_STDIN,   /* "-": a stream on standard input */
    OSP_URL_DEVICE,  /* /dev/video*: a V4L2 capture device */
    OSP_URL_RTSP,    /* rtsp://, rtsps:// */
    OSP_URL_NETWORK, /* http(s):// (MJPEG, HLS), rtmp://, srt://, udp://, tcp:// */
    OSP_URL_UNKNOWN  /* scheme://... that osprey does not read */
} osp_url_kind_t;

/* The kind, from the text alone (a character device at another path is
 * found by the caller with stat). */
osp_url_kind_t osp_url_kind(const char *input);

/* Is this kind read as a stream that can drop (and be reopened)? */
int osp_url_is_stream(osp_url_kind_t k);

/* Write input with its credentials replaced: the userinfo before '@' becomes
 * "***", and the value of each query parameter whose name says it is a
 * secret (password, pass, pwd, passwd, token, key, secret, auth, signature)
 * becomes "***". Always NUL-terminates out (when n > 0); returns out. */
char *osp_url_mask(const char *input, char *out, size_t n);

/* scheme://[user[:password]@]host[:port][/path] taken apart, the user and
 * password percent-decoded (so a password may hold '@', ':' or '/' as %40,
 * %3A, %2F; a literal '@' is also read: the last one ends the userinfo).
 * port is 0 when the URL gives none; path excludes the '/' that starts it.
 * A plain value: the caller owns it and should clear the password (with
 * osp_url_forget) once used. */
typedef struct {
    char scheme[16];
    char user[256], password[256];
    int has_user, has_password;
    char host[256]; /* an IPv6 literal without its brackets */
    int port;
    char path[768];
} osp_url_parts_t;

/* 0, or -1 when input is not such a URL (no scheme, an empty host, a port
 * outside 1-65535, a field too long, a bad %XX). Never writes the password
 * anywhere but *out. */
int osp_url_split(const char *input, osp_url_parts_t *out);

/* Overwrite the secret fields of p (memset that the compiler keeps). */
void osp_url_forget(osp_url_parts_t *p);

#endif
