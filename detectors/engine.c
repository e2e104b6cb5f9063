/*
 * The detector engine (see engine.h): a hash table of runs, each with its
 * segment bookkeeping, history ring, events, incident table and detector
 * states, and the dispatch of every line to the detectors in registry order.
 *
 * History: one ring of GW_RING_CAP slots per run, a column array per metric.
 * A metric record takes the next slot; a record that only adds fields to the
 * step of the previous line (some loggers split one step over several lines)
 * fills the previous slot instead.  When a segment starts, the current
 * segment's slots are copied, oldest first, into the run's "previous
 * segment" arrays, allocated on the first restart; that copy is the
 * pre-checkpoint regime and the source of the replayed-step comparison.
 */
#include "engine.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INCIDENTS 4       /* open incidents tracked per detector per run */
#define RING_MASK (GW_RING_CAP - 1)
#define GAP_MIN_INTERVALS 3   /* step intervals seen before a gap can split */

struct incident {
	uint32_t key;
	bool used;
	bool open;
	enum gw_severity severity;
	int64_t seg;
};

struct gw_hist {
	double col[GW_NCOLS][GW_RING_CAP];
	int64_t step[GW_RING_CAP];
	size_t head;        /* slot of the next record */
	size_t count;       /* records of the current segment in the ring */
	/* previous segment, oldest first; NULL until the first restart */
	double (*pcol)[GW_RING_CAP];
	int64_t *pstep;
	size_t pcount;
};

struct run {
	char *name;
	uint32_t hash;
	const struct gw_thresholds *th;
	unsigned th_gen;

	int64_t seg;
	enum gw_seg_reason seg_reason;
	int64_t seg_first_step;
	int64_t restart_step;
	uint64_t seg_records;
	bool seg_from_event;    /* opened by "resumed", no metric line yet */

	int64_t last_step;      /* -1 before the first metric record */
	unsigned last_present;  /* roles of the last metric line */
	double last_ts;         /* NaN if unknown */
	double interval;        /* EWMA of ts differences per step, NaN until known */
	unsigned n_intervals;   /* intervals folded into it */

	double last_wall;
	unsigned present_ever;
	double last[GW_NROLES];
	uint64_t records, events;

	json_t *last_ckpt;
	int64_t last_ckpt_step;
	json_t *resumed;

	struct gw_hist hist;
	struct incident inc[GW_DET_MAX][MAX_INCIDENTS];
	unsigned char *det_state;
};

struct gw_engine {
	struct gw_engine_opts opts;
	struct gw_engine_hooks hooks;
	unsigned th_gen;
	struct run **slots;
	size_t cap, count;
	size_t ndet;
	size_t det_off[GW_DET_MAX];
	size_t det_total;
};

static const char *const kind_names[] = {"open", "update", "resolve"};

const char *gw_alert_kind_name(enum gw_alert_kind k)
{
	return (unsigned)k < 3 ? kind_names[k] : "?";
}

const char *gw_severity_name(enum gw_severity s)
{
	switch (s) {
	case GW_SEV_INFO: return "info";
	case GW_SEV_WARNING: return "warning";
	case GW_SEV_CRITICAL: return "critical";
	}
	return "?";
}

int gw_severity_parse(const char *s)
{
	if (strcmp(s, "info") == 0)
		return GW_SEV_INFO;
	if (strcmp(s, "warning") == 0)
		return GW_SEV_WARNING;
	if (strcmp(s, "critical") == 0)
		return GW_SEV_CRITICAL;
	return -1;
}

const char *gw_seg_reason_name(enum gw_seg_reason r)
{
	switch (r) {
	case GW_SEG_START: return "start";
	case GW_SEG_RESUMED: return "resumed";
	case GW_SEG_REWIND: return "rewind";
	case GW_SEG_GAP: return "gap";
	}
	return "?";
}

static uint64_t fnv64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 1099511628211ull;
	}
	return h;
}

void gw_alert_make_id(char id[24], const char *run, int64_t seg,
                      const char *detector, uint32_t incident)
{
	uint64_t h = 14695981039346656037ull;
	h = fnv64(h, run, strlen(run) + 1);
	h = fnv64(h, &seg, sizeof(seg));
	h = fnv64(h, detector, strlen(detector) + 1);
	h = fnv64(h, &incident, sizeof(incident));
	snprintf(id, 24, "gw-%016llx", (unsigned long long)h);
}

/* ---- history ------------------------------------------------------------ */

