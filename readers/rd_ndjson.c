/*
 * ndjson: gradwatch's own wire format (docs/wire-format.md), one JSON object
 * per line, through the same parser as every socket (lib/wire.c), with its
 * precise error messages.  This is the fast path: each line is parsed in
 * place and the parser's struct gw_rec is handed over as it is, so a line
 * costs what it costs the daemon.  Unlike the other formats, every valid
 * line is handed over (also a record without a role, which the daemon
 * stores too) and the run is never split: the lines name their runs, and
 * the engine reads step rewinds as segments.
 *
 * Sniff: the first non-blank line is a complete JSON-looking object with a
 * "step" or "event" field.
 */
#include "reader_impl.h"

#include <errno.h>
#include <string.h>

struct nd {
	struct gw_wire *w;
};

static int nd_init(struct gw_reader *r, void *st)
{
	struct nd *s = st;
	s->w = gw_wire_new(gw__rd_aliases(r));
	return s->w ? 0 : -ENOMEM;
}

static void nd_deinit(void *st)
{
	struct nd *s = st;
	gw_wire_free(s->w);
}

static int nd_line(struct gw_reader *r, void *st, const char *line, size_t len, uint64_t lineno)
{
	struct nd *s = st;
	struct gw_rec rec;
	struct gw_wire_err err;
	int rc = gw_wire_parse(s->w, line, len, gw__rd_default_run(r), &rec, &err);
	if (rc == -ENODATA)
		return 0;
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		gw__rd_wire_error(r, lineno, &err);
		return 0;
	}
	return gw__rd_emit_rec(r, &rec, lineno);
}

static int nd_sniff(const char *h, size_t n, bool all)
{
	size_t i = 0;
	if (n >= 3 && !memcmp(h, "\xef\xbb\xbf", 3))
		i = 3;
	while (i < n && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n'))
		i++;
	if (i >= n || h[i] != '{')
		return 0;
	const char *nl = memchr(h + i, '\n', n - i);
	size_t end = nl ? (size_t)(nl - h) : n;
	if (!nl && !all)
		return 5; /* a line that starts like an object: the last resort */
	size_t e = end;
	while (e > i && (h[e - 1] == '\r' || h[e - 1] == ' ' || h[e - 1] == '\t'))
		e--;
	if (e - i < 2 || h[e - 1] != '}')
		return 5;
	if (gw__rd_find(h + i, e - i, "\"step\"") || gw__rd_find(h + i, e - i, "\"event\""))
		return 80;
	return 30;
}

const struct gw_reader_format gw_rd_ndjson = {
	.name = "ndjson",
	.describe = "gradwatch NDJSON (wire format): {\"run\":..,\"step\":..,\"loss\":..}",
	.flags = GW_RDF_STREAM,
	.sniff = nd_sniff,
	.state_size = sizeof(struct nd),
	.init = nd_init,
	.line = nd_line,
	.deinit = nd_deinit,
};
