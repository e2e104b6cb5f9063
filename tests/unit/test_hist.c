/*
 * Unit tests of a run's history (detectors/hist.c), without the engine:
 * windows across the ring's wrap as two spans, the valid-record ring
 * following the timeline through pushes, merges of split lines, evictions
 * and restarts, and the replay copy (sorted, capped, looked up by step).
 * The last test runs thousands of random operations against a plain-array
 * model of the timeline and checks every reader after each one.
 */
#include "gwcheck.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

static struct gw_rec mk(int64_t step, double loss, double gn, double lr)
{
	struct gw_rec r = {.run = "r", .run_len = 1, .step = step, .ts = NAN};
	if (!isnan(loss)) {
		r.present |= 1u << GW_ROLE_LOSS;
		r.v[GW_ROLE_LOSS] = loss;
	}
	if (!isnan(gn)) {
		r.present |= 1u << GW_ROLE_GRAD_NORM;
		r.v[GW_ROLE_GRAD_NORM] = gn;
	}
	if (!isnan(lr)) {
		r.present |= 1u << GW_ROLE_LR;
		r.v[GW_ROLE_LR] = lr;
	}
	return r;
}

static struct gw_hist *new_hist(void)
{
	struct gw_hist *h = calloc(1, sizeof(*h));   /* zeroed is empty */
	ck_assert_ptr_nonnull(h);
	return h;
}

static void del_hist(struct gw_hist *h)
{
	gw_hist_free(h);
	free(h);
}

START_TEST(windows_wrap_into_two_spans)
{
	struct gw_hist *h = new_hist();
	struct gw_rec r;
	for (int i = 1; i <= 700; i++) {
		r = mk(i, i, 1.0, NAN);
		gw_hist_push(h, &r);
	}
	struct gw_hist_rec x;
	ck_assert(gw_hist_at(h, 0, &x));
	ck_assert_int_eq(x.step, 700);
	ck_assert(gw_hist_at(h, GW_RING_CAP - 1, &x));
	ck_assert_int_eq(x.step, 700 - GW_RING_CAP + 1);
	ck_assert(!gw_hist_at(h, GW_RING_CAP, &x));       /* only the last 512 stand */
	struct gw_win w = gw_hist_recent(h, GW_COL_LOSS, 1000);
	ck_assert_uint_eq(gw_win_len(&w), GW_RING_CAP);
	ck_assert_uint_gt(w.nb, 0);                        /* the wrap: two spans */
	for (size_t i = 0; i < GW_RING_CAP; i++)
		ck_assert_double_eq(gw_win_at(&w, i), 700.0 - GW_RING_CAP + 1 + (double)i);
	double copy[GW_RING_CAP];
	gw_win_copy(&w, copy);
	ck_assert_double_eq(copy[GW_RING_CAP - 1], 700.0);
	/* the lr column is NaN where a line had none */
	w = gw_hist_recent(h, GW_COL_LR, 3);
	ck_assert(isnan(gw_win_at(&w, 2)));
	del_hist(h);
}
END_TEST

