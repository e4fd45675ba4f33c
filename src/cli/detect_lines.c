/* The per-frame records of osprey detect: one JSON line each on stdout. */
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "cli/detect.h"
#include "wire/frame.h"

const char *osp_detect_base_name(const char *path) {
    if (strcmp(path, "-") == 0) return "stdin";
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

void osp_detect_format(osp_jw_t *w, const char *input, long frame, double t, const osp_model_t *m,
                       const osp_result_t *r, const char *error) {
    osp_jw_reset(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "source");
    osp_jw_str(w, input);
    osp_jw_key(w, "frame");
    osp_jw_int(w, frame);
    if (t >= 0) {
        osp_jw_key(w, "t");
        osp_jw_num(w, t, 3);
    }
    if (error) {
        osp_jw_key(w, "error");
        osp_jw_str(w, error);
        osp_wire_json_empty_detections(w);
    } else {
        osp_model_put_result(w, m, r, 1);
    }
}

/* flush: a live source's lines are wanted as they happen, not a pipe
 * buffer later. */
void osp_detect_put_line(const osp_jw_t *w, int flush) {
    flockfile(stdout);
    fwrite(w->buf, 1, w->len, stdout);
    fputc('\n', stdout);
    if (flush) fflush(stdout);
    funlockfile(stdout);
}

void osp_detect_emit(const osp_detect_opts_t *o, osp_jw_t *w, double captured, int flush) {
    osp_jw_key(w, "ageMs");
    osp_jw_num(w, (osp_now_s() - captured) * 1000.0, 1);
    osp_jw_obj_close(w);
    if (!o->no_json) osp_detect_put_line(w, flush);
    if (o->sink && !w->oom) osp_sink_put(o->sink, w->buf);
}