struct gw_win gw_hist_recent(const struct gw_hist *h, enum gw_col col, size_t n)
{
	struct gw_win w = {0};
	if (n > h->count)
		n = h->count;
	if (!n)
		return w;
	size_t start = (h->head - n) & RING_MASK;
	if (start + n <= GW_RING_CAP) {
		w.a = &h->col[col][start];
		w.na = n;
	} else {
		w.a = &h->col[col][start];
		w.na = GW_RING_CAP - start;
		w.b = &h->col[col][0];
		w.nb = n - w.na;
	}
	return w;
}

int64_t gw_hist_step_at(const struct gw_hist *h, size_t n, size_t i)
{
	if (n > h->count)
		n = h->count;
	if (i >= n)
		return -1;
	return h->step[(h->head - n + i) & RING_MASK];
}

struct gw_win gw_hist_prev(const struct gw_hist *h, enum gw_col col, int64_t upto,
                           size_t n)
{
	struct gw_win w = {0};
	if (!h->pstep || !h->pcount)
		return w;
	/* steps in the previous segment increase; find the last <= upto */
	size_t lo = 0, hi = h->pcount; /* first index with step > upto */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->pstep[mid] <= upto)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	size_t k = end < n ? end : n;
	w.a = &h->pcol[col][end - k];
	w.na = k;
	return w;
}

double gw_hist_prev_at_step(const struct gw_hist *h, enum gw_col col, int64_t step)
{
	if (!h->pstep || !h->pcount)
		return NAN;
	size_t lo = 0, hi = h->pcount;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->pstep[mid] < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->pcount && h->pstep[lo] == step)
		return h->pcol[col][lo];
	return NAN;
}

int64_t gw_hist_prev_last_step(const struct gw_hist *h)
{
	return h->pcount ? h->pstep[h->pcount - 1] : -1;
}

static int hist_freeze(struct gw_hist *h)
{
	if (!h->count)
		return 0; /* keep the older copy: nothing newer to judge against */
	if (!h->pstep) {
		h->pcol = malloc(sizeof(*h->pcol) * GW_NCOLS);
		h->pstep = malloc(sizeof(*h->pstep) * GW_RING_CAP);
		if (!h->pcol || !h->pstep) {
			free(h->pcol);
			free(h->pstep);
			h->pcol = NULL;
			h->pstep = NULL;
			return -ENOMEM;
		}
	}
	size_t start = (h->head - h->count) & RING_MASK;
	for (size_t i = 0; i < h->count; i++) {
		size_t s = (start + i) & RING_MASK;
		for (int c = 0; c < GW_NCOLS; c++)
			h->pcol[c][i] = h->col[c][s];
		h->pstep[i] = h->step[s];
	}
	h->pcount = h->count;
	h->count = 0;
	return 0;
}

static void hist_push(struct gw_hist *h, const struct gw_rec *rec)
{
	size_t s = h->head;
	for (int c = 0; c < GW_NROLES; c++)
		h->col[c][s] = gw_rec_has(rec, c) ? rec->v[c] : NAN;
	h->col[GW_COL_TS][s] = rec->ts;
	h->step[s] = rec->step;
	h->head = (s + 1) & RING_MASK;
	if (h->count < GW_RING_CAP)
		h->count++;
}

static void hist_merge_last(struct gw_hist *h, const struct gw_rec *rec)
{
	size_t s = (h->head - 1) & RING_MASK;
	for (int c = 0; c < GW_NROLES; c++)
		if (gw_rec_has(rec, c))
			h->col[c][s] = rec->v[c];
	if (!isnan(rec->ts))
		h->col[GW_COL_TS][s] = rec->ts;
}

/* ---- run table ------------------------------------------------------------ */

static uint32_t hash_name(const char *s, size_t n)
{
	return (uint32_t)fnv64(14695981039346656037ull, s, n);
}

static struct run **run_slot(const struct gw_engine *e, const char *name,
                             size_t len, uint32_t h)
{
	size_t mask = e->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct run *r = e->slots[i];
		if (!r || (r->hash == h && strncmp(r->name, name, len) == 0 &&
		           r->name[len] == '\0'))
			return &e->slots[i];
	}
}

static int table_grow(struct gw_engine *e)
{
	size_t ncap = e->cap ? e->cap * 2 : 64;
	struct run **old = e->slots;
	size_t ocap = e->cap;
	struct run **ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	e->slots = ns;
	e->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i])
			*run_slot(e, old[i]->name, strlen(old[i]->name), old[i]->hash) = old[i];
	free(old);
	return 0;
}

