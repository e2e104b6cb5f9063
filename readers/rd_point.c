/*
 * The point builder of reader_impl.h (gw__rd_begin ... gw__rd_emit,
 * gw__rd_event) and the other helpers the formats call (a line's rank
 * label and time saved and put back, records held over wrapped lines), run
 * naming and splitting (reader.h "Run names"), and where a reader stands
 * in its runs (gw_reader_get_runs / set_runs).  A point is built in the
 * reader itself (one at a time): names are copied into a small arena,
 * roles and fp16 fields are found through the alias table, and the
 * finished point is handed to the sink as a struct gw_rec.  Nothing here
 * allocates per point.
 */
#include "reader_int.h"

#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers for format modules --------------------------------------- */

const struct gw_alias *gw__rd_aliases(const struct gw_reader *r)
{
	return r->o.aliases;
}

void gw__rd_last_set(const struct gw_reader *r, struct gw_rd_last *l, int64_t step)
{
	l->step = step;
	l->label = r->line_label;
}

bool gw__rd_repeats(const struct gw_reader *r, const struct gw_rd_last *l, int64_t step)
{
	return step == l->step && r->line_label == l->label;
}

void gw__rd_line_save(const struct gw_reader *r, struct gw_rd_linectx *c)
{
	c->label = r->line_label;
	c->ts = r->line_ts;
}

void gw__rd_line_restore(struct gw_reader *r, const struct gw_rd_linectx *c)
{
	r->line_label = c->label;
	r->line_ts = c->ts;
}

bool gw__rd_following(const struct gw_reader *r)
{
	return r->o.follow;
}

const char *gw__rd_default_run(const struct gw_reader *r)
{
	return r->o.run;
}

void gw__rd_consumed(struct gw_reader *r, uint64_t bytes)
{
	r->consumed = bytes;
	r->records++;
}

int gw__rd_fail(struct gw_reader *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->failed = -EPROTO;
	return -EPROTO;
}

uint64_t gw__rd_first_line(const struct gw_reader *r)
{
	return r->o.first_line;
}

void gw__rd_error(struct gw_reader *r, uint64_t line, const char *fmt, ...)
{
	struct gw_wire_err e = {.reason = r->truncated ? GW_REJ_TRUNCATED : GW_REJ_BAD_VALUE};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	r->errors++;
	if (r->sink.on_error)
		r->sink.on_error(r->sink.data, line, &e);
}

void gw__rd_wire_error(struct gw_reader *r, uint64_t line, const struct gw_wire_err *e)
{
	struct gw_wire_err x = *e;
	if (r->truncated) {
		/* the input ended inside this line: say so */
		snprintf(x.msg, sizeof(x.msg), "(last line, no newline) %.*s",
		         (int)sizeof(x.msg) - 32, e->msg);
	}
	r->errors++;
	if (r->sink.on_error)
		r->sink.on_error(r->sink.data, line, &x);
}

void gw__rd_begin(struct gw_reader *r, const char *run, size_t run_len, int64_t step)
{
	memset(&r->rec, 0, sizeof(r->rec));
	r->rec.ts = r->line_ts;   /* the line's own time, until the format says one */
	r->rec.step = step;
	r->rec.extra = r->extra;
	for (int i = 0; i < GW_NALIAS_ROLES; i++) {
		r->prio[i] = 1 << 30;
		r->role_name[i] = NULL;
	}
	r->ts_prio = 1 << 30;
	r->names_len = 0;
	r->run_set = run != NULL;
	if (r->line_label >= 0) {
		r->rec.has_rank = r->rec.rank_label = true;
		r->rec.rank = (uint32_t)r->line_label;
	}
	if (run) {
		if (run_len > GW_WIRE_RUN_MAX)
			run_len = GW_WIRE_RUN_MAX;
		memcpy(r->run, run, run_len);
		r->run[run_len] = '\0';
	}
}

void gw__rd_ts(struct gw_reader *r, double ts)
{
	if (isfinite(ts) && ts >= 0) {
		r->rec.ts = ts;
		r->ts_prio = -1;
	}
}

static const char *copy_name(struct gw_reader *r, const char *name, size_t len)
{
	if (r->names_len + len + 1 > sizeof(r->names))
		return NULL;
	char *p = r->names + r->names_len;
	memcpy(p, name, len);
	p[len] = '\0';
	r->names_len += len + 1;
	return p;
}

