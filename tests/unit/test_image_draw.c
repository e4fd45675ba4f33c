/*
 * Drawing on snapshots: rectangles and labels land where they should and
 * never outside the image. Images here sit inside bigger buffers whose
 * guard bytes (before, after, and in the stride padding of every row) must
 * survive any box, however far outside it reaches.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image/image.h"

#define GUARD 0xA5
#define PAD 5      /* stride padding bytes per row */
#define MARGIN 256 /* guard bytes before and after the pixels */

static const uint8_t RED[3] = {255, 0, 0}, WHITE[3] = {255, 255, 255}, BLUE[3] = {0, 0, 255};

typedef struct {
    uint8_t *mem;
    size_t len;
    osp_image_t img;
} canvas_t;

static canvas_t canvas_new(int w, int h, osp_pixfmt_t fmt) {
    canvas_t c;
    int ch = osp_pixfmt_channels(fmt);
    int stride = w * ch + PAD;
    c.len = (size_t)stride * h + 2 * MARGIN;
    c.mem = malloc(c.len);
    assert_non_null(c.mem);
    memset(c.mem, GUARD, c.len);
    memset(&c.img, 0, sizeof(c.img));
    c.img.data = c.mem + MARGIN;
    c.img.cap = (size_t)stride * h;
    c.img.width = w;
    c.img.height = h;
    c.img.stride = stride;
    c.img.fmt = fmt;
    for (int y = 0; y < h; y++) /* black pixels, guard-filled padding */
        memset(c.img.data + (size_t)y * stride, 0, (size_t)w * ch);
    return c;
}

static void canvas_check_guards(const canvas_t *c) {
    int ch = osp_pixfmt_channels(c->img.fmt);
    for (size_t i = 0; i < MARGIN; i++) {
        assert_int_equal(c->mem[i], GUARD);
        assert_int_equal(c->mem[c->len - 1 - i], GUARD);
    }
    for (int y = 0; y < c->img.height; y++)
        for (int i = c->img.width * ch; i < c->img.stride; i++)
            assert_int_equal(c->img.data[(size_t)y * c->img.stride + i], GUARD);
}

static const uint8_t *px(const canvas_t *c, int x, int y) {
    return c->img.data + (size_t)y * c->img.stride + (size_t)x * osp_pixfmt_channels(c->img.fmt);
}

static int is(const canvas_t *c, int x, int y, const uint8_t rgb[3]) {
    return memcmp(px(c, x, y), rgb, 3) == 0;
}

static int count(const canvas_t *c, const uint8_t rgb[3]) {
    int n = 0;
    for (int y = 0; y < c->img.height; y++)
        for (int x = 0; x < c->img.width; x++) n += is(c, x, y, rgb);
    return n;
}

static void test_rect_inside(void **state) {
    (void)state;
    canvas_t c = canvas_new(40, 30, OSP_PIX_RGB);
    osp_draw_rect(&c.img, 5, 5, 20, 15, 1, RED);
    for (int y = 0; y < 30; y++)
        for (int x = 0; x < 40; x++) {
            int inbox = x >= 5 && x <= 20 && y >= 5 && y <= 15; /* corners inclusive */
            int edge = inbox && (x == 5 || x == 20 || y == 5 || y == 15);
            if (edge != is(&c, x, y, RED))
                fail_msg("(%d,%d): edge %d, red %d", x, y, edge, is(&c, x, y, RED));
        }
    assert_int_equal(count(&c, RED), 2 * 16 + 2 * 9);

    /* Corners given the other way round draw the same box; a thickness of
     * 3 grows inwards. */
    canvas_t d = canvas_new(40, 30, OSP_PIX_RGB);
    osp_draw_rect(&d.img, 20, 15, 5, 5, 3, RED);
    assert_true(is(&d, 5, 10, RED) && is(&d, 7, 10, RED) && !is(&d, 8, 10, RED));
    assert_true(is(&d, 12, 13, RED) && !is(&d, 12, 12, RED));
    assert_true(!is(&d, 4, 10, RED) && !is(&d, 21, 10, RED));
    canvas_check_guards(&c);
    canvas_check_guards(&d);
    free(c.mem);
    free(d.mem);
}

