/*
 * runs: active and dormant runs (see runs.h).  Dormant runs are an array
 * of (name, position) with the lib's string table over it; removing one
 * moves the last into its place.  Active runs are the engine's; this table
 * asks it (gw_engine_run_info, _foreach_run) and moves runs in and out
 * (gw_engine_evict, gw_engine_seed_run and a quiet re-feed).
 */
#include "runs.h"

#include "buf.h"
#include "engine.h"
#include "log.h"
#include "store.h"
#include "strtab.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct gw_dormant {
	char *name;
	int64_t seg, last_step;
	double last_ts, last_seen;   /* last_seen: its last line's arrival */
	bool interleaved;          /* its lines are interleaved writers' (engine.h) */
	bool ended;                /* it had ended, no line went past it (engine.h "Run endings") */
};

struct gw_runs {
	struct gw_runs_opts o;
	struct gw_dormant *d;
	size_t n, cap;
	struct gw_strtab by_name;
	uint64_t evicted, rebuilt;
	/* the one read-only connection rebuilds read on (opened at the first,
	 * kept: runs.h says why the read is on the loop) */
	struct gw_store_reader *reader;
	bool reader_failed;        /* could not be opened: each rebuild opens its own */
};

static int dormant_add(struct gw_runs *rs, const char *name, int64_t seg, int64_t last_step,
                       double last_ts, double last_seen, bool interleaved, bool ended)
{
	if (gw_grow((void **)&rs->d, &rs->cap, rs->n + 1, sizeof(*rs->d)) < 0)
		return -ENOMEM;
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	int rc = gw_strtab_put(&rs->by_name, copy, strlen(copy), (uint32_t)rs->n);
	if (rc < 0) {
		free(copy);
		return rc == -EEXIST ? 0 : rc;
	}
	rs->d[rs->n++] = (struct gw_dormant){copy, seg, last_step, last_ts, last_seen, interleaved,
	                                     ended};
	return 0;
}

static void dormant_remove(struct gw_runs *rs, uint32_t i)
{
	struct gw_dormant *x = &rs->d[i];
	gw_strtab_del(&rs->by_name, x->name, strlen(x->name), NULL);
	free(x->name);
	if (i != rs->n - 1) {
		rs->d[i] = rs->d[rs->n - 1];
		gw_strtab_set(&rs->by_name, rs->d[i].name, strlen(rs->d[i].name), i);
	}
	rs->n--;
}

struct load_ctx {
	struct gw_runs *rs;
	int err;
};

static void load_one(void *data, const struct gw_run_position *p)
{
	struct load_ctx *c = data;
	if (p->seg > 0 && !c->err)
		c->err = dormant_add(c->rs, p->run, p->seg, p->last_step, p->last_ts, p->last_seen,
		                     p->interleaved, p->ended);
}

int gw_runs_new(const struct gw_runs_opts *o, struct gw_runs **out, char *err, size_t errlen)
{
	struct gw_runs *rs = *out = calloc(1, sizeof(*rs));
	if (!rs)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	rs->o = *o;
	if (!o->db_path)
		return 0;
	struct load_ctx c = {.rs = rs};
	int rc = gw_store_read_run_positions(o->db_path, load_one, &c, err, errlen);
	if (rc < 0)
		return rc;
	if (c.err)
		return gw_errf(err, errlen, c.err, "out of memory loading the runs");
	if (rs->n)
		gw_log_info("%zu known run(s): their detector state is rebuilt from the database on "
		            "their next line", rs->n);
	return 0;
}

void gw_runs_free(struct gw_runs *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->n; i++)
		free(rs->d[i].name);
	free(rs->d);
	gw_strtab_free(&rs->by_name);
	gw_store_reader_close(rs->reader);
	free(rs);
}

void gw_runs_stats(const struct gw_runs *rs, struct gw_runs_stats *out)
{
	*out = (struct gw_runs_stats){
		.active = gw_engine_run_count(rs->o.engine),
		.dormant = rs->n,
		.evicted = rs->evicted,
		.rebuilt = rs->rebuilt,
	};
}

