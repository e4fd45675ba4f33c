/*
 * steps (steps.h): the rules of a cascade once per object, in one place for
 * every caller.
 */
#include "track/steps.h"

int osp_steps_wants(const osp_steps_obj_t *o, float area, long frame, int judges) {
    if (!o || o->runs == 0) return 1;
    if (o->runs >= OSP_STEPS_TRIES) return 0;
    if (area >= OSP_STEPS_GROW_AGAIN * o->area) return 1;
    return judges && !o->sure && frame - o->last >= OSP_STEPS_AGAIN_AFTER;
}

int osp_steps_ran(osp_steps_obj_t *o, float area, long frame, const osp_event_names_t *names) {
    o->runs++;
    o->last = frame;
    o->area = area;
    int sure = names->name[0] || names->plate[0];
    float score = names->name[0] ? names->name_score : names->plate_score;
    if (names->name[0] && names->plate[0] && names->plate_score > score)
        score = names->plate_score;
    /* two results without a name or a text: the latest (the larger crop) */
    if (o->runs > 1 && (o->sure > sure || (sure && o->sure && score < o->score))) return 0;
    o->sure = sure;
    o->score = score;
    return 1;
}

int osp_steps_is_settled(const osp_steps_settled_t *settled, int n, const osp_track_box_t *box,
                         int label) {
    for (int i = 0; i < n; i++)
        if (settled[i].label == label && osp_track_iou(&settled[i].box, box) >= OSP_STEPS_SAME_IOU)
            return 1;
    return 0;
}
