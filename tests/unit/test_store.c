/*
 * Unit tests of the storage module (storage/store.c, read.c) on a real
 * SQLite file in a temporary directory: what is queued is committed, NaN and
 * Inf survive, repeated steps are all kept, alerts go open -> update ->
 * resolve, readers see it, the schema version is set and a newer one is
 * refused.
 */
#include "gwcheck.h"
#include "gwsqlite.h"
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alert_row.h"
#include "engine.h"
#include "store.h"

#include <stdatomic.h>
#include <sys/syscall.h>

/* The wall clock as this process sees it, moved by wall_skew_s: this
 * definition takes the place of libc's for the whole test program (the
 * store's code included), and asks the kernel itself. */
static _Atomic long wall_skew_s;

int clock_gettime(clockid_t id, struct timespec *ts)
{
	long rc = syscall(SYS_clock_gettime, id, ts);
	if (rc == 0 && id == CLOCK_REALTIME)
		ts->tv_sec += atomic_load(&wall_skew_s);
	return (int)rc;
}

#include "storefix.h"

START_TEST(records_and_repeats)
{
	struct gw_store *s = open_store();
	uint64_t seq = 0;
	for (int i = 1; i <= 100; i++) {
		struct gw_rec r = record("run-a", i, 2.0, 1.0);
		seq = gw_store_put_record(s, &r, 1, (uint64_t)i, 5.0);
		ck_assert_uint_gt(seq, 0);
	}
	/* the restarted process logs 81..100 again: both copies are kept */
	for (int i = 81; i <= 100; i++) {
		struct gw_rec r = record("run-a", i, 2.5, 0.5);
		seq = gw_store_put_record(s, &r, 2, (uint64_t)(100 + i), 6.0);
	}
	struct gw_metric ex[2] = {{"epoch", 0.25}, {"odd \"name\"", NAN}};
	struct gw_rec r = record("run-b", 7, NAN, INFINITY);
	r.extra = ex;
	r.n_extra = 2;
	seq = gw_store_put_record(s, &r, 1, 1, 7.0);
	wait_committed(s, seq);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records r JOIN runs u ON u.id = r.run_id WHERE u.name = 'run-a'"), 120);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records WHERE step BETWEEN 81 AND 100"), 40);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records WHERE seg = 2"), 20);
	/* NaN: NULL plus the bit; +Inf stored as Inf */
	ck_assert_int_eq(scalar("SELECT nonfinite FROM records WHERE step = 7 AND extra IS NOT NULL"), 1);
	ck_assert_int_eq(scalar("SELECT loss IS NULL FROM records WHERE step = 7 AND extra IS NOT NULL"), 1);
	ck_assert_int_eq(scalar("SELECT grad_norm > 1e308 FROM records WHERE step = 7 AND extra IS NOT NULL"), 1);
	ck_assert_int_eq(scalar("SELECT json_extract(extra, '$.epoch') * 100 FROM records WHERE step = 7 AND extra IS NOT NULL"), 25);
	ck_assert_int_eq(scalar("SELECT last_step FROM runs WHERE name = 'run-a'"), 100);
	ck_assert_int_eq(scalar("SELECT last_seg FROM runs WHERE name = 'run-a'"), 2);
	ck_assert_int_eq(gw_store_close(s), 0);
	ck_assert_int_eq(scalar("PRAGMA user_version"), GW_STORE_SCHEMA_VERSION);
}
END_TEST

