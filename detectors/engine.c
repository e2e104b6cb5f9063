/*
 * The detector engine (see engine.h): a hash table of runs, each with its
 * segment bookkeeping, history, restart context, events, incident table and
 * detector states, and the dispatch of every line to the detectors in
 * registry order.
 *
 * History: one ring of GW_RING_CAP slots per run holds the run's timeline,
 * a column array per metric (so windows go to the kernels as spans).  A
 * metric record takes the next slot; a line that only adds fields to the
 * step of the previous line (some loggers split one step over several
 * lines) fills that slot instead.  When a segment restarts from checkpoint
 * step S, the records with step > S are popped from the newest end of the
 * ring into the replay copy (the pre-crash values of the steps about to be
 * logged again), the regime before S is snapshotted (regime.c), and the new
 * segment's records continue the timeline.
 *
 * Lines that carry neither a loss nor a grad norm (an lr-only line, an eval
 * summary) are stored by the daemon but do not enter the history or reach
 * the detectors: they would only dilute the windows.
 */
#include "engine.h"
#include "log.h"
#include "regime.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INCIDENTS 4       /* open incidents tracked per detector per run */
#define RING_MASK (GW_RING_CAP - 1)
#define GAP_HIST 16           /* step intervals kept for the gap rule */
#define GAP_MIN_INTERVALS 4   /* intervals known before a gap can split */
#define CKPT_KEEP 4           /* checkpoint_saved events kept per run */

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
	uint64_t line[GW_RING_CAP];
	uint8_t valid[GW_RING_CAP];
	size_t head;        /* slot of the next record */
	size_t count;       /* records in the timeline */
	/* the valid records again, in timeline order, in a ring of their own
	 * (columns of enum gw_vcol), so that "the last n valid records" is one
	 * or two spans the statistics read in place */
	double vcol[GW_NVCOLS][GW_RING_CAP];
	int64_t vstep[GW_RING_CAP];
	size_t vhead, vcount;
	struct gw_replayed *rep;   /* GW_REPLAY_CAP, allocated at the first restart */
	size_t nrep;
};

struct ckpt {
	json_t *attrs;
	int64_t step;
	uint64_t line;
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
	uint32_t seg_fired;     /* detectors that raised (warning+) in this segment */

	int64_t last_step;      /* -1 before the first metric record of the segment */
	unsigned last_present;  /* roles of the last metric line */
	double last_ts;         /* NaN if unknown */
	double dts[GAP_HIST];   /* recent step intervals */
	unsigned ndts;

	double last_wall;
	unsigned present_ever;
	double last[GW_NROLES];
	uint64_t records, events;

	struct ckpt ckpts[CKPT_KEEP];
	json_t *resumed;

	struct gw_hist hist;
	struct gw_restart restart;
	struct gw_run_shared shared;
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
	w.a = &h->col[col][start];
	if (start + n <= GW_RING_CAP) {
		w.na = n;
	} else {
		w.na = GW_RING_CAP - start;
		w.b = &h->col[col][0];
		w.nb = n - w.na;
	}
	return w;
}

bool gw_hist_at(const struct gw_hist *h, size_t i, struct gw_hist_rec *out)
{
	if (i >= h->count)
		return false;
	size_t s = (h->head - 1 - i) & RING_MASK;
	out->step = h->step[s];
	out->line = h->line[s];
	out->loss = h->col[GW_COL_LOSS][s];
	out->grad_norm = h->col[GW_COL_GRAD_NORM][s];
	out->lr = h->col[GW_COL_LR][s];
	out->throughput = h->col[GW_COL_THROUGHPUT][s];
	out->ts = h->col[GW_COL_TS][s];
	out->valid = h->valid[s];
	return true;
}

struct gw_win gw_hist_valid(const struct gw_hist *h, enum gw_vcol col, size_t count, size_t skip)
{
	struct gw_win w = {0};
	if (skip >= h->vcount)
		return w;
	size_t n = h->vcount - skip < count ? h->vcount - skip : count;
	if (!n)
		return w;
	size_t start = (h->vhead - skip - n) & RING_MASK;
	w.a = &h->vcol[col][start];
	if (start + n <= GW_RING_CAP) {
		w.na = n;
	} else {
		w.na = GW_RING_CAP - start;
		w.b = &h->vcol[col][0];
		w.nb = n - w.na;
	}
	return w;
}

int64_t gw_hist_valid_step(const struct gw_hist *h, size_t count, size_t skip, size_t i)
{
	if (skip >= h->vcount)
		return -1;
	size_t n = h->vcount - skip < count ? h->vcount - skip : count;
	if (i >= n)
		return -1;
	return h->vstep[(h->vhead - skip - n + i) & RING_MASK];
}

