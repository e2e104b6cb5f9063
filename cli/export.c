/*
 * export: `gradwatch export RUN` (see export.h): every record of a run,
 * paged through the daemon's GET /v1/runs/{run}/records (the cursor of one
 * page asks for the next) or read from the database file with the same
 * query (storage/series.c), written as CSV or as gradwatch NDJSON that
 * replays.  Numbers are written as Python writes them (shortest round trip,
 * NaN for a non-finite value).  -o FILE is written beside it and renamed
 * over it at the end, so a failed export never touches FILE.  --rank N
 * writes instead the lines of rank N the daemon kept apart (another
 * process of the job, detectors/engine.h "Ranks"), as they came, paged
 * through GET /v1/runs/{run}/ranks?rank=N&after=ID or the same query.
 */
#include "export.h"

#include "cli.h"
#include "client_http.h"
#include "series.h"
#include "store.h"
#include "util.h"
#include "wire.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct exporter {
	FILE *out;
	bool csv;
	const char *run;
	uint64_t rows;
	bool header;               /* the CSV header is out */
};

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* A number as Python writes it (NaN for a non-finite value), or nothing. */
static void put_num(FILE *f, json_t *v, bool nonfinite, bool csv)
{
	char b[32];
	if (nonfinite)
		fputs(csv ? "nan" : "NaN", f);
	else if (json_is_number(v)) {
		gw_wire_fmt_double(b, json_number_value(v));
		fputs(b, f);
	} else if (!csv)
		fputs("null", f);
}

static void export_page(struct exporter *x, json_t *page)
{
	static const char *const roles[GW_NROLES] = {"loss", "grad_norm", "lr", "throughput"};
	json_t *step = json_object_get(page, "step"), *seg = json_object_get(page, "segment");
	json_t *sup = json_object_get(page, "superseded"), *nf = json_object_get(page, "nonfinite");
	json_t *ts = json_object_get(page, "ts"), *line = json_object_get(page, "line");
	json_t *extra = json_object_get(page, "extra");
	/* the header with the first page, so a failed export writes nothing */
	if (x->csv && !x->header) {
		fputs("segment,step,superseded,ts,loss,grad_norm,lr,throughput,extra\n", x->out);
		x->header = true;
	}
	for (size_t i = 0; i < json_array_size(step); i++) {
		json_int_t bits = json_integer_value(json_array_get(nf, i));
		json_t *ex = json_array_get(extra, i);
		if (x->csv) {
			fprintf(x->out, "%lld,%lld,%d,", (long long)json_integer_value(json_array_get(seg, i)),
			        (long long)json_integer_value(json_array_get(step, i)),
			        (int)json_integer_value(json_array_get(sup, i)));
			put_num(x->out, json_array_get(ts, i), false, true);
			for (int k = 0; k < GW_NROLES; k++) {
				fputc(',', x->out);
				put_num(x->out, json_array_get(json_object_get(page, roles[k]), i), bits >> k & 1, true);
			}
			fputc(',', x->out);
			if (json_is_object(ex) && json_object_size(ex)) {
				char *e = json_dumps(ex, JSON_COMPACT | JSON_SORT_KEYS);
				csv_field(x->out, e ? e : "");
				free(e);
			}
			fputc('\n', x->out);
		} else {
			/* the wire format, so the file replays (segment and
			 * superseded become extra metrics there) */
			json_t *r = json_pack("{s:s}", "run", x->run);
			char *rs = json_dumps(r, JSON_COMPACT);
			json_decref(r);
			fprintf(x->out, "%.*s, \"step\": %lld, \"segment\": %lld, \"superseded\": %d, \"line\": %lld",
			        rs ? (int)strlen(rs) - 1 : 0, rs ? rs : "",
			        (long long)json_integer_value(json_array_get(step, i)),
			        (long long)json_integer_value(json_array_get(seg, i)),
			        (int)json_integer_value(json_array_get(sup, i)),
			        (long long)json_integer_value(json_array_get(line, i)));
			free(rs);
			if (json_is_number(json_array_get(ts, i))) {
				fputs(", \"ts\": ", x->out);
				put_num(x->out, json_array_get(ts, i), false, false);
			}
			for (int k = 0; k < GW_NROLES; k++) {
				json_t *v = json_array_get(json_object_get(page, roles[k]), i);
				if (!json_is_number(v) && !(bits >> k & 1))
					continue;
				fprintf(x->out, ", \"%s\": ", roles[k]);
				put_num(x->out, v, bits >> k & 1, false);
			}
			const char *key;
			json_t *ev;
			json_object_foreach(ex, key, ev) {
				json_t *k = json_string(key);
				char *ks = json_dumps(k, JSON_ENCODE_ANY);
				json_decref(k);
				fprintf(x->out, ", %s: ", ks ? ks : "\"?\"");
				free(ks);
				if (json_is_string(ev))   /* "NaN", "Infinity", "-Infinity" */
					fputs(json_string_value(ev), x->out);
				else
					put_num(x->out, ev, false, false);
			}
			fputs("}\n", x->out);
		}
		x->rows++;
	}
}

