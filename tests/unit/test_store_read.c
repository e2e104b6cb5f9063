/*
 * Unit tests of what the store reads back for a daemon's start (storage/
 * read.c, tail.c) on a real SQLite file: every run's position for seeding
 * (and its ending, kept until a line goes past it), a stored meta value
 * that cannot be read being an error, not "absent", and a run's tail read
 * on one reader connection for many runs.
 */
#include "gwcheck.h"
#include "gwsqlite.h"
#include "storefix.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>

struct positions {
	int n;
	int64_t seg, step;
	bool ended;
};

static void on_position(void *data, const struct gw_run_position *pos)
{
	struct positions *p = data;
	p->n++;
	p->seg = pos->seg;
	p->step = pos->last_step;
	p->ended = pos->ended;
}

/* A stored follow position that cannot be read is an error, not "none"
 * (follow would read the file again from byte 0: every line twice). */
START_TEST(meta_read_error)
{
	struct gw_store *s = open_store();
	wait_committed(s, gw_store_put_meta(s, "follow:/x", "{\"offset\":5}"));
	gw_store_close(s);
	char *val = NULL;
	ck_assert_int_eq(gw_store_read_meta(path, "follow:/x", &val), 0);
	ck_assert_str_eq(val, "{\"offset\":5}");
	free(val);
	gw_test_corrupt_table(path, "meta");
	val = NULL;
	ck_assert_int_lt(gw_store_read_meta(path, "follow:/x", &val), 0);
	ck_assert_ptr_null(val);
}
END_TEST

START_TEST(positions_for_seeding)
{
	struct gw_store *s = open_store();
	uint64_t seq = 0;
	for (int i = 1; i <= 10; i++) {
		struct gw_rec r = record("pos", i, 1.0, 1.0);
		seq = gw_store_put_record(s, &r, 3, (uint64_t)i, 0);
	}
	wait_committed(s, seq);
	gw_store_close(s);
	struct positions got = {0};
	char err[256];
	ck_assert_int_eq(gw_store_read_run_positions(path, on_position, &got, err, sizeof(err)), 0);
	ck_assert_int_eq(got.n, 1);
	ck_assert_int_eq(got.seg, 3);
	ck_assert_int_eq(got.step, 10);
	ck_assert(!got.ended);

	/* the runs table unreadable (its root page overwritten): an error
	 * naming the database, not 0 with no runs (the daemon then seeded
	 * nothing and said nothing) */
	gw_test_corrupt_table(path, "runs");
	memset(&got, 0, sizeof(got));
	err[0] = '\0';
	ck_assert_int_lt(gw_store_read_run_positions(path, on_position, &got, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, path) && strstr(err, "malformed"), "%s", err);
}
END_TEST

/* A run's ending is kept on its row, and tells only while no line went
 * past it: a record at or below its step in its segment leaves it ended;
 * a record past that step, or a new segment, means the run went on. */
static bool ended_now(void)
{
	struct positions got = {0};
	char err[256];
	ck_assert_int_eq(gw_store_read_run_positions(path, on_position, &got, err, sizeof(err)), 0);
	ck_assert_int_eq(got.n, 1);
	return got.ended;
}

START_TEST(run_end_kept_until_the_run_goes_on)
{
	struct gw_store *s = open_store();
	uint64_t seq = 0;
	for (int i = 1; i <= 10; i++) {
		struct gw_rec r = record("end", i, 1.0, 1.0);
		seq = gw_store_put_record(s, &r, 1, (uint64_t)i, 0);
	}
	wait_committed(s, seq);
	ck_assert(!ended_now());
	wait_committed(s, gw_store_put_run_end(s, "end", 1, 10, "file_rotated", 100.0));
	ck_assert(ended_now());
	ck_assert_int_eq(scalar("SELECT count(*) FROM runs WHERE ended_reason = 'file_rotated' "
	                        "AND ended_at = 100.0 AND ended_step = 10"), 1);
	struct gw_rec late = record("end", 9, 1.0, 1.0);   /* a late line: still ended */
	wait_committed(s, gw_store_put_record(s, &late, 1, 11, 0));
	ck_assert(ended_now());
	struct gw_rec on = record("end", 11, 1.0, 1.0);    /* past it: the run goes on */
	wait_committed(s, gw_store_put_record(s, &on, 1, 12, 0));
	ck_assert(!ended_now());
	wait_committed(s, gw_store_put_run_end(s, "end", 1, 11, "run_finished", 101.0));
	ck_assert(ended_now());
	struct gw_rec again = record("end", 1, 1.0, 1.0);  /* a restart: a new segment */
	wait_committed(s, gw_store_put_record(s, &again, 2, 13, 0));
	ck_assert(!ended_now());
	gw_store_close(s);
}
END_TEST

/* A run's tail read back: the lines in order, on one reader for many runs
 * as on a connection of its own, and a reader sees lines committed after
 * its last read (it holds no snapshot between reads). */
struct tail {
	int n, events;
	int64_t first, last;
};

static int on_tail(void *data, const struct gw_rec *rec, int64_t seg, uint64_t line, double recv)
{
	struct tail *t = data;
	if (!t->n++)
		t->first = rec->step;
	t->last = rec->step;
	t->events += rec->event != NULL;
	return 0;
}