static const struct gw_thresholds *resolve_th(const struct gw_engine *e, const char *run)
{
	for (size_t i = 0; i < e->opts.n_overrides; i++)
		if (gw_glob_match(e->opts.overrides[i].glob, run))
			return &e->opts.overrides[i].th;
	return &e->opts.th;
}

static void ctx_init(struct gw_engine *e, struct run *r, struct gw_det_ctx *ctx,
                     const struct gw_rec *rec, uint64_t line, double now)
{
	if (r->th_gen != e->th_gen) {
		r->th = resolve_th(e, r->name);
		r->th_gen = e->th_gen;
	}
	memset(ctx, 0, sizeof(*ctx));
	ctx->run = r->name;
	ctx->seg = r->seg;
	ctx->seg_reason = r->seg_reason;
	ctx->seg_first_step = r->seg_first_step;
	ctx->restart_step = r->restart_step;
	ctx->seg_records = r->seg_records;
	ctx->th = r->th;
	ctx->hist = &r->hist;
	ctx->rec = rec;
	ctx->line = line;
	ctx->now = now;
	ctx->live = e->opts.live;
	ctx->last_checkpoint = r->last_ckpt;
	ctx->last_checkpoint_step = r->last_ckpt_step;
	ctx->resumed = r->resumed;
	ctx->engine = e;
	ctx->run_state = r;
}

static struct run *run_new(struct gw_engine *e, const char *name, size_t len,
                           uint32_t h)
{
	struct run *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->name = strndup(name, len);
	r->det_state = calloc(1, e->det_total ? e->det_total : 1);
	if (!r->name || !r->det_state) {
		free(r->name);
		free(r->det_state);
		free(r);
		return NULL;
	}
	r->hash = h;
	r->seg = 0;
	r->seg_first_step = -1;
	r->restart_step = -1;
	r->last_step = -1;
	r->last_ts = NAN;
	r->interval = NAN;
	r->last_wall = NAN;
	r->last_ckpt_step = -1;
	for (int c = 0; c < GW_NROLES; c++)
		r->last[c] = NAN;
	r->th_gen = e->th_gen - 1;
	struct gw_det_ctx ctx;
	ctx_init(e, r, &ctx, NULL, 0, NAN);
	for (size_t d = 0; d < e->ndet; d++) {
		ctx.det_index = (unsigned)d;
		if (gw_det_registry[d]->init)
			gw_det_registry[d]->init(r->det_state + e->det_off[d], &ctx);
	}
	return r;
}

static void run_free(struct run *r)
{
	if (!r)
		return;
	json_decref(r->last_ckpt);
	json_decref(r->resumed);
	free(r->hist.pcol);
	free(r->hist.pstep);
	free(r->det_state);
	free(r->name);
	free(r);
}

static struct run *run_get(struct gw_engine *e, const char *name, size_t len,
                           int *err)
{
	uint32_t h = hash_name(name, len);
	struct run **slot = run_slot(e, name, len, h);
	if (*slot)
		return *slot;
	if (e->opts.max_runs && e->count >= e->opts.max_runs) {
		*err = -ENOSPC;
		return NULL;
	}
	if ((e->count + 1) * 2 > e->cap) {
		if (table_grow(e) < 0) {
			*err = -ENOMEM;
			return NULL;
		}
		slot = run_slot(e, name, len, h);
	}
	struct run *r = run_new(e, name, len, h);
	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	*slot = r;
	e->count++;
	return r;
}

/* ---- engine --------------------------------------------------------------- */

struct gw_engine *gw_engine_new(const struct gw_engine_opts *opts,
                                const struct gw_engine_hooks *hooks)
{
	struct gw_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->opts = *opts;
	if (hooks)
		e->hooks = *hooks;
	e->th_gen = 1;
	size_t off = 0;
	for (e->ndet = 0; gw_det_registry[e->ndet]; e->ndet++) {
		GW_REQUIRE(e->ndet < GW_ARRAY_SIZE(e->det_off));
		e->det_off[e->ndet] = off;
		off += (gw_det_registry[e->ndet]->state_size + 15) & ~(size_t)15;
	}
	e->det_total = off;
	if (table_grow(e) < 0) {
		free(e);
		return NULL;
	}
	return e;
}

void gw_engine_free(struct gw_engine *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->cap; i++)
		run_free(e->slots[i]);
	free(e->slots);
	free(e);
}

