/* osprey models: the built-in catalog. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "model/model.h"

int osp_cmd_models(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            puts("usage: osprey models [--json]\n"
                 "\n"
                 "Lists the built-in models: name, file, input shape, postprocessor, whether\n"
                 "it runs batches as one call (a dynamic batch axis), and whether the file\n"
                 "is present in the cache ($OSPREY_CACHE, default\n"
                 "~/.cache/osprey). scripts/fetch-assets.sh downloads them.\n"
                 "\n"
                 "  --json   one JSON object per model instead of a table");
            return 0;
        } else {
            fprintf(stderr, "osprey models: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!json)
        printf("%-15s %-8s %-28s %-19s %-15s %-6s %s\n", "NAME", "PRESENT", "FILE", "INPUT",
               "POST", "BATCH", "DESCRIPTION");
    for (int i = 0; i < osp_catalog_count(); i++) {
        const osp_catalog_entry_t *e = osp_catalog_at(i);
        char path[1024], shape[64];
        struct stat st;
        osp_catalog_path(e, path, sizeof path);
        int present = stat(path, &st) == 0 && S_ISREG(st.st_mode);
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
            printf("%-15s %-8s %-28s %-19s %-15s %-6s %s\n", e->name, present ? "yes" : "no",
                   e->file, shape, e->postprocessor, e->batches ? "yes" : "no", e->description);
    }
    return 0;
}
