/*
 * args: gradwatchd's command line: the configuration it starts with (the
 * file, then the flags over it), or what it does instead of starting
 * (--help, --version, --check-config, a usage error).
 */
#ifndef GW_ARGS_H
#define GW_ARGS_H

#include <jansson.h>
#include <stdbool.h>

#include "config.h"

struct gw_args {
	struct gw_cfg cfg;          /* the configuration to start with */
	json_t *file_cfg;           /* the file alone, before the flags (gw_cfg_to_json):
	                               what a SIGHUP compares the file with; NULL without */
	bool log_level_flag;        /* --log-level given: a reload keeps it */
	char *fleet_view;           /* --fleet-view: the DSN (a secret), or NULL */
};

/* Parse argv into *a.  Returns -1 when the daemon is to start (then
 * gw_args_free a after it), else the exit status, after printing what was
 * asked (help, version, the checked configuration) or what is wrong (a is
 * freed then). */
int gw_args_parse(int argc, char **argv, struct gw_args *a);
void gw_args_free(struct gw_args *a);

#endif
