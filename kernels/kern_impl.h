/*
 * Internal to kernels/: the parts of the algorithms that every variant
 * shares, so that the variants differ only in how they walk a block.
 *
 * Every statistic is computed block by block.  A block is at most
 * GW__KERN_BLOCK consecutive values of one span (8 KiB, so it stays in L1
 * between passes).  Inside a block the variant makes two passes: the first
 * counts the valid values and sums them, the second sums squared (or cross)
 * deviations from the block's own mean -- the textbook two-pass algorithm,
 * exact up to rounding however large the mean is against the spread.
 * Blocks are then folded into a running total with Chan, Golub and
 * LeVeque's pairwise update.  The merge subtracts block means, so those are
 * kept relative to a shift K, the first valid value of the sequence: a block
 * mean of 10.0000001 then carries an error of 2^-53 * 1e-7, not 2^-53 * 10,
 * and the merged variance of 10.0 +- 1e-6 keeps 15 digits, not 10.  Memory
 * is read once; the second pass hits L1.
 *
 * The fold (the *_merge functions here) and the final step (*_finish) are
 * the same code in every variant; the library is
 * compiled with -ffp-contract=off so that this shared code rounds the same
 * way in every file whatever its instruction-set flags.
 */
#ifndef GW_KERN_IMPL_H
#define GW_KERN_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kern.h"

/* Values per block: 1024 doubles = 8 KiB, well inside any L1 data cache.
 * Each block costs a fixed ~100 cycles (horizontal sums, the merge and its
 * divisions); at 512 values that was a third of the vector kernels' time
 * in cache, at 1024 a sixth.  Overridable (-DGW__KERN_BLOCK=) only to
 * measure this; the documented agreement bounds assume 1024. */
#ifndef GW__KERN_BLOCK
#define GW__KERN_BLOCK 1024
#endif

/* How far ahead the first passes prefetch, in bytes: one block, so that
 * memory stays busy through the current block's second pass (on the
 * development VM 8 KiB read ~5% faster than 4 KiB or 16 KiB). */
#ifndef GW__KERN_PREFETCH
#define GW__KERN_PREFETCH 8192
#endif

/* Variants other than scalar; each is defined only where it is built. */
extern const struct gw_kern_ops gw__kern_sse2_ops;
extern const struct gw_kern_ops gw__kern_avx2_ops;
extern const struct gw_kern_ops gw__kern_neon_ops;

