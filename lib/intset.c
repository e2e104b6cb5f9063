/*
 * The integer-key table (see intset.h).  Linear probing from
 * mix(key) & (cap - 1); a slot of another generation ends a probe.
 * Growing doubles the slots and re-inserts every key of the current
 * generation into the new ones, which start at generation 1.
 */
#include "intset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CAP 16

/* MurmurHash3's 64-bit finalizer: every bit of the key moves the slot. */
static inline uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

void gw_intset_init(struct gw_intset *t, struct gw_intset_slot *buf, size_t cap)
{
	memset(buf, 0, cap * sizeof(*buf));
	*t = (struct gw_intset){.slot = buf, .cap = cap, .gen = 1};
}

void gw_intset_free(struct gw_intset *t)
{
	if (t->heap)
		free(t->slot);
	memset(t, 0, sizeof(*t));
}

void gw_intset_clear(struct gw_intset *t)
{
	t->count = 0;
	if (!t->cap)
		return;
	if (++t->gen == 0) {
		memset(t->slot, 0, t->cap * sizeof(*t->slot));
		t->gen = 1;
	}
}

/* The slot holding key, or the empty slot where it would go. */
static inline struct gw_intset_slot *probe(const struct gw_intset *t, uint64_t key)
{
	size_t mask = t->cap - 1;
	for (size_t i = (size_t)mix(key) & mask;; i = (i + 1) & mask) {
		struct gw_intset_slot *s = &t->slot[i];
		if (s->gen != t->gen || s->key == key)
			return s;
	}
}

int gw_intset_find(const struct gw_intset *t, uint64_t key, uint32_t *val)
{
	if (!t->count)
		return -ENOENT;
	const struct gw_intset_slot *s = probe(t, key);
	if (s->gen != t->gen)
		return -ENOENT;
	if (val)
		*val = s->val;
	return 0;
}

static int grow(struct gw_intset *t)
{
	size_t ncap = t->cap ? t->cap * 2 : MIN_CAP;
	struct gw_intset_slot *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	struct gw_intset old = *t;
	t->slot = ns;
	t->cap = ncap;
	t->gen = 1;
	t->heap = true;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.slot[i].gen != old.gen)
			continue;
		struct gw_intset_slot *s = probe(t, old.slot[i].key);
		*s = old.slot[i];
		s->gen = 1;
	}
	if (old.heap)
		free(old.slot);
	return 0;
}

/* The slot of key, made if new (*made); NULL when out of memory. */
static struct gw_intset_slot *slot_for(struct gw_intset *t, uint64_t key, bool *made)
{
	struct gw_intset_slot *s = t->cap ? probe(t, key) : NULL;
	*made = false;
	if (s && s->gen == t->gen)
		return s;
	if ((t->count + 1) * 2 > t->cap) {
		if (grow(t) < 0)
			return NULL;
		s = probe(t, key);
	}
	s->key = key;
	s->gen = t->gen;
	t->count++;
	*made = true;
	return s;
}

int gw_intset_put(struct gw_intset *t, uint64_t key, uint32_t val, uint32_t *old)
{
	bool made;
	struct gw_intset_slot *s = slot_for(t, key, &made);
	if (!s)
		return -ENOMEM;
	if (!made) {
		if (old)
			*old = s->val;
		return -EEXIST;
	}
	s->val = val;
	return 0;
}

int gw_intset_set(struct gw_intset *t, uint64_t key, uint32_t val)
{
	bool made;
	struct gw_intset_slot *s = slot_for(t, key, &made);
	if (!s)
		return -ENOMEM;
	s->val = val;
	return 0;
}
