/*
 * cli: the command-line conventions both binaries share (docs/man).
 *
 * `--help`/`-h` prints the usage on stdout and exits 0.  A usage error
 * (unknown option, missing or bad value, stray argument) is one line on
 * stderr that names the problem and ends with "(PROG --help)", and exits
 * 2.  `--version`/`-V` prints the version, the kernel variant in use (call
 * it after the kernels were chosen), the detectors and the log formats.
 */
#ifndef GW_CLI_H
#define GW_CLI_H

#include <stdio.h>

#define GW_EXIT_USAGE 2

/* The end of every command's long options (getopt_long): --help, then the
 * terminator. */
#define GW_CLI_OPT_HELP {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}

/* Start getopt_long afresh on a command's arguments (optind 0: glibc
 * re-initialises, the top level having parsed argv in "+" order); the
 * command prints its own errors (opterr 0, with gw_cli_bad_option). */
void gw_cli_getopt_start(void);

/* Print "PROG: WHAT "ARG" (PROG --help)" on stderr, where PROG is e.g.
 * "gradwatch send" or "gradwatchd"; arg may be NULL.  Returns
 * GW_EXIT_USAGE. */
int gw_cli_usage_error(const char *prog, const char *what, const char *arg);

/* The usage error for an --input-format that names no format: the name
 * and the formats there are.  Returns GW_EXIT_USAGE. */
int gw_cli_bad_format(const char *prog, const char *name);

/* The usage error for what getopt_long() returned: '?' (unknown option) or
 * ':' (missing value); needs an optstring that starts with ':' and opterr
 * = 0.  Returns GW_EXIT_USAGE. */
int gw_cli_bad_option(const char *prog, int ch, char **argv);

/* A command without options of its own: with --help/-h prints usage and
 * returns 0, on anything else a usage error (2); -1 when there were no
 * arguments, so the command runs. */
int gw_cli_plain(const char *prog, const char *usage, int argc, char **argv);

/* The version block: "NAME VERSION", kernels, detectors, formats. */
void gw_cli_print_version(FILE *f, const char *name);

#endif
