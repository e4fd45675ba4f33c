/* Capped exponential backoff (backoff.h). */
#include "video/backoff.h"

double osp_backoff_delay(double first, double max, int attempt) {
    if (first <= 0) first = OSP_BACKOFF_FIRST_S;
    if (max <= 0) max = OSP_BACKOFF_MAX_S;
    if (max < first) max = first;
    double d = first;
    /* doubling stops at the cap, so a long outage never overflows */
    for (int i = 0; i < attempt && d < max; i++) d *= 2;
    return d < max ? d : max;
}
