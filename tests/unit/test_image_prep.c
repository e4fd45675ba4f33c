/*
 * Preprocessing: what lands in the tensor, value by value. Resampling is
 * checked against a plain float bilinear written here (pixel-centre
 * aligned, like OpenCV's INTER_LINEAR) on smooth inputs, where a wrong
 * offset, a swapped channel or a wrong row shows as a large error.
 * Tolerance: max |diff| <= 1.5 levels of 255, mean |diff| <= 0.5 (measured:
 * max 1.04, mean 0.36 at worst, over the cases below).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image/image.h"

#define MAX_DIFF 1.5
#define MEAN_DIFF 0.5

/* Smooth test colour (RGB) at x, y of a w x h frame: horizontal ramp,
 * vertical ramp, and a gentle 2-D wave so both axes matter in every channel. */
static void smooth_rgb(int x, int y, int w, int h, uint8_t rgb[3]) {
    double r = 255.0 * x / (w > 1 ? w - 1 : 1);
    double g = 255.0 * y / (h > 1 ? h - 1 : 1);
    double b = 128 + 100 * sin(x / 53.0) * cos(y / 41.0);
    rgb[0] = (uint8_t)lround(r);
    rgb[1] = (uint8_t)lround(g);
    rgb[2] = (uint8_t)lround(b);
}

/* A frame of fmt filled by smooth_rgb, or by a constant colour when rgb is
 * given; stride has `extra` spare bytes per row to catch stride bugs. */
static uint8_t *make_frame(int w, int h, osp_pixfmt_t fmt, const uint8_t *rgb, int extra,
                           osp_view_t *v) {
    int ch = osp_pixfmt_channels(fmt);
    int stride = w * ch + extra;
    uint8_t *buf = malloc((size_t)stride * h);
    assert_non_null(buf);
    memset(buf, 0xEE, (size_t)stride * h);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            uint8_t c[3];
            if (rgb)
                memcpy(c, rgb, 3);
            else
                smooth_rgb(x, y, w, h, c);
            uint8_t *d = buf + (size_t)y * stride + (size_t)x * ch;
            if (fmt == OSP_PIX_RGB) {
                d[0] = c[0], d[1] = c[1], d[2] = c[2];
            } else if (fmt == OSP_PIX_BGR) {
                d[0] = c[2], d[1] = c[1], d[2] = c[0];
            } else {
                d[0] = c[0]; /* gray frames: the red ramp as luminance */
            }
        }
    }
    v->data = buf;
    v->width = w;
    v->height = h;
    v->stride = stride;
    v->fmt = fmt;
    return buf;
}

static osp_prep_t spec(int w, int h, osp_fit_t fit, osp_layout_t layout, osp_elem_t elem,
                       const char *norm) {
    osp_prep_t p;
    memset(&p, 0, sizeof(p));
    p.width = w;
    p.height = h;
    p.channels = 3;
    p.fit = fit;
    p.layout = layout;
    p.elem = elem;
    p.pad_value = 114;
    assert_int_equal(osp_norm_named(norm, p.mean, p.std), OSP_IMG_OK);
    return p;
}

/* Value of channel c at input pixel (x, y) of a packed tensor, as a float
 * of the tensor's own unit. */
static double at(const void *t, const osp_prep_t *p, int x, int y, int c) {
    size_t i;
    if (p->layout == OSP_LAYOUT_NCHW || p->channels == 1)
        i = (size_t)c * p->width * p->height + (size_t)y * p->width + x;
    else
        i = ((size_t)y * p->width + x) * (size_t)p->channels + c;
    return p->elem == OSP_ELEM_F32 ? ((const float *)t)[i] : ((const uint8_t *)t)[i];
}

/* Reference bilinear of the frame's channel c at content pixel (x, y) of a
 * cw x ch resize: sample at ((x + .5) * w / cw - .5), clamped to the frame. */
