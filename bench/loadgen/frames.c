/*
 * loadgen/frames: the frame every request of a run carries, made once: the
 * picture (--image, or the cache's messi5.jpg) scaled to --size as RGB,
 * its JPEG (--frame jpeg), the infer_batch items (--batch), or the RGB
 * written once into a POSIX shared-memory region (--frame shm), which is
 * unlinked at exit and on a fatal signal, and registered with each server
 * (register_shm).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libyuv/scale_rgb.h>
#include <turbojpeg.h>

#include "image/image.h"
#include "loadgen.h"
#include "wire/encode.h"

static char g_shm_name[64]; /* set while the region exists: unlinked at exit */

void lg_shm_cleanup(void) {
    if (g_shm_name[0]) shm_unlink(g_shm_name);
    g_shm_name[0] = '\0';
}

static void shm_on_signal(int sig) {
    if (g_shm_name[0]) shm_unlink(g_shm_name); /* unlink(2) underneath: fine in a handler */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Create the region, write the frame once. 0, or -1 (nothing left behind). */
int lg_shm_create(const uint8_t *frame, size_t bytes) {
    snprintf(g_shm_name, sizeof g_shm_name, "/osprey-loadgen-%d", (int)getpid());
    atexit(lg_shm_cleanup);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT, SIGFPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], shm_on_signal);
    int fd = shm_open(g_shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        fprintf(stderr, "%s: shm_open %s: %s\n", WHO, g_shm_name, strerror(errno));
        g_shm_name[0] = '\0';
        return -1;
    }
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)bytes) == 0)
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "%s: shared memory %s (%zu bytes): %s\n", WHO, g_shm_name, bytes,
                strerror(errno));
        close(fd);
        lg_shm_cleanup();
        return -1;
    }
    close(fd);
    memcpy(p, frame, bytes);
    munmap(p, bytes); /* the pages stay in the object; the server maps them itself */
    return 0;
}

/* The infer_batch items: n x [u32 w][u32 h][u8 fmt][u32 size][pixels]. */
int lg_make_batch_items(const opts_t *o, frame_t *f, int n) {
    size_t px = (size_t)o->w * o->h * 3, one = 13 + px;
    free(f->items);
    f->items = malloc(one * (size_t)n);
    if (!f->items) return -1;
    for (int i = 0; i < n; i++)
        osp_wire_encode_item(f->items + one * (size_t)i, one, (uint32_t)o->w, (uint32_t)o->h,
                             OSP_WIRE_FMT_RGB, f->rgb, (uint32_t)px);
    f->items_len = one * (size_t)n;
    f->nitems = n;
    return 0;
}

int lg_make_frame(const opts_t *o, frame_t *f) {
    char path[1200], err[256];
    if (o->image) {
        snprintf(path, sizeof path, "%s", o->image);
    } else {
        char cache[1024];
        osp_cache_dir(cache, sizeof cache);
        snprintf(path, sizeof path, "%s/media/messi5.jpg", cache);
    }
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    if (!dec || osp_image_load(dec, path, &img, err, sizeof err)) {
        fprintf(stderr, "%s: %s: %s\n", WHO, path, err);
        return -1;
    }
    osp_decoder_free(dec);
    f->rgb = aligned_alloc(4096, ((size_t)o->w * o->h * 3 + 4095) & ~(size_t)4095);
    if (!f->rgb) return -1;
    if (img.width == o->w && img.height == o->h && img.stride == o->w * 3) {
        memcpy(f->rgb, img.data, (size_t)o->w * o->h * 3);
    } else if (RGBScale(img.data, img.stride, img.width, img.height, f->rgb, o->w * 3, o->w, o->h,
                        kFilterBilinear)) {
        fprintf(stderr, "%s: RGBScale to %dx%d failed\n", WHO, o->w, o->h);
        return -1;
    }
    osp_image_free(&img);
    if (o->jpeg) {
        tjhandle enc = tjInitCompress();
        if (!enc || tjCompress2(enc, f->rgb, o->w, o->w * 3, o->h, TJPF_RGB, &f->jpg, &f->jpg_len,
                                TJSAMP_420, o->quality, 0)) {
            fprintf(stderr, "%s: JPEG encode failed\n", WHO);
            return -1;
        }
        tjDestroy(enc);
    }
    return 0;
}

/* register_shm on this server; sets s->region. */
int lg_shm_register(srv_t *s, size_t bytes) {
    char cmd[200], body[1024];
    snprintf(cmd, sizeof cmd, "{\"cmd\":\"register_shm\",\"name\":\"%s\",\"size\":%zu}",
             g_shm_name, bytes);
    if (lg_command_sync(s, cmd, body, sizeof body)) return -1;
    const char *st = lg_json_val(body, "status"), *id = lg_json_val(body, "regionId");
    if (!st || strncmp(st, "\"ok\"", 4) != 0 || !id) {
        fprintf(stderr, "%s: register_shm: %s\n", WHO, body);
        return -1;
    }
    s->region = (uint32_t)strtoul(id, NULL, 10);
    return 0;
}