#define RANK_PAGE 20000

/* --rank: one page of a rank's lines after line id *after (0: from the
 * start), from the daemon or the file; each written as it came.  Returns
 * how many it wrote, or -1 (said on stderr). */
static long export_rank_page(struct exporter *x, const char *db, const char *base, long timeout_ms,
                             long long rank, long long *after)
{
	char err[512], rs[24], as[24];
	snprintf(rs, sizeof(rs), "%lld", rank);
	snprintf(as, sizeof(as), "%lld", *after);
	json_t *lines = NULL, *page = NULL;
	if (db) {
		if (gw_store_read_rank_lines(db, x->run, rs, as, RANK_PAGE, &lines, err, sizeof(err)) < 0) {
			fprintf(stderr, "gradwatch export: %s\n", err);
			return -1;
		}
	} else {
		char url[1024];
		char *enc = curl_easy_escape(NULL, x->run, 0);
		snprintf(url, sizeof(url), "%s/v1/runs/%s/ranks?rank=%s&after=%s&limit=%d", base,
		         enc ? enc : "", rs, as, RANK_PAGE);
		curl_free(enc);
		const struct gw__http_opts ho = {.token = gw__client_token(), .timeout_ms = timeout_ms};
		struct gw__http_answer a = {0};
		gw__http_request(&ho, url, NULL, 0, NULL, &a);
		page = a.status > 0 ? json_loads(a.body.p ? a.body.p : "", 0, NULL) : NULL;
		if (a.status != 200 || !page) {
			if (a.status < 0)
				fprintf(stderr, "gradwatch export: %s (is gradwatchd running? or use --db PATH)\n", a.err);
			else
				fprintf(stderr, "gradwatch export: the daemon answered %ld: %s\n", a.status,
				        gw__http_error_text(page, &a.body));
			gw_buf_free(&a.body);
			json_decref(page);
			return -1;
		}
		gw_buf_free(&a.body);
		lines = json_incref(json_object_get(page, "lines"));
		json_decref(page);
	}
	size_t i;
	json_t *l;
	json_array_foreach(lines, i, l) {
		fprintf(x->out, "%s\n", json_string_value(json_object_get(l, "text")));
		*after = json_integer_value(json_object_get(l, "id"));
		x->rows++;
	}
	long n = (long)json_array_size(lines);
	json_decref(lines);
	return n;
}

