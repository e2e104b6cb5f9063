/*
 * Unit tests of the run table (core/runs.c) with a real engine and runs
 * stored in a real SQLite file (corefix.h): every stored run starts
 * dormant, known, with its last line's arrival; a dormant run's state is
 * rebuilt from its stored tail on its next line (its position as stored);
 * a new run under limits.max_runs makes room by making the least recently
 * active dormant; idle runs go dormant on a tick; a forgotten run is
 * neither; a restart long after the last line watches nothing.
 */
#include "gwcheck.h"
#include "corefix.h"

#include "engine.h"
#include "runs.h"

#include <math.h>

/* Store run `run`'s steps from..to, each arrived at wall clock `recv`. */
static uint64_t store_run(struct fix *f, const char *run, int from, int to, double recv)
{
	uint64_t seq = 0;
	for (int s = from; s <= to; s++) {
		struct gw_rec r = {.run = run, .run_len = strlen(run), .step = s, .ts = 1000.0 + s,
		                   .present = 1u << GW_ROLE_LOSS | 1u << GW_ROLE_GRAD_NORM};
		r.v[GW_ROLE_LOSS] = 3.0 - 0.001 * s;
		r.v[GW_ROLE_GRAD_NORM] = 0.5;
		if (s == from)
			gw_store_put_segment(f->store, run, 1, "first", s, -1, (uint64_t)s, r.ts, recv);
		seq = gw_store_put_record(f->store, &r, 1, (uint64_t)s, recv);
	}
	return seq;
}

/* A database with runs a (steps 1..300), b (1..50) and c (1..10), whose
 * last lines arrived an hour, two hours and three hours ago. */
static void stored(struct fix *f, double now)
{
	fix_cfg(f);
	fix_store(f);
	store_run(f, "a", 1, 300, now - 3600);
	store_run(f, "b", 1, 50, now - 7200);
	store_run(f, "c", 1, 10, now - 10800);
	ck_assert_int_eq(gw_store_close(f->store), 0);
	f->store = NULL;
	/* the runs table keeps when a run's last line was committed: as if
	 * each was committed as it arrived */
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(f->db, &db), SQLITE_OK);
	char sql[256];
	snprintf(sql, sizeof(sql), "UPDATE runs SET last_seen = %.3f - 3600 * "
	         "(CASE name WHEN 'a' THEN 1 WHEN 'b' THEN 2 ELSE 3 END)", now);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static struct gw_engine *engine(const struct fix *f)
{
	struct gw_engine_opts eo = f->cfg.engine;
	eo.live = true;
	eo.max_runs = 0;
	struct gw_engine *e = gw_engine_new(&eo, &(struct gw_engine_hooks){0});
	ck_assert_ptr_nonnull(e);
	return e;
}

static struct gw_runs *table(struct fix *f, struct gw_engine *e, size_t max_runs,
                             unsigned idle_s)
{
	const struct gw_runs_opts o = {.engine = e, .db_path = f->db, .max_runs = max_runs,
	                               .evict_idle_s = idle_s};
	struct gw_runs *rs;
	char err[256];
	ck_assert_msg(gw_runs_new(&o, &rs, err, sizeof(err)) == 0, "%s", err);
	return rs;
}

static void feed(struct gw_runs *rs, struct gw_engine *e, const char *run, int64_t step,
                 double now)
{
	ck_assert_int_eq(gw_runs_activate(rs, run, strlen(run)), 0);
	struct gw_rec r = {.run = run, .run_len = strlen(run), .step = step, .ts = 1000.0 + step,
	                   .present = 1u << GW_ROLE_LOSS};
	r.v[GW_ROLE_LOSS] = 2.0;
	ck_assert_int_eq(gw_engine_feed(e, &r, (uint64_t)step, now, NULL), 0);
}

static struct gw_runs_stats stats(const struct gw_runs *rs)
{
	struct gw_runs_stats st;
	gw_runs_stats(rs, &st);
	return st;
}