START_TEST(tail_on_one_reader)
{
	struct gw_store *s = open_store();
	const char *runs[] = {"ta", "tb", "tc"};
	uint64_t seq = 0;
	for (int k = 0; k < 3; k++) {
		for (int i = 1; i <= 20 + k; i++) {
			struct gw_rec r = record(runs[k], i, 1.0, 1.0);
			seq = gw_store_put_record(s, &r, 1, (uint64_t)i, 0);
		}
		struct gw_rec ev = {.run = runs[k], .run_len = 2, .step = 20 + k, .ts = NAN,
		                    .event = "run_finished", .attrs = json_object()};
		seq = gw_store_put_event(s, &ev, 1, 100, 0);
		json_decref((json_t *)ev.attrs);
	}
	wait_committed(s, seq);
	struct gw_store_reader *rd;
	char err[256];
	ck_assert_int_eq(gw_store_reader_open(path, &rd, err, sizeof(err)), 0);
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < 3; k++) {
			struct tail a = {0}, b = {0};
			ck_assert_int_eq(gw_store_read_tail_on(rd, runs[k], 10, on_tail, &a, err,
			                                       sizeof(err)), 0);
			ck_assert_int_eq(gw_store_read_tail(path, runs[k], 10, on_tail, &b, err,
			                                    sizeof(err)), 0);
			ck_assert_int_eq(a.n, 11);
			ck_assert_int_eq(a.events, 1);
			ck_assert_int_eq(a.first, 11 + k);
			ck_assert_int_eq(a.last, 20 + k);
			ck_assert(a.n == b.n && a.first == b.first && a.last == b.last &&
			          a.events == b.events);
		}
	struct gw_rec more = record("ta", 21, 1.0, 1.0);
	wait_committed(s, gw_store_put_record(s, &more, 1, 21, 0));
	struct tail a = {0};
	ck_assert_int_eq(gw_store_read_tail_on(rd, "ta", 10, on_tail, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a.last, 21);
	ck_assert_int_eq(gw_store_read_tail_on(rd, "none", 10, on_tail, &a, err, sizeof(err)), 0);
	gw_store_reader_close(rd);
	gw_store_reader_close(NULL);
	gw_store_close(s);
}
END_TEST

/* The fp16 fields (wire.h enum gw_field) are kept in the record's extra
 * JSON under their canonical names, before the other extras, a NaN as the
 * string "NaN", and a run's tail gives them back to the detectors. */
static int on_fields(void *data, const struct gw_rec *rec, int64_t seg, uint64_t line, double recv)
{
	struct gw_rec *got = data;
	(void)seg, (void)line, (void)recv;
	got[rec->step - 1].fields = rec->fields;
	memcpy(got[rec->step - 1].f, rec->f, sizeof(rec->f));
	return 0;
}

START_TEST(fp16_fields_kept)
{
	struct gw_store *s = open_store();
	struct gw_metric x = {"consumed_samples", 40};
	struct gw_rec a = record("fp", 1, 2.0, 1.0), b = record("fp", 2, 2.0, 1.0);
	a.fields = 1u << GW_FIELD_LOSS_SCALE | 1u << GW_FIELD_SKIPPED;
	a.f[GW_FIELD_LOSS_SCALE] = 32768;
	a.f[GW_FIELD_SKIPPED] = 3;
	a.extra = &x;
	a.n_extra = 1;
	b.fields = 1u << GW_FIELD_NAN_ITERATIONS;
	b.f[GW_FIELD_NAN_ITERATIONS] = NAN;
	gw_store_put_record(s, &a, 1, 1, 0);
	wait_committed(s, gw_store_put_record(s, &b, 1, 2, 0));
	sqlite3 *db;
	sqlite3_stmt *st;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT extra FROM records ORDER BY step", -1, &st,
	                                    NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 0),
	                 "{\"loss_scale\":32768,\"skipped\":3,\"consumed_samples\":40}");
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "{\"nan_iterations\":\"NaN\"}");
	sqlite3_finalize(st);
	sqlite3_close(db);
	struct gw_rec got[2];
	memset(got, 0, sizeof(got));
	char err[256];
	ck_assert_int_eq(gw_store_read_tail(path, "fp", 10, on_fields, got, err, sizeof(err)), 0);
	ck_assert_uint_eq(got[0].fields, a.fields);
	ck_assert_double_eq(got[0].f[GW_FIELD_LOSS_SCALE], 32768);
	ck_assert_double_eq(got[0].f[GW_FIELD_SKIPPED], 3);
	ck_assert_uint_eq(got[1].fields, b.fields);
	ck_assert(isnan(got[1].f[GW_FIELD_NAN_ITERATIONS]));
	gw_store_close(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store_read");
	TCase *tc = tcase_create("store_read");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, positions_for_seeding);
	tcase_add_test(tc, run_end_kept_until_the_run_goes_on);
	tcase_add_test(tc, tail_on_one_reader);
	tcase_add_test(tc, meta_read_error);
	tcase_add_test(tc, fp16_fields_kept);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
