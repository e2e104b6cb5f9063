/*
 * prune: `gradwatch prune` asks the daemon to delete runs (DELETE
 * /v1/runs/{run}, POST /v1/prune?older_than=): the daemon owns the
 * database while it runs, so pruning goes through it.  The arguments are
 * checked first: DURATION here, each named run by GET /v1/runs/{run}
 * (deleting a run the daemon does not have is an error, not "deleted").
 */
#include "prune.h"

#include "cli.h"
#include "client_http.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: gradwatch prune [--url URL] [--timeout SECONDS] (--older-than DURATION | "
	           "--run NAME...)\n"
	           "  delete runs from the daemon's database: runs whose last line is older than\n"
	           "  DURATION (\"30d\", \"12h\", seconds), or the runs named; needs an ingest token\n"
	           "  ($GRADWATCH_TOKEN) when the daemon has tokens; exit 0 done, 2 error\n");
}

/* Print what an answer says; 0, or 2 (an error, printed).  what names the
 * request (NULL: the URL in the transport's error says it). */
static int report(const char *what, struct gw__http_answer *a)
{
	json_t *j = a->status > 0 ? json_loads(a->body.p ? a->body.p : "", 0, NULL) : NULL;
	int rc = 0;
	if (a->status < 0) {
		fprintf(stderr, "gradwatch prune: %s%s%s\n", what ? what : "", what ? ": " : "", a->err);
		rc = 2;
	} else if (a->status != 200) {
		fprintf(stderr, "gradwatch prune: %s: the daemon answered %ld: %s\n", what, a->status,
		        gw__http_error_text(j, &a->body));
		rc = 2;
	} else {
		size_t i;
		json_t *n;
		json_array_foreach(json_object_get(j, "deleted"), i, n)
			printf("deleted %s\n", json_string_value(n));
	}
	json_decref(j);
	gw_buf_free(&a->body);
	return rc;
}

int gw_cmd_prune(struct gw_cfg *cfg, int argc, char **argv)
{
	static const struct option lo[] = {
		{"url", required_argument, NULL, 'u'},
		{"older-than", required_argument, NULL, 'o'},
		{"run", required_argument, NULL, 'r'},
		{"timeout", required_argument, NULL, 't'},
		GW_CLI_OPT_HELP,
	};
	char base[512];
	gw__client_default_url(cfg, base, sizeof(base));
	struct gw__http_opts ho = {.token = gw__client_token(), .timeout_ms = GW__CLIENT_TIMEOUT_MS};
	const char *older = NULL;
	char **runs = calloc((size_t)argc, sizeof(*runs));
	size_t nruns = 0;
	int ch, rc = 0;
	gw_cli_getopt_start();
	while ((ch = getopt_long(argc, argv, ":u:o:r:t:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'u': gw_strlcpy(base, optarg, sizeof(base)); break;
		case 'o': older = optarg; break;
		case 'r': runs[nruns++] = optarg; break;
		case 't':
			if (gw__client_parse_seconds(optarg, &ho.timeout_ms) < 0) {
				free(runs);
				return gw_cli_usage_error("gradwatch prune", "--timeout takes seconds, not", optarg);
			}
			break;
		case 'h': usage(stdout); free(runs); return 0;
		default: free(runs); return gw_cli_bad_option("gradwatch prune", ch, argv);
		}
	}
	if (gw__client_check_url("gradwatch prune", base)) {
		free(runs);
		return GW_EXIT_USAGE;
	}
	if (optind < argc || (!older && !nruns) || (older && nruns)) {
		free(runs);
		return gw_cli_usage_error("gradwatch prune", optind < argc ? "unexpected argument"
		                          : "give either --older-than DURATION or --run NAME...",
		                          optind < argc ? argv[optind] : NULL);
	}
	if (older) {
		/* the daemon's own rule, before any request */
		json_t *v = json_string(older);
		uint64_t ms;
		int prc = v ? gw_parse_duration(v, &ms) : -ENOMEM;
		json_decref(v);
		if (prc < 0) {
			free(runs);
			return gw_cli_usage_error("gradwatch prune",
			                          "--older-than wants a duration (30d, 12h, 90m, seconds), not",
			                          older);
		}
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	char url[2048];
	struct gw__http_answer a;
	if (older) {
		char *enc = curl_easy_escape(NULL, older, 0);
		snprintf(url, sizeof(url), "%s/v1/prune?older_than=%s", base, enc ? enc : "");
		curl_free(enc);
		memset(&a, 0, sizeof(a));
		ho.method = "POST";
		gw__http_request(&ho, url, NULL, 0, NULL, &a);
		rc = report(NULL, &a);
	}
	for (size_t i = 0; i < nruns && rc == 0; i++) {
		char *enc = curl_easy_escape(NULL, runs[i], 0);
		snprintf(url, sizeof(url), "%s/v1/runs/%s", base, enc ? enc : "");
		curl_free(enc);
		memset(&a, 0, sizeof(a));
		ho.method = "DELETE";
		gw__http_request(&ho, url, NULL, 0, NULL, &a);
		if (a.status == 404) {
			/* a run the daemon does not have (a typo) is an error */
			fprintf(stderr, "gradwatch prune: no run named \"%s\" (gradwatch runs lists them)\n",
			        runs[i]);
			gw_buf_free(&a.body);
			rc = 2;
			break;
		}
		rc = report(runs[i], &a);
	}
	curl_global_cleanup();
	free(runs);
	return rc;
}
