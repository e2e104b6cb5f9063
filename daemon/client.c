/*
 * client: `gradwatch send`, `runs`, `alerts` (see client.h).
 *
 * send reads NDJSON, cuts it into batches of whole lines and POSTs each to
 * the daemon's /v1/ingest, which answers once the batch is committed; errors
 * come back with their line numbers, which we shift to the line numbers of
 * the input.  runs and alerts read the daemon's HTTP API, or with --db the
 * database file itself (read-only; works while the daemon runs).
 */
#include "client.h"

#include "lines.h"
#include "series.h"
#include "store.h"
#include "util.h"
#include "wire.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct buf {
	char *p;
	size_t len, cap;
};

static int buf_add(struct buf *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 1 << 16;
		while (nc < b->len + n + 1)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static size_t cb_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	return buf_add(ud, ptr, size * nmemb) < 0 ? 0 : size * nmemb;
}

static void default_url(const struct gw_cfg *cfg, char *out, size_t n)
{
	const char *env = getenv("GRADWATCH_URL");
	if (env && *env) {
		gw_strlcpy(out, env, n);
		return;
	}
	if (strchr(cfg->http.host, ':'))
		snprintf(out, n, "http://[%s]:%d", cfg->http.host, cfg->http.port);
	else
		snprintf(out, n, "http://%s:%d", cfg->http.host, cfg->http.port);
}

/* HTTP request; returns the status (>= 100) or a negative errno. */
static long http_do(const char *url, const char *body, size_t blen, struct buf *out,
                    char *err, size_t errlen)
{
	CURL *h = curl_easy_init();
	if (!h)
		return -ENOMEM;
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	struct curl_slist *hdr = NULL;
	const char *token = getenv("GRADWATCH_TOKEN");
	char auth[320];
	if (token && *token && strlen(token) < sizeof(auth) - 32) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		hdr = curl_slist_append(hdr, auth);
	}
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/x-ndjson");
		hdr = curl_slist_append(hdr, "Expect:");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
	}
	if (hdr)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	CURLcode rc = curl_easy_perform(h);
	long status = 0;
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(err, errlen, "%s: %s", url, cerr[0] ? cerr : curl_easy_strerror(rc));
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return rc == CURLE_OK ? status : -ECONNREFUSED;
}

/* ---- send ----------------------------------------------------------------------------- */

struct sender {
	const char *url;
	struct buf batch;
	size_t batch_lines, max_lines;
	uint64_t first_line;      /* input line number of the batch's first line */
	uint64_t accepted, rejected, batches;
	const char *name;         /* input name for messages */
	int failed;
};

static int flush_batch(struct sender *s)
{
	if (!s->batch_lines)
		return 0;
	struct buf resp = {0};
	char err[512];
	long st = http_do(s->url, s->batch.p, s->batch.len, &resp, err, sizeof(err));
	int rc = 0;
	if (st < 0) {
		fprintf(stderr, "gradwatch send: %s\n", err);
		rc = -EIO;
		goto out;
	}
	json_t *j = json_loads(resp.p ? resp.p : "", 0, NULL);
	if (!j || !json_is_integer(json_object_get(j, "accepted"))) {
		const char *e = json_string_value(json_object_get(j, "error"));
		fprintf(stderr, "gradwatch send: the daemon answered %ld: %s\n", st,
		        e ? e : resp.p ? resp.p : "");
		json_decref(j);
		rc = -EIO;
		goto out;
	}
	s->accepted += (uint64_t)json_integer_value(json_object_get(j, "accepted"));
	s->rejected += (uint64_t)json_integer_value(json_object_get(j, "rejected"));
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(j, "errors"), i, e) {
		fprintf(stderr, "%s:%" PRIu64 ": %s\n", s->name,
		        s->first_line - 1 + (uint64_t)json_integer_value(json_object_get(e, "line")),
		        json_string_value(json_object_get(e, "message")));
	}
	if (json_is_true(json_object_get(j, "errors_truncated")))
		fprintf(stderr, "%s: (more rejected lines in this batch than listed)\n", s->name);
	json_decref(j);
	s->batches++;
out:
	free(resp.p);
	s->batch.len = 0;
	s->first_line += s->batch_lines;
	s->batch_lines = 0;
	return rc;
}

static int on_send_line(void *data, const char *line, size_t len, uint64_t lineno,
                        enum gw_line_status st)
{
	struct sender *s = data;
	if (st == GW_LINE_TOO_LONG) {
		/* the daemon would refuse it; keep line numbers aligned */
		if (buf_add(&s->batch, "\n", 1) < 0)
			return -ENOMEM;
	} else if (buf_add(&s->batch, line, len) < 0 || buf_add(&s->batch, "\n", 1) < 0) {
		return -ENOMEM;
	}
	s->batch_lines++;
	if (s->batch_lines >= s->max_lines || s->batch.len >= (8u << 20))
		return flush_batch(s) < 0 ? -EIO : 0;
	return 0;
}

