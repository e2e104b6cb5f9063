/*
 * Unit tests of retention's pick (daemon/retention.c gw_retention_pick)
 * on a real SQLite file (corefix.h: runs stored through the store): the
 * age rule picks the runs last seen before its cutoff, the oldest first,
 * and no other; the size rule, over max_bytes, picks the oldest runs but
 * never one active since active_since, and nothing under the limit; the
 * cutoff is the later of the two rules' (a run seen since is kept); a
 * database that cannot be read is an error with its reason.
 */
#include "gwcheck.h"
#include "corefix.h"

#include "retention.h"

#include <math.h>

/* Runs old (last seen a day ago), mid (an hour ago) and new (now), each
 * with n records; the runs table keeps when they were last seen. */
static void stored(struct fix *f, double now, int n)
{
	fix_cfg(f);
	fix_store(f);
	static const char *const runs[] = {"old", "mid", "new"};
	uint64_t seq = 0;
	for (size_t k = 0; k < 3; k++)
		for (int s = 1; s <= n; s++) {
			struct gw_rec r = {.run = runs[k], .run_len = strlen(runs[k]), .step = s,
			                   .ts = 1000.0 + s, .present = 1u << GW_ROLE_LOSS};
			r.v[GW_ROLE_LOSS] = 1.0;
			seq = gw_store_put_record(f->store, &r, 1, (uint64_t)s, now);
		}
	fix_wait_seq(f, seq);
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(f->db, &db), SQLITE_OK);
	char sql[200];
	snprintf(sql, sizeof(sql), "UPDATE runs SET last_seen = %.3f - CASE name WHEN 'old' THEN "
	         "86400 WHEN 'mid' THEN 3600 ELSE 0 END", now);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static const char *name(const struct gw_retention_pick *p, size_t i)
{
	return json_string_value(json_array_get(p->names, i));
}

START_TEST(the_age_rule)
{
	struct fix f;
	double now = gw_wall_now();
	stored(&f, now, 10);
	struct gw_retention_pick p = {.older_than = now - 600, .active_since = now - 600};
	ck_assert_msg(gw_retention_pick(f.db, &p) == 0, "%s", p.err);
	ck_assert_uint_eq(json_array_size(p.names), 2);
	ck_assert_str_eq(name(&p, 0), "old");   /* the oldest first */
	ck_assert_str_eq(name(&p, 1), "mid");
	ck_assert(gw_retention_cutoff(&p) == now - 600);
	json_decref(p.names);
	p = (struct gw_retention_pick){.older_than = now - 7200};
	ck_assert_int_eq(gw_retention_pick(f.db, &p), 0);
	ck_assert_uint_eq(json_array_size(p.names), 1);
	ck_assert_str_eq(name(&p, 0), "old");
	json_decref(p.names);
	ck_assert_int_eq(gw_store_close(f.store), 0);
	f.store = NULL;
	fix_end(&f);
}
END_TEST

START_TEST(the_size_rule)
{
	struct fix f;
	double now = gw_wall_now();
	stored(&f, now, 2000);
	/* no age rule; a limit far above the file: nothing */
	struct gw_retention_pick p = {.older_than = NAN, .max_bytes = 1ull << 40,
	                              .active_since = now - 600};
	ck_assert_int_eq(gw_retention_pick(f.db, &p), 0);
	ck_assert_uint_eq(json_array_size(p.names), 0);
	ck_assert_uint_gt(p.used_bytes, 0);
	uint64_t used = p.used_bytes;
	json_decref(p.names);
	/* a limit of a few pages: the oldest go, never the one active since */
	p = (struct gw_retention_pick){.older_than = NAN, .max_bytes = 4096,
	                               .active_since = now - 600};
	ck_assert_int_eq(gw_retention_pick(f.db, &p), 0);
	ck_assert_uint_eq(p.used_bytes, used);
	ck_assert_uint_eq(json_array_size(p.names), 2);
	ck_assert_str_eq(name(&p, 0), "old");
	ck_assert_str_eq(name(&p, 1), "mid");
	ck_assert(gw_retention_cutoff(&p) == now - 600);
	json_decref(p.names);
	/* both rules: the cutoff is the later one's */
	p = (struct gw_retention_pick){.older_than = now - 7200, .max_bytes = 4096,
	                               .active_since = now - 60};
	ck_assert_int_eq(gw_retention_pick(f.db, &p), 0);
	ck_assert(gw_retention_cutoff(&p) == now - 60);
	json_decref(p.names);
	ck_assert_int_eq(gw_store_close(f.store), 0);
	f.store = NULL;
	fix_end(&f);
}
END_TEST

START_TEST(an_unreadable_database_says_why)
{
	struct gw_retention_pick p = {.older_than = 0};
	ck_assert_int_lt(gw_retention_pick("/nonexistent/dir/gw.db", &p), 0);
	ck_assert_msg(p.err[0], "no reason given");
	json_decref(p.names);
}
END_TEST

int main(void)
{
	gw_log_init(GW_LOG_ERR, false);
	Suite *s = suite_create("retention");
	TCase *tc = tcase_create("retention");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, the_age_rule);
	tcase_add_test(tc, the_size_rule);
	tcase_add_test(tc, an_unreadable_database_says_why);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