START_TEST(events_segments_alerts)
{
	struct gw_store *s = open_store();
	json_t *attrs = json_pack("{s:s, s:[s,s]}", "optimizer", "AdamW", "optimizer_state_keys",
	                          "exp_avg", "step");
	struct gw_rec ev = {.run = "r", .run_len = 1, .step = 500, .ts = NAN,
	                    .event = "checkpoint_saved", .attrs = attrs};
	gw_store_put_event(s, &ev, 1, 501, 1.0);
	gw_store_put_segment(s, "r", 2, "rewind", 401, 400, 900, 5.0, 2.0);
	/* an alert opened, escalated and resolved: typed rows of the alerts table */
	const struct gw_sv open[] = {
		gw_sv_text("gw-1"), gw_sv_run("r", 1), gw_sv_int(2), gw_sv_int(420), gw_sv_int(920),
		gw_sv_text("optimizer_reset"), gw_sv_text("warning"), gw_sv_text("grad norm fell"),
		gw_sv_text("c"), gw_sv_text("a"), gw_sv_text("{\"loss_before\":1.19}"),
		gw_sv_real(9.0), gw_sv_real(10.0),
	};
	ck_assert_uint_gt(gw_store_put(s, NULL, GW_STORE_ALERT_OPEN, open, 13), 0);
	const struct gw_sv update[] = {
		gw_sv_text("gw-1"), gw_sv_text("critical"), gw_sv_text("grad norm fell more"),
		gw_sv_text("c"), gw_sv_text("a"), gw_sv_text("{\"loss_before\":1.19}"),
		gw_sv_real(11.0), gw_sv_int(430), gw_sv_int(930),
	};
	ck_assert_uint_gt(gw_store_put(s, NULL, GW_STORE_ALERT_UPDATE, update, 9), 0);
	const struct gw_sv resolve[] = {gw_sv_text("gw-1"), gw_sv_real(12.0), gw_sv_int(800)};
	uint64_t seq = gw_store_put(s, NULL, GW_STORE_ALERT_RESOLVE, resolve, 3);
	/* statements out of range are refused, not written */
	ck_assert_uint_eq(gw_store_put(s, NULL, GW_STORE_NSTMT_PUBLIC, resolve, 3), 0);
	wait_committed(s, seq);
	ck_assert_int_eq(scalar("SELECT count(*) FROM events WHERE name = 'checkpoint_saved' AND "
	                        "json_extract(attrs, '$.optimizer') = 'AdamW'"), 1);
	ck_assert_int_eq(scalar("SELECT restart_step FROM segments WHERE seg = 2"), 400);
	ck_assert_int_eq(scalar("SELECT count(*) FROM alerts"), 1);
	ck_assert_int_eq(scalar("SELECT version FROM alerts"), 3);
	ck_assert_int_eq(scalar("SELECT severity = 'critical' AND state = 'resolved' AND last_step = 800 FROM alerts"), 1);
	ck_assert_int_eq(scalar("SELECT step FROM alerts"), 420);

	json_t *out;
	char err[256];
	ck_assert_int_eq(gw_store_read_alerts(path, "r", 10, &out, err, sizeof(err)), 0);
	ck_assert_int_eq(json_array_size(out), 1);
	json_t *al = json_array_get(out, 0);
	ck_assert_str_eq(json_string_value(json_object_get(al, "detector")), "optimizer_reset");
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_object_get(al, "evidence"), "loss_before")), 1.19, 1e-12);
	json_decref(out);
	ck_assert_int_eq(gw_store_read_run(path, "r", &out, err, sizeof(err)), 0);
	ck_assert_int_eq(json_array_size(json_object_get(out, "segments")), 1);
	json_decref(out);
	ck_assert_int_eq(gw_store_read_run(path, "nope", &out, err, sizeof(err)), -ENOENT);
	json_decref(attrs);
	gw_store_close(s);
}
END_TEST

/* Acknowledging (docs/alerts.md "Acknowledging"): an ack is an event of an
 * open alert that is not acknowledged (a repeat is a no-op), an escalation
 * (update) clears it, unack withdraws it, a resolved alert takes neither
 * and keeps the ack it had. */
static uint64_t ack(struct gw_store *s, const char *id, bool on, double at, const char *by)
{
	const struct gw_sv none = {.t = GW_SV_NULL};
	const struct gw_sv v[] = {gw_sv_text(id), gw_sv_real(at), by ? gw_sv_text(by) : none,
	                          by ? gw_sv_text("a note") : none};
	return gw_store_put(s, NULL, on ? GW_STORE_ALERT_ACK : GW_STORE_ALERT_UNACK, v, on ? 4 : 2);
}