static void test_rect_clipped(void **state) {
    (void)state;
    canvas_t c = canvas_new(32, 24, OSP_PIX_RGB);
    /* Partly outside: only the right and bottom edges are on the image. */
    osp_draw_rect(&c.img, -10, -10, 10, 10, 1, RED);
    assert_true(is(&c, 10, 0, RED) && is(&c, 10, 10, RED) && is(&c, 0, 10, RED));
    assert_false(is(&c, 0, 0, RED));
    assert_int_equal(count(&c, RED), 11 + 11 - 1);
    canvas_check_guards(&c);

    /* Wholly outside, on every side, and absurd. */
    static const int boxes[][5] = {
        {100, 100, 200, 200, 1},
        {-50, -50, -1, -1, 4},
        {-5, 30, 40, 60, 2},
        {31, -100, 100, 100, 50},
        {INT_MIN, INT_MIN, INT_MAX, INT_MAX, INT_MAX},
        {INT_MAX, INT_MAX, INT_MAX, INT_MAX, 1},
        {INT_MIN, 3, INT_MIN, 5, INT_MAX},
    };
    for (size_t i = 0; i < sizeof(boxes) / sizeof(boxes[0]); i++)
        osp_draw_rect(&c.img, boxes[i][0], boxes[i][1], boxes[i][2], boxes[i][3], boxes[i][4], BLUE);
    canvas_check_guards(&c);
    /* Only the INT_MIN..INT_MAX box reaches the image: its bottom and right
     * bands (INT_MAX thick, growing inwards from 2^31) cover rows and
     * columns from 1 on, its top and left ones end at -1: all but (0,0). */
    assert_int_equal(count(&c, BLUE), 32 * 24 - 1);
    assert_false(is(&c, 0, 0, BLUE));
    free(c.mem);
}

static void test_label(void **state) {
    (void)state;
    canvas_t c = canvas_new(200, 50, OSP_PIX_RGB);
    const char *text = "Person 0.87";
    int bw = 0, bh = 0;
    osp_draw_label_size(&c.img, text, &bw, &bh);
    assert_int_equal(bw, 11 * 6 - 1 + 2); /* 5-wide glyphs, 1 apart, 1 of margin */
    assert_int_equal(bh, 9 + 2);
    osp_draw_label(&c.img, 3, 4, text, WHITE, BLUE);
    int fg = 0, bg = 0;
    const uint8_t black[3] = {0, 0, 0};
    for (int y = 0; y < 50; y++)
        for (int x = 0; x < 200; x++) {
            int inbox = x >= 3 && x < 3 + bw && y >= 4 && y < 4 + bh;
            if (!inbox) {
                assert_true(is(&c, x, y, black));
                continue;
            }
            fg += is(&c, x, y, WHITE);
            bg += is(&c, x, y, BLUE);
            assert_true(is(&c, x, y, WHITE) || is(&c, x, y, BLUE));
        }
    assert_true(fg > 80 && bg > fg);
    /* The margin is background all round. */
    for (int x = 3; x < 3 + bw; x++) {
        assert_true(is(&c, x, 4, BLUE));
        assert_true(is(&c, x, 4 + bh - 1, BLUE));
    }
    canvas_check_guards(&c);

    /* No background: only the glyph pixels change. */
    canvas_t d = canvas_new(200, 50, OSP_PIX_RGB);
    osp_draw_label(&d.img, 3, 4, text, WHITE, NULL);
    assert_int_equal(count(&d, WHITE), fg);
    free(c.mem);
    free(d.mem);
}

static void test_label_clipped(void **state) {
    (void)state;
    canvas_t c = canvas_new(30, 12, OSP_PIX_RGB);
    const char *text = "a long label that runs far off the image";
    static const int at[][2] = {{20, 5},          {-40, -3},          {-3, 8},
                                {25, -20},        {INT_MAX, INT_MAX}, {INT_MIN, INT_MIN},
                                {INT_MAX - 3, 0}, {0, INT_MAX - 3}};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        osp_draw_label(&c.img, at[i][0], at[i][1], text, WHITE, BLUE);
    canvas_check_guards(&c);
    assert_true(count(&c, WHITE) > 0);
    free(c.mem);
}

/* Render one character on its own and return its 5 x 9 bitmap as bits. */
static uint64_t glyph_bits(char ch) {
    canvas_t c = canvas_new(7, 11, OSP_PIX_RGB);
    char s[2] = {ch, 0};
    osp_draw_label(&c.img, 0, 0, s, WHITE, NULL);
    uint64_t bits = 0;
    for (int y = 0; y < 11; y++)
        for (int x = 0; x < 7; x++) {
            int on = is(&c, x, y, WHITE);
            if (x == 0 || x == 6 || y == 0 || y == 10)
                assert_false(on); /* the margin stays clear */
            else if (on)
                bits |= 1ull << ((y - 1) * 5 + (x - 1));
        }
    canvas_check_guards(&c);
    free(c.mem);
    return bits;
}

/* Every printable ASCII character has its own glyph, lowercase included
 * (labels are "person 0.87", not "PERSON 0.87"); descenders reach below
 * the baseline; anything else prints as '?'. */
