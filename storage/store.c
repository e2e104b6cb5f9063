/*
 * SQLite storage with a writer thread (see store.h).
 *
 * The queue is an arena of variable-size items: a row's statement, its
 * typed values, then the bytes of its text values.  Producers append under
 * the mutex;
 * the writer swaps the whole arena for an empty one under the mutex and
 * writes it outside it, so producers wait at most for a pointer swap, never
 * for the disk.  The writer keeps a cache of run name -> runs.id (an array
 * of runs in the order first met, indexed by a gw_strtab on their names)
 * and updates each touched run's last position once per transaction.  The
 * tables and their migrations are schema.c's.
 *
 * (About 1,000 lines: the queue and the writer thread are the two sides of
 * one structure, struct gw_store, its arena items and its statement table,
 * and read best beside each other; taking the writer apart would put all of
 * that in an internal header.)
 *
 * Test hook (fault injection, tests/integration/test_crash.py): with
 * GRADWATCH_FAULT_CRASH_COMMIT=N in the environment at gw_store_open(), the
 * writer kills the whole process with SIGKILL right before its Nth COMMIT
 * (counting the writer's transactions since open, failed ones included),
 * so a test can crash the daemon between any two transactions and check
 * what a restart finds.  Unset or 0: no effect.  Not for production use.
 */
#include "store.h"
#include "schema.h"
#include "series.h"

#include "buf.h"
#include "log.h"
#include "strtab.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One queued row: statement index, values, then the text bytes. */
struct val {
	uint32_t type;        /* enum gw_sv_type */
	uint32_t len;         /* TEXT, RUN: bytes (the text is NUL-terminated too) */
	union {
		int64_t i;
		double d;
		uint64_t off;     /* TEXT, RUN: offset of the bytes from the item start */
	} u;
};

struct item {
	uint32_t size;        /* whole item, 8-aligned */
	uint16_t stmt;        /* index into gw_store.st */
	uint16_t nval;
	uint64_t seq;
	struct val v[];
};

struct arena {
	char *buf;
	size_t len, cap;
	size_t n;
	uint64_t last_seq;
	uint64_t first_ms;    /* monotonic ms when the first item went in */
};

/* The writer's cache of one run: its runs.id (-1 once the run was deleted:
 * resolved again on its next row) and the position it moved to in this
 * batch (dirty: the runs row is updated before the commit). */
struct run_slot {
	char *name;           /* the key of its entry in runs_by_name */
	int64_t id;
	int64_t seg, last_step;
	double last_ts, last_seen;
	bool dirty;
};


/* The store's own statements: the public ones (enum gw_store_stmt) first.
 * `counter` is the stats counter a row bumps; pos_* are the indices of the
 * values that move the run's position (seg, step, ts), -1 when unused. */
enum {
	S_RECORD = GW_STORE_NSTMT_PUBLIC, S_EVENT, S_SEGMENT, S_META, S_RANK_LINE, S_WRITERS,
	S_RUN_END, S_DEL_RECORDS, S_DEL_EVENTS, S_DEL_SEGMENTS, S_DEL_ALERTS, S_DEL_TILES,
	S_DEL_RANK_LINES, S_DEL_RANKS, S_DEL_RUN, S_NCORE,
};

enum counter { C_NONE, C_RECORDS, C_EVENTS, C_SEGMENTS, C_ALERTS, C_N };

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
enum { T_BEGIN, T_COMMIT, T_ROLLBACK, T_RUN_GET, T_RUN_INS, T_RUN_UPD, T_COUNT };

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

#define MAX_SCHEMAS 8

struct gw_store {
	struct gw_store_opts o;
	char *path;
	sqlite3 *db;
	pthread_t thread;
	bool started;
	pthread_t ckpt_thread;     /* folds the WAL back, off the writer's path */
	bool ckpt_started;
	pthread_cond_t ckpt_cv;
	_Atomic int wal_frames;    /* frames in the WAL after the last commit (wal hook) */

	pthread_mutex_t mu;
	pthread_mutex_t notify_mu;     /* held while o.notify runs (gw_store_set_notify) */
	pthread_cond_t cv;
	struct arena pending;
	uint64_t seq;            /* last sequence handed out */
	bool urgent, stop;
	unsigned held;           /* gw_store_hold() depth: do not take the queue */
	_Atomic uint64_t committed;
	_Atomic size_t pending_bytes;