START_TEST(alert_ack_escalation_clears_it)
{
	struct gw_store *s = open_store();
	const struct gw_sv open[] = {
		gw_sv_text("gw-1"), gw_sv_run("r", 1), gw_sv_int(1), gw_sv_int(420), gw_sv_int(920),
		gw_sv_text("optimizer_reset"), gw_sv_text("warning"), gw_sv_text("grad norm fell"),
		gw_sv_text("c"), gw_sv_text("a"), gw_sv_text("{}"), gw_sv_real(9.0), gw_sv_real(10.0),
	};
	gw_store_put(s, NULL, GW_STORE_ALERT_OPEN, open, 13);
	ack(s, "gw-1", true, 20.0, "alice");
	ack(s, "gw-1", true, 21.0, "bob");     /* already acknowledged: nothing */
	wait_committed(s, ack(s, "gw-nope", true, 22.0, "x"));
	ck_assert_int_eq(scalar("SELECT version = 2 AND kind = 'ack' AND acked_by = 'alice' AND "
	                        "acked_at = 20.0 AND ack_note = 'a note' FROM alerts"), 1);
	json_t *row, *al;
	char err[256];
	ck_assert_int_eq(gw_store_read_alert(path, "gw-1", &row, err, sizeof(err)), 0);
	al = gw_alert_row_json(row);
	ck_assert_str_eq(json_string_value(json_object_get(al, "kind")), "ack");
	ck_assert_str_eq(json_string_value(json_object_get(al, "acked_by")), "alice");
	ck_assert_int_eq(json_integer_value(json_object_get(al, "step")), 420);
	json_decref(al);
	json_decref(row);
	/* escalated: the ack is gone, the alert pages again */
	const struct gw_sv update[] = {
		gw_sv_text("gw-1"), gw_sv_text("critical"), gw_sv_text("grad norm fell more"),
		gw_sv_text("c"), gw_sv_text("a"), gw_sv_text("{}"), gw_sv_real(30.0), gw_sv_int(430),
		gw_sv_int(930),
	};
	wait_committed(s, gw_store_put(s, NULL, GW_STORE_ALERT_UPDATE, update, 9));
	ck_assert_int_eq(scalar("SELECT version = 3 AND kind = 'update' AND acked_at IS NULL AND "
	                        "acked_by IS NULL AND ack_note IS NULL FROM alerts"), 1);
	ck_assert_int_eq(gw_store_read_alert(path, "gw-1", &row, err, sizeof(err)), 0);
	al = gw_alert_row_json(row);
	ck_assert_ptr_null(json_object_get(al, "acked_at"));
	ck_assert_ptr_null(json_object_get(al, "acked_by"));
	json_decref(al);
	json_decref(row);
	/* acknowledged again, withdrawn (twice: once counts), again, resolved */
	ack(s, "gw-1", true, 40.0, NULL);
	ack(s, "gw-1", false, 41.0, NULL);
	ack(s, "gw-1", false, 42.0, NULL);
	ack(s, "gw-1", true, 43.0, "carol");
	const struct gw_sv resolve[] = {gw_sv_text("gw-1"), gw_sv_real(50.0), gw_sv_int(800)};
	gw_store_put(s, NULL, GW_STORE_ALERT_RESOLVE, resolve, 3);
	wait_committed(s, ack(s, "gw-1", false, 51.0, NULL));   /* resolved: nothing */
	ck_assert_int_eq(scalar("SELECT version = 7 AND kind = 'resolve' AND acked_by = 'carol' "
	                        "AND state = 'resolved' FROM alerts"), 1);
	gw_store_close(s);
}
END_TEST

/* A module's own tables: migrated at open, version kept in meta, rows go
 * through the same writer, a newer version is refused. */
static const char *const mod_v1[] = {"CREATE TABLE notes(run_id INTEGER, note TEXT)"};
static const char *const mod_v2[] = {"CREATE TABLE notes(run_id INTEGER, note TEXT)",
                                     "ALTER TABLE notes ADD COLUMN weight REAL"};
