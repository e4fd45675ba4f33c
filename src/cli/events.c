/* Source events on stderr and as records (events.h). */
#include "cli/events.h"
#include "log/log.h"

#include <stdio.h>

void osp_cli_event_log(const char *cmd, const osp_source_event_t *e) {
    char text[768];
    osp_source_event_text(e, text, sizeof text);
    osp_log(OSP_LOG_WARN, "osprey %s: %s", cmd, text); /* stderr is unbuffered: one write */
}

void osp_cli_event_record(osp_jw_t *w, const osp_source_event_t *e, const char *sensor_id) {
    osp_jw_reset(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "source");
    osp_jw_str(w, e->name);
    osp_jw_key(w, "event");
    osp_jw_str(w, osp_source_event_name(e->kind));
    osp_jw_key(w, "time");
    osp_jw_num(w, e->time, 3);
    osp_jw_key(w, "reason");
    osp_jw_str(w, e->reason ? e->reason : "");
    osp_jw_key(w, "frame");
    osp_jw_int(w, e->frame);
    osp_jw_key(w, "framesLost");
    osp_jw_int(w, e->frames_lost);
    if (e->kind == OSP_SOURCE_DROP) {
        osp_jw_key(w, "retryInMs");
        osp_jw_num(w, e->retry_in_s * 1000.0, 1);
    } else {
        osp_jw_key(w, "downMs");
        osp_jw_num(w, e->down_s * 1000.0, 1);
        osp_jw_key(w, "attempts");
        osp_jw_int(w, e->attempts);
    }
    if (sensor_id) {
        osp_jw_key(w, "sensor_id");
        osp_jw_str(w, sensor_id);
    }
    osp_jw_obj_close(w);
}
