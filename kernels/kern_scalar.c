/*
 * The portable scalar reference: every kernel in plain C, one value at a
 * time, written to be read.  Always built; the vector variants are tested
 * against it, and the benchmark measures them against it.
 *
 * It follows the shared block scheme of kern_impl.h (two passes per L1-sized
 * block, blocks folded with Chan's update) and prefetches like the vector
 * code, so it reads memory once, as fast, and is a fair baseline, not a
 * strawman; what it lacks is lanes and several accumulators.  It is compiled with the project's usual
 * flags (-O2, the target's baseline ISA, no -ffast-math); GCC does not
 * vectorise these loops because that would reorder floating-point sums.
 *
 * The log kernel calls libm's log() for each value: the reference is the
 * C library, and the vector variants' own logarithm is tested against it.
 */
#include <math.h>

#include "kern_impl.h"

/* ---- moments ------------------------------------------------------------ */

static void moments_block(struct gw__mom *acc, const double *x, size_t len)
{
	double k = gw__mom_shift(acc, x, len);
	double n = 0.0, sum = 0.0, sk = 0.0, mn = INFINITY, mx = -INFINITY;
	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			gw__kern_prefetch_ahead(x + i);
		if (!isfinite(x[i]))
			continue;
		n += 1.0;
		sum += x[i];
		sk += x[i] - k;
		if (x[i] < mn)
			mn = x[i];
		if (x[i] > mx)
			mx = x[i];
	}
	if (n == 0.0)
		return;
	double mean = k + sk / n, m2 = 0.0;
	for (size_t i = 0; i < len; i++) {
		if (!isfinite(x[i]))
			continue;
		double d = x[i] - mean;
		m2 += d * d;
	}
	gw__mom_merge(acc, k, n, sum, sk, m2, mn, mx);
}

static void moments(const double *a, size_t na, const double *b, size_t nb,
                    struct gw_kern_moments *out)
{
	gw__mom_spans(moments_block, a, na, b, nb, out);
}

/* ---- log moments ---------------------------------------------------------- */

/* Map a block to ln(x), with NaN where x is not > 0 and finite (ln(+Inf) is
 * +Inf, which the moments then skip as well), then take its moments. */
static void log_moments_block(struct gw__mom *acc, const double *x, size_t len)
{
	double buf[GW__KERN_BLOCK];
	for (size_t j = 0; j < len; j++) {
		if (j % 8 == 0)
			gw__kern_prefetch_ahead(x + j);
		buf[j] = x[j] > 0.0 ? log(x[j]) : NAN;
	}
	moments_block(acc, buf, len);
}

static void log_moments(const double *a, size_t na, const double *b,
                        size_t nb, struct gw_kern_moments *out)
{
	gw__mom_spans(log_moments_block, a, na, b, nb, out);
}

/* ---- slope ----------------------------------------------------------------- */

/* y[0..len) sits at positions t0, t0+1, ... */
static void slope_block(struct gw__co *acc, const double *y, size_t len,
                        double t0)
{
	double kt, ky;
	gw__co_shift(acc, NULL, y, len, &kt, &ky);
	double n = 0.0, st = 0.0, sy = 0.0;
	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			gw__kern_prefetch_ahead(y + i);
		if (!isfinite(y[i]))
			continue;
		n += 1.0;
		st += t0 + (double)i;
		sy += y[i] - ky;
	}
	if (n == 0.0)
		return;
	double mt = st / n, my = ky + sy / n, ctt = 0.0, cty = 0.0;
	for (size_t i = 0; i < len; i++) {
		if (!isfinite(y[i]))
			continue;
		double dt = t0 + (double)i - mt, dy = y[i] - my;
		ctt += dt * dt;
		cty += dt * dy;
	}
	gw__co_merge(acc, kt, ky, n, st, sy, ctt, 0.0, cty);
}

static double slope(const double *a, size_t na, const double *b, size_t nb)
{
	return gw__slope_spans(slope_block, a, na, b, nb);
}

/* ---- correlation ---------------------------------------------------------- */

static void corr_block(struct gw__co *acc, const double *x, const double *y,
                       size_t len)
{
	double kx, ky;
	gw__co_shift(acc, x, y, len, &kx, &ky);
	double n = 0.0, sx = 0.0, sy = 0.0;
	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0) {
			gw__kern_prefetch_ahead(x + i);
			gw__kern_prefetch_ahead(y + i);
		}
		if (!isfinite(x[i]) || !isfinite(y[i]))
			continue;
		n += 1.0;
		sx += x[i] - kx;
		sy += y[i] - ky;
	}
	if (n == 0.0)
		return;
	double mx = kx + sx / n, my = ky + sy / n, cxx = 0.0, cyy = 0.0, cxy = 0.0;
	for (size_t i = 0; i < len; i++) {
		if (!isfinite(x[i]) || !isfinite(y[i]))
			continue;
		double dx = x[i] - mx, dy = y[i] - my;
		cxx += dx * dx;
		cyy += dy * dy;
		cxy += dx * dy;
	}
	gw__co_merge(acc, kx, ky, n, sx, sy, cxx, cyy, cxy);
}

static double corr(const double *xa, const double *ya, size_t na,
                   const double *xb, const double *yb, size_t nb)
{
	return gw__corr_spans(corr_block, xa, ya, na, xb, yb, nb);
}

/* ---- count ---------------------------------------------------------------- */

static size_t count_span(const double *x, size_t len, double t, int side, int positive,
                         size_t *n)
{
	size_t c = 0;
	for (size_t i = 0; i < len; i++) {
		if (!isfinite(x[i]) || (positive && !(x[i] > 0)))
			continue;
		(*n)++;
		c += side < 0 ? x[i] < t : x[i] > t;
	}
	return c;
}

static size_t count(const double *a, size_t na, const double *b, size_t nb, double t, int side,
                    int positive, size_t *n)
{
	*n = 0;
	return count_span(a, na, t, side, positive, n) + count_span(b, nb, t, side, positive, n);
}

const struct gw_kern_ops gw_kern_scalar_ops = {
	.name = "scalar",
	.moments = moments,
	.log_moments = log_moments,
	.slope = slope,
	.corr = corr,
	.count = count,
};
