/*
 * store_writer: the store's writer thread (see
 * store.h for the contract, store.c for the queue).
 *
 * The writer opens a batch's transaction with its first rows and takes
 * the queue every few milliseconds while it is open, writing the rows as
 * they come, so a commit asked for (an alert) waits only for the last few
 * rows, never a whole batch (write_incrementally).  It writes with the
 * statements of the store's own rows (core[] below) and of each schema,
 * prepared once on its connection.  It keeps a cache
 * of run name -> runs.id (an array of runs in the order first met, indexed
 * by a gw_strtab on their names) and updates each touched run's last
 * position once per transaction; the chart tiles of the batch are merged
 * just before COMMIT (tiles.c).  After each commit (and each failed one)
 * it publishes the committed sequence and calls the notification.
 *
 * Test hook (fault injection, tests/integration/test_crash.py; only in a
 * build with -Dfault_hooks=true, lib/fault.h): with
 * GRADWATCH_FAULT_CRASH_COMMIT=N in the environment at gw_store_open(), the
 * writer kills the whole process with SIGKILL right before its Nth COMMIT
 * (counting the writer's transactions since open, failed ones included),
 * so a test can crash the daemon between any two transactions and check
 * what a restart finds.  The checkpointer thread is store_ckpt.c's.
 */
#include "store_impl.h"
#include "schema.h"
#include "tiles.h"

#include "buf.h"
#include "fault.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The store's own statements' SQL: the public ones (enum gw_store_stmt)
 * first. */

