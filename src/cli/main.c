/* osprey: the command-line front of the inference server. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "log/log.h"
#include "version/version.h"

static void usage(FILE *out) {
    fputs("usage: osprey [--log-format plain|text|json | --log-json] <command> [options]\n"
          "\n"
          "Real-time inference for camera and video analytics.\n"
          "\n"
          "commands:\n"
          "  detect   run a model over images and videos, one JSON line per frame\n"
          "  listen   find speech in a WAV file with Silero VAD (streaming scorer)\n"
          "  models   list the built-in model catalog and which models are downloaded\n"
          "  ocr      read the text in images (text detection + recognition), JSON lines\n"
          "  compare  cosine similarity of the faces in two images\n"
          "  faces    the face library detect --recognize names faces from: add, list, remove\n"
          "  quantize make an int8 model from a float one, calibrated on images and videos\n"
          "  segment  cut a video into events, describe them with a VLM, check a procedure\n"
          "  jobs     submit jobs to a fleet of ospreyd --jobs workers, or show its state\n"
          "  version  the version, the git commit, ONNX Runtime's version and providers\n"
          "\n"
          "Run 'osprey <command> --help' for a command's options.\n"
          "Messages on stderr (a model loaded, a camera dropped, an input that failed) are\n"
          "plain lines; --log-format text puts a UTC timestamp and a level before each,\n"
          "--log-json (--log-format json) makes each a JSON object {\"time\",\"level\",\"msg\"}.\n"
          "Models and media live in $OSPREY_CACHE (default ~/.cache/osprey);\n"
          "scripts/fetch-assets.sh downloads them.\n",
          out);
}

int main(int argc, char **argv) {
    while (argc >= 2 && strncmp(argv[1], "--log-", 6) == 0) {
        osp_log_format_t f = OSP_LOG_JSON;
        if (strcmp(argv[1], "--log-format") == 0 && argc >= 3 &&
            osp_log_format_parse(argv[2], &f) == 0) {
            argc--;
            argv++;
        } else if (strcmp(argv[1], "--log-json") != 0) {
            fprintf(stderr, "osprey: %s: use --log-format plain|text|json or --log-json\n", argv[1]);
            return 2;
        }
        osp_log_set_format(f);
        argc--;
        argv++;
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "detect") == 0) return osp_cmd_detect(argc - 1, argv + 1);
    if (strcmp(cmd, "models") == 0) return osp_cmd_models(argc - 1, argv + 1);
    if (strcmp(cmd, "ocr") == 0) return osp_cmd_ocr(argc - 1, argv + 1);
    if (strcmp(cmd, "compare") == 0) return osp_cmd_compare(argc - 1, argv + 1);
    if (strcmp(cmd, "faces") == 0) return osp_cmd_faces(argc - 1, argv + 1);
    if (strcmp(cmd, "listen") == 0) return osp_cmd_listen(argc - 1, argv + 1);
    if (strcmp(cmd, "quantize") == 0) return osp_cmd_quantize(argc - 1, argv + 1);
    if (strcmp(cmd, "segment") == 0) return osp_cmd_segment(argc - 1, argv + 1);
    if (strcmp(cmd, "jobs") == 0) return osp_cmd_jobs(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        osp_version_print(stdout, "osprey");
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "osprey: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
