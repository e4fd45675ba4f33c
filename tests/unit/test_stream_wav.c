/* The WAV reader (src/stream/wav.c): mono and stereo PCM 16-bit, linear
 * resampling, and a clear error for everything else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stream/stream.h"

static void put16(uint8_t *p, unsigned v) { p[0] = v & 0xff, p[1] = (v >> 8) & 0xff; }
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (v >> (8 * i)) & 0xff;
}

/* A canonical 44-byte header plus samples. Returns the length. */
static size_t make_wav(uint8_t *buf, unsigned tag, int channels, uint32_t rate, int bits,
                       const int16_t *samples, int n_values) {
    size_t data = (size_t)n_values * 2;
    memcpy(buf, "RIFF", 4);
    put32(buf + 4, (uint32_t)(36 + data));
    memcpy(buf + 8, "WAVEfmt ", 8);
    put32(buf + 16, 16);
    put16(buf + 20, tag);
    put16(buf + 22, (unsigned)channels);
    put32(buf + 24, rate);
    put32(buf + 28, rate * (uint32_t)channels * (uint32_t)bits / 8);
    put16(buf + 32, (unsigned)(channels * bits / 8));
    put16(buf + 34, (unsigned)bits);
    memcpy(buf + 36, "data", 4);
    put32(buf + 40, (uint32_t)data);
    for (int i = 0; i < n_values; i++) put16(buf + 44 + 2 * i, (uint16_t)samples[i]);
    return 44 + data;
}

static void test_mono_same_rate(void **state) {
    (void)state;
    int16_t x[4] = {0, 16384, -16384, -32768};
    uint8_t buf[64];
    size_t len = make_wav(buf, 1, 1, 16000, 16, x, 4);
    float *s;
    size_t n;
    int rate;
    char err[200];
    assert_int_equal(osp_wav_parse(buf, len, 16000, &s, &n, &rate, err, sizeof err), 0);
    assert_int_equal(n, 4);
    assert_int_equal(rate, 16000);
    assert_float_equal(s[1], 0.5f, 0);
    assert_float_equal(s[2], -0.5f, 0);
    assert_float_equal(s[3], -1.0f, 0);
    free(s);
}

static void test_stereo_averaged_and_resampled(void **state) {
    (void)state;
    /* 4 stereo frames at 32 kHz: L/R averaged, then every other sample */
    int16_t x[8] = {0, 0, 8192, 8192, 16384, 0, 16384, 16384};
    uint8_t buf[64];
    size_t len = make_wav(buf, 1, 2, 32000, 16, x, 8);
    float *s;
    size_t n;
    char err[200];
    assert_int_equal(osp_wav_parse(buf, len, 16000, &s, &n, NULL, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_float_equal(s[0], 0.0f, 1e-6f);
    assert_float_equal(s[1], 0.25f, 1e-6f); /* frame 2: (16384 + 0) / 2 */
    free(s);
    /* upsampling interpolates linearly: 8 kHz -> 16 kHz */
    int16_t y[2] = {0, 16384};
    len = make_wav(buf, 1, 1, 8000, 16, y, 2);
    assert_int_equal(osp_wav_parse(buf, len, 16000, &s, &n, NULL, err, sizeof err), 0);
    assert_int_equal(n, 4);
    assert_float_equal(s[1], 0.25f, 1e-6f);
    assert_float_equal(s[2], 0.5f, 1e-6f);
    assert_float_equal(s[3], 0.5f, 1e-6f); /* the last sample is held */
    free(s);
}

static void expect_error(const uint8_t *buf, size_t len, const char *needle) {
    float *s = (float *)1;
    size_t n = 1;
    char err[200] = "";
    assert_int_equal(osp_wav_parse(buf, len, 16000, &s, &n, NULL, err, sizeof err), OSP_STREAM_EINVAL);
    assert_null(s);
    if (!strstr(err, needle)) fail_msg("error '%s' does not say '%s'", err, needle);
}

static void test_errors(void **state) {
    (void)state;
    int16_t x[4] = {1, 2, 3, 4};
    uint8_t buf[64];
    expect_error((const uint8_t *)"OggS0000000000000000", 20, "not a WAV file");
    size_t len = make_wav(buf, 3, 1, 16000, 32, x, 4); /* IEEE float */
    expect_error(buf, len, "format tag 3");
    len = make_wav(buf, 1, 1, 16000, 8, x, 4);
    expect_error(buf, len, "8-bit");
    len = make_wav(buf, 1, 6, 16000, 16, x, 4);
    expect_error(buf, len, "6 channels");
    len = make_wav(buf, 1, 1, 0, 16, x, 4);
    expect_error(buf, len, "sample rate");
    len = make_wav(buf, 1, 1, 16000, 16, x, 4);
    expect_error(buf, len - 3, "truncated");
    expect_error(buf, 36, "no data chunk");
    memcpy(buf + 12, "junk", 4);
    expect_error(buf, len, "no fmt chunk");
}

static void test_streaming_header_and_file(void **state) {
    (void)state;
    int16_t x[4] = {100, 200, 300, 400};
    uint8_t buf[64];
    size_t len = make_wav(buf, 1, 1, 16000, 16, x, 4);
    put32(buf + 40, 0xFFFFFFFFu); /* length unknown when the header was written */
    float *s;
    size_t n;
    char err[200];
    assert_int_equal(osp_wav_parse(buf, len, 16000, &s, &n, NULL, err, sizeof err), 0);
    assert_int_equal(n, 4);
    free(s);
    char path[] = "/tmp/osprey-wav-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    assert_int_equal(osp_wav_read(path, 16000, &s, &n, NULL, err, sizeof err), 0);
    assert_int_equal(n, 4);
    free(s);
    remove(path);
    assert_int_equal(osp_wav_read(path, 16000, &s, &n, NULL, err, sizeof err), OSP_STREAM_EINVAL);
    assert_non_null(strstr(err, "No such file"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mono_same_rate),
        cmocka_unit_test(test_stereo_averaged_and_resampled),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_streaming_header_and_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
