/*
 * The detector engine alone (engine_bench.h): the workloads and the
 * figures.
 *
 * Workloads, from the pre-parsed dev-corpus records (defaults, no hooks):
 *   1 run       the first 500,000 records under one name, steps made
 *               increasing and ts 0.1 s apart (no restart: one segment);
 *   10,000 runs run k gets a slice of ~200 consecutive records, and the
 *               runs take turns record by record, so every record finds
 *               its run's state cold (the daemon with many live jobs).
 * Each is timed with all detectors on (best of reps), then, for the cost
 * breakdown, with none on (the engine's own work: runs, segments, the
 * history, the restart regime) and with each detector alone: a detector's
 * cost is (it alone) - (none).  loss_spike and grad_explosion share their
 * statistics (spike.h), so each alone pays for them and together they pay
 * once.  Thread CPU time, not wall clock (engine_bench.h).
 */
#include "engine_bench.h"

#include "buf.h"
#include "engine.h"
#include "engine_opts.h"
#include "registry.h"
#include "thresholds.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GOAL_ONE_NS 250.0
#define GOAL_MANY_NS 400.0
#define GOAL_BYTES 8192.0
#define ONE_RUN_RECORDS 500000
#define MANY_RUNS 10000

double gw_bench_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void append(struct gw_bench_text *t, const char *p, size_t n)
{
	if (gw_grow((void **)&t->p, &t->cap, t->len + n + 1, 1) < 0)
		exit(2);
	memcpy(t->p + t->len, p, n);
	t->len += n;
}

/* Append a trace with "run":"X" renamed to "run":"X-cN". */
static void add_trace(struct gw_bench_text *t, const char *src, size_t n, int copy)
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

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int gw_bench_corpus(const char *dir, size_t min_lines, struct gw_bench_text *big)
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
	/* in name order, so that every build sees the same text */
	qsort(names, (size_t)n, sizeof(*names), by_name);
	struct gw_bench_text base = {0};
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
			append(&base, buf, got);
		free(buf);
	}
	if (!base.len)
		return -ENOENT;
	for (int copy = 0; big->lines < min_lines; copy++)
		add_trace(big, base.p, base.len, copy);
	free(base.p);
	return 0;
}

struct gw_rec *gw_bench_records(const struct gw_bench_text *t, size_t *n)
{
	struct gw_alias *al = gw_alias_new();
	struct gw_wire *w = gw_wire_new(al);
	struct gw_rec *recs = calloc(t->lines ? t->lines : 1, sizeof(*recs));
	if (!al || !w || !recs)
		return NULL;
	size_t m = 0;
	const char *p = t->p, *end = t->p + t->len;
	while (p < end && m < t->lines) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct gw_rec r;
		if (gw_wire_parse(w, p, ll, NULL, &r, NULL) == 0 && !r.event) {
			r.run = strndup(r.run, r.run_len);
			r.extra = NULL;
			r.n_extra = 0;
			recs[m++] = r;
		}
		p += ll + 1;
	}
	gw_wire_free(w);
	gw_alias_free(al);
	*n = m;
	return recs;
}

/* Seconds of thread CPU time to feed recs[0..n) to a new engine with the
 * detectors of `disabled` off, best of reps; *runs and *bytes from the
 * engine. */
static uint64_t always_off;   /* gw_bench_engine_off() */

void gw_bench_engine_off(uint64_t disabled)
{
	always_off = disabled;
}

struct bytes_sum {
	const struct gw_engine *e;
	size_t sum, max;
};

static void add_bytes(void *data, const struct gw_run_info *ri)
{
	struct bytes_sum *b = data;
	size_t n = gw_engine_run_bytes(b->e, ri->run);
	b->sum += n;
	b->max = n > b->max ? n : b->max;
}

/* What the runs of the last feed() held, on average and at most. */
static double bytes_mean;
static size_t bytes_max;

static double feed(const struct gw_rec *recs, size_t n, uint64_t disabled, int reps,
                   size_t *runs)
{
	disabled |= always_off;
	double best = INFINITY;
	for (int k = 0; k < reps; k++) {
		struct gw_engine_opts o = {.disabled = disabled};
		gw_thresholds_default(&o.th);
		struct gw_engine *e = gw_engine_new(&o, NULL);
		if (!e)
			exit(2);
		double t0 = gw_bench_cpu();
		for (size_t i = 0; i < n; i++)
			gw_engine_feed(e, &recs[i], i + 1, NAN, NULL);
		double dt = gw_bench_cpu() - t0;
		if (dt < best)
			best = dt;
		if (runs)
			*runs = gw_engine_run_count(e);
		struct bytes_sum b = {.e = e};
		gw_engine_foreach_run(e, add_bytes, &b);
		bytes_mean = gw_engine_run_count(e) ? (double)b.sum / (double)gw_engine_run_count(e) : 0;
		bytes_max = b.max;
		gw_engine_free(e);
	}
	return best;
}

