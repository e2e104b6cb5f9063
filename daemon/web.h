/*
 * web: gradwatchd's pages and the JSON they read (web.c, docs/web.md).
 */
#ifndef GW_WEB_H
#define GW_WEB_H

#include <stddef.h>

struct gw_http;

/* Register the page routes (/, /runs/{run}, /alerts/{id}, /static/{file})
 * and GET /v1/runs/{run}/records, /ranks, GET /v1/alerts/{id} on h (after
 * gw_http_start).  Returns 0 or -ENOSPC (route table
 * full; message in err). */
int gw_web_start(struct gw_http *h, char *err, size_t errlen);

#endif
