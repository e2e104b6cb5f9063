/*
 * SQLite storage with a writer thread (see store.h).
 *
 * The queue is an arena of variable-size items (a fixed head of numbers
 * followed by NUL-terminated strings).  Producers append under the mutex;
 * the writer swaps the whole arena for an empty one under the mutex and
 * writes it outside it, so producers wait at most for a pointer swap, never
 * for the disk.  The writer keeps a cache of run name -> runs.id and updates
 * each touched run's last position once per transaction.
 */
#include "store.h"
#include "series.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum item_type {
	IT_RECORD = 1,
	IT_EVENT,
	IT_SEGMENT,
	IT_ALERT,
	IT_META,
	IT_OUTBOX,      /* alert delivery (alerts/outbox.c): one alert event */
	IT_DELIVERY,    /* alert delivery: one (event, sink) state */
};

#define NSTR 10

struct item {
	uint32_t type;
	uint32_t size;        /* whole item, 8-aligned */
	uint64_t seq;
	int64_t i[4];
	double d[7];
	uint32_t u[2];
	uint32_t slen[NSTR];
	char str[];           /* the strings, each NUL-terminated, in order */
};

struct arena {
	char *buf;
	size_t len, cap;
	size_t n;
	uint64_t last_seq;
	uint64_t first_ms;    /* monotonic ms when the first item went in */
};

struct run_slot {
	char *name;
	uint32_t hash;
	int64_t id;
	int64_t seg, last_step;
	double last_ts, last_seen;
	bool dirty;
};

struct gw_store {
	struct gw_store_opts o;
	char *path;
	sqlite3 *db;
	pthread_t thread;
	bool started;
	pthread_t ckpt_thread;     /* folds the WAL back, off the writer's path */
	bool ckpt_started;
	pthread_cond_t ckpt_cv;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct arena pending;
	uint64_t seq;            /* last sequence handed out */
	bool urgent, stop;
	unsigned held;           /* gw_store_hold() depth: do not take the queue */
	_Atomic uint64_t committed;
	_Atomic size_t pending_bytes;

	/* writer-thread only */
	struct arena work;
	struct run_slot *runs;
	size_t runs_cap, runs_n;
	sqlite3_stmt *st[16];
	struct gw__tiles *tiles;   /* chart extremes of this batch (series.c) */

	/* stats, under mu */
	uint64_t commits, n_rec, n_ev, n_seg, n_alert;
	int last_error;
	char last_error_msg[160];
};

enum {
	S_BEGIN, S_COMMIT, S_ROLLBACK, S_RUN_GET, S_RUN_INS, S_RUN_UPD,
	S_RECORD, S_EVENT, S_SEGMENT, S_ALERT_OPEN, S_ALERT_UPDATE, S_ALERT_RESOLVE,
	S_META, S_OUTBOX, S_DELIVERY, S_COUNT,
};