	/* the statements: the store's own (S_NCORE), then each schema's */
	const struct gw_store_schema *schemas[MAX_SCHEMAS];
	unsigned schema_base[MAX_SCHEMAS];
	size_t n_schemas;
	sqlite3_stmt **st;
	size_t n_st;
	sqlite3_stmt *tx[T_COUNT];

	/* writer-thread only */
	struct arena work;
	struct run_slot *runs;         /* in the order first met */
	size_t runs_cap, runs_n;
	struct gw_strtab runs_by_name; /* name -> index into runs */
	struct gw__tiles *tiles;       /* chart extremes of this batch (series.c) */
	uint64_t commit_attempts;      /* COMMITs tried (the fault hook counts them) */
	uint64_t crash_at_commit;      /* GRADWATCH_FAULT_CRASH_COMMIT, 0: off */

	/* stats, under mu */
	uint64_t commits, n[C_N];
	uint64_t dropped;        /* items given up at shutdown (never committed) */
	int last_error;
	char last_error_msg[200];
};

static double wall_now(void)
{
	return gw_wall_now();
}

/* ---- arena ------------------------------------------------------------------ */

static struct item *arena_alloc(struct arena *a, size_t size)
{
	size = (size + 7) & ~(size_t)7;
	/* at least 64 KiB, so a batch does not start with a string of reallocs */
	if (gw_grow((void **)&a->buf, &a->cap, GW_MAX(a->len + size, (size_t)1 << 16), 1) < 0)
		return NULL;
	struct item *it = (struct item *)(a->buf + a->len);
	memset(it, 0, sizeof(*it));
	it->size = (uint32_t)size;
	a->len += size;
	a->n++;
	return it;
}

struct gw_sv gw_sv_text(const char *s)
{
	return gw_sv_textn(s, s ? strlen(s) : 0);
}

struct gw_sv gw_sv_run(const char *s, size_t len)
{
	return (struct gw_sv){.t = GW_SV_RUN, .s = s, .n = len};
}

static bool has_bytes(enum gw_sv_type t)
{
	return t == GW_SV_TEXT || t == GW_SV_RUN;
}

/* Append a row of statement st; returns its seq or 0. */
static uint64_t put(struct gw_store *s, unsigned st, const struct gw_sv *v, size_t n)
{
	size_t total = sizeof(struct item) + n * sizeof(struct val);
	for (size_t k = 0; k < n; k++)
		if (has_bytes(v[k].t))
			total += v[k].n + 1;
	if (n > UINT16_MAX || total > UINT32_MAX / 2)
		return 0;
	pthread_mutex_lock(&s->mu);
	struct item *it = arena_alloc(&s->pending, total);
	if (!it) {
		pthread_mutex_unlock(&s->mu);
		return 0;
	}
	it->stmt = (uint16_t)st;
	it->nval = (uint16_t)n;
	it->seq = ++s->seq;
	size_t off = sizeof(struct item) + n * sizeof(struct val);
	for (size_t k = 0; k < n; k++) {
		struct val *x = &it->v[k];
		x->type = v[k].t;
		if (v[k].t == GW_SV_INT) {
			x->u.i = v[k].i;
		} else if (v[k].t == GW_SV_REAL) {
			x->u.d = v[k].d;
		} else if (has_bytes(v[k].t)) {
			char *p = (char *)it + off;
			if (v[k].n)
				memcpy(p, v[k].s, v[k].n);
			p[v[k].n] = '\0';
			x->len = (uint32_t)v[k].n;
			x->u.off = off;
			off += v[k].n + 1;
		}
	}
	struct arena *a = &s->pending;
	a->last_seq = it->seq;
	bool wake = a->n == 1 || a->n == s->o.commit_max_records;
	if (a->n == 1)
		a->first_ms = gw_mono_ms();
	atomic_store(&s->pending_bytes, a->len);
	uint64_t seq = it->seq;
	pthread_mutex_unlock(&s->mu);
	if (wake)
		pthread_cond_signal(&s->cv);
	return seq;
}