static double ref_bilinear(const osp_view_t *v, int cw, int chh, int x, int y, int c) {
    int ch = osp_pixfmt_channels(v->fmt);
    int src_c = v->fmt == OSP_PIX_GRAY ? 0 : v->fmt == OSP_PIX_BGR ? 2 - c : c;
    double sx = (x + 0.5) * v->width / cw - 0.5, sy = (y + 0.5) * v->height / chh - 0.5;
    if (sx < 0) sx = 0;
    if (sy < 0) sy = 0;
    if (sx > v->width - 1) sx = v->width - 1;
    if (sy > v->height - 1) sy = v->height - 1;
    int x0 = (int)sx, y0 = (int)sy;
    int x1 = x0 + 1 < v->width ? x0 + 1 : x0, y1 = y0 + 1 < v->height ? y0 + 1 : y0;
    double fx = sx - x0, fy = sy - y0;
#define PX(xx, yy) ((double)v->data[(size_t)(yy)*v->stride + (size_t)(xx)*ch + src_c])
    double top = PX(x0, y0) * (1 - fx) + PX(x1, y0) * fx;
    double bot = PX(x0, y1) * (1 - fx) + PX(x1, y1) * fx;
#undef PX
    return top * (1 - fy) + bot * fy;
}

/* Run prep and compare every content value with the reference (in pixel
 * levels) and every pad value with the pad colour. */
static void check_against_reference(const osp_view_t *v, const osp_prep_t *p) {
    size_t bytes = osp_prep_tensor_bytes(p);
    void *t = malloc(bytes);
    assert_non_null(t);
    memset(t, 0xFF, bytes); /* NaN for f32: every value must be written */
    osp_prep_scratch_t s = {0};
    osp_geom_t g;
    char err[128] = "";
    assert_int_equal(osp_prep_run(v, p, t, &s, &g, err, sizeof(err)), OSP_IMG_OK);

    osp_geom_t want;
    osp_geom_compute(v->width, v->height, p->width, p->height, p->fit, &want);
    assert_memory_equal(&g, &want, sizeof(g));

    double worst = 0, sum = 0;
    size_t n = 0;
    for (int y = 0; y < p->height; y++) {
        for (int x = 0; x < p->width; x++) {
            int inside = x >= g.pad_x && x < g.pad_x + g.content_w && y >= g.pad_y &&
                         y < g.pad_y + g.content_h;
            for (int c = 0; c < p->channels; c++) {
                double got = at(t, p, x, y, c);
                assert_false(isnan(got));
                if (p->elem == OSP_ELEM_F32)
                    got = got * p->std[c] + p->mean[c]; /* back to levels */
                double want_v = inside ? ref_bilinear(v, g.content_w, g.content_h, x - g.pad_x,
                                                      y - g.pad_y, c)
                                       : p->pad_value;
                double d = fabs(got - want_v);
                if (!inside) {
                    assert_true(d < 1e-3);
                    continue;
                }
                if (d > worst) worst = d;
                sum += d;
                n++;
            }
        }
    }
    if (worst > MAX_DIFF || sum / n > MEAN_DIFF)
        fail_msg("%dx%d fmt %d -> %dx%d: max diff %.2f, mean %.3f", v->width, v->height, v->fmt,
                 p->width, p->height, worst, sum / n);
    osp_prep_scratch_free(&s);
    free(t);
}

static void test_resize_matches_reference(void **state) {
    (void)state;
    static const struct {
        int w, h, tw, th;
        osp_fit_t fit;
    } cases[] = {
        {1920, 1080, 640, 640, OSP_FIT_LETTERBOX}, /* 3:1 down, exact rows */
        {1920, 1080, 300, 300, OSP_FIT_RESIZE},    /* 6.4 x 3.6 down */
        {1280, 720, 416, 416, OSP_FIT_LETTERBOX},
        {641, 479, 320, 320, OSP_FIT_LETTERBOX}, /* odd, pad 40/41 */
        {479, 641, 320, 320, OSP_FIT_LETTERBOX}, /* pillarbox */
        {320, 240, 640, 640, OSP_FIT_LETTERBOX}, /* 2x up */
        {100, 75, 300, 300, OSP_FIT_RESIZE},     /* 3 x 4 up */
        {640, 480, 640, 640, OSP_FIT_RESIZE},    /* vertical only */
        {1000, 640, 640, 640, OSP_FIT_RESIZE},   /* horizontal only */
        {1500, 500, 300, 300, OSP_FIT_RESIZE},   /* 5x across (every 5th), 5/3 down */
        {960, 540, 320, 320, OSP_FIT_LETTERBOX}, /* 3x both ways */
        {1920, 1080, 320, 240, OSP_FIT_RESIZE},  /* 6x across (pairs), 4.5x down */
        {640, 480, 320, 240, OSP_FIT_RESIZE},    /* 2x both ways (pairs) */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        osp_view_t v;
        uint8_t *buf = make_frame(cases[i].w, cases[i].h, OSP_PIX_RGB, NULL, 5, &v);
        osp_prep_t p = spec(cases[i].tw, cases[i].th, cases[i].fit, OSP_LAYOUT_NCHW, OSP_ELEM_F32,
                            "none");
        check_against_reference(&v, &p);
        p.layout = OSP_LAYOUT_NHWC;
        p.elem = OSP_ELEM_U8;
        check_against_reference(&v, &p);
        free(buf);
    }
}

