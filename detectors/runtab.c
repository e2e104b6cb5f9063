/*
 * The run table (run.h): a run's state as one allocation, found by name,
 * removed.  Lookups first try the run of the last one -- most lines are of
 * the run before them -- then the index.  What the detectors' states hold
 * is the engine's (engine.c initialises them, engine_info.c reports).
 */
#include "run.h"

#include "buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const struct gw_restart gw__no_restart;

static void run_free(struct run *r)
{
	for (int k = 0; k < CKPT_KEEP; k++)
		json_decref(r->ckpts[k].attrs);
	gw_hist_free(&r->hist);
	gw_spike_free(&r->spike);
	gw_arena_free(&r->arena);
	if (r->name != r->name_inline)
		free(r->name);
	free(r);
}

struct run *gw__runtab_find(struct gw_runtab *t, const char *name, size_t len)
{
	struct run *last = t->last;
	if (last && last->name_len == len && memcmp(last->name, name, len) == 0)
		return last;
	uint32_t i;
	if (gw_strtab_find(&t->by_name, name, len, &i) < 0)
		return NULL;
	return t->last = t->runs[i];
}

struct run *gw__runtab_add(struct gw_runtab *t, const char *name, size_t len, size_t det_bytes,
                           size_t inc_off)
{
	if (t->n >= UINT32_MAX || gw_grow((void **)&t->runs, &t->cap, t->n + 1, sizeof(*t->runs)) < 0)
		return NULL;
	struct run *r = calloc(1, sizeof(*r) + det_bytes);
	if (!r)
		return NULL;
	r->name = len < NAME_INLINE ? r->name_inline : malloc(len + 1);
	if (!r->name) {
		free(r);
		return NULL;
	}
	memcpy(r->name, name, len);
	r->name[len] = '\0';
	r->name_len = len;
	r->det_state = (unsigned char *)(r + 1);
	r->inc = (struct incident *)(r->det_state + inc_off);
	r->hist.arena = r->spike.arena = &r->arena;
	r->last_step = -1;
	r->last_ts = NAN;
	r->last_wall = NAN;
	r->ended_step = -1;
	r->max_steps = -1;
	gw__writers_init(&r->w);
	for (int c = 0; c < GW_NROLES; c++)
		r->last[c] = NAN;
	if (gw_strtab_put(&t->by_name, r->name, len, (uint32_t)t->n) < 0) {
		run_free(r);
		return NULL;
	}
	t->runs[t->n++] = r;
	return t->last = r;
}

void gw__runtab_del(struct gw_runtab *t, struct run *r)
{
	uint32_t i;
	if (gw_strtab_del(&t->by_name, r->name, r->name_len, &i) < 0)
		return;
	/* the last run takes its place in the list (and in the index) */
	struct run *moved = t->runs[--t->n];
	if (moved != r) {
		t->runs[i] = moved;
		gw_strtab_set(&t->by_name, moved->name, moved->name_len, i);
	}
	if (t->last == r)
		t->last = NULL;
	run_free(r);
}

void gw__runtab_free(struct gw_runtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		run_free(t->runs[i]);
	free(t->runs);
	gw_strtab_free(&t->by_name);
	*t = (struct gw_runtab){0};
}
