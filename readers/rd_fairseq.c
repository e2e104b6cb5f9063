/*
 * fairseq: fairseq-train's stdout, in each of its --log-format styles.
 *
 *   simple (fairseq >= 0.10, through logging; older ones print the same
 *   without the prefix):
 *     2026-03-01 10:00:04 | INFO | train_inner | epoch 001:    100 / 1563 loss=9.786,
 *     nll_loss=9.576, ppl=763.47, wps=41234.5, ups=3.2, wpb=12876, bsz=402, num_updates=100,
 *     lr=1.25e-05, gnorm=2.105, clip=0%, loss_scale=128, train_wall=31, wall=33
 *   tqdm (a terminal redirected to a file: '\r'-separated redraws):
 *     epoch 001:  10%|#   | 100/1000 [00:30<04:30, 3.3it/s, loss=9.786, ..., num_updates=100, ...]
 *   json:
 *     {"epoch": 1, "update": 0.064, "loss": "9.786", ..., "num_updates": "100", "gnorm": "2.105"}
 *
 * A training point is a '\r'-separated segment of a line holding
 * "num_updates=" (simple, tqdm) or a JSON object with a "num_updates" key;
 * its step is num_updates (the optimizer updates so far, which a resumed
 * run continues).  Every "name=value" pair (split on ", ", a trailing ']'
 * of tqdm's postfix dropped) or JSON member holding a number (fairseq
 * quotes them: "9.786") is kept: loss, gnorm (grad_norm), lr and wps
 * (words per second: throughput) are roles through their aliases; "0%"
 * becomes NAME_pct ("clip=0%" -> clip_pct).  A tqdm bar redrawn with the
 * same postfix repeats its num_updates: a segment whose step is the
 * previous point's (from the same rank label) is not read again.
 *
 * The end-of-epoch summary ("| epoch 006 | loss 6.628 | ... |
 * num_updates 3725 | gnorm 0.361 | loss_scale 0.000 |", "| INFO | train |
 * epoch 001 | ...", JSON "train_loss" ... "train_num_updates") holds the
 * epoch's averages: a point at its num_updates only in a log that has no
 * progress points (fairseq <= 0.9 with a log interval over the epoch, or
 * --log-format none), where it is all there is; beside progress points it
 * would add a level shift at every epoch's end, so it is skipped there.
 *
 * Skipped: validation ("valid on 'valid' subset", "valid_loss"), the
 * arguments dump and the rest.  Lines of fairseq before 0.6, which
 * printed no num_updates, have no step and are not read.
 */
#include "reader_impl.h"
#include "util.h"

#include <string.h>

struct fs {
	struct gw_rd_last last;   /* the last point (step -1: none) */
	bool inner;               /* a point of the progress (per-update) was read */
};

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

static bool key_is(const struct gw_rd_kv *kv, const char *k)
{
	size_t n = strlen(k);
	return kv->key_len == n && !memcmp(kv->key, k, n);
}

/* "name=value, name=value, ..." at s[0..n): the value of num_updates in
 * *step (true), or false. */
static bool find_updates(const char *s, size_t n, int64_t *step)
{
	const char *u = gw__rd_find(s, n, "num_updates=");
	if (!u || (u > s && !sp(u[-1]) && u[-1] != ','))
		return false;
	const char *p = u + 12;
	double v;
	size_t k = gw__rd_num(p, (size_t)(s + n - p), &v);
	return k && gw__rd_whole(v, step);
}

/* The pairs of a simple or tqdm segment, from the first "name="; s is at
 * byte `base` of the line. */
