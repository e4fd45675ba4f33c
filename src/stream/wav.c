/* stream: a WAV reader for PCM 16-bit mono and stereo, any rate, to mono
 * float samples at the rate a model wants (linear resampling). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream.h"

#define WAV_MAX_BYTES ((size_t)1 << 31) /* 2 GiB: RIFF's own 32-bit limit */

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int osp_wav_parse(const uint8_t *buf, size_t len, int rate_out, float **samples, size_t *n,
                  int *rate_in, char *err, size_t errlen) {
    *samples = NULL;
    *n = 0;
    if (len < 12 || memcmp(buf, "RIFF", 4) != 0 || memcmp(buf + 8, "WAVE", 4) != 0) {
        snprintf(err, errlen, "not a WAV file (no RIFF/WAVE header)");
        return OSP_STREAM_EINVAL;
    }
    if (rate_out <= 0) {
        snprintf(err, errlen, "bad output rate %d", rate_out);
        return OSP_STREAM_EINVAL;
    }
    int have_fmt = 0, channels = 0, bits = 0;
    uint32_t rate = 0;
    const uint8_t *data = NULL;
    size_t data_len = 0;
    size_t pos = 12;
    while (pos + 8 <= len) {
        const uint8_t *id = buf + pos;
        size_t size = le32(buf + pos + 4);
        size_t body = pos + 8, left = len - body;
        if (memcmp(id, "fmt ", 4) == 0) {
            if (size < 16 || size > left) {
                snprintf(err, errlen, "WAV fmt chunk is truncated");
                return OSP_STREAM_EINVAL;
            }
            unsigned tag = le16(buf + body);
            channels = le16(buf + body + 2);
            rate = le32(buf + body + 4);
            bits = le16(buf + body + 14);
            /* WAVE_FORMAT_EXTENSIBLE: the sub-format GUID starts with the tag */
            if (tag == 0xFFFE && size >= 40) tag = le16(buf + body + 24);
            if (tag != 1) {
                snprintf(err, errlen,
                         "unsupported WAV encoding (format tag %u); only PCM 16-bit is read", tag);
                return OSP_STREAM_EINVAL;
            }
            have_fmt = 1;
        } else if (memcmp(id, "data", 4) == 0) {
            if (size > left) {
                /* a header written before the length was known (streaming
                 * writers put 0xFFFFFFFF or similar): the data runs to the end */
                if (size < 0x7FFFF000u) {
                    snprintf(err, errlen, "WAV data is truncated (%zu of %zu bytes)", left, size);
                    return OSP_STREAM_EINVAL;
                }
                size = left;
            }
            data = buf + body;
            data_len = size;
            break;
        }
        if (size > left) break;
        pos = body + size + (size & 1);
    }
    if (!have_fmt) {
        snprintf(err, errlen, "WAV file has no fmt chunk before its data");
        return OSP_STREAM_EINVAL;
    }
    if (bits != 16 || (channels != 1 && channels != 2)) {
        snprintf(err, errlen,
                 "unsupported WAV format: %d-bit, %d channels (only PCM 16-bit mono or stereo)",
                 bits, channels);
        return OSP_STREAM_EINVAL;
    }
    if (rate == 0 || rate > 1000000) {
        snprintf(err, errlen, "bad WAV sample rate %u", rate);
        return OSP_STREAM_EINVAL;
    }
    if (!data) {
        snprintf(err, errlen, "WAV file has no data chunk");
        return OSP_STREAM_EINVAL;
    }
    size_t n_in = data_len / (size_t)(2 * channels);
    size_t n_out = (size_t)((double)n_in * rate_out / rate);
    if (n_in > 0 && n_out == 0) n_out = 1;
    float *mono = malloc((n_in ? n_in : 1) * sizeof *mono);
    float *out = rate == (uint32_t)rate_out ? mono : malloc((n_out ? n_out : 1) * sizeof *out);
    if (!mono || !out) {
        free(mono);
        if (out != mono) free(out);
        snprintf(err, errlen, "out of memory reading %zu WAV samples", n_in);
        return OSP_STREAM_ENOMEM;
    }
    for (size_t i = 0; i < n_in; i++) {
        const uint8_t *p = data + i * (size_t)(2 * channels);
        float v = (float)(int16_t)le16(p);
        if (channels == 2) v = 0.5f * (v + (float)(int16_t)le16(p + 2));
        mono[i] = v / 32768.0f;
    }
    if (out != mono) {
        double step = (double)rate / rate_out;
        for (size_t i = 0; i < n_out; i++) {
            double x = (double)i * step;
            size_t i0 = (size_t)x;
            if (i0 >= n_in) i0 = n_in - 1;
            size_t i1 = i0 + 1 < n_in ? i0 + 1 : i0;
            float f = (float)(x - (double)i0);
            out[i] = mono[i0] * (1.0f - f) + mono[i1] * f;
        }
        free(mono);
    } else {
        n_out = n_in;
    }
    *samples = out;
    *n = n_out;
    if (rate_in) *rate_in = (int)rate;
    return OSP_STREAM_OK;
}

int osp_wav_read(const char *path, int rate_out, float **samples, size_t *n, int *rate_in,
                 char *err, size_t errlen) {
    *samples = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return OSP_STREAM_EINVAL;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = OSP_STREAM_OK;
    for (;;) {
        if (len == cap) {
            if (cap >= WAV_MAX_BYTES) {
                snprintf(err, errlen, "%s is larger than a WAV file can be", path);
                rc = OSP_STREAM_EINVAL;
                goto done;
            }
            size_t ncap = cap ? cap * 2 : 1 << 16;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                snprintf(err, errlen, "out of memory reading %s", path);
                rc = OSP_STREAM_ENOMEM;
                goto done;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read %s", path);
        rc = OSP_STREAM_EINVAL;
        goto done;
    }
    char why[200];
    rc = osp_wav_parse(buf, len, rate_out, samples, n, rate_in, why, sizeof why);
    if (rc != 0) snprintf(err, errlen, "%s: %s", path, why);
done:
    free(buf);
    fclose(f);
    return rc;
}