static const char *const mod_stmts[] = {"INSERT INTO notes(run_id, note) VALUES(?1, ?2)",
                                        "INSERT INTO notes(run_id, note, weight) VALUES(?1, ?2, ?3)"};

START_TEST(module_schema)
{
	unlink(path);
	struct gw_store_schema v1 = {.name = "notes", .migrations = mod_v1, .n_migrations = 1,
	                             .statements = mod_stmts, .n_statements = 1};
	const struct gw_store_schema *list[] = {&v1};
	struct gw_store_opts o = {.path = path, .commit_interval_ms = 20, .schemas = list, .n_schemas = 1};
	struct gw_store *s;
	char err[256];
	ck_assert_int_eq(gw_store_open(&o, &s, err, sizeof(err)), 0);
	const struct gw_sv row[] = {gw_sv_run("r", 1), gw_sv_text("first")};
	uint64_t seq = gw_store_put(s, &v1, 0, row, 2);
	ck_assert_uint_eq(gw_store_put(s, &v1, 1, row, 2), 0); /* v1 has one statement */
	wait_committed(s, seq);
	ck_assert_int_eq(gw_store_close(s), 0);
	ck_assert_int_eq(scalar("SELECT value FROM meta WHERE key = 'schema:notes'"), 1);
	ck_assert_int_eq(scalar("SELECT count(*) FROM notes n JOIN runs r ON r.id = n.run_id "
	                        "WHERE r.name = 'r' AND n.note = 'first'"), 1);

	struct gw_store_schema v2 = {.name = "notes", .migrations = mod_v2, .n_migrations = 2,
	                             .statements = mod_stmts, .n_statements = 2};
	list[0] = &v2;
	ck_assert_int_eq(gw_store_open(&o, &s, err, sizeof(err)), 0);
	const struct gw_sv row2[] = {gw_sv_run("r", 1), gw_sv_text("second"), gw_sv_real(0.5)};
	seq = gw_store_put(s, &v2, 1, row2, 3);
	wait_committed(s, seq);
	ck_assert_int_eq(gw_store_close(s), 0);
	ck_assert_int_eq(scalar("SELECT value FROM meta WHERE key = 'schema:notes'"), 2);
	ck_assert_int_eq(scalar("SELECT count(*) FROM notes WHERE weight = 0.5"), 1);

	list[0] = &v1;   /* an older gradwatch meets the newer tables */
	ck_assert_int_eq(gw_store_open(&o, &s, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "notes"));

	/* a version that cannot be read is not version 0: the migrations
	 * were run again over the existing tables ("table notes already
	 * exists"), which named the wrong cause */
	list[0] = &v2;
	gw_test_corrupt_table(path, "meta");
	ck_assert_int_lt(gw_store_open(&o, &s, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "schema version") && strstr(err, "malformed"), "%s", err);
}
END_TEST

/* Deleting a run deletes a module's rows of it too, by the module's own
 * statements, in the same transaction, before the run's row goes (they
 * find theirs through it); another run's rows stay. */
static const char *const del_stmts[] = {
	"INSERT INTO notes(run_id, note) VALUES(?1, ?2)",
	"DELETE FROM notes WHERE run_id = (SELECT id FROM runs WHERE name = ?1)",
};
static const unsigned del_run[] = {1};

