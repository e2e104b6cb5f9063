/*
 * Unit tests of storage/series.c on a real SQLite file written by the real
 * store writer: every row comes back without downsampling, superseded
 * copies are flagged, a one-step spike, a NaN and an infinity survive
 * downsampling through the tiles and through a plain scan, the tiles the
 * writer keeps equal those the schema migration computes from the records,
 * paging returns every row once, and rows held in memory give the same
 * answer as the database.
 */
#include "gwcheck.h"
#include "gwsqlite.h"
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "series.h"
#include "tiles.h"
#include "store.h"
#include "util.h"

static char dir[64], path[96];

/* Run "r": segment 1 logs steps 0..2999, then the job restarts from a
 * checkpoint at 1999 and segment 2 logs 2000..4999 again.  Loss has a
 * spike of 100 at step 1234, NaN at 2100 (segment 1, superseded), grad
 * norm +Inf at 3500 (segment 2).  LR only on even steps. */
#define SPIKE_STEP 1234
#define NAN_STEP 2100
#define INF_STEP 3500
#define N_ROWS 6000

static double loss_at(int seg, int64_t s)
{
	if (seg == 1 && s == SPIKE_STEP)
		return 100.0;
	if (seg == 1 && s == NAN_STEP)
		return NAN;
	return 2.0 + 1.0 / (1.0 + (double)s) + 1e-6 * (double)((s * 7919) % 1000) + seg * 0.25;
}

static void put_row(struct gw_store *s, int seg, int64_t step, uint64_t line)
{
	struct gw_rec r = {.run = "r", .run_len = 1, .step = step, .ts = 1000.0 + (double)line,
	                   .present = 1u << GW_ROLE_LOSS | 1u << GW_ROLE_GRAD_NORM |
	                              1u << GW_ROLE_THROUGHPUT};
	r.v[GW_ROLE_LOSS] = loss_at(seg, step);
	r.v[GW_ROLE_GRAD_NORM] = seg == 2 && step == INF_STEP ? INFINITY
	                         : 1.0 + 1e-5 * (double)((step * 104729) % 10007);
	r.v[GW_ROLE_THROUGHPUT] = 5000.0 + 1e-3 * (double)((step * 31) % 9973) + seg;
	if (step % 2 == 0) {
		r.present |= 1u << GW_ROLE_LR;
		r.v[GW_ROLE_LR] = 3e-4 * (1.0 + 1e-6 * (double)step);
	}
	gw_store_put_record(s, &r, seg, line, 5.0);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gwseriesXXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.db", dir);
	/* small commits, so tiles are merged across many of them */
	struct gw_store_opts o = {.path = path, .commit_interval_ms = 5, .commit_max_records = 333};
	struct gw_store *s = NULL;
	char err[256];
	ck_assert_msg(gw_store_open(&o, &s, err, sizeof(err)) == 0, "%s", err);
	gw_store_put_segment(s, "r", 1, "start", 0, -1, 1, 1000, 1.0);
	uint64_t line = 1;
	for (int64_t i = 0; i < 3000; i++)
		put_row(s, 1, i, line++);
	gw_store_put_segment(s, "r", 2, "rewind", 2000, 1999, line, 4000, 2.0);
	for (int64_t i = 2000; i < 5000; i++)
		put_row(s, 2, i, line++);
	ck_assert_int_eq(gw_store_close(s), 0);
}

static void teardown(void)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static json_t *series(const struct gw_series_query *q)
{
	json_t *o = NULL;
	char err[256] = "";
	int rc = gw_store_read_series(path, q, &o, err, sizeof(err));
	ck_assert_msg(rc == 0, "read_series: %d %s", rc, err);
	return o;
}

static size_t len(json_t *o, const char *k)
{
	return json_array_size(json_object_get(o, k));
}

static json_t *at(json_t *o, const char *k, size_t i)
{
	return json_array_get(json_object_get(o, k), i);
}

/* Index of the first point with this segment and step, or -1. */
static long find(json_t *o, int64_t seg, int64_t step)
{
	for (size_t i = 0; i < len(o, "step"); i++)
		if (json_integer_value(at(o, "step", i)) == step &&
		    json_integer_value(at(o, "segment", i)) == seg)
			return (long)i;
	return -1;
}