static const char *const stmt_sql[S_COUNT] = {
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_RUN_GET] = "SELECT id, last_seg, last_step, last_ts FROM runs WHERE name = ?1",
	[S_RUN_INS] = "INSERT INTO runs(name, first_seen, last_seen, last_seg, last_step, last_ts) "
	              "VALUES(?1, ?2, ?2, 0, NULL, NULL)",
	[S_RUN_UPD] = "UPDATE runs SET last_seen = ?2, last_seg = ?3, last_step = ?4, "
	              "last_ts = ?5 WHERE id = ?1",
	[S_RECORD] = "INSERT INTO records(run_id, seg, step, line, ts, recv, loss, grad_norm, lr, "
	             "throughput, nonfinite, extra) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
	[S_EVENT] = "INSERT INTO events(run_id, seg, step, line, ts, recv, name, attrs) "
	            "VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
	[S_SEGMENT] = "INSERT OR REPLACE INTO segments(run_id, seg, reason, first_step, "
	              "restart_step, first_line, ts, opened) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
	[S_ALERT_OPEN] = "INSERT INTO alerts(id, run_id, seg, step, line, detector, severity, state, "
	                 "summary, cause, action, evidence, ts, created, updated, version) "
	                 "VALUES(?1,?2,?3,?4,?5,?6,?7,'open',?8,?9,?10,?11,?12,?13,?13,1) "
	                 "ON CONFLICT(id) DO UPDATE SET severity = excluded.severity, state = 'open', "
	                 "summary = excluded.summary, cause = excluded.cause, action = excluded.action, "
	                 "evidence = excluded.evidence, updated = excluded.updated, "
	                 "last_step = excluded.step, version = version + 1",
	[S_ALERT_UPDATE] = "UPDATE alerts SET severity = ?2, summary = ?3, cause = ?4, action = ?5, "
	                   "evidence = ?6, updated = ?7, last_step = ?8, last_line = ?9, "
	                   "version = version + 1 WHERE id = ?1",
	[S_ALERT_RESOLVE] = "UPDATE alerts SET state = 'resolved', resolved = ?2, updated = ?2, "
	                    "last_step = ?3, version = version + 1 WHERE id = ?1",
	[S_META] = "INSERT INTO meta(key, value) VALUES(?1, ?2) "
	           "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
	/* alert delivery (alerts/outbox.c) */
	[S_OUTBOX] = "INSERT INTO outbox(alert_id, version, kind, run, created, alert) "
	             "VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT(alert_id, version) DO NOTHING",
	[S_DELIVERY] = "INSERT INTO deliveries(alert_id, version, sink, state, attempts, updated, "
	               "delivered, last_status, last_error) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9) "
	               "ON CONFLICT(alert_id, version, sink) DO UPDATE SET state = excluded.state, "
	               "attempts = excluded.attempts, updated = excluded.updated, "
	               "delivered = excluded.delivered, last_status = excluded.last_status, "
	               "last_error = excluded.last_error",
};

/* Schema migrations: migrations[v] takes the database from version v to
 * v + 1.  Never edit a released step; add one. */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE runs(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
	"  first_seen REAL, last_seen REAL, last_seg INTEGER NOT NULL DEFAULT 0,"
	"  last_step INTEGER, last_ts REAL);"
	"CREATE TABLE segments(run_id INTEGER NOT NULL REFERENCES runs(id), seg INTEGER NOT NULL,"
	"  reason TEXT NOT NULL, first_step INTEGER, restart_step INTEGER, first_line INTEGER,"
	"  ts REAL, opened REAL, PRIMARY KEY(run_id, seg)) WITHOUT ROWID;"
	"CREATE TABLE records(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, seg INTEGER NOT NULL,"
	"  step INTEGER NOT NULL, line INTEGER, ts REAL, recv REAL, loss REAL, grad_norm REAL,"
	"  lr REAL, throughput REAL, nonfinite INTEGER NOT NULL DEFAULT 0, extra TEXT);"
	"CREATE INDEX records_by_run ON records(run_id, seg, step);"
	"CREATE TABLE events(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, seg INTEGER NOT NULL,"
	"  step INTEGER NOT NULL, line INTEGER, ts REAL, recv REAL, name TEXT NOT NULL, attrs TEXT);"
	"CREATE INDEX events_by_run ON events(run_id, seg, step);"
	"CREATE TABLE alerts(id TEXT PRIMARY KEY, run_id INTEGER NOT NULL, seg INTEGER NOT NULL,"
	"  step INTEGER NOT NULL, line INTEGER, detector TEXT NOT NULL, severity TEXT NOT NULL,"
	"  state TEXT NOT NULL, summary TEXT NOT NULL, cause TEXT, action TEXT, evidence TEXT,"
	"  ts REAL, created REAL, updated REAL, resolved REAL, last_step INTEGER, last_line INTEGER,"
	"  version INTEGER NOT NULL DEFAULT 1);"
	"CREATE INDEX alerts_by_run ON alerts(run_id, created);",
	/* 1 -> 2: the alert delivery outbox (alerts/outbox.c, docs/alerts.md).
	 * outbox: one row per alert event (open, update, resolve) with the
	 * alert as it was then; deliveries: its state at each sink. */
	"CREATE TABLE outbox(seq INTEGER PRIMARY KEY, alert_id TEXT NOT NULL,"
	"  version INTEGER NOT NULL, kind TEXT NOT NULL, run TEXT NOT NULL, created REAL NOT NULL,"
	"  alert TEXT NOT NULL, UNIQUE(alert_id, version));"
	"CREATE TABLE deliveries(alert_id TEXT NOT NULL, version INTEGER NOT NULL,"
	"  sink TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
	"  updated REAL, delivered REAL, last_status INTEGER, last_error TEXT,"
	"  PRIMARY KEY(alert_id, version, sink)) WITHOUT ROWID;"
	"CREATE INDEX deliveries_pending ON deliveries(state) WHERE state = 'pending';",
	/* 2 -> 3: per 256-step tile of each run and segment, the steps of the
	 * records holding the chart's extremes (storage/series.c), filled from
	 * the records already stored; the writer keeps it current. */
	GW_SERIES_TILES_MIGRATION,
};