int gw_client_send(struct gw_cfg *cfg, int argc, char **argv)
{
	static const struct option lo[] = {
		{"url", required_argument, NULL, 'u'},
		{"run", required_argument, NULL, 'r'},
		{"batch", required_argument, NULL, 'b'},
		{0},
	};
	char base[256], url[1024];
	default_url(cfg, base, sizeof(base));
	const char *run = NULL;
	size_t max_lines = 10000;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "u:r:b:", lo, NULL)) != -1) {
		switch (ch) {
		case 'u': gw_strlcpy(base, optarg, sizeof(base)); break;
		case 'r': run = optarg; break;
		case 'b': max_lines = strtoul(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (!max_lines)
		max_lines = 1;
	if (run) {
		char *enc = curl_easy_escape(NULL, run, 0);
		snprintf(url, sizeof(url), "%s/v1/ingest?run=%s", base, enc ? enc : "");
		curl_free(enc);
	} else {
		snprintf(url, sizeof(url), "%s/v1/ingest", base);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int nfiles = argc - optind;
	char *stdin_name[] = {"-"};
	char **files = nfiles ? argv + optind : stdin_name;
	if (!nfiles)
		nfiles = 1;
	int rc = 0;
	uint64_t acc = 0, rej = 0;
	for (int f = 0; f < nfiles && rc == 0; f++) {
		struct sender s = {.url = url, .max_lines = max_lines, .first_line = 1,
		                   .name = strcmp(files[f], "-") ? files[f] : "<stdin>"};
		int fd = strcmp(files[f], "-") ? open(files[f], O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
		if (fd < 0) {
			fprintf(stderr, "gradwatch send: %s: %s\n", files[f], strerror(errno));
			rc = 2;
			break;
		}
		struct gw_lines lines;
		gw_lines_init(&lines, cfg->max_line);
		char chunk[65536];
		ssize_t n;
		int frc = 0;
		while (frc == 0 && (n = read(fd, chunk, sizeof(chunk))) > 0)
			frc = gw_lines_feed(&lines, chunk, (size_t)n, on_send_line, &s);
		if (frc == 0)
			frc = gw_lines_finish(&lines, on_send_line, &s);
		if (frc == 0)
			frc = flush_batch(&s);
		gw_lines_free(&lines);
		free(s.batch.p);
		if (fd != STDIN_FILENO)
			close(fd);
		acc += s.accepted;
		rej += s.rejected;
		if (frc < 0)
			rc = 2;
	}
	curl_global_cleanup();
	fprintf(stderr, "gradwatch send: %" PRIu64 " line(s) accepted and committed, %" PRIu64 " rejected\n",
	        acc, rej);
	if (rc)
		return rc;
	return rej ? 1 : 0;
}

/* ---- runs, alerts ------------------------------------------------------------------------ */

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
		return;
	}
	json_t *arr = json_is_array(out) ? out : json_object_get(out, "runs");
	printf("%-40s %8s %12s %12s\n", "run", "segment", "last step", "open alerts");
	json_array_foreach(arr, i, x) {
		printf("%-40s %8lld %12lld %12lld\n", str_of(x, "run"),
		       (long long)json_integer_value(json_object_get(x, "segment")),
		       (long long)json_integer_value(json_object_get(x, "last_step")),
		       (long long)json_integer_value(json_object_get(x, "open_alerts")));
	}
}

static int query(struct gw_cfg *cfg, int argc, char **argv, bool alerts)
{
	static const struct option lo[] = {
		{"url", required_argument, NULL, 'u'},
		{"db", required_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'j'},
		{0},
	};
	bool as_json = false;
	char base[256];
	default_url(cfg, base, sizeof(base));
	const char *db = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "u:d:j", lo, NULL)) != -1) {
		switch (ch) {
		case 'u': gw_strlcpy(base, optarg, sizeof(base)); break;
		case 'd': db = optarg; break;
		case 'j': as_json = true; break;
		default: return 2;
		}
	}
	const char *run = optind < argc ? argv[optind] : NULL;
	char err[512];
	json_t *out = NULL;
	if (db) {
		int rc = alerts ? gw_store_read_alerts(db, run, 1000, &out, err, sizeof(err))
		         : run ? gw_store_read_run(db, run, &out, err, sizeof(err))
		               : gw_store_read_runs(db, &out, err, sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "gradwatch: %s\n", err);
			return 2;
		}
	} else {
		char url[1024];
		char *enc = run ? curl_easy_escape(NULL, run, 0) : NULL;
		if (alerts)
			snprintf(url, sizeof(url), run ? "%s/v1/runs/%s/alerts" : "%s/v1/alerts", base, enc);
		else
			snprintf(url, sizeof(url), run ? "%s/v1/runs/%s" : "%s/v1/runs", base, enc);
		curl_free(enc);
		struct buf resp = {0};
		curl_global_init(CURL_GLOBAL_DEFAULT);
		long st = http_do(url, NULL, 0, &resp, err, sizeof(err));
		curl_global_cleanup();
		if (st < 0) {
			fprintf(stderr, "gradwatch: %s (is gradwatchd running? or use --db PATH)\n", err);
			free(resp.p);
			return 2;
		}
		out = json_loads(resp.p ? resp.p : "", 0, NULL);
		free(resp.p);
		if (st != 200 || !out) {
			const char *e = json_string_value(json_object_get(out, "error"));
			fprintf(stderr, "gradwatch: the daemon answered %ld%s%s\n", st, e ? ": " : "", e ? e : "");
			json_decref(out);
			return 2;
		}
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
	return query(cfg, argc, argv, true);
}

