/*
 * sinkopt: the --mqtt options every command that publishes its records
 * shares, and what a sink's end means for the exit status.
 *
 *   --mqtt URL               mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT]/TOPIC
 *   --mqtt-user NAME         wins over the URL's user
 *   --mqtt-password-file F   the password: F wins over $OSPREY_MQTT_PASSWORD,
 *                            which wins over the URL's
 *   --mqtt-ca FILE           mqtts: the CA that signed the broker's certificate
 *
 * The values point into argv (the caller's); nothing here is freed.
 */
#ifndef OSP_CLI_SINKOPT_H
#define OSP_CLI_SINKOPT_H

#include <stdatomic.h>

#include "publish/sink.h"

#define OSP_CLI_MQTT_HELP                                                                       \
    "  --mqtt mqtt://[USER@]HOST[:PORT]/TOPIC  publish each record (QoS 1); mqtts:// for TLS\n" \
    "  --mqtt-user NAME         the login's user (wins over the URL's)\n"                       \
    "  --mqtt-password-file F   the password, F's first line; else $OSPREY_MQTT_PASSWORD;\n"    \
    "                           else the URL's (visible to other users: avoid)\n"               \
    "  --mqtt-ca FILE           mqtts: trust this CA (default: the system's CAs)\n"             \
    "  A broker that refuses the login or the TLS handshake ends the run with exit\n"           \
    "  status 1; one that is down is retried, and one that took no record at all\n"             \
    "  also makes the exit status 1.\n"

typedef struct {
    char *url; /* argv's: its password is overwritten once the sink has it */
    const char *user, *password_file, *ca_file;
    /* set by the command, not options: sink.h's opts of the same names */
    const char *default_topic, *available;
    bool wait_first;
} osp_cli_mqtt_t;

/* 1 when a is one of the options above (v its value), else 0. */
int osp_cli_mqtt_arg(osp_cli_mqtt_t *m, const char *a, char *v);

/* Open the MQTT sink m names (*out NULL when there is no --mqtt). refused is
 * set if the broker later refuses the login (sink.h). Returns 0, or 2 after
 * one line on stderr. */
int osp_cli_mqtt_open(const char *cmd, osp_cli_mqtt_t *m, atomic_bool *refused, osp_sink_t **out);

/* Close a sink (NULL: nothing), print its {"sink_stats": …} line on stderr,
 * and return 1 (after one more line naming the sink, its login masked) when
 * it could not deliver at all, else 0. */
int osp_cli_sink_close(const char *cmd, osp_sink_t *s, const char *kind);

#endif
