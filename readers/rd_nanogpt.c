/*
 * nanogpt: Karpathy's nanoGPT and build-nanoGPT, three outputs.
 *
 *   nanoGPT stdout        iter 425: loss nan, time 1440.31ms, mfu 0.01%
 *                         step 400: train loss 3.50, val loss 3.61   (evaluation)
 *                         saving checkpoint to out                    (after an evaluation)
 *   build-nanoGPT stdout  step  5317 | loss: 3.41 | lr 6.0000e-04 | norm: 1.8324 |
 *                         dt: 401.2ms | tok/sec: 1306830.22
 *                         validation loss: 3.27 / HellaSwag accuracy: ... (no step; skipped)
 *                         rank 3 sample 0: <generated text>              (skipped)
 *   build-nanoGPT log.txt 5317 train 3.412345 / 5250 val 3.27 / 5250 hella 0.29
 *   nanochat stdout       step 00006/21400 (3.27%) | loss: nan | lrm: 1.00 | dt: 1234.56ms |
 *                         tok/sec: 123,456 | mfu: 45.67 | total time: 1.23m
 *                         (some versions add "| grad norm: X")
 *
 * "iter N:" lines give loss, time_ms and mfu_pct; "step N |" lines give
 * loss, lr, grad_norm (norm), dt_ms and tok/sec (throughput); nanochat's
 * "step N/M (P%) |" the same names (its "grad norm" too, lrm an extra) and
 * M as max_steps; "N train X" lines give the loss.  Evaluation lines (nanoGPT's "step N: train loss",
 * build-nanoGPT's validation and HellaSwag lines, log.txt's val and hella)
 * are skipped.  nanoGPT prints "saving checkpoint to DIR" right after the
 * evaluation of the step it saves: that is a checkpoint_saved event at the
 * step of that evaluation.  nanoGPT writes a NaN loss as "nan".
 */
#include "reader_impl.h"
#include "util.h"

#include <string.h>

struct ng {
	int64_t eval_step;  /* the step of the last nanoGPT evaluation line, or -1 */
	int64_t last_ckpt;
};

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

/* "name: value" pairs separated by '|' (build-nanoGPT, nanochat) or ','
 * (nanoGPT); a name is the text before the ':' ("grad norm" -> grad_norm),
 * or the first word ("loss 3.5", "time 1440.31ms"); a unit on the value
 * goes into the name ("401.2ms" -> dt_ms, "0.01%" -> mfu_pct, "1.23m" ->
 * total_time_m).  Thousands may be grouped with ',' between '|'s
 * ("tok/sec: 123,456"). */
static int fields(struct gw_reader *r, const char *s, size_t n, char sep, uint64_t lineno)
{
	size_t i = 0;
	while (i < n) {
		const char *e = memchr(s + i, sep, n - i);
		size_t end = e ? (size_t)(e - s) : n;
		size_t a = i;
		while (a < end && sp(s[a]))
			a++;
		const char *colon = memchr(s + a, ':', end - a);
		size_t b = a;
		if (colon) {
			b = (size_t)(colon - s);
		} else {
			while (b < end && !sp(s[b]))
				b++;
		}
		size_t name_end = b;
		while (name_end > a && sp(s[name_end - 1]))
			name_end--;
		if (b < end && s[b] == ':')
			b++;
		while (b < end && sp(s[b]))
			b++;
		double v = 0;
		size_t k = 0;
		if (b < end)
			k = sep == '|' ? gw__rd_num_grouped(s + b, end - b, &v) : gw__rd_num(s + b, end - b, &v);
		if (k && name_end > a) {
			char name[64];
			size_t nl = GW_MIN(name_end - a, sizeof(name) - 8);
			for (size_t q = 0; q < nl; q++)
				name[q] = sp(s[a + q]) ? '_' : s[a + q];
			size_t u = b + k, ul = 0;
			while (u + ul < end && ul < 5 && ((s[u + ul] >= 'a' && s[u + ul] <= 'z') ||
			                                  (s[u + ul] >= 'A' && s[u + ul] <= 'Z')))
				ul++;
			if (u < end && s[u] == '%') {
				memcpy(name + nl, "_pct", 4), nl += 4;
			} else if (ul && ul <= 3 && (u + ul == end || sp(s[u + ul]))) {
				name[nl++] = '_';
				memcpy(name + nl, s + u, ul), nl += ul;
			}
			gw__rd_metric(r, name, nl, v);
		} else if (name_end > a && b < end) {
			gw__rd_error(r, lineno, "bad_value: field \"%.*s\" at column %zu: expected a number",
			             (int)(name_end - a), s + a, b + 1);
		}
		i = end + 1;
	}
	return 0;
}

