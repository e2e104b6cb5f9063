/*
 * The vector kernels, written once over a small set of vector operations
 * that each instruction-set file (kern_sse2.c, kern_avx2.c, kern_neon.c)
 * defines with its own intrinsics before including this file.  Each such
 * file is compiled with its own flags, so this code becomes SSE2, AVX2+FMA
 * or NEON machine code there and nowhere else.
 *
 * The includer defines:
 *   GW_SIMD_W                       lanes per vector
 *   vd, vm, vi                      vectors of doubles, lane masks, int64 lanes
 *   vd_set1 vd_load vd_store        (loads and stores are unaligned)
 *   vd_add vd_sub vd_mul vd_div vd_fma(a, b, c) = a * b + c
 *   vd_min vd_max                   on non-NaN inputs only
 *   vd_and(v, m)                    v where m, +0.0 elsewhere
 *   vd_sel(m, a, b)                 a where m, b elsewhere
 *   vm_finite(v)  |v| <= DBL_MAX;   vm_lt(a, b), vm_gt(a, b), vm_and(m, m)
 *   vd_hsum(v)                      lanes added in order 0, 1, ...
 *   vd_hmin vd_hmax vd_iota         {0, 1, ..., W-1}
 *   vi_of(vd) vd_of(vi)             bit casts
 *   vi_set1 vi_add vi_sub vi_and vi_or vi_srl52
 *
 * Speed comes from 4 independent accumulators per statistic (so the add
 * latency is hidden), from a first try without masks for blocks that hold
 * no NaN or Inf (and masks, not branches, for those that do), and from a
 * vector logarithm instead of a libm call per value.  A tail
 * shorter than one vector is copied to a small buffer padded with NaN,
 * which the masks skip like any other non-finite value; the kernels count
 * skipped values as "length minus used", so padding is never counted.
 */
#ifndef GW_SIMD_W
#error "include kern_simd.h from an instruction-set file"
#endif

#include <float.h>
#include <string.h>

#include "kern_impl.h"

#define W GW_SIMD_W
#define U 4 /* accumulators per statistic */

/* Copy the last len < W values to a NaN-padded buffer, read as one vector. */
static inline vd load_tail(const double *x, size_t len)
{
	double buf[W];
	for (size_t i = 0; i < W; i++)
		buf[i] = NAN;
	memcpy(buf, x, len * sizeof(double));
	return vd_load(buf);
}

static inline vd sum_u(const vd *a)
{
	return vd_add(vd_add(a[0], a[1]), vd_add(a[2], a[3]));
}

/* Prefetch one block ahead of the U * W values at p (see kern_impl.h). */
static inline void prefetch_round(const double *p)
{
	for (size_t j = 0; j < U * W; j += 8)
		gw__kern_prefetch_ahead(p + j);
}

/*
 * Walk x[0..len) one vector at a time, U vectors per round with their own
 * accumulator index u.  MAIN is a statement on each whole vector v at
 * offset off; `step` is how far the next MAIN with the same u will be (a
 * round while whole rounds last, then one vector).  TAIL is for the last
 * partial vector (NaN-padded, so it must mask).  PF is a statement run
 * once per round, with i the round's offset.
 */
#define FOR_VECTORS(x, len, PF, MAIN, TAIL)                         \
	do {                                                            \
		size_t i = 0;                                               \
		for (; i + U * W <= (len); i += U * W) {                    \
			PF;                                                     \
			_Pragma("GCC unroll 4")                                 \
			for (size_t u = 0; u < U; u++) {                        \
				const double step = U * W;                          \
				size_t off = i + u * W;                             \
				vd v = vd_load((x) + off);                          \
				(void)step;                                         \
				MAIN;                                               \
			}                                                       \
		}                                                           \
		for (; i + W <= (len); i += W) {                            \
			const double step = W;                                  \
			const size_t u = 0, off = i;                            \
			vd v = vd_load((x) + off);                              \
			(void)step;                                             \
			MAIN;                                                   \
		}                                                           \
		if (i < (len)) {                                            \
			const size_t u = 0, off = i;                            \
			vd v = load_tail((x) + off, (len) - off);               \
			TAIL;                                                   \
		}                                                           \
	} while (0)

/* Values in whole vectors: the fast paths count these as valid. */
#define WHOLE(len) ((len) - (len) % W)