static void pairs(struct gw_reader *r, const char *s, size_t n, size_t base, uint64_t lineno)
{
	const char *eq = memchr(s, '=', n);
	if (!eq)
		return;
	size_t i = (size_t)(eq - s);
	while (i > 0 && !sp(s[i - 1]) && s[i - 1] != ',')
		i--;
	while (i < n) {
		const char *c = gw__rd_find(s + i, n - i, ", ");
		size_t end = c ? (size_t)(c - s) : n;
		size_t e = end;
		while (e > i && (sp(s[e - 1]) || s[e - 1] == ']'))
			e--;
		const char *q = memchr(s + i, '=', e - i);
		if (q && q > s + i) {
			size_t nl = (size_t)(q - (s + i));
			size_t v0 = (size_t)(q - s) + 1;
			double v;
			size_t k = gw__rd_num(s + v0, e - v0, &v);
			if (nl == 11 && !memcmp(s + i, "num_updates", 11)) {
				/* the step */
			} else if (k && v0 + k == e) {
				gw__rd_metric(r, s + i, nl, v);
			} else if (k && v0 + k + 1 == e && s[v0 + k] == '%' && nl < 48) {
				char name[64];
				memcpy(name, s + i, nl);
				memcpy(name + nl, "_pct", 4);
				gw__rd_metric(r, name, nl + 4, v);
			} else if (gw_alias_lookup(gw__rd_aliases(r), s + i, nl, NULL) >= 0) {
				gw__rd_error(r, lineno, "bad_value: field \"%.*s\" at column %zu: expected a number",
				             (int)GW_MIN(nl, 64u), s + i, base + v0 + 1);
			}
		}
		i = end + 2;
	}
}

/* A JSON object at s[0] == '{': a point when it has a "num_updates"
 * member.  Returns 0 or the sink's error. */
static int json_obj(struct gw_reader *r, struct fs *st, const char *s, size_t n, uint64_t lineno)
{
	struct gw_rd_obj o;
	struct gw_rd_kv kv;
	int64_t step = -1;
	bool summary = false;
	double v;
	int rc;
	gw__rd_obj_init(&o, s, n);
	while ((rc = gw__rd_obj_next(&o, &kv)) == 1) {
		bool inner = key_is(&kv, "num_updates");
		if ((inner || key_is(&kv, "train_num_updates")) && gw__rd_kv_num(&kv, &v) &&
		    gw__rd_whole(v, &step))
			summary = !inner;
	}
	/* an epoch's summary is a point only in a log without progress
	 * points (fairseq <= 0.9 with a log interval over the epoch) */
	if (rc < 0 || step < 0 || gw__rd_repeats(r, &st->last, step) || (summary && st->inner))
		return 0;
	st->inner |= !summary;
	gw__rd_begin(r, NULL, 0, step);
	gw__rd_obj_init(&o, s, n);
	while (gw__rd_obj_next(&o, &kv) == 1) {
		if (key_is(&kv, "num_updates") || key_is(&kv, "train_num_updates"))
			continue;
		if (summary && kv.key_len > 6 && !memcmp(kv.key, "train_", 6))
			kv.key += 6, kv.key_len -= 6;   /* train_loss, train_gnorm, ... */
		if (gw__rd_kv_num(&kv, &v))
			gw__rd_metric(r, kv.key, kv.key_len, v);
		else if (kv.kind == GW_RD_STR &&
		         gw_alias_lookup(gw__rd_aliases(r), kv.key, kv.key_len, NULL) >= 0)
			gw__rd_error(r, lineno, "bad_value: field \"%.*s\": expected a number, got \"%.*s\"",
			             (int)GW_MIN(kv.key_len, 64u), kv.key, (int)GW_MIN(kv.str_len, 40u),
			             kv.str);
	}
	gw__rd_last_set(r, &st->last, step);
	return gw__rd_emit(r, lineno);
}

/* An epoch's summary, "| epoch 006 | loss 6.628 | ... | num_updates 3725 |
 * gnorm 0.361 | loss_scale 0.000 |" (fairseq <= 0.9; later with the
 * logger's "| INFO | train |" before it): a point at num_updates only in a
 * log without progress points, as fairseq <= 0.9 writes with a log
 * interval longer than an epoch. */
