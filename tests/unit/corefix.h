/*
 * Test fixture for the daemon's parts (test_ingest.c, test_runs.c,
 * test_idem.c, test_ack.c, test_retention.c): the parts wired as
 * daemon/main.c wires them, on real ones -- a libuv loop, a store on a
 * SQLite file in a temporary directory with its writer thread, the alert
 * outbox (without sinks: its table of alerts, no sending), the record path
 * -- and the helpers the tests share: run the loop until a condition holds
 * (a generous deadline, never a bare sleep), read one value back with SQL,
 * make lines.
 */
#ifndef GW_TEST_COREFIX_H
#define GW_TEST_COREFIX_H

#include <check.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "config.h"
#include "idem.h"
#include "ingest.h"
#include "outbox.h"
#include "outbox_db.h"
#include "store.h"
#include "util.h"

#define FIX_DEADLINE_MS 30000   /* a deadline, not a speed: the machine may be busy */

struct fix {
	char dir[64];
	char db[96];
	struct gw_cfg cfg;
	uv_loop_t loop;
	struct gw_store *store;
	struct gw_outbox *outbox;
	struct gw_ingest *ingest;
};

/* A temporary directory and a configuration on it (defaults otherwise). */
static inline void fix_cfg(struct fix *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/gw-test-core-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/gw.db", f->dir);
	ck_assert_int_eq(gw_cfg_defaults(&f->cfg), 0);
	ck_assert_int_eq(gw_cfg_set_str(&f->cfg.db_path, f->db), 0);
	f->cfg.sync_full = false;
	ck_assert_int_eq(uv_loop_init(&f->loop), 0);
}

/* The store (with the outbox's and idempotency keys' tables). */
static inline void fix_store(struct fix *f)
{
	static const struct gw_store_schema *const schemas[] = {&gw_outbox_schema, &gw_idem_schema};
	const struct gw_store_opts so = {
		.path = f->db, .commit_interval_ms = f->cfg.commit_interval_ms,
		.commit_max_records = f->cfg.commit_max_records,
		.max_pending_bytes = f->cfg.max_pending_bytes,
		.schemas = schemas, .n_schemas = GW_ARRAY_SIZE(schemas),
	};
	char err[256];
	ck_assert_msg(gw_store_open(&so, &f->store, err, sizeof(err)) == 0, "%s", err);
}

/* The outbox without sinks, and the record path, as the daemon starts
 * them. */
static inline void fix_start(struct fix *f)
{
	char err[256];
	const struct gw_outbox_opts oo = {.loop = &f->loop, .store = f->store, .db_path = f->db};
	ck_assert_msg(gw_outbox_start(&oo, &f->outbox, err, sizeof(err)) == 0, "%s", err);
	const struct gw_ingest_opts io = {.loop = &f->loop, .cfg = &f->cfg, .store = f->store,
	                                  .outbox = f->outbox};
	ck_assert_msg(gw_ingest_start(&io, &f->ingest, err, sizeof(err)) == 0, "%s", err);
}

/* Run the loop until *flag is true (within the deadline). */
static inline void fix_run_until(struct fix *f, const bool *flag)
{
	uint64_t end = gw_mono_ms() + FIX_DEADLINE_MS;
	while (!*flag && gw_mono_ms() < end)
		uv_run(&f->loop, UV_RUN_ONCE);
	ck_assert_msg(*flag, "not within %d ms", FIX_DEADLINE_MS);
}

struct fix_waiter {
	struct gw_commit_waiter w;
	bool done;
	int error;
	uint64_t committed;   /* the store's committed sequence when it was called */
	struct gw_store *store;
};

static inline void fix_waited(struct gw_commit_waiter *w)
{
	struct fix_waiter *fw = (struct fix_waiter *)w;
	fw->done = true;
	fw->error = w->error;
	fw->committed = gw_store_committed(fw->store);
}

/* Wait (running the loop) until the store committed seq. */
static inline void fix_commit(struct fix *f, uint64_t seq)
{
	struct fix_waiter fw = {.w = {.seq = seq, .fn = fix_waited}, .store = f->store};
	gw_ingest_wait_commit(f->ingest, &fw.w);
	fix_run_until(f, &fw.done);
	ck_assert_int_eq(fw.error, 0);
}

/* Wait (polling, without the loop: for tests with a store and no record
 * path) until the store committed seq. */
static inline void fix_wait_seq(struct fix *f, uint64_t seq)
{
	gw_store_flush(f->store);
	uint64_t end = gw_mono_ms() + FIX_DEADLINE_MS;
	while (gw_store_committed(f->store) < seq && gw_mono_ms() < end) {
		struct timespec d = {0, 5 * 1000000L};
		nanosleep(&d, NULL);
	}
	ck_assert_uint_ge(gw_store_committed(f->store), seq);
}

/* Stop and free what was started, as main.c does, and remove the files. */
static inline void fix_end(struct fix *f)
{
	gw_ingest_stop(f->ingest);
	gw_outbox_stop(f->outbox);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	gw_ingest_free(f->ingest);
	gw_outbox_free(f->outbox);
	if (f->store)
		ck_assert_int_eq(gw_store_close(f->store), 0);
	ck_assert_int_eq(uv_loop_close(&f->loop), 0);
	gw_cfg_free(&f->cfg);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* One integer read back from the database (-1 for NULL). */
static inline long long fix_scalar(const struct fix *f, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	ck_assert_int_eq(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
	              sqlite3_errmsg(db));
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	long long v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* NDJSON metric lines of run for steps from..to (loss falling slowly),
 * into buf (static, so one at a time). */
static inline const char *fix_lines(const char *run, int from, int to)
{
	static char buf[1 << 16];
	size_t o = 0;
	for (int s = from; s <= to && o + 200 < sizeof(buf); s++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o,
		                      "{\"run\":\"%s\",\"step\":%d,\"loss\":%.4f,\"grad_norm\":0.5,"
		                      "\"lr\":0.001}\n", run, s, 3.0 - 0.001 * s);
	return buf;
}

#endif