static void test_bgr_and_gray_sources(void **state) {
    (void)state;
    osp_pixfmt_t fmts[] = {OSP_PIX_BGR, OSP_PIX_GRAY};
    int widths[] = {1280, 960}; /* 4x and 3x down into 320 */
    for (int f = 0; f < 2; f++) {
        for (int i = 0; i < 2; i++) {
            osp_view_t v;
            uint8_t *buf = make_frame(widths[i], widths[i] * 9 / 16, fmts[f], NULL, 0, &v);
            osp_prep_t p = spec(320, 320, OSP_FIT_LETTERBOX, OSP_LAYOUT_NCHW, OSP_ELEM_F32, "none");
            check_against_reference(&v, &p);
            free(buf);
        }
    }
}

/* A pure red frame must give channel 0 = red, whatever the source format,
 * layout, and whether it is resampled or taken as is. */
static void test_channel_order(void **state) {
    (void)state;
    const uint8_t red[3] = {255, 0, 0}, blue[3] = {0, 0, 255};
    const uint8_t *colours[] = {red, blue};
    osp_pixfmt_t fmts[] = {OSP_PIX_RGB, OSP_PIX_BGR};
    /* resampled (2x, 3x: the every-3rd-pixel path), at target, at content */
    int sizes[][2] = {{64, 48}, {96, 72}, {32, 32}, {32, 24}};
    for (int c = 0; c < 2; c++) {
        for (int f = 0; f < 2; f++) {
            for (int s = 0; s < 4; s++) {
                for (int l = 0; l < 2; l++) {
                    osp_view_t v;
                    uint8_t *buf = make_frame(sizes[s][0], sizes[s][1], fmts[f], colours[c], 3, &v);
                    osp_prep_t p = spec(32, 32, OSP_FIT_LETTERBOX, (osp_layout_t)l, OSP_ELEM_F32,
                                        "none");
                    float t[32 * 32 * 3];
                    osp_prep_scratch_t sc = {0};
                    assert_int_equal(osp_prep_run(&v, &p, t, &sc, NULL, NULL, 0), OSP_IMG_OK);
                    int y = 16; /* inside the content for every size here */
                    for (int ch = 0; ch < 3; ch++)
                        assert_float_equal(at(t, &p, 10, y, ch), colours[c][ch] / 255.0, 1e-6);
                    osp_prep_scratch_free(&sc);
                    free(buf);
                }
            }
        }
    }
}

/* Odd shapes through every path: a flat colour must come out exactly that
 * colour (resampling a constant is exact), every value written, the pad
 * exactly 114. */