/* ---- eviction --------------------------------------------------------------------- */

static int make_dormant(struct gw_runs *rs, const char *name)
{
	char *copy = strdup(name);   /* the engine frees its own copy */
	if (!copy)
		return -ENOMEM;
	struct gw_run_info last;
	/* an open stall cannot be watched without the state: it is resolved
	 * (the silence is judged again when the run sends) */
	if (gw_engine_run_info(rs->o.engine, copy, &last) == 0 && last.open_live)
		gw_engine_run_ended(rs->o.engine, copy, "evicted: too many runs for limits.max_runs",
		                    gw_wall_now());
	int rc = gw_engine_evict(rs->o.engine, copy, &last);
	if (rc == 0) {
		rc = dormant_add(rs, copy, last.seg, last.last_step, last.last_ts, last.last_wall,
		                 last.interleaved, last.ended);
		rs->evicted++;
	}
	free(copy);
	return rc;
}

struct by_age {
	double wall;
	bool live;
	char *name;
};

struct age_ctx {
	double now;
	struct by_age *v;
	size_t n, cap;
};

static void collect_age(void *data, const struct gw_run_info *ri)
{
	struct age_ctx *c = data;
	if (gw_grow((void **)&c->v, &c->cap, c->n + 1, sizeof(*c->v)) < 0)
		return;
	char *name = strdup(ri->run);
	if (!name)
		return;
	c->v[c->n++] = (struct by_age){isnan(ri->last_wall) ? -INFINITY : ri->last_wall,
	                               ri->open_live > 0 || ri->watch_until > c->now, name};
}

/* Oldest first; runs whose silence is watched (an open stall, or one that
 * may still open) last. */
static int cmp_age(const void *a, const void *b)
{
	const struct by_age *p = a, *q = b;
	if (p->live != q->live)
		return p->live ? 1 : -1;
	return p->wall < q->wall ? -1 : p->wall > q->wall;
}

/* Room for one more active run under limits.max_runs: the least recently
 * active tenth go at once (their state is rebuilt when they send again), so
 * a stream of new runs costs one sort per max_runs / 10 of them. */
static void make_room(struct gw_runs *rs)
{
	size_t max = rs->o.max_runs, n = gw_engine_run_count(rs->o.engine);
	if (!max || n < max)
		return;
	struct age_ctx c = {.now = gw_wall_now()};
	gw_engine_foreach_run(rs->o.engine, collect_age, &c);
	qsort(c.v, c.n, sizeof(*c.v), cmp_age);
	size_t go = n - max + 1 + max / 10;
	for (size_t i = 0; i < c.n; i++) {
		if (i < go)
			make_dormant(rs, c.v[i].name);
		free(c.v[i].name);
	}
	free(c.v);
}

struct idle_ctx {
	double now, before;
	char **names;
	size_t n, cap;
};

static void find_idle(void *data, const struct gw_run_info *ri)
{
	struct idle_ctx *c = data;
	/* a run whose silence is being watched stays: an open stall is
	 * resolved by the ticks of the live state only, and a silence not yet
	 * long enough for one (a run logging every 30 s stalls after 15
	 * minutes, later than the 10 of run_evict_idle_s) is raised by them */
	if (ri->open_live || ri->watch_until > c->now || isnan(ri->last_wall) ||
	    ri->last_wall > c->before)
		return;
	if (gw_grow((void **)&c->names, &c->cap, c->n + 1, sizeof(*c->names)) == 0 &&
	    (c->names[c->n] = strdup(ri->run)))
		c->n++;
}

