/* The built-in model catalog: models osprey knows how to fetch and run. */
#include "model/model.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a model and its int8 variant share: the input, its preparation and
 * the decoding (the variants are made from the float files by
 * scripts/fetch-assets.sh, osprey quantize, and take the same tensors). */
#define SSD_OIDV4_IO                                                                           \
    .batches = 1, /* tools/tflite2onnx.py emits a dynamic batch axis */                        \
        .postprocessor = "ssd", .width = 300, .height = 300, .channels = 3, .layout = "NHWC",  \
    .fit = OSP_FIT_RESIZE, /* px/127.5 - 1 */                                                  \
        .mean = {127.5f, 127.5f, 127.5f}, .std = {127.5f, 127.5f, 127.5f}, .confidence = 0.3f, \
    .nms_iou = 0.45f
#define ULTRAFACE_IO                                                                            \
    .postprocessor = "ultraface", .width = 320, .height = 240, .channels = 3, .layout = "NCHW", \
    .fit = OSP_FIT_RESIZE, /* (px - 127) / 128 */                                               \
        .mean = {127.f, 127.f, 127.f}, .std = {128.f, 128.f, 128.f}, .confidence = 0.5f,        \
    .nms_iou = 0.4f, .labels = "face"

static const osp_catalog_entry_t CATALOG[] = {
    {.name = "ssd-oidv4",
     .cli_second_look = 1,
     .cli_confidence = 0.35f,     /* best F1 on people in vtest.avi, docs/models.md */
     .cli_confidence_one = 0.40f, /* the same, with one look */
     .file = "ssd-oidv4.onnx",
     SSD_OIDV4_IO,
     .description = "SSD-MobileNetV2, Open Images V4, 24 classes (people, vehicles, animals, objects)"},
    {.name = "ssd-oidv4-int8",
     .cli_second_look = 1,
     .cli_confidence = 0.35f, /* the same measures as ssd-oidv4 */
     .cli_confidence_one = 0.40f,
     .file = "ssd-oidv4-int8-v2.onnx",
     .labels_file = "ssd-oidv4.labels",
     SSD_OIDV4_IO,
     .description = "ssd-oidv4 quantized to int8 (QDQ, calibrated; docs/models.md)"},
    {.name = "ultraface",
     .cli_confidence = 0.50f, /* best F1 on faces in the photo media and Megamind.avi */
     .file = "ultraface-rfb320.onnx",
     ULTRAFACE_IO,
     .description = "UltraFace RFB-320 face detector"},
    {.name = "ultraface-int8",
     .cli_confidence = 0.45f, /* the same measure as ultraface */
     .file = "ultraface-int8-v2.onnx",
     ULTRAFACE_IO,
     .description = "ultraface quantized to int8 (QDQ, calibrated; docs/models.md)"},
    {.name = "face-embed",
     .file = "face-embed-batch.onnx",
     .postprocessor = "embedding",
     .width = 112,
     .height = 112,
     .channels = 3,
     .layout = "NCHW",
     .fit = OSP_FIT_RESIZE,
     .mean = {127.f, 127.f, 127.f},
     .std = {128.f, 128.f, 128.f},
     .confidence = 0.f,
     .nms_iou = 0.f,
     .batches = 1, /* face-embed-batch.onnx: tools/onnx_batch.py */
     .description = "512-d face embedding of a 112x112 face crop"},
    {.name = "blazeface",
     .cli_confidence = 0.45f, /* the same measure as ultraface */
     .file = "blazeface.onnx",
     .postprocessor = "blazeface",
     .width = 128,
     .height = 128,
     .channels = 3,
     .layout = "NHWC",
     .fit = OSP_FIT_RESIZE,
     /* px/127.5 - 1 */
     .mean = {127.5f, 127.5f, 127.5f},
     .std = {127.5f, 127.5f, 127.5f},
     .confidence = 0.5f,
     .nms_iou = 0.3f,
     .labels = "face",
     .description = "MediaPipe BlazeFace (front camera) face detector"},
    {.name = "ocr-det",
     .file = "ocr-det.onnx",
     .postprocessor = "dbnet",
     .width = 640,
     .height = 640,
     .channels = 3,
     .layout = "NCHW",
     .fit = OSP_FIT_LETTERBOX,
     /* ImageNet mean/std on 0..255 pixels */
     .mean = {123.675f, 116.28f, 103.53f},
     .std = {58.395f, 57.12f, 57.375f},
     .confidence = 0.6f,
     .nms_iou = 0.f,
     .labels = "text",
     .description = "PP-OCRv4 text detector (DBNet): rotated text boxes"},
    {.name = "ocr-rec",
     .file = "ocr-rec.onnx",
     .postprocessor = "ctc",
     /* height 48, dynamic width: a line runs at its own width, 320..1280 */
     .width = 1280,
     .height = 48,
     .channels = 3,
     .layout = "NCHW",
     .fit = OSP_FIT_RESIZE,
     /* (px/255 - 0.5) / 0.5 */
     .mean = {127.5f, 127.5f, 127.5f},
     .std = {127.5f, 127.5f, 127.5f},
     .confidence = 0.f,
     .nms_iou = 0.f,
     .description = "PP-OCRv4 text line recognizer (CTC; Chinese and Latin, 6623 symbols)"},
    {.name = "face-expression",
     .file = "face-expression.onnx",
     .postprocessor = "classifier",
     .width = 224,
     .height = 224,
     .channels = 3,
     .layout = "NCHW",
     .fit = OSP_FIT_RESIZE,
     .mean = {0.f, 0.f, 0.f},
     .std = {255.f, 255.f, 255.f},
     .confidence = 0.f,
     .nms_iou = 0.f,
     .labels = "angry\ndisgust\nfear\nhappy\nsad\nsurprise\nneutral",
     .description = "7-class facial expression of a face crop (faceplugin)"},
    {.name = "face-liveness",
     .file = "face-liveness.onnx",
     .postprocessor = "classifier",
     .width = 128,
     .height = 128,
     .channels = 3,
     .layout = "NCHW",
     .fit = OSP_FIT_RESIZE,
     /* raw 0..255 pixels */
     .mean = {0.f, 0.f, 0.f},
     .std = {1.f, 1.f, 1.f},
     .confidence = 0.f,
     .nms_iou = 0.f,
     .description = "3-class face anti-spoofing of a face crop with context (faceplugin)"},
};

