/* ospreyd: the pool worker. A host starts it and speaks the binary pool
 * protocol over stdin/stdout (docs/protocol.md), or connects to it over a
 * socket with --listen; Frigate reaches it as its zmq detector with --zmq
 * (docs/frigate.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/args.h"
#include "log/log.h"
#include "server/server.h"
#include "version/version.h"
#include "wire/frigate.h"
#include "wire/http.h"

static void usage(FILE *out) {
    fputs("usage: ospreyd [--listen unix:PATH|tcp:HOST:PORT] [--config FILE] [--max-frame BYTES]\n"
          "               [--model-root DIR]... [--auth-token-file FILE] [--socket-mode MODE]\n"
          "               [--read-only] [--handshake-timeout-ms MS] [--run-timeout-ms MS]\n"
          "               [--http [HOST:]PORT] [--log-format plain|text|json] [--log-json]\n"
          "               [--zmq ENDPOINT [--zmq-labelmap FILE] [--zmq-accept-models DIR]\n"
          "                [--zmq-pixel-format rgb|bgr] [--zmq-allow-remote]]\n"
          "               [--jobs redis://HOST:PORT[/DB]/STREAM [--group G] [--consumer NAME]\n"
          "                [--claim-idle-ms MS] [--max-deliveries N]]\n"
          "       ospreyd --version\n"
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
          "                         stdin, and ospreyd serves until SIGTERM or SIGINT.\n"
          "                         Its \"cameras\" list (docs/cameras.md) is watched by\n"
          "                         ospreyd itself: then --config alone is enough, and\n"
          "                         SIGHUP re-reads the list\n"
          "  --max-frame BYTES      largest request frame accepted (default 67108864);\n"
          "                         a larger one is answered with an error and its\n"
          "                         connection closed\n"
          "  --model-root DIR       with --listen: socket peers may name model, labels and\n"
          "                         stream files only inside DIR (repeatable; default the\n"
          "                         cache's models folder; --config's model folders always)\n"
          "  --auth-token-file FILE   a secret of at least 16 bytes: every socket\n"
          "                         connection's startup config must carry it as\n"
          "                         \"authToken\", every HTTP request but /healthz and the\n"
          "                         dashboard page as \"Authorization: Bearer TOKEN\";\n"
          "                         required to listen (TCP) or serve --http on an address\n"
          "                         other than loopback\n"
          "  --socket-mode MODE     permissions of the unix socket, octal (default 0660)\n"
          "  --read-only            socket connections may not load, replace, unload or\n"
          "                         reconfigure models\n"
          "  --handshake-timeout-ms MS  a socket connection whose startup config has not\n"
          "                         arrived within MS is closed (default 10000)\n"
          "  --run-timeout-ms MS    the bound on one model run, for models whose config\n"
          "                         has no runTimeoutMs (default: 20 x the model's\n"
          "                         measured p99 run, at least 5000; 30000 until it has\n"
          "                         run 10 times); a run past it is answered with an\n"
          "                         error, abandoned, and its model reloaded\n",
          out);
    fputs("  --http [HOST:]PORT     serve HTTP on its own threads: /healthz, /readyz,\n"
          "                         /v1/models, /v1/stats, /metrics (Prometheus) and a\n"
          "                         live dashboard at / (docs/http.md); HOST defaults\n"
          "                         to 127.0.0.1; another address needs --auth-token-file.\n"
          "                         A request's header must arrive within 10 s\n"
          "  --zmq ENDPOINT         also be Frigate's `zmq` detector on ipc://PATH or\n"
          "                         tcp://HOST:PORT (a ROUTER socket Frigate's REQ connects\n"
          "                         to; see docs/frigate.md): its frames go through the same\n"
          "                         admission as the pipe's, and are answered with 20 rows\n"
          "                         [class, score, y_min, x_min, y_max, x_max] in Frigate's\n"
          "                         class ids; a frame that cannot be served in time gets\n"
          "                         zero rows. Frigate sends no credentials: a tcp address\n"
          "                         other than loopback is refused without the next\n"
          "  --zmq-allow-remote     serve --zmq on an address other machines reach, knowing\n"
          "                         anyone who reaches it is served (and, with\n"
          "                         --zmq-accept-models, may upload models); keep it on a\n"
          "                         private network (docs/frigate.md)\n"
          "  --zmq-labelmap FILE    the Frigate labelmap whose ids to answer in (default:\n"
          "                         Frigate's own, COCO's 91 ids minus one); labels map by\n"
          "                         name, a label it lacks is left out\n"
          "  --zmq-accept-models DIR  accept the model files Frigate uploads, written inside\n"
          "                         DIR (at most --max-frame, a plain file name) and loaded;\n"
          "                         without it uploads are refused\n"
          "  --zmq-pixel-format rgb|bgr  the channel order Frigate sends (its model's\n"
          "                         input_pixel_format; default rgb)\n"
          "  --zmq-timeout-ms MS    Frigate's request_timeout_ms (default 200): a frame\n"
          "                         that cannot start within MS - 50 ms of its arrival is\n"
          "                         answered with zero rows while Frigate still waits\n",
          out);
    /* in two parts: one literal may not exceed 4095 characters */
    fputs("  --log-format plain|text|json  the shape of log lines on stderr: the message\n"
          "                         alone (plain), after a UTC timestamp and a level\n"
          "                         (text), or one JSON object {\"time\",\"level\",\"msg\"}\n"
          "                         (json). Default: plain when a host reads the pipe (the\n"
          "                         Python worker's lines), text with --listen or with\n"
          "                         --zmq or --jobs and --config\n"
          "  --log-json             the same as --log-format json\n"
          "  --version              osprey's version, the git commit it was built from,\n"
          "                         the ONNX Runtime version and its execution providers\n",
          out);
    fputs("  --jobs URL             also be one worker of a fleet that shares the jobs of a\n"
          "                         Redis stream (redis://[[USER]:PASS@]HOST:PORT[/DB]/STREAM;\n"
          "                         docs/fleet.md), through a consumer group: jobs go through\n"
          "                         the same admission as the pipe's, at most as many held as\n"
          "                         it admits; results go to each job's reply_to stream, else\n"
          "                         STREAM:results, once per job id. Needs --config\n"
          "  --group G              the consumer group (default osprey; created if absent)\n"
          "  --consumer NAME        this worker's name in the group (default HOSTNAME-PID)\n"
          "  --claim-idle-ms MS     take over jobs another worker has held unanswered this\n"
          "                         long (default 20 x the slowest model's predict, at\n"
          "                         least 2000)\n"
          "  --max-deliveries N     a job delivered more than N times is answered with an\n"
          "                         error instead of run again (default 3)\n"
          "  -h, --help             this text\n"
          "\n"
          "stdin EOF, SIGTERM or SIGINT: stop reading, answer everything in flight, exit 0\n"
          "(3 when a run abandoned past its bound had still not returned).\n",
          out);
}