void gw_runs_tick(struct gw_runs *rs, double now)
{
	unsigned idle_s = rs->o.evict_idle_s;
	if (!idle_s)
		return;
	struct idle_ctx c = {.now = now, .before = now - idle_s};
	gw_engine_foreach_run(rs->o.engine, find_idle, &c);
	for (size_t i = 0; i < c.n; i++) {
		make_dormant(rs, c.names[i]);
		free(c.names[i]);
	}
	if (c.n)
		gw_log_debug("%zu idle run(s) made dormant (limits.run_evict_idle_s %u)", c.n, idle_s);
	free(c.names);
}

/* ---- rebuilding a dormant run ------------------------------------------------------- */

struct refeed {
	struct gw_engine *engine;
	bool seeded;
	uint64_t lines;
};

static int refeed_one(void *data, const struct gw_rec *rec, int64_t seg, uint64_t line,
                      double recv)
{
	struct refeed *f = data;
	if (!f->seeded) {
		/* the run continues where its re-fed lines begin: their first
		 * line is no restart */
		gw_engine_seed_run(f->engine, rec->run, seg, rec->event ? rec->step : rec->step - 1,
		                   NAN);
		f->seeded = true;
	}
	f->lines++;
	/* with its arrival time: the stall detector learns the run's cadence
	 * and whether its lines were arriving live */
	int rc = gw_engine_feed(f->engine, rec, line, recv, NULL);
	return rc == -ENOSPC ? 0 : rc;
}

/* The run's stored tail through the table's connection (opened at the
 * first rebuild and kept), or on a connection of its own when that cannot
 * be opened. */
static int read_tail(struct gw_runs *rs, const char *run, struct refeed *f, char *err,
                     size_t errlen)
{
	if (!rs->reader && !rs->reader_failed &&
	    gw_store_reader_open(rs->o.db_path, &rs->reader, err, errlen) < 0) {
		gw_log_warn("runs: %s; each rebuild opens its own connection", err);
		rs->reader_failed = true;
	}
	if (rs->reader)
		return gw_store_read_tail_on(rs->reader, run, GW_RUNS_REFEED, refeed_one, f, err,
		                             errlen);
	return gw_store_read_tail(rs->o.db_path, run, GW_RUNS_REFEED, refeed_one, f, err, errlen);
}

int gw_runs_activate(struct gw_runs *rs, const char *run, size_t len)
{
	struct gw_engine *e = rs->o.engine;
	if (gw_engine_has_run(e, run, len))
		return 0;
	uint32_t i = 0;
	bool dormant = rs->n && gw_strtab_find(&rs->by_name, run, len, &i) == 0;
	make_room(rs);
	if (!dormant)
		return 0;
	struct gw_dormant dm = rs->d[i];
	rs->d[i].name = NULL;
	bool quiet = gw_engine_quiet(e, true);
	struct refeed f = {.engine = e};
	char err[256];
	uint64_t t0 = gw_mono_ms();
	int rc = read_tail(rs, dm.name, &f, err, sizeof(err));
	if (rc < 0 || !f.seeded) {
		if (rc < 0)
			gw_log_warn("run %s: cannot rebuild its detector state (%s); it continues from its "
			            "stored position only", dm.name, err);
		if (!f.seeded)
			gw_engine_seed_run(e, dm.name, dm.seg, dm.last_step, dm.last_ts);
	}
	if (dm.interleaved)   /* said once already: repeats stay folded */
		gw_engine_set_interleaved(e, dm.name);
	/* it had ended, and no line went past that (its re-fed lines may not
	 * say so: a followed file closed, an eviction, a length declared
	 * before them); quiet, it is not stored again */
	if (dm.ended)
		gw_engine_run_ended(e, dm.name, "ended before", NAN);
	gw_engine_quiet(e, quiet);
	rs->rebuilt++;
	gw_log_debug("run %s: detector state rebuilt from %" PRIu64 " stored line(s) in %" PRIu64 " ms",
	             dm.name, f.lines, gw_mono_ms() - t0);
	rs->d[i].name = dm.name;
	dormant_remove(rs, i);
	return 0;
}

