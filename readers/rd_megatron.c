/*
 * megatron: Megatron-LM, Megatron-DeepSpeed and NeMo (Megatron core)
 * stdout.
 *
 *    iteration       30/    1000 | consumed samples: 120 | elapsed time per iteration (ms):
 *    1613.7 | learning rate: 1.500E-04 | global batch size: 4 | lm loss: 2.648119E+01 |
 *    loss scale: 16384.0 | grad norm: 67.033 | number of skipped iterations: 1 |
 *    number of nan iterations: 0 |
 *
 * A training point is a line holding "iteration N/ M |", anywhere in it:
 * launchers put rank labels (" 0: ", "31: ") and timestamps
 * ("[2026-08-18 03:14:52.592739]", which has ':' in it) before it.  The
 * fields after it are split on '|', each on its first ':'; every numeric
 * field is kept, its name in snake_case ("loss scale" -> loss_scale,
 * "number of skipped iterations" -> number_of_skipped_iterations,
 * "elapsed time per iteration (ms)" -> elapsed_time_per_iteration_ms), so
 * "lm loss", "grad norm" and "learning rate" become the loss, grad_norm
 * and lr roles through their aliases.  Iterations that fp16 skipped print
 * no "lm loss" / "grad norm": the point keeps what it has (lr, loss scale,
 * the skipped count).  A "[YYYY-MM-DD HH:MM:SS.ffffff]" stamp on the line
 * is the point's ts (read as UTC; only differences matter).  M, the
 * iterations the run will take, becomes the extra metric max_steps (the
 * engine's sign that the run finished).
 *
 * "validation loss at iteration N | lm loss value: ..." has no "/ M" and is
 * skipped, as are the arguments dump and everything else.  A file with
 * several runs (the job started again: the iteration goes back to 1)
 * becomes runs NAME, NAME#2, ... (reader.c).
 *
 * A record pasted into a chat or an issue may be hard-wrapped over several
 * lines: when the input is read to its end (replay, convert), a record is
 * held until the next line, and a next line that goes on with its fields
 * (a '|' and a "name: value", no header of its own) is joined to it with a
 * space (the wrap broke at a space); an error's column then counts in the
 * joined text.  A followed log is not wrapped: its records are read at
 * once.  Its checkpoint lines
 * ("successfully saved checkpoint at iteration N", "successfully loaded
 * checkpoint from DIR at iteration N") and DeepSpeed's OVERFLOW lines are
 * read as events by rd_events.c, as in every stdout format.
 */
#include "reader_impl.h"

#include <errno.h>
#include <string.h>
#include <time.h>

struct meg {
	struct gw_rd_hold hold;       /* a record that may go on on the next line */
};

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

/* "iteration" spaces N "/" spaces M spaces "|" at s: the step, M, and
 * where the fields begin (0 if not). */
static size_t header(const char *s, size_t n, int64_t *step, int64_t *total)
{
	size_t i = 9; /* "iteration" */
	if (i >= n || !sp(s[i]))
		return 0;
	while (i < n && sp(s[i]))
		i++;
	size_t k = gw__rd_int(s + i, n - i, step);
	if (!k)
		return 0;
	i += k;
	if (i >= n || s[i] != '/')
		return 0;
	i++;
	while (i < n && sp(s[i]))
		i++;
	if (!(k = gw__rd_int(s + i, n - i, total)))
		return 0;
	i += k;
	while (i < n && sp(s[i]))
		i++;
	if (i >= n || s[i] != '|')
		return 0;
	return i + 1;
}

/* Where "iteration N/ M |" starts in the line, the step, M and the fields. */
static const char *find_header(const char *s, size_t n, int64_t *step, int64_t *total,
                               size_t *fields)
{
	const char *p = s;
	for (;;) {
		const char *it = gw__rd_find(p, (size_t)(s + n - p), "iteration");
		if (!it)
			return NULL;
		size_t h = header(it, (size_t)(s + n - it), step, total);
		if (h && (it == s || sp(it[-1]) || it[-1] == ']')) {
			*fields = (size_t)(it - s) + h;
			return it;
		}
		p = it + 9;
	}
}

static size_t snake(const char *in, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	bool us = false;
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		char c = in[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			if (us && o) {
				if (o + 2 >= cap)
					break;   /* no room for '_' and c: the name is cut */
				out[o++] = '_';
			}
			us = false;
			out[o++] = c;
		} else {
			us = true;
		}
	}
	out[o] = '\0';
	return o;
}

