/*
 * bench_tail: what a daemon's start pays per rebuilt run to read its tail
 * (core/runs.c gw_runs_restore: up to 256 runs, their last 1,024 records
 * each), on one read-only connection for all of them
 * (gw_store_read_tail_on) against one connection per run
 * (gw_store_read_tail), measured in the same run.
 *
 * A database of R runs of N records each is written through the store's
 * writer in a temporary directory; then the R tails are read both ways,
 * the two ways taking turns K times; the medians of each way's total and
 * their ratio are printed.  Not a test: `meson test -C build --benchmark
 * tail-read` or the binary directly: bench_tail [runs] [records] [rounds]
 */
#include "store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int count(void *data, const struct gw_rec *rec, int64_t seg, uint64_t line, double recv)
{
	(*(size_t *)data)++;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 256, records = argc > 2 ? atoi(argv[2]) : 2000;
	int rounds = argc > 3 ? atoi(argv[3]) : 9;
	if (runs < 1 || records < 1 || rounds < 1 || rounds > 99) {
		fprintf(stderr, "usage: bench_tail [runs] [records] [rounds (1-99)]\n");
		return 2;
	}
	char dir[] = "/tmp/gw-bench-tail-XXXXXX", path[64], err[256];
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/gradwatch.db", dir);
	struct gw_store_opts o = {.path = path, .commit_interval_ms = 50,
	                          .commit_max_records = 50000};
	struct gw_store *s;
	if (gw_store_open(&o, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_tail: %s\n", err);
		return 1;
	}
	char (*names)[32] = calloc((size_t)runs, sizeof(*names));
	if (!names)
		return 1;
	uint64_t seq = 0;
	for (int k = 0; k < runs; k++) {
		snprintf(names[k], sizeof(names[k]), "run-%04d", k);
		for (int i = 1; i <= records; i++) {
			struct gw_rec r = {.run = names[k], .run_len = strlen(names[k]), .step = i,
			                   .ts = 1e9 + i, .present = 3, .v = {2.0 / i, 0.5}};
			seq = gw_store_put_record(s, &r, 1, (uint64_t)i, 1e9 + i);
		}
	}
	gw_store_flush(s);
	while (gw_store_committed(s) < seq)
		usleep(10000);
	gw_store_close(s);

	double own[99], one[99];
	size_t got_own = 0, got_one = 0;
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ms();
		for (int k = 0; k < runs; k++)
			if (gw_store_read_tail(path, names[k], 1024, count, &got_own, err, sizeof(err)) < 0)
				goto fail;
		own[r] = now_ms() - t0;
		t0 = now_ms();
		struct gw_store_reader *rd;
		if (gw_store_reader_open(path, &rd, err, sizeof(err)) < 0)
			goto fail;
		for (int k = 0; k < runs; k++)
			if (gw_store_read_tail_on(rd, names[k], 1024, count, &got_one, err, sizeof(err)) < 0) {
				gw_store_reader_close(rd);
				goto fail;
			}
		gw_store_reader_close(rd);
		one[r] = now_ms() - t0;
	}
	free(names);
	if (got_own != got_one) {
		fprintf(stderr, "bench_tail: %zu lines one way, %zu the other\n", got_own, got_one);
		return 1;
	}
	double a = median(own, rounds), b = median(one, rounds);
	printf("tail reads of %d runs (%d records each, the last 1,024 read), median of %d rounds:\n",
	       runs, records, rounds);
	printf("  a connection per run:      %8.1f ms (%.3f ms a run)\n", a, a / runs);
	printf("  one connection for all:    %8.1f ms (%.3f ms a run)\n", b, b / runs);
	printf("  ratio one / per run:       %8.2f\n", b / a);
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
fail:
	free(names);
	fprintf(stderr, "bench_tail: %s\n", err);
	return 1;
}
