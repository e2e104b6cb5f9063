/*
 * cli: usage errors and the version block of gradwatch and gradwatchd
 * (see cli.h).  getopt_long is run with opterr = 0 and a leading ':' so that
 * it reports instead of printing; the option it stopped at is then
 * argv[optind - 1], or optopt for an unknown short option.
 */
#include "cli.h"

#include "detector.h"

#include "engine.h"
#include "kern.h"
#include "registry.h"
#include "reader.h"
#include "registry.h"

#include "gw_config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int gw_cli_usage_error(const char *prog, const char *what, const char *arg)
{
	if (arg)
		fprintf(stderr, "%s: %s \"%s\" (%s --help)\n", prog, what, arg, prog);
	else
		fprintf(stderr, "%s: %s (%s --help)\n", prog, what, prog);
	return GW_EXIT_USAGE;
}

int gw_cli_bad_format(const char *prog, const char *name)
{
	char what[640];
	size_t n = (size_t)snprintf(what, sizeof(what), "unknown input format \"%.64s\"; known:", name);
	for (size_t i = 0; gw_reader_formats[i] && n < sizeof(what); i++)
		n += (size_t)snprintf(what + n, sizeof(what) - n, " %s", gw_reader_formats[i]->name);
	return gw_cli_usage_error(prog, what, NULL);
}

int gw_cli_bad_option(const char *prog, int ch, char **argv)
{
	const char *arg = argv[optind - 1];
	char opt[64];
	if (strncmp(arg, "--", 2) == 0)   /* a long option, without its "=value" */
		snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(arg, "="), arg);
	else
		snprintf(opt, sizeof(opt), "-%c", optopt ? optopt : '?');
	if (ch == ':')
		return gw_cli_usage_error(prog, "this option needs a value:", opt);
	if (strchr(arg, '=') && strncmp(arg, "--", 2) == 0 && optopt)
		return gw_cli_usage_error(prog, "this option takes no value:", opt);
	return gw_cli_usage_error(prog, "unknown option", opt);
}

void gw_cli_getopt_start(void)
{
	optind = 0;
	opterr = 0;
}

int gw_cli_plain(const char *prog, const char *usage, int argc, char **argv)
{
	static const struct option lo[] = {GW_CLI_OPT_HELP};
	int ch;
	gw_cli_getopt_start();
	while ((ch = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		if (ch == 'h') {
			fputs(usage, stdout);
			return 0;
		}
		return gw_cli_bad_option(prog, ch, argv);
	}
	if (optind < argc)
		return gw_cli_usage_error(prog, "takes no arguments; unexpected", argv[optind]);
	return -1;
}

void gw_cli_print_version(FILE *f, const char *name)
{
	fprintf(f, "%s %s\nkernels: %s\ndetectors:", name, GW_VERSION, gw_kern_name());
	for (size_t i = 0; gw_det_registry[i]; i++)
		fprintf(f, " %s", gw_det_registry[i]->name);
	fprintf(f, "\nformats:");
	for (size_t i = 0; gw_reader_formats[i]; i++)
		fprintf(f, " %s", gw_reader_formats[i]->name);
	fprintf(f, "\n");
}
