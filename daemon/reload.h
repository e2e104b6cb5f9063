/*
 * reload: what gradwatchd does on SIGHUP: thresholds, per-run overrides,
 * disabled detectors and the log level from the configuration file again
 * (reload.c says what needs a restart instead).
 */
#ifndef GW_RELOAD_H
#define GW_RELOAD_H

#include "args.h"

#include <uv.h>

struct gw_ingest;

/* Reload a->cfg's file into a->cfg and the record path in (called on the
 * loop thread; returns at once).  The file is read on libuv's pool and
 * applied on the loop when read; RELOADING=1 and READY=1 go to systemd
 * around it.  When the file does not load the configuration stays as it
 * was and the message is logged.  A SIGHUP while one is under way reads
 * the file once more after it. */
void gw_reload(uv_loop_t *loop, struct gw_args *a, struct gw_ingest *in);

#endif