START_TEST(module_rows_go_with_the_run)
{
	unlink(path);
	struct gw_store_schema sc = {.name = "notes", .migrations = mod_v1, .n_migrations = 1,
	                             .statements = del_stmts, .n_statements = 2,
	                             .delete_run = del_run, .n_delete_run = 1};
	const struct gw_store_schema *list[] = {&sc};
	struct gw_store_opts o = {.path = path, .commit_interval_ms = 20, .schemas = list, .n_schemas = 1};
	struct gw_store *s;
	char err[256];
	ck_assert_int_eq(gw_store_open(&o, &s, err, sizeof(err)), 0);
	const char *runs[] = {"gone", "kept"};
	for (int k = 0; k < 2; k++) {
		struct gw_rec r = record(runs[k], 1, 1.0, 1.0);
		gw_store_put_record(s, &r, 1, 1, 0);
		const struct gw_sv row[] = {gw_sv_run(runs[k], strlen(runs[k])), gw_sv_text("n")};
		gw_store_put(s, &sc, 0, row, 2);
	}
	wait_committed(s, gw_store_delete_run(s, "gone"));
	ck_assert_int_eq(gw_store_close(s), 0);
	ck_assert_int_eq(scalar("SELECT count(*) FROM notes"), 1);
	ck_assert_int_eq(scalar("SELECT count(*) FROM notes n JOIN runs r ON r.id = n.run_id "
	                        "WHERE r.name = 'kept'"), 1);
	ck_assert_int_eq(scalar("SELECT count(*) FROM runs"), 1);
}
END_TEST

START_TEST(close_commits_everything)
{
	struct gw_store_opts o = {.path = path, .commit_interval_ms = 60000, .commit_max_records = 1000000};
	struct gw_store *s = NULL;
	char err[256];
	ck_assert_int_eq(gw_store_open(&o, &s, err, sizeof(err)), 0);
	for (int i = 0; i < 5000; i++) {
		struct gw_rec r = record("c", i, 1.0, 1.0);
		gw_store_put_record(s, &r, 1, (uint64_t)i + 1, 0);
	}
	/* nothing forces a commit but the close */
	ck_assert_int_eq(gw_store_close(s), 0);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records"), 5000);
}
END_TEST

/* The writer writes a batch's rows as they come and commits when asked
 * (gw_store_flush: an alert, a waiting acknowledgement), not at the end of
 * commit_interval_ms; a group queued under gw_store_hold() while the batch
 * is open is committed whole, and rows queued after a commit go into the
 * next batch (wait_committed flushes, storefix.h). */
START_TEST(flush_commits_the_open_batch)
{
	struct gw_store_opts o = {.path = path, .commit_interval_ms = 60000, .commit_max_records = 1000000};
	struct gw_store *s = NULL;
	char err[256];
	ck_assert_int_eq(gw_store_open(&o, &s, err, sizeof(err)), 0);
	uint64_t seq = 0;
	for (int i = 0; i < 3000; i++) {
		struct gw_rec r = record("open", i, 1.0, 1.0);
		seq = gw_store_put_record(s, &r, 1, (uint64_t)i + 1, 0);
	}
	gw_store_hold(s);
	struct gw_rec g1 = record("held", 1, 1.0, 1.0), g2 = record("held", 2, 1.0, 1.0);
	gw_store_put_record(s, &g1, 1, 1, 0);
	gw_store_flush(s);
	seq = gw_store_put_record(s, &g2, 1, 2, 0);
	gw_store_release(s);
	/* the interval is a minute: only a flush makes it go */
	wait_committed(s, seq);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records"), 3002);
	struct gw_store_stats st;
	gw_store_stats(s, &st);
	ck_assert_uint_eq(st.records, 3002);
	/* after the commit: a new batch, committed by the next flush */
	struct gw_rec r = record("open", 3000, 1.0, 1.0);
	seq = gw_store_put_record(s, &r, 1, 3001, 0);
	wait_committed(s, seq);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records"), 3003);
	ck_assert_int_eq(gw_store_close(s), 0);
}
END_TEST

START_TEST(newer_schema_refused)
{
	gw_store_close(open_store());
	sqlite3 *db;
	sqlite3_open(path, &db);
	sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL, NULL);
	sqlite3_close(db);
	struct gw_store_opts o = {.path = path};
	struct gw_store *s = NULL;
	char err[256] = "";
	ck_assert_int_eq(gw_store_open(&o, &s, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "schema version 999"));
}
END_TEST

