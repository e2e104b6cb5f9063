/*
 * prune: `gradwatch prune` (prune.c).
 */
#ifndef GW_PRUNE_H
#define GW_PRUNE_H

#include "config.h"

/* Run the command; returns the exit status. */
int gw_cmd_prune(struct gw_cfg *cfg, int argc, char **argv);

#endif
