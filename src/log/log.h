/*
 * Run-time messages of ospreyd and osprey: one line each on stderr (never
 * stdout, which may carry protocol frames or JSON records), written whole
 * in one write(2) so that lines from several threads never interleave.
 *
 * Three shapes of line:
 *   plain  the message alone — the Python pool worker's shape, for a host
 *          that reads the pipe worker's stderr into its own log
 *   text   "2026-12-01T12:35:07.123Z INFO ospreyd: listening on …"
 *          (UTC, milliseconds)
 *   json   {"time":"2026-12-01T12:35:07.123Z","level":"info","msg":"…"}
 *
 * The format is set once, before any thread that logs starts; the default
 * is plain. Usage errors and a command's own report (progress bar,
 * summary) are not log lines and are written directly.
 */
#ifndef OSP_LOG_H
#define OSP_LOG_H

#include <stdarg.h>
#include <stddef.h>

typedef enum { OSP_LOG_ERROR, OSP_LOG_WARN, OSP_LOG_INFO, OSP_LOG_DEBUG } osp_log_level_t;
typedef enum { OSP_LOG_PLAIN, OSP_LOG_TEXT, OSP_LOG_JSON } osp_log_format_t;

void osp_log_set_format(osp_log_format_t f);
osp_log_format_t osp_log_get_format(void);

/* "plain", "text" or "json" into *f; -1 for any other name. */
int osp_log_format_parse(const char *name, osp_log_format_t *f);

/* One line at level lvl; a trailing newline in fmt is dropped (the line
 * gets exactly one). */
void osp_log(osp_log_level_t lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void osp_vlog(osp_log_level_t lvl, const char *fmt, va_list ap);

/* The line osp_log would write for msg at the wall-clock time epoch_ms, into
 * buf (NUL-terminated, newline included, cut at buflen - 1). Returns the
 * length the whole line needs, as snprintf does. For tests and for
 * osp_vlog itself. */
size_t osp_log_format_line(char *buf, size_t buflen, osp_log_format_t f, osp_log_level_t lvl,
                           long long epoch_ms, const char *msg);

#endif