START_TEST(bad_path)
{
	struct gw_store_opts o = {.path = "/nonexistent-dir/x/y.db"};
	struct gw_store *s = NULL;
	char err[256] = "";
	ck_assert_int_lt(gw_store_open(&o, &s, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent-dir/x/y.db"));
}
END_TEST

/* The writer waits for a batch to fill (commit_interval_ms) on the monotonic
 * clock: when the wall clock was an hour ahead of where the wait ends
 * (stepped back meanwhile, as NTP does at boot), a line that nobody flushed
 * waited that hour to be committed. */
START_TEST(commit_wait_ignores_wall_clock_steps)
{
	struct gw_store *s = open_store();
	atomic_store(&wall_skew_s, 3600);
	struct gw_rec r = record("clock", 1, 2.0, 1.0);
	uint64_t seq = gw_store_put_record(s, &r, 1, 1, 1000.0);
	ck_assert_uint_gt(seq, 0);
	/* no gw_store_flush: only the batch's age makes it go */
	for (int i = 0; i < 1000 && gw_store_committed(s) < seq; i++) {
		struct timespec d = {0, 10 * 1000000L};
		nanosleep(&d, NULL);
	}
	ck_assert_uint_ge(gw_store_committed(s), seq);
	atomic_store(&wall_skew_s, 0);
	ck_assert_int_eq(gw_store_close(s), 0);
}
END_TEST

/* The writer's run cache over many runs and several commits: every row
 * lands on its own run, positions follow the last row, and a deleted run
 * that sends again is a new runs row (its cached id is not reused). */
START_TEST(many_runs_and_deletes)
{
	enum { NRUNS = 3000 };
	struct gw_store *s = open_store();
	uint64_t seq = 0;
	char name[32];
	for (int step = 1; step <= 3; step++) {
		for (int i = 0; i < NRUNS; i++) {
			snprintf(name, sizeof(name), "run-%d", i);
			struct gw_rec r = record(name, step * 10 + i % 7, 1.0, 1.0);
			seq = gw_store_put_record(s, &r, 1 + i % 3, (uint64_t)step, 0);
			ck_assert_uint_gt(seq, 0);
		}
		wait_committed(s, seq);
	}
	ck_assert_int_eq(scalar("SELECT count(*) FROM runs"), NRUNS);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records r JOIN runs u ON u.id = r.run_id "
	                        "WHERE u.name = 'run-' || (r.step % 10)  AND r.step < 40"), 3 * 7);
	ck_assert_int_eq(scalar("SELECT last_step FROM runs WHERE name = 'run-2999'"), 30 + 2999 % 7);
	ck_assert_int_eq(scalar("SELECT last_seg FROM runs WHERE name = 'run-2999'"), 1 + 2999 % 3);
	long long old_id = scalar("SELECT id FROM runs WHERE name = 'run-5'");
	for (int i = 0; i < NRUNS; i += 3) {
		snprintf(name, sizeof(name), "run-%d", i);
		seq = gw_store_delete_run(s, name);
		ck_assert_uint_gt(seq, 0);
	}
	/* in the same batch as the deletion of run-6: the cache must not hand
	 * out its old id */
	struct gw_rec again = record("run-6", 500, 2.0, 2.0);
	seq = gw_store_put_record(s, &again, 7, 1, 0);
	struct gw_rec kept = record("run-5", 600, 2.0, 2.0);
	seq = gw_store_put_record(s, &kept, 9, 2, 0);
	wait_committed(s, seq);
	ck_assert_int_eq(scalar("SELECT count(*) FROM runs"), NRUNS - NRUNS / 3 + 1);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records r JOIN runs u ON u.id = r.run_id "
	                        "WHERE u.name = 'run-6'"), 1);
	ck_assert_int_eq(scalar("SELECT last_step FROM runs WHERE name = 'run-6'"), 500);
	ck_assert_int_eq(scalar("SELECT last_seg FROM runs WHERE name = 'run-6'"), 7);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records WHERE run_id NOT IN (SELECT id FROM runs)"), 0);
	ck_assert_int_eq(scalar("SELECT id FROM runs WHERE name = 'run-5'"), old_id);
	ck_assert_int_eq(scalar("SELECT last_step FROM runs WHERE name = 'run-5'"), 600);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records r JOIN runs u ON u.id = r.run_id "
	                        "WHERE u.name = 'run-5'"), 4);
	ck_assert_int_eq(gw_store_close(s), 0);
}
END_TEST

