/*
 * Line splitter (see lines.h).
 */
#include "lines.h"
#include "buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void gw_lines_init(struct gw_lines *l, size_t max)
{
	memset(l, 0, sizeof(*l));
	l->max = max;
}

void gw_lines_free(struct gw_lines *l)
{
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

static int keep(struct gw_lines *l, const char *p, size_t n)
{
	if (gw_grow((void **)&l->buf, &l->cap, l->len + n, 1) < 0)
		return -ENOMEM;
	memcpy(l->buf + l->len, p, n);
	l->len += n;
	return 0;
}

int gw_lines_feed(struct gw_lines *l, const char *p, size_t n, gw_line_fn fn,
                  void *data)
{
	const char *end = p + n;
	l->pend = NULL;
	l->pend_len = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t chunk = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (l->discarding) {
			if (!nl)
				return 0;
			l->discarding = 0;
			p = nl + 1;
			continue;
		}
		if (l->len + chunk > l->max) {
			/* over-long: report once, drop what we held */
			l->len = 0;
			l->lineno++;
			int rc = fn(data, NULL, l->max, l->lineno, GW_LINE_TOO_LONG);
			if (!nl) {
				l->discarding = 1;
				p = end;
			} else {
				p = nl + 1;
			}
			if (rc) {
				l->pend = p;
				l->pend_len = (size_t)(end - p);
				return rc;
			}
			continue;
		}
		if (!nl) {
			if (keep(l, p, chunk) < 0)
				return -ENOMEM;
			return 0;
		}
		const char *line = p;
		size_t len = chunk;
		if (l->len) {
			if (keep(l, p, chunk) < 0)
				return -ENOMEM;
			line = l->buf;
			len = l->len;
			l->len = 0;
		}
		p = nl + 1;
		l->lineno++;
		int rc = fn(data, line, len, l->lineno, GW_LINE_OK);
		if (rc) {
			l->pend = p;
			l->pend_len = (size_t)(end - p);
			return rc;
		}
	}
	return 0;
}

int gw_lines_finish(struct gw_lines *l, gw_line_fn fn, void *data)
{
	int rc = 0;
	if (l->len) {
		/* a line that is only white space is not a truncated record */
		size_t i = 0;
		while (i < l->len && (l->buf[i] == ' ' || l->buf[i] == '\t' || l->buf[i] == '\r'))
			i++;
		l->lineno++;
		if (i < l->len)
			rc = fn(data, l->buf, l->len, l->lineno, GW_LINE_TRUNCATED);
		l->len = 0;
	}
	l->discarding = 0;
	return rc;
}