int osp_catalog_count(void) { return (int)(sizeof CATALOG / sizeof CATALOG[0]); }

const osp_catalog_entry_t *osp_catalog_at(int i) {
    return (i >= 0 && i < osp_catalog_count()) ? &CATALOG[i] : NULL;
}

const osp_catalog_entry_t *osp_catalog_find(const char *name) {
    for (int i = 0; name && i < osp_catalog_count(); i++)
        if (strcmp(CATALOG[i].name, name) == 0) return &CATALOG[i];
    return NULL;
}

void osp_cache_dir(char *buf, size_t n) {
    const char *c = getenv("OSPREY_CACHE");
    if (c && *c) {
        snprintf(buf, n, "%s", c);
        return;
    }
    const char *home = getenv("HOME");
    snprintf(buf, n, "%s/.cache/osprey", home && *home ? home : ".");
}

void osp_data_dir(char *buf, size_t n) {
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    buf[0] = '\0';
    if (len <= 0) return;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = '\0'; /* the binary's folder */
    slash = strrchr(exe, '/');
    if (!slash || strcmp(slash + 1, "bin") != 0) return;
    *slash = '\0';
    snprintf(buf, n, "%s/share/osprey", exe);
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int osp_catalog_file(const char *file, char *buf, size_t n) {
    char dir[900], data[900], at[1100];
    osp_cache_dir(dir, sizeof dir);
    snprintf(buf, n, "%s/models/%s", dir, file);
    if (is_file(buf)) return 1;
    osp_data_dir(data, sizeof data);
    snprintf(at, sizeof at, "%s/models/%s", data, file);
    if (!data[0] || !is_file(at)) return 0;
    snprintf(buf, n, "%s", at);
    return 1;
}

int osp_catalog_path(const osp_catalog_entry_t *e, char *buf, size_t n) {
    return osp_catalog_file(e->file, buf, n);
}