size_t gw_hist_last_valid(const struct gw_hist *h, size_t count, size_t skip, double *loss,
                          double *gn, double *lr, int64_t *step)
{
	struct gw_win w = gw_hist_valid(h, GW_V_LOSS, count, skip);
	size_t n = gw_win_len(&w);
	if (loss)
		gw_win_copy(&w, loss);
	if (gn) {
		w = gw_hist_valid(h, GW_V_GRAD_NORM, count, skip);
		gw_win_copy(&w, gn);
	}
	if (lr) {
		w = gw_hist_valid(h, GW_V_LR, count, skip);
		gw_win_copy(&w, lr);
	}
	for (size_t i = 0; step && i < n; i++)
		step[i] = gw_hist_valid_step(h, count, skip, i);
	return n;
}

const struct gw_replayed *gw_hist_replayed(const struct gw_hist *h, int64_t step)
{
	size_t lo = 0, hi = h->nrep;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->rep[mid].step < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->nrep && h->rep[lo].step == step ? &h->rep[lo] : NULL;
}

size_t gw_hist_replay_count(const struct gw_hist *h)
{
	return h->nrep;
}

static bool is_valid(double loss, double gn)
{
	return isfinite(loss) && isfinite(gn) && loss > 0 && gn > 0;
}

static void valid_pop(struct gw_hist *h)
{
	h->vhead = (h->vhead - 1) & RING_MASK;
	h->vcount--;
}

static void valid_put(struct gw_hist *h, size_t at, size_t s)
{
	double l = h->col[GW_COL_LOSS][s], g = h->col[GW_COL_GRAD_NORM][s];
	h->vcol[GW_V_LOSS][at] = l;
	h->vcol[GW_V_GRAD_NORM][at] = g;
	h->vcol[GW_V_LOG_LOSS][at] = log(l);
	h->vcol[GW_V_LOG_GRAD_NORM][at] = log(g);
	h->vcol[GW_V_LR][at] = h->col[GW_COL_LR][s];
	h->vstep[at] = h->step[s];
}

/* Slot s is the newest record and its values changed: recompute its
 * validity and logs, and keep the valid ring in step. */
static void set_valid(struct gw_hist *h, size_t s)
{
	double l = h->col[GW_COL_LOSS][s], g = h->col[GW_COL_GRAD_NORM][s];
	bool was = h->valid[s], now = is_valid(l, g);
	h->valid[s] = now;
	if (was && !now) {
		valid_pop(h);
	} else if (now && !was) {
		valid_put(h, h->vhead, s);
		h->vhead = (h->vhead + 1) & RING_MASK;
		h->vcount++;
	} else if (now) {
		valid_put(h, (h->vhead - 1) & RING_MASK, s);
	}
}

/* Restart from S: records with step > S leave the timeline for the replay
 * copy (the first GW_REPLAY_CAP of them, in step order).  Returns T, the
 * last pre-crash step (S if none). */
static int64_t hist_cut(struct gw_hist *h, int64_t S)
{
	size_t popped = 0;
	while (popped < h->count && h->step[(h->head - 1 - popped) & RING_MASK] > S)
		popped++;
	h->nrep = 0;
	if (!popped)
		return S;
	if (!h->rep && !(h->rep = malloc(sizeof(*h->rep) * GW_REPLAY_CAP))) {
		gw_log_err("no memory for a replay copy");
	} else {
		/* oldest popped first: those are the steps replayed first */
		size_t keep = popped < GW_REPLAY_CAP ? popped : GW_REPLAY_CAP;
		for (size_t j = 0; j < keep; j++) {
			size_t s = (h->head - popped + j) & RING_MASK;
			h->rep[j] = (struct gw_replayed){
				.step = h->step[s], .loss = h->col[GW_COL_LOSS][s],
				.grad_norm = h->col[GW_COL_GRAD_NORM][s], .lr = h->col[GW_COL_LR][s],
				.valid = h->valid[s],
			};
		}
		h->nrep = keep;
		/* steps normally rise; keep the copy sorted for the binary search */
		for (size_t j = 1; j < keep; j++) {
			struct gw_replayed x = h->rep[j];
			size_t k = j;
			while (k > 0 && h->rep[k - 1].step > x.step) {
				h->rep[k] = h->rep[k - 1];
				k--;
			}
			h->rep[k] = x;
		}
	}
	int64_t T = h->step[(h->head - 1) & RING_MASK];
	for (size_t j = 0; j < popped; j++)
		if (h->valid[(h->head - 1 - j) & RING_MASK])
			valid_pop(h);
	h->head = (h->head - popped) & RING_MASK;
	h->count -= popped;
	return T;
}

