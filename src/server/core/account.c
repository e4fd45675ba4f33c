/* Each inference request counted once, from its typed outcome; see account.h. */
#include "server/core/account.h"

#include "server/core/stats.h"

void srv_account_received(server_t *s, int idx) { srv_req_received(s, idx); }

void srv_account(server_t *s, int idx, int64_t items, srv_outcome_t o, uint64_t deadline_ms) {
    switch (o.fate) {
    case SRV_SERVED:
        srv_req_served(s, idx);
        srv_stat_frames(s, idx, SRV_OUT_SERVED, items);
        break;
    case SRV_SHED:
        srv_req_shed(s, idx, o.shed);
        if (o.shed == SRV_SHED_DEADLINE)
            srv_stat_shed_deadline(s, idx, deadline_ms, items);
        else
            srv_stat_shed_queue(s, idx, items);
        break;
    case SRV_FAILED:
        srv_req_error(s, idx, o.fail);
        srv_stat_add(s, SRV_ST_ERRORS, 1);
        srv_stat_frames(s, idx, SRV_OUT_ERROR, items);
        break;
    }
}