void gw_engine_reconfigure(struct gw_engine *e, const struct gw_engine_opts *opts)
{
	e->opts = *opts;
	e->th_gen++;
}

size_t gw_engine_run_count(const struct gw_engine *e)
{
	return e->count;
}

size_t gw_engine_bytes_per_run(void)
{
	size_t det = 0;
	for (size_t d = 0; gw_det_registry[d]; d++)
		det += (gw_det_registry[d]->state_size + 15) & ~(size_t)15;
	/* the previous-segment copy exists once the run restarted */
	size_t prev = sizeof(double) * GW_NCOLS * GW_RING_CAP +
	              sizeof(int64_t) * GW_RING_CAP;
	return sizeof(struct run) + det + prev + GW_WIRE_RUN_MAX;
}

static void open_segment(struct gw_engine *e, struct run *r, enum gw_seg_reason why,
                         int64_t first_step, int64_t restart_step, uint64_t line,
                         double ts, double now)
{
	if (r->seg > 0 && hist_freeze(&r->hist) < 0)
		gw_log_err("run %s: no memory for the previous-segment history", r->name);
	r->hist.count = 0;
	r->seg++;
	r->seg_reason = why;
	r->seg_first_step = why == GW_SEG_RESUMED ? -1 : first_step;
	r->restart_step = restart_step;
	r->seg_records = 0;
	r->seg_from_event = why == GW_SEG_RESUMED;
	if (why != GW_SEG_RESUMED) {
		json_decref(r->resumed);
		r->resumed = NULL;
	}
	if (e->hooks.on_segment) {
		struct gw_segment_info si = {
			.run = r->name, .seg = r->seg, .reason = why,
			.first_step = first_step, .restart_step = restart_step,
			.line = line, .ts = ts,
		};
		e->hooks.on_segment(e->hooks.data, &si);
	}
	if (r->seg == 1)
		return;
	struct gw_det_ctx ctx;
	ctx_init(e, r, &ctx, NULL, line, now);
	for (size_t d = 0; d < e->ndet; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		if ((e->opts.disabled >> d) & 1u || !det->on_segment)
			continue;
		if (det->live_only && !e->opts.live)
			continue;
		ctx.det_index = (unsigned)d;
		det->on_segment(r->det_state + e->det_off[d], &ctx);
	}
}

/* Does this metric record start a new segment? */
static enum gw_seg_reason segment_break(const struct run *r, const struct gw_rec *rec)
{
	if (r->seg == 0)
		return GW_SEG_START;
	if (r->last_step < 0)
		return (enum gw_seg_reason)-1;
	bool rewind = rec->step < r->last_step ||
	              (rec->step == r->last_step && (rec->present & r->last_present));
	if (rewind)
		return r->seg_from_event ? (enum gw_seg_reason)-1 : GW_SEG_REWIND;
	if (!isnan(rec->ts) && !isnan(r->last_ts) && !r->seg_from_event) {
		double gap = rec->ts - r->last_ts;
		double need = r->th->gap_min_seconds;
		/* without a few intervals to go by, a long first step is not a gap */
		if (r->n_intervals < GAP_MIN_INTERVALS)
			return (enum gw_seg_reason)-1;
		if (r->th->gap_factor * r->interval > need)
			need = r->th->gap_factor * r->interval;
		if (gap >= need)
			return GW_SEG_GAP;
	}
	return (enum gw_seg_reason)-1;
}

static void dispatch(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                     uint64_t line, double now, bool is_event)
{
	struct gw_det_ctx ctx;
	ctx_init(e, r, &ctx, rec, line, now);
	for (size_t d = 0; d < e->ndet; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		if ((e->opts.disabled >> d) & 1u)
			continue;
		if (det->live_only && !e->opts.live)
			continue;
		ctx.det_index = (unsigned)d;
		void (*fn)(void *, const struct gw_det_ctx *) =
			is_event ? det->on_event : det->on_record;
		if (fn)
			fn(r->det_state + e->det_off[d], &ctx);
	}
}

