/* sinkopt: see sinkopt.h. */
#define _POSIX_C_SOURCE 200809L
#include "cli/sinkopt.h"

#include <stdio.h>
#include <string.h>

#include "cli/secret.h"

int osp_cli_mqtt_arg(osp_cli_mqtt_t *m, const char *a, char *v) {
    if (strcmp(a, "--mqtt") == 0)
        m->url = v;
    else if (strcmp(a, "--mqtt-user") == 0)
        m->user = v;
    else if (strcmp(a, "--mqtt-password-file") == 0)
        m->password_file = v;
    else if (strcmp(a, "--mqtt-ca") == 0)
        m->ca_file = v;
    else
        return 0;
    return 1;
}

int osp_cli_mqtt_open(const char *cmd, osp_cli_mqtt_t *m, atomic_bool *refused, osp_sink_t **out) {
    *out = NULL;
    if (!m->url) {
        if (m->user || m->password_file || m->ca_file) {
            fprintf(stderr,
                    "osprey %s: --mqtt-user, --mqtt-password-file and --mqtt-ca need --mqtt\n", cmd);
            return 2;
        }
        return 0;
    }
    char pass[1024];
    int got = osp_cli_secret(cmd, "--mqtt-password-file", m->password_file, "OSPREY_MQTT_PASSWORD",
                             pass, sizeof pass);
    if (got < 0) return 2;
    osp_sink_opts_t o = {.prog = cmd,
                         .user = m->user,
                         .password = got ? pass : NULL,
                         .ca_file = m->ca_file,
                         .refused = refused,
                         .default_topic = m->default_topic,
                         .available = m->available,
                         .wait_first = m->wait_first};
    char err[512];
    int rc = osp_sink_open(m->url, &o, out, err, sizeof err);
    osp_cli_forget(pass, sizeof pass);
    osp_cli_hide_url_password(m->url);
    if (rc) {
        fprintf(stderr, "osprey %s: --mqtt: %s\n", cmd, err);
        return 2;
    }
    return 0;
}

int osp_cli_sink_close(const char *cmd, osp_sink_t *s, const char *kind) {
    if (!s) return 0;
    char name[1100];
    snprintf(name, sizeof name, "%s", osp_sink_name(s));
    osp_sink_stats_t st;
    osp_sink_close(s, 10.0, &st);
    fprintf(stderr,
            "{\"sink_stats\": {\"sink\": \"%s\", \"queued\": %lld, \"published\": %lld, "
            "\"acked\": %lld, \"dropped\": %lld, \"failures\": %lld, \"failed\": %s}}\n",
            kind, (long long)st.queued, (long long)st.published, (long long)st.acked,
            (long long)st.dropped, (long long)st.failures, st.failed ? "true" : "false");
    if (!st.failed) return 0;
    fprintf(stderr, "osprey %s: --%s %s: could not deliver: %lld of %lld records dropped\n", cmd,
            kind, name, (long long)st.dropped, (long long)st.queued);
    return 1;
}
