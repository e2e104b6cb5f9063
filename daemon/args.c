/*
 * args: gradwatchd's command line (see args.h).  A first getopt pass finds
 * the configuration file (and --help, which reads nothing), a second
 * applies the flags over the file, so flags override it wherever they
 * stand on the line.  --help, --version, --check-config and
 * every usage or configuration error end here, with the exit status
 * gradwatchd returns: 0 done, 1 a configuration the daemon refuses, 2 a
 * usage error (GW_EXIT_USAGE).
 */
#include "args.h"

#include "alerting.h"
#include "auth.h"
#include "cli.h"
#include "engine.h"
#include "fault.h"
#include "fleet.h"
#include "follow.h"
#include "log.h"
#include "reader.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gradwatchd [options]\n"
	        "\n"
	        "The gradwatch daemon: ingests training telemetry (NDJSON over a Unix socket,\n"
	        "TCP, UDP and HTTP, or followed log files), stores it in SQLite, runs the\n"
	        "detectors and delivers alerts.\n"
	        "\n"
	        "  -c, --config FILE        JSON configuration (docs/configuration.md)\n"
	        "      --state-dir DIR      where the database lives (default $STATE_DIRECTORY,\n"
	        "                           else $XDG_STATE_HOME/gradwatch, ~/.local/state/gradwatch)\n"
	        "      --db PATH            the SQLite database (default STATE_DIR/gradwatch.db)\n"
	        "      --socket PATH|off    Unix socket for NDJSON (default $RUNTIME_DIRECTORY/\n"
	        "                           gradwatch.sock, else $XDG_RUNTIME_DIR/gradwatch/gradwatch.sock,\n"
	        "                           else STATE_DIR/gradwatch.sock)\n"
	        "      --tcp ADDR:PORT|off  NDJSON over TCP (default 127.0.0.1:%d)\n"
	        "      --udp ADDR:PORT|off  NDJSON datagrams (default 127.0.0.1:%d)\n"
	        "      --http ADDR:PORT|off HTTP API and web view (default 127.0.0.1:%d)\n"
	        "      --log-level LEVEL    crit, err, warn, info, debug (default info)\n"
	        "      --kernels NAME       scalar, sse2, avx2, neon (default: $GRADWATCH_KERNELS,\n"
	        "                           else the best the CPU has)\n"
	        "      --follow FILE        tail the log a job writes to FILE, in any format that\n"
	        "                           can be followed (gradwatch formats; sniffed); repeatable\n"
	        "      --run NAME           run name of points without one in the --follow FILE\n"
	        "                           before it (default: from the file name, as replay)\n"
	        "      --input-format NAME  the format of the --follow FILE before it (default:\n"
	        "                           sniffed)\n"
	        "      --fleet-view DSN     no ingest, no detection: serve the web view and read API\n"
	        "                           over the fleet's PostgreSQL (docs/fleet.md); DSN is a\n"
	        "                           libpq URI or string, env:NAME or file:PATH to read it\n"
	        "      --check-config       check the configuration; print the effective one as\n"
	        "                           JSON in the file's schema on stdout; exit\n"
	        "  -V, --version            print version, kernel variant, detectors, formats\n"
	        "  -h, --help               print this\n"
	        "\n"
	        "exit status: 0 stopped cleanly; 1 a start-up or shutdown failure (bad\n"
	        "configuration, database, address in use); 2 a usage error\n",
	        GW_DEFAULT_PORT, GW_DEFAULT_PORT, GW_DEFAULT_HTTP_PORT);
}

enum {
	OPT_STATE_DIR = 1000, OPT_DB, OPT_SOCKET, OPT_TCP, OPT_UDP, OPT_HTTP, OPT_LOG,
	OPT_KERNELS, OPT_CHECK, OPT_FOLLOW, OPT_RUN, OPT_FORMAT, OPT_FLEET_VIEW,
};

/* --follow FILE [--run NAME] [--input-format NAME]: one more entry of the
 * config's "follow" array; --run and --input-format apply to the --follow
 * before them. */
static int add_follow(struct gw_cfg *cfg, int opt, const char *v)
{
	size_t n = json_array_size(cfg->follow);
	if (opt == OPT_FOLLOW)
		return json_array_append_new(cfg->follow, json_pack("{s:s}", "path", v)) ? -ENOMEM : 0;
	const char *key = opt == OPT_RUN ? "run" : "format";
	if (n == 0 || json_object_get(json_array_get(cfg->follow, n - 1), key)) {
		gw_cli_usage_error("gradwatchd", opt == OPT_RUN ? "--run NAME goes after the --follow FILE "
		                   "it applies to (once per --follow); got --run" : "--input-format NAME goes "
		                   "after the --follow FILE it applies to (once per --follow); got --input-format", v);
		return -EINVAL;
	}
	if (opt == OPT_FORMAT && !gw_reader_format_find(v))
		return gw_cli_bad_format("gradwatchd", v), -EINVAL;
	return json_object_set_new(json_array_get(cfg->follow, n - 1), key, json_string(v));
}