static const struct core_stmt {
	const char *sql;
	enum counter counter;
	int pos_seg, pos_step, pos_ts;
} core[S_NCORE] = {
	[GW_STORE_ALERT_OPEN] = {
		"INSERT INTO alerts(id, run_id, seg, step, line, detector, severity, state, "
		"summary, cause, action, evidence, ts, created, updated, version, kind) "
		"VALUES(?1,?2,?3,?4,?5,?6,?7,'open',?8,?9,?10,?11,?12,?13,?13,1,'open') "
		"ON CONFLICT(id) DO UPDATE SET severity = excluded.severity, state = 'open', "
		"summary = excluded.summary, cause = excluded.cause, action = excluded.action, "
		"evidence = excluded.evidence, updated = excluded.updated, "
		"last_step = excluded.step, version = version + 1, kind = 'open', "
		"acked_at = NULL, acked_by = NULL, ack_note = NULL",
		C_ALERTS, -1, -1, -1},
	[GW_STORE_ALERT_UPDATE] = {
		"UPDATE alerts SET severity = ?2, summary = ?3, cause = ?4, action = ?5, "
		"evidence = ?6, updated = ?7, last_step = ?8, last_line = ?9, "
		"version = version + 1, kind = 'update', acked_at = NULL, acked_by = NULL, "
		"ack_note = NULL WHERE id = ?1",
		C_ALERTS, -1, -1, -1},
	[GW_STORE_ALERT_RESOLVE] = {
		"UPDATE alerts SET state = 'resolved', resolved = ?2, updated = ?2, "
		"last_step = ?3, resolution = ?4, version = version + 1, kind = 'resolve' "
		"WHERE id = ?1",
		C_ALERTS, -1, -1, -1},
	[GW_STORE_ALERT_ACK] = {
		"UPDATE alerts SET acked_at = ?2, acked_by = ?3, ack_note = ?4, updated = ?2, "
		"kind = 'ack', version = version + 1 WHERE id = ?1 AND state = 'open' "
		"AND acked_at IS NULL",
		C_NONE, -1, -1, -1},
	[GW_STORE_ALERT_UNACK] = {
		"UPDATE alerts SET acked_at = NULL, acked_by = NULL, ack_note = NULL, updated = ?2, "
		"kind = 'unack', version = version + 1 WHERE id = ?1 AND state = 'open' "
		"AND acked_at IS NOT NULL",
		C_NONE, -1, -1, -1},
	[S_RECORD] = {
		"INSERT INTO records(run_id, seg, step, line, ts, recv, loss, grad_norm, lr, "
		"throughput, nonfinite, extra, rank) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)",
		C_RECORDS, 1, 2, 4},
	[S_EVENT] = {
		"INSERT INTO events(run_id, seg, step, line, ts, recv, name, attrs) "
		"VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
		C_EVENTS, 1, -1, 4},
	[S_SEGMENT] = {
		"INSERT OR REPLACE INTO segments(run_id, seg, reason, first_step, "
		"restart_step, first_line, ts, opened) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
		C_SEGMENTS, 1, -1, -1},
	[S_META] = {
		"INSERT INTO meta(key, value) VALUES(?1, ?2) "
		"ON CONFLICT(key) DO UPDATE SET value = excluded.value",
		C_NONE, -1, -1, -1},
	/* a line of a rank other than 0: the run's position does not move */
	[S_RANK_LINE] = {
		"INSERT INTO rank_lines(run_id, rank, step, line, ts, recv, body) "
		"VALUES(?1,?2,?3,?4,?5,?6,?7)",
		C_RECORDS, -1, -1, -1},
	[S_WRITERS] = {"UPDATE runs SET writers = ?2 WHERE id = ?1", C_NONE, -1, -1, -1},
	[S_RUN_END] = {"UPDATE runs SET ended_seg = ?2, ended_step = ?3, ended_reason = ?4, "
	               "ended_at = ?5 WHERE id = ?1", C_NONE, -1, -1, -1},
	/* deleting a run (gw_store_delete_run): its rows, then the run; ?1 is
	 * its name (text: naming it must not create it) */
	[S_DEL_RECORDS] = {"DELETE FROM records WHERE run_id = (SELECT id FROM runs WHERE name = ?1)",
	                   C_NONE, -1, -1, -1},
	[S_DEL_EVENTS] = {"DELETE FROM events WHERE run_id = (SELECT id FROM runs WHERE name = ?1)",
	                  C_NONE, -1, -1, -1},
	[S_DEL_SEGMENTS] = {"DELETE FROM segments WHERE run_id = (SELECT id FROM runs WHERE name = ?1)",
	                    C_NONE, -1, -1, -1},
	[S_DEL_ALERTS] = {"DELETE FROM alerts WHERE run_id = (SELECT id FROM runs WHERE name = ?1)",
	                  C_NONE, -1, -1, -1},
	/* its chart tiles too: SQLite gives the next run the same id when the
	 * deleted one had the highest, and it must not inherit them */
	[S_DEL_TILES] = {"DELETE FROM record_tiles WHERE run_id = (SELECT id FROM runs WHERE name = ?1)",
	                 C_NONE, -1, -1, -1},
	[S_DEL_RANK_LINES] = {"DELETE FROM rank_lines WHERE run_id = (SELECT id FROM runs WHERE name = ?1)",
	                      C_NONE, -1, -1, -1},
	[S_DEL_RANKS] = {"DELETE FROM ranks WHERE run_id = (SELECT id FROM runs WHERE name = ?1)",
	                 C_NONE, -1, -1, -1},
	[S_DEL_RUN] = {"DELETE FROM runs WHERE name = ?1", C_NONE, -1, -1, -1},
};

/* Transaction control and the runs table, the writer's own. */

static const char *const tx_sql[T_COUNT] = {
	[T_BEGIN] = "BEGIN IMMEDIATE",
	[T_COMMIT] = "COMMIT",
	[T_ROLLBACK] = "ROLLBACK",
	[T_RUN_GET] = "SELECT id, last_seg, last_step, last_ts FROM runs WHERE name = ?1",
	[T_RUN_INS] = "INSERT INTO runs(name, first_seen, last_seen, last_seg, last_step, last_ts) "
	              "VALUES(?1, ?2, ?2, 0, NULL, NULL)",
	[T_RUN_UPD] = "UPDATE runs SET last_seen = ?2, last_seg = ?3, last_step = ?4, "
	              "last_ts = ?5 WHERE id = ?1",
};


static double wall_now(void)
{
	return gw_wall_now();
}

/* ---- writer --------------------------------------------------------------------- */

/* The cached run called name[0..len), or NULL. */
static struct run_slot *run_find(struct gw_store *s, const char *name, size_t len)
{
	uint32_t i;
	return gw_strtab_find(&s->runs_by_name, name, len, &i) == 0 ? &s->runs[i] : NULL;
}

