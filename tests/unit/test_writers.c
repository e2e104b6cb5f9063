/*
 * Unit tests of one run written by several processes (detectors/engine.c,
 * engine.h "Ranks" and "Interleaved writers"): lines of ranks other than 0
 * never open segments or reach the detectors and tell which rank is behind;
 * a log's rank labels make the first printing rank the run's; lines
 * without a rank from four writers are recognised as interleaved
 * after a few repeats and then folded, while real restarts (a rewind to a
 * checkpoint, a crash loop back to the same step, a repeat of the last step
 * after a crash, a rewind after a wall-clock gap) stay segments.
 */
#include "gwcheck.h"
#include <math.h>
#include <string.h>

#include "engine.h"
#include "engine_opts.h"
#include "reader_impl.h"

struct seen {
	int segs;
	enum gw_seg_reason reason[64];
	int alerts;
	int writers;
	int64_t writers_step;
};

static void on_seg(void *d, const struct gw_segment_info *si)
{
	struct seen *s = d;
	if (s->segs < 64)
		s->reason[s->segs] = si->reason;
	s->segs++;
}

static void on_alert(void *d, const struct gw_alert *a)
{
	(void)a;
	((struct seen *)d)->alerts++;
}

static void on_writers(void *d, const struct gw_writers_info *w)
{
	struct seen *s = d;
	s->writers++;
	s->writers_step = w->step;
}

static struct gw_engine *mk(struct seen *s)
{
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
	struct gw_engine_hooks h = {.data = s, .on_alert = on_alert, .on_segment = on_seg,
	                            .on_writers = on_writers};
	return gw_engine_new(&o, &h);
}

/* rank < 0: a line without "rank" */
static void rec(struct gw_engine *e, int64_t step, double ts, double loss, int rank,
                uint64_t line)
{
	struct gw_rec r = {.run = "ddp", .run_len = 3, .step = step, .ts = ts,
	                   .present = 1u << GW_ROLE_LOSS | 1u << GW_ROLE_GRAD_NORM,
	                   .has_rank = rank >= 0, .rank = rank >= 0 ? (uint32_t)rank : 0};
	r.v[GW_ROLE_LOSS] = loss;
	r.v[GW_ROLE_GRAD_NORM] = 1.0;
	ck_assert_int_eq(gw_engine_feed(e, &r, line, ts, NULL), 0);
}

static struct gw_run_info info(struct gw_engine *e)
{
	struct gw_run_info ri;
	ck_assert_int_eq(gw_engine_run_info(e, "ddp", &ri), 0);
	return ri;
}

/* The new-user probe: 4 ranks each sending steps 1..399 with a rank field:
 * one segment, rank 0's records only reach the detectors. */
START_TEST(ranked_lines_of_other_ranks_stay_out)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s);
	uint64_t line = 0;
	for (int step = 1; step <= 399; step++)
		for (int k = 0; k < 4; k++)
			if (k != 2 || step <= 350)   /* rank 2 hangs at 350 */
				rec(e, step, 1000 + step, 2.0 + k, k, ++line);
	ck_assert_int_eq(s.segs, 1);
	struct gw_run_info ri = info(e);
	ck_assert_int_eq(ri.seg, 1);
	ck_assert_int_eq(ri.records, 399);
	ck_assert_uint_eq(ri.rank_lines, 3 * 399 - 49);
	ck_assert_uint_eq(ri.ranks_seen, 4);
	ck_assert_uint_eq(ri.rank_max, 3);
	ck_assert_int_eq(ri.behind_rank, 2);
	ck_assert_int_eq(ri.behind_step, 350);
	ck_assert_double_eq(ri.behind_wall, 1350);
	ck_assert(!ri.interleaved);
	ck_assert_double_eq(ri.last[GW_ROLE_LOSS], 2.0);   /* rank 0's */
	ck_assert_int_eq(s.writers, 0);
	/* rank 0 restarting from a checkpoint is still a restart */
	rec(e, 301, 5000, 2.0, 0, ++line);
	ck_assert_int_eq(s.segs, 2);
	ck_assert_int_eq(s.reason[1], GW_SEG_REWIND);
	rec(e, 301, 5000, 2.5, 1, ++line);
	ck_assert_int_eq(s.segs, 2);
	gw_engine_free(e);
}
END_TEST