static void feed_event(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                       uint64_t line, double now)
{
	r->events++;
	if (strcmp(rec->event, "resumed") == 0) {
		int64_t s = rec->step;
		json_t *cs = json_object_get(rec->attrs, "checkpoint_step");
		if (json_is_integer(cs) && json_integer_value(cs) >= 0)
			s = json_integer_value(cs);
		json_decref(r->resumed);
		r->resumed = json_incref(rec->attrs);
		open_segment(e, r, GW_SEG_RESUMED, rec->step, s, line, rec->ts, now);
		/* a resumed process starts its step count again */
		r->last_step = -1;
		r->last_present = 0;
	} else if (strcmp(rec->event, "checkpoint_saved") == 0) {
		json_decref(r->last_ckpt);
		r->last_ckpt = json_incref(rec->attrs);
		r->last_ckpt_step = rec->step;
		if (r->seg == 0)
			open_segment(e, r, GW_SEG_START, rec->step, -1, line, rec->ts, now);
	} else if (r->seg == 0) {
		open_segment(e, r, GW_SEG_START, rec->step, -1, line, rec->ts, now);
	}
	if (!isnan(rec->ts))
		r->last_ts = rec->ts;
	dispatch(e, r, rec, line, now, true);
}

static void feed_record(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                        uint64_t line, double now)
{
	int why = (int)segment_break(r, rec);
	if (why >= 0) {
		int64_t s = why == GW_SEG_REWIND || why == GW_SEG_GAP ? rec->step - 1 : -1;
		open_segment(e, r, (enum gw_seg_reason)why, rec->step, s, line, rec->ts, now);
	}
	bool merge = r->seg_records > 0 && rec->step == r->last_step &&
	             !(rec->present & r->last_present);
	if (merge) {
		hist_merge_last(&r->hist, rec);
		r->last_present |= rec->present;
	} else {
		hist_push(&r->hist, rec);
		r->seg_records++;
		r->records++;
		r->last_present = rec->present;
		if (r->seg_first_step < 0)
			r->seg_first_step = rec->step;
		if (r->seg_from_event) {
			/* the first metric line after "resumed" */
			r->seg_from_event = false;
		}
	}
	if (!isnan(rec->ts)) {
		if (!isnan(r->last_ts) && why < 0 && rec->ts > r->last_ts &&
		    rec->step > r->last_step) {
			double d = (rec->ts - r->last_ts) / (double)(rec->step - r->last_step);
			r->interval = isnan(r->interval) ? d : 0.9 * r->interval + 0.1 * d;
			r->n_intervals++;
		}
		r->last_ts = rec->ts;
	}
	r->last_step = rec->step;
	for (int c = 0; c < GW_NROLES; c++)
		if (gw_rec_has(rec, c))
			r->last[c] = rec->v[c];
	r->present_ever |= rec->present;
	dispatch(e, r, rec, line, now, false);
}

int gw_engine_feed(struct gw_engine *e, const struct gw_rec *rec, uint64_t line,
                   double now, int64_t *seg_out)
{
	int err = 0;
	struct run *r = run_get(e, rec->run, rec->run_len, &err);
	if (!r)
		return err;
	if (r->th_gen != e->th_gen) {
		r->th = resolve_th(e, r->name);
		r->th_gen = e->th_gen;
	}
	r->last_wall = now;
	if (rec->event)
		feed_event(e, r, rec, line, now);
	else
		feed_record(e, r, rec, line, now);
	if (seg_out)
		*seg_out = r->seg;
	return 0;
}

void gw_engine_tick(struct gw_engine *e, double now)
{
	for (size_t i = 0; i < e->cap; i++) {
		struct run *r = e->slots[i];
		if (!r || r->seg == 0)
			continue;
		struct gw_det_ctx ctx;
		ctx_init(e, r, &ctx, NULL, 0, now);
		for (size_t d = 0; d < e->ndet; d++) {
			const struct gw_detector *det = gw_det_registry[d];
			if ((e->opts.disabled >> d) & 1u || !det->on_tick)
				continue;
			if (det->live_only && !e->opts.live)
				continue;
			ctx.det_index = (unsigned)d;
			det->on_tick(r->det_state + e->det_off[d], &ctx);
		}
	}
}

int gw_engine_seed_run(struct gw_engine *e, const char *run, int64_t seg,
                       int64_t last_step, double last_ts)
{
	int err = 0;
	struct run *r = run_get(e, run, strlen(run), &err);
	if (!r)
		return err;
	if (r->seg != 0)
		return -EALREADY;
	r->seg = seg;
	r->seg_reason = GW_SEG_START;
	r->last_step = last_step;
	r->last_present = (1u << GW_NROLES) - 1; /* a repeat of last_step is a rewind */
	r->last_ts = last_ts;
	return 0;
}

