/*
 * What the kernels' tests share (test_kern.c, test_kern_ref.c): a seeded
 * pseudo-random source (GW_TEST_SEED overrides the fixed seed, so a failure
 * can be replayed), the kinds of input data, aligned buffers, and a
 * bit-for-bit comparison.  Everything is static: each test is one file
 * that also builds against minicheck.h for the AArch64 cross build
 * (include this after check.h or minicheck.h).
 */
#ifndef GW_TEST_KERNTEST_H
#define GW_TEST_KERNTEST_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static inline uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static inline double rng_unit(void)
{
	return (double)(rng_next() >> 11) * 0x1p-53;
}

static inline void rng_seed(uint64_t salt)
{
	const char *s = getenv("GW_TEST_SEED");
	rng_state = (s ? strtoull(s, NULL, 0) : 20240613ULL) ^ (salt * 0x100000001b3ULL);
}

enum data {
	D_WELL,    /* 10 +- 1e-6: a loss on a plateau */
	D_WIDE,    /* random sign, magnitude 1e-300 .. 1e300 */
	D_SPECIAL, /* 1 +- 0.5 with NaN, +-Inf, +-0, negatives, subnormals mixed in */
	D_TREND,   /* 3 - 0.001 * i + noise, positive: a falling loss */
	D_COUNT
};

static inline double special_value(void)
{
	switch (rng_next() % 8) {
	case 0: return NAN;
	case 1: return INFINITY;
	case 2: return -INFINITY;
	case 3: return 0.0;
	case 4: return -0.0;
	case 5: return -rng_unit();
	case 6: return 0x1p-1060 * (1.0 + rng_unit()); /* subnormal */
	default: return -NAN;
	}
}

static inline void fill(double *x, size_t n, enum data d)
{
	for (size_t i = 0; i < n; i++) {
		switch (d) {
		case D_WELL:
			x[i] = 10.0 + 1e-6 * (2.0 * rng_unit() - 1.0);
			break;
		case D_WIDE:
			x[i] = (rng_next() & 1 ? -1.0 : 1.0) * pow(10.0, 600.0 * rng_unit() - 300.0);
			break;
		case D_SPECIAL:
			x[i] = rng_next() % 16 == 0 ? special_value() : 0.5 + rng_unit();
			break;
		case D_TREND:
			x[i] = 3.0 - 0.001 * (double)(i % 2000) + 0.01 * rng_unit();
			break;
		default:
			break;
		}
	}
}

static inline double *alloc_doubles(size_t n)
{
	double *p = aligned_alloc(64, ((n * sizeof(double) + 63) / 64 + 1) * 64);
	ck_assert_msg(p != NULL, "out of memory for %zu doubles", n);
	return p;
}

static inline int same_bits(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return memcmp(&a, &b, sizeof(a)) == 0;
}

#endif
