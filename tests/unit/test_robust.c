/*
 * The numerical contracts of the streaming statistics (detectors/robust.h,
 * hist.h bounds, spike.c, regime.c): each gives exactly what the plain
 * computation -- a sort, a selection, gw_median, gw_noise -- gives, over
 * random and adversarial windows: ties, all-equal, signed zeros, huge and
 * tiny values, infinities, NaN where a window may hold it (it is skipped or
 * never added), window sizes 1 .. 512.
 *
 *   order_stat       gw_order_stat is the k-th of the sorted values, with
 *                    everything left of it <= and right of it >=;
 *   sorted_windows   a window kept sorted through thousands of random adds
 *                    and deletes: same values, bit for bit, as a plain
 *                    array; its median and its MAD around any centre equal
 *                    gw_median's on a copy (a zero's sign aside, see
 *                    robust.h);
 *   sorted_noise     gw_sorted_noise of sorted differences is gw_noise;
 *   bounds           gw_hist_valid_bound / _recent_bound through random
 *                    pushes, merges and restarts are bounds of the exact
 *                    middle values, and gw_mid_surely_* never claim what
 *                    the pre-filters would not;
 *   spike_stream     gw_spike_stat, its baselines sliding line after line,
 *                    equals the statistics selected anew on every line;
 *   regime_stream    the post-resume windows, their fields kept sorted,
 *                    equal the medians selected anew, also across a change
 *                    of the window sizes.
 * The seed is fixed; GW_TEST_SEED overrides it.
 */
#include "gwcheck.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "regime.h"
#include "robust.h"
#include "spike.h"
#include "thresholds.h"

/* ck_assert records every check it passes (a write each): in the loops
 * here, only a failure goes to Check. */
