/*
 * What both readers' test harnesses (rdtest.h, rdbin.h) share: the alias
 * table the readers use and the tests' main().  rdmain.c is linked with
 * either harness.
 */
#ifndef GW_RDMAIN_H
#define GW_RDMAIN_H

#include <check.h>

struct gw_alias;

/* The alias table the readers use (made and freed by rd_main). */
extern struct gw_alias *aliases;

/* A readers' test's main(): the alias table made, the suite run, the
 * table freed; the suite's exit status. */
int rd_main(Suite *s);

#endif