static void test_extreme_shapes(void **state) {
    (void)state;
    static const struct {
        int w, h, tw, th;
        osp_fit_t fit;
    } cases[] = {
        {1, 1, 640, 640, OSP_FIT_LETTERBOX},  {1, 5000, 64, 64, OSP_FIT_LETTERBOX},
        {5000, 1, 64, 64, OSP_FIT_LETTERBOX}, {3, 3, 2, 2, OSP_FIT_RESIZE},
        {2, 7, 300, 300, OSP_FIT_RESIZE},     {16384, 2, 32, 32, OSP_FIT_LETTERBOX},
        {999, 333, 333, 111, OSP_FIT_RESIZE}, /* 3x across, 3x down */
        {7, 5, 7, 5, OSP_FIT_RESIZE},
    };
    const uint8_t colour[3] = {37, 150, 222};
    osp_prep_scratch_t s = {0};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int f = 0; f < 3; f++) {
            osp_view_t v;
            uint8_t *buf = make_frame(cases[i].w, cases[i].h, (osp_pixfmt_t)f, colour, 1, &v);
            osp_prep_t p = spec(cases[i].tw, cases[i].th, cases[i].fit, (osp_layout_t)(i % 2),
                                OSP_ELEM_F32, "none");
            size_t n = osp_prep_tensor_bytes(&p) / sizeof(float);
            float *t = malloc(n * sizeof(float));
            memset(t, 0xFF, n * sizeof(float));
            osp_geom_t g;
            assert_int_equal(osp_prep_run(&v, &p, t, &s, &g, NULL, 0), OSP_IMG_OK);
            for (int y = 0; y < p.height; y++)
                for (int x = 0; x < p.width; x++) {
                    int inside = x >= g.pad_x && x < g.pad_x + g.content_w && y >= g.pad_y &&
                                 y < g.pad_y + g.content_h;
                    for (int c = 0; c < 3; c++) {
                        /* gray frames hold the red value as luminance */
                        double want = !inside ? 114 : f == OSP_PIX_GRAY ? colour[0] : colour[c];
                        double got = at(t, &p, x, y, c) * 255.0;
                        if (!(fabs(got - want) < 1e-3))
                            fail_msg("%dx%d fmt %d -> %dx%d: (%d,%d)[%d] = %g, want %g", cases[i].w,
                                     cases[i].h, f, p.width, p.height, x, y, c, got, want);
                    }
                }
            free(t);
            free(buf);
        }
    }
    osp_prep_scratch_free(&s);
}

/* A frame at the target size is packed as is: each value exactly where
 * the layout says, no resampling. */
static void test_layout_placement(void **state) {
    (void)state;
    enum { W = 7, H = 5 };
    uint8_t rgb[H][W][3];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            rgb[y][x][0] = (uint8_t)(10 * x + y);
            rgb[y][x][1] = (uint8_t)(100 + x);
            rgb[y][x][2] = (uint8_t)(200 + y);
        }
    osp_view_t v;
    char err[128];
    assert_int_equal(osp_view_wrap(&rgb[0][0][0], sizeof(rgb), W, H, OSP_PIX_RGB, &v, err, sizeof(err)),
                     OSP_IMG_OK);
    osp_prep_scratch_t s = {0};
    for (int e = 0; e < 2; e++) {
        for (int l = 0; l < 2; l++) {
            osp_prep_t p = spec(W, H, OSP_FIT_LETTERBOX, (osp_layout_t)l, (osp_elem_t)e, "none");
            float tf[W * H * 3];
            uint8_t tu[W * H * 3];
            void *t = e == OSP_ELEM_F32 ? (void *)tf : (void *)tu;
            osp_geom_t g;
            assert_int_equal(osp_prep_run(&v, &p, t, &s, &g, NULL, 0), OSP_IMG_OK);
            assert_float_equal(g.scale_x, 1.0, 0);
            assert_int_equal(g.pad_x + g.pad_y, 0);
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    for (int c = 0; c < 3; c++) {
                        size_t i = l == OSP_LAYOUT_NCHW ? (size_t)c * W * H + y * W + x
                                                        : ((size_t)y * W + x) * 3 + c;
                        double got = e == OSP_ELEM_F32 ? tf[i] * 255.0 : tu[i];
                        assert_float_equal(got, rgb[y][x][c], 1e-3);
                    }
        }
    }
    osp_prep_scratch_free(&s);
}

/* A frame at the content size is only padded: rows 2..5 of an 8x8 input
 * are the frame, exactly; rows 0, 1, 6, 7 the pad colour, normalised. */
static void test_content_size_only_padded(void **state) {
    (void)state;
    osp_view_t v;
    uint8_t *buf = make_frame(8, 4, OSP_PIX_RGB, NULL, 0, &v);
    osp_prep_t p = spec(8, 8, OSP_FIT_LETTERBOX, OSP_LAYOUT_NCHW, OSP_ELEM_F32, "imagenet");
    float t[8 * 8 * 3];
    osp_prep_scratch_t s = {0};
    osp_geom_t g;
    assert_int_equal(osp_prep_run(&v, &p, t, &s, &g, NULL, 0), OSP_IMG_OK);
    assert_int_equal(g.pad_y, 2);
    assert_int_equal(g.content_h, 4);
    static const double mean[3] = {0.485, 0.456, 0.406}, sd[3] = {0.229, 0.224, 0.225};
    for (int c = 0; c < 3; c++) {
        for (int y = 0; y < 8; y++) {
            for (int x = 0; x < 8; x++) {
                double px = (y >= 2 && y < 6) ? v.data[(y - 2) * v.stride + x * 3 + c] : 114;
                assert_float_equal(t[c * 64 + y * 8 + x], (px / 255.0 - mean[c]) / sd[c], 1e-4);
            }
        }
    }
    osp_prep_scratch_free(&s);
    free(buf);
}