static void interleaved(double ts0)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s);
	uint64_t line = 0;
	for (int step = 1; step <= 399; step++)
		for (int k = 0; k < 4; k++)
			rec(e, step, isnan(ts0) ? NAN : ts0 + step + 0.01 * k, 2.0 + 0.01 * k, -1, ++line);
	/* without ts, the second step tells them from a crash loop */
	ck_assert_msg(s.segs <= (isnan(ts0) ? 4 : 3), "%d segments", s.segs);
	ck_assert_int_eq(s.writers, 1);
	struct gw_run_info ri = info(e);
	ck_assert(ri.interleaved);
	ck_assert_int_le(ri.iw_step, 2);
	ck_assert_int_eq(ri.last_step, 399);
	ck_assert_int_eq(ri.records, 4 * 399);
	ck_assert_uint_ge(ri.folded, 4 * 399 - 399 - 3);
	ck_assert(gw_engine_kept_apart(e));   /* the last line: writer 4's copy of 399 */
	/* a real restart: every writer back to the checkpoint at 300 */
	int before = s.segs;
	for (int step = 301; step <= 320; step++)
		for (int k = 0; k < 4; k++)
			rec(e, step, isnan(ts0) ? NAN : ts0 + 600 + step + 0.01 * k, 2.0, -1, ++line);
	ck_assert_int_eq(s.segs, before + 1);
	ck_assert_int_eq(s.reason[before], GW_SEG_REWIND);
	ck_assert_int_eq(s.writers, 1);
	gw_engine_free(e);
}

/* The same without a rank field, with and without ts */
START_TEST(interleaved_writers_are_recognised)
{
	interleaved(NAN);
	interleaved(1.7e9);
}
END_TEST

/* Restarts that must stay restarts */
START_TEST(restarts_stay_segments)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s);
	uint64_t line = 0;
	for (int step = 1; step <= 100; step++)
		rec(e, step, NAN, 2.0, -1, ++line);
	/* a crash loop: back to the checkpoint at 80, one step, again, ... */
	for (int i = 0; i < 6; i++) {
		rec(e, 81, NAN, 2.0, -1, ++line);
		rec(e, 82, NAN, 2.0, -1, ++line);
	}
	ck_assert_int_eq(s.segs, 7);
	/* a crash right after the last step logged, and that step again */
	for (int step = 83; step <= 150; step++)
		rec(e, step, NAN, 2.0, -1, ++line);
	rec(e, 150, NAN, 2.0, -1, ++line);
	ck_assert_int_eq(s.segs, 8);
	ck_assert(!info(e).interleaved);
	ck_assert_int_eq(s.writers, 0);
	gw_engine_free(e);

	/* shallow rewinds a few seconds late each (ts): restarts, not writers */
	struct seen s2 = {0};
	e = mk(&s2);
	line = 0;
	double ts = 1000;
	for (int round = 0; round < 6; round++) {
		for (int step = round * 3 + 1; step <= round * 3 + 4; step++)
			rec(e, step, ts += 1.0, 2.0, -1, ++line);
		ts += 30;   /* the restart takes 30 s */
	}
	ck_assert_int_eq(s2.segs, 6);
	ck_assert_int_eq(s2.writers, 0);
	gw_engine_free(e);
}
END_TEST

/* Every writer's "resumed" event: one segment once recognised (or with ts) */
START_TEST(repeated_resumed_event_is_one_segment)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s);
	json_t *a = json_pack("{s:i}", "checkpoint_step", 10);
	for (int k = 0; k < 4; k++) {
		struct gw_rec r = {.run = "ddp", .run_len = 3, .step = 11, .ts = 2000 + 0.1 * k,
		                   .event = "resumed", .attrs = a};
		ck_assert_int_eq(gw_engine_feed(e, &r, (uint64_t)k + 1, NAN, NULL), 0);
	}
	ck_assert_int_eq(s.segs, 1);
	ck_assert_uint_eq(info(e).folded, 3);
	json_decref(a);
	gw_engine_free(e);
}
END_TEST