#define SCHEMA_VERSION ((int)GW_ARRAY_SIZE(migrations))

static int sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK: return 0;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_BUSY:
	case SQLITE_LOCKED: return -EBUSY;
	case SQLITE_CANTOPEN: return -ENOENT;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH: return -EACCES;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB: return -EILSEQ;
	default: return -EIO;
	}
}

static double wall_now(void)
{
	return gw_wall_now();
}

/* ---- arena ------------------------------------------------------------------ */

static struct item *arena_alloc(struct arena *a, size_t size)
{
	size = (size + 7) & ~(size_t)7;
	if (a->len + size > a->cap) {
		size_t ncap = a->cap ? a->cap : 1 << 16;
		while (ncap < a->len + size)
			ncap *= 2;
		char *nb = realloc(a->buf, ncap);
		if (!nb)
			return NULL;
		a->buf = nb;
		a->cap = ncap;
	}
	struct item *it = (struct item *)(a->buf + a->len);
	memset(it, 0, sizeof(*it));
	it->size = (uint32_t)size;
	a->len += size;
	a->n++;
	return it;
}

/* Append an item with the given strings; returns its seq or 0. */
static uint64_t put(struct gw_store *s, uint32_t type, const int64_t i[4],
                    const double d[7], const uint32_t u[2], const char *const strs[],
                    const size_t lens[], int nstr)
{
	size_t total = sizeof(struct item);
	for (int k = 0; k < nstr; k++)
		total += lens[k] + 1;
	pthread_mutex_lock(&s->mu);
	struct item *it = arena_alloc(&s->pending, total);
	if (!it) {
		pthread_mutex_unlock(&s->mu);
		return 0;
	}
	it->type = type;
	it->seq = ++s->seq;
	if (i)
		memcpy(it->i, i, sizeof(it->i));
	if (d)
		memcpy(it->d, d, sizeof(it->d));
	if (u)
		memcpy(it->u, u, sizeof(it->u));
	char *p = it->str;
	for (int k = 0; k < nstr; k++) {
		it->slen[k] = (uint32_t)lens[k];
		if (lens[k])
			memcpy(p, strs[k], lens[k]);
		p[lens[k]] = '\0';
		p += lens[k] + 1;
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

static const char *item_str(const struct item *it, int k)
{
	const char *p = it->str;
	for (int j = 0; j < k; j++)
		p += it->slen[j] + 1;
	return p;
}

/* ---- producers ------------------------------------------------------------------ */

/* Extras as a JSON object text. */
static char *extras_json(const struct gw_rec *rec, size_t *len)
{
	size_t cap = 64, n = 0;
	for (size_t k = 0; k < rec->n_extra; k++)
		cap += strlen(rec->extra[k].name) * 6 + 44;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	buf[n++] = '{';
	for (size_t k = 0; k < rec->n_extra; k++) {
		if (k)
			buf[n++] = ',';
		buf[n++] = '"';
		for (const unsigned char *c = (const unsigned char *)rec->extra[k].name; *c; c++) {
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
		bool fin = isfinite(rec->extra[k].value);
		if (!fin)
			buf[n++] = '"';
		n += (size_t)gw_wire_fmt_double(buf + n, rec->extra[k].value);
		if (!fin)
			buf[n++] = '"';
	}
	buf[n++] = '}';
	buf[n] = '\0';
	*len = n;
	return buf;
}

uint64_t gw_store_put_record(struct gw_store *s, const struct gw_rec *rec,
                             int64_t seg, uint64_t line, double recv)
{
	int64_t i[4] = {seg, rec->step, (int64_t)line, 0};
	double d[7] = {rec->ts, recv};
	uint32_t u[2] = {rec->present, 0};
	for (int r = 0; r < GW_NROLES; r++) {
		d[2 + r] = gw_rec_has(rec, r) ? rec->v[r] : NAN;
		if (gw_rec_has(rec, r) && isnan(rec->v[r]))
			u[1] |= 1u << r;
	}
	size_t elen = 0;
	char *ex = rec->n_extra ? extras_json(rec, &elen) : NULL;
	if (rec->n_extra && !ex)
		return 0;
	const char *strs[2] = {rec->run, ex ? ex : ""};
	size_t lens[2] = {rec->run_len, elen};
	uint64_t seq = put(s, IT_RECORD, i, d, u, strs, lens, 2);
	free(ex);
	return seq;
}

uint64_t gw_store_put_event(struct gw_store *s, const struct gw_rec *rec,
                            int64_t seg, uint64_t line, double recv)
{
	int64_t i[4] = {seg, rec->step, (int64_t)line, 0};
	double d[7] = {rec->ts, recv};
	char *attrs = json_dumps(rec->attrs, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	if (!attrs)
		return 0;
	const char *strs[3] = {rec->run, rec->event, attrs};
	size_t lens[3] = {rec->run_len, strlen(rec->event), strlen(attrs)};
	uint64_t seq = put(s, IT_EVENT, i, d, NULL, strs, lens, 3);
	free(attrs);
	return seq;
}

uint64_t gw_store_put_segment(struct gw_store *s, const struct gw_segment_info *si,
                              double wall)
{
	int64_t i[4] = {si->seg, si->first_step, si->restart_step, (int64_t)si->line};
	double d[7] = {si->ts, wall};
	const char *reason = gw_seg_reason_name(si->reason);
	const char *strs[2] = {si->run, reason};
	size_t lens[2] = {strlen(si->run), strlen(reason)};
	return put(s, IT_SEGMENT, i, d, NULL, strs, lens, 2);
}

uint64_t gw_store_put_alert(struct gw_store *s, const struct gw_alert *a)
{
	int64_t i[4] = {a->seg, a->step, (int64_t)a->line, 0};
	double d[7] = {a->ts, isnan(a->wall) ? wall_now() : a->wall};
	uint32_t u[2] = {(uint32_t)a->kind, (uint32_t)a->severity};
	char *ev = a->evidence ? json_dumps(a->evidence, JSON_COMPACT | JSON_REAL_PRECISION(12))
	                       : strdup("{}");
	if (!ev)
		return 0;
	const char *strs[7] = {a->id, a->run, a->detector, a->summary ? a->summary : "",
	                       a->cause ? a->cause : "", a->action ? a->action : "", ev};
	size_t lens[7];
	for (int k = 0; k < 7; k++)
		lens[k] = strlen(strs[k]);
	uint64_t seq = put(s, IT_ALERT, i, d, u, strs, lens, 7);
	free(ev);
	return seq;
}

uint64_t gw_store_put_meta(struct gw_store *s, const char *key, const char *value)
{
	const char *strs[2] = {key, value};
	size_t lens[2] = {strlen(key), strlen(value)};
	return put(s, IT_META, NULL, NULL, NULL, strs, lens, 2);
}

/* ---- alert delivery (alerts/outbox.c) ---------------------------------------- */

uint64_t gw_store_put_outbox(struct gw_store *s, const char *alert_id, int64_t version,
                             const char *kind, const char *run, const char *alert_json,
                             double created)
{
	int64_t i[4] = {version};
	double d[7] = {created};
	const char *strs[4] = {alert_id, kind, run, alert_json};
	size_t lens[4] = {strlen(alert_id), strlen(kind), strlen(run), strlen(alert_json)};
	return put(s, IT_OUTBOX, i, d, NULL, strs, lens, 4);
}

uint64_t gw_store_put_delivery(struct gw_store *s, const struct gw_store_delivery *dv)
{
	int64_t i[4] = {dv->version, dv->attempts, dv->last_status};
	double d[7] = {dv->updated, dv->delivered};
	const char *err = dv->last_error ? dv->last_error : "";
	const char *strs[4] = {dv->alert_id, dv->sink, dv->state, err};
	size_t lens[4] = {strlen(dv->alert_id), strlen(dv->sink), strlen(dv->state), strlen(err)};
	return put(s, IT_DELIVERY, i, d, NULL, strs, lens, 4);
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

bool gw_store_congested(const struct gw_store *s)
{
	return atomic_load(&((struct gw_store *)s)->pending_bytes) > s->o.max_pending_bytes;
}

void gw_store_stats(const struct gw_store *s, struct gw_store_stats *out)
{
	struct gw_store *m = (struct gw_store *)s;
	pthread_mutex_lock(&m->mu);
	out->pending_bytes = m->pending.len + m->work.len;
	out->commits = m->commits;
	out->records = m->n_rec;
	out->events = m->n_ev;
	out->segments = m->n_seg;
	out->alerts = m->n_alert;
	out->last_error = m->last_error;
	memcpy(out->last_error_msg, m->last_error_msg, sizeof(out->last_error_msg));
	pthread_mutex_unlock(&m->mu);
}

/* ---- writer --------------------------------------------------------------------- */

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

static struct run_slot *run_find(struct gw_store *s, const char *name, uint32_t h)
{
	size_t mask = s->runs_cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct run_slot *r = &s->runs[i];
		if (!r->name || (r->hash == h && strcmp(r->name, name) == 0))
			return r;
	}
}

static int runs_grow(struct gw_store *s)
{
	size_t ncap = s->runs_cap ? s->runs_cap * 2 : 256;
	struct run_slot *old = s->runs;
	size_t ocap = s->runs_cap;
	s->runs = calloc(ncap, sizeof(*s->runs));
	if (!s->runs) {
		s->runs = old;
		return -ENOMEM;
	}
	s->runs_cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].name)
			*run_find(s, old[i].name, old[i].hash) = old[i];
	free(old);
	return 0;
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

/* runs.id of a run, creating the row if needed (inside the transaction). */
static int run_id(struct gw_store *s, const char *name, double now, struct run_slot **out)
{
	uint32_t h = hash_str(name);
	struct run_slot *r = run_find(s, name, h);
	if (r->name) {
		*out = r;
		return 0;
	}
	if ((s->runs_n + 1) * 2 > s->runs_cap) {
		if (runs_grow(s) < 0)
			return SQLITE_NOMEM;
		r = run_find(s, name, h);
	}
	sqlite3_stmt *st = s->st[S_RUN_GET];
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
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
		st = s->st[S_RUN_INS];
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_double(st, 2, now);
		if ((rc = step_done(st)) != SQLITE_OK)
			return rc;
		id = sqlite3_last_insert_rowid(s->db);
	}
	r->name = strdup(name);
	if (!r->name)
		return SQLITE_NOMEM;
	r->hash = h;
	r->id = id;
	r->seg = seg;
	r->last_step = last_step;
	r->last_ts = last_ts;
	r->last_seen = now;
	s->runs_n++;
	*out = r;
	return 0;
}

static int write_item(struct gw_store *s, const struct item *it, double now,
                      uint64_t counts[4])
{
	struct run_slot *r = NULL;
	int rc = SQLITE_OK;
	bool has_run = it->type != IT_META && it->type != IT_OUTBOX && it->type != IT_DELIVERY;
	if (has_run && (rc = run_id(s, item_str(it, it->type == IT_ALERT ? 1 : 0), now, &r)))
		return rc;
	sqlite3_stmt *st;
	switch (it->type) {
	case IT_RECORD:
		st = s->st[S_RECORD];
		sqlite3_bind_int64(st, 1, r->id);
		sqlite3_bind_int64(st, 2, it->i[0]);
		sqlite3_bind_int64(st, 3, it->i[1]);
		sqlite3_bind_int64(st, 4, it->i[2]);
		bind_real(st, 5, it->d[0]);
		bind_real(st, 6, it->d[1]);
		for (int k = 0; k < GW_NROLES; k++)
			bind_real(st, 7 + k, it->d[2 + k]);
		sqlite3_bind_int(st, 11, (int)it->u[1]);
		if (it->slen[1])
			sqlite3_bind_text(st, 12, item_str(it, 1), (int)it->slen[1], SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 12);
		rc = step_done(st);
		if (rc == SQLITE_OK &&
		    gw__tiles_add(s->tiles, r->id, it->i[0], it->i[1], &it->d[2], it->u[1]) < 0)
			rc = SQLITE_NOMEM;
		r->last_step = it->i[1];
		r->seg = it->i[0];
		if (!isnan(it->d[0]))
			r->last_ts = it->d[0];
		r->last_seen = now;
		r->dirty = true;
		counts[0]++;
		break;
	case IT_EVENT:
		st = s->st[S_EVENT];
		sqlite3_bind_int64(st, 1, r->id);
		sqlite3_bind_int64(st, 2, it->i[0]);
		sqlite3_bind_int64(st, 3, it->i[1]);
		sqlite3_bind_int64(st, 4, it->i[2]);
		bind_real(st, 5, it->d[0]);
		bind_real(st, 6, it->d[1]);
		sqlite3_bind_text(st, 7, item_str(it, 1), (int)it->slen[1], SQLITE_STATIC);
		sqlite3_bind_text(st, 8, item_str(it, 2), (int)it->slen[2], SQLITE_STATIC);
		rc = step_done(st);
		r->seg = it->i[0];
		if (!isnan(it->d[0]))
			r->last_ts = it->d[0];
		r->last_seen = now;
		r->dirty = true;
		counts[1]++;
		break;
	case IT_SEGMENT:
		st = s->st[S_SEGMENT];
		sqlite3_bind_int64(st, 1, r->id);
		sqlite3_bind_int64(st, 2, it->i[0]);
		sqlite3_bind_text(st, 3, item_str(it, 1), (int)it->slen[1], SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, it->i[1]);
		if (it->i[2] >= 0)
			sqlite3_bind_int64(st, 5, it->i[2]);
		else
			sqlite3_bind_null(st, 5);
		sqlite3_bind_int64(st, 6, it->i[3]);
		bind_real(st, 7, it->d[0]);
		bind_real(st, 8, it->d[1]);
		rc = step_done(st);
		r->seg = it->i[0];
		r->dirty = true;
		counts[2]++;
		break;
	case IT_ALERT: {
		enum gw_alert_kind kind = (enum gw_alert_kind)it->u[0];
		const char *sev = gw_severity_name((enum gw_severity)it->u[1]);
		if (kind == GW_ALERT_OPEN) {
			st = s->st[S_ALERT_OPEN];
			sqlite3_bind_text(st, 1, item_str(it, 0), -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 2, r->id);
			sqlite3_bind_int64(st, 3, it->i[0]);
			sqlite3_bind_int64(st, 4, it->i[1]);
			sqlite3_bind_int64(st, 5, it->i[2]);
			sqlite3_bind_text(st, 6, item_str(it, 2), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 7, sev, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 8, item_str(it, 3), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 9, item_str(it, 4), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 10, item_str(it, 5), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 11, item_str(it, 6), -1, SQLITE_STATIC);
			bind_real(st, 12, it->d[0]);
			bind_real(st, 13, it->d[1]);
		} else if (kind == GW_ALERT_UPDATE) {
			st = s->st[S_ALERT_UPDATE];
			sqlite3_bind_text(st, 1, item_str(it, 0), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, sev, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 3, item_str(it, 3), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 4, item_str(it, 4), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 5, item_str(it, 5), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 6, item_str(it, 6), -1, SQLITE_STATIC);
			bind_real(st, 7, it->d[1]);
			sqlite3_bind_int64(st, 8, it->i[1]);
			sqlite3_bind_int64(st, 9, it->i[2]);
		} else {
			st = s->st[S_ALERT_RESOLVE];
			sqlite3_bind_text(st, 1, item_str(it, 0), -1, SQLITE_STATIC);
			bind_real(st, 2, it->d[1]);
			sqlite3_bind_int64(st, 3, it->i[1]);
		}
		rc = step_done(st);
		counts[3]++;
		break;
	}
	case IT_META:
		st = s->st[S_META];
		sqlite3_bind_text(st, 1, item_str(it, 0), (int)it->slen[0], SQLITE_STATIC);
		sqlite3_bind_text(st, 2, item_str(it, 1), (int)it->slen[1], SQLITE_STATIC);
		rc = step_done(st);
		break;
	case IT_OUTBOX:
		st = s->st[S_OUTBOX];
		sqlite3_bind_text(st, 1, item_str(it, 0), (int)it->slen[0], SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, it->i[0]);
		sqlite3_bind_text(st, 3, item_str(it, 1), (int)it->slen[1], SQLITE_STATIC);
		sqlite3_bind_text(st, 4, item_str(it, 2), (int)it->slen[2], SQLITE_STATIC);
		bind_real(st, 5, it->d[0]);
		sqlite3_bind_text(st, 6, item_str(it, 3), (int)it->slen[3], SQLITE_STATIC);
		rc = step_done(st);
		break;
	case IT_DELIVERY:
		st = s->st[S_DELIVERY];
		sqlite3_bind_text(st, 1, item_str(it, 0), (int)it->slen[0], SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, it->i[0]);
		sqlite3_bind_text(st, 3, item_str(it, 1), (int)it->slen[1], SQLITE_STATIC);
		sqlite3_bind_text(st, 4, item_str(it, 2), (int)it->slen[2], SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, it->i[1]);
		bind_real(st, 6, it->d[0]);
		bind_real(st, 7, it->d[1]);
		if (it->i[2])
			sqlite3_bind_int64(st, 8, it->i[2]);
		else
			sqlite3_bind_null(st, 8);
		if (it->slen[3])
			sqlite3_bind_text(st, 9, item_str(it, 3), (int)it->slen[3], SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 9);
		rc = step_done(st);
		break;
	}
	return rc;
}

static int write_batch(struct gw_store *s, uint64_t counts[4])
{
	double now = wall_now();
	int rc = step_done(s->st[S_BEGIN]);
	if (rc != SQLITE_OK)
		return rc;
	for (size_t off = 0; off < s->work.len;) {
		const struct item *it = (const struct item *)(s->work.buf + off);
		if ((rc = write_item(s, it, now, counts)) != SQLITE_OK)
			goto fail;
		off += it->size;
	}
	for (size_t i = 0; i < s->runs_cap; i++) {
		struct run_slot *r = &s->runs[i];
		if (!r->name || !r->dirty)
			continue;
		sqlite3_stmt *st = s->st[S_RUN_UPD];
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
	if ((rc = step_done(s->st[S_COMMIT])) != SQLITE_OK)
		goto fail;
	return SQLITE_OK;
fail:
	step_done(s->st[S_ROLLBACK]);
	gw__tiles_clear(s->tiles);
	/* the cache may hold ids of rows the rollback removed */
	for (size_t i = 0; i < s->runs_cap; i++)
		free(s->runs[i].name);
	memset(s->runs, 0, s->runs_cap * sizeof(*s->runs));
	s->runs_n = 0;
	return rc;
}

/* Wait on cv (mu held) for at most ms milliseconds. */
static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
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

		uint64_t counts[4] = {0};
		int rc;
		unsigned attempt = 0;
		while ((rc = write_batch(s, counts)) != SQLITE_OK) {
			const char *msg = sqlite3_errmsg(s->db);
			pthread_mutex_lock(&s->mu);
			s->last_error = sqlite_errno(rc);
			snprintf(s->last_error_msg, sizeof(s->last_error_msg), "%s", msg);
			bool stopping = s->stop;
			pthread_mutex_unlock(&s->mu);
			gw_log_err("store: commit of %zu items failed: %s (retrying)", s->work.n, msg);
			memset(counts, 0, sizeof(counts));
			/* retry with back-off; at shutdown give up after a few tries */
			if (stopping && ++attempt >= 5)
				break;
			struct timespec d = {0, 200 * 1000000L};
			nanosleep(&d, NULL);
		}
		pthread_mutex_lock(&s->mu);
		if (rc == SQLITE_OK) {
			s->last_error = 0;
			s->last_error_msg[0] = '\0';
			s->commits++;
			s->n_rec += counts[0];
			s->n_ev += counts[1];
			s->n_seg += counts[2];
			s->n_alert += counts[3];
			atomic_store(&s->committed, s->work.last_seq);
		}
		s->work.len = s->work.n = 0;
		atomic_store(&s->pending_bytes, s->pending.len);
		pthread_mutex_unlock(&s->mu);
		if (s->o.notify)
			s->o.notify(s->o.notify_data);
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
 * this thread runs PASSIVE checkpoints on its own connection every
 * CKPT_EVERY_MS; they never block the writer, and the writer starts the WAL
 * over once one has caught up. */
#define CKPT_EVERY_MS 250

static void *checkpointer_main(void *arg)
{
	struct gw_store *s = arg;
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		gw_log_warn("store: checkpointer cannot open %s: %s", s->path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		timed_wait(&s->ckpt_cv, &s->mu, CKPT_EVERY_MS);
		if (s->stop)
			break;
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

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		gw_errf(err, errlen, -EIO, "%s", msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return sqlite_errno(rc);
	}
	return 0;
}

static int migrate(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int version = 0;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			version = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	if (version > SCHEMA_VERSION) {
		gw_errf(err, errlen, -EIO, "%s has schema version %d; this gradwatchd knows up to %d "
		     "(a newer gradwatch wrote it)", path, version, SCHEMA_VERSION);
		return -EPROTO;
	}
	for (int v = version; v < SCHEMA_VERSION; v++) {
		char sql[64], e[256];
		int rc;
		if ((rc = exec(db, "BEGIN IMMEDIATE", e, sizeof(e))) < 0 ||
		    (rc = exec(db, migrations[v], e, sizeof(e))) < 0) {
			exec(db, "ROLLBACK", NULL, 0);
			gw_errf(err, errlen, -EIO, "%s: migrating the schema from version %d failed: %s", path, v, e);
			return rc;
		}
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
		if ((rc = exec(db, sql, e, sizeof(e))) < 0 || (rc = exec(db, "COMMIT", e, sizeof(e))) < 0) {
			exec(db, "ROLLBACK", NULL, 0);
			gw_errf(err, errlen, -EIO, "%s: migrating the schema from version %d failed: %s", path, v, e);
			return rc;
		}
		if (version > 0 || v > 0)
			gw_log_info("store: %s migrated to schema version %d", path, v + 1);
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
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_cond_init(&s->ckpt_cv, NULL);
	int rc = sqlite3_open_v2(o->path, &s->db,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		gw_errf(err, errlen, -EIO, "cannot open database %s: %s", o->path,
		     s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		rc = sqlite_errno(rc);
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 5000);
	char e[256];
	if ((rc = exec(s->db, "PRAGMA journal_mode = WAL", e, sizeof(e))) < 0 ||
	    (rc = exec(s->db, o->sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
	               e, sizeof(e))) < 0 ||
	    (rc = exec(s->db, "PRAGMA foreign_keys = OFF; PRAGMA cache_size = -65536; "
	                      "PRAGMA wal_autocheckpoint = 0", e, sizeof(e))) < 0) {
		gw_errf(err, errlen, -EIO, "database %s: %s", o->path, e);
		goto fail;
	}
	if ((rc = migrate(s->db, o->path, err, errlen)) < 0)
		goto fail;
	for (int k = 0; k < S_COUNT; k++) {
		if (sqlite3_prepare_v3(s->db, stmt_sql[k], -1, SQLITE_PREPARE_PERSISTENT,
		                       &s->st[k], NULL) != SQLITE_OK) {
			gw_errf(err, errlen, -EIO, "database %s: preparing a statement: %s", o->path,
			     sqlite3_errmsg(s->db));
			rc = -EIO;
			goto fail;
		}
	}
	if (runs_grow(s) < 0 || !(s->tiles = gw__tiles_new())) {
		rc = -ENOMEM;
		goto fail;
	}
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
	int rc = s->last_error;
	for (int k = 0; k < S_COUNT; k++)
		sqlite3_finalize(s->st[k]);
	gw__tiles_free(s->tiles);
	if (s->db) {
		/* fold the WAL back so the file is complete on its own */
		sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
		sqlite3_close(s->db);
	}
	for (size_t i = 0; i < s->runs_cap; i++)
		free(s->runs[i].name);
	free(s->runs);
	free(s->pending.buf);
	free(s->work.buf);
	free(s->path);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->ckpt_cv);
	free(s);
	return rc;
}
