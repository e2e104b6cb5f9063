/*
 * client_send: `gradwatch send [FILE...]`: NDJSON to a running daemon's
 * POST /v1/ingest in batches of whole lines, each answered once committed,
 * retried with its Idempotency-Key so a batch whose answer was lost is
 * stored once (client_send.c says how).
 */
#ifndef GW_CLIENT_SEND_H
#define GW_CLIENT_SEND_H

#include "config.h"

/* Takes the subcommand's arguments (argv[0] is its name), prints to
 * stdout/stderr and returns the process exit status: 0 every line
 * committed, 1 some lines were rejected, 2 an error (usage, input,
 * connection, the daemon refusing or failing).  Blocks on the network:
 * each request at most --timeout seconds (default 30), a batch retried at
 * most --retries times (default 3) with back-off. */
int gw_client_send(struct gw_cfg *cfg, int argc, char **argv);

#endif