void gw__store_runs_clear(struct gw_store *s)
{
	for (size_t i = 0; i < s->runs_n; i++)
		free(s->runs[i].name);
	free(s->runs);
	s->runs = NULL;
	s->runs_cap = s->runs_n = 0;
	gw_strtab_free(&s->runs_by_name);
}

static int step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static void bind_real(sqlite3_stmt *st, int k, double v)
{
	if (isnan(v))
		sqlite3_bind_null(st, k);
	else
		sqlite3_bind_double(st, k, v);
}

/* runs.id of the run name[0..len) (NUL-terminated), creating the row if
 * needed (inside the transaction). */
static int run_id(struct gw_store *s, const char *name, size_t len, double now,
                  struct run_slot **out)
{
	struct run_slot *r = run_find(s, name, len);
	if (r && r->id >= 0) {
		*out = r;
		return 0;
	}
	/* new, or deleted since: resolved again */
	sqlite3_stmt *st = s->tx[T_RUN_GET];
	sqlite3_bind_text(st, 1, name, (int)len, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int64_t id = -1, seg = 0, last_step = -1;
	double last_ts = NAN;
	if (rc == SQLITE_ROW) {
		id = sqlite3_column_int64(st, 0);
		seg = sqlite3_column_int64(st, 1);
		if (sqlite3_column_type(st, 2) != SQLITE_NULL)
			last_step = sqlite3_column_int64(st, 2);
		if (sqlite3_column_type(st, 3) != SQLITE_NULL)
			last_ts = sqlite3_column_double(st, 3);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return rc;
	if (id < 0) {
		st = s->tx[T_RUN_INS];
		sqlite3_bind_text(st, 1, name, (int)len, SQLITE_STATIC);
		sqlite3_bind_double(st, 2, now);
		if ((rc = step_done(st)) != SQLITE_OK)
			return rc;
		id = sqlite3_last_insert_rowid(s->db);
	}
	if (!r) {
		char *copy = gw_grow((void **)&s->runs, &s->runs_cap, s->runs_n + 1, sizeof(*s->runs)) == 0
		           ? strndup(name, len) : NULL;
		if (!copy)
			return SQLITE_NOMEM;
		if (gw_strtab_put(&s->runs_by_name, copy, len, (uint32_t)s->runs_n) < 0) {
			free(copy);
			return SQLITE_NOMEM;
		}
		r = &s->runs[s->runs_n++];
		*r = (struct run_slot){.name = copy};
	}
	r->id = id;
	r->seg = seg;
	r->last_step = last_step;
	r->last_ts = last_ts;
	r->last_seen = now;
	*out = r;
	return 0;
}

/* The core statement of an item, or NULL for a schema's statement. */
static const struct core_stmt *core_of(const struct item *it)
{
	return it->stmt < S_NCORE ? &core[it->stmt] : NULL;
}

static int write_item(struct gw_store *s, const struct item *it, double now,
                      uint64_t counts[C_N])
{
	sqlite3_stmt *st = s->st[it->stmt];
	struct run_slot *r = NULL;
	int rc;
	for (int k = 0; k < it->nval; k++) {
		const struct val *x = &it->v[k];
		switch ((enum gw_sv_type)x->type) {
		case GW_SV_NULL:
			sqlite3_bind_null(st, k + 1);
			break;
		case GW_SV_INT:
			sqlite3_bind_int64(st, k + 1, x->u.i);
			break;
		case GW_SV_REAL:
			sqlite3_bind_double(st, k + 1, x->u.d);
			break;
		case GW_SV_TEXT:
			sqlite3_bind_text(st, k + 1, gw__store_val_text(it, x), (int)x->len, SQLITE_STATIC);
			break;
		case GW_SV_RUN:
			if ((rc = run_id(s, gw__store_val_text(it, x), x->len, now, &r)) != SQLITE_OK) {
				sqlite3_clear_bindings(st);
				return rc;
			}
			sqlite3_bind_int64(st, k + 1, r->id);
			break;
		}
	}
	rc = step_done(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_OK && it->stmt == S_DEL_RUN) {
		/* the cached id names a row that is gone */
		struct run_slot *gone = run_find(s, gw__store_val_text(it, &it->v[0]), it->v[0].len);
		if (gone) {
			/* tiles of this transaction's records of it: not flushed */
			if (gone->id >= 0)
				gw__tiles_drop_run(s->tiles, gone->id);
			gone->id = -1;
			gone->dirty = false;
		}
	}
	const struct core_stmt *c = core_of(it);
	if (rc != SQLITE_OK || !c)
		return rc;
	if (it->stmt == S_RECORD && r) {
		/* v: run, seg, step, line, ts, recv, loss, grad_norm, lr, throughput, nonfinite */
		double v[GW_NROLES];
		for (int k = 0; k < GW_NROLES; k++)
			v[k] = it->v[6 + k].type == GW_SV_REAL ? it->v[6 + k].u.d : NAN;
		if (gw__tiles_add(s->tiles, r->id, it->v[1].u.i, it->v[2].u.i, v,
		                  (unsigned)it->v[10].u.i) < 0)
			return SQLITE_NOMEM;
	}
	counts[c->counter]++;
	if (r && c->pos_seg >= 0) {
		/* the run's position moves with its records, events, segments */
		r->seg = it->v[c->pos_seg].u.i;
		if (c->pos_step >= 0)
			r->last_step = it->v[c->pos_step].u.i;
		if (c->pos_ts >= 0 && it->v[c->pos_ts].type == GW_SV_REAL)
			r->last_ts = it->v[c->pos_ts].u.d;
		if (c->counter != C_SEGMENTS)
			r->last_seen = now;
		r->dirty = true;
	}
	return rc;
}

/* Why the last statement failed, as SQLite says it ("database or disk is
 * full"), with its code name; taken before the rollback, whose own error
 * ("cannot rollback - no transaction is active") would hide it. */
static void failure(struct gw_store *s, int rc, char *why, size_t whylen)
{
	int ext = sqlite3_extended_errcode(s->db);
	const char *name = (rc & 0xff) == SQLITE_FULL ? "SQLITE_FULL"
	                 : (rc & 0xff) == SQLITE_IOERR ? "SQLITE_IOERR"
	                 : (rc & 0xff) == SQLITE_BUSY ? "SQLITE_BUSY"
	                 : (rc & 0xff) == SQLITE_READONLY ? "SQLITE_READONLY"
	                 : (rc & 0xff) == SQLITE_CORRUPT ? "SQLITE_CORRUPT" : "SQLite error";
	snprintf(why, whylen, "%s (%s, code %d)", sqlite3_errmsg(s->db), name, ext);
}

/* A batch's transaction in three steps, so its rows can be written as they
 * come: open it; write the items of s->work from *done on (*done moves
 * past each one written); update the touched runs, merge the tiles and
 * COMMIT.  batch_fail() rolls back whatever failed. */
static int batch_begin(struct gw_store *s)
{
	return step_done(s->tx[T_BEGIN]);
}

static int batch_items(struct gw_store *s, size_t *done, size_t end, uint64_t counts[C_N])
{
	double now = wall_now();
	int rc = SQLITE_OK;
	while (*done < end) {
		const struct item *it = (const struct item *)(s->work.buf + *done);
		if ((rc = write_item(s, it, now, counts)) != SQLITE_OK)
			break;
		*done += it->size;
	}
	return rc;
}

static int batch_commit(struct gw_store *s)
{
	int rc;
	for (size_t i = 0; i < s->runs_n; i++) {
		struct run_slot *r = &s->runs[i];
		if (!r->dirty)
			continue;
		sqlite3_stmt *st = s->tx[T_RUN_UPD];
		sqlite3_bind_int64(st, 1, r->id);
		sqlite3_bind_double(st, 2, r->last_seen);
		sqlite3_bind_int64(st, 3, r->seg);
		if (r->last_step >= 0)
			sqlite3_bind_int64(st, 4, r->last_step);
		else
			sqlite3_bind_null(st, 4);
		bind_real(st, 5, r->last_ts);
		if ((rc = step_done(st)) != SQLITE_OK)
			return rc;
		r->dirty = false;
	}
	if ((rc = gw__tiles_flush(s->tiles, s->db)) != SQLITE_OK)
		return rc;
	/* the test hook: die as kill -9 would, with this transaction open */
	if (++s->commit_attempts == s->crash_at_commit)
		gw_fault_crash();
	return step_done(s->tx[T_COMMIT]);
}

static int batch_fail(struct gw_store *s, int rc, bool open, char *why, size_t whylen)
{
	failure(s, rc, why, whylen);
	if (open)
		step_done(s->tx[T_ROLLBACK]);
	gw__tiles_clear(s->tiles);
	/* the cache may hold ids of rows the rollback removed */
	gw__store_runs_clear(s);
	return rc;
}

/* The whole of s->work in one transaction (a retry after a failure). */
static int write_batch(struct gw_store *s, uint64_t counts[C_N], char *why, size_t whylen)
{
	size_t done = 0;
	int rc = batch_begin(s);
	if (rc != SQLITE_OK)
		return batch_fail(s, rc, false, why, whylen);
	if ((rc = batch_items(s, &done, s->work.len, counts)) != SQLITE_OK ||
	    (rc = batch_commit(s)) != SQLITE_OK)
		return batch_fail(s, rc, true, why, whylen);
	return SQLITE_OK;
}

/* Take the queue (mu held), in O(1) so producers never wait for a copy:
 * into an empty batch by swapping the arenas; onto an open one by handing
 * the queue's arena over in *got (the queue gets the spare arena) after
 * making room for it at the end of the batch, where the caller copies it
 * outside the mutex.  On a failed allocation the items stay queued, for
 * the next batch. */
static void take_pending(struct gw_store *s, struct arena *got)
{
	struct arena *p = &s->pending, *w = &s->work;
	if (!p->n)
		return;
	if (!w->n) {
		struct arena tmp = *w;
		*w = *p;
		*p = tmp;
		p->len = p->n = 0;
		atomic_store(&s->pending_bytes, w->len);
		return;
	}
	if (gw_grow((void **)&w->buf, &w->cap, w->len + p->len, 1) < 0)
		return;
	*got = *p;
	*p = s->spare;
	p->len = p->n = 0;
	s->spare = (struct arena){0};
	atomic_store(&s->pending_bytes, w->len + got->len);
}

/* Write one batch, its rows as they come (mu held on entry and return):
 * the transaction is opened with the first rows, and every SLICE_MS (or
 * when woken) the writer takes what was queued since and writes it.  The
 * batch ends when it is commit_interval_ms old, holds commit_max_records,
 * or a commit is asked for (gw_store_flush: an alert, a client waiting for
 * its acknowledgement): then only the rows of the last slice stand between
 * the request and the COMMIT, never a whole batch.  A group queued under
 * gw_store_hold() may be taken in parts, but is committed whole. */
#define SLICE_MS 2

static int write_incrementally(struct gw_store *s, uint64_t counts[C_N], char *why, size_t whylen)
{
	uint64_t due = s->pending.first_ms + s->o.commit_interval_ms;
	size_t done = 0;
	bool open = false;
	for (;;) {
		bool last = s->stop || s->urgent || gw_mono_ms() >= due ||
		            s->work.n + s->pending.n >= s->o.commit_max_records;
		if (last) {
			s->held_waiter = true;
			while (s->held)
				pthread_cond_wait(&s->cv, &s->mu);
			s->held_waiter = false;
			pthread_cond_broadcast(&s->hold_cv);   /* gw_store_hold */
		}
		struct arena got = {0};
		take_pending(s, &got);
		if (last)
			s->urgent = false;
		size_t end = s->work.len;
		pthread_mutex_unlock(&s->mu);
		if (got.n) {
			memcpy(s->work.buf + end, got.buf, got.len);
			end += got.len;
		}
		int rc = open ? SQLITE_OK : batch_begin(s);
		open = open || rc == SQLITE_OK;
		if (rc == SQLITE_OK)
			rc = batch_items(s, &done, end, counts);
		if (rc == SQLITE_OK && last)
			rc = batch_commit(s);
		if (rc != SQLITE_OK)
			batch_fail(s, rc, open, why, whylen);
		pthread_mutex_lock(&s->mu);
		if (got.n) {
			/* the copied rows are the batch's now (a retry writes them
			 * too); the queue's old arena is the next spare */
			s->work.len = end;
			s->work.n += got.n;
			s->work.last_seq = got.last_seq;
			got.len = got.n = 0;
			s->spare = got;
		}
		if (rc != SQLITE_OK || last)
			return rc;
		uint64_t now = gw_mono_ms();
		if (now < due && !s->urgent && !s->stop &&
		    s->work.n + s->pending.n < s->o.commit_max_records)
			gw__store_timed_wait(&s->cv, &s->mu, GW_MIN(due - now, (uint64_t)SLICE_MS));
	}
}

/* Tell the owner a commit ended (or failed): under notify_mu, see
 * gw_store_set_notify. */
static void notify(struct gw_store *s)
{
	pthread_mutex_lock(&s->notify_mu);
	if (s->o.notify)
		s->o.notify(s->o.notify_data);
	pthread_mutex_unlock(&s->notify_mu);
}

void *gw__store_writer_main(void *arg)
{
	struct gw_store *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		s->writer_idle = true;
		while (!s->pending.n && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		s->writer_idle = false;
		if (!s->pending.n && s->stop)
			break;
		uint64_t counts[C_N] = {0};
		unsigned attempt = 0;
		char why[200];
		int rc = write_incrementally(s, counts, why, sizeof(why));
		pthread_mutex_unlock(&s->mu);
		while (rc != SQLITE_OK) {
			pthread_mutex_lock(&s->mu);
			s->last_error = gw__store_errno(rc);
			snprintf(s->last_error_msg, sizeof(s->last_error_msg), "%s", why);
			bool stopping = s->stop;
			pthread_mutex_unlock(&s->mu);
			if (attempt++ == 0)
				gw_log_err("store: commit of %zu items failed: %s (retrying every 200 ms; "
				           "nothing is acknowledged until it works)", s->work.n, why);
			memset(counts, 0, sizeof(counts));
			/* the loop hears of the failure at once: requests waiting for
			 * this commit are answered with the cause instead of hanging */
			notify(s);
			/* retry with back-off; at shutdown give up after a few tries */
			if (stopping && attempt >= 5) {
				pthread_mutex_lock(&s->mu);
				s->dropped += s->work.n;
				pthread_mutex_unlock(&s->mu);
				gw_log_crit("store: shutting down with %zu queued items that could not be "
				            "committed: %s; they are LOST (records, events, alerts or outbox "
				            "rows received but never acknowledged)", s->work.n, why);
				break;
			}
			struct timespec d = {0, 200 * 1000000L};
			nanosleep(&d, NULL);
			rc = write_batch(s, counts, why, sizeof(why));
		}
		if (rc == SQLITE_OK && attempt)
			gw_log_warn("store: the commit works again after %u failed attempts", attempt);
		pthread_mutex_lock(&s->mu);
		if (rc == SQLITE_OK) {
			s->last_error = 0;
			s->last_error_msg[0] = '\0';
			s->commits++;
			for (int k = 0; k < C_N; k++)
				s->n[k] += counts[k];
			atomic_store(&s->committed, s->work.last_seq);
		}
		s->work.len = s->work.n = 0;
		atomic_store(&s->pending_bytes, s->pending.len);
		pthread_mutex_unlock(&s->mu);
		notify(s);
		if (rc == SQLITE_OK)
			gw__store_wal_restart(s);   /* after notify: store_ckpt.c */
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Prepare the writer's statements: transaction control, the store's rows,
 * each schema's rows. */
int gw__store_prepare(struct gw_store *s, char *err, size_t errlen)
{
	size_t n = S_NCORE;
	for (size_t k = 0; k < s->n_schemas; k++) {
		s->schema_base[k] = (unsigned)n;
		n += s->schemas[k]->n_statements;
	}
	if (n > UINT16_MAX || !(s->st = calloc(n, sizeof(*s->st))))
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	s->n_st = n;
	for (size_t k = 0; k < T_COUNT + n; k++) {
		const char *sql;
		sqlite3_stmt **out;
		if (k < T_COUNT) {
			sql = tx_sql[k];
			out = &s->tx[k];
		} else {
			size_t i = k - T_COUNT;
			out = &s->st[i];
			if (i < S_NCORE) {
				sql = core[i].sql;
			} else {
				size_t j = s->n_schemas;
				while (j > 0 && s->schema_base[j - 1] > i)
					j--;
				sql = s->schemas[j - 1]->statements[i - s->schema_base[j - 1]];
			}
		}
		if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL) != SQLITE_OK)
			return gw_errf(err, errlen, -EIO, "database %s: preparing \"%.60s...\": %s", s->path,
			               sql, sqlite3_errmsg(s->db));
	}
	return 0;
}