static void test_named_norms(void **state) {
    (void)state;
    float m[3], s[3];
    assert_int_equal(osp_norm_named("imagenet", m, s), OSP_IMG_OK);
    assert_float_equal(m[0], 0.485 * 255, 1e-3);
    assert_float_equal(m[1], 0.456 * 255, 1e-3);
    assert_float_equal(m[2], 0.406 * 255, 1e-3);
    assert_float_equal(s[0], 0.229 * 255, 1e-3);
    assert_float_equal(s[1], 0.224 * 255, 1e-3);
    assert_float_equal(s[2], 0.225 * 255, 1e-3);
    assert_int_equal(osp_norm_named("scrfd", m, s), OSP_IMG_OK);
    for (int c = 0; c < 3; c++) {
        assert_float_equal(m[c], 127.5, 0);
        assert_float_equal(s[c], 128, 0);
    }
    const char *zero_one[] = {"none", "zero-one", "", NULL};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(osp_norm_named(zero_one[i], m, s), OSP_IMG_OK);
        assert_float_equal(m[1], 0, 0);
        assert_float_equal(s[1], 255, 0);
    }
    assert_int_equal(osp_norm_named("imagenet2", m, s), OSP_IMG_EINVAL);

    /* And as packed: scrfd maps 0 -> -127.5/128 and 255 -> 127.5/128. */
    uint8_t px[2 * 3] = {0, 0, 0, 255, 255, 255};
    osp_view_t v = {px, 2, 1, 6, OSP_PIX_RGB};
    osp_prep_t p = spec(2, 1, OSP_FIT_RESIZE, OSP_LAYOUT_NHWC, OSP_ELEM_F32, "scrfd");
    float t[6];
    osp_prep_scratch_t sc = {0};
    assert_int_equal(osp_prep_run(&v, &p, t, &sc, NULL, NULL, 0), OSP_IMG_OK);
    assert_float_equal(t[0], -127.5 / 128, 1e-6);
    assert_float_equal(t[5], 127.5 / 128, 1e-6);
    osp_prep_scratch_free(&sc);
}

/* uint8 models get raw pixels and the raw pad colour, no /255. */
static void test_u8(void **state) {
    (void)state;
    const uint8_t colour[3] = {200, 10, 77};
    osp_view_t v;
    uint8_t *buf = make_frame(64, 32, OSP_PIX_BGR, colour, 0, &v);
    osp_prep_t p = spec(32, 32, OSP_FIT_LETTERBOX, OSP_LAYOUT_NHWC, OSP_ELEM_U8, "imagenet");
    assert_int_equal(osp_prep_tensor_bytes(&p), 32 * 32 * 3);
    uint8_t t[32 * 32 * 3];
    osp_prep_scratch_t s = {0};
    osp_geom_t g;
    assert_int_equal(osp_prep_run(&v, &p, t, &s, &g, NULL, 0), OSP_IMG_OK);
    assert_int_equal(g.pad_y, 8);
    for (int c = 0; c < 3; c++) {
        assert_int_equal(t[(0 * 32 + 5) * 3 + c], 114);
        assert_int_equal(t[(31 * 32 + 5) * 3 + c], 114);
        assert_int_equal(t[(16 * 32 + 5) * 3 + c], colour[c]);
    }
    osp_prep_scratch_free(&s);
    free(buf);
}

