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
 *   gradwatch thresholds                            every threshold, its range and reasons
 *   gradwatch version
 *
 * Exit status: 0 success (replay: no warning or critical alert), 1 replay
 * found alerts (send: some lines were rejected), 2 error.
 */
#include "client.h"
#include "config.h"
#include "convert.h"
#include "engine.h"
#include "kern.h"
#include "log.h"
#include "reader.h"
#include "prune.h"
#include "replay.h"
#include "report.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gradwatch [--config FILE] [--kernels NAME] COMMAND [ARGS]\n"
	        "\n"
	        "commands:\n"
	        "  replay [--format text|jsonl] [--input-format NAME] [--run NAME] [--min-severity S]\n"
	        "         [--resolved] FILE...\n"
	        "        run the detectors over saved logs (NDJSON or any format gradwatch reads,\n"
	        "        gzip/zstd too), in file order ('-' = stdin); exit 0: no warning/critical\n"
	        "        alert, 1: alerts, 2: error (also a file with nothing readable)\n"
	        "  report [-o FILE] [--max-points N] [--run NAME] [--input-format NAME] FILE...\n"
	        "        replay logs into one self-contained HTML page of charts and alerts\n"
	        "        (default report.html; opens from disk, no network)\n"
	        "  export RUN [--format csv|jsonl] [--url URL | --db PATH] [--from S] [--to S] [-o FILE]\n"
	        "  prune [--url URL] (--older-than DURATION | --run NAME...)\n"
	        "        delete runs from the daemon's database\n"
	        "        every record of a run, for notebooks (jsonl replays)\n"
	        "  convert [--input-format NAME] [--run NAME] FILE...\n"
	        "        read logs in any format gradwatch reads, write gradwatch NDJSON on stdout\n"
	        "  formats       list the log formats (name, stream or whole file, description)\n"
	        "  send [--url URL] [--run NAME] [--batch N] [FILE...]\n"
	        "        send NDJSON (stdin by default) to a running gradwatchd over HTTP;\n"
	        "        returns when the daemon has committed it; exit 1 if lines were rejected\n"
	        "  runs [--url URL | --db PATH] [--json] [RUN]\n"
	        "        list the runs (or one run: segments, last step, last values)\n"
	        "  alerts [--url URL | --db PATH] [--json] [RUN]\n"
	        "        list stored alerts, newest first\n"
	        "  thresholds    print every detection threshold, its default, its valid range and why\n"
	        "  version       print the version and the kernel variant in use\n"
	        "\n"
	        "options:\n"
	        "  --config FILE   the daemon's configuration (aliases, thresholds, addresses)\n"
	        "  --kernels NAME  force a kernel variant: scalar, sse2, avx2, neon\n"
	        "                  (default: $GRADWATCH_KERNELS, else the best the CPU has)\n");
}

static int cmd_replay(struct gw_cfg *cfg, int argc, char **argv)
{
	struct gw_replay_opts o;
	gw_replay_opts_init(&o, cfg);
	static const struct option lo[] = {
		{"format", required_argument, NULL, 'f'},
		{"run", required_argument, NULL, 'r'},
		{"input-format", required_argument, NULL, 'i'},
		{"min-severity", required_argument, NULL, 's'},
		{"resolved", no_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "f:r:i:s:Rh", lo, NULL)) != -1) {
		switch (ch) {
		case 'f':
			if (strcmp(optarg, "jsonl") == 0 || strcmp(optarg, "json") == 0)
				o.format = GW_REPLAY_JSONL;
			else if (strcmp(optarg, "text") == 0)
				o.format = GW_REPLAY_TEXT;
			else {
				fprintf(stderr, "gradwatch replay: --format is text or jsonl, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 'r':
			o.default_run = optarg;
			break;
		case 'i':
			if (!gw_reader_format_find(optarg)) {
				fprintf(stderr, "gradwatch replay: unknown input format \"%s\" "
				        "(gradwatch formats lists them)\n", optarg);
				return 2;
			}
			o.input_format = optarg;
			break;
		case 's':
			o.min_severity = gw_severity_parse(optarg);
			if (o.min_severity < 0) {
				fprintf(stderr, "gradwatch replay: --min-severity is info, warning or critical\n");
				return 2;
			}
			break;
		case 'R':
			o.show_resolved = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "gradwatch replay: no file given (use - for standard input)\n");
		return 2;
	}
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

/* name, default, valid range, why the default; then why the range */
static int cmd_thresholds(void)
{
	char r[64];
	for (const struct gw_threshold_info *i = gw_threshold_table; i->name; i++)
		printf("%-24s %-8g %-20s %s\n%55srange: %s\n", i->name, i->def,
		       gw_threshold_range(i, r, sizeof(r)), i->reason, "", i->range_reason);
	return 0;
}

static int cmd_version(void)
{
	printf("gradwatch %s\nkernels: %s\ndetectors:", GW_VERSION, gw_kern_name());
	for (size_t i = 0; gw_det_registry[i]; i++)
		printf(" %s", gw_det_registry[i]->name);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *config = NULL, *kernels = NULL;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc) {
			config = argv[++i];
		} else if (!strncmp(argv[i], "--config=", 9)) {
			config = argv[i] + 9;
		} else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) {
			kernels = argv[++i];
		} else if (!strncmp(argv[i], "--kernels=", 10)) {
			kernels = argv[i] + 10;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			return cmd_version();
		} else {
			fprintf(stderr, "gradwatch: unknown option %s\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
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
	if (gw_cfg_init_kernels(kernels, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatch: %s\n", err);
		goto out;
	}
	const char *cmd = argv[i];
	int sub_argc = argc - i;
	char **sub_argv = argv + i;
	if (!strcmp(cmd, "replay"))
		rc = cmd_replay(&cfg, sub_argc, sub_argv);
	else if (!strcmp(cmd, "report"))
		rc = gw_report_main(&cfg, sub_argc, sub_argv);
	else if (!strcmp(cmd, "export"))
		rc = gw_client_export(&cfg, sub_argc, sub_argv);
	else if (!strcmp(cmd, "prune"))
		rc = gw_cmd_prune(&cfg, sub_argc, sub_argv);
	else if (!strcmp(cmd, "convert"))
		rc = gw_convert_main(&cfg, sub_argc, sub_argv);
	else if (!strcmp(cmd, "formats"))
		rc = gw_formats_main();
	else if (!strcmp(cmd, "send"))
		rc = gw_client_send(&cfg, sub_argc, sub_argv);
	else if (!strcmp(cmd, "runs"))
		rc = gw_client_runs(&cfg, sub_argc, sub_argv);
	else if (!strcmp(cmd, "alerts"))
		rc = gw_client_alerts(&cfg, sub_argc, sub_argv);
	else if (!strcmp(cmd, "thresholds"))
		rc = cmd_thresholds();
	else if (!strcmp(cmd, "version"))
		rc = cmd_version();
	else if (!strcmp(cmd, "help"))
		usage(stdout), rc = 0;
	else {
		fprintf(stderr, "gradwatch: unknown command \"%s\"\n", cmd);
		usage(stderr);
	}
out:
	gw_cfg_free(&cfg);
	return rc;
}