static const char export_usage[] =
	"usage: gradwatch export RUN [--format csv|jsonl] [--url URL | --db PATH]\n"
	"                        [--from STEP] [--to STEP] [--rank N] [-o FILE]\n"
	"                        [--timeout SECONDS]\n"
	"\n"
	"Every record of a run, for notebooks, from a running gradwatchd over HTTP\n"
	"or, with --db, from its database file.\n"
	"\n"
	"  -f, --format csv|jsonl  csv (default) or gradwatch NDJSON, which replays\n"
	"  -u, --url URL           the daemon's HTTP API (default: $GRADWATCH_URL, else\n"
	"                          the configuration's \"http\" address)\n"
	"  -d, --db PATH           read the database file instead\n"
	"      --from STEP         the first step (default: the run's first)\n"
	"      --to STEP           the last step (default: the run's last)\n"
	"      --rank N            instead, the lines of rank N of a distributed job\n"
	"                          that the daemon kept apart, as they came (NDJSON;\n"
	"                          -1: repeats of interleaved writers without a rank)\n"
	"  -o, --output FILE       write there (default: standard output)\n"
	"      --timeout SECONDS   how long one request may take (default 30)\n"
	"\n"
	"environment: GRADWATCH_URL, GRADWATCH_TOKEN (sent as a bearer token)\n"
	"exit status: 0 written; 2 an error\n";

