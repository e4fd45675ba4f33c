/* ospreyd: the pool worker. A host starts it and speaks the binary pool
 * protocol over stdin/stdout (docs/protocol.md), or connects to it over a
 * socket with --listen; Frigate reaches it as its zmq detector with --zmq
 * (docs/frigate.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

static void usage(FILE *out) {
    fputs("usage: ospreyd [--listen unix:PATH|tcp:HOST:PORT] [--config FILE] [--max-frame BYTES]\n"
          "               [--zmq ENDPOINT [--zmq-labelmap FILE] [--zmq-accept-models DIR]\n"
          "                [--zmq-pixel-format rgb|bgr]]\n"
          "\n"
          "The osprey pool worker. Without --listen it reads request frames on stdin and\n"
          "writes replies on stdout (stderr carries logs only): the first frame is the\n"
          "startup config, answered by the ready reply. See docs/protocol.md.\n"
          "\n"
          "options:\n"
          "  --listen unix:PATH     serve many connections on a Unix socket (extension);\n"
          "  --listen tcp:HOST:PORT   or on TCP; each connection does its own handshake,\n"
          "                         and all share the loaded models\n"
          "  --config FILE          with --listen or --zmq: a startup config (the same JSON\n"
          "                         as the first frame) whose models are loaded before\n"
          "                         serving; with --zmq and no --listen there is no host on\n"
          "                         stdin, and ospreyd serves until SIGTERM or SIGINT\n"
          "  --max-frame BYTES      largest request frame accepted (default 67108864);\n"
          "                         a larger one is answered with an error and its\n"
          "                         connection closed\n"
          "  --zmq ENDPOINT         also be Frigate's `zmq` detector on ipc://PATH or\n"
          "                         tcp://HOST:PORT (a ROUTER socket Frigate's REQ connects\n"
          "                         to; see docs/frigate.md): its frames go through the same\n"
          "                         admission as the pipe's, and are answered with 20 rows\n"
          "                         [class, score, y_min, x_min, y_max, x_max] in Frigate's\n"
          "                         class ids; a frame that cannot be served in time gets\n"
          "                         zero rows. A tcp address other than loopback is logged\n"
          "  --zmq-labelmap FILE    the Frigate labelmap whose ids to answer in (default:\n"
          "                         Frigate's own, COCO's 91 ids minus one); labels map by\n"
          "                         name, a label it lacks is left out\n"
          "  --zmq-accept-models DIR  accept the model files Frigate uploads, written inside\n"
          "                         DIR (at most 512 MiB, a plain file name) and loaded;\n"
          "                         without it uploads are refused\n"
          "  --zmq-pixel-format rgb|bgr  the channel order Frigate sends (its model's\n"
          "                         input_pixel_format; default rgb)\n"
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
        {"zmq", required_argument, NULL, 'z'},
        {"zmq-labelmap", required_argument, NULL, 'L'},
        {"zmq-accept-models", required_argument, NULL, 'A'},
        {"zmq-pixel-format", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': o.listen = optarg; break;
        case 'c': o.config_path = optarg; break;
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
        case 'z': o.zmq = optarg; break;
        case 'L': o.zmq_labelmap = optarg; break;
        case 'A': o.zmq_accept_models = optarg; break;
        case 'P':
            if (strcmp(optarg, "rgb") != 0 && strcmp(optarg, "bgr") != 0) {
                fprintf(stderr, "ospreyd: --zmq-pixel-format takes rgb or bgr, not '%s'\n", optarg);
                return 2;
            }
            o.zmq_bgr = strcmp(optarg, "bgr") == 0;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ospreyd: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o.config_path && !o.listen && !o.zmq) {
        fprintf(stderr, "ospreyd: --config goes with --listen or --zmq (on stdin the first frame is the config)\n");
        return 2;
    }
    if (!o.zmq && (o.zmq_labelmap || o.zmq_accept_models || o.zmq_bgr)) {
        fprintf(stderr, "ospreyd: --zmq-labelmap, --zmq-accept-models and --zmq-pixel-format go with --zmq\n");
        return 2;
    }
    return osp_server_run(&o);
}
