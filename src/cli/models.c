/* osprey models: the built-in catalog. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "model/model.h"

int osp_cmd_models(int argc, char **argv) {
    int json = 0;
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    opterr = 0; /* the message below is this command's own */
    while ((c = getopt_long(argc, argv, "-h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 1: /* "-h": the words in their order; models takes none */
            fprintf(stderr, "osprey models: unknown option '%s'\n", optarg);
            return 2;
        case 'h':
            puts("usage: osprey models [--json]\n"
                 "\n"
                 "Lists the built-in models: name, whether the file is present, where it is\n"
                 "(or \"not downloaded\"), input shape, postprocessor and whether it runs\n"
                 "batches as one call (a dynamic batch axis). A file is looked for in the\n"
                 "cache's models folder ($OSPREY_CACHE, default ~/.cache/osprey), then in\n"
                 "share/osprey/models beside an installed osprey's bin/ (make install).\n"
                 "scripts/fetch-assets.sh downloads them into the cache.\n"
                 "\n"
                 "  --json   one JSON object per model instead of a table");
            return 0;
        default:
            fprintf(stderr, "osprey models: unknown option '%s'\n", argv[optind - 1]);
            return 2;
        }
    }
    /* FILE: where the file is, or "not downloaded (<file>)" */
    int n = osp_catalog_count(), width = 4;
    for (int i = 0; i < n; i++) {
        char path[1024];
        const osp_catalog_entry_t *e = osp_catalog_at(i);
        int w = osp_catalog_path(e, path, sizeof path) ? (int)strlen(path) : (int)strlen(e->file) + 17;
        if (w > width) width = w;
    }
    if (!json)
        printf("%-15s %-8s %-*s %-19s %-15s %-6s %s\n", "NAME", "PRESENT", width, "FILE", "INPUT",
               "POST", "BATCH", "DESCRIPTION");
    for (int i = 0; i < n; i++) {
        const osp_catalog_entry_t *e = osp_catalog_at(i);
        char path[1024], shape[64], where[1100];
        int present = osp_catalog_path(e, path, sizeof path);
        if (present)
            snprintf(where, sizeof where, "%s", path);
        else
            snprintf(where, sizeof where, "not downloaded (%s)", e->file);
        if (strcmp(e->layout, "NHWC") == 0)
            snprintf(shape, sizeof shape, "[1,%d,%d,%d] NHWC", e->height, e->width, e->channels);
        else
            snprintf(shape, sizeof shape, "[1,%d,%d,%d] NCHW", e->channels, e->height, e->width);
        if (json) {
            osp_jw_t w = {0};
            osp_jw_obj_open(&w);
            osp_jw_key(&w, "name");
            osp_jw_str(&w, e->name);
            osp_jw_key(&w, "file");
            osp_jw_str(&w, e->file);
            osp_jw_key(&w, "path");
            osp_jw_str(&w, path);
            osp_jw_key(&w, "input");
            osp_jw_str(&w, shape);
            osp_jw_key(&w, "postprocessor");
            osp_jw_str(&w, e->postprocessor);
            osp_jw_key(&w, "present");
            osp_jw_bool(&w, present);
            osp_jw_key(&w, "batches");
            osp_jw_bool(&w, e->batches);
            osp_jw_obj_close(&w);
            printf("%s\n", w.buf);
            osp_jw_free(&w);
        } else
            printf("%-15s %-8s %-*s %-19s %-15s %-6s %s\n", e->name, present ? "yes" : "no", width,
                   where, shape, e->postprocessor, e->batches ? "yes" : "no", e->description);
    }
    return 0;
}