#define CHECK(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)
#define CHECK1(cond) CHECK(cond, "%s", #cond)

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double unif(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

static void seed(uint64_t salt)
{
	const char *s = getenv("GW_TEST_SEED");
	rng = 88172645463325252ull ^ (s ? strtoull(s, NULL, 10) * 0x9e3779b97f4a7c15ull : 0) ^ salt;
	if (!rng)
		rng = 1;
}

/* Kinds of data, adversarial ones included; NaN-free (the windows these
 * statistics keep never hold one). */
enum data { D_RANDOM, D_TIES, D_EQUAL, D_ZEROS, D_HUGE, D_TINY, D_INF, D_TREND, D_COUNT };

static double value(enum data d, size_t i)
{
	switch (d) {
	case D_RANDOM: return unif() * 10 - 5;
	case D_TIES: return (double)(rnd() % 4) * 0.25;
	case D_EQUAL: return 2.5;
	case D_ZEROS: return rnd() % 3 == 0 ? (rnd() % 2 ? 0.0 : -0.0) : (double)(rnd() % 3) - 1;
	case D_HUGE: return (rnd() % 2 ? 1 : -1) * DBL_MAX * unif();
	case D_TINY: return (rnd() % 2 ? 1 : -1) * 4.9e-324 * (double)(rnd() % 5);
	case D_INF: return rnd() % 7 == 0 ? (rnd() % 2 ? INFINITY : -INFINITY) : unif();
	default: return 10.0 - 0.01 * (double)i + unif() * 0.1;
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Equal as gw_median's result would be: the same bits, or both zeros (the
 * sign of a zero median depends on selection order), or both NaN. */
static int same(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	if (a == 0 && b == 0)
		return 1;
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static double median_copy(const double *x, size_t n)
{
	double t[GW_WIN_MAX];
	memcpy(t, x, n * sizeof(double));
	return gw_median(t, n);
}

/* gw_median of |x[i] - c|, the plain way. */
static double mad_copy(const double *x, size_t n, double c)
{
	double t[GW_WIN_MAX];
	for (size_t i = 0; i < n; i++)
		t[i] = fabs(x[i] - c);
	return gw_median(t, n);
}

START_TEST(order_stat)
{
	seed(1);
	for (int trial = 0; trial < 4000; trial++) {
		size_t n = 1 + rnd() % GW_WIN_MAX, k = rnd() % n;
		enum data d = (enum data)(trial % D_COUNT);
		double x[GW_WIN_MAX], s[GW_WIN_MAX];
		for (size_t i = 0; i < n; i++)
			x[i] = s[i] = value(d, i);
		qsort(s, n, sizeof(double), cmp);
		double v = gw_order_stat(x, n, k);
		CHECK(v == s[k], "n %zu k %zu data %d: %g, sorted %g", n, k, d, v, s[k]);
		for (size_t i = 0; i < n; i++)
			CHECK1(i < k ? !(x[i] > v) : i > k ? !(x[i] < v) : 1);
	}
}
END_TEST

START_TEST(sorted_windows)
{
	seed(2);
	static const size_t caps[] = {1, 2, 3, 5, 8, 16, 31, 64, 100, 128, 512};
	for (size_t ci = 0; ci < sizeof(caps) / sizeof(caps[0]); ci++) {
		for (int d = 0; d < D_COUNT; d++) {
			size_t cap = caps[ci];
			double v[GW_WIN_MAX], plain[GW_WIN_MAX];
			size_t n = 0, np = 0;
			int ops = cap <= 16 ? 1500 : cap <= 128 ? 500 : 150;
			for (int op = 0; op < ops; op++) {
				/* full: half the time, one slide by gw_sorted_replace, which
				 * must leave what del then add leave, bit for bit */
				if (np == cap && rnd() % 2) {
					double w[GW_WIN_MAX + 1];
					size_t j = rnd() % np, m = n;
					double gone = plain[j], x = value((enum data)d, (size_t)op);
					memcpy(w, v, n * sizeof(double));
					gw_sorted_del(w, &m, gone);
					gw_sorted_add(w, &m, x);
					gw_sorted_replace(v, n, gone, x);
					CHECK(m == n && memcmp(w, v, n * sizeof(double)) == 0,
					      "cap %zu data %d: replace %g by %g differs from del + add",
					      cap, d, gone, x);
					plain[j] = x;
				}
				/* a sliding window: add while below cap, else drop one first */
				else if (np == cap || (np && rnd() % 4 == 0)) {
					size_t j = rnd() % np;
					gw_sorted_del(v, &n, plain[j]);
					plain[j] = plain[--np];
				}
				if (np < cap) {
					plain[np++] = value((enum data)d, (size_t)op);
					gw_sorted_add(v, &n, plain[np - 1]);
				}
				CHECK1(n == np);
				for (size_t i = 1; i < n; i++)
					CHECK1(!(v[i] < v[i - 1]));
				/* the same values, bit for bit (a multiset) */
				double a[GW_WIN_MAX], b[GW_WIN_MAX];
				memcpy(a, v, n * sizeof(double));
				memcpy(b, plain, n * sizeof(double));
				qsort(b, n, sizeof(double), cmp);
				for (size_t i = 0; i < n; i++) {
					size_t j = i;
					/* equal values may be in any order: find a's bits among them */
					while (j < n && b[j] == a[i] && memcmp(&b[j], &a[i], sizeof(double)))
						j++;
					CHECK(j < n && !memcmp(&b[j], &a[i], sizeof(double)),
					              "cap %zu data %d: value %g lost", cap, d, a[i]);
					double t = b[j];
					b[j] = b[i];
					b[i] = t;
				}
				double m = gw_sorted_median(v, n), want = median_copy(plain, n);
				CHECK(same(m, want), "cap %zu data %d n %zu: median %.17g, want %.17g",
				              cap, d, n, m, want);
				double cs[] = {want, 0.0, -0.0, value((enum data)d, 7), 1e300, -1e300,
				               n ? v[0] : 1, n ? v[n - 1] : 1};
				for (size_t k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
					/* an infinite centre and the same infinity in the window make
					 * a NaN deviation, which has no order (robust.h) */
					int nan_dev = isnan(cs[k]);
					for (size_t i = 0; i < n && isinf(cs[k]); i++)
						nan_dev |= v[i] == cs[k];
					if (nan_dev)
						continue;
					double got = gw_sorted_mad(v, n, cs[k]), exp = mad_copy(plain, n, cs[k]);
					CHECK(same(got, exp),
					              "cap %zu data %d n %zu: MAD around %g %.17g, want %.17g",
					              cap, d, n, cs[k], got, exp);
				}
			}
		}
	}
	double none[1];
	CHECK1(isnan(gw_sorted_median(none, 0)));
	CHECK1(isnan(gw_sorted_mad(none, 0, 1.0)));
}
END_TEST

START_TEST(sorted_noise)
{
	seed(3);
	for (int trial = 0; trial < 1000; trial++) {
		size_t n = 3 + rnd() % (GW_WIN_MAX - 2);
		enum data d = (enum data)(trial % D_COUNT);
		if (d == D_INF || d == D_HUGE)
			d = D_RANDOM;   /* differences of those overflow to NaN: gw_noise's own affair */
		double x[GW_WIN_MAX], dd[GW_WIN_MAX], scratch[GW_WIN_MAX];
		for (size_t i = 0; i < n; i++)
			x[i] = value(d, i) + (rnd() % 50 == 0 ? 1e3 : 0);   /* spikes */
		for (size_t i = 0; i + 1 < n; i++)
			dd[i] = x[i + 1] - x[i];
		qsort(dd, n - 1, sizeof(double), cmp);
		double got = gw_sorted_noise(dd, n - 1), want = gw_noise(x, n, scratch);
		CHECK(same(got, want), "n %zu data %d: %.17g, gw_noise %.17g", n, d, got, want);
	}
}
END_TEST

/* ---- bounds ------------------------------------------------------------------- */

static struct gw_rec rec_of(int64_t step, double loss, double gn, double thr)
{
	struct gw_rec r = {.run = "r", .run_len = 1, .step = step, .ts = NAN};
	r.present = 1u << GW_ROLE_LOSS | 1u << GW_ROLE_GRAD_NORM | 1u << GW_ROLE_THROUGHPUT;
	r.v[GW_ROLE_LOSS] = loss;
	r.v[GW_ROLE_GRAD_NORM] = gn;
	r.v[GW_ROLE_THROUGHPUT] = thr;
	return r;
}

/* The exact lower and upper middle of a window's (kept) values. */
static int middles(const struct gw_win *w, int positive, double *lo, double *hi)
{
	double x[GW_WIN_MAX];
	size_t n = 0;
	for (size_t i = 0; i < gw_win_len(w); i++) {
		double v = gw_win_at(w, i);
		if (!positive || (isfinite(v) && v > 0))
			x[n++] = v;
	}
	if (!n)
		return 0;
	qsort(x, n, sizeof(double), cmp);
	*lo = x[(n - 1) / 2];
	*hi = x[n / 2];
	return 1;
}

/* Check every bound the history gives against the exact middles, and the
 * pre-filter agreement of gw_mid_surely_*. */
static void check_bounds(const struct gw_hist *h, bool every, unsigned *checked)
{
	/* a few windows after every change, so that a bound kept a change too
	 * long is seen; all of them now and then */
	static const size_t counts[] = {16, 64, 100, 128, 3, 5, 17, 32, 300};
	static const size_t skips[] = {0, 5, 40, 1, 16};
	for (size_t ci = 0; ci < (every ? sizeof(counts) / sizeof(counts[0]) : 4); ci++) {
		for (size_t si = 0; si < (every ? sizeof(skips) / sizeof(skips[0]) : 3); si++) {
			size_t count = counts[ci], skip = skips[si];
			for (int side = -1; side <= 1; side += 2) {
				double b, lo, hi;
				enum gw_vcol vc = (enum gw_vcol)((ci + si) % 4);   /* not LR */
				if (gw_hist_valid_bound(h, vc, count, skip, side, &b)) {
					struct gw_win w = gw_hist_valid(h, vc, count, skip);
					CHECK1(gw_win_len(&w) == count);
					CHECK1(middles(&w, 0, &lo, &hi));
					CHECK(side < 0 ? b <= lo : b >= hi,
					              "valid col %d count %zu skip %zu side %d: %g vs %g %g", vc,
					              count, skip, side, b, lo, hi);
					/* what the pre-filter would say, given the bound */
					double t = side < 0 ? b - 1e-6 - fabs(b) * 1e-6 : b + 1e-6 + fabs(b) * 1e-6;
					if (side < 0 && gw_mid_surely_above(b, t))
						CHECK1(!gw_median_maybe_le(&w, t));
					if (side > 0 && gw_mid_surely_below(b, t))
						CHECK1(!gw_median_maybe_ge(&w, t));
					(*checked)++;
				}
				if (gw_hist_recent_bound(h, GW_COL_THROUGHPUT, count, skip, side, &b)) {
					struct gw_win all = gw_hist_recent(h, GW_COL_THROUGHPUT, count + skip);
					struct gw_win w = all;
					/* the first `count` of the count + skip newest */
					w.na = all.na < count ? all.na : count;
					w.nb = count - w.na;
					CHECK1(middles(&w, 1, &lo, &hi));
					CHECK(side < 0 ? b <= lo : b >= hi,
					              "recent count %zu skip %zu side %d: %g vs %g %g", count, skip,
					              side, b, lo, hi);
					(*checked)++;
				}
			}
		}
	}
}

START_TEST(bounds)
{
	seed(4);
	unsigned checked = 0;
	for (int d = 0; d < D_COUNT; d++) {
		struct gw_hist *h = calloc(1, sizeof(*h));
		int64_t step = 0;
		double level = 1.0;
		for (int op = 0; op < 2000; op++) {
			unsigned k = rnd() % 100;
			double loss = fabs(value((enum data)d, (size_t)op)) + level;
			double gn = exp(unif() - 0.5) * level;
			double thr = (d == D_INF || d == D_ZEROS) ? value((enum data)d, (size_t)op) :
			             rnd() % 20 == 0 ? NAN : 100 * unif();
			if (k < 3) {
				level *= 1 + unif();   /* the series moves */
			} else if (k < 5 && step > 20) {
				int64_t S = step - 1 - (int64_t)(rnd() % 300);   /* a restart */
				gw_hist_cut(h, S < 0 ? 0 : S);
				step = S < 0 ? 0 : S;
			} else if (k < 10 && step > 0) {
				struct gw_rec r = rec_of(step, rnd() % 2 ? NAN : loss, gn, thr);
				gw_hist_merge_last(h, &r);   /* a later line of the same step */
			} else {
				struct gw_rec r = rec_of(++step, rnd() % 15 == 0 ? -loss : loss, gn, thr);
				gw_hist_push(h, &r);
			}
			check_bounds(h, op % 23 == 0, &checked);
		}
		gw_hist_free(h);
		free(h);
	}
	ck_assert_uint_gt(checked, 10000);   /* the test reached the bounds */
}
END_TEST

/* ---- the spike statistics, sliding and selected -------------------------------- */

/* gw_spike_stat's series, selected anew from the history. */
static void spike_plain(const struct gw_hist *h, enum gw_vcol col, size_t nc, size_t nb,
                        const struct gw_thresholds *th, struct gw_spike_series *o)
{
	struct gw_win b = gw_hist_valid(h, col, nb, nc), c = gw_hist_valid(h, col, nc, 0);
	double a[GW_WIN_MAX], d[GW_WIN_MAX];
	gw_win_copy(&b, a);
	o->base_noise = fmax(gw_noise(a, nb, d), th->sigma_floor_log);
	o->base_median = gw_median(a, nb);
	o->cur_median = gw_win_median(&c);
	o->log_ratio = o->cur_median - o->base_median;
	o->z = o->log_ratio / o->base_noise;
}

static void same_series(const struct gw_spike_series *a, const struct gw_spike_series *b,
                        int line)
{
	CHECK(same(a->base_median, b->base_median) && same(a->base_noise, b->base_noise) &&
	              same(a->cur_median, b->cur_median) && same(a->z, b->z) &&
	              same(a->log_ratio, b->log_ratio),
	              "line %d: sliding %.17g %.17g %.17g, selected %.17g %.17g %.17g", line,
	              a->base_median, a->base_noise, a->z, b->base_median, b->base_noise, b->z);
}

START_TEST(spike_stream)
{
	seed(5);
	struct gw_thresholds th;
	gw_thresholds_default(&th);
	size_t nc = (size_t)th.sp_cur_window, nb = (size_t)th.sp_base_window;
	struct gw_hist *h = calloc(1, sizeof(*h));
	struct gw_spike_cache cache = {0};
	uint64_t valid = 0;
	int64_t step = 0;
	unsigned compared = 0;
	for (int line = 0; line < 6000; line++) {
		unsigned k = rnd() % 100;
		double loss = exp(unif() * (line % 1000 < 300 ? 0.01 : 1.0)), gn = exp(unif());
		if (k < 2 && step > 100) {
			step -= 50;
			gw_hist_cut(h, step);
		} else if (k < 6 && step) {
			struct gw_rec r = rec_of(step, loss * 2, gn, 1);
			gw_hist_merge_last(h, &r);
			continue;   /* a merged line reaches no detector */
		}
		struct gw_rec r = rec_of(++step, rnd() % 30 ? loss : NAN, gn, 1);
		gw_hist_push(h, &r);
		struct gw_hist_rec cur;
		gw_hist_at(h, 0, &cur);
		valid += cur.valid;
		if (!cur.valid || (k > 60 && line % 500 > 40))
			continue;   /* asked for on runs of lines (episodes), with gaps */
		struct gw_det_ctx ctx = {.th = &th, .hist = h, .spike = &cache, .valid_records = valid};
		const struct gw_spike_stat *st = gw_spike_stat(&ctx);
		if (!st->ok)
			continue;
		struct gw_spike_series l, g;
		spike_plain(h, GW_V_LOG_LOSS, nc, nb, &th, &l);
		spike_plain(h, GW_V_LOG_GRAD_NORM, nc, nb, &th, &g);
		same_series(&st->loss, &l, line);
		same_series(&st->gn, &g, line);
		compared++;
	}
	ck_assert_uint_gt(compared, 1000);
	gw_spike_free(&cache);
	gw_hist_free(h);
	free(h);
}
END_TEST

/* ---- the post-resume windows, sorted and selected -------------------------------- */

START_TEST(regime_stream)
{
	seed(6);
	struct gw_thresholds th;
	gw_thresholds_default(&th);
	th.rr_long_max = 1e6;
	struct gw_hist *h = calloc(1, sizeof(*h));
	for (int i = 1; i <= 200; i++) {
		struct gw_rec r = rec_of(i, 2 + 0.1 * unif(), 1 + 0.1 * unif(), 1);
		gw_hist_push(h, &r);
	}
	struct gw_restart *rs = calloc(1, sizeof(*rs));
	gw_regime_open(rs, 200, 200, h, &th);
	CHECK1(rs->pre.ok);
	unsigned judged = 0;
	for (uint64_t k = 1; k <= 3000; k++) {
		if (k == 700) {
			th.post_window = 3;          /* a reconfiguration */
			th.post_window_min = 2;
		} else if (k == 1400) {
			th.post_window_long = 20;    /* the long window shrinks */
		} else if (k == 2100) {
			th.post_window = 20;
			th.post_window_long = 32;
		}
		enum data d = (enum data)((k / 300) % D_COUNT);
		double v = d == D_TIES ? 2 + (double)(rnd() % 3) : d == D_EQUAL ? 2.0 : 1 + 3 * unif();
		struct gw_hist_rec r = {.step = (int64_t)(200 + k), .loss = v,
		                        .grad_norm = d == D_EQUAL ? 1.0 : exp(unif()),
		                        .lr = rnd() % 9 ? NAN : 10 * unif(), .valid = rnd() % 10 != 0};
		rs->k = k;
		gw_regime_update(rs, &r, &th);
		size_t W[2] = {(size_t)th.post_window, (size_t)th.post_window_long};
		size_t wmin[2] = {(size_t)th.post_window_min, (size_t)th.post_window_long};
		for (int w = 0; w < 2 && r.valid; w++) {
			size_t n = rs->npost < W[w] ? rs->npost : W[w];
			CHECK1((rs->win[w].ready) == (n >= wmin[w] && n > 0));
			if (!rs->win[w].ready)
				continue;
			const struct gw_post_sample *p = rs->post + rs->npost - n;
			double f[4][GW_POST_CAP];
			bool steady = true;
			for (size_t i = 0; i < n; i++) {
				f[0][i] = p[i].loss_sigmas;
				f[1][i] = p[i].loss_log_ratio;
				f[2][i] = p[i].gn_sigmas;
				f[3][i] = p[i].gn_log_ratio;
				steady &= p[i].lr_steady;
			}
			const struct gw_post_window *pw = &rs->win[w];
			CHECK1(same(pw->loss_sigmas, gw_median(f[0], n)));
			CHECK1(same(pw->loss_log_ratio, gw_median(f[1], n)));
			CHECK1(same(pw->gn_sigmas, gw_median(f[2], n)));
			CHECK1(same(pw->gn_log_ratio, gw_median(f[3], n)));
			CHECK1((pw->lr_steady) == (steady));
			CHECK1((pw->k_first) == (p[0].k));
			judged++;
		}
	}
	ck_assert_uint_gt(judged, 2000);
	free(rs);
	gw_hist_free(h);
	free(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("robust");
	TCase *tc = tcase_create("contracts");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, order_stat);
	tcase_add_test(tc, sorted_windows);
	tcase_add_test(tc, sorted_noise);
	tcase_add_test(tc, bounds);
	tcase_add_test(tc, spike_stream);
	tcase_add_test(tc, regime_stream);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