int main(int argc, char **argv) {
    osp_server_opts_t o = {.stdio_in = 0, .stdio_out = 1};
    int zmq_allow_remote = 0;
    static const struct option longopts[] = {{"listen", required_argument, NULL, 'l'},
                                             {"config", required_argument, NULL, 'c'},
                                             {"max-frame", required_argument, NULL, 'm'},
                                             {"model-root", required_argument, NULL, 'r'},
                                             {"auth-token-file", required_argument, NULL, 't'},
                                             {"socket-mode", required_argument, NULL, 's'},
                                             {"read-only", no_argument, NULL, 'o'},
                                             {"handshake-timeout-ms", required_argument, NULL, 'w'},
                                             {"run-timeout-ms", required_argument, NULL, 'T'},
                                             {"http", required_argument, NULL, 'H'},
                                             {"zmq", required_argument, NULL, 'z'},
                                             {"zmq-labelmap", required_argument, NULL, 'L'},
                                             {"zmq-accept-models", required_argument, NULL, 'A'},
                                             {"zmq-pixel-format", required_argument, NULL, 'P'},
                                             {"zmq-allow-remote", no_argument, NULL, 0x110},
                                             {"zmq-timeout-ms", required_argument, NULL, 0x111},
                                             {"log-format", required_argument, NULL, 'F'},
                                             {"log-json", no_argument, NULL, 'J'},
                                             {"version", no_argument, NULL, 'V'},
                                             {"jobs", required_argument, NULL, 0x100},
                                             {"group", required_argument, NULL, 0x101},
                                             {"consumer", required_argument, NULL, 0x102},
                                             {"claim-idle-ms", required_argument, NULL, 0x103},
                                             {"max-deliveries", required_argument, NULL, 0x104},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c, log_set = 0;
    osp_log_format_t log_format = OSP_LOG_PLAIN;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': o.listen = optarg; break;
        case 'c': o.config_path = optarg; break;
        case 'H': o.http = optarg; break;
        case 'm': {
            long long v;
            if (osp_args_whole(optarg, 10, 16, 0xFFFFFFFFll, &v)) {
                fprintf(stderr,
                        "ospreyd: --max-frame must be a byte count from 16 to 4294967295, not '%s'\n",
                        optarg);
                return 2;
            }
            o.max_frame = (uint32_t)v;
            break;
        }
        case 'r':
            if (o.n_model_roots == OSP_SERVER_MAX_ROOTS) {
                fprintf(stderr, "ospreyd: at most %d --model-root options\n", OSP_SERVER_MAX_ROOTS);
                return 2;
            }
            o.model_roots[o.n_model_roots++] = optarg;
            break;
        case 't': o.auth_token_file = optarg; break;
        case 's': {
            long long v;
            if (osp_args_whole(optarg, 8, 1, 0777, &v)) {
                fprintf(stderr,
                        "ospreyd: --socket-mode takes octal permissions such as 0660, not '%s'\n",
                        optarg);
                return 2;
            }
            o.socket_mode = (int)v;
            break;
        }
        case 'o': o.read_only = 1; break;
        case 'w':
            if (osp_args_int_in("ospreyd", "--handshake-timeout-ms", optarg, 1, 3600000,
                                &o.handshake_ms))
                return 2;
            break;
        case 'T':
            if (osp_args_int_in("ospreyd", "--run-timeout-ms", optarg, 1, 86400000, &o.run_timeout_ms))
                return 2;
            break;
        case 'z': o.zmq = optarg; break;
        case 0x110: zmq_allow_remote = 1; break;
        case 0x111:
            if (osp_args_int_in("ospreyd", "--zmq-timeout-ms", optarg, 100, 600000, &o.zmq_timeout_ms))
                return 2;
            break;
        case 'L': o.zmq_labelmap = optarg; break;
        case 'A': o.zmq_accept_models = optarg; break;
        case 'P':
            if (strcmp(optarg, "rgb") != 0 && strcmp(optarg, "bgr") != 0) {
                fprintf(stderr, "ospreyd: --zmq-pixel-format takes rgb or bgr, not '%s'\n", optarg);
                return 2;
            }
            o.zmq_bgr = strcmp(optarg, "bgr") == 0;
            break;
        case 'F':
            if (osp_log_format_parse(optarg, &log_format)) {
                fprintf(stderr, "ospreyd: --log-format takes plain, text or json, not '%s'\n", optarg);
                return 2;
            }
            log_set = 1;
            break;
        case 'J':
            log_format = OSP_LOG_JSON;
            log_set = 1;
            break;
        case 'V': osp_version_print(stdout, "ospreyd"); return 0;
        /* the fleet (docs/fleet.md) */
        case 0x100: o.jobs = optarg; break;
        case 0x101: o.jobs_group = optarg; break;
        case 0x102: o.jobs_consumer = optarg; break;
        case 0x103:
            if (osp_args_int_in("ospreyd", "--claim-idle-ms", optarg, 1, 86400000,
                                &o.jobs_claim_idle_ms))
                return 2;
            break;
        case 0x104:
            if (osp_args_int_in("ospreyd", "--max-deliveries", optarg, 1, 1000, &o.jobs_max_deliveries))
                return 2;
            break;
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
        /* the dashboard, metrics and model names are the server's, and soon its
         * cameras' pictures: beyond loopback only with a token (docs/security.md) */
        if (!osp_http_host_is_loopback(host) && !o.auth_token_file) {
            fprintf(stderr,
                    "ospreyd: --http %s is reachable from other machines: give --auth-token-file "
                    "FILE (every request but /healthz must then carry it as Authorization: "
                    "Bearer), or bind 127.0.0.1\n",
                    o.http);
            return 2;
        }
    }
    if (o.zmq && !osp_frigate_endpoint_is_local(o.zmq) && !zmq_allow_remote) {
        fprintf(stderr,
                "ospreyd: --zmq %s is reachable from other machines, and Frigate's detector "
                "protocol has no authentication: bind tcp://127.0.0.1:PORT or ipc://PATH, or "
                "give --zmq-allow-remote on a private network (docs/frigate.md)\n",
                o.zmq);
        return 2;
    }
    if (zmq_allow_remote && !o.zmq) {
        fprintf(stderr, "ospreyd: --zmq-allow-remote goes with --zmq\n");
        return 2;
    }
    int cameras = osp_server_config_has_cameras(o.config_path);
    if (o.config_path && !o.listen && !o.zmq && !o.jobs && !cameras) {
        fprintf(stderr, "ospreyd: --config goes with --listen or --zmq, or lists \"cameras\" (on "
                        "stdin the first frame is the config)\n");
        return 2;
    }
    if (o.jobs ? !o.config_path
               : (o.jobs_group || o.jobs_consumer || o.jobs_claim_idle_ms || o.jobs_max_deliveries)) {
        fprintf(stderr, o.jobs ? "ospreyd: --jobs needs --config (the models to serve jobs with)\n"
                               : "ospreyd: --group, --consumer, --claim-idle-ms and "
                                 "--max-deliveries go with --jobs\n");
        return 2;
    }
    if (!o.zmq && (o.zmq_labelmap || o.zmq_accept_models || o.zmq_bgr || o.zmq_timeout_ms)) {
        fprintf(stderr, "ospreyd: --zmq-labelmap, --zmq-accept-models, --zmq-pixel-format and "
                        "--zmq-timeout-ms go with --zmq\n");
        return 2;
    }
    if (!o.listen && (o.n_model_roots || o.socket_mode || o.read_only || o.handshake_ms)) {
        /* the stdio host started the worker: nothing of this applies to it */
        fprintf(stderr, "ospreyd: --model-root, --socket-mode, --read-only and "
                        "--handshake-timeout-ms go with --listen\n");
        return 2;
    }
    if (o.auth_token_file && !o.listen && !o.http) {
        fprintf(stderr, "ospreyd: --auth-token-file goes with --listen or --http (Frigate's zmq "
                        "protocol carries no token)\n");
        return 2;
    }
    /* a host on the pipe reads the lines the Python worker wrote; a daemon's
     * lines go to a log that wants the time and the level */
    int pipe_host = !o.listen && !((o.zmq || o.jobs || cameras) && o.config_path);
    osp_log_set_format(log_set ? log_format : pipe_host ? OSP_LOG_PLAIN : OSP_LOG_TEXT);
    return osp_server_run(&o);
}