static const char *val_text(const struct item *it, const struct val *x)
{
	return (const char *)it + x->u.off;
}

uint64_t gw_store_put(struct gw_store *s, const struct gw_store_schema *schema, unsigned stmt,
                      const struct gw_sv *v, size_t n)
{
	if (!schema)
		return stmt < GW_STORE_NSTMT_PUBLIC ? put(s, stmt, v, n) : 0;
	for (size_t k = 0; k < s->n_schemas; k++)
		if (s->schemas[k] == schema)
			return stmt < schema->n_statements ? put(s, s->schema_base[k] + stmt, v, n) : 0;
	return 0;
}

/* ---- the store's own rows --------------------------------------------------------- */

/* One member "name":value of the extras' JSON object at buf + n; returns
 * the new length.  buf has room for strlen(name) * 6 + 44 bytes more. */
static size_t extra_member(char *buf, size_t n, const char *name, double v)
{
	if (n > 1)
		buf[n++] = ',';
	buf[n++] = '"';
	for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
		if (*c == '"' || *c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)*c;
		} else if (*c < 0x20) {
			n += (size_t)snprintf(buf + n, 7, "\\u%04x", *c);
		} else {
			buf[n++] = (char)*c;
		}
	}
	buf[n++] = '"';
	buf[n++] = ':';
	/* valid JSON, so SQLite's json functions can read it: non-finite
	 * values become strings, as in event attributes */
	bool fin = isfinite(v);
	if (!fin)
		buf[n++] = '"';
	n += (size_t)gw_wire_fmt_double(buf + n, v);
	if (!fin)
		buf[n++] = '"';
	return n;
}

/* Extras as a JSON object text: the fp16 fields (wire.h enum gw_field,
 * under their canonical names; the four roles are the only typed
 * columns), then the other extras. */
static char *extras_json(const struct gw_rec *rec, size_t *len)
{
	size_t cap = 64 + GW_NFIELDS * 64, n = 0;
	for (size_t k = 0; k < rec->n_extra; k++)
		cap += strlen(rec->extra[k].name) * 6 + 44;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	buf[n++] = '{';
	for (int f = 0; f < GW_NFIELDS; f++)
		if (gw_rec_has_field(rec, (enum gw_field)f))
			n = extra_member(buf, n, gw_field_name((enum gw_field)f), rec->f[f]);
	for (size_t k = 0; k < rec->n_extra; k++)
		n = extra_member(buf, n, rec->extra[k].name, rec->extra[k].value);
	buf[n++] = '}';
	buf[n] = '\0';
	*len = n;
	return buf;
}

uint64_t gw_store_put_record(struct gw_store *s, const struct gw_rec *rec,
                             int64_t seg, uint64_t line, double recv)
{
	unsigned nonfinite = 0;
	struct gw_sv v[13] = {
		gw_sv_run(rec->run, rec->run_len), gw_sv_int(seg), gw_sv_int(rec->step),
		gw_sv_int((int64_t)line), gw_sv_real(rec->ts), gw_sv_real(recv),
	};
	for (int r = 0; r < GW_NROLES; r++) {
		bool has = gw_rec_has(rec, r);
		v[6 + r] = gw_sv_real(has ? rec->v[r] : NAN);
		if (has && isnan(rec->v[r]))
			nonfinite |= 1u << r;
	}
	v[10] = gw_sv_int(nonfinite);
	size_t elen = 0;
	bool any = rec->n_extra || rec->fields;
	char *ex = any ? extras_json(rec, &elen) : NULL;
	if (any && !ex)
		return 0;
	v[11] = gw_sv_textn(ex, elen);
	v[12] = rec->has_rank ? gw_sv_int(rec->rank) : (struct gw_sv){.t = GW_SV_NULL};
	uint64_t seq = put(s, S_RECORD, v, 13);
	free(ex);
	return seq;
}

