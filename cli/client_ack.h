/*
 * client_ack: `gradwatch alerts ack ID [--note TEXT] [--by NAME]` and
 * `gradwatch alerts unack ID [--by NAME]`: one POST or DELETE
 * /v1/alerts/{id}/ack to a running daemon (docs/alerts.md,
 * "Acknowledging").
 */
#ifndef GW_CLIENT_ACK_H
#define GW_CLIENT_ACK_H

#include "config.h"

#include <stdbool.h>

/* argv[0] is "ack" or "unack"; ack tells which.  Prints the alert as the
 * daemon answered it; returns the exit status (0 done, 2 an error).
 * Blocks for at most --timeout seconds. */
int gw_client_alerts_ack(struct gw_cfg *cfg, int argc, char **argv, bool ack);

#endif
