/*
 * swift: ms-swift's logging.jsonl and the log dicts that ms-swift and the
 * Hugging Face Trainer print on stdout.
 *
 *   logging.jsonl  {"loss": 20.53, "grad_norm": 52.2, "learning_rate": 0.0001,
 *                   "global_step/max_steps": "1/438", "elapsed_time": "6s", ...}
 *   stdout         ... 88.18s/it]{'loss': '1.759', 'grad_norm': '36.51',
 *                   'learning_rate': '4e-06', 'global_step/max_steps': '3/294', ...}
 *   HF stdout      {'loss': 0.4713, 'grad_norm': 1.93, 'learning_rate': 1e-05, 'epoch': 0.5}
 *
 * Every '\r'-separated segment of a line (tqdm redraws its bars with bare
 * '\r') is searched for objects that start with {' or {", wherever they
 * are: three records of the ms-swift stdout log are glued to the end of a
 * progress bar.  An object is a training point when it has a loss,
 * grad_norm or learning rate; its step is the N of
 * "global_step/max_steps": "N/M" (ms-swift has no other step; M, the run's
 * length, becomes the extra metric max_steps), else its
 * "step", else (the plain HF Trainer prints none) the number of training
 * dicts read so far.  Values may be numbers or strings holding numbers
 * (ms-swift's stdout rounds them to four digits and quotes them); other
 * strings ("6s", "46m 13s", "0.23%") are skipped.  Evaluation dicts (an
 * "eval_" key), the end-of-run summary ("train_runtime") and the final
 * state dump of logging.jsonl ("log_history") are skipped, as are config
 * dumps and other dicts without a loss, grad norm or learning rate.
 */
#include "reader_impl.h"
#include "util.h"

#include <string.h>

struct sw {
	int64_t ordinal; /* training dicts without a step so far */
};

static bool key_is(const struct gw_rd_kv *kv, const char *k)
{
	size_t n = strlen(k);
	return kv->key_len == n && !memcmp(kv->key, k, n);
}

/* Read the object at s[0] == '{': *len gets its length, or 0 if it is not
 * one.  Returns 0 or the sink's error. */
static int object(struct gw_reader *r, struct sw *st, const char *s, size_t n, uint64_t lineno,
                  size_t *len)
{
	struct gw_rd_obj o;
	struct gw_rd_kv kv;
	int rc;
	int64_t step = -1, gstep = -1;
	bool train = false, skip = false;
	gw__rd_obj_init(&o, s, n);
	while ((rc = gw__rd_obj_next(&o, &kv)) == 1) {
		double v;
		if (key_is(&kv, "global_step/max_steps") && kv.kind == GW_RD_STR) {
			int64_t g;
			size_t k = gw__rd_int(kv.str, kv.str_len, &g);
			if (k && k < kv.str_len && kv.str[k] == '/')
				gstep = g;
		} else if (key_is(&kv, "step") && gw__rd_kv_num(&kv, &v) && gw__rd_whole(v, &step)) {
			/* the step, when there is one */
		} else if (kv.key_len > 5 && !memcmp(kv.key, "eval_", 5)) {
			skip = true;
		} else if (key_is(&kv, "train_runtime") || key_is(&kv, "log_history")) {
			skip = true;
		} else if (key_is(&kv, "loss") || key_is(&kv, "grad_norm") ||
		           key_is(&kv, "learning_rate") || key_is(&kv, "lr")) {
			train = true;
		}
	}
	*len = rc < 0 ? 0 : o.i;
	if (rc < 0 || skip || !train)
		return 0;
	if (gstep >= 0)
		step = gstep;
	else if (step < 0)
		step = ++st->ordinal;
	gw__rd_begin(r, NULL, 0, step);
	gw__rd_obj_init(&o, s, n);
	while (gw__rd_obj_next(&o, &kv) == 1) {
		double v;
		if (key_is(&kv, "global_step/max_steps") && kv.kind == GW_RD_STR) {
			/* "N/M": M is the run's length (the engine's sign it finished) */
			int64_t g, m;
			size_t k = gw__rd_int(kv.str, kv.str_len, &g);
			if (k && k + 1 < kv.str_len && kv.str[k] == '/' &&
			    gw__rd_int(kv.str + k + 1, kv.str_len - k - 1, &m) == kv.str_len - k - 1 && m > 0)
				gw__rd_metric(r, "max_steps", 9, (double)m);
			continue;
		}
		if (key_is(&kv, "step"))
			continue;
		if (gw__rd_kv_num(&kv, &v))
			gw__rd_metric(r, kv.key, kv.key_len, v);
		else if (kv.kind != GW_RD_OTHER &&
		         gw_alias_lookup(gw__rd_aliases(r), kv.key, kv.key_len, NULL) >= 0)
			gw__rd_error(r, lineno, "bad_value: field \"%.*s\": expected a number, got \"%.*s\"",
			             (int)kv.key_len, kv.key, (int)GW_MIN(kv.str_len, 40u), kv.str);
	}
	return gw__rd_emit(r, lineno);
}

/* Objects that fail to parse before a segment is given up: each failure
 * may have read to the segment's end, so this bounds the work on a long
 * line of garbage to that many passes. */
#define MAX_FAILED 32

static int segment(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct sw *st = state;
	size_t i = 0;
	int failed = 0;
	while (i + 1 < n && failed < MAX_FAILED) {
		const char *b = memchr(s + i, '{', n - i - 1);
		if (!b)
			return 0;
		size_t at = (size_t)(b - s);
		if (b[1] != '\'' && b[1] != '"') {
			i = at + 1;
			continue;
		}
		size_t len;
		int rc = object(r, st, b, n - at, lineno, &len);
		if (rc)
			return rc;
		if (!len)
			failed++;
		i = len ? at + len : at + 1;
	}
	return 0;
}

static int sw_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	if (!memchr(s, '{', n))
		return 0;
	return gw__rd_cr_segments(r, state, s, n, lineno, segment);
}

static int sw_sniff(const char *h, size_t n, bool all)
{
	int best = 0;
	const char *p, *q = h;
	size_t len;
	while (gw__rd_sniff_line(&q, h + n, all, &p, &len)) {
		if (len > 2 && p[0] == '{' && p[1] == '"' && gw__rd_find(p, len, "\"global_step/max_steps\""))
			return 95;
		if (gw__rd_find(p, len, "'global_step/max_steps': '"))
			return 90;
		if (gw__rd_find(p, len, "{'loss': ") || gw__rd_find(p, len, "{'train_loss': "))
			best = best > 70 ? best : 70;
		if (gw__rd_find(p, len, "[INFO:swift]"))
			best = best > 30 ? best : 30; /* weak: ms-swift also runs Megatron */
	}
	return best;
}

const struct gw_reader_format gw_rd_swift = {
	.name = "swift",
	.describe = "ms-swift logging.jsonl and HF Trainer / ms-swift stdout dicts ({'loss': ..., 'global_step/max_steps': 'N/M'})",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS,
	.sniff = sw_sniff,
	.state_size = sizeof(struct sw),
	.line = sw_line,
};
