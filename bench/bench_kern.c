/*
 * Benchmark of kernels/: every kernel, every variant this CPU runs, at
 * 256 and 4,096 values (in cache) and 16M values (128 MiB, from memory).
 *
 * For each it prints nanoseconds per value (best of several timed runs, the
 * variants taking turns) and the speed-up over the scalar reference
 * measured in the same run.  It also
 * measures the machine's memory read bandwidth with a plain streaming sum
 * over the same 16M values, and gives each kernel's read rate at 16M as a
 * share of it.  Then it checks the targets and says which hold.
 *
 * The streaming sum runs plainly and with the same software prefetch the
 * kernels use (one request per 64-byte line, 8 KiB ahead), and the faster
 * of the two is the bandwidth.  On a machine whose hardware prefetcher
 * does its job the two agree; on the development VM the plain one is
 * usually much slower.  Memory bandwidth on a shared virtual machine drifts by
 * 2x within a minute, so at 16M each timed kernel run is paired with a
 * streaming-sum run just before it, and a share compares the best of each.
 * corr reads two streams at once, and is compared with a two-stream sum
 * (on the development VM two streams read ~20% slower than one).
 *
 * Data: a loss-like series, 2 + noise, all values valid; corr reads two
 * series.
 *
 * Usage: bench_kern [--quick]     (--quick: skip 16M)
 * Exit status 0 whatever the timings: a benchmark reports, it does not fail.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kern.h"

#define BIG ((size_t)16 << 20)

static volatile double sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum kern { K_MOMENTS, K_LOG, K_SLOPE, K_CORR, K_COUNT };
static const char *const kern_name[] = { "moments", "log_moments", "slope", "corr" };
/* bytes of memory traffic per value */
static const double kern_bytes[] = { 8, 8, 8, 16 };

static double *x, *y;

static void run(const struct gw_kern_ops *v, enum kern k, size_t n)
{
	struct gw_kern_moments m;
	switch (k) {
	case K_MOMENTS:
		v->moments(x, n, NULL, 0, &m);
		sink = m.var;
		break;
	case K_LOG:
		v->log_moments(x, n, NULL, 0, &m);
		sink = m.var;
		break;
	case K_SLOPE:
		sink = v->slope(x, n, NULL, 0);
		break;
	case K_CORR:
		sink = v->corr(x, y, n, NULL, NULL, 0);
		break;
	default:
		break;
	}
}

/* Best time per value of each of the nv variants over `trials` rounds; in
 * each round every variant runs in turn for ~10 ms, so that a busy spell
 * on a shared machine slows all of them rather than one. */
static void ns_per_value(const struct gw_kern_ops *const *v, size_t nv,
                         enum kern k, size_t n, int trials, double *best)
{
	size_t reps[8];
	for (size_t j = 0; j < nv; j++) {
		double t0 = now();
		run(v[j], k, n); /* warm up, and size the repetitions */
		double once = now() - t0;
		reps[j] = once < 0.01 ? (size_t)(0.01 / (once > 1e-9 ? once : 1e-9)) + 1 : 1;
		best[j] = 1e30;
	}
	for (int t = 0; t < trials; t++) {
		for (size_t j = 0; j < nv; j++) {
			double t0 = now();
			for (size_t r = 0; r < reps[j]; r++)
				run(v[j], k, n);
			double dt = (now() - t0) / (double)reps[j] * 1e9 / (double)n;
			if (dt < best[j])
				best[j] = dt;
		}
	}
}

/* The reference read rate: a plain sum in 16-byte vectors (GCC vector
 * extensions: SSE2 or NEON, whatever the target has), four accumulators, so
 * that the adds are not what limits it.  With `pf`, one software prefetch
 * per 64-byte line, 8 KiB ahead, as the kernels do. */
typedef double v2d __attribute__((vector_size(16)));

static void stream_one(const double *p, size_t n, int pf, v2d *acc)
{
	v2d a0 = { 0, 0 }, a1 = a0, a2 = a0, a3 = a0;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		v2d b0, b1, b2, b3;
		if (pf)
			__builtin_prefetch((const void *)((uintptr_t)(p + i) + 8192), 0, 3);
		memcpy(&b0, p + i, 16);
		memcpy(&b1, p + i + 2, 16);
		memcpy(&b2, p + i + 4, 16);
		memcpy(&b3, p + i + 6, 16);
		a0 += b0;
		a1 += b1;
		a2 += b2;
		a3 += b3;
	}
	*acc += (a0 + a1) + (a2 + a3);
}

/* ns per 8 bytes read; streams == 2 reads x and y side by side. */
static double stream_ns_per_value(size_t n, int trials, int pf, int streams)
{
	double best = 1e30;
	for (int t = 0; t < trials; t++) {
		v2d acc = { 0, 0 };
		double t0 = now();
		if (streams == 1) {
			stream_one(x, n, pf, &acc);
		} else {
			for (size_t i = 0; i < n; i += 4096) {
				size_t len = n - i < 4096 ? n - i : 4096;
				stream_one(x + i, len, pf, &acc);
				stream_one(y + i, len, pf, &acc);
			}
		}
		double dt = now() - t0;
		sink = acc[0] + acc[1];
		if (dt < best)
			best = dt;
	}
	return best * 1e9 / (double)n / streams;
}

