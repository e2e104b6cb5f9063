/*
 * client: `gradwatch runs` and `gradwatch alerts`: what a running daemon
 * has (its HTTP API) or, with --db, what its database file holds.  The
 * other subcommands that talk to the daemon have their own faces:
 * client_send.h, client_ack.h, export.h.
 */
#ifndef GW_CLIENT_H
#define GW_CLIENT_H

#include "config.h"

/* Each takes the subcommand's arguments (argv[0] is its name), prints to
 * stdout/stderr and returns the process exit status: 0 done, 2 an error
 * (usage, connection, the daemon refusing or failing).  They block on the
 * network, each request at most --timeout seconds (default 30).
 * `alerts ack|unack ID` goes to gw_client_alerts_ack (client_ack.h). */
int gw_client_runs(struct gw_cfg *cfg, int argc, char **argv);
int gw_client_alerts(struct gw_cfg *cfg, int argc, char **argv);

#endif
