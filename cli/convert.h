/*
 * convert: `gradwatch convert` (any log format gradwatch reads, as
 * gradwatch NDJSON on stdout) and `gradwatch formats` (see convert.c).
 */
#ifndef GW_CONVERT_H
#define GW_CONVERT_H

#include "config.h"

/* `gradwatch convert [--input-format NAME] [--run NAME] FILE...`; argv[0]
 * is "convert".  Returns the exit status: 0, 2 on error (a file not
 * readable, bad arguments, output error). */
int gw_convert_main(struct gw_cfg *cfg, int argc, char **argv);

/* `gradwatch formats`: one line per reader format.  Returns 0. */
int gw_formats_main(int argc, char **argv);

#endif