/* ---- export ------------------------------------------------------------------------------ */

struct exporter {
	FILE *out;
	bool csv;
	const char *run;
	uint64_t rows;
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

int gw_client_export(struct gw_cfg *cfg, int argc, char **argv)
{
	static const struct option lo[] = {
		{"url", required_argument, NULL, 'u'},
		{"db", required_argument, NULL, 'd'},
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{0},
	};
	char base[256];
	default_url(cfg, base, sizeof(base));
	const char *db = NULL, *out_path = NULL, *from = NULL, *to = NULL;
	bool csv = true;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "u:d:f:o:", lo, NULL)) != -1) {
		switch (ch) {
		case 'u': gw_strlcpy(base, optarg, sizeof(base)); break;
		case 'd': db = optarg; break;
		case 'o': out_path = optarg; break;
		case 'F': from = optarg; break;
		case 'T': to = optarg; break;
		case 'f':
			if (strcmp(optarg, "csv") == 0)
				csv = true;
			else if (strcmp(optarg, "jsonl") == 0)
				csv = false;
			else {
				fprintf(stderr, "gradwatch export: --format is csv or jsonl, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		default: return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: gradwatch export RUN [--format csv|jsonl] [--db PATH | --url URL] "
		                "[--from STEP] [--to STEP] [-o FILE]\n");
		return 2;
	}
	struct gw_series_query q = {.run = argv[optind], .max_points = 0, .limit = 20000, .extra = true};
	const char *bounds[2] = {from, to};
	for (int k = 0; k < 2; k++) {
		char *end;
		if (!bounds[k])
			continue;
		long long v = strtoll(bounds[k], &end, 10);
		if (!*bounds[k] || *end) {
			fprintf(stderr, "gradwatch export: --%s takes a step number, not \"%s\"\n", k ? "to" : "from", bounds[k]);
			return 2;
		}
		if (k)
			q.has_to = true, q.to = v;
		else
			q.has_from = true, q.from = v;
	}
	struct exporter x = {.out = stdout, .csv = csv, .run = q.run};
	if (out_path && !(x.out = fopen(out_path, "w"))) {
		fprintf(stderr, "gradwatch export: %s: %s\n", out_path, strerror(errno));
		return 2;
	}
	if (csv)
		fputs("segment,step,superseded,ts,loss,grad_norm,lr,throughput,extra\n", x.out);
	char err[512];
	int rc = 0;
	if (!db)
		curl_global_init(CURL_GLOBAL_DEFAULT);
	for (;;) {
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
			struct buf resp = {0};
			long st = http_do(url, NULL, 0, &resp, err, sizeof(err));
			page = st > 0 ? json_loads(resp.p ? resp.p : "", 0, NULL) : NULL;
			free(resp.p);
			if (st != 200 || !page) {
				const char *e = json_string_value(json_object_get(page, "error"));
				if (st < 0)
					fprintf(stderr, "gradwatch export: %s (is gradwatchd running? or use --db PATH)\n", err);
				else
					fprintf(stderr, "gradwatch export: the daemon answered %ld%s%s\n", st, e ? ": " : "", e ? e : "");
				json_decref(page);
				rc = 2;
				break;
			}
		}
		export_page(&x, page);
		const char *next = json_string_value(json_object_get(page, "next"));
		long long cs, ct;
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
	if (x.out != stdout && fclose(x.out) != 0 && rc == 0) {
		fprintf(stderr, "gradwatch export: %s: %s\n", out_path, strerror(errno));
		rc = 2;
	}
	if (rc == 0 && out_path)
		fprintf(stderr, "gradwatch export: %llu row(s) of run %s to %s\n", (unsigned long long)x.rows,
		        q.run, out_path);
	return rc;
}
