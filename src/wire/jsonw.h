/*
 * jsonw: a small JSON text writer for replies and JSON lines. It writes
 * what Python's json.dumps writes for the same values (", " and ": "
 * separators, non-ASCII escaped), so a host cannot tell osprey's replies
 * from the Python worker's. Appends to a
 * growable buffer that the caller owns and reuses (osp_jw_reset keeps the
 * memory), so a warm writer allocates nothing. Numbers are written the way
 * the Python worker's json.dumps writes them where that matters (integers
 * as integers, floats with enough digits, no NaN/Infinity: those become
 * null, which is valid JSON).
 */
#ifndef OSP_JSONW_H
#define OSP_JSONW_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;        /* set when a grow failed; the text is then incomplete */
    int need_comma; /* a value was written at the current nesting level */
} osp_jw_t;

void osp_jw_reset(osp_jw_t *w);
void osp_jw_free(osp_jw_t *w);

void osp_jw_obj_open(osp_jw_t *w);
void osp_jw_obj_close(osp_jw_t *w);
void osp_jw_arr_open(osp_jw_t *w);
void osp_jw_arr_close(osp_jw_t *w);
/* A key inside an object; the next value call writes its value. */
void osp_jw_key(osp_jw_t *w, const char *key);

void osp_jw_str(osp_jw_t *w, const char *s);
void osp_jw_strn(osp_jw_t *w, const char *s, size_t n);
void osp_jw_int(osp_jw_t *w, int64_t v);
void osp_jw_uint(osp_jw_t *w, uint64_t v);
/* A float rounded to `digits` decimals (-1: shortest that round-trips). */
void osp_jw_num(osp_jw_t *w, double v, int digits);
void osp_jw_bool(osp_jw_t *w, int v);
void osp_jw_null(osp_jw_t *w);
/* Already-encoded JSON text, inserted as one value. */
void osp_jw_raw(osp_jw_t *w, const char *json, size_t n);
/* Already-encoded members ("key": value, ...) added to the object open
 * (n > 0). */
void osp_jw_members(osp_jw_t *w, const char *json, size_t n);

#endif