/* channels == 1: BT.601 luminance .299 R + .587 G + .114 B. */
static void test_luminance(void **state) {
    (void)state;
    const uint8_t colours[][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {114, 114, 114}};
    for (int i = 0; i < 4; i++) {
        osp_view_t v;
        uint8_t *buf = make_frame(40, 20, OSP_PIX_RGB, colours[i], 0, &v);
        double y = 0.299 * colours[i][0] + 0.587 * colours[i][1] + 0.114 * colours[i][2];
        osp_prep_t p = spec(20, 20, OSP_FIT_LETTERBOX, OSP_LAYOUT_NCHW, OSP_ELEM_F32, "none");
        p.channels = 1;
        float tf[20 * 20];
        uint8_t tu[20 * 20];
        osp_prep_scratch_t s = {0};
        assert_int_equal(osp_prep_run(&v, &p, tf, &s, NULL, NULL, 0), OSP_IMG_OK);
        assert_float_equal(tf[10 * 20 + 3], y / 255.0, 1e-5);
        assert_float_equal(tf[0], 114 / 255.0, 1e-6); /* pad row */
        p.elem = OSP_ELEM_U8;
        assert_int_equal(osp_prep_run(&v, &p, tu, &s, NULL, NULL, 0), OSP_IMG_OK);
        assert_true(fabs(tu[10 * 20 + 3] - y) <= 1.0);
        assert_int_equal(tu[0], 114);
        osp_prep_scratch_free(&s);
        free(buf);
    }
}

/* Buffers grow only: once every frame size has been seen, further frames
 * of any allocate nothing (same pointers, same capacities). 1920 and 1280
 * shrink to 640 by whole factors; 1000 takes the bilinear table. */
static void test_scratch_reuse(void **state) {
    (void)state;
    osp_view_t big, small, odd;
    uint8_t *b1 = make_frame(1920, 1080, OSP_PIX_RGB, NULL, 0, &big);
    uint8_t *b2 = make_frame(1280, 720, OSP_PIX_RGB, NULL, 0, &small);
    uint8_t *b3 = make_frame(1000, 700, OSP_PIX_RGB, NULL, 0, &odd);
    const osp_view_t *frames[] = {&big, &small, &odd};
    osp_prep_t p = spec(640, 640, OSP_FIT_LETTERBOX, OSP_LAYOUT_NCHW, OSP_ELEM_F32, "none");
    float *t = malloc(osp_prep_tensor_bytes(&p));
    osp_prep_scratch_t s = {0};
    for (int i = 0; i < 3; i++)
        assert_int_equal(osp_prep_run(frames[i], &p, t, &s, NULL, NULL, 0), OSP_IMG_OK);
    assert_non_null(s.cols.data);
    osp_prep_scratch_t warm = s;
    for (int i = 0; i < 6; i++) {
        assert_int_equal(osp_prep_run(frames[(i * 2) % 3], &p, t, &s, NULL, NULL, 0), OSP_IMG_OK);
        assert_ptr_equal(s.resized.data, warm.resized.data);
        assert_ptr_equal(s.cols.data, warm.cols.data);
        assert_ptr_equal(s.row.data, warm.row.data);
        assert_int_equal(s.resized.cap, warm.resized.cap);
        assert_int_equal(s.cols.cap, warm.cols.cap);
        assert_int_equal(s.row.cap, warm.row.cap);
    }
    osp_prep_scratch_free(&s);
    assert_null(s.cols.data);
    free(t);
    free(b1);
    free(b2);
    free(b3);
}

static void test_bad_arguments(void **state) {
    (void)state;
    uint8_t px[12] = {0};
    osp_view_t v = {px, 2, 2, 6, OSP_PIX_RGB};
    osp_prep_t p = spec(2, 2, OSP_FIT_LETTERBOX, OSP_LAYOUT_NCHW, OSP_ELEM_F32, "none");
    float t[12];
    osp_prep_scratch_t s = {0};
    char err[64] = "";
    osp_prep_t bad = p;
    bad.channels = 2;
    assert_int_equal(osp_prep_run(&v, &bad, t, &s, NULL, err, sizeof(err)), OSP_IMG_EINVAL);
    assert_true(err[0] != 0);
    assert_int_equal(osp_prep_tensor_bytes(&bad), 0);
    bad = p;
    bad.std[1] = 0;
    assert_int_equal(osp_prep_run(&v, &bad, t, &s, NULL, NULL, 0), OSP_IMG_EINVAL);
    osp_view_t bv = v;
    bv.stride = 5; /* less than a row */
    assert_int_equal(osp_prep_run(&bv, &p, t, &s, NULL, NULL, 0), OSP_IMG_EINVAL);
    bv = v;
    bv.fmt = (osp_pixfmt_t)7;
    assert_int_equal(osp_prep_run(&bv, &p, t, &s, NULL, NULL, 0), OSP_IMG_EINVAL);
    assert_int_equal(osp_prep_run(&v, &p, NULL, &s, NULL, NULL, 0), OSP_IMG_EINVAL);
    assert_int_equal(osp_prep_tensor_bytes(&p), 2 * 2 * 3 * sizeof(float));
    osp_prep_scratch_free(&s);
}

