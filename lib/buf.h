/*
 * buf: the one growable buffer.
 *
 * gw_grow() makes room in any heap array (doubling, so n appends cost O(n));
 * struct gw_buf is a byte buffer on top of it that keeps its text
 * NUL-terminated, for building a message, a request body or a whole file.
 * A failed append leaves the buffer as it was and sets b->err, which later
 * appends keep (they do nothing), so a chain of appends may be checked once
 * at the end.  No I/O; allocation only through realloc.
 */
#ifndef GW_BUF_H
#define GW_BUF_H

#include <stddef.h>

int gw__grow(void **p, size_t *cap, size_t need, size_t size);

/* Make room for `need` elements of `size` bytes in the heap array *p of
 * capacity *cap (in elements; *p may be NULL with *cap 0): reallocates to
 * the next power of two >= need (at least 16) when need > *cap.  Returns 0,
 * or -ENOMEM with *p and *cap unchanged.  Inline when there is room. */
static inline int gw_grow(void **p, size_t *cap, size_t need, size_t size)
{
	return need <= *cap ? 0 : gw__grow(p, cap, need, size);
}

struct gw_buf {
	char *p;       /* NUL-terminated text, NULL while nothing was reserved */
	size_t len;    /* bytes in it, without the NUL */
	size_t cap;
	int err;       /* 0, or -ENOMEM since an append failed */
};

/* Room for n more bytes and the NUL at p[len + n] (0 or -ENOMEM); the caller
 * may write them and add what it wrote to len. */
int gw_buf_reserve(struct gw_buf *b, size_t n);

/* Append s[0..n) / the C string s.  Return b->err. */
int gw_buf_add(struct gw_buf *b, const void *s, size_t n);
int gw_buf_str(struct gw_buf *b, const char *s);

/* Empty the buffer for reuse, keeping its memory, and clear err. */
void gw_buf_reset(struct gw_buf *b);

/* Free the memory and reset *b to empty. */
void gw_buf_free(struct gw_buf *b);

#endif
