/*
 * composer: the console output of MosaicML Composer (and llm-foundry) and
 * of AI2's OLMo and OLMo-core: a header naming the step, then the metrics,
 * one per line and indented.
 *
 *   Composer               OLMo                              OLMo-core
 *   [epoch=1][batch=16/100]:   [step=16/739328]               [step=16/10000,epoch=0]
 *   	 Train loss/train/total: 2.3017   train/CrossEntropyLoss=2.3017     train/CE loss=2.3017
 *   	 Train l2_norm/grad/global: 1.07  optim/total_grad_norm=1.07       optim/total grad norm=1.07
 *   	 Train lr-DecoupledAdamW/group0: 0.0006
 *
 * The header is "[step=N" or "[batch=N" (after an optional "[epoch=E]"
 * and whatever a logging prefix puts before it), optionally "/M" (the
 * run's length: the extra metric max_steps); the step is N.  Its metrics
 * follow on the lines indented below it: "Train NAME: VALUE" (Composer) or
 * "NAME=VALUE" (OLMo; thousands separators read: "27,465").  A header may
 * also carry them on its own line, after it: "[step=16/1000] train/CE
 * loss=2.30, optim/total grad norm=1.07".  The point is handed over when
 * its block ends: at the next line that is not indented, or at the end of
 * the input.  Names map to roles through the alias table (loss/train/
 * total, train/CrossEntropyLoss, train/CE loss -> loss; l2_norm/grad/
 * global, optim/total_grad_norm -> grad_norm; lr-<optimizer>/group0,
 * optim/learning_rate_group0, optim/LR (group 0) -> lr).
 *
 * Skipped: Composer's "Eval NAME: VALUE" lines and "[Eval batch=...]"
 * progress, OLMo's "[eval=...]" blocks (their header names no step), and
 * every indented line not under a step header.  Following a growing log,
 * a block is handed over once the line after it is written; a daemon
 * that restarts inside a block resumes after the lines it read and loses
 * that one point (its header is behind it).
 */
#include "reader_impl.h"
#include "util.h"

#include <string.h>

struct cp {
	bool open;          /* a step block is being read */
	uint64_t line;      /* its header's line */
};

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

/* "[step=N" / "[batch=N" in s[0..n) (after "[epoch=E]" or a prefix): the
 * step, the total M (-1: none) and where the header ends. */
static bool header(const char *s, size_t n, int64_t *step, int64_t *total, size_t *end)
{
	static const char *const keys[] = {"[step=", "[batch="};
	for (size_t k = 0; k < GW_ARRAY_SIZE(keys); k++) {
		const char *h = gw__rd_find(s, n, keys[k]);
		if (!h)
			continue;
		size_t i = (size_t)(h - s) + strlen(keys[k]);
		size_t d = gw__rd_int(s + i, n - i, step);
		if (!d)
			continue;
		i += d;
		*total = -1;
		if (i < n && s[i] == '/') {
			size_t m = gw__rd_int(s + i + 1, n - i - 1, total);
			if (!m)
				continue;
			i += 1 + m;
		}
		/* the rest of the bracket: ",epoch=0]" */
		while (i < n && s[i] != ']' && s[i] != '[')
			i++;
		if (i >= n || s[i] != ']')
			continue;
		i++;
		if (i < n && s[i] == ':')
			i++;
		*end = i;
		return true;
	}
	return false;
}

