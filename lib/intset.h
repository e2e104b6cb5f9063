/*
 * intset: the one integer-key table (open addressing, linear probing),
 * beside strtab.h for byte strings.
 *
 * Maps a 64-bit key to a uint32_t the caller chooses (an index into the
 * caller's own array, or 0 when only membership matters: a set).  Any
 * 64-bit value is a key, 0 included; the keys are mixed (the finalizer of
 * MurmurHash3) before they pick a slot, so small integers and hashes spread
 * alike.  A key that is itself a hash of something larger (a name, a
 * tuple) can collide with another's: the caller that must tell them apart
 * keeps the real key in its item and compares it.
 *
 * The load stays at or below 1/2 (the table doubles before it would pass
 * it).  A zeroed struct is an empty table that allocates on its first put;
 * gw_intset_init starts it on the caller's storage instead (static, on the
 * stack or in a struct), which it leaves for the heap only when it
 * outgrows it.  gw_intset_clear empties it in O(1): every slot carries the
 * generation it was filled in, and a clear starts a new one.  Not
 * thread-safe: lookups may run concurrently, a put or clear may not run
 * beside anything.
 */
#ifndef GW_INTSET_H
#define GW_INTSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gw_intset_slot {
	uint64_t key;
	uint32_t val;
	uint32_t gen;      /* the table's gen: the slot is taken; any other: empty */
};

struct gw_intset {
	struct gw_intset_slot *slot;
	size_t cap;        /* slots, a power of two (0 before any storage) */
	size_t count;      /* keys held */
	uint32_t gen;      /* the current generation (>= 1 once there is storage) */
	bool heap;         /* slot was allocated here (freed by gw_intset_free) */
};

/* Start an empty table on the caller's storage: `cap` slots (a power of two,
 * >= 2) at `buf`, which must outlive the table or its move to the heap. */
void gw_intset_init(struct gw_intset *t, struct gw_intset_slot *buf, size_t cap);

/* Free the table's own storage and leave it empty (a zeroed table). */
void gw_intset_free(struct gw_intset *t);

/* Empty the table, keeping its storage: O(1) but once every 2^32 clears. */
void gw_intset_clear(struct gw_intset *t);

/* Look key up: 0 and *val (if not NULL) = its value, or -ENOENT. */
int gw_intset_find(const struct gw_intset *t, uint64_t key, uint32_t *val);

/* Add key -> val.  Returns 0; -EEXIST if the key is there already (its
 * value is left as it was, and *old, if not NULL, gets it); -ENOMEM (the
 * table is as it was). */
int gw_intset_put(struct gw_intset *t, uint64_t key, uint32_t val, uint32_t *old);

/* Add key -> val, or change the value of a key that is there: 0 or
 * -ENOMEM. */
int gw_intset_set(struct gw_intset *t, uint64_t key, uint32_t val);

#endif
