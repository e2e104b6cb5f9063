/*
 * client: `gradwatch runs` and `alerts` (see client.h): they read the
 * daemon's HTTP API, or with --db the database file itself (read-only;
 * works while the daemon runs).  `alerts ack|unack` is client_ack.c's.
 *
 * Where the daemon is and how to authenticate: --url, else $GRADWATCH_URL,
 * else the configuration's HTTP address; $GRADWATCH_TOKEN is sent as
 * "Authorization: Bearer" (client_http.c).  Exit status: 0 done; 2 an
 * error (usage, connection, the daemon refusing).
 */
#include "client.h"

#include "cli.h"
#include "client_ack.h"
#include "client_http.h"
#include "query.h"
#include "util.h"

#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int print_json(json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
	if (!s)
		return 2;
	puts(s);
	free(s);
	return 0;
}

static const char *str_of(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* Human-readable: one block per alert, one line per run. */
static void print_text(json_t *out, bool alerts, const char *run)
{
	size_t i;
	json_t *x;
	if (alerts) {
		json_t *arr = json_is_array(out) ? out : json_object_get(out, "alerts");
		if (!json_array_size(arr))
			printf("no alerts\n");
		json_array_foreach(arr, i, x) {
			printf("%s %-8s %-17s run %s, segment %lld, step %lld (%s)\n  %s\n",
			       str_of(x, "id"), str_of(x, "severity"), str_of(x, "detector"), str_of(x, "run"),
			       (long long)json_integer_value(json_object_get(x, "segment")),
			       (long long)json_integer_value(json_object_get(x, "step")), str_of(x, "state"),
			       str_of(x, "summary"));
			if (json_is_number(json_object_get(x, "acked_at"))) {
				/* acknowledged (docs/alerts.md "Acknowledging"): who, when, why */
				time_t t = (time_t)json_number_value(json_object_get(x, "acked_at"));
				struct tm tm;
				char when[32] = "";
				if (gmtime_r(&t, &tm))
					strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
				printf("  acknowledged%s%s at %s%s%s\n", *str_of(x, "acked_by") ? " by " : "",
				       str_of(x, "acked_by"), when, *str_of(x, "ack_note") ? ": " : "",
				       str_of(x, "ack_note"));
			}
			if (*str_of(x, "cause"))
				printf("  likely cause: %s\n  what to check: %s\n", str_of(x, "cause"),
				       str_of(x, "action"));
		}
		return;
	}
	if (run) {
		printf("run %s: segment %lld, last step %lld\n", str_of(out, "run"),
		       (long long)json_integer_value(json_object_get(out, "segment")),
		       (long long)json_integer_value(json_object_get(out, "last_step")));
		json_array_foreach(json_object_get(out, "segments"), i, x) {
			printf("  segment %lld: %s at step %lld, %lld records, last step %lld\n",
			       (long long)json_integer_value(json_object_get(x, "segment")), str_of(x, "reason"),
			       (long long)json_integer_value(json_object_get(x, "first_step")),
			       (long long)json_integer_value(json_object_get(x, "records")),
			       (long long)json_integer_value(json_object_get(x, "last_step")));
		}
		/* several processes (docs/wire-format.md "Several processes, one run") */
		json_t *w = json_object_get(out, "writers");
		if (json_is_true(json_object_get(w, "interleaved")))
			printf("  several processes log this run (recognised at step %lld): their repeats "
			       "are kept apart and open no segments\n",
			       (long long)json_integer_value(json_object_get(w, "step")));
		json_array_foreach(json_object_get(out, "ranks"), i, x) {
			long long k = (long long)json_integer_value(json_object_get(x, "rank"));
			printf("  %s %lld%s: %lld lines kept apart, last step %lld\n",
			       k < 0 ? "interleaved repeats (rank" : "rank", k, k < 0 ? ")" : "",
			       (long long)json_integer_value(json_object_get(x, "lines")),
			       (long long)json_integer_value(json_object_get(x, "last_step")));
		}
		return;
	}
	json_t *arr = json_is_array(out) ? out : json_object_get(out, "runs");
	printf("%-40s %8s %12s %12s  %s\n", "run", "segment", "last step", "open alerts", "state");
	json_array_foreach(arr, i, x) {
		/* pad by characters, not bytes: UTF-8 continuation bytes add width */
		const char *name = str_of(x, "run");
		int pad = 40;
		for (const char *c = name; *c; c++)
			pad += ((unsigned char)*c & 0xC0) == 0x80;
		const char *state = str_of(x, "state");
		printf("%-*s %8lld %12lld %12lld  %s\n", pad, name,
		       (long long)json_integer_value(json_object_get(x, "segment")),
		       (long long)json_integer_value(json_object_get(x, "last_step")),
		       (long long)json_integer_value(json_object_get(x, "open_alerts")),
		       *state ? state : "-");
	}
}

static const char query_usage[] =
	"usage: gradwatch %s [--url URL | --db PATH] [--json] [--timeout SECONDS]\n"
	"       %*s [RUN | --run NAME]\n"
	"%s"
	"\n"
	"%s,\nfrom a running gradwatchd over HTTP or, with --db, from its database\n"
	"file (read-only; works while the daemon runs).\n"
	"\n"
	"  --url URL          the daemon's HTTP API (default: $GRADWATCH_URL, else the\n"
	"                     configuration's \"http\" address, http://127.0.0.1:7471)\n"
	"  --db PATH          read the database file instead (gradwatchd's default:\n"
	"                     $STATE_DIRECTORY or $XDG_STATE_HOME/gradwatch/gradwatch.db)\n"
	"  --json             print the JSON the daemon's API answers (GET /v1/runs,\n"
	"                     /v1/alerts...); --db prints the same; alerts in the\n"
	"                     alert schema (docs/alert-schema.md)\n"
	"  --timeout SECONDS  how long the request may take (default 30)\n"
	"  --run NAME         the run NAME, as RUN does; also a run whose name is a\n"
	"                     word this command reads (\"ack\", \"unack\", \"-x\")\n"
	"\n"
	"environment: GRADWATCH_URL, GRADWATCH_TOKEN (sent as a bearer token)\n"
	"exit status: 0 printed; 2 an error\n";

static int query(struct gw_cfg *cfg, int argc, char **argv, bool alerts)
{
	static const struct option lo[] = {
		{"url", required_argument, NULL, 'u'},
		{"db", required_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'j'},
		{"timeout", required_argument, NULL, 't'},
		{"run", required_argument, NULL, 'r'},
		GW_CLI_OPT_HELP,
	};
	const char *prog = alerts ? "gradwatch alerts" : "gradwatch runs";
	const char *run = NULL;
	bool as_json = false, url_given = false;
	char base[256];
	gw__client_default_url(cfg, base, sizeof(base));
	const char *db = NULL;
	struct gw__http_opts http = {.token = gw__client_token(), .timeout_ms = GW__CLIENT_TIMEOUT_MS};
	int ch;
	gw_cli_getopt_start();
	while ((ch = getopt_long(argc, argv, ":u:d:jt:r:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'u': gw_strlcpy(base, optarg, sizeof(base)); url_given = true; break;
		case 'd': db = optarg; break;
		case 'j': as_json = true; break;
		case 'r':
			if (run)
				return gw_cli_usage_error(prog, "one --run at most; got another,", optarg);
			run = optarg;
			break;
		case 't':
			if (gw__client_parse_seconds(optarg, &http.timeout_ms) < 0)
				return gw_cli_usage_error(prog, "--timeout wants seconds (more than 0, at most 86400), not", optarg);
			break;
		case 'h':
			printf(query_usage, prog + 10, (int)strlen(prog + 10), "",
			       alerts ? "       gradwatch alerts ack ID [--note TEXT] | unack ID  (see "
			                "gradwatch alerts ack --help)\n" : "",
			       alerts ? "List stored alerts, newest first (of one run, if given)"
			                                      : "List the runs, or one run: segments, last step, last values");
			return 0;
		default: return gw_cli_bad_option(prog, ch, argv);
		}
	}
	if (db && url_given)
		return gw_cli_usage_error(prog, "--url and --db exclude each other; got both, --db", db);
	if (optind + 1 < argc)
		return gw_cli_usage_error(prog, "one RUN at most; unexpected", argv[optind + 1]);
	if (run && optind < argc)
		return gw_cli_usage_error(prog, "--run and RUN name the same thing; give one, not also",
		                          argv[optind]);
	if (!run)
		run = optind < argc ? argv[optind] : NULL;
	json_t *out = NULL;
	if (db) {
		/* exactly what the daemon's API answers from the same file */
		int st = alerts ? gw_query_alerts(db, run, &out) : gw_query_runs(db, run, &out);
		if (st != 200) {
			fprintf(stderr, "%s: %s\n", prog, json_string_value(json_object_get(out, "error")));
			json_decref(out);
			return 2;
		}
	} else {
		if (gw__client_check_url(prog, base))
			return GW_EXIT_USAGE;
		char url[1024];
		char *enc = run ? curl_easy_escape(NULL, run, 0) : NULL;
		if (alerts)
			snprintf(url, sizeof(url), run ? "%s/v1/runs/%s/alerts" : "%s/v1/alerts", base, enc);
		else
			snprintf(url, sizeof(url), run ? "%s/v1/runs/%s" : "%s/v1/runs", base, enc);
		curl_free(enc);
		if (gw__http_json(prog, &http, url, NULL, "", " (is gradwatchd running? or use --db PATH)",
		                  &out))
			return 2;
	}
	int rc = 0;
	if (as_json)
		rc = print_json(out);
	else
		print_text(out, alerts, run);
	json_decref(out);
	return rc;
}

int gw_client_runs(struct gw_cfg *cfg, int argc, char **argv)
{
	return query(cfg, argc, argv, false);
}

int gw_client_alerts(struct gw_cfg *cfg, int argc, char **argv)
{
	/* "alerts ack ID" / "alerts unack ID" (client_ack.c) */
	if (argc >= 2 && (strcmp(argv[1], "ack") == 0 || strcmp(argv[1], "unack") == 0))
		return gw_client_alerts_ack(cfg, argc - 1, argv + 1, argv[1][0] == 'a');
	return query(cfg, argc, argv, true);
}
