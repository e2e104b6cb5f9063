/*
 * export: `gradwatch export RUN --format csv|jsonl`: every record of a run
 * (or, with --rank N, the lines of rank N kept apart), paged through GET
 * /v1/runs/{run}/records or read from the database file (export.c).
 */
#ifndef GW_EXPORT_H
#define GW_EXPORT_H

#include "config.h"

/* argv[0] is "export"; returns the exit status (0 done, 2 an error).
 * Blocks on the network or the database file. */
int gw_client_export(struct gw_cfg *cfg, int argc, char **argv);

#endif
