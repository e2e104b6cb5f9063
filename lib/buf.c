/*
 * The growable buffer (see buf.h).
 */
#include "buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int gw__grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap > 16 ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (size && ncap > SIZE_MAX / size)
		return -ENOMEM;
	void *np = realloc(*p, ncap * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

int gw_buf_reserve(struct gw_buf *b, size_t n)
{
	if (b->err)
		return b->err;
	if (n > SIZE_MAX - b->len - 1 || gw_grow((void **)&b->p, &b->cap, b->len + n + 1, 1) < 0)
		return b->err = -ENOMEM;
	b->p[b->len] = '\0';
	return 0;
}

int gw_buf_add(struct gw_buf *b, const void *s, size_t n)
{
	if (gw_buf_reserve(b, n) < 0)
		return b->err;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int gw_buf_str(struct gw_buf *b, const char *s)
{
	return gw_buf_add(b, s, strlen(s));
}

void gw_buf_reset(struct gw_buf *b)
{
	b->len = 0;
	b->err = 0;
	if (b->p)
		b->p[0] = '\0';
}

void gw_buf_free(struct gw_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
