/*
 * gradwatch: the command-line tool.
 *
 *   gradwatch replay [--format text|jsonl] FILE...   detectors over saved logs
 *   gradwatch report FILE... [-o report.html]       the same as a self-contained HTML page
 *   gradwatch export RUN [--format csv|jsonl]       a run's records for notebooks
 *   gradwatch convert FILE...                       any log format as NDJSON
 *   gradwatch formats                               the log formats it reads
 *   gradwatch send [--run NAME] [FILE]              NDJSON to a running daemon
 *   gradwatch runs / alerts [RUN]                   query the daemon or the database
 *   gradwatch thresholds                            every threshold and its reason
 *   gradwatch version                               version, kernels, detectors, formats
 *
 * Global options come before the command and stop at it; each command
 * parses its own (cli.h: --help on stdout, one-line usage errors).  The
 * kernels are chosen before any command runs, so `version` and `-V` print
 * the variant actually in use.  Exit status: 0 success (replay: no warning
 * or critical alert), 1 replay found alerts (send: some lines were
 * rejected), 2 error, usage errors included.
 */
#include "cli.h"
#include "client.h"
#include "client_send.h"
#include "config.h"
#include "convert.h"
#include "engine.h"
#include "export.h"
#include "kern.h"
#include "log.h"
#include "reader.h"
#include "thresholds.h"
#include "prune.h"
#include "replay.h"
#include "report.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"usage: gradwatch [--config FILE] [--kernels NAME] COMMAND [ARGS]\n"
	"       gradwatch -V | --version | -h | --help\n"
	"\n"
	"commands (each takes --help):\n"
	"  replay [--format text|jsonl] [--input-format NAME] [--run NAME] [--min-severity S]\n"
	"         [--resolved] FILE...\n"
	"        run the detectors over saved logs (NDJSON or any format gradwatch reads,\n"
	"        gzip/zstd too), in file order ('-' = stdin); exit 0: no warning/critical\n"
	"        alert, 1: alerts, 2: error (also a file with nothing readable)\n"
	"  report [-o FILE] [--max-points N] [--run NAME] [--input-format NAME] FILE...\n"
	"        replay logs into one self-contained HTML page of charts and alerts\n"
	"        (default report.html; opens from disk, no network)\n"
	"  export RUN [--format csv|jsonl] [--url URL | --db PATH] [--from S] [--to S] [-o FILE]\n"
	"        every record of a run, for notebooks (jsonl replays)\n"
	"  prune [--url URL] [--timeout S] (--older-than DURATION | --run NAME...)\n"
	"        delete runs (records, events, segments, alerts) from the daemon's database\n"
	"  convert [--input-format NAME] [--run NAME] FILE...\n"
	"        read logs in any format gradwatch reads, write gradwatch NDJSON on stdout\n"
	"  formats       list the log formats (name, stream or whole file, description)\n"
	"  send [--url URL] [--run NAME] [--batch N] [--timeout S] [--retries N] [FILE...]\n"
	"        send NDJSON (stdin by default) to a running gradwatchd over HTTP;\n"
	"        returns when the daemon has committed it; exit 1 if lines were rejected\n"
	"  runs [--url URL | --db PATH] [--json] [--timeout S] [RUN]\n"
	"        list the runs (or one run: segments, last step, last values)\n"
	"  alerts [--url URL | --db PATH] [--json] [--timeout S] [RUN]\n"
	"        list stored alerts, newest first\n"
	"  alerts ack ID [--note TEXT] [--by NAME] [--url URL] | alerts unack ID [--url URL]\n"
	"        acknowledge an open alert (no more reminders until it escalates), or undo\n"
	"  thresholds    print every detection threshold, its default, its valid range and why\n"
	"  version       print the version, the kernel variant in use, detectors, formats\n"
	"  help          print this\n"
	"\n"
	"options:\n"
	"  -c, --config FILE   the daemon's configuration (aliases, thresholds, addresses)\n"
	"      --kernels NAME  force a kernel variant: scalar, sse2, avx2, neon\n"
	"                      (default: $GRADWATCH_KERNELS, else the best the CPU has)\n"
	"  -V, --version       the same as the version command\n"
	"  -h, --help          print this\n"
	"\n"
	"environment: GRADWATCH_URL, GRADWATCH_TOKEN, GRADWATCH_KERNELS, XDG_STATE_HOME\n"
	"exit status: 0 done; 1 replay found alerts, send had rejected lines;\n"
	"2 an error (usage errors too)\n";

