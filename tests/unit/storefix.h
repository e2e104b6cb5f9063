/*
 * Test helper for the storage suites (test_store.c, test_store_read.c): a
 * real SQLite file in a temporary directory per test (setup, teardown), a
 * store opened on it that commits every 20 ms, waiting for a commit by
 * polling with a generous deadline, one value read back with SQL, and a
 * metric record.
 */
#ifndef GW_TEST_STOREFIX_H
#define GW_TEST_STOREFIX_H

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

static char dir[64], path[96];

static inline void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gwstoreXXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.db", dir);
}

static inline void teardown(void)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static inline struct gw_store *open_store(void)
{
	struct gw_store_opts o = {.path = path, .commit_interval_ms = 20, .commit_max_records = 1000};
	struct gw_store *s = NULL;
	char err[256];
	int rc = gw_store_open(&o, &s, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	return s;
}

static inline void wait_committed(struct gw_store *s, uint64_t seq)
{
	gw_store_flush(s);
	for (int i = 0; i < 500 && gw_store_committed(s) < seq; i++) {
		struct timespec d = {0, 10 * 1000000L};
		nanosleep(&d, NULL);
	}
	ck_assert_uint_ge(gw_store_committed(s), seq);
}

static inline long long scalar(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	long long v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -999 : sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static inline struct gw_rec record(const char *run, int64_t step, double loss, double gn)
{
	struct gw_rec r = {.run = run, .run_len = strlen(run), .step = step, .ts = 1000.0 + step,
	                   .present = 1u << GW_ROLE_LOSS | 1u << GW_ROLE_GRAD_NORM};
	r.v[GW_ROLE_LOSS] = loss;
	r.v[GW_ROLE_GRAD_NORM] = gn;
	return r;
}

#endif
