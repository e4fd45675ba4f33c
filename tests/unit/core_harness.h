/*
 * A core made alone (core/core.h), with no front end, for the unit tests
 * that drive its door: models of the test backend (a test double:
 * docs/test-backend.md) put into its slots, and the I/O thread's part
 * done by the test (pump). Include after cmocka.h and tmpdir.h: the
 * models' files go into g_dir.
 */
#ifndef OSP_CORE_HARNESS_H
#define OSP_CORE_HARNESS_H

#include <stdio.h>
#include <time.h>

#include "model/model.h"
#include "runtime/runtime.h"
#include "server/core/core.h"
#include "server/core/loads.h"
#include "server/core/loop.h"
#include "server/core/slots.h"
#include "server/core/watchdog.h"

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void path_in(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", g_dir, name);
}

/* An UltraFace-shaped test model that finds one face (score 0.9, the
 * frame's top left quarter) in slot idx; its runs wait for `gate` to
 * exist when gate is not NULL. */
static void put_model(server_t *s, int idx, const char *name, const char *gate, int run_timeout_ms) {
    char path[512], json[2048];
    path_in(path, sizeof path, name);
    snprintf(json, sizeof json,
             "{%s%s%s\"inputs\":[{\"name\":\"input\",\"dtype\":\"float32\",\"shape\":[1,3,32,32]}],"
             "\"outputs\":[{\"name\":\"scores\",\"dtype\":\"float32\",\"shape\":[1,4,2],\"fill\":0,"
             "\"set\":[{\"at\":[0,0,1],\"value\":0.9}]},"
             "{\"name\":\"boxes\",\"dtype\":\"float32\",\"shape\":[1,4,4],\"fill\":0,"
             "\"set\":[{\"at\":[0,0,2],\"value\":0.5},{\"at\":[0,0,3],\"value\":0.5}]}]}",
             gate ? "\"run_block_file\":\"" : "", gate ? gate : "", gate ? "\"," : "");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    osp_model_cfg_t cfg;
    osp_model_cfg_defaults(&cfg);
    snprintf(cfg.name, sizeof cfg.name, "%s", name);
    snprintf(cfg.path, sizeof cfg.path, "%s", path);
    snprintf(cfg.postprocessor, sizeof cfg.postprocessor, "ultraface");
    cfg.run_timeout_ms = run_timeout_ms;
    osp_model_t *m = NULL;
    char err[512];
    assert_int_equal(osp_model_open(&cfg, s->set.backend, &m, err, sizeof err), 0);
    loaded_t *l = srv_loaded_new(m, &cfg);
    assert_non_null(l);
    srv_slots_grow(s, idx);
    srv_slot_install(s, idx, l);
}

/* A core with `workers` prepare and predict workers, started. */
static server_t *core_new(int workers) {
    osp_server_opts_t o = {0};
    server_t *s = srv_core_new(&o);
    assert_non_null(s);
    s->set.workers = workers;
    s->set.intra_threads = 1;
    s->set.backend = osp_backend_find("test");
    s->set.load_bound_ms = 5000;
    assert_int_equal(srv_core_start(s), 0);
    return s;
}

/* The I/O thread's part, as the loop does it: finished jobs, and the
 * watchdog's and the loads' timers. */
static void pump(server_t *s) {
    if (srv_posted(s)) srv_drain(s);
    srv_watchdog_check(s);
    srv_loads_check(s);
}

#endif