static int add_extra(struct gw_reader *r, const char *name, double v)
{
	if (r->rec.n_extra >= GW_RD_MAX_EXTRA)
		return -ENOSPC;
	r->extra[r->rec.n_extra].name = name;
	r->extra[r->rec.n_extra].value = v;
	r->rec.n_extra++;
	return 0;
}

static bool reserved(const char *name, size_t len)
{
	return (len == 3 && !memcmp(name, "run", 3)) || (len == 4 && !memcmp(name, "step", 4)) ||
	       (len == 5 && !memcmp(name, "event", 5));
}

int gw__rd_metric(struct gw_reader *r, const char *name, size_t len, double v)
{
	if (!len || reserved(name, len))
		return 0;
	int prio;
	int role = gw_alias_lookup(r->o.aliases, name, len, &prio);
	if (role == GW_ROLE_TS) {
		if (prio < r->ts_prio && isfinite(v) && v >= 0) {
			r->rec.ts = v;
			r->ts_prio = prio;
		}
		return 0;
	}
	if (role >= 0) {   /* a role, or an fp16 field (GW_ROLE_FIELD) */
		if (r->role_name[role] && len == strlen(r->role_name[role]) &&
		    !memcmp(r->role_name[role], name, len))
			return 0; /* the same name twice: the first stays */
		if (prio < r->prio[role]) {
			const char *n = copy_name(r, name, len);
			if (!n)
				return -ENOSPC;
			int rc = 0, f = GW_ROLE_FIELD(role);
			double *slot = f >= 0 ? &r->rec.f[f] : &r->rec.v[role];
			unsigned *bits = f >= 0 ? &r->rec.fields : &r->rec.present;
			unsigned bit = 1u << (f >= 0 ? f : role);
			if (*bits & bit) /* a lesser alias becomes an extra */
				rc = add_extra(r, r->role_name[role], *slot);
			*slot = v;
			*bits |= bit;
			r->prio[role] = prio;
			r->role_name[role] = n;
			return rc;
		}
	}
	for (size_t i = 0; i < r->rec.n_extra; i++)
		if (!strncmp(r->extra[i].name, name, len) && r->extra[i].name[len] == '\0')
			return 0;
	if (r->rec.n_extra >= GW_RD_MAX_EXTRA)
		return -ENOSPC;
	const char *n = copy_name(r, name, len);
	if (!n)
		return -ENOSPC;
	return add_extra(r, n, v);
}

/* cur_run for run_no: NAME, or NAME#k with NAME cut (at a character) to
 * keep it in the limit. */