/* --fleet-view DSN | env:NAME | file:PATH: the DSN, read as the fleet's
 * "postgresql" keys are (gw_secret_load). */
static int fleet_view_dsn(struct gw_args *a, const char *v)
{
	char err[300];
	const char *key = !strncmp(v, "env:", 4) ? "postgresql_env"
	                : !strncmp(v, "file:", 5) ? "postgresql_file" : "postgresql";
	const char *val = key[10] == '_' ? strchr(v, ':') + 1 : v;
	json_t *o = json_pack("{s:s}", key, val);
	free(a->fleet_view);
	a->fleet_view = NULL;
	int rc = o ? gw_secret_load(o, "postgresql", "--fleet-view", &a->fleet_view, NULL, err,
	                            sizeof(err)) : -ENOMEM;
	json_decref(o);
	if (rc == 0 && !a->fleet_view)
		rc = gw_errf(err, sizeof(err), -EINVAL, "--fleet-view: no DSN");
	if (rc < 0)
		gw_cli_usage_error("gradwatchd", err, NULL);
	return rc;
}

static int apply_listen(const char *flag, const char *v, struct gw_listen *l)
{
	char err[256], what[300];
	if (gw_cfg_parse_listen(v, l, err, sizeof(err)) < 0) {
		snprintf(what, sizeof(what), "%s: %s", flag, err);
		gw_cli_usage_error("gradwatchd", what, NULL);
		return -EINVAL;
	}
	return 0;
}

/* --check-config: the configuration this daemon would run with, checked
 * as the start checks it, printed as JSON in the file's schema. */
static int check_config(struct gw_cfg *cfg)
{
	char err[512], warn[512];
	if (gw_cfg_check_dirs(cfg, err, sizeof(err), warn, sizeof(warn)) < 0) {
		/* a valid configuration this daemon cannot run with here */
		fprintf(stderr, "gradwatchd: %s\n", err);
		return 2;
	}
	if (warn[0])
		fprintf(stderr, "gradwatchd: warning: %s\n", warn);
	/* the token files as the start reads them (it would refuse them) */
	struct gw_auth *auth = NULL;
	int arc = gw_auth_load(cfg->auth, &auth, err, sizeof(err));
	gw_auth_free(auth);
	if (arc < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		return 1;
	}
	/* the fleet's DSN as the start reads it (a file, the environment) */
	struct gw_fleet_cfg fc;
	arc = gw_fleet_cfg_parse(cfg->fleet, &fc, err, sizeof(err));
	gw_fleet_cfg_free(&fc);
	if (arc < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		return 1;
	}
	/* stdout: only the configuration, in the file's schema */
	char *s = gw_cfg_dumps(cfg);
	if (!s) {
		fprintf(stderr, "gradwatchd: out of memory\n");
		return 1;
	}
	printf("%s\n", s);
	free(s);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "gradwatchd: cannot write the configuration: %s\n", strerror(errno));
		return 1;
	}
	fprintf(stderr, "configuration OK%s%s\n", cfg->file ? ": " : " (no file: defaults and flags)",
	        cfg->file ? cfg->file : "");
	return 0;
}

