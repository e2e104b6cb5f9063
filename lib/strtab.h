/*
 * strtab: the one string -> index table (open addressing, linear probing).
 *
 * Maps a byte string to a uint32_t the caller chooses, typically the index
 * of the item in the caller's own array (a run, an alias, a detector), so the
 * items stay in insertion order and the table is only an index over them.
 * The table stores pointers to the keys, not copies: a key's bytes must stay
 * valid and unchanged while it is in the table (the name inside the item the
 * value indexes is the usual key).  Keys are compared by length and bytes, so
 * they may contain NUL and need not be terminated.
 *
 * The load stays at or below 1/2 (the table doubles before it would pass
 * it), so a lookup probes a few slots.  A zeroed struct is an empty table
 * that allocates on its first gw_strtab_put; gw_strtab_init starts it on the
 * caller's storage instead (static or on the stack), which it leaves for the
 * heap only when it outgrows it.  Removal shifts the probe run back (no
 * tombstones), so a table that keys come and go in stays fast.  Not
 * thread-safe: lookups may run concurrently, a put may not run beside
 * anything.
 */
#ifndef GW_STRTAB_H
#define GW_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gw_strtab_slot {
	const char *key;   /* borrowed; NULL: the slot is empty */
	uint32_t len;
	uint32_t hash;     /* gw_fnv1a32 of the key */
	uint32_t val;
};

struct gw_strtab {
	struct gw_strtab_slot *slot;
	size_t cap;        /* slots, a power of two (0 before any storage) */
	size_t count;      /* keys held */
	bool heap;         /* slot was allocated here (freed by gw_strtab_free) */
};

/* Start an empty table on the caller's storage: `cap` slots (a power of two,
 * >= 2) at `buf`, which must outlive the table or its move to the heap. */
void gw_strtab_init(struct gw_strtab *t, struct gw_strtab_slot *buf, size_t cap);

/* Free the table's own storage (never the keys) and leave it empty. */
void gw_strtab_free(struct gw_strtab *t);

/* Look key[0..len) up: 0 and *val (if not NULL) = its value, or -ENOENT. */
int gw_strtab_find(const struct gw_strtab *t, const char *key, size_t len, uint32_t *val);

/* The same for a caller that already has hash = gw_fnv1a32(key, len). */
int gw_strtab_find_hashed(const struct gw_strtab *t, const char *key, size_t len,
                          uint32_t hash, uint32_t *val);

/* Add key[0..len) -> val (key borrowed, see above).  Returns 0; -EEXIST if
 * the key is there already (its value is left as it was); -EINVAL for a NULL
 * key or len > UINT32_MAX; -ENOMEM.  May move the slots (never the keys). */
int gw_strtab_put(struct gw_strtab *t, const char *key, size_t len, uint32_t val);

/* Remove key[0..len): 0 and *val (if not NULL) = its value, or -ENOENT. */
int gw_strtab_del(struct gw_strtab *t, const char *key, size_t len, uint32_t *val);

/* Change the value of a key that is there (its key pointer moved, say):
 * 0, or -ENOENT. */
int gw_strtab_set(struct gw_strtab *t, const char *key, size_t len, uint32_t val);

#endif