/*
 * Every block kernel has two paths.  The fast one assumes the whole vectors
 * hold no NaN or Inf and uses no masks; the sum it needs anyway tells if
 * that held (a NaN or an Inf anywhere makes it NaN or Inf).  If it did not,
 * the block is done again with masks.  Both paths give the same bits when
 * every value is finite, so the choice never shows in the result.  The
 * partial vector at the end always goes through the masked step.
 */

/* ---- moments ---------------------------------------------------------------- */

static void moments_block(struct gw__mom *acc, const double *x, size_t len)
{
	const vd one = vd_set1(1.0), inf = vd_set1(INFINITY);
	const vd ninf = vd_set1(-INFINITY), zero = vd_set1(0.0);
	const double k = gw__mom_shift(acc, x, len);
	const vd kv = vd_set1(k);
	vd s[U], sk[U], c[U], mn[U], mx[U], q[U];
	int masked = 0;
again:
	for (size_t u = 0; u < U; u++) {
		s[u] = sk[u] = c[u] = q[u] = zero;
		mn[u] = inf;
		mx[u] = ninf;
	}
#define MOM1_MASKED                                                 \
	{                                                               \
		vm m = vm_finite(v);                                        \
		s[u] = vd_add(s[u], vd_and(v, m));                          \
		sk[u] = vd_add(sk[u], vd_and(vd_sub(v, kv), m));            \
		c[u] = vd_add(c[u], vd_and(one, m));                        \
		mn[u] = vd_min(mn[u], vd_sel(m, v, inf));                   \
		mx[u] = vd_max(mx[u], vd_sel(m, v, ninf));                  \
	}
	if (masked) {
		FOR_VECTORS(x, len, (void)0, MOM1_MASKED, MOM1_MASKED);
	} else {
		FOR_VECTORS(x, len, prefetch_round(x + i), {
			s[u] = vd_add(s[u], v);
			sk[u] = vd_add(sk[u], vd_sub(v, kv));
			mn[u] = vd_min(mn[u], v);
			mx[u] = vd_max(mx[u], v);
		}, MOM1_MASKED);
	}
#undef MOM1_MASKED
	double sum = vd_hsum(sum_u(s)), sks = vd_hsum(sum_u(sk));
	if (!masked && !(isfinite(sum) && isfinite(sks))) {
		masked = 1;
		goto again;
	}
	double n = vd_hsum(sum_u(c)) + (masked ? 0.0 : (double)WHOLE(len));
	if (n == 0.0)
		return;
	vd mean = vd_set1(k + sks / n);
#define MOM2_MASKED                                                 \
	{                                                               \
		vd d = vd_and(vd_sub(v, mean), vm_finite(v));               \
		q[u] = vd_fma(d, d, q[u]);                                  \
	}
	if (masked) {
		FOR_VECTORS(x, len, (void)0, MOM2_MASKED, MOM2_MASKED);
	} else {
		FOR_VECTORS(x, len, (void)0, {
			vd d = vd_sub(v, mean);
			q[u] = vd_fma(d, d, q[u]);
		}, MOM2_MASKED);
	}
#undef MOM2_MASKED
	vd vmn = vd_min(vd_min(mn[0], mn[1]), vd_min(mn[2], mn[3]));
	vd vmx = vd_max(vd_max(mx[0], mx[1]), vd_max(mx[2], mx[3]));
	gw__mom_merge(acc, k, n, sum, sks, vd_hsum(sum_u(q)), vd_hmin(vmn),
	              vd_hmax(vmx));
}

static void moments(const double *a, size_t na, const double *b, size_t nb,
                    struct gw_kern_moments *out)
{
	gw__mom_spans(moments_block, a, na, b, nb, out);
}

/* ---- logarithm ----------------------------------------------------------------- */

/*
 * ln(x) for positive finite x (subnormals included); other lanes get
 * garbage, which the caller masks.  x = 2^k * z with z in [sqrt(1/2),
 * sqrt(2)), f = z - 1 (exact), s = f / (2 + f), so that
 *   ln(1 + f) = 2 atanh(s) = f - f^2/2 + s * (f^2/2 + R(s^2)),
 *   R(w) = sum_{j >= 1} 2 w^j / (2j + 1),
 * where the rounding of s only touches the small last term; R is summed to
 * j = 10 (|s| <= 0.1716, truncation below 1e-18 relative).  k * ln 2 is
 * added in two parts, the high part with 32 significant bits so that
 * k * LN2_HI is exact.  Measured error against glibc's log: within 1 ulp
 * (tests/unit/test_kern.c).
 */