uint64_t gw_store_put_event(struct gw_store *s, const struct gw_rec *rec,
                            int64_t seg, uint64_t line, double recv)
{
	char *attrs = json_dumps(rec->attrs, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	if (!attrs)
		return 0;
	struct gw_sv v[8] = {
		gw_sv_run(rec->run, rec->run_len), gw_sv_int(seg), gw_sv_int(rec->step),
		gw_sv_int((int64_t)line), gw_sv_real(rec->ts), gw_sv_real(recv),
		gw_sv_text(rec->event), gw_sv_text(attrs),
	};
	uint64_t seq = put(s, S_EVENT, v, 8);
	free(attrs);
	return seq;
}

uint64_t gw_store_put_rank_line(struct gw_store *s, const struct gw_rec *rec, uint64_t line,
                                double recv)
{
	struct gw_buf body = {0};
	if (gw_wire_append_rec(&body, rec) < 0) {
		gw_buf_free(&body);
		return 0;
	}
	struct gw_sv v[7] = {
		gw_sv_run(rec->run, rec->run_len), gw_sv_int(rec->has_rank ? (int64_t)rec->rank : -1),
		gw_sv_int(rec->step),
		gw_sv_int((int64_t)line), gw_sv_real(rec->ts), gw_sv_real(recv),
		gw_sv_textn(body.p, body.len - 1),   /* without its newline */
	};
	uint64_t seq = put(s, S_RANK_LINE, v, 7);
	gw_buf_free(&body);
	return seq;
}

uint64_t gw_store_put_writers(struct gw_store *s, const char *run, const char *note)
{
	const struct gw_sv v[] = {gw_sv_run(run, strlen(run)), gw_sv_text(note)};
	return put(s, S_WRITERS, v, 2);
}

uint64_t gw_store_put_segment(struct gw_store *s, const char *run, int64_t seg,
                              const char *reason, int64_t first_step, int64_t restart_step,
                              uint64_t line, double ts, double wall)
{
	struct gw_sv v[8] = {
		gw_sv_run(run, strlen(run)), gw_sv_int(seg), gw_sv_text(reason), gw_sv_int(first_step),
		restart_step >= 0 ? gw_sv_int(restart_step) : (struct gw_sv){.t = GW_SV_NULL},
		gw_sv_int((int64_t)line), gw_sv_real(ts), gw_sv_real(wall),
	};
	return put(s, S_SEGMENT, v, 8);
}

uint64_t gw_store_delete_run(struct gw_store *s, const char *run)
{
	const struct gw_sv v[] = {gw_sv_text(run)};
	uint64_t seq = 0;
	gw_store_hold(s);
	/* the modules' rows first: they may find theirs through the run's */
	for (size_t k = 0; k < s->n_schemas; k++) {
		const struct gw_store_schema *sc = s->schemas[k];
		for (size_t i = 0; i < sc->n_delete_run; i++)
			if (sc->delete_run[i] >= sc->n_statements ||
			    !(seq = put(s, s->schema_base[k] + sc->delete_run[i], v, 1)))
				goto out;
	}
	for (unsigned st = S_DEL_RECORDS; st <= S_DEL_RUN; st++)
		if (!(seq = put(s, st, v, 1)))
			break;
out:
	gw_store_release(s);
	return seq;
}

uint64_t gw_store_put_run_end(struct gw_store *s, const char *run, int64_t seg, int64_t step,
                              const char *reason, double at)
{
	const struct gw_sv v[] = {gw_sv_run(run, strlen(run)), gw_sv_int(seg), gw_sv_int(step),
	                          gw_sv_text(reason), gw_sv_real(at)};
	return put(s, S_RUN_END, v, GW_ARRAY_SIZE(v));
}

uint64_t gw_store_put_meta(struct gw_store *s, const char *key, const char *value)
{
	struct gw_sv v[2] = {gw_sv_text(key), gw_sv_text(value)};
	return put(s, S_META, v, 2);
}

void gw_store_hold(struct gw_store *s)
{
	pthread_mutex_lock(&s->mu);
	s->held++;
	pthread_mutex_unlock(&s->mu);
}

void gw_store_release(struct gw_store *s)
{
	pthread_mutex_lock(&s->mu);
	GW_REQUIRE(s->held > 0);
	s->held--;
	pthread_mutex_unlock(&s->mu);
	pthread_cond_broadcast(&s->cv);
}

void gw_store_flush(struct gw_store *s)
{
	pthread_mutex_lock(&s->mu);
	s->urgent = true;
	pthread_mutex_unlock(&s->mu);
	pthread_cond_signal(&s->cv);
}

uint64_t gw_store_committed(const struct gw_store *s)
{
	return atomic_load(&((struct gw_store *)s)->committed);
}

uint64_t gw_store_queued(const struct gw_store *s)
{
	struct gw_store *m = (struct gw_store *)s;
	pthread_mutex_lock(&m->mu);
	uint64_t q = m->seq;
	pthread_mutex_unlock(&m->mu);
	return q;
}

bool gw_store_over(const struct gw_store *s, unsigned pct)
{
	return (uint64_t)atomic_load(&((struct gw_store *)s)->pending_bytes) * 100 >
	       (uint64_t)s->o.max_pending_bytes * pct;
}

void gw_store_stats(const struct gw_store *s, struct gw_store_stats *out)
{
	struct gw_store *m = (struct gw_store *)s;
	pthread_mutex_lock(&m->mu);
	out->pending_bytes = m->pending.len + m->work.len;
	out->commits = m->commits;
	out->records = m->n[C_RECORDS];
	out->events = m->n[C_EVENTS];
	out->segments = m->n[C_SEGMENTS];
	out->alerts = m->n[C_ALERTS];
	out->last_error = m->last_error;
	out->dropped = m->dropped;
	/* the batch being written is older than what queued since */
	out->oldest_pending_ms = m->work.n ? m->work.first_ms : m->pending.n ? m->pending.first_ms : 0;
	memcpy(out->last_error_msg, m->last_error_msg, sizeof(out->last_error_msg));
	pthread_mutex_unlock(&m->mu);
}

/* ---- writer --------------------------------------------------------------------- */

/* The cached run called name[0..len), or NULL. */
static struct run_slot *run_find(struct gw_store *s, const char *name, size_t len)
{
	uint32_t i;
	return gw_strtab_find(&s->runs_by_name, name, len, &i) == 0 ? &s->runs[i] : NULL;
}

/* Forget every cached run (after a rollback: the ids may name rows it
 * removed). */
static void runs_clear(struct gw_store *s)
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
			sqlite3_bind_text(st, k + 1, val_text(it, x), (int)x->len, SQLITE_STATIC);
			break;
		case GW_SV_RUN:
			if ((rc = run_id(s, val_text(it, x), x->len, now, &r)) != SQLITE_OK) {
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
		struct run_slot *gone = run_find(s, val_text(it, &it->v[0]), it->v[0].len);
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

static int write_batch(struct gw_store *s, uint64_t counts[C_N], char *why, size_t whylen)
{
	double now = wall_now();
	int rc = step_done(s->tx[T_BEGIN]);
	if (rc != SQLITE_OK) {
		failure(s, rc, why, whylen);
		return rc;
	}
	for (size_t off = 0; off < s->work.len;) {
		const struct item *it = (const struct item *)(s->work.buf + off);
		if ((rc = write_item(s, it, now, counts)) != SQLITE_OK)
			goto fail;
		off += it->size;
	}
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
			goto fail;
		r->dirty = false;
	}
	if ((rc = gw__tiles_flush(s->tiles, s->db)) != SQLITE_OK)
		goto fail;
	/* the test hook: die as kill -9 would, with this transaction open */
	if (++s->commit_attempts == s->crash_at_commit)
		kill(getpid(), SIGKILL);
	if ((rc = step_done(s->tx[T_COMMIT])) != SQLITE_OK)
		goto fail;
	return SQLITE_OK;
fail:
	failure(s, rc, why, whylen);
	step_done(s->tx[T_ROLLBACK]);
	gw__tiles_clear(s->tiles);
	/* the cache may hold ids of rows the rollback removed */
	runs_clear(s);
	return rc;
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

/* Wait on cv (mu held) for at most ms milliseconds.  The store's
 * condition variables run on CLOCK_MONOTONIC (cond_init): on the default
 * wall clock a step backwards (NTP at boot, a VM resumed) stretched the
 * wait by the step, and a stream's lines or the WAL checkpoints waited
 * with it. */
static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

static void *writer_main(void *arg)
{
	struct gw_store *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->pending.n && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->pending.n && s->stop)
			break;
		/* let the batch fill up to its size or age */
		while (!s->stop && !s->urgent && s->pending.n < s->o.commit_max_records) {
			uint64_t due = s->pending.first_ms + s->o.commit_interval_ms;
			uint64_t now = gw_mono_ms();
			if (now >= due)
				break;
			timed_wait(&s->cv, &s->mu, due - now);
		}
		/* a group of items queued under gw_store_hold() goes into one
		 * transaction: never split it */
		while (s->held)
			pthread_cond_wait(&s->cv, &s->mu);
		struct arena tmp = s->work;
		s->work = s->pending;
		s->pending = tmp;
		s->pending.len = s->pending.n = 0;
		s->urgent = false;
		atomic_store(&s->pending_bytes, s->work.len);
		pthread_mutex_unlock(&s->mu);

		uint64_t counts[C_N] = {0};
		int rc;
		unsigned attempt = 0;
		char why[200];
		while ((rc = write_batch(s, counts, why, sizeof(why))) != SQLITE_OK) {
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
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- checkpoints ------------------------------------------------------------------ */

/* SQLite's automatic checkpoint runs inside the COMMIT that crosses its
 * threshold, so one commit in a few hundred would wait for the whole WAL to
 * be copied (and, with synchronous=full, synced) into the database: tens of
 * milliseconds in the path of an HTTP acknowledgement or an alert.  Instead
 * this thread runs PASSIVE checkpoints on its own connection; they never
 * block the writer, and the writer starts the WAL over once one has caught
 * up.  It looks every CKPT_EVERY_MS and checkpoints when the WAL holds at
 * least CKPT_MIN_FRAMES (SQLite's own autocheckpoint threshold, 4 MB of
 * 4 KB pages): each checkpoint syncs the database file, and syncing after
 * every few commits cost the writer's fsyncs their latency under load. */
#define CKPT_EVERY_MS 250
#define CKPT_MIN_FRAMES 1000

/* The writer's WAL hook: how many frames the WAL holds after a commit. */
static int on_wal(void *arg, sqlite3 *db, const char *name, int frames)
{
	atomic_store(&((struct gw_store *)arg)->wal_frames, frames);
	return SQLITE_OK;
}

static void *checkpointer_main(void *arg)
{
	struct gw_store *s = arg;
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		gw_log_warn("store: checkpointer cannot open %s: %s", s->path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	/* a connection learns the database is in WAL mode when it first reads
	 * it; until then sqlite3_wal_checkpoint_v2 does nothing at all (this
	 * thread's checkpoints were all no-ops, and the WAL grew until close) */
	char *msg = NULL;
	if (sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, &msg) != SQLITE_OK) {
		gw_log_warn("store: checkpointer cannot read %s: %s; the WAL is folded back at close "
		            "only", s->path, msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		sqlite3_close(db);
		return NULL;
	}
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		timed_wait(&s->ckpt_cv, &s->mu, CKPT_EVERY_MS);
		if (s->stop)
			break;
		if (atomic_load(&s->wal_frames) < CKPT_MIN_FRAMES)
			continue;
		pthread_mutex_unlock(&s->mu);
		int frames = 0, done = 0;
		sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &frames, &done);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	sqlite3_close(db);
	return NULL;
}

/* ---- open / close ----------------------------------------------------------------- */

/* Prepare the writer's statements: transaction control, the store's rows,
 * each schema's rows. */
static int prepare_all(struct gw_store *s, char *err, size_t errlen)
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

int gw_store_open(const struct gw_store_opts *o, struct gw_store **out,
                  char *err, size_t errlen)
{
	struct gw_store *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (!s->o.commit_interval_ms)
		s->o.commit_interval_ms = 100;
	if (!s->o.commit_max_records)
		s->o.commit_max_records = 20000;
	if (!s->o.max_pending_bytes)
		s->o.max_pending_bytes = 256u << 20;
	s->path = strdup(o->path);
	if (!s->path || o->n_schemas > MAX_SCHEMAS) {
		bool oom = !s->path;
		free(s->path);
		free(s);
		return oom ? gw_errf(err, errlen, -ENOMEM, "out of memory")
		           : gw_errf(err, errlen, -EINVAL, "too many schemas");
	}
	for (size_t k = 0; k < o->n_schemas; k++)
		s->schemas[k] = o->schemas[k];
	s->n_schemas = o->n_schemas;
	s->o.schemas = NULL;
	const char *crash = getenv("GRADWATCH_FAULT_CRASH_COMMIT");
	if (crash && *crash) {
		s->crash_at_commit = strtoull(crash, NULL, 10);
		gw_log_warn("store: test hook GRADWATCH_FAULT_CRASH_COMMIT=%s: the process kills "
		            "itself before commit %" PRIu64, crash, s->crash_at_commit);
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->notify_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* timed_wait's clock */
	pthread_cond_init(&s->cv, &ca);
	pthread_cond_init(&s->ckpt_cv, &ca);
	pthread_condattr_destroy(&ca);
	int rc = sqlite3_open_v2(o->path, &s->db,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		gw_errf(err, errlen, -EIO, "cannot open database %s: %s", o->path,
		     s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		rc = gw__store_errno(rc);
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 5000);
	char e[256];
	const char *sync = o->sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL";
	/* journal_size_limit: a WAL that starts over after a burst is trimmed */
	char pragmas[192];
	snprintf(pragmas, sizeof(pragmas), "PRAGMA foreign_keys = OFF; PRAGMA cache_size = -65536; "
	         "PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = %d",
	         GW_STORE_WAL_KEEP_BYTES);
	if ((rc = gw__store_exec(s->db, "PRAGMA journal_mode = WAL", e, sizeof(e))) < 0 ||
	    (rc = gw__store_exec(s->db, sync, e, sizeof(e))) < 0 ||
	    (rc = gw__store_exec(s->db, pragmas, e, sizeof(e))) < 0) {
		gw_errf(err, errlen, -EIO, "database %s: %s", o->path, e);
		goto fail;
	}
	if ((rc = gw__store_migrate(s->db, o->path, s->schemas, s->n_schemas, err, errlen)) < 0 ||
	    (rc = prepare_all(s, err, errlen)) < 0)
		goto fail;
	if (!(s->tiles = gw__tiles_new())) {
		rc = -ENOMEM;
		goto fail;
	}
	sqlite3_wal_hook(s->db, on_wal, s);
	if (pthread_create(&s->ckpt_thread, NULL, checkpointer_main, s) == 0)
		s->ckpt_started = true;
	else
		gw_log_warn("store: no checkpointer thread; the WAL is folded back at close only");
	if (pthread_create(&s->thread, NULL, writer_main, s) != 0) {
		rc = -EAGAIN;
		gw_errf(err, errlen, -EIO, "cannot start the storage writer thread");
		goto fail;
	}
	s->started = true;
	*out = s;
	return 0;
fail:
	gw_store_close(s);
	return rc;
}

void gw_store_set_notify(struct gw_store *s, void (*fn)(void *data), void *data)
{
	pthread_mutex_lock(&s->notify_mu);
	s->o.notify = fn;
	s->o.notify_data = data;
	pthread_mutex_unlock(&s->notify_mu);
}

int gw_store_close(struct gw_store *s)
{
	if (!s)
		return 0;
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_mutex_unlock(&s->mu);
		pthread_cond_signal(&s->cv);
		pthread_join(s->thread, NULL);
	}
	if (s->ckpt_started) {
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_mutex_unlock(&s->mu);
		pthread_cond_signal(&s->ckpt_cv);
		pthread_join(s->ckpt_thread, NULL);
	}
	int rc = s->dropped ? -EIO : s->last_error;
	for (size_t k = 0; k < s->n_st; k++)
		sqlite3_finalize(s->st[k]);
	free(s->st);
	for (int k = 0; k < T_COUNT; k++)
		sqlite3_finalize(s->tx[k]);
	gw__tiles_free(s->tiles);
	if (s->db) {
		/* fold the WAL back so the file is complete on its own */
		sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
		sqlite3_close(s->db);
	}
	runs_clear(s);
	free(s->pending.buf);
	free(s->work.buf);
	free(s->path);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->notify_mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->ckpt_cv);
	free(s);
	return rc;
}