/* One "NAME=VALUE" or "Train NAME: VALUE" at s[0..n). */
static void metric(struct gw_reader *r, const char *s, size_t n, uint64_t lineno, size_t col)
{
	while (n && sp(*s))
		s++, n--, col++;
	while (n && sp(s[n - 1]))
		n--;
	const char *eq = memchr(s, '=', n);
	size_t nl, v0;
	if (eq) {
		nl = (size_t)(eq - s);
		v0 = nl + 1;
	} else {
		if (n < 6 || memcmp(s, "Train ", 6) != 0)
			return; /* "Eval ...": an evaluation */
		const char *c = NULL;
		for (const char *p = memchr(s, ':', n); p; p = memchr(p + 1, ':', (size_t)(s + n - p - 1)))
			if (p + 1 < s + n && sp(p[1]))
				c = p; /* the ": " before the value (names may hold ':') */
		if (!c)
			return;
		s += 6, n -= 6, col += 6;
		nl = (size_t)(c - s);
		v0 = nl + 1;
	}
	while (v0 < n && sp(s[v0]))
		v0++;
	while (nl && sp(s[nl - 1]))
		nl--;
	if (!nl)
		return;
	double v;
	size_t k = gw__rd_num_grouped(s + v0, n - v0, &v);
	if (k && v0 + k == n)
		gw__rd_metric(r, s, nl, v);
	else if (gw_alias_lookup(gw__rd_aliases(r), s, nl, NULL) >= 0)
		gw__rd_error(r, lineno, "bad_value: field \"%.*s\" at column %zu: expected a number",
		             (int)GW_MIN(nl, 64u), s, col + v0 + 1);
}

static int close_block(struct gw_reader *r, struct cp *st)
{
	if (!st->open)
		return 0;
	st->open = false;
	return gw__rd_emit(r, st->line);
}

/* A line of a block that lost its indentation (a launcher's rank label
 * takes the spaces after it): "Train NAME: ..." or "NAME=NUMBER". */
static bool bare_metric(const char *s, size_t n)
{
	if (n > 6 && !memcmp(s, "Train ", 6))
		return true;
	const char *eq = memchr(s, '=', n);
	double v;
	size_t v0 = eq ? (size_t)(eq - s) + 1 : n;
	return eq && eq > s && v0 < n && gw__rd_num_grouped(s + v0, n - v0, &v) == n - v0;
}

static int cp_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct cp *st = state;
	int64_t step, total;
	size_t end;
	bool is_header = header(s, n, &step, &total, &end);
	if (!is_header && n && (sp(s[0]) || (st->open && bare_metric(s, n)))) {
		if (st->open)
			metric(r, s, n, lineno, 0);
		return 0;
	}
	int rc = close_block(r, st);
	if (rc || !is_header)
		return rc;
	st->open = true;
	st->line = lineno;
	gw__rd_begin(r, NULL, 0, step);
	if (total > 0)
		gw__rd_metric(r, "max_steps", 9, (double)total);
	/* metrics on the header's own line, separated by ", " */
	size_t i = end;
	while (i < n) {
		const char *c = gw__rd_find(s + i, n - i, ", ");
		size_t e = c ? (size_t)(c - s) : n;
		if (memchr(s + i, '=', e - i))
			metric(r, s + i, e - i, lineno, i);
		i = e + 2;
	}
	return 0;
}

static int cp_finish(struct gw_reader *r, void *state)
{
	return close_block(r, state);
}

static int cp_sniff(const char *h, size_t n, bool all)
{
	const char *p, *q = h;
	size_t len;
	bool hdr = false;
	int metrics = 0;
	while (gw__rd_sniff_line(&q, h + n, all, &p, &len)) {
		int64_t step, total;
		size_t end;
		bool is_header = header(p, len, &step, &total, &end);
		if (!is_header && len && (sp(p[0]) || (hdr && bare_metric(p, len)))) {
			const char *b = p;
			while (b < p + len && sp(*b))
				b++;
			size_t bl = (size_t)(p + len - b);
			if (hdr && ((bl > 6 && !memcmp(b, "Train ", 6) && memchr(b, ':', bl)) ||
			            memchr(b, '=', bl)) && ++metrics >= 2)
				return 90;
			continue;
		}
		hdr = is_header;
		metrics = 0;
		if (hdr && end < len && memchr(p + end, '=', len - end) &&
		    (gw__rd_find(p + end, len - end, "loss") || gw__rd_find(p + end, len - end, "Loss")))
			return 90;
	}
	return 0;
}

const struct gw_reader_format gw_rd_composer = {
	.name = "composer",
	.describe = "Composer / llm-foundry console ([batch=N/M]: Train loss/train/total: X) and OLMo ([step=N/M] train/CrossEntropyLoss=X)",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS,
	.sniff = cp_sniff,
	.state_size = sizeof(struct cp),
	.line = cp_line,
	.finish = cp_finish,
};