/* ---- the buffer type the module shares ---------------------------------- */

static void test_view_wrap(void **state) {
    (void)state;
    uint8_t px[4 * 3 * 3] = {0};
    osp_view_t v;
    char err[128] = "";
    assert_int_equal(osp_view_wrap(px, sizeof(px), 4, 3, OSP_PIX_BGR, &v, err, sizeof(err)),
                     OSP_IMG_OK);
    assert_int_equal(v.stride, 12);
    assert_int_equal(v.fmt, OSP_PIX_BGR);
    assert_int_equal(osp_view_wrap(px, 12, 4, 3, OSP_PIX_GRAY, &v, err, sizeof(err)), OSP_IMG_OK);
    assert_int_equal(osp_view_wrap(px, sizeof(px) - 1, 4, 3, OSP_PIX_RGB, &v, err, sizeof(err)),
                     OSP_IMG_EINVAL);
    assert_non_null(strstr(err, "want 36"));
    assert_int_equal(osp_view_wrap(px, sizeof(px), 4, 3, 3, &v, err, sizeof(err)), OSP_IMG_EINVAL);
    /* Sides whose product would overflow 32 bits are refused, not wrapped. */
    assert_int_equal(osp_view_wrap(px, 12, 65536, 65536, OSP_PIX_RGB, &v, NULL, 0), OSP_IMG_EINVAL);
    assert_int_equal(osp_view_wrap(px, 0, 0, 3, OSP_PIX_RGB, &v, NULL, 0), OSP_IMG_EINVAL);
    assert_int_equal(osp_pixfmt_channels(OSP_PIX_RGB), 3);
    assert_int_equal(osp_pixfmt_channels(OSP_PIX_GRAY), 1);
    assert_int_equal(osp_pixfmt_channels(-1), 0);
}

static void test_image_reserve(void **state) {
    (void)state;
    osp_image_t img = {0};
    assert_int_equal(osp_image_reserve(&img, 100, 50, OSP_PIX_RGB), OSP_IMG_OK);
    assert_int_equal(img.stride, 300);
    assert_true(img.cap >= 15000);
    uint8_t *first = img.data;
    assert_int_equal(osp_image_reserve(&img, 50, 50, OSP_PIX_GRAY), OSP_IMG_OK);
    assert_ptr_equal(img.data, first);
    assert_int_equal(img.stride, 50);
    assert_int_equal(osp_image_reserve(&img, OSP_IMG_MAX_SIDE + 1, 1, OSP_PIX_RGB), OSP_IMG_EINVAL);
    assert_int_equal(img.width, 50); /* unchanged on error */
    osp_view_t v = osp_image_view(&img);
    assert_ptr_equal(v.data, img.data);
    assert_int_equal(v.width, 50);
    osp_image_free(&img);
    assert_null(img.data);
    assert_int_equal(img.cap, 0);
    osp_image_free(&img); /* twice is harmless */
}

/* Rows handed over in pieces (one at a time, random sizes) give the same
 * tensor, byte for byte, as the whole frame at once: every resampling path
 * (at size, odd and even whole-factor shrinks, the general width, an
 * upscale), letterbox and resize, both colour orders. Missing rows are an
 * error, not a half-made tensor. */
