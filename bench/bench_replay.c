/*
 * bench_replay: what replay and the detectors cost, beside the cost of only
 * parsing the same lines with jansson, in one run.
 *
 * Input: the dev corpus traces without non-finite values (jansson rejects
 * NaN tokens, so those would make its side cheaper), concatenated with a
 * copy number in each run name until the file has >= 2,000,000 lines.
 * Reports, as lines per second and ns per line (thread CPU time, the best
 * of reps rounds in which the three take turns):
 *   1. jansson parse-only (json_loadb + json_decref per line),
 *   2. gradwatch's wire parser only,
 *   3. `gradwatch replay --format jsonl` in-process (parse + all detectors
 *      + alert output to /dev/null),
 *   4. the detector engine alone on pre-parsed records (engine_bench.c: 1
 *      run, 10,000 interleaved runs, the cost of each detector, the state
 *      per run),
 * and the goals of issue 21, met or not: replay >= 1.6M lines/s and >= 3.5x
 * jansson's rate, the engine's (engine_bench.c).
 *   bench_replay CORPUS_DIR [min_lines [reps]]
 */
#include "config.h"
#include "engine.h"
#include "engine_bench.h"
#include "kern.h"
#include "lines.h"
#include "replay.h"
#include "wire.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GOAL_LINES_PER_S 1.6e6   /* issue 21 */
#define GOAL_RATIO 3.5

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

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_replay CORPUS_DIR [min_lines [reps]]\n");
		return 2;
	}
	size_t min_lines = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000000;
	int reps = argc > 3 ? atoi(argv[3]) : 3;
	if (reps < 1)
		reps = 1;
	gw_kern_init(NULL);
	struct gw_bench_text big = {0};
	if (gw_bench_corpus(argv[1], min_lines, &big) < 0) {
		fprintf(stderr, "bench_replay: no traces in %s\n", argv[1]);
		return 2;
	}
	char path[] = "/tmp/gwreplay-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, big.p, big.len) != (ssize_t)big.len)
		return 2;
	close(fd);
	printf("replay benchmark: %zu lines, %.1f MB (dev corpus traces without NaN, repeated), kernels %s\n",
	       big.lines, (double)big.len / 1e6, gw_kern_name());

	struct gw_alias *al = gw_alias_new();
	struct parse_ctx pc = {.w = gw_wire_new(al)};
	struct gw_lines l;
	struct gw_cfg cfg;
	if (gw_cfg_defaults(&cfg) < 0)
		return 2;
	/* the three take turns, reps times; each keeps its best (thread CPU time) */
	double t_jansson = INFINITY, t_wire = INFINITY, t_replay = INFINITY;
	size_t jok = 0;
	struct gw_replay_stats rs = {0};
	for (int k = 0; k < reps; k++) {
		/* 1. jansson parse-only */
		pc.ok = pc.bad = 0;
		gw_lines_init(&l, 1 << 20);
		double t0 = gw_bench_cpu();
		gw_lines_feed(&l, big.p, big.len, count_jansson, &pc);
		t_jansson = fmin(t_jansson, gw_bench_cpu() - t0);
		gw_lines_free(&l);
		jok = pc.ok;
		/* 2. wire parse-only */
		pc.ok = pc.bad = 0;
		gw_lines_init(&l, 1 << 20);
		t0 = gw_bench_cpu();
		gw_lines_feed(&l, big.p, big.len, count_wire, &pc);
		t_wire = fmin(t_wire, gw_bench_cpu() - t0);
		gw_lines_free(&l);
		/* 3. replay, in-process, output to /dev/null */
		struct gw_replay_opts ro;
		gw_replay_opts_init(&ro, &cfg);
		ro.format = GW_REPLAY_JSONL;
		ro.min_severity = 0;
		ro.out = fopen("/dev/null", "w");
		char *files[] = {path};
		t0 = gw_bench_cpu();
		int rc = gw_replay(&ro, files, 1, &rs);
		t_replay = fmin(t_replay, gw_bench_cpu() - t0);
		fclose(ro.out);
		if (rc < 0)
			return 2;
	}
	gw_cfg_free(&cfg);
	unlink(path);
	double n = (double)big.lines;
	printf("thread CPU time, best of %d:\n", reps);
	printf("  %-44s %8.1f ns/line  (%.2f M lines/s, %zu parsed)\n", "jansson parse-only (json_loadb)",
	       t_jansson * 1e9 / n, n / t_jansson / 1e6, jok);
	printf("  %-44s %8.1f ns/line  (%.2f M lines/s, %zu parsed)\n", "gradwatch wire parser only",
	       t_wire * 1e9 / n, n / t_wire / 1e6, pc.ok);
	printf("  %-44s %8.1f ns/line  (%.2f M lines/s, %llu runs, %llu alerts)\n",
	       "gradwatch replay (parse + all detectors)", t_replay * 1e9 / n, n / t_replay / 1e6,
	       (unsigned long long)rs.runs, (unsigned long long)rs.alerts);

	/* 4. the engine alone */
	size_t m;
	struct gw_rec *recs = gw_bench_records(&big, &m);
	if (!recs)
		return 2;
	gw_bench_engine(recs, m, reps, true, NULL);
	double rate = n / t_replay, ratio = t_jansson / t_replay;
	printf("  replay, parse + all detectors: %.2f M lines/s (>= %.1f): %s\n", rate / 1e6,
	       GOAL_LINES_PER_S / 1e6, rate >= GOAL_LINES_PER_S ? "met" : "NOT met");
	printf("  replay rate / jansson parse-only rate: %.2f (>= %.1f): %s\n", ratio, GOAL_RATIO,
	       ratio >= GOAL_RATIO ? "met" : "NOT met");
	gw_wire_free(pc.w);
	gw_alias_free(al);
	free(big.p);
	return 0;
}
