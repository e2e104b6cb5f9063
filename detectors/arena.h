/*
 * arena: the memory of one run of the detector engine, freed at once.
 *
 * A run's state is one allocation (the engine's run, its detectors' states,
 * its history); what only some runs need -- the restart regime, the replay
 * copy, the ranks' positions, the spike baselines kept sorted -- is
 * allocated from the run's arena when first needed, and goes with the run
 * (gw_arena_free), never one by one.  Bump allocation from chunks of at
 * least GW_ARENA_CHUNK bytes; 16-byte aligned, zeroed.  Single-threaded.
 */
#ifndef GW_ARENA_H
#define GW_ARENA_H

#include <stddef.h>

#define GW_ARENA_CHUNK 2048

struct gw_arena_chunk;

struct gw_arena {
	struct gw_arena_chunk *head;   /* the newest chunk, the one bumped */
	size_t bytes;                  /* held in chunks, headers included */
};

/* size zeroed bytes, 16-byte aligned, or NULL (out of memory, logged by
 * the caller).  A zeroed struct gw_arena is an empty arena. */
void *gw_arena_alloc(struct gw_arena *a, size_t size);

/* Free every chunk; the arena is then empty. */
void gw_arena_free(struct gw_arena *a);

#endif