static const char replay_usage[] =
	"usage: gradwatch replay [--format text|jsonl] [--input-format NAME] [--run NAME]\n"
	"                        [--min-severity S] [--resolved] FILE...\n"
	"\n"
	"Run the detectors over saved logs (gradwatch NDJSON or any format gradwatch\n"
	"reads, gzip/zstd too), in the order given ('-' = standard input), as the\n"
	"daemon would live; print the alerts.\n"
	"\n"
	"  -f, --format text|jsonl   text for people (default), or one alert object per\n"
	"                            line (docs/alert-schema.md)\n"
	"  -i, --input-format NAME   the format of every FILE (default: sniffed;\n"
	"                            gradwatch formats lists them)\n"
	"  -r, --run NAME            the run of lines that name none\n"
	"  -s, --min-severity S      info (default), warning or critical\n"
	"  -R, --resolved            also print when an alert resolves\n"
	"\n"
	"exit status: 0 no warning or critical alert; 1 alerts; 2 an error (a file\n"
	"with nothing readable too)\n";

static int cmd_replay(struct gw_cfg *cfg, int argc, char **argv)
{
	static const char prog[] = "gradwatch replay";
	struct gw_replay_opts o;
	gw_replay_opts_init(&o, cfg);
	static const struct option lo[] = {
		{"format", required_argument, NULL, 'f'},
		{"run", required_argument, NULL, 'r'},
		{"input-format", required_argument, NULL, 'i'},
		{"min-severity", required_argument, NULL, 's'},
		{"resolved", no_argument, NULL, 'R'},
		GW_CLI_OPT_HELP,
	};
	int ch;
	gw_cli_getopt_start();
	while ((ch = getopt_long(argc, argv, ":f:r:i:s:Rh", lo, NULL)) != -1) {
		switch (ch) {
		case 'f':
			if (strcmp(optarg, "jsonl") == 0 || strcmp(optarg, "json") == 0)
				o.format = GW_REPLAY_JSONL;
			else if (strcmp(optarg, "text") == 0)
				o.format = GW_REPLAY_TEXT;
			else
				return gw_cli_usage_error(prog, "--format is text or jsonl, not", optarg);
			break;
		case 'r':
			o.default_run = optarg;
			break;
		case 'i':
			if (!gw_reader_format_find(optarg))
				return gw_cli_bad_format(prog, optarg);
			o.input_format = optarg;
			break;
		case 's':
			o.min_severity = gw_severity_parse(optarg);
			if (o.min_severity < 0)
				return gw_cli_usage_error(prog, "--min-severity is info, warning or critical, not",
				                          optarg);
			break;
		case 'R':
			o.show_resolved = true;
			break;
		case 'h':
			fputs(replay_usage, stdout);
			return 0;
		default:
			return gw_cli_bad_option(prog, ch, argv);
		}
	}
	if (optind >= argc)
		return gw_cli_usage_error(prog, "no file given (use - for standard input)", NULL);
	struct gw_replay_stats st;
	int rc = gw_replay(&o, argv + optind, argc - optind, &st);
	if (rc == -ENOMEM || rc == -ENOSPC) {
		fprintf(stderr, "gradwatch replay: %s\n", strerror(-rc));
		return 2;
	}
	if (o.format == GW_REPLAY_TEXT) {
		char dup[96] = "";
		if (st.duplicates)
			snprintf(dup, sizeof(dup), ", %llu repeated in checkpoint copies",
			         (unsigned long long)st.duplicates);
		fprintf(stderr, "replayed %llu lines (%llu records, %llu events, %llu rejected%s) of %zu run(s): %llu alert(s)\n",
		        (unsigned long long)st.lines, (unsigned long long)st.records,
		        (unsigned long long)st.events, (unsigned long long)st.rejected, dup, st.runs,
		        (unsigned long long)st.alerts);
	}
	if (rc < 0)
		return 2;
	return st.serious ? 1 : 0;
}