static void hist_push(struct gw_hist *h, const struct gw_rec *rec, uint64_t line)
{
	size_t s = h->head;
	if (h->count == GW_RING_CAP) {
		/* the oldest record leaves; if valid, it is the oldest valid one */
		if (h->valid[s])
			h->vcount--;
		h->count--;
	}
	h->valid[s] = 0;
	for (int c = 0; c < GW_NROLES; c++)
		h->col[c][s] = gw_rec_has(rec, c) ? rec->v[c] : NAN;
	h->col[GW_COL_TS][s] = rec->ts;
	h->step[s] = rec->step;
	h->line[s] = line;
	set_valid(h, s);
	h->head = (s + 1) & RING_MASK;
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
	set_valid(h, s);
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
	ctx->restart = &r->restart;
	ctx->shared = &r->shared;
	ctx->rec = rec;
	ctx->line = line;
	ctx->now = now;
	ctx->live = e->opts.live;
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
	r->seg_first_step = -1;
	r->restart_step = -1;
	r->last_step = -1;
	r->last_ts = NAN;
	r->last_wall = NAN;
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
	for (int k = 0; k < CKPT_KEEP; k++)
		json_decref(r->ckpts[k].attrs);
	json_decref(r->resumed);
	free(r->hist.rep);
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
	/* the replay copy exists once the run restarted with an overlap */
	return sizeof(struct run) + det + sizeof(struct gw_replayed) * GW_REPLAY_CAP +
	       GW_WIRE_RUN_MAX;
}

static bool det_on(const struct gw_engine *e, size_t d)
{
	return !((e->opts.disabled >> d) & 1u) && (!gw_det_registry[d]->live_only || e->opts.live);
}

static void open_segment(struct gw_engine *e, struct run *r, enum gw_seg_reason why,
                         int64_t first_step, int64_t restart_step, uint64_t line,
                         double ts, double now)
{
	r->seg++;
	r->seg_reason = why;
	r->seg_first_step = why == GW_SEG_RESUMED ? -1 : first_step;
	r->restart_step = restart_step;
	r->seg_records = 0;
	r->seg_fired = 0;
	r->seg_from_event = why == GW_SEG_RESUMED;
	if (why != GW_SEG_RESUMED) {
		json_decref(r->resumed);
		r->resumed = NULL;
	}
	r->hist.nrep = 0;
	memset(&r->restart, 0, sizeof(r->restart));
	if (why != GW_SEG_START && restart_step >= 0) {
		int64_t T = hist_cut(&r->hist, restart_step);
		if (r->th_gen != e->th_gen) {
			r->th = resolve_th(e, r->name);
			r->th_gen = e->th_gen;
		}
		gw_regime_open(&r->restart, restart_step, T, &r->hist, r->th);
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
		if (!det_on(e, d) || !det->on_segment)
			continue;
		ctx.det_index = (unsigned)d;
		det->on_segment(r->det_state + e->det_off[d], &ctx);
	}
}

static double median_dts(const struct run *r)
{
	double tmp[GAP_HIST];
	memcpy(tmp, r->dts, r->ndts * sizeof(double));
	return gw_median(tmp, r->ndts);
}

/* Does this metric record start a new segment?  -1: no. */
static int segment_break(const struct run *r, const struct gw_rec *rec)
{
	if (r->seg == 0)
		return GW_SEG_START;
	if (r->seg_from_event)
		return -1;   /* the resumed event opened it; this line is its first */
	bool rewind = rec->step < r->last_step ||
	              (rec->step == r->last_step && (rec->present & r->last_present));
	if (rewind)
		return GW_SEG_REWIND;
	if (!isnan(rec->ts) && !isnan(r->last_ts) && r->ndts >= GAP_MIN_INTERVALS) {
		double need = fmax(r->th->gap_min_seconds, r->th->gap_factor * median_dts(r));
		if (rec->ts - r->last_ts > need)
			return GW_SEG_GAP;
	}
	return -1;
}

