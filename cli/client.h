/*
 * client: the gradwatch subcommands that talk to a running daemon over HTTP
 * (send, runs, alerts, export) or read its database directly (--db).
 */
#ifndef GW_CLIENT_H
#define GW_CLIENT_H

#include "config.h"

#include <stdbool.h>

/* Each takes the subcommand's arguments (argv[0] is its name), prints to
 * stdout/stderr and returns the process exit status: 0 done, 1 (send only)
 * some lines were rejected, 2 an error (usage, input, connection, the
 * daemon refusing or failing).  They block on the network: each request at
 * most --timeout seconds (default 30), and send retries a batch at most
 * --retries times (default 3) with back-off. */
int gw_client_send(struct gw_cfg *cfg, int argc, char **argv);
int gw_client_runs(struct gw_cfg *cfg, int argc, char **argv);
int gw_client_alerts(struct gw_cfg *cfg, int argc, char **argv);
/* gradwatch alerts ack|unack ID (client_ack.c; argv[0] is "ack" or "unack"). */
int gw_client_alerts_ack(struct gw_cfg *cfg, int argc, char **argv, bool ack);
/* `gradwatch export RUN --format csv|jsonl`: every record of a run, paged
 * through GET /v1/runs/{run}/records or read from the database. */
int gw_client_export(struct gw_cfg *cfg, int argc, char **argv);

#endif