static void fill_info(const struct run *r, struct gw_run_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->run = r->name;
	ri->seg = r->seg;
	ri->last_step = r->last_step;
	ri->last_ts = r->last_ts;
	ri->last_wall = r->last_wall;
	ri->present = r->present_ever;
	memcpy(ri->last, r->last, sizeof(ri->last));
	ri->records = r->records;
	ri->events = r->events;
	for (size_t d = 0; d < GW_DET_MAX; d++)
		for (int k = 0; k < MAX_INCIDENTS; k++)
			ri->open_alerts += r->inc[d][k].used && r->inc[d][k].open;
}

int gw_engine_run_info(const struct gw_engine *e, const char *run,
                       struct gw_run_info *out)
{
	size_t len = strlen(run);
	struct run *r = *run_slot(e, run, len, hash_name(run, len));
	if (!r)
		return -ENOENT;
	fill_info(r, out);
	return 0;
}

const struct gw_hist *gw_engine_hist(const struct gw_engine *e, const char *run)
{
	size_t len = strlen(run);
	struct run *r = *run_slot(e, run, len, hash_name(run, len));
	return r ? &r->hist : NULL;
}

void gw_engine_foreach_run(const struct gw_engine *e,
                           void (*fn)(void *data, const struct gw_run_info *ri),
                           void *data)
{
	for (size_t i = 0; i < e->cap; i++) {
		if (!e->slots[i])
			continue;
		struct gw_run_info ri;
		fill_info(e->slots[i], &ri);
		fn(data, &ri);
	}
}

/* ---- verdicts ------------------------------------------------------------- */

static void emit(struct gw_engine *e, struct run *r, const struct gw_det_ctx *ctx,
                 enum gw_alert_kind kind, uint32_t key, int64_t seg,
                 const struct gw_verdict *v, enum gw_severity sev)
{
	if (!e->hooks.on_alert)
		return;
	const struct gw_detector *det = gw_det_registry[ctx->det_index];
	struct gw_alert a = {
		.kind = kind,
		.run = r->name,
		.seg = seg,
		.step = ctx->rec ? ctx->rec->step : r->last_step,
		.line = ctx->line,
		.detector = det->name,
		.severity = sev,
		.summary = v ? v->summary : "",
		.cause = v ? v->cause : "",
		.action = v ? v->action : "",
		.evidence = v ? v->evidence : NULL,
		.ts = ctx->rec ? ctx->rec->ts : r->last_ts,
		.wall = e->opts.live ? ctx->now : NAN,
	};
	gw_alert_make_id(a.id, r->name, seg, det->name, key);
	e->hooks.on_alert(e->hooks.data, &a);
}

void gw_det_raise(const struct gw_det_ctx *ctx, struct gw_verdict *v)
{
	struct gw_engine *e = ctx->engine;
	struct run *r = ctx->run_state;
	struct incident *slots = r->inc[ctx->det_index];
	struct incident *in = NULL, *free_slot = NULL;
	for (int k = 0; k < MAX_INCIDENTS; k++) {
		if (slots[k].used && slots[k].key == v->incident && slots[k].seg == r->seg)
			in = &slots[k];
		else if (!free_slot && (!slots[k].used || !slots[k].open))
			free_slot = &slots[k];
	}
	if (in) {
		if (v->severity > in->severity || v->force_update) {
			if (v->severity > in->severity)
				in->severity = v->severity;
			in->open = true;
			emit(e, r, ctx, GW_ALERT_UPDATE, v->incident, in->seg, v, in->severity);
		}
	} else {
		if (!free_slot)
			free_slot = &slots[0]; /* table full: forget the oldest */
		*free_slot = (struct incident){
			.key = v->incident, .used = true, .open = true,
			.severity = v->severity, .seg = r->seg,
		};
		emit(e, r, ctx, GW_ALERT_OPEN, v->incident, r->seg, v, v->severity);
	}
	json_decref(v->evidence);
	v->evidence = NULL;
}

void gw_det_resolve(const struct gw_det_ctx *ctx, uint32_t incident)
{
	struct gw_engine *e = ctx->engine;
	struct run *r = ctx->run_state;
	struct incident *slots = r->inc[ctx->det_index];
	for (int k = 0; k < MAX_INCIDENTS; k++) {
		struct incident *in = &slots[k];
		if (in->used && in->open && in->key == incident) {
			in->open = false;
			emit(e, r, ctx, GW_ALERT_RESOLVE, incident, in->seg, NULL, in->severity);
		}
	}
}
