/*
 * reload: what gradwatchd does on SIGHUP: thresholds, per-run overrides,
 * disabled detectors and the log level from the configuration file again
 * (reload.c says what needs a restart instead).
 */
#ifndef GW_RELOAD_H
#define GW_RELOAD_H

#include "args.h"

struct gw_ingest;

/* Reload a->cfg's file into a->cfg and the record path in (loop thread).
 * Returns 0 (also when there is no file to reload), or a negative errno
 * when the file does not load: the configuration is as it was, the
 * message is logged. */
int gw_reload(struct gw_args *a, struct gw_ingest *in);

#endif