int gw_client_export(struct gw_cfg *cfg, int argc, char **argv)
{
	static const char prog[] = "gradwatch export";
	static const struct option lo[] = {
		{"url", required_argument, NULL, 'u'},
		{"db", required_argument, NULL, 'd'},
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"rank", required_argument, NULL, 'R'},
		{"timeout", required_argument, NULL, 't'},
		GW_CLI_OPT_HELP,
	};
	char base[256];
	gw__client_default_url(cfg, base, sizeof(base));
	const char *db = NULL, *out_path = NULL, *from = NULL, *to = NULL;
	bool csv = true, url_given = false, format_given = false;
	long long rank = -2;   /* -2: not --rank */
	long timeout_ms = GW__CLIENT_TIMEOUT_MS;
	int ch;
	gw_cli_getopt_start();
	while ((ch = getopt_long(argc, argv, ":u:d:f:o:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'u': gw_strlcpy(base, optarg, sizeof(base)); url_given = true; break;
		case 'd': db = optarg; break;
		case 'o': out_path = optarg; break;
		case 'F': from = optarg; break;
		case 'T': to = optarg; break;
		case 'R': {
			char *end;
			errno = 0;
			rank = strtoll(optarg, &end, 10);
			if (!*optarg || *end || errno || rank < -1 || rank > GW_WIRE_RANK_MAX)
				return gw_cli_usage_error(prog, "--rank wants a rank from -1 to 1048575, not", optarg);
			break;
		}
		case 't':
			if (gw__client_parse_seconds(optarg, &timeout_ms) < 0)
				return gw_cli_usage_error(prog, "--timeout wants seconds (more than 0, at most 86400), not", optarg);
			break;
		case 'f':
			format_given = true;
			if (strcmp(optarg, "csv") == 0)
				csv = true;
			else if (strcmp(optarg, "jsonl") == 0)
				csv = false;
			else
				return gw_cli_usage_error(prog, "--format is csv or jsonl, not", optarg);
			break;
		case 'h': fputs(export_usage, stdout); return 0;
		default: return gw_cli_bad_option(prog, ch, argv);
		}
	}
	if (db && url_given)
		return gw_cli_usage_error(prog, "--url and --db exclude each other; got both, --db", db);
	if (optind >= argc)
		return gw_cli_usage_error(prog, "which run? (gradwatch runs lists them)", NULL);
	if (optind + 1 < argc)
		return gw_cli_usage_error(prog, "one RUN only; unexpected", argv[optind + 1]);
	if (!db && gw__client_check_url(prog, base))
		return GW_EXIT_USAGE;
	if (rank >= -1 && ((format_given && csv) || from || to))
		return gw_cli_usage_error(prog, "--rank writes the lines as they came (jsonl), without "
		                          "--from/--to/--format csv; got", format_given && csv ? "--format csv"
		                          : from ? "--from" : "--to");
	struct gw_series_query q = {.run = argv[optind], .max_points = 0, .limit = 20000, .extra = true};
	const char *bounds[2] = {from, to};
	for (int k = 0; k < 2; k++) {
		char *end;
		if (!bounds[k])
			continue;
		errno = 0;
		long long v = strtoll(bounds[k], &end, 10);
		if (!*bounds[k] || *end || errno)
			return gw_cli_usage_error(prog, k ? "--to wants a step number, not" : "--from wants a step number, not",
			                          bounds[k]);
		if (k)
			q.has_to = true, q.to = v;
		else
			q.has_from = true, q.from = v;
	}
	/* -o FILE: written to FILE.tmp, renamed over FILE only when every row
	 * is in: a failed export (no such run, daemon gone) leaves FILE as it was */
	struct gw_outfile of;
	int orc = gw_outfile_open(&of, out_path);
	if (orc < 0) {
		fprintf(stderr, "gradwatch export: %s: %s\n", out_path, strerror(-orc));
		return 2;
	}
	struct exporter x = {.out = of.f, .csv = csv, .run = q.run};
	char err[512];
	int rc = 0;
	if (!db)
		curl_global_init(CURL_GLOBAL_DEFAULT);
	for (long long after = 0; rank >= -1;) {
		long n = export_rank_page(&x, db, base, timeout_ms, rank, &after);
		if (n < 0)
			rc = 2;
		if (n < RANK_PAGE)
			break;
	}
	for (; rank < -1;) {
		json_t *page = NULL;
		if (db) {
			if (gw_store_read_series(db, &q, &page, err, sizeof(err)) < 0) {
				fprintf(stderr, "gradwatch export: %s\n", err);
				rc = 2;
				break;
			}
		} else {
			char url[1024];
			char *enc = curl_easy_escape(NULL, q.run, 0);
			int n = snprintf(url, sizeof(url), "%s/v1/runs/%s/records?max_points=0&extra=1&limit=%zu",
			                 base, enc ? enc : "", q.limit);
			curl_free(enc);
			if (q.has_cursor)
				n += snprintf(url + n, sizeof(url) - (size_t)n, "&cursor=%lld:%lld",
				              (long long)q.cursor_seg, (long long)q.cursor_step);
			if (q.has_from)
				n += snprintf(url + n, sizeof(url) - (size_t)n, "&from=%lld", (long long)q.from);
			if (q.has_to)
				snprintf(url + n, sizeof(url) - (size_t)n, "&to=%lld", (long long)q.to);
			const struct gw__http_opts ho = {.token = gw__client_token(), .timeout_ms = timeout_ms};
			struct gw__http_answer a = {0};
			gw__http_request(&ho, url, NULL, 0, NULL, &a);
			long st = a.status;
			page = st > 0 ? json_loads(a.body.p ? a.body.p : "", 0, NULL) : NULL;
			if (st != 200 || !page) {
				if (st < 0)
					fprintf(stderr, "gradwatch export: %s%s\n", a.err, a.status == -ECONNREFUSED ?
					        " (is gradwatchd running? or use --db PATH)" : "");
				else
					fprintf(stderr, "gradwatch export: the daemon answered %ld: %s\n", st,
					        gw__http_error_text(page, &a.body));
				gw_buf_free(&a.body);
				json_decref(page);
				rc = 2;
				break;
			}
			gw_buf_free(&a.body);
		}
		export_page(&x, page);
		const char *next = json_string_value(json_object_get(page, "next"));
		long long cs = 0, ct = 0;
		bool more = next && sscanf(next, "%lld:%lld", &cs, &ct) == 2;
		json_decref(page);
		if (!more)
			break;
		q.has_cursor = true;
		q.cursor_seg = cs;
		q.cursor_step = ct;
	}
	if (!db)
		curl_global_cleanup();
	if ((orc = gw_outfile_close(&of, rc == 0)) < 0 && rc == 0) {
		fprintf(stderr, "gradwatch export: %s: %s\n", out_path ? out_path : "standard output",
		        strerror(-orc));
		rc = 2;
	}
	if (rc == 0 && out_path)
		fprintf(stderr, "gradwatch export: %llu row(s) of run %s to %s\n", (unsigned long long)x.rows,
		        q.run, out_path);
	return rc;
}