static int ng_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct ng *st = state;
	while (n && (sp(*s) || *s == '\r'))
		s++, n--;
	while (n && (sp(s[n - 1]) || s[n - 1] == '\r'))
		n--;
	int64_t step;
	size_t k;
	if (n > 5 && !memcmp(s, "iter ", 5) && (k = gw__rd_int(s + 5, n - 5, &step)) &&
	    5 + k < n && s[5 + k] == ':') {
		gw__rd_begin(r, NULL, 0, step);
		fields(r, s + 6 + k, n - 6 - k, ',', lineno);
		return gw__rd_emit(r, lineno);
	}
	if (n > 5 && !memcmp(s, "step ", 5)) {
		size_t i = 5;
		while (i < n && sp(s[i]))
			i++;
		if (!(k = gw__rd_int(s + i, n - i, &step)))
			return 0;
		i += k;
		if (i < n && s[i] == ':') {
			st->eval_step = step; /* nanoGPT's evaluation line */
			return 0;
		}
		int64_t total = -1;
		if (i + 1 < n && s[i] == '/' && (k = gw__rd_int(s + i + 1, n - i - 1, &total)))
			i += 1 + k;   /* nanochat: "step 00006/21400" */
		while (i < n && sp(s[i]))
			i++;
		if (i < n && s[i] == '(') {
			/* nanochat: "(3.27%)" */
			const char *c = memchr(s + i, ')', n - i);
			if (!c)
				return 0;
			i = (size_t)(c - s) + 1;
			while (i < n && sp(s[i]))
				i++;
		}
		if (i >= n || s[i] != '|')
			return 0;
		gw__rd_begin(r, NULL, 0, step);
		fields(r, s + i + 1, n - i - 1, '|', lineno);
		if (total > 0)
			gw__rd_metric(r, "max_steps", 9, (double)total);
		return gw__rd_emit(r, lineno);
	}
	if (n > 23 && !memcmp(s, "saving checkpoint to ", 21)) {
		if (st->eval_step >= 0 && st->eval_step != st->last_ckpt) {
			st->last_ckpt = st->eval_step;
			return gw__rd_event(r, NULL, "checkpoint_saved", st->eval_step, NULL, lineno);
		}
		return 0;
	}
	/* log.txt: "N train X" */
	if ((k = gw__rd_int(s, n, &step)) && k + 7 < n && !memcmp(s + k, " train ", 7)) {
		double v;
		size_t m = gw__rd_num(s + k + 7, n - k - 7, &v);
		if (!m || k + 7 + m != n) {
			gw__rd_error(r, lineno, "bad_value: field \"train\" at column %zu: expected a number",
			             k + 8);
			return 0;
		}
		gw__rd_begin(r, NULL, 0, step);
		gw__rd_metric(r, "loss", 4, v);
		return gw__rd_emit(r, lineno);
	}
	return 0;
}

static int ng_init(struct gw_reader *r, void *state)
{
	struct ng *st = state;
	st->eval_step = -1;
	st->last_ckpt = -1;
	return 0;
}

/* One line of log.txt: digits, a space, train/val/hella, a space, a number. */
static bool logtxt_line(const char *p, size_t len)
{
	int64_t step;
	size_t k = gw__rd_int(p, len, &step);
	if (!k || k >= len || p[k] != ' ')
		return false;
	const char *w = p + k + 1;
	size_t rest = len - k - 1;
	size_t wl = rest >= 6 && !memcmp(w, "train ", 6) ? 6 : rest >= 4 && !memcmp(w, "val ", 4) ? 4
	          : rest >= 6 && !memcmp(w, "hella ", 6) ? 6 : 0;
	double v;
	return wl && gw__rd_num(w + wl, rest - wl, &v) == rest - wl;
}

static int ng_sniff(const char *h, size_t n, bool all)
{
	int best = 0, logtxt = 0;
	const char *p, *q = h;
	size_t len;
	while (gw__rd_sniff_msg(&q, h + n, all, &p, &len)) {
		int64_t it;
		size_t k;
		if (len > 5 && !memcmp(p, "iter ", 5) && (k = gw__rd_int(p + 5, len - 5, &it)) &&
		    5 + k + 6 < len && !memcmp(p + 5 + k, ": loss", 6))
			return 95;   /* not lit-gpt's "iter 76 step 38: loss ...": the text format's */
		if (len > 5 && !memcmp(p, "step ", 5) && gw__rd_find(p, len, "| loss: "))
			return 95;
		if (logtxt_line(p, len)) {
			if (++logtxt >= 3)
				return 90;
		} else if (len) {
			logtxt = -1000; /* log.txt has nothing else */
		}
		if (gw__rd_find(p, len, "tokens per iteration will be:") ||
		    gw__rd_find(p, len, "calculated gradient accumulation steps:"))
			best = 60; /* nanoGPT's / build-nanoGPT's first lines */
	}
	if (logtxt > 0 && all)
		return 90;
	return best;
}

const struct gw_reader_format gw_rd_nanogpt = {
	.name = "nanogpt",
	.describe = "nanoGPT (iter N: loss X), build-nanoGPT stdout (step N | loss: X | norm: X) and log.txt (N train X)",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS | GW_RDF_PREFIX,
	.sniff = ng_sniff,
	.state_size = sizeof(struct ng),
	.init = ng_init,
	.line = ng_line,
};
