/*
 * bench_engine: the detector engine alone on pre-parsed dev-corpus records
 * (engine_bench.c): ns per record for one run and for 10,000 interleaved
 * runs, the state per run, each detector's cost, and the goals of issue 21.
 * Quicker than bench_replay (no parsing, no replay) and the program to run
 * under `valgrind --tool=callgrind` for instruction counts.
 *   bench_engine [--no-breakdown] [--only=one|many] [--off=MASK] CORPUS_DIR [min_lines [reps]]
 */
#include "engine_bench.h"
#include "kern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	bool breakdown = true;
	const char *only = NULL;
	for (; argc > 1 && strncmp(argv[1], "--", 2) == 0; argv++, argc--) {
		if (strcmp(argv[1], "--no-breakdown") == 0)
			breakdown = false;
		else if (strncmp(argv[1], "--only=", 7) == 0)
			only = argv[1] + 7;
		else if (strncmp(argv[1], "--off=", 6) == 0)
			gw_bench_engine_off(strtoull(argv[1] + 6, NULL, 0));
	}
	if (argc < 2) {
		fprintf(stderr, "usage: bench_engine [--no-breakdown] [--only=one|many] [--off=MASK] CORPUS_DIR [min_lines [reps]]\n");
		return 2;
	}
	size_t min_lines = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000000;
	int reps = argc > 3 ? atoi(argv[3]) : 3;
	gw_kern_init(NULL);
	struct gw_bench_text big = {0};
	if (gw_bench_corpus(argv[1], min_lines, &big) < 0) {
		fprintf(stderr, "bench_engine: no traces in %s\n", argv[1]);
		return 2;
	}
	size_t m;
	struct gw_rec *recs = gw_bench_records(&big, &m);
	if (!recs)
		return 2;
	printf("engine benchmark: %zu lines of the dev corpus (traces without NaN, repeated), kernels %s\n",
	       big.lines, gw_kern_name());
	gw_bench_engine(recs, m, reps < 1 ? 1 : reps, breakdown, only);
	return 0;
}
