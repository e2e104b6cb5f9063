/*
 * bench_replay: what replay and the detectors cost, beside the cost of only
 * parsing the same lines with jansson, in one run.
 *
 * Input: the dev corpus traces without non-finite values (jansson rejects
 * NaN tokens, so those would make its side cheaper), concatenated with a
 * copy number in each run name until the file has >= 2,000,000 lines.
 * Reports, as lines per second and ns per line:
 *   1. jansson parse-only (json_loadb + json_decref per line),
 *   2. gradwatch's wire parser only,
 *   3. `gradwatch replay --format jsonl` in-process (parse + all detectors
 *      + alert output to /dev/null), and its ratio to 1 (target >= 0.80);
 *   4. the detector engine alone on pre-parsed records: 1 run, and 10,000
 *      interleaved runs (ns per record, with all detectors on).
 *   bench_replay CORPUS_DIR [min_lines]
 */
#include "buf.h"
#include "config.h"
#include "detector.h"
#include "engine.h"
#include "kern.h"
#include "lines.h"
#include "registry.h"
#include "replay.h"
#include "wire.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct text {
	struct gw_buf b;
	size_t lines;
};

static void append(struct text *t, const char *p, size_t n)
{
	if (gw_buf_add(&t->b, p, n) < 0)
		exit(2);
}

/* Append a trace with "run":"X" renamed to "run":"X-cN". */
static void add_trace(struct text *t, const char *src, size_t n, int copy)
{
	const char *p = src, *end = src + n;
	char tag[16];
	int tl = snprintf(tag, sizeof(tag), "-c%d", copy);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *r = memmem(p, ll, "\"run\":\"", 7);
		if (r) {
			const char *q = memchr(r + 7, '"', ll - (size_t)(r + 7 - p));
			append(t, p, (size_t)(q - p));
			append(t, tag, (size_t)tl);
			append(t, q, ll - (size_t)(q - p));
		} else {
			append(t, p, ll);
		}
		append(t, "\n", 1);
		t->lines++;
		p += ll + 1;
	}
}

static int load_corpus(const char *dir, struct text *base)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	char *names[256];
	int n = 0;
	while ((e = readdir(d)) && n < 256) {
		size_t l = strlen(e->d_name);
		if (l > 6 && strcmp(e->d_name + l - 6, ".jsonl") == 0)
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	for (int i = 0; i < n; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		FILE *f = fopen(path, "rb");
		free(names[i]);
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		long sz = ftell(f);
		fseek(f, 0, SEEK_SET);
		char *buf = malloc((size_t)sz + 1);
		size_t got = fread(buf, 1, (size_t)sz, f);
		fclose(f);
		buf[got] = '\0';
		if (!strstr(buf, "NaN") && !strstr(buf, "Infinity"))
			append(base, buf, got);
		free(buf);
	}
	return 0;
}

struct parse_ctx {
	struct gw_wire *w;
	size_t ok, bad;
};

static int count_wire(void *data, const char *line, size_t len, uint64_t no, enum gw_line_status st)
{
	struct parse_ctx *c = data;
	struct gw_rec r;
	if (gw_wire_parse(c->w, line, len, NULL, &r, NULL) == 0)
		c->ok++;
	else
		c->bad++;
	return 0;
}

static int count_jansson(void *data, const char *line, size_t len, uint64_t no, enum gw_line_status st)
{
	struct parse_ctx *c = data;
	json_t *j = json_loadb(line, len, 0, NULL);
	if (j)
		c->ok++;
	else
		c->bad++;
	json_decref(j);
	return 0;
}

struct pre {
	struct gw_rec *recs;
	char (*names)[32];
	size_t n;
};