START_TEST(valid_ring_skips_invalid_records)
{
	struct gw_hist *h = new_hist();
	struct gw_rec r;
	/* steps 1..10; 3 has a NaN loss, 5 a zero grad norm, 7 no grad norm */
	for (int i = 1; i <= 10; i++) {
		double loss = i == 3 ? NAN : 2.0 * i, gn = i == 5 ? 0.0 : 1.0 + i;
		r = mk(i, loss, i == 7 ? NAN : gn, 0.1);
		if (i == 3)
			r.present |= 1u << GW_ROLE_LOSS;   /* present, but NaN */
		gw_hist_push(h, &r);
	}
	int64_t want[] = {1, 2, 4, 6, 8, 9, 10};
	struct gw_win w = gw_hist_valid(h, GW_V_LOSS, 100, 0);
	ck_assert_uint_eq(gw_win_len(&w), 7);
	for (size_t i = 0; i < 7; i++) {
		ck_assert_double_eq(gw_win_at(&w, i), 2.0 * (double)want[i]);
		ck_assert_int_eq(gw_hist_valid_step(h, 100, 0, i), want[i]);
	}
	ck_assert_int_eq(gw_hist_valid_step(h, 100, 0, 7), -1);
	/* skip the 2 newest, take 3: steps 4, 6, 8; logs cached */
	w = gw_hist_valid(h, GW_V_LOG_GRAD_NORM, 3, 2);
	ck_assert_uint_eq(gw_win_len(&w), 3);
	ck_assert_double_eq_tol(gw_win_at(&w, 0), log(5.0), 1e-15);
	ck_assert_int_eq(gw_hist_valid_step(h, 3, 2, 2), 8);
	double loss[8], gn[8], lr[8];
	int64_t step[8];
	ck_assert_uint_eq(gw_hist_last_valid(h, 8, 0, loss, gn, lr, step), 7);
	ck_assert_int_eq(step[6], 10);
	ck_assert_double_eq(gn[6], 11.0);
	ck_assert_double_eq(lr[0], 0.1);
	w = gw_hist_valid(h, GW_V_LOSS, 5, 7);                 /* skip everything */
	ck_assert_uint_eq(gw_win_len(&w), 0);
	struct gw_hist_rec x;
	ck_assert(gw_hist_at(h, 3, &x));
	ck_assert_int_eq(x.step, 7);
	ck_assert(!x.valid);
	del_hist(h);
}
END_TEST

START_TEST(merge_changes_validity)
{
	struct gw_hist *h = new_hist();
	struct gw_rec r = mk(1, 3.0, 1.5, NAN);
	gw_hist_push(h, &r);
	r = mk(2, 2.0, NAN, NAN);            /* step 2's loss line ... */
	gw_hist_push(h, &r);
	struct gw_win w = gw_hist_valid(h, GW_V_LOSS, 10, 0);
	ck_assert_uint_eq(gw_win_len(&w), 1);              /* no grad norm yet */
	r = mk(2, NAN, 0.5, 0.01);           /* ... and its grad norm line */
	gw_hist_merge_last(h, &r);
	w = gw_hist_valid(h, GW_V_LOG_LOSS, 10, 0);
	ck_assert_uint_eq(gw_win_len(&w), 2);
	ck_assert_double_eq_tol(gw_win_at(&w, 1), log(2.0), 1e-15);
	struct gw_hist_rec x;
	gw_hist_at(h, 0, &x);
	ck_assert(x.valid);
	ck_assert_double_eq(x.lr, 0.01);
	/* a later line of the step makes it invalid again: it leaves the ring */
	r = mk(2, NAN, NAN, NAN);
	r.present = 1u << GW_ROLE_GRAD_NORM;
	r.v[GW_ROLE_GRAD_NORM] = INFINITY;
	gw_hist_merge_last(h, &r);
	w = gw_hist_valid(h, GW_V_LOSS, 10, 0);
	ck_assert_uint_eq(gw_win_len(&w), 1);
	ck_assert_double_eq(gw_win_at(&w, 0), 3.0);
	del_hist(h);
}
END_TEST