int gw_args_parse(int argc, char **argv, struct gw_args *a)
{
	static const struct option lo[] = {
		{"config", required_argument, NULL, 'c'},
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"db", required_argument, NULL, OPT_DB},
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"tcp", required_argument, NULL, OPT_TCP},
		{"udp", required_argument, NULL, OPT_UDP},
		{"http", required_argument, NULL, OPT_HTTP},
		{"log-level", required_argument, NULL, OPT_LOG},
		{"kernels", required_argument, NULL, OPT_KERNELS},
		{"check-config", no_argument, NULL, OPT_CHECK},
		{"follow", required_argument, NULL, OPT_FOLLOW},
		{"run", required_argument, NULL, OPT_RUN},
		{"input-format", required_argument, NULL, OPT_FORMAT},
		{"fleet-view", required_argument, NULL, OPT_FLEET_VIEW},
		{"version", no_argument, NULL, 'V'},
		GW_CLI_OPT_HELP,
	};
	struct gw_cfg *cfg = &a->cfg;
	char err[512];
	int rc = 1;
	memset(a, 0, sizeof(*a));
	if (gw_cfg_defaults(cfg) < 0) {
		fprintf(stderr, "gradwatchd: out of memory\n");
		return 1;
	}
	/* the file first, so flags override it wherever they stand */
	const char *config = NULL;
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":c:Vh", lo, NULL)) != -1) {
		if (ch == 'c') {
			config = optarg;
		} else if (ch == '?' || ch == ':') {
			rc = gw_cli_bad_option("gradwatchd", ch, argv);
			goto out_cfg;
		} else if (ch == 'h') {
			/* help without reading the file */
			usage(stdout);
			rc = 0;
			goto out_cfg;
		}
	}
	if (config && gw_cfg_load(cfg, config, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		goto out_cfg;
	}
	/* the file alone, before flags: a SIGHUP says what changed in it that
	 * only a restart applies */
	if (config)
		a->file_cfg = gw_cfg_to_json(cfg);
	bool check = false, version = false;
	const char *kernels = cfg->kernels;
	optind = 0;   /* 0: glibc starts afresh */
	rc = GW_EXIT_USAGE;    /* for the usage errors below */
	while ((ch = getopt_long(argc, argv, ":c:Vh", lo, NULL)) != -1) {
		switch (ch) {
		case 'c':
			break;
		case OPT_STATE_DIR:
			gw_cfg_set_str(&cfg->state_dir, optarg);
			free(cfg->db_path);
			if (asprintf(&cfg->db_path, "%s/gradwatch.db", optarg) < 0)
				cfg->db_path = NULL;
			break;
		case OPT_DB:
			gw_cfg_set_str(&cfg->db_path, optarg);
			break;
		case OPT_SOCKET:
			gw_cfg_set_str(&cfg->socket_path, strcmp(optarg, "off") ? optarg : NULL);
			break;
		case OPT_TCP:
			if (apply_listen("--tcp", optarg, &cfg->tcp) < 0)
				goto out_cfg;
			break;
		case OPT_UDP:
			if (apply_listen("--udp", optarg, &cfg->udp) < 0)
				goto out_cfg;
			break;
		case OPT_HTTP:
			if (apply_listen("--http", optarg, &cfg->http) < 0)
				goto out_cfg;
			break;
		case OPT_LOG:
			a->log_level_flag = true;
			if (gw_log_parse_level(optarg, &cfg->log_level) < 0) {
				gw_cli_usage_error("gradwatchd", "--log-level is crit, err, warn, info or debug, not",
				                   optarg);
				goto out_cfg;
			}
			break;
		case OPT_KERNELS:
			kernels = optarg;
			break;
		case OPT_CHECK:
			check = true;
			break;
		case OPT_FOLLOW:
		case OPT_RUN:
		case OPT_FORMAT:
			if (add_follow(cfg, ch, optarg) < 0)
				goto out_cfg;
			break;
		case OPT_FLEET_VIEW:
			if (fleet_view_dsn(a, optarg) < 0)
				goto out_cfg;
			break;
		case 'V':
			version = true;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out_cfg;
		default:
			gw_cli_bad_option("gradwatchd", ch, argv);
			goto out_cfg;
		}
	}
	if (optind < argc) {
		gw_cli_usage_error("gradwatchd", "takes no arguments; unexpected", argv[optind]);
		goto out_cfg;
	}
	rc = 1;
	if (gw_cfg_init_kernels(kernels, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		goto out_cfg;
	}
	if (version) {
		gw_cli_print_version(stdout, "gradwatchd");
		printf("memory per run: %zu bytes\n", gw_engine_bytes_per_run());
		if (gw_fault_describe())
			printf("%s\n", gw_fault_describe());
		rc = 0;
		goto out_cfg;
	}
	if (gw_cfg_validate(cfg, err, sizeof(err)) < 0 ||
	    gw_follow_validate(cfg->follow, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		goto out_cfg;
	}
	if (gw_alerting_check(cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		goto out_cfg;
	}
	if (check) {
		rc = check_config(cfg);
		goto out_cfg;
	}
	return -1;   /* start the daemon */
out_cfg:
	gw_args_free(a);
	return rc;
}

void gw_args_free(struct gw_args *a)
{
	json_decref(a->file_cfg);
	a->file_cfg = NULL;
	if (a->fleet_view)
		memset(a->fleet_view, 0, strlen(a->fleet_view));
	free(a->fleet_view);
	a->fleet_view = NULL;
	gw_cfg_free(&a->cfg);
}