/* Rank labels of a log (readers): the label of the first metric record is
 * the run's (Megatron prints from its last rank), events are the job's */
START_TEST(rank_labels)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s);
	uint64_t line = 0;
	for (int step = 1; step <= 50; step++)
		for (uint32_t k = 0; k < 3; k++) {
			uint32_t label = (k + 2) % 3;   /* rank 2 prints first */
			struct gw_rec r = {.run = "ddp", .run_len = 3, .step = step, .ts = NAN,
			                   .present = 1u << GW_ROLE_LOSS, .has_rank = true,
			                   .rank = label, .rank_label = true};
			r.v[GW_ROLE_LOSS] = 2.0;
			ck_assert_int_eq(gw_engine_feed(e, &r, ++line, NAN, NULL), 0);
			ck_assert(gw_engine_kept_apart(e) == (label != 2));
		}
	json_t *a = json_object();
	struct gw_rec ev = {.run = "ddp", .run_len = 3, .step = 50, .ts = NAN,
	                    .event = "checkpoint_saved", .attrs = a, .has_rank = true, .rank = 0,
	                    .rank_label = true};
	ck_assert_int_eq(gw_engine_feed(e, &ev, ++line, NAN, NULL), 0);
	ck_assert(!gw_engine_kept_apart(e));
	json_decref(a);
	ck_assert_int_eq(s.segs, 1);
	struct gw_run_info ri = info(e);
	ck_assert_int_eq(ri.label_rank, 2);
	ck_assert_uint_eq(ri.rank_lines, 100);
	ck_assert_int_eq(ri.records, 50);
	ck_assert_int_eq(ri.events, 1);
	/* a "rank" field is not a label: rank 0 is the primary there */
	rec(e, 51, NAN, 2.0, 2, ++line);
	ck_assert(gw_engine_kept_apart(e));
	rec(e, 51, NAN, 2.0, 0, ++line);
	ck_assert(!gw_engine_kept_apart(e));
	gw_engine_free(e);
}
END_TEST

/* The labels launchers put before every process's lines (reader.h "Rank
 * labels"), and lines of the formats that only look like one */
START_TEST(rank_label_patterns)
{
	static const struct {
		const char *line;
		size_t len;
		uint32_t rank;
	} cases[] = {
		{"[rank3]: step 1 | loss: 2.0", 9, 3},
		{"[rank12]:step 1", 9, 12},
		{"[default0]:step 1", 11, 0},
		{" 3: iteration 1/ 2 |", 4, 3},
		{"31:  [2026-08-18 03:14:52.592739] iteration", 5, 31},
		{"[2026-08-18 03:14:52] iteration 1/ 2", 0, 0},
		{"[INFO]: step 1", 0, 0},
		{"iter 425: loss nan", 0, 0},
		{"5317 train 3.41", 0, 0},
		{"5317: 3.41", 0, 0},     /* a bare "STEP: LOSS" line, not rank 5317's */
		{"31: 3.41 x", 4, 31},
		{"12:30:01 step 1", 0, 0},
		{"[rank3] step 1", 0, 0},
		{"99999999: x", 0, 0},
		{"[rank2000000]: x", 0, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t rank = 0;
		size_t k = gw__rd_label(cases[i].line, strlen(cases[i].line), &rank);
		ck_assert_msg(k == cases[i].len, "%s: %zu", cases[i].line, k);
		if (k)
			ck_assert_uint_eq(rank, cases[i].rank);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("writers");
	TCase *tc = tcase_create("writers");
	tcase_add_test(tc, ranked_lines_of_other_ranks_stay_out);
	tcase_add_test(tc, interleaved_writers_are_recognised);
	tcase_add_test(tc, restarts_stay_segments);
	tcase_add_test(tc, repeated_resumed_event_is_one_segment);
	tcase_add_test(tc, rank_labels);
	tcase_add_test(tc, rank_label_patterns);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