void gw__rd_name_run(struct gw_reader *r)
{
	if (r->run_no <= 1) {
		gw_strlcpy(r->cur_run, r->o.run, sizeof(r->cur_run));
		return;
	}
	char suffix[16];
	size_t sl = (size_t)snprintf(suffix, sizeof(suffix), "#%u", r->run_no);
	size_t n = strlen(r->o.run);
	if (n + sl > GW_WIRE_RUN_MAX) {
		n = GW_WIRE_RUN_MAX - sl;
		while (n && ((unsigned char)r->o.run[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(r->cur_run, r->o.run, n);
	memcpy(r->cur_run + n, suffix, sl + 1);
}

/* The run of a point or event of the default run: a point whose step goes
 * back below the previous one, to or below the run's first step, starts
 * the next run (NAME#2, NAME#3, ...). */
static const char *default_run(struct gw_reader *r, int64_t step, bool point)
{
	if (point && r->line_label >= 0) {
		if (r->label < 0)
			r->label = r->line_label;
		point = r->line_label == r->label;   /* another rank's: no new run */
	}
	if (point) {
		if (r->run_any && step < r->run_last && step <= r->run_first) {
			r->run_no++;
			r->run_any = false;
			gw__rd_name_run(r);
		}
		if (!r->run_any) {
			r->run_any = true;
			r->run_first = step;
		}
		r->run_last = step;
	}
	return r->cur_run;
}

static int check_step(struct gw_reader *r, int64_t step, uint64_t line)
{
	if (step < 0 || step > GW_WIRE_STEP_MAX) {
		gw__rd_error(r, line, "bad_step: step %lld is outside 0..%lld", (long long)step,
		             (long long)GW_WIRE_STEP_MAX);
		return -1;
	}
	return 0;
}

/* A run a format names: the rule of every entry point (gw_wire_check_run). */
static int check_run(struct gw_reader *r, const char *run, uint64_t line)
{
	char why[128];
	if (gw_wire_check_run(run, strlen(run), why, sizeof(why)) < 0) {
		gw__rd_error(r, line, "bad_run: %s", why);
		return -1;
	}
	return 0;
}

int gw__rd_emit(struct gw_reader *r, uint64_t line)
{
	if (!r->rec.present && !r->rec.fields)
		return 0;
	if (check_step(r, r->rec.step, line) < 0 || (r->run_set && check_run(r, r->run, line) < 0))
		return 0;
	if (!r->run_set && (r->line_label < 0 || r->label < 0 || r->line_label == r->label)) {
		/* the events that wait for the run's next point (rd_events.c
		 * registers itself: it builds on the points, not the reverse) */
		int rc = r->before_point ? r->before_point(r, r->rec.step) : 0;
		if (rc < 0)
			return rc;
	}
	r->rec.run = r->run_set ? r->run : default_run(r, r->rec.step, true);
	r->rec.run_len = strlen(r->rec.run);
	r->rec.extra = r->extra;
	r->handed++;
	r->point_line = line;
	return r->sink.on_rec(r->sink.data, &r->rec, line);
}

int gw__rd_emit_rec(struct gw_reader *r, const struct gw_rec *rec, uint64_t line)
{
	r->handed++;
	return r->sink.on_rec(r->sink.data, rec, line);
}

/* An event of run `run` (NULL: the default run) with its own line, ts and
 * rank label. */
static int event(struct gw_reader *r, const char *run, const char *name, int64_t step,
                 json_t *attrs, uint64_t line, double ts, int64_t label)
{
	if (check_step(r, step, line) < 0 || (run && check_run(r, run, line) < 0))
		return 0;
	struct gw_rec ev;
	memset(&ev, 0, sizeof(ev));
	ev.run = run ? run : default_run(r, step, false);
	ev.run_len = strlen(ev.run);
	ev.step = step;
	ev.ts = ts;
	ev.event = name;
	if (label >= 0) {
		ev.has_rank = ev.rank_label = true;
		ev.rank = (uint32_t)label;
	}
	json_t *empty = NULL;
	if (!attrs && !(attrs = empty = json_object()))
		return -ENOMEM;
	ev.attrs = attrs;
	r->handed++;
	int rc = r->sink.on_rec(r->sink.data, &ev, line);
	json_decref(empty);
	return rc;
}

int gw__rd_event(struct gw_reader *r, const char *run, const char *name, int64_t step,
                 json_t *attrs, uint64_t line)
{
	return event(r, run, name, step, attrs, line, r->line_ts, r->line_label);
}

int gw__rd_event_at(struct gw_reader *r, const char *name, int64_t step, json_t *attrs,
                    uint64_t line, double ts, int64_t label)
{
	return event(r, NULL, name, step, attrs, line, ts, label);
}

void gw_reader_get_runs(const struct gw_reader *r, struct gw_reader_runs *out)
{
	*out = (struct gw_reader_runs){
		.no = r->run_no, .any = r->run_any, .first = r->run_first, .last = r->run_last,
		.label = r->label,
	};
}

int gw_reader_set_runs(struct gw_reader *r, const struct gw_reader_runs *st)
{
	if (st->no < 1 || r->fed)
		return -EINVAL;
	r->run_no = st->no;
	r->run_any = st->any;
	r->run_first = st->first;
	r->run_last = st->last;
	r->label = st->label;
	gw__rd_name_run(r);
	return 0;
}

/* ---- held records (wrapped by a chat or an issue box) ------------------ */

int gw__rd_hold(struct gw_reader *r, struct gw_rd_hold *h, const char *s, size_t n, uint64_t line)
{
	gw_buf_reset(&h->text);
	if (gw_buf_add(&h->text, s, n))
		return -ENOMEM;
	h->held = true;
	h->more = 0;
	h->line = line;
	gw__rd_line_save(r, &h->ctx);
	return 0;
}

int gw__rd_hold_join(struct gw_rd_hold *h, const char *s, size_t n)
{
	h->more++;
	return gw_buf_add(&h->text, " ", 1) || gw_buf_add(&h->text, s, n) ? -ENOMEM : 0;
}

int gw__rd_hold_flush(struct gw_reader *r, struct gw_rd_hold *h, gw_rd_hold_fn fn)
{
	if (!h->held)
		return 0;
	h->held = false;
	struct gw_rd_linectx now;
	gw__rd_line_save(r, &now);
	gw__rd_line_restore(r, &h->ctx);
	int rc = fn(r, h->text.p, h->text.len, h->line);
	gw__rd_line_restore(r, &now);
	return rc;
}

void gw__rd_hold_free(struct gw_rd_hold *h)
{
	gw_buf_free(&h->text);
}
