/*
 * A scratch folder for one test program: TMPDIR_SETUP / TMPDIR_TEARDOWN as
 * cmocka group set-up and tear-down, g_dir its path. The tear-down removes
 * the files the tests left in it (one level deep) and the folder.
 */
#ifndef OSP_TEST_TMPDIR_H
#define OSP_TEST_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char g_dir[] = "/tmp/osp_test_XXXXXX";

static int setup_dir(void **s) {
    (void)s;
    return mkdtemp(g_dir) ? 0 : -1;
}

static int remove_dir(void **s) {
    (void)s;
    DIR *d = opendir(g_dir);
    if (!d) return -1;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    return rmdir(g_dir);
}

#endif
