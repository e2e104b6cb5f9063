/*
 * The detector engine measured alone, shared by bench_replay and
 * bench_engine: the dev corpus as a text of >= min_lines lines (traces
 * without NaN, each copy's runs renamed "-cN"), its records pre-parsed, and
 * the engine fed them as one run and as 10,000 interleaved runs, all
 * detectors on and each detector's cost (see engine_bench.c).
 */
#ifndef GW_ENGINE_BENCH_H
#define GW_ENGINE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct gw_bench_text {
	char *p;
	size_t len, cap;
	size_t lines;
};

/* Thread CPU time in seconds: what the benchmarks time, so that other jobs
 * on a shared machine take less from the figures than from a wall clock. */
double gw_bench_cpu(void);

/* The dev corpus dir's traces without NaN, repeated into t until it has
 * min_lines lines.  0 or a negative errno. */
int gw_bench_corpus(const char *dir, size_t min_lines, struct gw_bench_text *t);

/* The metric records (no events) of t, parsed once; *n gets their count.
 * Run names are copied (the records own nothing else).  NULL on failure. */
struct gw_rec *gw_bench_records(const struct gw_bench_text *t, size_t *n);

/* Feed the engine the two workloads and print ns per record, the state per
 * run and the goals (met / not met); with breakdown, each detector's cost
 * too.  reps: timings are the best of this many.  only: NULL for both
 * workloads, "one" or "many" for one of them (an instruction count of one
 * under callgrind). */
void gw_bench_engine(const struct gw_rec *recs, size_t n, int reps, bool breakdown,
                     const char *only);

/* Detectors (bit i: registry entry i) kept off in every workload: for
 * profiling the engine without them (bench_engine --off=MASK). */
void gw_bench_engine_off(uint64_t disabled);

#endif
