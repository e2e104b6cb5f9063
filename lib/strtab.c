/*
 * The string -> index table (see strtab.h).  Linear probing from
 * hash & (cap - 1); an empty slot ends a probe.  Growing doubles the slots
 * and re-inserts every entry by its stored hash (keys are not re-read).
 */
#include "strtab.h"
#include "hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CAP 16

void gw_strtab_init(struct gw_strtab *t, struct gw_strtab_slot *buf, size_t cap)
{
	memset(buf, 0, cap * sizeof(*buf));
	*t = (struct gw_strtab){.slot = buf, .cap = cap};
}

void gw_strtab_free(struct gw_strtab *t)
{
	if (t->heap)
		free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* The slot holding key, or the empty slot where it would go. */
static inline struct gw_strtab_slot *probe(const struct gw_strtab *t, const char *key, uint32_t len,
                                    uint32_t h)
{
	size_t mask = t->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct gw_strtab_slot *s = &t->slot[i];
		if (!s->key || (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0))
			return s;
	}
}

int gw_strtab_find_hashed(const struct gw_strtab *t, const char *key, size_t len,
                          uint32_t hash, uint32_t *val)
{
	if (!t->count || len > UINT32_MAX)
		return -ENOENT;
	const struct gw_strtab_slot *s = probe(t, key, (uint32_t)len, hash);
	if (!s->key)
		return -ENOENT;
	if (val)
		*val = s->val;
	return 0;
}

int gw_strtab_find(const struct gw_strtab *t, const char *key, size_t len, uint32_t *val)
{
	return gw_strtab_find_hashed(t, key, len, gw_fnv1a32(key, len), val);
}

static int grow(struct gw_strtab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : MIN_CAP;
	struct gw_strtab_slot *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	struct gw_strtab old = *t;
	t->slot = ns;
	t->cap = ncap;
	t->heap = true;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slot[i].key)
			*probe(t, old.slot[i].key, old.slot[i].len, old.slot[i].hash) = old.slot[i];
	if (old.heap)
		free(old.slot);
	return 0;
}

int gw_strtab_put(struct gw_strtab *t, const char *key, size_t len, uint32_t val)
{
	if (!key || len > UINT32_MAX)
		return -EINVAL;
	if ((t->count + 1) * 2 > t->cap && grow(t) < 0)
		return -ENOMEM;
	uint32_t h = gw_fnv1a32(key, len);
	struct gw_strtab_slot *s = probe(t, key, (uint32_t)len, h);
	if (s->key)
		return -EEXIST;
	*s = (struct gw_strtab_slot){.key = key, .len = (uint32_t)len, .hash = h, .val = val};
	t->count++;
	return 0;
}

int gw_strtab_del(struct gw_strtab *t, const char *key, size_t len, uint32_t *val)
{
	if (!t->count || len > UINT32_MAX)
		return -ENOENT;
	struct gw_strtab_slot *s = probe(t, key, (uint32_t)len, gw_fnv1a32(key, len));
	if (!s->key)
		return -ENOENT;
	if (val)
		*val = s->val;
	/* backward-shift deletion: pull later entries of the same probe run
	 * into the hole, so no probe ever stops early at it */
	size_t mask = t->cap - 1;
	size_t hole = (size_t)(s - t->slot);
	for (size_t i = (hole + 1) & mask; t->slot[i].key; i = (i + 1) & mask) {
		size_t home = t->slot[i].hash & mask;
		/* the entry may move back to the hole if its home is not in (hole, i] */
		bool between = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
		if (!between) {
			t->slot[hole] = t->slot[i];
			hole = i;
		}
	}
	t->slot[hole] = (struct gw_strtab_slot){0};
	t->count--;
	return 0;
}

int gw_strtab_set(struct gw_strtab *t, const char *key, size_t len, uint32_t val)
{
	if (!t->count || len > UINT32_MAX)
		return -ENOENT;
	struct gw_strtab_slot *s = probe(t, key, (uint32_t)len, gw_fnv1a32(key, len));
	if (!s->key)
		return -ENOENT;
	s->val = val;
	return 0;
}
