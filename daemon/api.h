/*
 * api: the /v1 routes and /healthz of gradwatchd (api.c, docs/api.md).
 */
#ifndef GW_API_H
#define GW_API_H

#include <jansson.h>
#include <stddef.h>

struct gw_daemon;

/* Register the routes on d->http.  Returns 0 or a negative errno with a
 * message in err. */
int gw_api_start(struct gw_daemon *d, char *err, size_t errlen);

#endif
