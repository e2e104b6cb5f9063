/*
 * report: `gradwatch report`, the self-contained HTML report (report.c).
 */
#ifndef GW_REPORT_H
#define GW_REPORT_H

struct gw_cfg;

/* The subcommand: argv[0] is "report".  Returns the exit status (0
 * written, 2 error). */
int gw_report_main(struct gw_cfg *cfg, int argc, char **argv);

#endif