#define LOG_OFF 0x3fe6a09e667f3bcdULL /* bits of sqrt(1/2) */
#define LN2_HI 6.93147180369123816490e-01 /* 0x3fe62e42fee00000 */
#define LN2_LO 1.90821492927058770002e-10

static inline vd vd_log(vd x)
{
	const vd one = vd_set1(1.0);
	vm sub = vm_lt(x, vd_set1(DBL_MIN));
	x = vd_sel(sub, vd_mul(x, vd_set1(0x1p54)), x);
	vd kadj = vd_and(vd_set1(-54.0), sub);

	vi ix = vi_of(x);
	vi t = vi_add(ix, vi_set1(0x3ff0000000000000ULL - LOG_OFF));
	vi kb = vi_srl52(t); /* k + 1023 */
	vi iz = vi_sub(ix, vi_sub(vi_and(t, vi_set1(0xfff0000000000000ULL)),
	                          vi_set1(0x3ff0000000000000ULL)));
	vd z = vd_of(iz);
	vd k = vd_sub(vd_of(vi_or(kb, vi_set1(0x4330000000000000ULL))),
	              vd_set1(0x1p52 + 1023.0));
	k = vd_add(k, kadj);

	vd f = vd_sub(z, one);
	vd s = vd_div(f, vd_add(vd_set1(2.0), f));
	vd w = vd_mul(s, s);
	vd r = vd_set1(2.0 / 21.0);
	r = vd_fma(r, w, vd_set1(2.0 / 19.0));
	r = vd_fma(r, w, vd_set1(2.0 / 17.0));
	r = vd_fma(r, w, vd_set1(2.0 / 15.0));
	r = vd_fma(r, w, vd_set1(2.0 / 13.0));
	r = vd_fma(r, w, vd_set1(2.0 / 11.0));
	r = vd_fma(r, w, vd_set1(2.0 / 9.0));
	r = vd_fma(r, w, vd_set1(2.0 / 7.0));
	r = vd_fma(r, w, vd_set1(2.0 / 5.0));
	r = vd_fma(r, w, vd_set1(2.0 / 3.0));
	r = vd_mul(r, w);
	vd hfsq = vd_mul(vd_set1(0.5), vd_mul(f, f));
	vd lo = vd_fma(s, vd_add(hfsq, r), vd_mul(k, vd_set1(LN2_LO)));
	return vd_add(vd_mul(k, vd_set1(LN2_HI)), vd_sub(f, vd_sub(hfsq, lo)));
}

/* Map a block to ln(x), NaN where x is not > 0 and finite, then take its
 * moments: the same structure as the scalar reference. */
static void log_moments_block(struct gw__mom *acc, const double *x, size_t len)
{
	double buf[GW__KERN_BLOCK];
	const vd nan = vd_set1(NAN), zero = vd_set1(0.0);
	size_t j = 0;
	for (; j + W <= len; j += W) {
		if (j % 8 == 0)
			gw__kern_prefetch_ahead(x + j);
		vd v = vd_load(x + j);
		vm ok = vm_and(vm_gt(v, zero), vm_finite(v));
		vd_store(buf + j, vd_sel(ok, vd_log(v), nan));
	}
	if (j < len) {
		double tmp[W];
		vd v = load_tail(x + j, len - j);
		vm ok = vm_and(vm_gt(v, zero), vm_finite(v));
		vd_store(tmp, vd_sel(ok, vd_log(v), nan));
		memcpy(buf + j, tmp, (len - j) * sizeof(double));
	}
	moments_block(acc, buf, len);
}

static void log_moments(const double *a, size_t na, const double *b,
                        size_t nb, struct gw_kern_moments *out)
{
	gw__mom_spans(log_moments_block, a, na, b, nb, out);
}

/* ---- slope ------------------------------------------------------------------------ */