/* At 16M: the kernel's time per value, and its share of the bandwidth
 * measured by streaming sums (plain and prefetched, the faster counts) run
 * just before each kernel run. */
static double ns_paired(const struct gw_kern_ops *v, enum kern k, size_t n,
                        int trials, double *share)
{
	double best = 1e30, bw = 1e30;
	run(v, k, n);
	for (int t = 0; t < trials; t++) {
		for (int pf = 0; pf < 2; pf++) {
			double b = stream_ns_per_value(n, 1, pf, k == K_CORR ? 2 : 1);
			if (b < bw)
				bw = b;
		}
		double t0 = now();
		run(v, k, n);
		double dt = (now() - t0) * 1e9 / (double)n;
		if (dt < best)
			best = dt;
	}
	*share = (kern_bytes[k] / best) / (8.0 / bw);
	return best;
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	const size_t sizes[] = { 256, 4096, BIG };
	size_t nsizes = quick ? 2 : 3;
	const struct gw_kern_ops *const *avail = gw_kern_available();
	size_t nv = 0;
	while (avail[nv] && nv < 8)
		nv++;
	/* scalar is always last: the ratios are against it */

	x = aligned_alloc(64, BIG * sizeof(double));
	y = aligned_alloc(64, BIG * sizeof(double));
	if (!x || !y) {
		fprintf(stderr, "bench_kern: out of memory\n");
		return 1;
	}
	uint64_t s = 42;
	for (size_t i = 0; i < BIG; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		double u = (double)(s >> 11) * 0x1p-53;
		x[i] = 2.0 + 0.1 * u - 1e-7 * (double)(i % 100000);
		y[i] = 1.0 + 0.5 * u + 0.1 * (double)((s >> 7) & 1);
	}

	printf("gradwatch kernel benchmark: variants");
	for (size_t k = 0; k < nv; k++)
		printf(" %s", avail[k]->name);
	printf(" (gw_kern_init would pick %s)\n", avail[0]->name);
	printf("ns per value, best of runs; (xN) = speed-up over scalar in this run\n\n");
	printf("%-12s %9s", "kernel", "n");
	for (size_t k = 0; k < nv; k++)
		printf(" %16s", avail[k]->name);
	printf("\n");

	double t[K_COUNT][3][8], share[K_COUNT][8];
	for (int k = 0; k < K_COUNT; k++) {
		for (size_t si = 0; si < nsizes; si++) {
			size_t n = sizes[si];
			if (n == BIG) {
				for (size_t v = 0; v < nv; v++)
					t[k][si][v] = ns_paired(avail[v], (enum kern)k, n, 5, &share[k][v]);
			} else {
				ns_per_value(avail, nv, (enum kern)k, n, 15, t[k][si]);
			}
			printf("%-12s %9zu", kern_name[k], n);
			for (size_t v = 0; v < nv; v++) {
				char cell[40];
				snprintf(cell, sizeof(cell), "%.3f (x%.1f)", t[k][si][v],
				         t[k][si][nv - 1] / t[k][si][v]);
				printf(" %16s", cell);
			}
			printf("\n");
			fflush(stdout);
		}
	}
	if (quick)
		return 0;

	double plain_ns = stream_ns_per_value(BIG, 5, 0, 1);
	double pf_ns = stream_ns_per_value(BIG, 5, 1, 1);
	double two_ns = stream_ns_per_value(BIG, 5, 1, 2);
	printf("\nmemory read bandwidth, streaming sum over %zu doubles (128 MiB): %.1f GB/s "
	       "plain,\n%.1f GB/s with software prefetch, %.1f GB/s reading two streams\n",
	       BIG, 8.0 / plain_ns, 8.0 / pf_ns, 8.0 / two_ns);
	printf("\nshare of it at %zu values: bytes moved per ns against the faster\n"
	       "streaming sum run beside each kernel run (two streams for corr):\n", BIG);
	printf("%-12s", "kernel");
	for (size_t v = 0; v < nv; v++)
		printf(" %8s", avail[v]->name);
	printf("\n");
	for (int k = 0; k < K_COUNT; k++) {
		printf("%-12s", kern_name[k]);
		for (size_t v = 0; v < nv; v++)
			printf(" %7.0f%%", 100.0 * share[k][v]);
		printf("\n");
	}

	printf("\ntargets, for %s:\n", avail[0]->name);
	const int target_k[] = { K_MOMENTS, K_SLOPE, K_CORR };
	for (size_t i = 0; i < 3; i++) {
		int k = target_k[i];
		double sp = t[k][1][nv - 1] / t[k][1][0], sh = 100.0 * share[k][0];
		printf("  %-8s x%.1f over scalar at 4096 (>= 4): %-7s  %5.1f%% of bandwidth "
		       "at 16M (>= 70%%): %s\n", kern_name[k], sp, sp >= 4.0 ? "met," : "NOT met,",
		       sh, sh >= 70.0 ? "met" : "NOT met");
	}
	free(x);
	free(y);
	return 0;
}
