/*
 * fleet_view: gradwatchd --fleet-view, the web view and read API over the
 * fleet's PostgreSQL instead of a node's own database (fleet_view.c).
 */
#ifndef GW_FLEET_VIEW_H
#define GW_FLEET_VIEW_H

#include "args.h"

/* Serve until SIGTERM or SIGINT with the configuration in a (its http
 * address, auth, log level) and the DSN a->fleet_view.  The exit status:
 * 0 stopped cleanly, 1 a start-up failure (PostgreSQL unreachable, the
 * address in use). */
int gw_fleet_view_main(struct gw_args *a);

#endif