static void slope_block(struct gw__co *acc, const double *y, size_t len,
                        double t0)
{
	const vd one = vd_set1(1.0), zero = vd_set1(0.0);
	const vd t0v = vd_add(vd_set1(t0), vd_iota());
	double kt, ky;
	gw__co_shift(acc, NULL, y, len, &kt, &ky);
	const vd kyv = vd_set1(ky);
	vd st[U], sy[U], c[U], ctt[U], cty[U];
	int masked = 0;
again:
	for (size_t u = 0; u < U; u++)
		st[u] = sy[u] = c[u] = ctt[u] = cty[u] = zero;
#define SLOPE1_MASKED                                               \
	{                                                               \
		vm m = vm_finite(v);                                        \
		vd t = vd_add(t0v, vd_set1((double)(int64_t)off));          \
		st[u] = vd_add(st[u], vd_and(t, m));                        \
		sy[u] = vd_add(sy[u], vd_and(vd_sub(v, kyv), m));           \
		c[u] = vd_add(c[u], vd_and(one, m));                        \
	}
	if (masked) {
		FOR_VECTORS(y, len, (void)0, SLOPE1_MASKED, SLOPE1_MASKED);
	} else {
		/* every position in a whole vector counts: sum them below */
		FOR_VECTORS(y, len, prefetch_round(y + i), {
			sy[u] = vd_add(sy[u], vd_sub(v, kyv));
		}, SLOPE1_MASKED);
	}
#undef SLOPE1_MASKED
	double sys = vd_hsum(sum_u(sy));
	if (!masked && !isfinite(sys)) {
		masked = 1;
		goto again;
	}
	double n = vd_hsum(sum_u(c)) + (masked ? 0.0 : (double)WHOLE(len));
	if (n == 0.0)
		return;
	/* positions are integers below 2^53: both ways of summing are exact */
	double wh = (double)WHOLE(len);
	double sts = vd_hsum(sum_u(st)) + (masked ? 0.0 : wh * t0 + wh * (wh - 1.0) / 2.0);
	const vd mt = vd_set1(sts / n), my = vd_set1(ky + sys / n);
#define SLOPE2_MASKED                                               \
	{                                                               \
		vm m = vm_finite(v);                                        \
		vd t = vd_add(t0v, vd_set1((double)(int64_t)off));          \
		vd dt = vd_and(vd_sub(t, mt), m);                           \
		vd dy = vd_and(vd_sub(v, my), m);                           \
		ctt[u] = vd_fma(dt, dt, ctt[u]);                            \
		cty[u] = vd_fma(dt, dy, cty[u]);                            \
	}
	if (masked) {
		FOR_VECTORS(y, len, (void)0, SLOPE2_MASKED, SLOPE2_MASKED);
	} else {
		/* positions carried in a vector per accumulator, exact integers */
		vd tv[U];
		for (size_t u = 0; u < U; u++)
			tv[u] = vd_add(t0v, vd_set1((double)(u * W)));
		FOR_VECTORS(y, len, (void)0, {
			vd dt = vd_sub(tv[u], mt);
			vd dy = vd_sub(v, my);
			tv[u] = vd_add(tv[u], vd_set1(step));
			ctt[u] = vd_fma(dt, dt, ctt[u]);
			cty[u] = vd_fma(dt, dy, cty[u]);
		}, SLOPE2_MASKED);
	}
#undef SLOPE2_MASKED
	gw__co_merge(acc, kt, ky, n, sts, sys, vd_hsum(sum_u(ctt)), 0.0,
	             vd_hsum(sum_u(cty)));
}

static double slope(const double *a, size_t na, const double *b, size_t nb)
{
	return gw__slope_spans(slope_block, a, na, b, nb);
}

/* ---- correlation ------------------------------------------------------------------- */

/* FOR_VECTORS walks x; y is loaded at the same offset (the tail through the
 * same padded copy). */