START_TEST(cut_makes_the_replay_copy)
{
	struct gw_hist *h = new_hist();
	struct gw_rec r;
	for (int i = 1; i <= 600; i++) {
		r = mk(i, i, 1.0, 1e-3);
		gw_hist_push(h, &r);
	}
	/* no record after the checkpoint: nothing leaves, T = S */
	ck_assert_int_eq(gw_hist_cut(h, 600), 600);
	ck_assert_uint_eq(gw_hist_replay_count(h), 0);
	/* 300 records after S = 300: they leave the timeline, the first 256
	 * of them (301..556, replayed first) are kept */
	ck_assert_int_eq(gw_hist_cut(h, 300), 600);
	ck_assert_uint_eq(gw_hist_replay_count(h), GW_REPLAY_CAP);
	ck_assert_ptr_nonnull(gw_hist_replayed(h, 301));
	ck_assert_double_eq(gw_hist_replayed(h, 556)->loss, 556.0);
	ck_assert_ptr_null(gw_hist_replayed(h, 557));
	ck_assert_ptr_null(gw_hist_replayed(h, 300));
	struct gw_hist_rec x;
	gw_hist_at(h, 0, &x);
	ck_assert_int_eq(x.step, 300);
	ck_assert_int_eq(gw_hist_valid_step(h, 1, 0, 0), 300);
	struct gw_win w = gw_hist_valid(h, GW_V_LOSS, 1000, 0);
	ck_assert_uint_eq(gw_win_len(&w), 300 - (600 - GW_RING_CAP));
	/* the new process continues the timeline after S */
	r = mk(301, 1000.0, 1.0, 1e-3);
	gw_hist_push(h, &r);
	gw_hist_at(h, 0, &x);
	ck_assert_double_eq(x.loss, 1000.0);
	ck_assert_double_eq(gw_hist_replayed(h, 301)->loss, 301.0);
	gw_hist_end_replay(h);
	ck_assert_uint_eq(gw_hist_replay_count(h), 0);
	ck_assert_ptr_null(gw_hist_replayed(h, 301));
	del_hist(h);
}
END_TEST

START_TEST(replay_copy_is_sorted)
{
	/* steps that do not rise (a logger that went back within a segment):
	 * the copy is sorted by step so the lookup still finds each */
	struct gw_hist *h = new_hist();
	struct gw_rec r;
	int64_t steps[] = {10, 14, 12, 13, 11};
	for (int i = 0; i < 5; i++) {
		r = mk(steps[i], (double)steps[i], 1.0, NAN);
		gw_hist_push(h, &r);
	}
	ck_assert_int_eq(gw_hist_cut(h, 10), 11);   /* T: the newest popped */
	ck_assert_uint_eq(gw_hist_replay_count(h), 4);
	for (int64_t s = 11; s <= 14; s++)
		ck_assert_double_eq(gw_hist_replayed(h, s)->loss, (double)s);
	del_hist(h);
}
END_TEST

/* ---- model check ---------------------------------------------------------- */

struct mrec {
	int64_t step;
	double loss, gn, lr;
};

static bool mvalid(const struct mrec *m)
{
	return isfinite(m->loss) && isfinite(m->gn) && m->loss > 0 && m->gn > 0;
}

static uint64_t rng = 12345;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

static double rvalue(void)
{
	switch (rnd(12)) {
	case 0: return NAN;
	case 1: return 0.0;
	case 2: return INFINITY;
	case 3: return -1.0;
	default: return 0.5 + rnd(1000) / 100.0;
	}
}

/* The model: the whole timeline in an array (the history keeps its last
 * GW_RING_CAP), and the replay copy as the model computes it. */
static struct mrec model[20000];
static size_t mlen, mstart;
static struct mrec mrep[GW_REPLAY_CAP];
static size_t mnrep;

/* Every reader against the model; NULL if they agree, else what differs.
 * (Plain comparisons: a Check assertion per value would cost a syscall.) */
static const char *model_mismatch(const struct gw_hist *h)
{
	size_t n = mlen - mstart;
	struct gw_hist_rec x;
	for (size_t i = 0; i < n; i++) {
		const struct mrec *m = &model[mlen - 1 - i];
		if (!gw_hist_at(h, i, &x) || x.step != m->step || x.valid != mvalid(m))
			return "timeline record";
		if (x.valid && !(x.loss == m->loss && x.grad_norm == m->gn))
			return "timeline values";
	}
	if (gw_hist_at(h, n, &x))
		return "timeline longer than the model";
	/* the valid ring is exactly the valid records of the timeline */
	struct gw_win w = gw_hist_valid(h, GW_V_LOSS, GW_RING_CAP, 0);
	struct gw_win wl = gw_hist_valid(h, GW_V_LOG_GRAD_NORM, GW_RING_CAP, 0);
	size_t k = 0;
	for (size_t i = mstart; i < mlen; i++) {
		if (!mvalid(&model[i]))
			continue;
		if (k >= gw_win_len(&w) || gw_win_at(&w, k) != model[i].loss ||
		    gw_win_at(&wl, k) != log(model[i].gn) ||
		    gw_hist_valid_step(h, GW_RING_CAP, 0, k) != model[i].step)
			return "valid ring";
		k++;
	}
	if (k != gw_win_len(&w))
		return "valid ring longer than the model's";
	if (gw_hist_replay_count(h) != mnrep)
		return "replay count";
	for (size_t i = 0; i < mnrep; i++) {
		const struct gw_replayed *p = gw_hist_replayed(h, mrep[i].step);
		if (!p || p->step != mrep[i].step || p->valid != mvalid(&mrep[i]))
			return "replay copy";
	}
	return NULL;
}