START_TEST(stored_runs_start_dormant_and_are_rebuilt)
{
	struct fix f;
	double now = gw_wall_now();
	stored(&f, now);
	struct gw_engine *e = engine(&f);
	struct gw_runs *rs = table(&f, e, 0, 0);
	struct gw_runs_stats st = stats(rs);
	ck_assert_uint_eq(st.dormant, 3);
	ck_assert_uint_eq(st.active, 0);
	ck_assert(gw_runs_known(rs, "a") && gw_runs_known(rs, "c"));
	ck_assert(!gw_runs_known(rs, "z"));
	ck_assert(fabs(gw_runs_last_seen(rs, "b") - (now - 7200)) < 1.0);
	ck_assert(isnan(gw_runs_last_seen(rs, "z")));
	/* a's next line: its state is rebuilt from its stored tail first */
	ck_assert_int_eq(gw_runs_activate(rs, "a", 1), 0);
	st = stats(rs);
	ck_assert_uint_eq(st.active, 1);
	ck_assert_uint_eq(st.dormant, 2);
	ck_assert_uint_eq(st.rebuilt, 1);
	struct gw_run_info ri;
	ck_assert_int_eq(gw_engine_run_info(e, "a", &ri), 0);
	ck_assert_int_eq(ri.last_step, 300);
	ck_assert_uint_eq(ri.records, 300);   /* re-fed, quietly */
	ck_assert(gw_runs_known(rs, "a"));
	/* a second activation is a no-op */
	ck_assert_int_eq(gw_runs_activate(rs, "a", 1), 0);
	ck_assert_uint_eq(stats(rs).rebuilt, 1);
	gw_runs_free(rs);
	gw_engine_free(e);
	fix_end(&f);
}
END_TEST

START_TEST(a_new_run_makes_room_under_max_runs)
{
	struct fix f;
	double now = gw_wall_now();
	stored(&f, now);
	struct gw_engine *e = engine(&f);
	struct gw_runs *rs = table(&f, e, 2, 0);
	feed(rs, e, "x", 1, now - 30);
	feed(rs, e, "y", 1, now - 20);
	ck_assert_uint_eq(stats(rs).active, 2);
	feed(rs, e, "z", 1, now - 10);   /* x, the least recently active, goes */
	struct gw_runs_stats st = stats(rs);
	ck_assert_uint_le(st.active, 2);
	ck_assert_uint_ge(st.evicted, 1);
	ck_assert(!gw_engine_has_run(e, "x", 1));
	ck_assert(gw_engine_has_run(e, "z", 1));
	ck_assert(gw_runs_known(rs, "x"));   /* dormant, not gone */
	ck_assert(fabs(gw_runs_last_seen(rs, "x") - (now - 30)) < 1.0);
	gw_runs_free(rs);
	gw_engine_free(e);
	fix_end(&f);
}
END_TEST

START_TEST(idle_runs_go_dormant_on_a_tick)
{
	struct fix f;
	double now = gw_wall_now();
	stored(&f, now);
	struct gw_engine *e = engine(&f);
	struct gw_runs *rs = table(&f, e, 0, 60);
	feed(rs, e, "old", 1, now - 600);
	feed(rs, e, "new", 1, now - 5);
	gw_runs_tick(rs, now);
	ck_assert(!gw_engine_has_run(e, "old", 3));
	ck_assert(gw_engine_has_run(e, "new", 3));
	ck_assert(gw_runs_known(rs, "old"));
	ck_assert_uint_eq(stats(rs).evicted, 1);
	gw_runs_free(rs);
	gw_engine_free(e);
	fix_end(&f);
}
END_TEST

START_TEST(a_forgotten_run_is_neither)
{
	struct fix f;
	double now = gw_wall_now();
	stored(&f, now);
	struct gw_engine *e = engine(&f);
	struct gw_runs *rs = table(&f, e, 0, 0);
	feed(rs, e, "live", 1, now);
	gw_runs_forget(rs, "live");   /* active */
	gw_runs_forget(rs, "b");      /* dormant */
	ck_assert(!gw_runs_known(rs, "live"));
	ck_assert(!gw_runs_known(rs, "b"));
	ck_assert(!gw_engine_has_run(e, "live", 4));
	ck_assert_uint_eq(stats(rs).dormant, 2);
	gw_runs_free(rs);
	gw_engine_free(e);
	fix_end(&f);
}
END_TEST

START_TEST(a_restart_long_after_watches_nothing)
{
	struct fix f;
	double now = gw_wall_now();
	stored(&f, now);
	struct gw_engine *e = engine(&f);
	struct gw_runs *rs = table(&f, e, 0, 600);
	/* the newest line is an hour old: the daemon before had every run
	 * idle; a is rebuilt to be judged and goes back to sleep */
	ck_assert_int_eq(gw_runs_restore(rs, now), 0);
	struct gw_runs_stats st = stats(rs);
	ck_assert_uint_eq(st.active, 0);
	ck_assert_uint_eq(st.dormant, 3);
	gw_runs_free(rs);
	gw_engine_free(e);
	fix_end(&f);
}
END_TEST

int main(void)
{
	gw_log_init(GW_LOG_ERR, false);
	Suite *s = suite_create("runs");
	TCase *tc = tcase_create("runs");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, stored_runs_start_dormant_and_are_rebuilt);
	tcase_add_test(tc, a_new_run_makes_room_under_max_runs);
	tcase_add_test(tc, idle_runs_go_dormant_on_a_tick);
	tcase_add_test(tc, a_forgotten_run_is_neither);
	tcase_add_test(tc, a_restart_long_after_watches_nothing);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