/* The checkpointer folds the WAL back into the database while the store
 * is open.  Its own connection had never read the database, so SQLite did
 * not know it was in WAL mode and every checkpoint was a no-op: after 4M
 * lines the WAL held 308 MB and the database file 4 KB, until close. */
START_TEST(wal_is_checkpointed_while_open)
{
	struct gw_store *s = open_store();
	uint64_t seq = 0;
	for (int i = 1; i <= 100000; i++) {
		struct gw_rec r = record("run-w", i, 2.0, 1.0);
		seq = gw_store_put_record(s, &r, 1, (uint64_t)i, 5.0);
	}
	wait_committed(s, seq);
	struct stat st = {0};
	/* a deadline, not a speed: the checkpointer looks every 250 ms and
	 * folds a WAL of 1,000 frames or more; 100,000 records are several */
	for (int i = 0; i < 3000; i++) {
		ck_assert_int_eq(stat(path, &st), 0);
		if (st.st_size >= 2 * 1024 * 1024)
			break;
		struct timespec d = {0, 10 * 1000000L};
		nanosleep(&d, NULL);
	}
	ck_assert_msg(st.st_size >= 2 * 1024 * 1024, "the database file is %lld bytes after 100,000 records "
	              "committed: nothing was checkpointed", (long long)st.st_size);
	ck_assert_int_eq(gw_store_close(s), 0);
}
END_TEST

/* A burst's WAL does not keep its size for good: once a checkpoint caught
 * up, the next commit starts the WAL over and trims the file to
 * GW_STORE_WAL_KEEP_BYTES (without journal_size_limit the file kept the
 * size of the largest burst until exit: 75 MB after 1M lines).  150,000
 * wide rows in one transaction make a WAL above the 64 MB it keeps. */
START_TEST(wal_file_is_trimmed_after_a_burst)
{
	struct gw_store_opts o = {.path = path, .commit_interval_ms = 60000,
	                          .commit_max_records = 1000000};
	struct gw_store *s = NULL;
	char err[256], wal[128];
	ck_assert_msg(gw_store_open(&o, &s, err, sizeof(err)) == 0, "%s", err);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	/* wide rows (a dozen extra metrics each), so the burst is big in few rows */
	struct gw_metric ex[12];
	char names[12][40];
	for (int k = 0; k < 12; k++) {
		snprintf(names[k], sizeof(names[k]), "train/some_extra_metric_%02d", k);
		ex[k] = (struct gw_metric){names[k], 0.123456789 * k};
	}
	uint64_t seq = 0;
	for (int i = 1; i <= 150000; i++) {
		struct gw_rec r = record("run-b", i, 2.0, 1.0);
		r.extra = ex;
		r.n_extra = 12;
		seq = gw_store_put_record(s, &r, 1, (uint64_t)i, 5.0);
	}
	/* one transaction: the WAL holds all of it (a deadline, not a speed) */
	gw_store_flush(s);
	for (int i = 0; i < 12000 && gw_store_committed(s) < seq; i++) {
		struct timespec d = {0, 10 * 1000000L};
		nanosleep(&d, NULL);
	}
	ck_assert_uint_ge(gw_store_committed(s), seq);
	struct stat st = {0};
	ck_assert_int_eq(stat(wal, &st), 0);
	ck_assert_msg(st.st_size > GW_STORE_WAL_KEEP_BYTES, "the burst's WAL is only %lld bytes",
	              (long long)st.st_size);
	/* commit a line at a time until a commit finds the checkpoint caught up */
	for (int i = 0; i < 2000; i++) {
		struct gw_rec r = record("run-b", 150001 + i, 2.0, 1.0);
		wait_committed(s, gw_store_put_record(s, &r, 1, 150001u + (uint64_t)i, 5.0));
		ck_assert_int_eq(stat(wal, &st), 0);
		if (st.st_size <= GW_STORE_WAL_KEEP_BYTES)
			break;
		struct timespec d = {0, 20 * 1000000L};
		nanosleep(&d, NULL);
	}
	ck_assert_msg(st.st_size <= GW_STORE_WAL_KEEP_BYTES, "the WAL file stays at %lld bytes",
	              (long long)st.st_size);
	ck_assert_int_eq(gw_store_close(s), 0);
}
END_TEST