START_TEST(model_check)
{
	struct gw_hist *h = new_hist();
	int64_t step = 0;
	unsigned big_cuts = 0;
	mlen = mstart = mnrep = 0;
	for (int op = 0; op < 12000; op++) {
		unsigned what = rnd(1000);
		if (what < 900 || mlen == mstart) {          /* a new record */
			step += 1 + (int64_t)rnd(2);
			struct mrec m = {step, rvalue(), rvalue(), rnd(3) ? 1e-3 : NAN};
			struct gw_rec r = mk(m.step, NAN, NAN, m.lr);
			r.present |= 1u << GW_ROLE_LOSS | 1u << GW_ROLE_GRAD_NORM;
			r.v[GW_ROLE_LOSS] = m.loss;
			r.v[GW_ROLE_GRAD_NORM] = m.gn;
			gw_hist_push(h, &r);
			ck_assert_uint_lt(mlen, sizeof(model) / sizeof(model[0]));
			model[mlen++] = m;
			if (mlen - mstart > GW_RING_CAP)
				mstart++;
		} else if (what < 980) {                      /* a later line of the step */
			struct mrec *m = &model[mlen - 1];
			struct gw_rec r = mk(m->step, NAN, NAN, NAN);
			if (rnd(2)) {
				m->loss = rvalue();
				r.present |= 1u << GW_ROLE_LOSS;
				r.v[GW_ROLE_LOSS] = m->loss;
			} else {
				m->gn = rvalue();
				r.present |= 1u << GW_ROLE_GRAD_NORM;
				r.v[GW_ROLE_GRAD_NORM] = m->gn;
			}
			gw_hist_merge_last(h, &r);
		} else {                                      /* a restart from S */
			int64_t S = step - (int64_t)(rnd(10) ? rnd(40) : rnd(600));
			size_t popped = 0;
			while (popped < mlen - mstart && model[mlen - 1 - popped].step > S)
				popped++;
			int64_t T = popped ? model[mlen - 1].step : S;
			mnrep = popped < GW_REPLAY_CAP ? popped : GW_REPLAY_CAP;
			for (size_t j = 0; j < mnrep; j++)
				mrep[j] = model[mlen - popped + j];
			mlen -= popped;
			big_cuts += popped > GW_REPLAY_CAP;
			ck_assert_int_eq(gw_hist_cut(h, S), T);
			step = S;
		}
		const char *bad = model_mismatch(h);
		ck_assert_msg(!bad, "operation %d: %s differs", op, bad);
	}
	/* the run went through the ring's wrap and copies that hit their cap */
	ck_assert_uint_gt(mstart, 2 * GW_RING_CAP);
	ck_assert_uint_gt(big_cuts, 3);
	del_hist(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hist");
	TCase *tc = tcase_create("hist");
	tcase_add_test(tc, windows_wrap_into_two_spans);
	tcase_add_test(tc, valid_ring_skips_invalid_records);
	tcase_add_test(tc, merge_changes_validity);
	tcase_add_test(tc, cut_makes_the_replay_copy);
	tcase_add_test(tc, replay_copy_is_sorted);
	tcase_add_test(tc, model_check);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