static const char *met(bool ok)
{
	return ok ? "met" : "NOT met";
}

/* Each detector's cost on one workload, ns per record. */
static void breakdown(const char *label, const struct gw_rec *recs, size_t n, size_t ndet,
                      double all_ns)
{
	uint64_t none = (1u << ndet) - 1;
	double base = feed(recs, n, none, 1, NULL) * 1e9 / (double)n;
	printf("  %s: engine with no detector %.1f ns/record; each detector alone adds:\n", label, base);
	double sum = 0;
	for (size_t d = 0; d < ndet; d++) {
		double t = feed(recs, n, none & ~((uint64_t)1 << d), 1, NULL) * 1e9 / (double)n;
		printf("    %-20s %8.1f ns/record\n", gw_det_registry[d]->name, t - base);
		sum += t - base;
	}
	printf("    (sum %.1f, engine + sum %.1f, all together %.1f: loss_spike and grad_explosion "
	       "share their statistics)\n", sum, base + sum, all_ns);
}

void gw_bench_engine(const struct gw_rec *recs, size_t m, int reps, bool with_breakdown,
                     const char *only)
{
	size_t ndet = 0;
	while (gw_det_registry[ndet])
		ndet++;
	printf("detector engine alone, all %zu detectors on, %zu pre-parsed records, thread CPU time,"
	       " best of %d:\n", ndet, m, reps);
	size_t one = m < ONE_RUN_RECORDS ? m : ONE_RUN_RECORDS;
	struct gw_rec *single = malloc(one * sizeof(*single));
	for (size_t i = 0; i < one; i++) {
		single[i] = recs[i];
		single[i].run = "one";
		single[i].run_len = 3;
		single[i].step = (int64_t)i + 1;
		single[i].ts = 1.8e9 + (double)i * 0.1;
	}
	size_t runs = MANY_RUNS, per = m / runs, nruns = 0;
	struct gw_rec *inter = malloc(per * runs * sizeof(*inter) + 1);
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
	bool do_one = !only || strcmp(only, "one") == 0, do_many = !only || strcmp(only, "many") == 0;
	double one_ns = do_one ? feed(single, one, 0, reps, NULL) * 1e9 / (double)one : NAN;
	size_t one_bytes = bytes_max;
	double many_ns = do_many ? feed(inter, per * runs, 0, reps, &nruns) * 1e9 / (double)(per * runs)
	                         : NAN;
	size_t bytes = gw_engine_bytes_per_run();
	printf("  %-44s %8.1f ns/record  (%.2f M records/s)\n", "1 run", one_ns, 1e3 / one_ns);
	printf("  %-44s %8.1f ns/record  (%.2f M records/s, %zu runs)\n", "10,000 interleaved runs",
	       many_ns, 1e3 / many_ns, nruns);
	printf("  %-44s %8zu bytes at most (gw_engine_bytes_per_run)\n",
	       "detector state per active run", bytes);
	printf("  %-44s %8zu bytes (the one run), %.0f on average over the 10,000\n", "held now",
	       one_bytes, bytes_mean);
	if (with_breakdown && !only) {
		printf("cost per detector (ns/record; one repetition each):\n");
		breakdown("1 run", single, one, ndet, one_ns);
		breakdown("10,000 interleaved runs", inter, per * runs, ndet, many_ns);
	}
	printf("goals (issue 21):\n");
	printf("  engine alone, 1 run: %.0f ns/record (<= %.0f): %s\n", one_ns, GOAL_ONE_NS,
	       met(one_ns <= GOAL_ONE_NS));
	printf("  engine alone, 10,000 interleaved runs: %.0f ns/record (<= %.0f): %s\n", many_ns,
	       GOAL_MANY_NS, met(many_ns <= GOAL_MANY_NS));
	printf("  detector state per active run: %zu bytes (<= %.0f): %s\n", bytes, GOAL_BYTES,
	       met((double)bytes <= GOAL_BYTES));
	free(single);
	free(inter);
	free(rn);
}
