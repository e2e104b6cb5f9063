/*
 * lines: split a byte stream into lines, with a length limit.
 *
 * Used by every stream source (Unix and TCP connections, followed files,
 * replayed files, HTTP bodies) so that framing, line numbering and the
 * over-long-line rule are the same everywhere.  Complete lines are handed
 * over in place when they lie in the caller's buffer; only a partial line
 * at the end of a chunk is copied and kept for the next chunk.
 *
 * A line longer than the limit is reported once (with line == NULL and
 * GW_LINE_TOO_LONG) and its bytes are discarded up to the next newline; the
 * following lines are unaffected.
 */
#ifndef GW_LINES_H
#define GW_LINES_H

#include <stddef.h>
#include <stdint.h>

enum gw_line_status {
	GW_LINE_OK,
	GW_LINE_TOO_LONG,    /* line is NULL, len is the limit */
	GW_LINE_TRUNCATED,   /* the stream ended inside this line (gw_lines_finish) */
};

/* Called for each line, without its '\n'.  Return 0 to go on, anything else
 * to stop; gw_lines_feed then returns that value and keeps the rest. */
typedef int (*gw_line_fn)(void *data, const char *line, size_t len,
                          uint64_t lineno, enum gw_line_status st);

struct gw_lines {
	char *buf;          /* partial line carried over */
	size_t len, cap;
	size_t max;         /* longest accepted line, in bytes */
	uint64_t lineno;    /* lines seen so far (the next one is lineno + 1) */
	int discarding;     /* inside an over-long line */
	const char *pend;   /* unconsumed input after a stop (see gw_lines_feed) */
	size_t pend_len;
};

void gw_lines_init(struct gw_lines *l, size_t max);
void gw_lines_free(struct gw_lines *l);

/* Feed n bytes.  Returns 0 when all were consumed, -ENOMEM, or the non-zero
 * value fn returned to stop; then l->pend/l->pend_len tell the part of p not
 * consumed yet (feed it again later; the line fn stopped on was consumed). */
int gw_lines_feed(struct gw_lines *l, const char *p, size_t n, gw_line_fn fn,
                  void *data);

/* End of stream: report a partial last line as GW_LINE_TRUNCATED (with its
 * bytes, which the caller may still parse), then reset. */
int gw_lines_finish(struct gw_lines *l, gw_line_fn fn, void *data);

#endif
