/*
 * SQLite storage with a writer thread (see store.h).  This file is the
 * queue, the callers' side; the writer and checkpointer threads are
 * store_writer.c's, opening and closing store_open.c's (store_impl.h
 * between them).
 *
 * The queue is an arena of variable-size items: a row's statement, its
 * typed values, then the bytes of its text values.  Producers append under
 * the mutex; the writer takes the arena under the mutex (a pointer swap,
 * or a copy onto the batch it has open, store_writer.c) and writes it
 * outside it, so producers never wait for the disk.
 */
#include "store_impl.h"

#include "buf.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	/* a writer with a batch open takes new rows every few milliseconds by
	 * itself: waking it for each first row after a take would turn the
	 * batch into a ping-pong of one-row takes */
	bool wake = (a->n == 1 && s->writer_idle) || a->n == s->o.commit_max_records;
	if (a->n == 1)
		a->first_ms = gw_mono_ms();
	atomic_store(&s->pending_bytes, a->len);
	uint64_t seq = it->seq;
	pthread_mutex_unlock(&s->mu);
	if (wake)
		pthread_cond_signal(&s->cv);
	return seq;
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
	/* a writer waiting for the holds to end takes the queue first: woken
	 * by the release, it needs the mutex, and a loop busy line after line
	 * held again before it got it -- the writer waited for ever (a minute
	 * without a commit in test_crash, the loop spending milliseconds on
	 * each line).  A nested hold never waits: the writer waits for it. */
	while (!s->held && s->held_waiter)
		pthread_cond_wait(&s->hold_cv, &s->mu);
	s->held++;
	pthread_mutex_unlock(&s->mu);
}

void gw_store_release(struct gw_store *s)
{
	pthread_mutex_lock(&s->mu);
	GW_REQUIRE(s->held > 0);
	/* the loop holds and releases around every record: wake the writer
	 * only when it waits for this (a futex wake per record, and the
	 * writer taking the core from the loop, cost ingest half its rate
	 * with the other core busy) */
	bool wake = --s->held == 0 && s->held_waiter;
	pthread_mutex_unlock(&s->mu);
	if (wake)
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