static inline size_t gw__kern_min(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Ask for the 64-byte line GW__KERN_PREFETCH bytes ahead of p.  The first
 * pass of every kernel, in every variant, scalar included, calls this once
 * per 8 values, so the next block is on its way while this one is worked on:
 * hardware prefetchers stop at 4 KiB pages, and on some virtual machines do
 * little at all (on the development VM a sequential kernel at 16M values
 * went from 3.8 to 2.0 ns per value, its in-cache speed).  A prefetch never
 * faults, so asking past the end of the data is harmless; the address is
 * formed as an integer so that it is not C pointer arithmetic past the end
 * either. */
static inline void gw__kern_prefetch_ahead(const double *p)
{
	__builtin_prefetch((const void *)((uintptr_t)p + GW__KERN_PREFETCH), 0, 3);
}

/* ---- moments ------------------------------------------------------------ */

/* The first finite value of x[0..len), 0 if there is none: the shift K. */
static inline double gw__first_finite(const double *x, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (isfinite(x[i]))
			return x[i];
	return 0.0;
}

/* Running moments of the blocks folded so far.  Counts are doubles (exact
 * up to 2^53) because the vector code counts in double lanes.  mean is
 * relative to shift, which the first block with a valid value sets. */
struct gw__mom {
	double n;
	double shift;
	double sum;
	double mean;
	double m2;
	double min;
	double max;
};

#define GW__MOM_INIT { 0.0, 0.0, 0.0, 0.0, 0.0, INFINITY, -INFINITY }

/* The shift a block must use: the running one, or its own first valid value
 * if nothing valid came before. */
static inline double gw__mom_shift(const struct gw__mom *acc, const double *x,
                                   size_t len)
{
	return acc->n > 0.0 ? acc->shift : gw__first_finite(x, len);
}

/* Fold one block: nb valid values with sum sb, sum sk of (x - shift), and
 * m2b = the sum of squared deviations from the block mean; mn, mx its
 * extremes. */
static inline void gw__mom_merge(struct gw__mom *acc, double shift, double nb,
                                 double sb, double sk, double m2b, double mn,
                                 double mx)
{
	if (nb == 0.0)
		return;
	double mb = sk / nb;
	acc->sum += sb;
	if (mn < acc->min)
		acc->min = mn;
	if (mx > acc->max)
		acc->max = mx;
	if (acc->n == 0.0) {
		acc->n = nb;
		acc->shift = shift;
		acc->mean = mb;
		acc->m2 = m2b;
		return;
	}
	double n = acc->n + nb;
	double d = mb - acc->mean;
	acc->mean += d * (nb / n);
	acc->m2 += m2b + d * d * (acc->n * (nb / n));
	acc->n = n;
}

static inline void gw__mom_finish(const struct gw__mom *acc, size_t len,
                                  struct gw_kern_moments *out)
{
	out->n = (size_t)acc->n;
	out->skipped = len - out->n;
	out->sum = acc->sum;
	if (acc->n == 0.0) {
		out->mean = NAN;
		out->m2 = 0.0;
		out->var = NAN;
		out->min = NAN;
		out->max = NAN;
		return;
	}
	out->mean = acc->shift + acc->mean;
	out->m2 = acc->m2;
	out->var = acc->n > 1.0 ? acc->m2 / (acc->n - 1.0) : 0.0;
	out->min = acc->min;
	out->max = acc->max;
}

/* A variant's moments of one block (at most GW__KERN_BLOCK values). */
typedef void (*gw__mom_block_fn)(struct gw__mom *acc, const double *x,
                                 size_t len);

/* The span walk every variant shares: a's blocks, then b's, then the
 * result.  Inlined with a constant `block`, so the call is direct. */
static inline void gw__mom_spans(gw__mom_block_fn block, const double *a,
                                 size_t na, const double *b, size_t nb,
                                 struct gw_kern_moments *out)
{
	struct gw__mom acc = GW__MOM_INIT;
	for (size_t i = 0; i < na; i += GW__KERN_BLOCK)
		block(&acc, a + i, gw__kern_min(GW__KERN_BLOCK, na - i));
	for (size_t i = 0; i < nb; i += GW__KERN_BLOCK)
		block(&acc, b + i, gw__kern_min(GW__KERN_BLOCK, nb - i));
	gw__mom_finish(&acc, na + nb, out);
}

/* ---- co-moments (slope, correlation) ------------------------------------ */

/* Running co-moments of pairs (x, y): means (relative to the shifts kx, ky,
 * set by the first block with a valid pair) and sums of squared / crossed
 * deviations.  For the slope x is the position and kx is 0: positions are
 * exact integers and a block's mean position is close to its spread. */
struct gw__co {
	double n;
	double kx;
	double ky;
	double mx;
	double my;
	double cxx;
	double cyy;
	double cxy;
};

#define GW__CO_INIT { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 }

/* The shifts a block must use: the running ones, or its own first valid
 * pair (y alone when x is NULL) if nothing valid came before. */
static inline void gw__co_shift(const struct gw__co *acc, const double *x,
                                const double *y, size_t len, double *kx,
                                double *ky)
{
	*kx = acc->kx;
	*ky = acc->ky;
	if (acc->n > 0.0)
		return;
	*kx = *ky = 0.0;
	for (size_t i = 0; i < len; i++) {
		if (isfinite(y[i]) && (x == NULL || isfinite(x[i]))) {
			*kx = x ? x[i] : 0.0;
			*ky = y[i];
			return;
		}
	}
}

/* Fold one block: nb pairs with sums sx of (x - kx) and sy of (y - ky), and
 * co-moments about the block means. */
static inline void gw__co_merge(struct gw__co *acc, double kx, double ky,
                                double nb, double sx, double sy, double cxx,
                                double cyy, double cxy)
{
	if (nb == 0.0)
		return;
	double mx = sx / nb, my = sy / nb;
	if (acc->n == 0.0) {
		acc->n = nb;
		acc->kx = kx;
		acc->ky = ky;
		acc->mx = mx;
		acc->my = my;
		acc->cxx = cxx;
		acc->cyy = cyy;
		acc->cxy = cxy;
		return;
	}
	double n = acc->n + nb;
	double dx = mx - acc->mx, dy = my - acc->my;
	double f = acc->n * (nb / n);
	acc->mx += dx * (nb / n);
	acc->my += dy * (nb / n);
	acc->cxx += cxx + dx * dx * f;
	acc->cyy += cyy + dy * dy * f;
	acc->cxy += cxy + dx * dy * f;
	acc->n = n;
}

static inline double gw__co_slope(const struct gw__co *acc)
{
	if (acc->n < 2.0 || !(acc->cxx > 0.0))
		return NAN;
	return acc->cxy / acc->cxx;
}

static inline double gw__co_corr(const struct gw__co *acc)
{
	if (acc->n < 2.0 || !(acc->cxx > 0.0) || !(acc->cyy > 0.0))
		return NAN;
	double r = acc->cxy / (sqrt(acc->cxx) * sqrt(acc->cyy));
	if (r > 1.0)
		r = 1.0;
	if (r < -1.0)
		r = -1.0;
	return r;
}

/* A variant's slope co-moments of one block y[0..len) at positions t0, ... */
typedef void (*gw__slope_block_fn)(struct gw__co *acc, const double *y,
                                   size_t len, double t0);

static inline double gw__slope_spans(gw__slope_block_fn block, const double *a,
                                     size_t na, const double *b, size_t nb)
{
	struct gw__co acc = GW__CO_INIT;
	for (size_t i = 0; i < na; i += GW__KERN_BLOCK)
		block(&acc, a + i, gw__kern_min(GW__KERN_BLOCK, na - i), (double)i);
	for (size_t i = 0; i < nb; i += GW__KERN_BLOCK)
		block(&acc, b + i, gw__kern_min(GW__KERN_BLOCK, nb - i),
		      (double)(na + i));
	return gw__co_slope(&acc);
}

/* A variant's correlation co-moments of one block of pairs. */
typedef void (*gw__corr_block_fn)(struct gw__co *acc, const double *x,
                                  const double *y, size_t len);

static inline double gw__corr_spans(gw__corr_block_fn block, const double *xa,
                                    const double *ya, size_t na,
                                    const double *xb, const double *yb,
                                    size_t nb)
{
	struct gw__co acc = GW__CO_INIT;
	for (size_t i = 0; i < na; i += GW__KERN_BLOCK)
		block(&acc, xa + i, ya + i, gw__kern_min(GW__KERN_BLOCK, na - i));
	for (size_t i = 0; i < nb; i += GW__KERN_BLOCK)
		block(&acc, xb + i, yb + i, gw__kern_min(GW__KERN_BLOCK, nb - i));
	return gw__co_corr(&acc);
}

#endif
