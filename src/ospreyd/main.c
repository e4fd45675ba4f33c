/* ospreyd: the pool worker. A host starts it and speaks the binary pool
 * protocol over stdin/stdout (docs/protocol.md), or connects to it over a
 * socket with --listen. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "wire/http.h"

static void usage(FILE *out) {
    fputs("usage: ospreyd [--listen unix:PATH|tcp:HOST:PORT] [--config FILE] [--max-frame BYTES]\n"
          "               [--http [HOST:]PORT]\n"
          "\n"
          "The osprey pool worker. Without --listen it reads request frames on stdin and\n"
          "writes replies on stdout (stderr carries logs only): the first frame is the\n"
          "startup config, answered by the ready reply. See docs/protocol.md.\n"
          "\n"
          "options:\n"
          "  --listen unix:PATH     serve many connections on a Unix socket (extension);\n"
          "  --listen tcp:HOST:PORT   or on TCP; each connection does its own handshake,\n"
          "                         and all share the loaded models\n"
          "  --config FILE          with --listen: a startup config (the same JSON as the\n"
          "                         first frame) whose models are loaded before serving\n"
          "  --max-frame BYTES      largest request frame accepted (default 67108864);\n"
          "                         a larger one is answered with an error and its\n"
          "                         connection closed\n"
          "  --http [HOST:]PORT     serve HTTP on its own threads: /healthz, /readyz,\n"
          "                         /v1/models, /v1/stats, /metrics (Prometheus) and a\n"
          "                         live dashboard at / (docs/http.md); HOST defaults\n"
          "                         to 127.0.0.1, anything else is logged\n"
          "  -h, --help             this text\n"
          "\n"
          "stdin EOF, SIGTERM or SIGINT: stop reading, answer everything in flight, exit 0.\n",
          out);
}

int main(int argc, char **argv) {
    osp_server_opts_t o = {.stdio_in = 0, .stdio_out = 1};
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"config", required_argument, NULL, 'c'},
        {"max-frame", required_argument, NULL, 'm'},
        {"http", required_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': o.listen = optarg; break;
        case 'c': o.config_path = optarg; break;
        case 'H': o.http = optarg; break;
        case 'm': {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 16 || v > 0xFFFFFFFFull) {
                fprintf(stderr, "ospreyd: --max-frame must be a byte count from 16 to 4294967295, not '%s'\n", optarg);
                return 2;
            }
            o.max_frame = (uint32_t)v;
            break;
        }
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ospreyd: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o.http) {
        char host[256], err[300];
        unsigned port;
        if (osp_http_bind_parse(o.http, host, sizeof host, &port, err, sizeof err)) {
            fprintf(stderr, "ospreyd: %s\n", err);
            return 2;
        }
    }
    if (o.config_path && !o.listen) {
        fprintf(stderr, "ospreyd: --config goes with --listen (on stdin the first frame is the config)\n");
        return 2;
    }
    return osp_server_run(&o);
}
