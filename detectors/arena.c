/*
 * The run's arena (see arena.h): a list of chunks, the newest bumped; an
 * allocation that does not fit what is left of it gets a chunk of its own
 * size or GW_ARENA_CHUNK, whichever is larger.  What was left of the old
 * chunk stays unused: the lazily allocated parts are few and come once.
 */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>

struct gw_arena_chunk {
	struct gw_arena_chunk *next;
	size_t size, used;             /* bytes of data[] */
	_Alignas(16) unsigned char data[];
};

void *gw_arena_alloc(struct gw_arena *a, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	struct gw_arena_chunk *c = a->head;
	if (!c || c->size - c->used < size) {
		size_t want = size > GW_ARENA_CHUNK ? size : GW_ARENA_CHUNK;
		if (!(c = calloc(1, sizeof(*c) + want)))
			return NULL;
		c->size = want;
		c->next = a->head;
		a->head = c;
		a->bytes += sizeof(*c) + want;
	}
	void *p = c->data + c->used;
	c->used += size;
	return p;
}

void gw_arena_free(struct gw_arena *a)
{
	while (a->head) {
		struct gw_arena_chunk *next = a->head->next;
		free(a->head);
		a->head = next;
	}
	a->bytes = 0;
}