static void corr_block(struct gw__co *acc, const double *x, const double *y,
                       size_t len)
{
	const vd one = vd_set1(1.0), zero = vd_set1(0.0);
	double kx, ky;
	gw__co_shift(acc, x, y, len, &kx, &ky);
	const vd kxv = vd_set1(kx), kyv = vd_set1(ky);
	vd sx[U], sy[U], c[U], cxx[U], cyy[U], cxy[U];
	int masked = 0;
again:
	for (size_t u = 0; u < U; u++)
		sx[u] = sy[u] = c[u] = cxx[u] = cyy[u] = cxy[u] = zero;
#define CORR1_MASKED(LOADY)                                         \
	{                                                               \
		vd w = LOADY;                                               \
		vm m = vm_and(vm_finite(v), vm_finite(w));                  \
		sx[u] = vd_add(sx[u], vd_and(vd_sub(v, kxv), m));           \
		sy[u] = vd_add(sy[u], vd_and(vd_sub(w, kyv), m));           \
		c[u] = vd_add(c[u], vd_and(one, m));                        \
	}
	if (masked) {
		FOR_VECTORS(x, len, (void)0, CORR1_MASKED(vd_load(y + off)),
		            CORR1_MASKED(load_tail(y + off, len - off)));
	} else {
		FOR_VECTORS(x, len, (prefetch_round(x + i), prefetch_round(y + i)), {
			vd w = vd_load(y + off);
			sx[u] = vd_add(sx[u], vd_sub(v, kxv));
			sy[u] = vd_add(sy[u], vd_sub(w, kyv));
		}, CORR1_MASKED(load_tail(y + off, len - off)));
	}
	double sxs = vd_hsum(sum_u(sx)), sys = vd_hsum(sum_u(sy));
	if (!masked && !(isfinite(sxs) && isfinite(sys))) {
		masked = 1;
		goto again;
	}
	double n = vd_hsum(sum_u(c)) + (masked ? 0.0 : (double)WHOLE(len));
	if (n == 0.0)
		return;
	const vd mx = vd_set1(kx + sxs / n), my = vd_set1(ky + sys / n);
#define CORR2_MASKED(LOADY)                                         \
	{                                                               \
		vd w = LOADY;                                               \
		vm m = vm_and(vm_finite(v), vm_finite(w));                  \
		vd dx = vd_and(vd_sub(v, mx), m);                           \
		vd dy = vd_and(vd_sub(w, my), m);                           \
		cxx[u] = vd_fma(dx, dx, cxx[u]);                            \
		cyy[u] = vd_fma(dy, dy, cyy[u]);                            \
		cxy[u] = vd_fma(dx, dy, cxy[u]);                            \
	}
	if (masked) {
		FOR_VECTORS(x, len, (void)0, CORR2_MASKED(vd_load(y + off)),
		            CORR2_MASKED(load_tail(y + off, len - off)));
	} else {
		FOR_VECTORS(x, len, (void)0, {
			vd dx = vd_sub(v, mx);
			vd dy = vd_sub(vd_load(y + off), my);
			cxx[u] = vd_fma(dx, dx, cxx[u]);
			cyy[u] = vd_fma(dy, dy, cyy[u]);
			cxy[u] = vd_fma(dx, dy, cxy[u]);
		}, CORR2_MASKED(load_tail(y + off, len - off)));
	}
#undef CORR1_MASKED
#undef CORR2_MASKED
	gw__co_merge(acc, kx, ky, n, sxs, sys, vd_hsum(sum_u(cxx)),
	             vd_hsum(sum_u(cyy)), vd_hsum(sum_u(cxy)));
}

static double corr(const double *xa, const double *ya, size_t na,
                   const double *xb, const double *yb, size_t nb)
{
	return gw__corr_spans(corr_block, xa, ya, na, xb, yb, nb);
}

/* ---- count ------------------------------------------------------------------- */

/* Counts as sums of 1.0 per lane (exact up to 2^53), masked: a value
 * counts when finite (and > 0 with `positive`); the NaN padding of the
 * tail never does.  Two accumulators per count are enough here: a window
 * is at most a few hundred values. */
static void count_span(const double *x, size_t len, double t, int side, int positive,
                       double acc[2])
{
	const vd one = vd_set1(1.0), zero = vd_set1(0.0), tv = vd_set1(t);
	vd n[U], c[U];
	for (size_t u = 0; u < U; u++)
		n[u] = c[u] = zero;
#define COUNT_STEP                                                  \
	{                                                               \
		vm m = vm_finite(v);                                        \
		if (positive)                                               \
			m = vm_and(m, vm_gt(v, zero));                          \
		n[u] = vd_add(n[u], vd_and(one, m));                        \
		vm s = side < 0 ? vm_lt(v, tv) : vm_gt(v, tv);              \
		c[u] = vd_add(c[u], vd_and(one, vm_and(m, s)));             \
	}
	FOR_VECTORS(x, len, (void)0, COUNT_STEP, COUNT_STEP);
#undef COUNT_STEP
	acc[0] += vd_hsum(sum_u(n));
	acc[1] += vd_hsum(sum_u(c));
}

static size_t count(const double *a, size_t na, const double *b, size_t nb, double t, int side,
                    int positive, size_t *n)
{
	double acc[2] = {0, 0};
	count_span(a, na, t, side, positive, acc);
	count_span(b, nb, t, side, positive, acc);
	*n = (size_t)acc[0];
	return (size_t)acc[1];
}

#define GW_SIMD_OPS(ident, label)            \
	const struct gw_kern_ops ident = {       \
		.name = label,                       \
		.moments = moments,                  \
		.log_moments = log_moments,          \
		.slope = slope,                      \
		.corr = corr,                        \
		.count = count,                      \
	}
