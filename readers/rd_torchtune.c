/*
 * torchtune: the recipes' metric logs and progress bar.
 *
 *   DiskLogger file / StdoutLogger:
 *     Step 10 | loss:2.3101 lr:2e-05 tokens_per_second_per_gpu:1234.5 grad_norm:1.2031
 *   the tqdm bar on stderr ('\r'-separated redraws; epoch|step|Loss):
 *     1|10|Loss: 2.310120344161987:   1%|          | 10/1000 [00:12<19:49,  1.20s/it]
 *
 * "Step N | name:value name:value ..." is a point at N with every pair
 * kept (loss, grad_norm, lr, tokens_per_second_per_gpu -> throughput are
 * roles; peak_memory_alloc ... extras).  A bar segment "E|N|Loss: X" is a
 * point at N with the loss (and the epoch as an extra); tqdm redraws a bar
 * with the same description, so a segment whose step is the previous
 * segment's (from the same rank label) is not read again.  A recipe with both loggers prints both for
 * a step: the engine merges the second into the first (same step, the
 * same loss).  Other lines (config dumps, "Model checkpoint of size ...
 * saved", evaluation) are skipped.
 */
#include "reader_impl.h"
#include "util.h"

#include <string.h>

struct tt {
	struct gw_rd_last bar_last;   /* the last bar segment read (step -1: none) */
};

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

/* "Step N | " at s: the step and where the pairs begin (0 if not). */
static size_t step_header(const char *s, size_t n, int64_t *step)
{
	if (n < 8 || memcmp(s, "Step ", 5) != 0)
		return 0;
	size_t k = gw__rd_int(s + 5, n - 5, step);
	if (!k || 5 + k + 2 >= n || memcmp(s + 5 + k, " |", 2) != 0)
		return 0;
	return 5 + k + 2;
}

static int disk_line(struct gw_reader *r, const char *s, size_t n, size_t at, int64_t step,
                     uint64_t lineno)
{
	gw__rd_begin(r, NULL, 0, step);
	size_t i = at;
	while (i < n) {
		while (i < n && sp(s[i]))
			i++;
		size_t a = i;
		while (i < n && !sp(s[i]))
			i++;
		/* name:value, the name up to the last ':' ("lr:2e-05") */
		const char *c = NULL;
		for (size_t j = a; j < i; j++)
			if (s[j] == ':')
				c = s + j;
		if (!c || c == s + a)
			continue;
		size_t nl = (size_t)(c - (s + a));
		size_t v0 = (size_t)(c - s) + 1;
		double v;
		if (v0 < i && gw__rd_num(s + v0, i - v0, &v) == i - v0)
			gw__rd_metric(r, s + a, nl, v);
		else if (gw_alias_lookup(gw__rd_aliases(r), s + a, nl, NULL) >= 0)
			gw__rd_error(r, lineno, "bad_value: field \"%.*s\" at column %zu: expected a number",
			             (int)GW_MIN(nl, 64u), s + a, v0 + 1);
	}
	return gw__rd_emit(r, lineno);
}

/* "E|N|Loss: X" at s: true with the epoch, step and loss. */
static bool bar(const char *s, size_t n, int64_t *epoch, int64_t *step, double *loss)
{
	size_t i = 0, k;
	while (i < n && sp(s[i]))
		i++;
	if (!(k = gw__rd_int(s + i, n - i, epoch)) || (i += k) >= n || s[i++] != '|')
		return false;
	if (!(k = gw__rd_int(s + i, n - i, step)) || (i += k) >= n || s[i++] != '|')
		return false;
	if (n - i < 6 || memcmp(s + i, "Loss: ", 6) != 0)
		return false;
	i += 6;
	return gw__rd_num(s + i, n - i, loss) > 0;
}

static int segment(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct tt *st = state;
	int64_t epoch, step;
	double loss;
	if (!bar(s, n, &epoch, &step, &loss) || gw__rd_repeats(r, &st->bar_last, step))
		return 0;
	gw__rd_last_set(r, &st->bar_last, step);
	gw__rd_begin(r, NULL, 0, step);
	gw__rd_metric(r, "loss", 4, loss);
	gw__rd_metric(r, "epoch", 5, (double)epoch);
	return gw__rd_emit(r, lineno);
}

static int tt_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	int64_t step;
	size_t at = step_header(s, n, &step);
	if (at)
		return disk_line(r, s, n, at, step, lineno);
	if (!gw__rd_find(s, n, "|Loss: "))
		return 0;
	return gw__rd_cr_segments(r, state, s, n, lineno, segment);
}

static int tt_init(struct gw_reader *r, void *state)
{
	struct tt *st = state;
	st->bar_last = (struct gw_rd_last){-1, -1};
	return 0;
}

static int tt_sniff(const char *h, size_t n, bool all)
{
	const char *p, *q = h;
	size_t len;
	while (gw__rd_sniff_msg(&q, h + n, all, &p, &len)) {
		int64_t step, epoch;
		double loss;
		size_t at = step_header(p, len, &step);
		if (at && memchr(p + at, ':', len - at) && gw__rd_find(p + at, len - at, "loss:"))
			return 90;
		const char *seg = p;
		for (const char *cr = p; cr <= p + len; cr++) {
			if (cr < p + len && *cr != '\r')
				continue;
			if (bar(seg, (size_t)(cr - seg), &epoch, &step, &loss))
				return 90;
			seg = cr + 1;
		}
	}
	return 0;
}

const struct gw_reader_format gw_rd_torchtune = {
	.name = "torchtune",
	.describe = "torchtune metric log (Step N | loss:X lr:X grad_norm:X ...) and progress bar (E|N|Loss: X)",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS | GW_RDF_PREFIX,
	.sniff = tt_sniff,
	.state_size = sizeof(struct tt),
	.init = tt_init,
	.line = tt_line,
};