static int cmd_thresholds(int argc, char **argv)
{
	int rc = gw_cli_plain("gradwatch thresholds",
	                       "usage: gradwatch thresholds\n\n"
	                       "Print every detection threshold: its name (the key in the\n"
	                       "configuration's \"thresholds\"), its default, its valid range and why.\n",
	                       argc, argv);
	if (rc >= 0)
		return rc;
	char r[64];
	for (const struct gw_threshold_info *i = gw_threshold_list(); i->name; i++)
		printf("%-24s %-8g %-20s %s\n%55srange: %s\n", i->name, i->def,
		       gw_threshold_range(i, r, sizeof(r)), i->reason, "", i->range_reason);
	return 0;
}

static int cmd_version(int argc, char **argv)
{
	int rc = gw_cli_plain("gradwatch version",
	                       "usage: gradwatch version\n\n"
	                       "Print the version, the kernel variant in use (after --kernels,\n"
	                       "$GRADWATCH_KERNELS or the CPU's best), the detectors and the formats.\n",
	                       argc, argv);
	if (rc >= 0)
		return rc;
	gw_cli_print_version(stdout, "gradwatch");
	return 0;
}

static int cmd_help(int argc, char **argv)
{
	int rc = gw_cli_plain("gradwatch help", "usage: gradwatch help\n\nPrint the usage of gradwatch.\n",
	                       argc, argv);
	if (rc >= 0)
		return rc;
	fputs(usage_text, stdout);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct gw_cfg *cfg, int argc, char **argv);
	int (*plain)(int argc, char **argv);
} commands[] = {
	{"replay", cmd_replay, NULL},
	{"report", gw_report_main, NULL},
	{"export", gw_client_export, NULL},
	{"prune", gw_cmd_prune, NULL},
	{"convert", gw_convert_main, NULL},
	{"formats", NULL, gw_formats_main},
	{"send", gw_client_send, NULL},
	{"runs", gw_client_runs, NULL},
	{"alerts", gw_client_alerts, NULL},
	{"thresholds", NULL, cmd_thresholds},
	{"version", NULL, cmd_version},
	{"help", NULL, cmd_help},
};

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"config", required_argument, NULL, 'c'},
		{"kernels", required_argument, NULL, 'k'},
		{"version", no_argument, NULL, 'V'},
		GW_CLI_OPT_HELP,
	};
	const char *config = NULL, *kernels = NULL;
	bool version = false;
	int ch;
	opterr = 0;
	/* '+': stop at the command; its options are its own */
	while ((ch = getopt_long(argc, argv, "+:c:Vh", lo, NULL)) != -1) {
		switch (ch) {
		case 'c': config = optarg; break;
		case 'k': kernels = optarg; break;
		case 'V': version = true; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: return gw_cli_bad_option("gradwatch", ch, argv);
		}
	}
	int i = optind;
	if (!version && i >= argc)
		return gw_cli_usage_error("gradwatch", "no command given", NULL);
	size_t c = 0;
	if (!version) {
		while (c < GW_ARRAY_SIZE(commands) && strcmp(commands[c].name, argv[i]))
			c++;
		if (c == GW_ARRAY_SIZE(commands))
			return gw_cli_usage_error("gradwatch", "unknown command", argv[i]);
	}
	gw_log_init(GW_LOG_WARN, 0);
	struct gw_cfg cfg;
	char err[512];
	if (gw_cfg_defaults(&cfg) < 0) {
		fprintf(stderr, "gradwatch: out of memory\n");
		return 2;
	}
	int rc = 2;
	if (config && gw_cfg_load(&cfg, config, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatch: %s\n", err);
		goto out;
	}
	if (!kernels)
		kernels = cfg.kernels;
	/* before anything prints the kernel variant in use */
	if (gw_cfg_init_kernels(kernels, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatch: %s\n", err);
		goto out;
	}
	if (version) {
		gw_cli_print_version(stdout, "gradwatch");
		rc = 0;
		goto out;
	}
	if (commands[c].fn)
		rc = commands[c].fn(&cfg, argc - i, argv + i);
	else
		rc = commands[c].plain(argc - i, argv + i);
out:
	gw_cfg_free(&cfg);
	return rc;
}