/* Under sustained load the WAL starts over, so its file stays bounded.  A
 * PASSIVE checkpoint never caught up on its own while the writer committed
 * back to back, and the WAL took every commit until the load ended: 500 MB
 * in 13 s at 100,000 records/s, and 491 MB here, where 1.5M records over
 * 100 runs keep the writer busy (store_ckpt.c: at most 64 MB and a commit). */
START_TEST(wal_starts_over_under_sustained_load)
{
	enum { N = 1500000 };
	struct gw_store_opts o = {.path = path, .commit_interval_ms = 10};
	struct gw_store *s = NULL;
	char err[256], wal[128], name[100][16];
	ck_assert_msg(gw_store_open(&o, &s, err, sizeof(err)) == 0, "%s", err);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	for (int i = 0; i < 100; i++)
		snprintf(name[i], sizeof(name[i]), "run-%02d", i);
	uint64_t seq = 0;
	long long most = 0;
	struct stat st = {0};
	/* the load keeps the writer busy: never more than 5,000 records queued
	 * (a deadline, not a speed) */
	for (int i = 0, waits = 0; i < N || gw_store_committed(s) < seq; waits++) {
		while (i < N && seq - gw_store_committed(s) < 5000) {
			struct gw_rec r = record(name[i % 100], i / 100 + 1, 2.0 + 1e-3 * (i % 7), 1.0);
			seq = gw_store_put_record(s, &r, 1, (uint64_t)i + 1, 5.0);
			i++;
		}
		if (stat(wal, &st) == 0 && st.st_size > most)
			most = st.st_size;
		ck_assert_int_lt(waits, 200000);
		struct timespec d = {0, 1000000L};
		nanosleep(&d, NULL);
	}
	ck_assert_uint_ge(gw_store_committed(s), seq);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_msg(most <= 128ll << 20, "the WAL grew to %lld bytes while the database file is "
	              "%lld", most, (long long)st.st_size);
	ck_assert_int_eq(gw_store_close(s), 0);
	ck_assert_int_eq(scalar("SELECT count(*) FROM records"), N);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("store");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, records_and_repeats);
	tcase_add_test(tc, events_segments_alerts);
	tcase_add_test(tc, alert_ack_escalation_clears_it);
	tcase_add_test(tc, module_schema);
	tcase_add_test(tc, close_commits_everything);
	tcase_add_test(tc, flush_commits_the_open_batch);
	tcase_add_test(tc, newer_schema_refused);
	tcase_add_test(tc, bad_path);
	tcase_add_test(tc, module_rows_go_with_the_run);
	tcase_add_test(tc, many_runs_and_deletes);
	tcase_add_test(tc, commit_wait_ignores_wall_clock_steps);
	tcase_add_test(tc, wal_is_checkpointed_while_open);
	suite_add_tcase(s, tc);
	/* its own case: a burst of 150,000 wide rows under a sanitizer takes a
	 * while, and the case's timeout is a deadline, not a speed */
	TCase *big = tcase_create("wal");
	tcase_set_timeout(big, 300);
	tcase_add_checked_fixture(big, setup, teardown);
	tcase_add_test(big, wal_file_is_trimmed_after_a_burst);
	tcase_add_test(big, wal_starts_over_under_sustained_load);
	suite_add_tcase(s, big);
	return gw_check_run(s);
}