static void check_sorted_and_shaped(json_t *o)
{
	size_t n = len(o, "step");
	static const char *const cols[] = {"segment", "superseded", "loss", "grad_norm", "lr",
	                                   "throughput", "nonfinite"};
	for (size_t c = 0; c < GW_ARRAY_SIZE(cols); c++)
		ck_assert_uint_eq(len(o, cols[c]), n);
	for (size_t i = 1; i < n; i++)
		ck_assert_int_le(json_integer_value(at(o, "step", i - 1)), json_integer_value(at(o, "step", i)));
}

/* The spike, the NaN and the Inf, each with its flags. */
static void check_extremes(json_t *o)
{
	long i = find(o, 1, SPIKE_STEP);
	ck_assert_int_ge(i, 0);
	ck_assert_double_eq(json_real_value(at(o, "loss", (size_t)i)), 100.0);
	ck_assert_int_eq(json_integer_value(at(o, "superseded", (size_t)i)), 0);
	i = find(o, 1, NAN_STEP);
	ck_assert_int_ge(i, 0);
	ck_assert(json_is_null(at(o, "loss", (size_t)i)));
	ck_assert_int_eq(json_integer_value(at(o, "nonfinite", (size_t)i)), 1 << GW_ROLE_LOSS);
	ck_assert_int_eq(json_integer_value(at(o, "superseded", (size_t)i)), 1);
	i = find(o, 2, INF_STEP);
	ck_assert_int_ge(i, 0);
	ck_assert(json_is_null(at(o, "grad_norm", (size_t)i)));
	ck_assert_int_eq(json_integer_value(at(o, "nonfinite", (size_t)i)), 1 << GW_ROLE_GRAD_NORM);
}

START_TEST(every_row_and_superseded)
{
	struct gw_series_query q = {.run = "r", .max_points = 0};
	json_t *o = series(&q);
	ck_assert_uint_eq(len(o, "step"), N_ROWS);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "total")), N_ROWS);
	ck_assert(json_is_false(json_object_get(o, "downsampled")));
	size_t sup = 0;
	for (size_t i = 0; i < N_ROWS; i++) {
		int64_t seg = json_integer_value(at(o, "segment", i));
		int64_t step = json_integer_value(at(o, "step", i));
		bool s = json_integer_value(at(o, "superseded", i)) != 0;
		ck_assert_int_eq(s, seg == 1 && step >= 2000);
		sup += s;
		/* max_points 0 keeps the recorded order: segment, then step */
		if (i)
			ck_assert_int_ge(seg, json_integer_value(at(o, "segment", i - 1)));
	}
	ck_assert_uint_eq(sup, 1000);
	json_t *segs = json_object_get(o, "segments");
	ck_assert_uint_eq(json_array_size(segs), 2);
	json_t *s1 = json_array_get(segs, 0), *s2 = json_array_get(segs, 1);
	ck_assert_int_eq(json_integer_value(json_object_get(s1, "superseded_from")), 2000);
	ck_assert(json_is_null(json_object_get(s2, "superseded_from")));
	ck_assert_str_eq(json_string_value(json_object_get(s2, "reason")), "rewind");
	ck_assert_int_eq(json_integer_value(json_object_get(s2, "restart_step")), 1999);
	ck_assert_int_eq(json_integer_value(json_object_get(s1, "records")), 3000);
	ck_assert_int_eq(json_integer_value(json_object_get(s2, "max_step")), 4999);
	check_extremes(o);
	json_decref(o);
}
END_TEST

/* The first and the last row of every piece (segment 1 current up to
 * 1999, its superseded copy 2000..2999, segment 2 from 2000) within
 * [from, to]: a chart starts and ends where the run does, and a streaming
 * run's latest point is drawn. */
static void check_piece_ends(json_t *o, int64_t from, int64_t to)
{
	static const struct { int64_t seg, step; } ends[] = {{1, -1}, {1, 1999}, {1, 2000},
	                                                     {1, 2999}, {2, 2000}, {2, -2}};
	for (size_t i = 0; i < GW_ARRAY_SIZE(ends); i++) {
		int64_t step = ends[i].step == -1 ? from : ends[i].step == -2 ? to : ends[i].step;
		ck_assert_msg(find(o, ends[i].seg, step) >= 0, "segment %lld step %lld is not drawn",
		              (long long)ends[i].seg, (long long)step);
	}
}

