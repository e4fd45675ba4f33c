/*
 * libFuzzer target for an MJPEG stream as a camera or a lying HTTP server
 * sends it: the bytes reach FFmpeg's mpjpeg demuxer through
 * osp_video_open_opts's read seam (src/video/video.c), in pieces whose
 * sizes the input chooses, with a --max-frame bound the input chooses, and
 * come out as osprey hands them on: packets (osp_video_packet) or decoded
 * frames (osp_video_read).
 *
 * Input: [u8 control][4 x u8 piece size][the rest].
 *   control bits 0-2: the bound, 256 << n bytes; bit 3: decode the frames
 *   instead of taking the packets; bit 4: the rest is a list of parts to
 *   build the stream from (below), else it is the stream itself.
 *   piece size: (b & 127) + 1 bytes, times 37 when b & 128; the reads
 *   cycle through the four.
 *   a part: [u8 flags][u16 LE length][length bytes of JPEG data]; flags
 *   bit 0: a Content-Length header; bit 1: the stream ends inside this
 *   part's data, after length * (flags >> 2) / 64 of its bytes.
 *
 * Checks, always: no packet larger than the bound is handed on; an error
 * carries a message. On a built stream, also: the packets are the parts'
 * data, whole, in order; a part cut by the end of the stream gives no
 * packet, with a Content-Length or without one (then it ends where the
 * stream does, before its boundary); the stream is refused as past
 * --max-frame only when a part is larger than the bound; and, opened, it
 * hands on every whole part before the first one past the bound.
 *
 * Speed: FFmpeg's log is quieted and its formats looked up once, and the
 * built stream's buffer lives for the whole run; what is left per input is
 * FFmpeg's own set-up of each opening, the path a network source takes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libavformat/avformat.h>
#include <libavutil/log.h>

#include "check.h"
#include "video/video.h"

#define MAX_PARTS 64

typedef struct {
    size_t off, len; /* the data in the built stream */
    int with_length; /* Content-Length header */
    int cut;         /* the stream ends inside it */
    size_t kept;     /* when cut: the bytes of it the stream has */
} part_t;

typedef struct {
    const uint8_t *d;
    size_t n, at;
    int piece[4], next;
} reader_t;

static int feed(void *ctx, uint8_t *buf, int n) {
    reader_t *r = ctx;
    size_t want = (size_t)r->piece[r->next++ & 3];
    if (want > (size_t)n) want = (size_t)n;
    if (want > r->n - r->at) want = r->n - r->at;
    memcpy(buf, r->d + r->at, want);
    r->at += want;
    return (int)want;
}

static void put(uint8_t *out, size_t *n, const void *s, size_t len) {
    memcpy(out + *n, s, len);
    *n += len;
}

/* The multipart stream of the parts the input lists, into out (big enough:
 * 64 bytes of headers a part, plus the input). */
static size_t build(const uint8_t *d, size_t n, uint8_t *out, part_t *parts, int *nparts) {
    size_t o = 0, at = 0;
    int np = 0, cut = 0;
    while (at + 3 <= n && np < MAX_PARTS && !cut) {
        int flags = d[at];
        size_t len = (size_t)d[at + 1] | (size_t)d[at + 2] << 8;
        at += 3;
        if (len > n - at) len = n - at;
        if (len == 0) break; /* "Content-Length: 0" means no length */
        part_t *p = &parts[np++];
        p->with_length = flags & 1;
        p->cut = cut = (flags & 2) != 0;
        char head[80];
        int h = p->with_length
                    ? snprintf(head, sizeof head,
                               "--osp\r\nContent-Type: image/jpeg\r\nContent-Length: %zu\r\n\r\n", len)
                    : snprintf(head, sizeof head, "--osp\r\nContent-Type: image/jpeg\r\n\r\n");
        put(out, &o, head, (size_t)h);
        p->off = o;
        p->len = len;
        put(out, &o, d + at, len);
        at += len;
        /* a part without a length ends at the first CR LF "--": none inside */
        if (!p->with_length)
            for (size_t i = p->off; i < o; i++)
                if (out[i] == '\r') out[i] = 'R';
        if (cut) {
            p->kept = len * (size_t)(flags >> 2) / 64;
            o = p->off + p->kept;
        } else {
            put(out, &o, "\r\n", 2);
        }
    }
    if (!cut) put(out, &o, "--osp--\r\n", 9);
    *nparts = np;
    return o;
}

static int names_bound(const char *err) { return strstr(err, "(--max-frame)") != NULL; }

#define MAX_SIZE 200000
/* the built stream: the input and 80 bytes of header lines a part */
static uint8_t stream_buf[MAX_SIZE + 80 * MAX_PARTS];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    av_log_set_level(AV_LOG_QUIET);
    CHECK(av_find_input_format("mpjpeg"));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 5 || size > MAX_SIZE) return 0;
    size_t bound = (size_t)256 << (data[0] & 7);
    int decode = data[0] & 8, built = data[0] & 16;
    reader_t r = {0};
    for (int i = 0; i < 4; i++)
        r.piece[i] = ((data[1 + i] & 127) + 1) * (data[1 + i] & 128 ? 37 : 1);
    part_t parts[MAX_PARTS];
    int nparts = 0;
    uint8_t *stream = NULL;
    if (built) {
        stream = stream_buf;
        r.n = build(data + 5, size - 5, stream, parts, &nparts);
        r.d = stream;
    } else {
        r.d = data + 5;
        r.n = size - 5;
    }
    /* the first part past the bound, and how many whole parts come before it */
    int big = -1, whole = 0;
    for (int i = 0; i < nparts && big < 0; i++) {
        if (parts[i].len > bound)
            big = i;
        else if (!parts[i].cut)
            whole++;
    }

    osp_video_opts_t o = {.format = "mpjpeg", .max_packet = bound, .read = feed, .read_ctx = &r};
    osp_video_t *v = NULL;
    char err[256] = "";
    if (osp_video_open_opts("fuzz.mjpg", &o, &v, err, sizeof err) != 0) {
        CHECK(err[0] != '\0');
        if (built && names_bound(err)) CHECK(big >= 0);
        return 0;
    }
    int rc, got = 0;
    if (decode) {
        osp_image_t img = {0};
        while ((rc = osp_video_read(v, &img, err, sizeof err)) == 1 && got < 64) {
            CHECK(img.width > 0 && img.height > 0 && img.data);
            got++;
        }
        osp_image_free(&img);
    } else {
        const uint8_t *p;
        size_t n;
        err[0] = '\0';
        while ((rc = osp_video_packet(v, &p, &n, err, sizeof err)) == 1) {
            CHECK(n <= bound);
            if (built) {
                CHECK(got < nparts);
                const part_t *want = &parts[got];
                CHECK(!want->cut); /* cut, with a length or without: never handed on */
                CHECK(n == want->len && memcmp(p, stream + want->off, n) == 0);
            }
            got++;
        }
        if (built && !(rc < 0 && names_bound(err))) CHECK(got >= whole);
    }
    if (rc < 0) {
        CHECK(err[0] != '\0');
        if (built && names_bound(err)) CHECK(big >= 0);
    }
    osp_video_close(v);
    return 0;
}
