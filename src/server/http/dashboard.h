/*
 * dashboard: the live page served at / (src/server/http/dashboard.html), one
 * self-contained file with its script and styles, embedded in the binary
 * at build time (cmake/embed.cmake): camera boxes are often offline, so it
 * loads nothing from anywhere else. It reads /events.
 */
#ifndef OSP_DASHBOARD_H
#define OSP_DASHBOARD_H

#include <stddef.h>

extern const unsigned char srv_dashboard_html[];
extern const size_t srv_dashboard_html_len;

#endif