static void test_font(void **state) {
    (void)state;
    uint64_t g[95];
    for (int i = 0; i < 95; i++) g[i] = glyph_bits((char)(32 + i));
    assert_int_equal(g[0], 0); /* space */
    for (int i = 1; i < 95; i++) {
        if (g[i] == 0) fail_msg("'%c' is blank", 32 + i);
        for (int j = 0; j < i; j++)
            if (g[i] == g[j]) fail_msg("'%c' and '%c' look the same", 32 + i, 32 + j);
    }
    const uint64_t below = ((1ull << 10) - 1) << 35; /* rows 7 and 8 */
    for (const char *d = "gjpqy"; *d; d++) assert_true(g[*d - 32] & below);
    for (const char *d = "acemnorsuvwxz"; *d; d++) assert_false(g[*d - 32] & below);
    assert_true(glyph_bits('\x7f') == g['?' - 32]);
    assert_true(glyph_bits('\xe9') == g['?' - 32]);
}

/* Big frames get bigger letters: 3x on 1080p. */
static void test_label_scale(void **state) {
    (void)state;
    osp_image_t img = {.width = 1920, .height = 1080, .stride = 1920 * 3, .fmt = OSP_PIX_RGB};
    int w, h;
    osp_draw_label_size(&img, "ab", &w, &h);
    assert_int_equal(h, 11 * 3);
    assert_int_equal(w, (2 * 6 - 1 + 2) * 3);
    canvas_t c = canvas_new(60, 600, OSP_PIX_RGB); /* 2x */
    osp_draw_label(&c.img, 0, 0, "l", WHITE, NULL);
    int n1 = count(&c, WHITE);
    assert_int_equal(n1 % 4, 0); /* every font pixel is a 2x2 block */
    assert_int_equal(n1 / 4, __builtin_popcountll(glyph_bits('l')));
    canvas_check_guards(&c);
    free(c.mem);
}

static void test_other_formats(void **state) {
    (void)state;
    canvas_t b = canvas_new(10, 10, OSP_PIX_BGR);
    osp_draw_rect(&b.img, 0, 0, 9, 9, 1, RED);
    const uint8_t bgr_red[3] = {0, 0, 255};
    assert_true(is(&b, 0, 5, bgr_red));
    canvas_check_guards(&b);
    canvas_t g = canvas_new(10, 10, OSP_PIX_GRAY);
    osp_draw_rect(&g.img, 2, 2, 7, 7, 1, RED);
    assert_int_equal(*px(&g, 2, 4), 77); /* .299 * 255, in 8.8 fixed point */
    assert_int_equal(*px(&g, 4, 4), 0);
    osp_draw_label(&g.img, 0, 0, "Hi", WHITE, BLUE);
    canvas_check_guards(&g);
    /* Nothing to draw on: nothing happens. */
    osp_image_t empty = {0};
    osp_draw_rect(&empty, 0, 0, 5, 5, 1, RED);
    osp_draw_label(&empty, 0, 0, "x", WHITE, BLUE);
    osp_draw_rect(NULL, 0, 0, 5, 5, 1, RED);
    osp_draw_label(&g.img, 0, 0, NULL, WHITE, BLUE);
    free(b.mem);
    free(g.mem);
}

/* Twelve colours, apart from each other, and the same for a class every time. */
static void test_class_colours(void **state) {
    (void)state;
    uint8_t a[3], b[3];
    for (int i = 0; i < 12; i++)
        for (int j = i + 1; j < 12; j++) {
            osp_draw_class_colour(i, a);
            osp_draw_class_colour(j, b);
            int d = abs(a[0] - b[0]) + abs(a[1] - b[1]) + abs(a[2] - b[2]);
            if (d < 80) fail_msg("classes %d and %d look alike (%d)", i, j, d);
        }
    osp_draw_class_colour(4, a);
    osp_draw_class_colour(16, b);
    assert_memory_equal(a, b, 3);
    osp_draw_class_colour(-3, b);
    osp_draw_class_colour(0, a);
    assert_memory_equal(a, b, 3);
}

static int covers(int x, int y, int w, int h, const osp_draw_box_t *b) {
    return x < b->x2 + 1 && x + w > b->x1 && y < b->y2 + 1 && y + h > b->y1;
}

/* A big box with a small one just under its top edge (a person and their
 * hat): the big box's label must not go over the small box, nor the small
 * box's over itself; at the top of the frame a label goes below. */
