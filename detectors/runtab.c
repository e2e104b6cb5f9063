/*
 * The run table (run.h): a run's state as one allocation, found by name,
 * removed.  Lookups first try the run of the last one -- most lines are of
 * the run before them -- then the index.  What the detectors' states hold
 * is the engine's (engine.c initialises them, engine_info.c reports).
 *
 * Runs come from slabs of SLAB_BYTES (2 MiB, aligned) that are asked to be
 * transparent huge pages where Linux offers them: a line touches a run's
 * header, a slot of each of the history's columns and a few detector
 * states, a dozen 4 KiB pages apart; with thousands of runs taking turns
 * those were a TLB miss each (bench_engine, 10,000 interleaved runs: 1,054
 * -> 852 ns a record with huge pages, the same run for run).  A freed run's
 * slot goes on a free list and is zeroed when taken again; slabs are
 * freed with the table.
 */
#include "run.h"

#include "buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define SLAB_BYTES ((size_t)2 << 20)

struct slab {
	struct slab *next;
};

/* A zeroed run slot of t->slot_size bytes, or NULL. */
static struct run *slot_take(struct gw_runtab *t)
{
	if (t->free_slots) {
		void *p = t->free_slots;
		t->free_slots = *(void **)p;
		memset(p, 0, t->slot_size);
		return p;
	}
	size_t head = (sizeof(struct slab) + 63) & ~(size_t)63;
	if (!t->slab || t->slab_used + t->slot_size > SLAB_BYTES) {
		if (head + t->slot_size > SLAB_BYTES)
			return calloc(1, t->slot_size);   /* larger than a slab: on its own */
		void *p;
		if (posix_memalign(&p, SLAB_BYTES, SLAB_BYTES) != 0)
			return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
		madvise(p, SLAB_BYTES, MADV_HUGEPAGE);   /* advice: no huge pages is fine */
#endif
		struct slab *s = p;
		s->next = t->slabs;
		t->slabs = s;
		t->slab = p;
		t->slab_used = head;
	}
	struct run *r = (struct run *)((char *)t->slab + t->slab_used);
	t->slab_used += t->slot_size;
	memset(r, 0, t->slot_size);
	return r;
}

/* Give a run's slot back (the memory of a run larger than a slab to the
 * heap). */
static void slot_give(struct gw_runtab *t, struct run *r)
{
	size_t head = (sizeof(struct slab) + 63) & ~(size_t)63;
	if (head + t->slot_size > SLAB_BYTES) {
		free(r);
		return;
	}
	*(void **)r = t->free_slots;
	t->free_slots = r;
}

const struct gw_restart gw__no_restart;

/* Free what a run holds (not its slot). */
static void run_clear(struct run *r)
{
	for (int k = 0; k < CKPT_KEEP; k++)
		json_decref(r->ckpts[k].attrs);
	gw_hist_free(&r->hist);
	gw_spike_free(&r->spike);
	gw_arena_free(&r->arena);
	if (r->name != r->name_inline)
		free(r->name);
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
	size_t size = (sizeof(struct run) + det_bytes + 63) & ~(size_t)63;
	if (t->slot_size != size) {
		if (t->n)
			return NULL;   /* one engine, one layout: a bug in the caller */
		t->slot_size = size;
	}
	struct run *r = slot_take(t);
	if (!r)
		return NULL;
	r->name = len < NAME_INLINE ? r->name_inline : malloc(len + 1);
	if (!r->name) {
		slot_give(t, r);
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
		run_clear(r);
		slot_give(t, r);
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
	run_clear(r);
	slot_give(t, r);
}

void gw__runtab_free(struct gw_runtab *t)
{
	for (size_t i = 0; i < t->n; i++) {
		run_clear(t->runs[i]);
		slot_give(t, t->runs[i]);
	}
	while (t->slabs) {
		struct slab *next = t->slabs->next;
		free(t->slabs);
		t->slabs = next;
	}
	free(t->runs);
	gw_strtab_free(&t->by_name);
	*t = (struct gw_runtab){0};
}