static int summary(struct gw_reader *r, struct fs *st, const char *s, size_t n, uint64_t lineno)
{
	const char *u = gw__rd_find(s, n, "| num_updates ");
	const char *ep = gw__rd_find(s, n, "epoch ");
	int64_t step, e;
	double v;
	if (st->inner || !u || !ep || gw__rd_find(s, n, "valid on ") ||
	    !gw__rd_num(u + 14, (size_t)(s + n - u - 14), &v) || !gw__rd_whole(v, &step) ||
	    gw__rd_repeats(r, &st->last, step))
		return 0;
	size_t k = gw__rd_int(ep + 6, (size_t)(s + n - ep - 6), &e);
	if (!k || (ep + 6 + k < s + n && ep[6 + k] == ':'))
		return 0;
	gw__rd_begin(r, NULL, 0, step);
	gw__rd_metric(r, "epoch", 5, (double)e);
	for (const char *p = ep + 6 + k; p < s + n;) {
		const char *bar = memchr(p, '|', (size_t)(s + n - p));
		const char *end = bar ? bar : s + n;
		const char *a = p;
		while (a < end && sp(*a))
			a++;
		const char *z = end;
		while (z > a && sp(z[-1]))
			z--;
		const char *w = z;
		while (w > a && !sp(w[-1]))
			w--;   /* the value is the last word */
		const char *ne = w;
		while (ne > a && sp(ne[-1]))
			ne--;
		if (ne > a && w < z && gw__rd_num(w, (size_t)(z - w), &v) == (size_t)(z - w) &&
		    !(ne - a == 11 && !memcmp(a, "num_updates", 11)))
			gw__rd_metric(r, a, (size_t)(ne - a), v);
		p = end + 1;
	}
	gw__rd_last_set(r, &st->last, step);
	return gw__rd_emit(r, lineno);
}

static int segment(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct fs *st = state;
	const char *b = memchr(s, '{', n);
	if (b && (size_t)(s + n - b) > 2 && b[1] == '"' && gw__rd_find(b, (size_t)(s + n - b), "num_updates\""))
		return json_obj(r, st, b, (size_t)(s + n - b), lineno);
	int64_t step;
	if (!find_updates(s, n, &step))
		return summary(r, st, s, n, lineno);
	if (gw__rd_repeats(r, &st->last, step))
		return 0;
	/* "epoch 001:" opens the progress; "| epoch 001 |" is the summary */
	const char *ep = gw__rd_find(s, n, "epoch ");
	if (!ep || !gw__rd_find(ep, (size_t)(s + n - ep), ":") || gw__rd_find(s, n, "valid on "))
		return 0;
	gw__rd_begin(r, NULL, 0, step);
	int64_t e;
	size_t k = gw__rd_int(ep + 6, (size_t)(s + n - ep - 6), &e);
	if (k && ep + 6 + k < s + n && ep[6 + k] == ':')
		gw__rd_metric(r, "epoch", 5, (double)e);
	pairs(r, ep, (size_t)(s + n - ep), (size_t)(ep - s), lineno);
	gw__rd_last_set(r, &st->last, step);
	st->inner = true;
	return gw__rd_emit(r, lineno);
}

static int fs_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	if (!gw__rd_find(s, n, "num_updates"))
		return 0;
	return gw__rd_cr_segments(r, state, s, n, lineno, segment);
}

static int fs_init(struct gw_reader *r, void *state)
{
	struct fs *st = state;
	st->last = (struct gw_rd_last){-1, -1};
	return 0;
}

static int fs_sniff(const char *h, size_t n, bool all)
{
	int best = 0;
	const char *p, *q = h;
	size_t len;
	int64_t step;
	while (gw__rd_sniff_line(&q, h + n, all, &p, &len)) {
		const char *ep = gw__rd_find(p, len, "epoch ");
		if (ep && find_updates(p, len, &step) && gw__rd_find(p, len, "loss="))
			return 95;
		const char *b = memchr(p, '{', len);
		if (b && gw__rd_find(b, (size_t)(p + len - b), "\"num_updates\": ") &&
		    gw__rd_find(b, (size_t)(p + len - b), "\"epoch\": "))
			return 95;
		if (ep && gw__rd_find(p, len, "| num_updates ") && gw__rd_find(p, len, "| loss "))
			return 90; /* an epoch summary (fairseq <= 0.9 prints no other point) */
		if (gw__rd_find(p, len, "fairseq_cli.train") || gw__rd_find(p, len, "| fairseq."))
			best = 60; /* fairseq's own loggers */
	}
	return best;
}

const struct gw_reader_format gw_rd_fairseq = {
	.name = "fairseq",
	.describe = "fairseq-train stdout: simple (epoch 001: ... loss=X, num_updates=N, gnorm=X), tqdm and json log formats",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS,
	.sniff = fs_sniff,
	.state_size = sizeof(struct fs),
	.init = fs_init,
	.line = fs_line,
};
