/*
 * The wire parser's shape cache (wire_int.h): the keys of the last line,
 * in order, with what each names (run, step, event, rank, or its role and
 * priority in the alias table).  A stream's lines nearly always repeat
 * their keys, so a key found at its place in the cache costs one memcmp:
 * it is not decoded, hashed, checked against the line's other keys (the
 * cached line had no duplicates, and a line that matches it so far holds
 * the same keys) or looked up.  A line whose keys differ becomes the new
 * shape.  Only keys without escapes are cached (their text is their name).
 */
#include "wire_int.h"
#include "buf.h"
#include "hash.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void gw__wire_shape_begin(struct gw_wire *w)
{
	size_t n = gw_alias_count(w->aliases);
	if (n != w->shape_aliases) {
		w->shape_n = 0;
		w->shape_aliases = n;
	}
	w->shape_same = true;
}

static void meaning(const struct gw_wire *w, struct entry *e)
{
	e->known = true;
	e->role = -1;
	e->prio = 0;
	e->name = K_OTHER;
	if (e->key_len == 3 && memcmp(e->key, "run", 3) == 0)
		e->name = K_RUN;
	else if (e->key_len == 4 && memcmp(e->key, "step", 4) == 0)
		e->name = K_STEP;
	else if (e->key_len == 5 && memcmp(e->key, "event", 5) == 0)
		e->name = K_EVENT;
	else if (e->key_len == 4 && memcmp(e->key, "rank", 4) == 0)
		e->name = K_RANK;
	else
		e->role = gw__alias_lookup_hashed(w->aliases, e->key, e->key_len, e->key_hash,
		                                  &e->prio);
}

int gw__wire_shape_end(struct gw_wire *w)
{
	if (w->shape_same && w->n_ent == w->shape_n)
		return 0;   /* every entry came from the shape, meaning and all */
	size_t text = 0;
	for (size_t k = 0; k < w->n_ent; k++) {
		struct entry *e = &w->ent[k];
		if (!e->known)
			meaning(w, e);
		if (e->key_raw == e->key_len)
			text += e->key_len + 1;
	}
	/* the new shape's text goes to the spare buffer: this line's entries
	 * may point into the current one */
	int spare = 1 - w->shape_cur;
	if (gw_grow((void **)&w->shape_text[spare], &w->shape_text_cap[spare], text + 1, 1) < 0 ||
	    gw_grow((void **)&w->shape, &w->shape_cap, w->n_ent + 1, sizeof(*w->shape)) < 0) {
		w->shape_n = 0;
		return -ENOMEM;
	}
	char *t = w->shape_text[spare];
	size_t off = 0;
	for (size_t k = 0; k < w->n_ent; k++) {
		struct entry *e = &w->ent[k];
		struct shape_key *s = &w->shape[k];
		s->hash = e->key_hash;
		s->name = e->name;
		s->role = e->role;
		s->prio = e->prio;
		if (e->key_raw != e->key_len) {
			s->off = 0;
			s->len = SIZE_MAX;
			continue;
		}
		memcpy(t + off, e->key, e->key_len);
		t[off + e->key_len] = '\0';
		s->off = off;
		s->len = e->key_len;
		e->key = t + off;
		off += e->key_len + 1;
	}
	w->shape_n = w->n_ent;
	w->shape_cur = spare;
	return 0;
}