static void test_label_placement(void **state) {
    (void)state;
    osp_draw_box_t boxes[3] = {
        {100, 100, 200, 300}, /* big */
        {100, 80, 130, 95},   /* small, right above the big one's left corner */
        {300, 0, 340, 40},    /* at the top edge */
    };
    int w[3] = {60, 40, 40}, h[3] = {11, 11, 11}, x[3], y[3];
    osp_draw_place_labels(boxes, w, h, 3, 640, 480, x, y);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (covers(x[i], y[i], w[i], h[i], &boxes[j]) && (j == 1 || j == i))
                fail_msg("label %d at %d,%d covers box %d", i, x[i], y[i], j);
    assert_int_equal(y[2], 41); /* below, there is no room above */
    for (int i = 0; i < 3; i++) {
        assert_true(x[i] >= 0 && x[i] + w[i] <= 640);
        assert_true(y[i] >= 0 && y[i] + h[i] <= 480);
    }
    /* the labels do not cover each other where they need not */
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++) {
            osp_draw_box_t lj = {x[j], y[j], x[j] + w[j] - 1, y[j] + h[j] - 1};
            assert_false(covers(x[i], y[i], w[i], h[i], &lj));
        }
    /* a label wider than the frame starts at its left edge */
    int wide = 900, tall = 11, px, py;
    osp_draw_box_t one = {10, 50, 20, 60};
    osp_draw_place_labels(&one, &wide, &tall, 1, 640, 480, &px, &py);
    assert_int_equal(px, 0);
    osp_draw_place_labels(NULL, NULL, NULL, 0, 640, 480, NULL, NULL);
}

/* People walking abreast: narrow boxes side by side at one height, each
 * label several boxes wide. No label may hide another, and each stays its
 * box's: over half of the box's width, against its top or bottom edge or
 * one row further out. */
static void test_labels_abreast(void **state) {
    (void)state;
    enum { N = 4 };
    osp_draw_box_t boxes[N];
    int w[N], h[N], x[N], y[N];
    for (int i = 0; i < N; i++) {
        boxes[i] = (osp_draw_box_t){300 + 40 * i, 200, 330 + 40 * i, 290};
        w[i] = 134;
        h[i] = 22;
    }
    osp_draw_place_labels(boxes, w, h, N, 768, 576, x, y);
    for (int i = 0; i < N; i++) {
        const osp_draw_box_t *b = &boxes[i];
        int span = (x[i] + w[i] < b->x2 + 1 ? x[i] + w[i] : b->x2 + 1) - (x[i] > b->x1 ? x[i] : b->x1);
        if (span < (b->x2 - b->x1 + 1) / 2)
            fail_msg("label %d at %d,%d spans %d of its box's width", i, x[i], y[i], span);
        int row = y[i] == b->y1 - h[i] || y[i] == b->y2 + 1 || y[i] == b->y1 - 2 * h[i] ||
                  y[i] == b->y2 + 1 + h[i];
        if (!row) fail_msg("label %d at %d,%d is not against its box", i, x[i], y[i]);
        for (int j = 0; j < i; j++) {
            osp_draw_box_t lj = {x[j], y[j], x[j] + w[j] - 1, y[j] + h[j] - 1};
            if (covers(x[i], y[i], w[i], h[i], &lj))
                fail_msg("label %d at %d,%d covers label %d at %d,%d", i, x[i], y[i], j, x[j], y[j]);
        }
    }
}

static void test_line(void **state) {
    (void)state;
    canvas_t c = canvas_new(20, 10, OSP_PIX_RGB);
    osp_draw_line(&c.img, 2, 3, 12, 3, 1, RED); /* horizontal: 11 pixels */
    assert_int_equal(count(&c, RED), 11);
    assert_true(is(&c, 2, 3, RED) && is(&c, 12, 3, RED) && !is(&c, 13, 3, RED));
    osp_draw_line(&c.img, 0, 0, 9, 9, 1, BLUE); /* a diagonal: one pixel a row */
    for (int i = 0; i < 10; i++) assert_true(is(&c, i, i, BLUE));
    /* past every edge, thick, and absurdly far: clipped, never outside */
    osp_draw_line(&c.img, -50, -50, 70, 60, 5, WHITE);
    osp_draw_line(&c.img, INT_MIN, 0, INT_MAX, 5, 3, WHITE);
    osp_draw_line(&c.img, 5, INT_MIN, 5, INT_MAX, 3, WHITE);
    osp_draw_line(&c.img, -1000, -1000, -900, -900, 3, WHITE);
    canvas_check_guards(&c);
    assert_true(count(&c, WHITE) > 0);
    free(c.mem);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rect_inside),    cmocka_unit_test(test_line),
        cmocka_unit_test(test_rect_clipped),   cmocka_unit_test(test_label),
        cmocka_unit_test(test_label_clipped),  cmocka_unit_test(test_font),
        cmocka_unit_test(test_label_scale),    cmocka_unit_test(test_other_formats),
        cmocka_unit_test(test_class_colours),  cmocka_unit_test(test_label_placement),
        cmocka_unit_test(test_labels_abreast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
