/*
 * What the detector engine tells about its runs (engine.h): their info,
 * their count and memory, seeding a run before its first line, forgetting
 * one (eviction).  The lookups through a const engine may move the table's
 * last-run hint, which no reader sees.
 */
#include "engine_impl.h"

#include "util.h"

#include <errno.h>
#include <math.h>
#include <string.h>

size_t gw_engine_run_count(const struct gw_engine *e)
{
	return e->runs.n;
}

/* An arena part of `size` bytes, in a chunk of its own at most. */
static size_t arena_part(size_t size)
{
	return 32 + (size > GW_ARENA_CHUNK ? size : GW_ARENA_CHUNK);
}

size_t gw_engine_bytes_per_run(void)
{
	size_t det = 0, ndet = 0;
	for (size_t d = 0; gw_det_registry[d]; d++, ndet++)
		det += (gw_det_registry[d]->state_size + 15) & ~(size_t)15;
	struct gw_thresholds th;
	gw_thresholds_default(&th);
	/* at most, at the default thresholds: the run with its detectors and
	 * incidents; in its arena the restart regime, the replay copy, the
	 * ranks' positions and the spike baselines; a long name, its slot in
	 * the run list and in the index */
	return sizeof(struct run) + det + ndet * MAX_INCIDENTS * sizeof(struct incident) +
	       arena_part(sizeof(struct gw_restart)) +
	       arena_part(sizeof(struct gw_replayed) * GW_REPLAY_CAP) +
	       arena_part(GW_RANK_TRACK * sizeof(struct gw_rank_pos)) +
	       arena_part(gw_spike_sorted_bytes(&th)) + GW_WIRE_RUN_MAX +
	       2 * sizeof(struct run *) + 4 * sizeof(struct gw_strtab_slot);
}

size_t gw_engine_run_bytes(const struct gw_engine *e, const char *run)
{
	const struct run *r = gw__runtab_find((struct gw_runtab *)&e->runs, run, strlen(run));
	if (!r)
		return 0;
	return sizeof(*r) + e->det_total + r->arena.bytes +
	       (r->name != r->name_inline ? r->name_len + 1 : 0);
}

int gw_engine_seed_run(struct gw_engine *e, const char *run, int64_t seg,
                       int64_t last_step, double last_ts)
{
	int err = 0;
	struct run *r = gw__run_get(e, run, strlen(run), &err);
	if (!r)
		return err;
	if (r->seg != 0)
		return -EALREADY;
	r->seg = seg;
	r->last_step = last_step;
	r->last_present = (1u << GW_NROLES) - 1; /* a repeat of last_step is a rewind */
	r->last_ts = last_ts;
	return 0;
}

int gw_engine_set_interleaved(struct gw_engine *e, const char *run)
{
	struct run *r = gw__runtab_find((struct gw_runtab *)&e->runs, run, strlen(run));
	if (!r)
		return -ENOENT;
	r->w.interleaved = true;   /* writers.c: repeats are folded */
	return 0;
}

/* ---- what the engine tells about runs --------------------------------------- */

static void fill_info(const struct gw_engine *e, const struct run *r, struct gw_run_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->watch_until = -INFINITY;
	ri->run = r->name;
	ri->seg = r->seg;
	ri->last_step = r->last_step;
	ri->last_ts = r->last_ts;
	ri->last_wall = r->last_wall;
	ri->present = r->present_ever;
	memcpy(ri->last, r->last, sizeof(ri->last));
	ri->records = r->records;
	ri->events = r->events;
	ri->ended = r->ended;
	ri->max_steps = r->max_steps;
	ri->interleaved = r->w.interleaved;
	ri->iw_step = r->w.iw_step;
	ri->iw_line = r->w.iw_line;
	ri->folded = r->w.folded;
	ri->rank_lines = r->w.rank_lines;
	ri->ranks_seen = r->w.ranks_seen;
	ri->rank_max = r->w.rank_max;
	ri->label_rank = r->w.label_rank;
	ri->behind_wall = NAN;
	gw__writers_behind(&r->w, &ri->behind_rank, &ri->behind_step, &ri->behind_wall);
	for (size_t d = 0; d < e->ndet; d++)
		for (int k = 0; k < MAX_INCIDENTS; k++) {
			const struct incident *in = &r->inc[d * MAX_INCIDENTS + k];
			bool open = in->used && in->open;
			ri->open_alerts += open;
			ri->open_live += open && gw_det_registry[d]->on_tick;
		}
	for (size_t d = 0; d < e->ndet; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		if (det->watch_until && gw__det_on(e, d) &&
		    !(det->once_per_segment && ((r->seg_fired >> d) & 1u)))
			ri->watch_until = fmax(ri->watch_until,
			                       det->watch_until(r->det_state + e->det_off[d]));
	}
}

int gw_engine_run_info(const struct gw_engine *e, const char *run, struct gw_run_info *out)
{
	const struct run *r = gw__runtab_find((struct gw_runtab *)&e->runs, run, strlen(run));
	if (!r)
		return -ENOENT;
	fill_info(e, r, out);
	return 0;
}

const struct gw_hist *gw_engine_hist(const struct gw_engine *e, const char *run)
{
	const struct run *r = gw__runtab_find((struct gw_runtab *)&e->runs, run, strlen(run));
	return r ? &r->hist : NULL;
}

bool gw_engine_has_run(const struct gw_engine *e, const char *run, size_t len)
{
	return gw__runtab_find((struct gw_runtab *)&e->runs, run, len) != NULL;
}

int gw_engine_evict(struct gw_engine *e, const char *run, struct gw_run_info *last)
{
	struct run *r = gw__runtab_find(&e->runs, run, strlen(run));
	if (!r)
		return -ENOENT;
	if (last) {
		fill_info(e, r, last);
		last->run = NULL;   /* its name goes with it */
	}
	gw__runtab_del(&e->runs, r);
	return 0;
}

void gw_engine_foreach_run(const struct gw_engine *e,
                           void (*fn)(void *data, const struct gw_run_info *ri), void *data)
{
	for (size_t i = 0; i < e->runs.n; i++) {
		struct gw_run_info ri;
		fill_info(e, e->runs.runs[i], &ri);
		fn(data, &ri);
	}
}
