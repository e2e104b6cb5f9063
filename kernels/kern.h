/*
 * kernels: window statistics over spans of doubles, the numeric floor the
 * detectors stand on.
 *
 * A window of telemetry lives in a ring buffer, so every kernel takes up to
 * two contiguous spans (a, na) and (b, nb) and treats them as one sequence
 * a[0..na) followed by b[0..nb); either span may be empty (pointer may then be
 * NULL).  Nothing is copied.
 *
 * Every kernel has a portable scalar reference and, where the CPU has them,
 * SSE2 / AVX2+FMA (x86-64) and NEON (AArch64) variants.  One variant is chosen
 * once at start-up by gw_kern_init() and used through the gw_kern_* wrappers
 * below.  Numerical contracts (what every variant must agree on, and how
 * closely) are stated per function and in docs/kernels.md.
 *
 * Non-finite values (NaN, +-Inf) are never folded into a statistic: they are
 * skipped and counted in `skipped`.  The log-space kernels also skip values
 * <= 0.  A statistic that has no valid input is NaN.
 *
 * Agreement between variants (tested in tests/unit/test_kern.c, argued in
 * docs/kernels.md): counts and skipped are identical, min and max too
 * (within 1 ulp in log space); sums, means, variances, slopes and
 * correlations agree to a relative 1e-12 on well-conditioned data (the
 * bound for each is stated below).  Pointers
 * must be aligned for double, nothing more.  The kernels allocate nothing,
 * never block, and are safe to call from any thread once gw_kern_init()
 * has returned.
 */
#ifndef GW_KERN_H
#define GW_KERN_H

#include <stddef.h>

/* Moments of a window.  var is the unbiased sample variance (m2 / (n - 1)),
 * 0 when n == 1 and NaN when n == 0.  With n == 0: sum and m2 are 0 (empty
 * sums), mean, var, min and max NaN. */
struct gw_kern_moments {
	size_t n;        /* values used */
	size_t skipped;  /* values skipped: non-finite (and <= 0 for log kernels) */
	double sum;
	double mean;
	double m2;       /* sum of squared deviations from the mean */
	double var;
	double min;
	double max;
};

/* The table one variant fills; reached through the wrappers. */
struct gw_kern_ops {
	const char *name;
	void (*moments)(const double *a, size_t na, const double *b, size_t nb,
	                struct gw_kern_moments *out);
	void (*log_moments)(const double *a, size_t na, const double *b, size_t nb,
	                    struct gw_kern_moments *out);
	double (*slope)(const double *a, size_t na, const double *b, size_t nb);
	double (*corr)(const double *xa, const double *ya, size_t na,
	               const double *xb, const double *yb, size_t nb);
	size_t (*count)(const double *a, size_t na, const double *b, size_t nb, double t,
	                int side, int positive, size_t *n);
};

/* Choose the variant.  `force` is NULL (use $GRADWATCH_KERNELS if set, else
 * the best the CPU supports) or one of "scalar", "sse2", "avx2", "neon";
 * "auto" or "" mean the best the CPU supports.  Returns 0; -EINVAL when the
 * name is none of those; -ENOTSUP when it is a known variant that this
 * binary was not built with or this CPU cannot run.  On error the previous
 * choice is kept (scalar if none was made).  Safe to call again; call it
 * before any other thread uses the kernels. */
int gw_kern_init(const char *force);

/* Name of the variant in use ("scalar", "sse2", "avx2", "neon"). */
const char *gw_kern_name(void);

/* Variants built into this binary and usable on this CPU, best first;
 * NULL-terminated static array. */
const struct gw_kern_ops *const *gw_kern_available(void);

/* The scalar reference, always present (for tests and benchmarks). */
extern const struct gw_kern_ops gw_kern_scalar_ops;

/* The variant in use; gw_kern_init() sets it, the scalar one until then. */
extern const struct gw_kern_ops *gw__kern;

/* Count, sum, mean, variance, min, max of the finite values of a||b.
 * Two passes per 1024-value block (mean, then squared deviations from it),
 * blocks merged with Chan's update: no cancellation however large the mean
 * against the spread (10.0 +- 1e-6 keeps all its digits).  Variants agree
 * with scalar, for n up to 3.5 million (docs/kernels.md derives these):
 *   |d sum| <= 1e-12 * sum|x|,   |d mean| <= 1e-12 * sum|x| / n,
 *   |d m2|  <= 1e-12 * m2 + n * (2.5e-13 * max|x|)^2;
 * n, skipped, min and max exactly (compared with ==, so -0 equals +0). */
static inline void gw_kern_moments(const double *a, size_t na, const double *b,
                                   size_t nb, struct gw_kern_moments *out)
{
	gw__kern->moments(a, na, b, nb, out);
}

/* The same on ln(x) of the values > 0 and finite (subnormals included);
 * zeros, negatives, NaN and +-Inf are counted in skipped.  Scalar calls
 * libm's log(); the vector variants use their own logarithm, within 1 ulp
 * of libm's (tested), so their statistics agree with scalar to the moments
 * bounds above taken on ln x, plus one ulp of ln x per value: min and max
 * within 1 ulp, m2 within 2 * sqrt(n * m2) * 2^-52 * max|ln x| more. */
static inline void gw_kern_log_moments(const double *a, size_t na,
                                       const double *b, size_t nb,
                                       struct gw_kern_moments *out)
{
	gw__kern->log_moments(a, na, b, nb, out);
}

/* Least-squares slope of the finite values of a||b against their position
 * (0, 1, 2, ... over the whole sequence, skipped positions included), in
 * value units per position.  NaN with fewer than two finite values.
 * Computed from deviations about the means (two-pass per block), so a
 * large level does not swamp a small trend.  Variants agree with scalar to
 * 1e-12 * |slope| + 1e-12 * sd(y) / sd(t). */
static inline double gw_kern_slope(const double *a, size_t na, const double *b,
                                   size_t nb)
{
	return gw__kern->slope(a, na, b, nb);
}

/* Pearson correlation of x and y over the positions where both are finite;
 * x and y are two parallel sequences, each given as two spans of the same
 * lengths (na, nb).  NaN with fewer than two pairs or zero variance.
 * Clamped to [-1, 1].  Variants agree with scalar to 1e-12 absolute on
 * well-conditioned data. */
static inline double gw_kern_corr(const double *xa, const double *ya, size_t na,
                                  const double *xb, const double *yb, size_t nb)
{
	return gw__kern->corr(xa, ya, na, xb, yb, nb);
}

/* Where t stands in the window a||b: of its finite values (only those > 0
 * if `positive`), how many are below t (side < 0) or above t (side > 0);
 * *n gets how many finite (positive) values there are.  One pass, no copy,
 * for the detectors' bounds on a window's median (detectors/hist.c).
 * Counts only: identical in every variant. */
static inline size_t gw_kern_count(const double *a, size_t na, const double *b, size_t nb,
                                   double t, int side, int positive, size_t *n)
{
	return gw__kern->count(a, na, b, nb, t, side, positive, n);
}

#endif