static void check_downsampled(size_t max_points)
{
	struct gw_series_query q = {.run = "r", .max_points = max_points};
	json_t *o = series(&q);
	check_sorted_and_shaped(o);
	size_t n = len(o, "step");
	ck_assert(json_is_true(json_object_get(o, "downsampled")));
	ck_assert_int_eq(json_integer_value(json_object_get(o, "total")), N_ROWS);
	/* at most 7 rows per bucket and copy; about max_points in all */
	ck_assert_uint_le(n, max_points * 7 / 5 + 40);
	ck_assert_uint_ge(n, max_points / 3);
	check_extremes(o);
	/* LR (logged on even steps only) is kept in every bucket */
	size_t lr = 0;
	for (size_t i = 0; i < n; i++)
		lr += !json_is_null(at(o, "lr", i));
	ck_assert_uint_ge(lr, max_points / 5);
	check_piece_ends(o, 0, 4999);
	json_decref(o);
	/* a range whose ends fall on tile boundaries: its first and last rows
	 * are inside whole tiles, and still drawn */
	q.has_from = q.has_to = true;
	q.from = 256;
	q.to = 4863;
	o = series(&q);
	check_piece_ends(o, 256, 4863);
	json_decref(o);
}

START_TEST(downsampled_keeps_extremes_tiles)
{
	/* 50 points: 10 buckets of 500 steps, wider than a tile: the extremes
	 * come from record_tiles */
	check_downsampled(50);
	/* (they do: move the spike's step in its tile and it is not drawn) */
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "UPDATE record_tiles SET lmax_s = lmax_s + 1 WHERE lmax = 100",
	                              NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	struct gw_series_query q = {.run = "r", .max_points = 50};
	json_t *o = series(&q);
	ck_assert_int_lt(find(o, 1, SPIKE_STEP), 0);
	ck_assert_int_ge(find(o, 1, SPIKE_STEP + 1), 0);
	json_decref(o);
}
END_TEST

START_TEST(downsampled_keeps_extremes_scan)
{
	/* 2000 points: narrow buckets, a scan of the rows */
	check_downsampled(2000);
	/* and without record_tiles at all (a schema-2 database) */
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "DROP TABLE record_tiles", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	check_downsampled(50);
}
END_TEST