bool gw_runs_known(const struct gw_runs *rs, const char *run)
{
	uint32_t i;
	size_t len = strlen(run);
	return gw_engine_has_run(rs->o.engine, run, len) ||
	       gw_strtab_find(&rs->by_name, run, len, &i) == 0;
}

double gw_runs_last_seen(const struct gw_runs *rs, const char *run)
{
	uint32_t i;
	struct gw_run_info ri;
	if (gw_engine_run_info(rs->o.engine, run, &ri) == 0)
		return ri.last_wall;
	if (gw_strtab_find(&rs->by_name, run, strlen(run), &i) == 0)
		return rs->d[i].last_seen;
	return NAN;
}

void gw_runs_forget(struct gw_runs *rs, const char *run)
{
	uint32_t i;
	gw_engine_evict(rs->o.engine, run, NULL);
	if (gw_strtab_find(&rs->by_name, run, strlen(run), &i) == 0)
		dormant_remove(rs, i);
}

/* ---- after a restart ---------------------------------------------------------------- */

struct restore_one {
	double seen;
	char *name;
};

static int cmp_newest(const void *a, const void *b)
{
	const struct restore_one *p = a, *q = b;
	return p->seen < q->seen ? 1 : p->seen > q->seen ? -1 : 0;
}

int gw_runs_restore(struct gw_runs *rs, double now)
{
	/* when the daemon before stopped: its clean stop says so; after a
	 * crash, the last line it committed is as close as is known */
	double down = -INFINITY;
	char *meta = NULL;
	if (rs->o.db_path && gw_store_read_meta(rs->o.db_path, GW_RUNS_STOPPED_AT, &meta) == 0 &&
	    meta)
		down = strtod(meta, NULL);
	free(meta);
	for (size_t i = 0; i < rs->n; i++)
		if (rs->d[i].last_seen > down)
			down = rs->d[i].last_seen;
	if (!isfinite(down) || down > now)
		return 0;
	/* the runs it had active: a line within run_evict_idle_s of its stop */
	double horizon = rs->o.evict_idle_s ? rs->o.evict_idle_s : GW_RUNS_RESTORE_S;
	struct restore_one *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < rs->n; i++) {
		if (!(rs->d[i].last_seen >= down - horizon))
			continue;
		if (gw_grow((void **)&v, &cap, n + 1, sizeof(*v)) < 0 ||
		    !(v[n].name = strdup(rs->d[i].name)))
			break;
		v[n++].seen = rs->d[i].last_seen;
	}
	/* each costs a rebuild before the daemon is ready: the newest first,
	 * at most GW_RUNS_RESTORE_MAX */
	if (n)
		qsort(v, n, sizeof(*v), cmp_newest);
	size_t restored = 0;
	uint64_t t0 = gw_mono_ms();
	/* all of them on the table's one connection (read_tail) */
	for (size_t i = 0; i < n && i < GW_RUNS_RESTORE_MAX; i++) {
		if (gw_runs_activate(rs, v[i].name, strlen(v[i].name)) < 0)
			continue;
		/* a run not watched (it ended, was not live, has too few lines)
		 * goes back to sleep: memory as before the restart */
		if (gw_engine_restarted(rs->o.engine, v[i].name, down, now) > 0)
			restored++;
		else
			make_dormant(rs, v[i].name);
	}
	if (n)
		gw_log_debug("runs: %zu run(s) rebuilt at start in %" PRIu64 " ms",
		             GW_MIN(n, (size_t)GW_RUNS_RESTORE_MAX), gw_mono_ms() - t0);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	if (n > GW_RUNS_RESTORE_MAX)
		gw_log_warn("%zu runs had lines within %.0f s of the daemon's stop: only the %d newest "
		            "were looked at for a stall watch across the restart", n, horizon,
		            GW_RUNS_RESTORE_MAX);
	if (restored)
		gw_log_info("%zu run(s) were live when the daemon stopped (%.0f s ago): their silence is "
		            "watched from now on", restored, now - down);
	return (int)restored;
}
