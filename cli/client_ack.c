/*
 * client_ack: `gradwatch alerts ack ID [--note TEXT] [--by NAME]` and
 * `gradwatch alerts unack ID [--by NAME]` (docs/alerts.md, "Acknowledging"): one
 * POST or DELETE /v1/alerts/{id}/ack to a running gradwatchd, with the
 * token from $GRADWATCH_TOKEN (an ingest token when auth is on) like the
 * other commands.  --by defaults to $USER.  Prints what the daemon
 * answered: the alert as it now is.
 */
#include "client_ack.h"
#include "client_http.h"

#include "cli.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ack_usage[] =
	"usage: gradwatch alerts ack ID [--note TEXT] [--by NAME] [--url URL] [--json] [--timeout S]\n"
	"       gradwatch alerts unack ID [--by NAME] [--url URL] [--json] [--timeout S]\n"
	"\n"
	"Acknowledge an open alert: it is not repeated to Slack and webhook sinks any\n"
	"more (one message says who acknowledged it and why) until the detector\n"
	"escalates it; unack withdraws the acknowledgement (reminders start again).\n"
	"Acknowledging twice changes nothing.\n"
	"\n"
	"  --note TEXT        why (at most 1024 bytes), shown with the alert\n"
	"  --by NAME          who acknowledges or withdraws (at most 128 bytes;\n"
	"                     default $USER)\n"
	"  --url URL          the daemon's HTTP API (default: $GRADWATCH_URL, else the\n"
	"                     configuration's \"http\" address, http://127.0.0.1:7471)\n"
	"  --json             print the alert the daemon answers (docs/alert-schema.md)\n"
	"  --timeout SECONDS  how long the request may take (default 30)\n"
	"\n"
	"environment: GRADWATCH_URL, GRADWATCH_TOKEN (an ingest token when auth is on), USER\n"
	"exit status: 0 done (or it already was); 2 an error (no such alert, resolved, refused)\n";

static const char *str_of(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

int gw_client_alerts_ack(struct gw_cfg *cfg, int argc, char **argv, bool ack)
{
	static const struct option lo[] = {
		{"note", required_argument, NULL, 'n'},
		{"by", required_argument, NULL, 'b'},
		{"url", required_argument, NULL, 'u'},
		{"json", no_argument, NULL, 'j'},
		{"timeout", required_argument, NULL, 't'},
		GW_CLI_OPT_HELP,
	};
	const char *prog = ack ? "gradwatch alerts ack" : "gradwatch alerts unack";
	const char *note = NULL, *by = getenv("USER");
	bool as_json = false;
	char base[256];
	gw__client_default_url(cfg, base, sizeof(base));
	struct gw__http_opts http = {.token = gw__client_token(), .timeout_ms = GW__CLIENT_TIMEOUT_MS,
	                             .method = ack ? "POST" : "DELETE"};
	int ch;
	gw_cli_getopt_start();
	while ((ch = getopt_long(argc, argv, ":n:b:u:jt:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if (!ack)
				return gw_cli_usage_error(prog, "--note is for ack; unack takes none, got", optarg);
			note = optarg;
			break;
		case 'b': by = optarg; break;
		case 'u': gw_strlcpy(base, optarg, sizeof(base)); break;
		case 'j': as_json = true; break;
		case 't':
			if (gw__client_parse_seconds(optarg, &http.timeout_ms) < 0)
				return gw_cli_usage_error(prog, "--timeout wants seconds (more than 0, at most 86400), not", optarg);
			break;
		case 'h': fputs(ack_usage, stdout); return 0;
		default: return gw_cli_bad_option(prog, ch, argv);
		}
	}
	if (optind >= argc)
		return gw_cli_usage_error(prog, "the alert ID is missing (gradwatch alerts lists them); got",
		                          "nothing");
	if (optind + 1 < argc)
		return gw_cli_usage_error(prog, "one alert ID; unexpected", argv[optind + 1]);
	const char *id = argv[optind];
	if (gw__client_check_url(prog, base))
		return GW_EXIT_USAGE;
	char *body = NULL;
	if (ack || (by && *by)) {   /* unack: {"by"} only */
		json_t *b = json_object();
		if (b && by && *by)
			json_object_set_new(b, "by", json_string(by));
		if (b && note)
			json_object_set_new(b, "note", json_string(note));
		/* jansson refuses text that is not UTF-8: say so here */
		if (b && ((by && *by && !json_object_get(b, "by")) || (note && !json_object_get(b, "note")))) {
			json_decref(b);
			return gw_cli_usage_error(prog, "--by and --note must be UTF-8 text; got",
			                          note && !json_object_get(b, "note") ? note : by);
		}
		body = b ? json_dumps(b, JSON_COMPACT) : NULL;
		json_decref(b);
		if (!body) {
			fprintf(stderr, "%s: out of memory\n", prog);
			return 2;
		}
	}
	char *enc = curl_easy_escape(NULL, id, 0);
	char url[1024];
	snprintf(url, sizeof(url), "%s/v1/alerts/%s/ack", base, enc ? enc : "");
	curl_free(enc);
	json_t *out = NULL;
	int failed = gw__http_json(prog, &http, url, body, " to an ingest token",
	                           " (is gradwatchd running?)", &out);
	free(body);
	if (failed)
		return 2;
	int rc = 0;
	if (as_json) {
		char *s = json_dumps(out, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
		rc = s && puts(s) >= 0 ? 0 : 2;
		free(s);
	} else if (ack) {
		printf("%s acknowledged%s%s%s%s\n", str_of(out, "id"), *str_of(out, "acked_by") ? " by " : "",
		       str_of(out, "acked_by"), *str_of(out, "ack_note") ? ": " : "",
		       str_of(out, "ack_note"));
	} else {
		printf("%s: not acknowledged\n", str_of(out, "id"));
	}
	json_decref(out);
	return rc;
}
