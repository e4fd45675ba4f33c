/*
 * events: how the osprey commands tell a person and a program that a live
 * source dropped, came back or was given up (video/source.h): one line on
 * stderr ("osprey CMD: NAME: dropped …") and one JSON record for stdout
 *   {"source":NAME,"event":"drop"|"reconnect"|"gave-up","time":EPOCH_S,
 *    "reason":…,"frame":N,"framesLost":N[,"downMs":…,"attempts":N]
 *    [,"retryInMs":…][,"sensor_id":…]}
 * The record is written into the caller's writer; the caller prints it.
 */
#ifndef OSP_CLI_EVENTS_H
#define OSP_CLI_EVENTS_H

#include "video/source.h"
#include "wire/jsonw.h"

/* The stderr line, whole, in one write (other threads print too). */
void osp_cli_event_log(const char *cmd, const osp_source_event_t *e);
/* The record; sensor_id NULL: none. */
void osp_cli_event_record(osp_jw_t *w, const osp_source_event_t *e, const char *sensor_id);

#endif
