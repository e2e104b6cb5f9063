/*
 * torchtitan: the metrics line torchtitan's trainer logs every
 * log_freq steps.
 *
 *   [rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405
 *   grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%
 *
 * (one line; older releases print "wps:" instead of "tps:" and no
 * grad_norm).  Each field is wrapped in ANSI colour codes when the logger
 * thinks it writes to a terminal; they are removed before reading.  A
 * training point is a line whose "step: N" comes first in the message
 * (after the logging prefix: nothing, or "- ", "] ", ": " before it), so
 * "validate step: N ..." (evaluation) is skipped.  The fields after it
 * are "name: value" separated by spaces: loss, grad_norm and tps
 * (throughput) are roles; a value's unit joins its name ("memory: 9.46GiB"
 * -> memory_gib, "mfu: 0.17%" -> mfu_pct), a "(64.99%)" after a value is
 * NAME_pct, and thousands separators are read ("7,282").  An error's
 * column counts in the line without its colour codes.
 *
 * A metrics line pasted from a terminal or into an issue may be
 * hard-wrapped ("... step:  1  loss:" / "7.98820  grad_norm:  3.7762 ..." /
 * "tflops: 0.86  mfu: N/A"): when the input is read to its end, a metrics
 * line waits for the next ones, and up to three that go on with its values
 * (no label, no logger prefix, a value or a "name: value" first) are
 * joined to it.  A followed log is read as it comes.
 */
#include "reader_impl.h"
#include "util.h"

#include <string.h>

#define LINE_MAX_PLAIN 4096   /* bytes of a metrics line read (they are ~150) */

struct titan {
	struct gw_rd_hold hold;       /* a metrics line that may go on on the next lines */
};

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

static bool alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Where "step:" opens the message of s[0..n), or NULL. */
static const char *step_at(const char *s, size_t n)
{
	const char *p = s;
	for (;;) {
		const char *st = gw__rd_find(p, (size_t)(s + n - p), "step:");
		if (!st)
			return NULL;
		const char *b = st;
		while (b > s && sp(b[-1]))
			b--;
		if (b == s || b[-1] == '-' || b[-1] == ']' || (b[-1] == ':' && b != st))
			return st;
		p = st + 5;
	}
}

/* Append a unit to name[0..nl): lower case, letters only; returns the length. */
static size_t with_unit(char *name, size_t nl, size_t cap, const char *u, size_t ul)
{
	if (nl + 1 + ul >= cap)
		return nl;
	name[nl++] = '_';
	for (size_t i = 0; i < ul; i++)
		name[nl++] = (char)(u[i] >= 'A' && u[i] <= 'Z' ? u[i] - 'A' + 'a' : u[i]);
	return nl;
}

/* The fields at s[0..n), byte `base` of the line without its colour codes. */
static void fields(struct gw_reader *r, const char *s, size_t n, size_t base, uint64_t lineno)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && sp(s[i]))
			i++;
		size_t a = i;
		while (i < n && s[i] != ':' && !sp(s[i]))
			i++;
		if (i >= n || s[i] != ':' || i == a) {
			while (i < n && !sp(s[i]))
				i++;
			continue;
		}
		char name[64];
		size_t nl = GW_MIN(i - a, (size_t)40);
		memcpy(name, s + a, nl);
		i++;
		while (i < n && sp(s[i]))
			i++;
		double v;
		size_t k = gw__rd_num_grouped(s + i, n - i, &v);
		if (!k) {
			if (gw_alias_lookup(gw__rd_aliases(r), name, nl, NULL) >= 0)
				gw__rd_error(r, lineno, "bad_value: field \"%.*s\" at column %zu: expected a number",
				             (int)nl, name, base + i + 1);
			continue;
		}
		i += k;
		size_t u = i;
		while (i < n && (alpha(s[i]) || s[i] == '/'))
			i++;
		size_t full = nl;
		if (i < n && s[i] == '%' && u == i)
			full = with_unit(name, nl, sizeof(name), "pct", 3), i++;
		else if (i > u)
			full = with_unit(name, nl, sizeof(name), s + u, i - u);
		gw__rd_metric(r, name, full, v);
		/* "9.46GiB(64.99%)": the share after it */
		double pct;
		if (i < n && s[i] == '(' && (k = gw__rd_num(s + i + 1, n - i - 1, &pct)) &&
		    i + 1 + k + 1 < n && s[i + 1 + k] == '%' && s[i + 2 + k] == ')') {
			full = with_unit(name, nl, sizeof(name), "pct", 3);
			gw__rd_metric(r, name, full, pct);
			i += k + 3;
		}
	}
}