/* "[YYYY-MM-DD HH:MM:SS(.ffffff)]" before the header: Unix seconds, or -1. */
static double stamp(const char *s, size_t n)
{
	const char *b = memchr(s, '[', n);
	if (!b || (size_t)(s + n - b) < 21)
		return -1;
	struct tm tm = {0};
	char buf[32];
	memcpy(buf, b + 1, 19);
	buf[19] = '\0';
	const char *e = strptime(buf, "%Y-%m-%d %H:%M:%S", &tm);
	if (!e || *e)
		return -1;
	double t = (double)timegm(&tm);
	const char *f = b + 20;
	if (*f == '.') {
		double frac;
		size_t k = gw__rd_num(f, (size_t)(s + n - f), &frac);
		if (k)
			t += frac;
	}
	return t;
}

/* The fields at s[0..n), which starts at byte `base` of the line. */
static int fields(struct gw_reader *r, const char *s, size_t n, size_t base, uint64_t lineno)
{
	size_t i = 0;
	while (i < n) {
		const char *bar = memchr(s + i, '|', n - i);
		size_t end = bar ? (size_t)(bar - s) : n;
		const char *colon = memchr(s + i, ':', end - i);
		if (colon) {
			char name[96];
			size_t nl = snake(s + i, (size_t)(colon - (s + i)), name, sizeof(name));
			size_t v0 = (size_t)(colon - s) + 1;
			while (v0 < end && sp(s[v0]))
				v0++;
			double v;
			size_t k = gw__rd_num(s + v0, end - v0, &v);
			size_t tail = v0 + k;
			while (tail < end && sp(s[tail]))
				tail++;
			if (k && tail == end && nl)
				gw__rd_metric(r, name, nl, v);
			else if (nl && v0 < end && gw_alias_lookup(gw__rd_aliases(r), name, nl, NULL) >= 0)
				gw__rd_error(r, lineno, "bad_value: field \"%s\" at column %zu: expected a number",
				             name, base + v0 + 1);
		}
		i = end + 1;
	}
	return 0;
}

/* The point of the record s[0..n), whose header is at `it`. */
static int point(struct gw_reader *r, const char *s, size_t n, uint64_t lineno)
{
	int64_t step, total;
	size_t f;
	const char *it = find_header(s, n, &step, &total, &f);
	if (!it)
		return 0;
	gw__rd_begin(r, NULL, 0, step);
	double ts = stamp(s, (size_t)(it - s));
	if (ts >= 0)
		gw__rd_ts(r, ts);
	fields(r, s + f, n - f, f, lineno);
	if (total > 0)
		gw__rd_metric(r, "max_steps", 9, (double)total);
	return gw__rd_emit(r, lineno);
}

/* A record hard-wrapped by a chat or an issue box goes on on the next
 * line: one with '|' and a "name: value", no record header of its own, and
 * none of Megatron's other '|' lines (the timers' "time (ms) | ...",
 * "[Rank R] (after N iterations) memory ...", "validation loss at
 * iteration N | ..."). */
static bool continues(const char *s, size_t n)
{
	while (n && sp(*s))
		s++, n--;
	return n && *s != '[' && memchr(s, '|', n) && gw__rd_find(s, n, ": ") &&
	       !gw__rd_find(s, n, "time (ms)") && !gw__rd_find(s, n, "validation") &&
	       !gw__rd_find(s, n, " at iteration");
}

static int meg_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct meg *st = state;
	int64_t step, total;
	size_t f;
	if (!find_header(s, n, &step, &total, &f)) {
		if (st->hold.held && continues(s, n))
			return gw__rd_hold_join(&st->hold, s, n);
		return gw__rd_hold_flush(r, &st->hold, point);
	}
	int rc = gw__rd_hold_flush(r, &st->hold, point);
	if (rc)
		return rc;
	if (gw__rd_following(r))
		return point(r, s, n, lineno);   /* a growing log is not wrapped */
	return gw__rd_hold(r, &st->hold, s, n, lineno);
}

static int meg_finish(struct gw_reader *r, void *state)
{
	struct meg *st = state;
	return gw__rd_hold_flush(r, &st->hold, point);
}

static void meg_deinit(void *state)
{
	struct meg *st = state;
	gw__rd_hold_free(&st->hold);
}

static int meg_sniff(const char *h, size_t n, bool all)
{
	int best = 0;
	const char *p, *q = h;
	size_t len;
	while (gw__rd_sniff_line(&q, h + n, all, &p, &len)) {
		int64_t step, total;
		size_t f;
		if (find_header(p, len, &step, &total, &f) && gw__rd_find(p + f, len - f, ":"))
			return 95;
		if (gw__rd_find(p, len, "------------------------ arguments ------------------------"))
			best = 60;
	}
	return best;
}

const struct gw_reader_format gw_rd_megatron = {
	.name = "megatron",
	.describe = "Megatron-LM / Megatron-DeepSpeed / NeMo stdout (iteration N/ M | lm loss: X | grad norm: X | ...)",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS,
	.sniff = meg_sniff,
	.state_size = sizeof(struct meg),
	.line = meg_line,
	.finish = meg_finish,
	.deinit = meg_deinit,
};