START_TEST(range_and_errors)
{
	struct gw_series_query q = {.run = "r", .max_points = 100, .has_from = true, .from = 2990,
	                            .has_to = true, .to = 3009};
	json_t *o = series(&q);
	/* 20 steps, both copies of 2990..2999: 30 rows, not downsampled */
	ck_assert_uint_eq(len(o, "step"), 30);
	ck_assert(json_is_false(json_object_get(o, "downsampled")));
	check_sorted_and_shaped(o);
	json_decref(o);
	char err[256];
	q.from = 10;
	q.to = 5;
	ck_assert_int_eq(gw_store_read_series(path, &q, &o, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "from"));
	struct gw_series_query u = {.run = "nope", .max_points = 10};
	ck_assert_int_eq(gw_store_read_series(path, &u, &o, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "nope"));
	struct gw_series_query big = {.run = "r", .max_points = GW_SERIES_MAX_POINTS + 1};
	ck_assert_int_eq(gw_store_read_series(path, &big, &o, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(paging_returns_every_row_once)
{
	struct gw_series_query q = {.run = "r", .max_points = 0, .limit = 701, .extra = true};
	size_t got = 0, pages = 0;
	int64_t last_seg = 0, last_step = -1;
	for (;;) {
		json_t *o = series(&q);
		size_t n = len(o, "step");
		ck_assert_uint_le(n, 701);
		for (size_t i = 0; i < n; i++) {
			int64_t seg = json_integer_value(at(o, "segment", i));
			int64_t step = json_integer_value(at(o, "step", i));
			ck_assert(seg > last_seg || (seg == last_seg && step > last_step));
			last_seg = seg;
			last_step = step;
			/* extra=1: ts and the input line */
			ck_assert_int_eq(json_integer_value(at(o, "line", i)), (json_int_t)(got + i + 1));
			ck_assert(json_is_real(at(o, "ts", i)));
		}
		got += n;
		pages++;
		const char *next = json_string_value(json_object_get(o, "next"));
		if (!next) {
			json_decref(o);
			break;
		}
		long long cs, ct;
		ck_assert_int_eq(sscanf(next, "%lld:%lld", &cs, &ct), 2);
		q.has_cursor = true;
		q.cursor_seg = cs;
		q.cursor_step = ct;
		json_decref(o);
	}
	ck_assert_uint_eq(got, N_ROWS);
	ck_assert_uint_eq(pages, (N_ROWS + 700) / 701);
}
END_TEST

/* The tiles the writer merged over many commits are the tiles the
 * migration computes from the rows. */
START_TEST(writer_tiles_equal_migration)
{
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "ALTER TABLE record_tiles RENAME TO w", NULL, NULL, NULL), SQLITE_OK);
	char *e = NULL;
	int rc = sqlite3_exec(db, GW_SERIES_TILES_MIGRATION, NULL, NULL, &e);
	ck_assert_msg(rc == SQLITE_OK, "%s", e ? e : "");
	sqlite3_stmt *st;
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM w),"
	                                        " (SELECT count(*) FROM (SELECT * FROM w EXCEPT SELECT * FROM record_tiles)),"
	                                        " (SELECT count(*) FROM (SELECT * FROM record_tiles EXCEPT SELECT * FROM w))",
	                                    -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	/* 3000 steps in segment 1 (0..2999) and 3000 in segment 2 (2000..4999) */
	ck_assert_int_eq(sqlite3_column_int(st, 0), 12 + 13);
	ck_assert_int_eq(sqlite3_column_int(st, 1), 0);
	ck_assert_int_eq(sqlite3_column_int(st, 2), 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
}
END_TEST

/* gw_series_from_rows (gradwatch report) answers as the database does. */
START_TEST(memory_equals_database)
{
	struct gw_series_row *rows = calloc(N_ROWS, sizeof(*rows));
	size_t n = 0;
	for (int seg = 1; seg <= 2; seg++)
		for (int64_t s = seg == 1 ? 0 : 2000; s < (seg == 1 ? 3000 : 5000); s++) {
			struct gw_series_row *r = &rows[n++];
			r->step = s;
			r->seg = seg;
			r->v[GW_ROLE_LOSS] = loss_at(seg, s);
			r->v[GW_ROLE_GRAD_NORM] = seg == 2 && s == INF_STEP ? NAN : 1.0 + 1e-5 * (double)((s * 104729) % 10007);
			r->nf = (isnan(r->v[0]) ? 1u : 0u) | (seg == 2 && s == INF_STEP ? 2u : 0u);
			r->v[GW_ROLE_LR] = s % 2 == 0 ? 3e-4 * (1.0 + 1e-6 * (double)s) : NAN;
			r->v[GW_ROLE_THROUGHPUT] = 5000.0 + 1e-3 * (double)((s * 31) % 9973) + seg;
		}
	for (int pass = 0; pass < 2; pass++) {
		size_t mp = pass ? 2000 : 0;
		struct gw_series_seg segs[2] = {{.seg = 1, .reason = "start", .first_step = 0, .restart_step = -1},
		                                {.seg = 2, .reason = "rewind", .first_step = 2000, .restart_step = 1999}};
		json_t *m = gw_series_from_rows("r", rows, n, segs, 2, mp);
		ck_assert_ptr_nonnull(m);
		struct gw_series_query q = {.run = "r", .max_points = mp};
		json_t *d = series(&q);
		if (!pass) {
			/* the database keeps (segment, step) order without downsampling;
			 * the memory path sorts by step: compare as sets via sorting */
			ck_assert_uint_eq(len(m, "step"), len(d, "step"));
		} else {
			static const char *const keys[] = {"step", "segment", "superseded", "loss", "grad_norm",
			                                   "lr", "throughput", "nonfinite", "total", "downsampled",
			                                   "segments"};
			for (size_t k = 0; k < GW_ARRAY_SIZE(keys); k++)
				ck_assert_msg(json_equal(json_object_get(m, keys[k]), json_object_get(d, keys[k])),
				              "%s differs", keys[k]);
		}
		check_extremes(m);
		json_decref(m);
		json_decref(d);
	}
	/* a run with no rows (qsort was handed a NULL base: undefined,
	 * clang's nonnull-attribute check) */
	struct gw_series_seg seg1 = {.seg = 1, .reason = "start", .first_step = 0, .restart_step = -1};
	json_t *empty = gw_series_from_rows("r", NULL, 0, &seg1, 1, 0);
	ck_assert_ptr_nonnull(empty);
	ck_assert_uint_eq(len(empty, "step"), 0);
	json_decref(empty);
	free(rows);
}
END_TEST

/* A deleted run takes its tiles along: the next run, which gets the same
 * id from SQLite, is drawn and counted from its own records only, whether
 * the deletion committed before it or in the same transaction. */
/* A segment whose row cannot be read makes the query fail; it was drawn
 * as reason "?" with no restart step, as if it had none. */
START_TEST(unreadable_segments_fail)
{
	gw_test_corrupt_table(path, "segments");
	struct gw_series_query q = {.run = "r", .max_points = 0};
	json_t *o = NULL;
	char err[256] = "";
	ck_assert_int_lt(gw_store_read_series(path, &q, &o, err, sizeof(err)), 0);
	ck_assert_ptr_null(o);
	ck_assert_msg(strstr(err, "segments"), "%s", err);
}
END_TEST

START_TEST(a_deleted_runs_tiles_are_gone)
{
	for (int same_batch = 0; same_batch < 2; same_batch++) {
		char p2[128];
		snprintf(p2, sizeof(p2), "%s/del%d.db", dir, same_batch);
		struct gw_store_opts o = {.path = p2, .commit_interval_ms = 5};
		struct gw_store *s = NULL;
		char err[256];
		ck_assert_msg(gw_store_open(&o, &s, err, sizeof(err)) == 0, "%s", err);
		struct gw_rec r = {.present = 1u << GW_ROLE_LOSS};
		if (same_batch)
			gw_store_hold(s);
		gw_store_put_segment(s, "old", 1, "start", 0, -1, 1, 1000, 1.0);
		for (int64_t i = 0; i < 3000; i++) {
			r.run = "old";
			r.run_len = 3;
			r.step = i;
			r.v[GW_ROLE_LOSS] = i == 700 ? 1000.0 : 1.0;   /* a spike only "old" has */
			gw_store_put_record(s, &r, 1, (uint64_t)i + 1, 1.0);
		}
		if (!same_batch) {
			ck_assert_int_eq(gw_store_close(s), 0);
			s = NULL;
			ck_assert_msg(gw_store_open(&o, &s, err, sizeof(err)) == 0, "%s", err);
		}
		gw_store_delete_run(s, "old");
		gw_store_put_segment(s, "new", 1, "start", 0, -1, 1, 1000, 2.0);
		for (int64_t i = 0; i < 2000; i++) {
			r.run = "new";
			r.run_len = 3;
			r.step = i;
			r.v[GW_ROLE_LOSS] = 2.0 + (i == 1500 ? 5.0 : 0.0);
			gw_store_put_record(s, &r, 1, (uint64_t)i + 1, 2.0);
		}
		if (same_batch)
			gw_store_release(s);
		ck_assert_int_eq(gw_store_close(s), 0);
		/* the new run reused the old one's id (what made stale tiles its own) */
		sqlite3 *db;
		ck_assert_int_eq(sqlite3_open(p2, &db), SQLITE_OK);
		sqlite3_stmt *st;
		ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT id FROM runs WHERE name = 'new'", -1, &st, NULL),
		                 SQLITE_OK);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_int_eq(sqlite3_column_int64(st, 0), 1);
		sqlite3_finalize(st);
		sqlite3_close(db);
		json_t *out = NULL;
		struct gw_series_query q = {.run = "new", .max_points = 50};
		ck_assert_int_eq(gw_store_read_series(p2, &q, &out, err, sizeof(err)), 0);
		ck_assert_int_eq(json_integer_value(json_object_get(out, "total")), 2000);
		json_t *seg0 = json_array_get(json_object_get(out, "segments"), 0);
		ck_assert_int_eq(json_integer_value(json_object_get(seg0, "records")), 2000);
		for (size_t i = 0; i < len(out, "step"); i++)
			ck_assert_double_le(json_real_value(at(out, "loss", i)), 7.0);
		long spike = -1;
		for (size_t i = 0; i < len(out, "step"); i++)
			if (json_integer_value(at(out, "step", i)) == 1500)
				spike = (long)i;
		ck_assert_int_ge(spike, 0);   /* its own spike is drawn */
		json_decref(out);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("series");
	TCase *tc = tcase_create("series");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, every_row_and_superseded);
	tcase_add_test(tc, downsampled_keeps_extremes_tiles);
	tcase_add_test(tc, downsampled_keeps_extremes_scan);
	tcase_add_test(tc, range_and_errors);
	tcase_add_test(tc, paging_returns_every_row_once);
	tcase_add_test(tc, writer_tiles_equal_migration);
	tcase_add_test(tc, memory_equals_database);
	tcase_add_test(tc, a_deleted_runs_tiles_are_gone);
	tcase_add_test(tc, unreadable_segments_fail);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