static void dispatch(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                     uint64_t line, double now, bool is_event)
{
	struct gw_det_ctx ctx;
	ctx_init(e, r, &ctx, rec, line, now);
	for (size_t d = 0; d < e->ndet; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		if (!det_on(e, d))
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
		if (json_is_number(cs) && isfinite(json_number_value(cs)) && json_number_value(cs) >= 0)
			s = (int64_t)json_number_value(cs);
		json_decref(r->resumed);
		r->resumed = json_incref(rec->attrs);
		open_segment(e, r, GW_SEG_RESUMED, rec->step, s, line, rec->ts, now);
		r->last_step = -1;
		r->last_present = 0;
	} else if (strcmp(rec->event, "checkpoint_saved") == 0) {
		json_decref(r->ckpts[0].attrs);
		memmove(r->ckpts, r->ckpts + 1, sizeof(r->ckpts[0]) * (CKPT_KEEP - 1));
		r->ckpts[CKPT_KEEP - 1] = (struct ckpt){json_incref(rec->attrs), rec->step, line};
		if (r->seg == 0)
			open_segment(e, r, GW_SEG_START, rec->step, -1, line, rec->ts, now);
	} else if (r->seg == 0) {
		open_segment(e, r, GW_SEG_START, rec->step, -1, line, rec->ts, now);
	}
	dispatch(e, r, rec, line, now, true);
	if (!isnan(rec->ts))
		r->last_ts = rec->ts;
}

static void feed_record(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                        uint64_t line, double now)
{
	bool metric = gw_rec_has(rec, GW_ROLE_LOSS) || gw_rec_has(rec, GW_ROLE_GRAD_NORM);
	int why = segment_break(r, rec);
	if (why >= 0) {
		int64_t s = why == GW_SEG_REWIND || why == GW_SEG_GAP ? rec->step - 1 : -1;
		open_segment(e, r, (enum gw_seg_reason)why, rec->step, s, line, rec->ts, now);
	}
	bool merge = r->seg_records > 0 && rec->step == r->last_step &&
	             !(rec->present & r->last_present);
	if (!isnan(rec->ts) && !isnan(r->last_ts) && why < 0 && !merge &&
	    rec->ts >= r->last_ts) {
		/* step intervals inside a segment, never the restart gap itself */
		if (r->ndts == GAP_HIST)
			memmove(r->dts, r->dts + 1, sizeof(double) * (GAP_HIST - 1));
		else
			r->ndts++;
		r->dts[r->ndts - 1] = rec->ts - r->last_ts;
	}
	for (int c = 0; c < GW_NROLES; c++)
		if (gw_rec_has(rec, c))
			r->last[c] = rec->v[c];
	r->present_ever |= rec->present;
	if (merge) {
		hist_merge_last(&r->hist, rec);
		r->last_present |= rec->present;
	} else {
		r->last_present = rec->present;
		r->last_step = rec->step;
		r->records++;
		if (r->seg_first_step < 0)
			r->seg_first_step = rec->step;
		r->seg_from_event = false;
	}
	if (!isnan(rec->ts))
		r->last_ts = rec->ts;
	if (merge || !metric)
		return;   /* stored, but nothing new for the detectors */
	hist_push(&r->hist, rec, line);
	r->seg_records++;
	struct gw_hist_rec cur;
	gw_hist_at(&r->hist, 0, &cur);
	if (cur.valid)
		r->shared.valid_records++;
	if (r->restart.active) {
		r->restart.k = r->seg_records;
		gw_regime_update(&r->restart, &cur, r->th);
	}
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
			if (!det_on(e, d) || !det->on_tick)
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

/* ---- what detectors ask the engine ------------------------------------------ */

const json_t *gw_det_checkpoint_for(const struct gw_det_ctx *ctx, int64_t S, int64_t *step,
                                    uint64_t *line)
{
	const struct run *r = ctx->run_state;
	const struct ckpt *best = NULL;
	for (int k = 0; k < CKPT_KEEP; k++) {
		const struct ckpt *c = &r->ckpts[k];
		if (!c->attrs || c->step > S)
			continue;
		if (c->step == S) {
			best = c;
			break;
		}
		if (!best || c->step > best->step)
			best = c;
	}
	if (step)
		*step = best ? best->step : -1;
	if (line)
		*line = best ? best->line : 0;
	return best ? best->attrs : NULL;
}

bool gw_det_fired(const struct gw_det_ctx *ctx, const char *name)
{
	const struct run *r = ctx->run_state;
	int d = gw_det_index(name);
	return d >= 0 && ((r->seg_fired >> d) & 1u);
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
		.step = v && v->step_set ? v->step : ctx->rec ? ctx->rec->step : r->last_step,
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
	if (v->severity >= GW_SEV_WARNING)
		r->seg_fired |= 1u << ctx->det_index;
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