static void test_rows_in_pieces(void **state) {
    (void)state;
    static const struct {
        int w, h, tw, th;
        osp_fit_t fit;
        osp_pixfmt_t fmt;
    } cases[] = {
        {1920, 1080, 320, 240, OSP_FIT_RESIZE, OSP_PIX_RGB},    /* even factor, blended rows */
        {1920, 1080, 640, 640, OSP_FIT_LETTERBOX, OSP_PIX_BGR}, /* odd factor */
        {1920, 1080, 300, 300, OSP_FIT_RESIZE, OSP_PIX_RGB},    /* general width */
        {300, 300, 300, 300, OSP_FIT_RESIZE, OSP_PIX_BGR},      /* at size */
        {100, 80, 320, 240, OSP_FIT_LETTERBOX, OSP_PIX_RGB},    /* upscale */
        {640, 360, 640, 640, OSP_FIT_LETTERBOX, OSP_PIX_RGB},   /* content size: only padded */
        {37, 1000, 64, 64, OSP_FIT_RESIZE, OSP_PIX_RGB},        /* tall and narrow */
    };
    srand(7);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        osp_view_t v;
        uint8_t *buf = make_frame(cases[i].w, cases[i].h, cases[i].fmt, NULL, 5, &v);
        osp_prep_t p = spec(cases[i].tw, cases[i].th, cases[i].fit, OSP_LAYOUT_NCHW, OSP_ELEM_F32,
                            "imagenet");
        size_t bytes = osp_prep_tensor_bytes(&p);
        uint8_t *whole = malloc(bytes), *pieces = malloc(bytes);
        assert_non_null(whole);
        assert_non_null(pieces);
        osp_prep_scratch_t s = {0};
        osp_geom_t gw, gp;
        assert_int_equal(osp_prep_run(&v, &p, whole, &s, &gw, NULL, 0), OSP_IMG_OK);
        osp_prep_stream_t *st = osp_prep_stream_new();
        assert_non_null(st);
        for (int mode = 0; mode < 2; mode++) {
            memset(pieces, 0xFF, bytes);
            assert_int_equal(osp_prep_stream_begin(st, v.width, v.height, v.fmt, &p, pieces, &s,
                                                   NULL, 0),
                             OSP_IMG_OK);
            for (int y = 0; y < v.height;) {
                int n = mode == 0 ? 1 : 1 + rand() % 7;
                if (n > v.height - y) n = v.height - y;
                osp_prep_stream_rows(st, v.data + (size_t)y * v.stride, (size_t)v.stride, n);
                y += n;
            }
            assert_int_equal(osp_prep_stream_end(st, &gp, NULL, 0), OSP_IMG_OK);
            assert_memory_equal(&gp, &gw, sizeof gw);
            assert_memory_equal(pieces, whole, bytes);
        }
        /* the same stream, reused, stopped short */
        char err[128] = "";
        assert_int_equal(osp_prep_stream_begin(st, v.width, v.height, v.fmt, &p, pieces, &s, NULL, 0),
                         OSP_IMG_OK);
        osp_prep_stream_rows(st, v.data, (size_t)v.stride, v.height / 2);
        assert_int_equal(osp_prep_stream_end(st, NULL, err, sizeof err), OSP_IMG_EINVAL);
        assert_non_null(strstr(err, "frame ended after"));
        osp_prep_stream_free(st);
        osp_prep_scratch_free(&s);
        free(whole);
        free(pieces);
        free(buf);
    }
    /* gray and YUV frames are not taken row by row */
    osp_prep_stream_t *st = osp_prep_stream_new();
    osp_prep_scratch_t s = {0};
    osp_prep_t p = spec(64, 64, OSP_FIT_RESIZE, OSP_LAYOUT_NCHW, OSP_ELEM_F32, "none");
    float t[64 * 64 * 3];
    assert_int_equal(osp_prep_stream_begin(st, 128, 128, OSP_PIX_GRAY, &p, t, &s, NULL, 0),
                     OSP_IMG_EINVAL);
    assert_int_equal(osp_prep_stream_begin(st, 0, 128, OSP_PIX_RGB, &p, t, &s, NULL, 0),
                     OSP_IMG_EINVAL);
    osp_prep_stream_free(st);
    osp_prep_scratch_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_matches_reference),
        cmocka_unit_test(test_bgr_and_gray_sources),
        cmocka_unit_test(test_channel_order),
        cmocka_unit_test(test_extreme_shapes),
        cmocka_unit_test(test_layout_placement),
        cmocka_unit_test(test_content_size_only_padded),
        cmocka_unit_test(test_named_norms),
        cmocka_unit_test(test_u8),
        cmocka_unit_test(test_luminance),
        cmocka_unit_test(test_scratch_reuse),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_view_wrap),
        cmocka_unit_test(test_image_reserve),
        cmocka_unit_test(test_rows_in_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