static void engine_only(const char *label, const struct gw_rec *recs, size_t n)
{
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
	struct gw_engine *e = gw_engine_new(&o, NULL);
	double t0 = now();
	for (size_t i = 0; i < n; i++)
		gw_engine_feed(e, &recs[i], i + 1, NAN, NULL);
	double dt = now() - t0;
	printf("  %-44s %8.1f ns/record  (%.2f M records/s, %zu runs, %zu bytes/run)\n", label,
	       dt * 1e9 / (double)n, (double)n / dt / 1e6, gw_engine_run_count(e),
	       gw_engine_bytes_per_run());
	gw_engine_free(e);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_replay CORPUS_DIR [min_lines]\n");
		return 2;
	}
	size_t min_lines = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000000;
	gw_kern_init(NULL);
	struct text base = {0}, big = {0};
	if (load_corpus(argv[1], &base) < 0 || !base.b.len) {
		fprintf(stderr, "bench_replay: no traces in %s\n", argv[1]);
		return 2;
	}
	for (int copy = 0; big.lines < min_lines; copy++)
		add_trace(&big, base.b.p, base.b.len, copy);
	char path[] = "/tmp/gwreplay-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, big.b.p, big.b.len) != (ssize_t)big.b.len)
		return 2;
	close(fd);
	printf("replay benchmark: %zu lines, %.1f MB (dev corpus traces without NaN, repeated), kernels %s\n",
	       big.lines, (double)big.b.len / 1e6, gw_kern_name());

	struct gw_alias *al = gw_alias_new();
	struct parse_ctx pc = {.w = gw_wire_new(al)};
	struct gw_lines l;

	/* 1. jansson parse-only */
	gw_lines_init(&l, 1 << 20);
	double t0 = now();
	gw_lines_feed(&l, big.b.p, big.b.len, count_jansson, &pc);
	double t_jansson = now() - t0;
	gw_lines_free(&l);
	size_t jok = pc.ok;
	/* 2. wire parse-only */
	pc.ok = pc.bad = 0;
	gw_lines_init(&l, 1 << 20);
	t0 = now();
	gw_lines_feed(&l, big.b.p, big.b.len, count_wire, &pc);
	double t_wire = now() - t0;
	gw_lines_free(&l);
	/* 3. replay, in-process, output to /dev/null */
	struct gw_cfg cfg;
	if (gw_cfg_defaults(&cfg) < 0)
		return 2;
	struct gw_replay_opts ro;
	gw_replay_opts_init(&ro, &cfg);
	ro.format = GW_REPLAY_JSONL;
	ro.min_severity = 0;
	ro.out = fopen("/dev/null", "w");
	struct gw_replay_stats rs;
	char *files[] = {path};
	t0 = now();
	int rc = gw_replay(&ro, files, 1, &rs);
	double t_replay = now() - t0;
	fclose(ro.out);
	gw_cfg_free(&cfg);
	unlink(path);
	if (rc < 0)
		return 2;
	double n = (double)big.lines;
	printf("  %-44s %8.1f ns/line  (%.2f M lines/s, %zu parsed)\n", "jansson parse-only (json_loadb)",
	       t_jansson * 1e9 / n, n / t_jansson / 1e6, jok);
	printf("  %-44s %8.1f ns/line  (%.2f M lines/s, %zu parsed)\n", "gradwatch wire parser only",
	       t_wire * 1e9 / n, n / t_wire / 1e6, pc.ok);
	printf("  %-44s %8.1f ns/line  (%.2f M lines/s, %llu runs, %llu alerts)\n",
	       "gradwatch replay (parse + all detectors)", t_replay * 1e9 / n, n / t_replay / 1e6,
	       (unsigned long long)rs.runs, (unsigned long long)rs.alerts);
	printf("  replay rate / jansson parse-only rate: %.2f   (target >= 0.80: %s)\n",
	       t_jansson / t_replay, t_jansson / t_replay >= 0.8 ? "met" : "NOT met");

	/* 4. the engine alone: pre-parse the records once */
	size_t cap = big.lines, m = 0;
	struct gw_rec *recs = calloc(cap, sizeof(*recs));
	char (*names)[48] = calloc(cap, sizeof(*names));
	const char *p = big.b.p, *end = big.b.p + big.b.len;
	while (p < end && m < cap) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct gw_rec r;
		if (gw_wire_parse(pc.w, p, ll, NULL, &r, NULL) == 0 && !r.event) {
			snprintf(names[m], sizeof(names[m]), "%s", r.run);
			r.run = names[m];
			r.extra = NULL;
			r.n_extra = 0;
			recs[m++] = r;
		}
		p += ll + 1;
	}
	size_t ndet = 0;
	while (gw_det_registry[ndet])
		ndet++;
	printf("detector engine alone, all %zu detectors on, %zu pre-parsed records:\n", ndet, m);
	/* one run: the first trace's records under one name, steps made increasing */
	size_t one = m < 500000 ? m : 500000;
	struct gw_rec *single = malloc(one * sizeof(*single));
	for (size_t i = 0; i < one; i++) {
		single[i] = recs[i];
		single[i].run = "one";
		single[i].run_len = 3;
		single[i].step = (int64_t)i + 1;
		single[i].ts = 1.8e9 + (double)i * 0.1;
	}
	engine_only("1 run", single, one);
	/* 10,000 runs, interleaved: run k gets every 10,000th record */
	size_t runs = 10000, per = m / runs;
	struct gw_rec *inter = malloc(per * runs * sizeof(*inter));
	char (*rn)[16] = malloc(runs * sizeof(*rn));
	for (size_t k = 0; k < runs; k++)
		snprintf(rn[k], sizeof(rn[k]), "run-%05zu", k);
	for (size_t s = 0; s < per; s++) {
		for (size_t k = 0; k < runs; k++) {
			struct gw_rec *r = &inter[s * runs + k];
			*r = recs[(k * per + s) % m];
			r->run = rn[k];
			r->run_len = strlen(rn[k]);
			r->step = (int64_t)s + 1;
			r->ts = 1.8e9 + (double)s * 0.1;
		}
	}
	engine_only("10,000 interleaved runs", inter, per * runs);
	free(single);
	free(inter);
	free(rn);
	free(recs);
	free(names);
	gw_wire_free(pc.w);
	gw_alias_free(al);
	gw_buf_free(&base.b);
	gw_buf_free(&big.b);
	return 0;
}
