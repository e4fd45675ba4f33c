/* Fixed-rate sampling of frames (rate.h). */
#include "video/rate.h"

void osp_rate_init(osp_rate_t *r, double fps) {
    r->interval = fps > 0 ? 1.0 / fps : 0;
    r->next = 0;
    r->prev = 0;
    r->started = 0;
}

int osp_rate_take(osp_rate_t *r, double t) {
    if (r->interval <= 0) return 1;
    /* Slack for a camera's jitter: --fps equal to its rate must take every
     * frame though each arrives a little early or late. At most half the gap
     * since the previous frame, so a steady file's frame just before the due
     * time is not taken in place of the one at it; the due times advance by
     * whole intervals, so the mean rate holds either way. */
    double slack = r->interval * 0.25;
    if (r->started && (t - r->prev) * 0.5 < slack) slack = (t - r->prev) * 0.5;
    if (slack < 0) slack = 0;
    int take = !r->started || t + slack >= r->next;
    if (take) {
        if (!r->started || t - r->next >= r->interval)
            r->next = t + r->interval; /* first frame, or after a gap: no burst */
        else
            r->next += r->interval;
    }
    r->prev = t;
    r->started = 1;
    return take;
}