/* The metrics line s[0..n), whose "step:" opens the message. */
static int point(struct gw_reader *r, const char *s, size_t n, uint64_t lineno)
{
	if (!gw__rd_find(s, n, "step:") || !gw__rd_find(s, n, "loss:"))
		return 0;
	char buf[LINE_MAX_PLAIN];
	size_t len = gw__rd_plain(s, n, buf, sizeof(buf));
	const char *st = step_at(buf, len);
	if (!st)
		return 0;
	const char *p = st + 5;
	while (p < buf + len && sp(*p))
		p++;
	int64_t step;
	size_t k = gw__rd_int(p, (size_t)(buf + len - p), &step);
	if (!k || (p + k < buf + len && !sp(p[k])))
		return 0;
	p += k;
	gw__rd_begin(r, NULL, 0, step);
	fields(r, p, (size_t)(buf + len - p), (size_t)(p - buf), lineno);
	return gw__rd_emit(r, lineno);
}

/* A metrics line hard-wrapped by a terminal or an issue box goes on on
 * the next lines: lines of no launcher label and no logger prefix that
 * start with a value or a "name: value" ("7.98820  grad_norm:  3.7762 ...",
 * "tflops: 0.86  mfu: N/A"), three at most. */
static bool continues(struct gw_reader *r, const char *s, size_t n)
{
	struct gw_rd_linectx now;
	gw__rd_line_save(r, &now);
	if (now.label >= 0 || !n || gw__rd_find(s, n, "step:") || gw__rd_find(s, n, "[titan]") ||
	    gw__rd_find(s, n, " - root - ") || s[0] == '[' || s[0] == ' ')
		return false;
	double v;
	if (gw__rd_num(s, n, &v))
		return true;
	const char *c = memchr(s, ':', n);
	return c && c + 1 < s + n && c[1] == ' ' && !memchr(s, ' ', (size_t)(c - s));
}

static int tt_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct titan *st = state;
	if (st->hold.held && st->hold.more < 3 && continues(r, s, n))
		return gw__rd_hold_join(&st->hold, s, n);
	int rc = gw__rd_hold_flush(r, &st->hold, point);
	if (rc || !gw__rd_find(s, n, "step:"))
		return rc;
	if (gw__rd_following(r))
		return point(r, s, n, lineno);   /* a growing log is not wrapped */
	return gw__rd_hold(r, &st->hold, s, n, lineno);
}

static int tt_finish(struct gw_reader *r, void *state)
{
	struct titan *st = state;
	return gw__rd_hold_flush(r, &st->hold, point);
}

static void tt_deinit(void *state)
{
	struct titan *st = state;
	gw__rd_hold_free(&st->hold);
}

static int tt_sniff(const char *h, size_t n, bool all)
{
	int best = 0;
	const char *p, *q = h;
	size_t len;
	while (gw__rd_sniff_line(&q, h + n, all, &p, &len)) {
		if (!gw__rd_find(p, len, "step:")) {
			if (gw__rd_find(p, len, "[titan]") || gw__rd_find(p, len, "torchtitan"))
				best = 40; /* its logger's prefix: a metrics line decides */
			continue;
		}
		char buf[LINE_MAX_PLAIN];
		size_t bl = gw__rd_plain(p, len, buf, sizeof(buf));
		const char *st = step_at(buf, bl);
		if (st && gw__rd_find(st, (size_t)(buf + bl - st), "  loss: ") &&
		    (gw__rd_find(st, (size_t)(buf + bl - st), "  memory: ") ||
		     gw__rd_find(st, (size_t)(buf + bl - st), "  grad_norm: ")))
			return 95;
		/* a metrics line wrapped after its "loss:" */
		if (st && bl >= 7 && !memcmp(buf + bl - 7, "  loss:", 7) && gw__rd_find(p, len, "[titan]"))
			return 90;
	}
	return best;
}

const struct gw_reader_format gw_rd_titan = {
	.name = "torchtitan",
	.describe = "torchtitan trainer log (step: N  loss: X  grad_norm: X  memory: ...  tps: N), ANSI colours removed",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS,
	.sniff = tt_sniff,
	.state_size = sizeof(struct titan),
	.line = tt_line,
	.finish = tt_finish,
	.deinit = tt_deinit,
};
