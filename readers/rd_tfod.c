/*
 * tf_objdet: the TensorFlow Object Detection API's TF2 training loop
 * (model_lib_v2.py), as it logs through TensorFlow's logger (and absl's,
 * which repeats every line: both prefixes are taken off by rd_line.c).
 *
 *   INFO:tensorflow:Step 100 per-step time 0.527s
 *   I0526 10:00:00.123456 140000 model_lib_v2.py:705] Step 100 per-step time 0.527s
 *   INFO:tensorflow:{'Loss/classification_loss': 0.52,
 *    'Loss/localization_loss': 0.31,
 *    'Loss/regularization_loss': 0.15,
 *    'Loss/total_loss': 0.98,
 *    'learning_rate': 0.0133}
 *   INFO:tensorflow:Step 100 per-step time 0.527s loss=0.980      (older releases)
 *
 * "Step N per-step time Xs" opens step N (per_step_time_s an extra); the
 * losses come in the Python dict printed after it, over several lines (a
 * line that starts with "{'" until the one that closes it), every member
 * a named number: Loss/total_loss is the loss, learning_rate the lr (the
 * alias table's), the other parts extras.  The older form's "loss=X" is
 * the loss itself, on the Step line.  A step is handed over once: the
 * second logger's copy of the Step line and of the dict is not read
 * again.  An excerpt of dicts without any Step line (the loss dicts
 * pasted alone) numbers them 1, 2, ... as the swift format numbers the
 * HF Trainer's dicts; a logger's second copy of one of them is then a
 * point of its own.
 */
#include "reader_impl.h"
#include "util.h"

#include <math.h>
#include <string.h>

#define TF_DICT_MAX (64 * 1024)   /* a dict longer than this is no loss dict */

struct tf {
	int64_t step;                 /* the open step, -1: none */
	double per_step;
	bool done;                    /* that step was handed over */
	bool any_step;                /* a Step line was read */
	int64_t ordinal;              /* dicts read without a Step line */
	bool in_dict;
	struct gw_buf dict;           /* the dict's lines, joined */
	uint64_t dict_line;
	struct gw_rd_linectx ctx;     /* the dict's first line's */
};

/* "Step N per-step time X.XXXs" at s: true with the step, the time and
 * where the rest begins. */
static bool step_line(const char *s, size_t n, int64_t *step, double *t, size_t *rest)
{
	static const char mid[] = " per-step time ";
	size_t k, i = 5;
	if (n < 5 || memcmp(s, "Step ", 5) != 0 || !(k = gw__rd_int(s + i, n - i, step)))
		return false;
	i += k;
	if (n - i < sizeof(mid) - 1 || memcmp(s + i, mid, sizeof(mid) - 1) != 0)
		return false;
	i += sizeof(mid) - 1;
	if (!(k = gw__rd_num(s + i, n - i, t)))
		return false;
	i += k;
	if (i < n && s[i] == 's')
		i++;
	*rest = i;
	return true;
}

static int dict_done(struct gw_reader *r, struct tf *st)
{
	st->in_dict = false;
	if (st->step < 0 || st->done || st->dict.err)
		return 0;
	struct gw_rd_obj o;
	struct gw_rd_kv kv;
	int rc;
	double v;
	struct gw_rd_linectx now;
	gw__rd_line_save(r, &now);
	gw__rd_line_restore(r, &st->ctx);
	gw__rd_begin(r, NULL, 0, st->step);
	if (!isnan(st->per_step))
		gw__rd_metric(r, "per_step_time_s", 15, st->per_step);
	gw__rd_obj_init(&o, st->dict.p, st->dict.len);
	while ((rc = gw__rd_obj_next(&o, &kv)) == 1)
		if (gw__rd_kv_num(&kv, &v))
			gw__rd_metric(r, kv.key, kv.key_len, v);
	if (rc < 0) {
		gw__rd_error(r, st->dict_line, "bad_value: the dict of step %lld cannot be read at "
		             "byte %zu of it", (long long)st->step, o.i + 1);
		gw__rd_line_restore(r, &now);
		return 0;
	}
	st->done = true;
	rc = gw__rd_emit(r, st->dict_line);
	gw__rd_line_restore(r, &now);
	return rc;
}

/* Whether the text of a dict being joined is closed (a '}' outside its
 * quotes). */
static bool closed(const char *s, size_t n)
{
	char q = 0;
	for (size_t i = 0; i < n; i++) {
		if (q) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == q)
				q = 0;
		} else if (s[i] == '\'' || s[i] == '"') {
			q = s[i];
		} else if (s[i] == '}') {
			return true;
		}
	}
	return false;
}

static int tf_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct tf *st = state;
	if (st->in_dict) {
		gw_buf_add(&st->dict, " ", 1);
		gw_buf_add(&st->dict, s, n);
		if (st->dict.len > TF_DICT_MAX) {
			st->in_dict = false;
			return 0;
		}
		return closed(st->dict.p, st->dict.len) ? dict_done(r, st) : 0;
	}
	int64_t step;
	double t;
	size_t rest;
	if (step_line(s, n, &step, &t, &rest)) {
		if (step == st->step)
			return 0;   /* the other logger's copy */
		st->step = step;
		st->per_step = t;
		st->done = false;
		st->any_step = true;
		double loss;
		size_t k;
		if (n - rest > 6 && !memcmp(s + rest, " loss=", 6) &&
		    (k = gw__rd_num(s + rest + 6, n - rest - 6, &loss)) > 0) {
			gw__rd_begin(r, NULL, 0, step);
			gw__rd_metric(r, "per_step_time_s", 15, t);
			gw__rd_metric(r, "loss", 4, loss);
			st->done = true;
			return gw__rd_emit(r, lineno);
		}
		return 0;
	}
	if (n >= 2 && s[0] == '{' && (s[1] == '\'' || s[1] == '"')) {
		if (!st->any_step) {
			/* an excerpt of dicts alone: numbered as they come */
			st->step = ++st->ordinal;
			st->per_step = NAN;
			st->done = false;
		}
		gw_buf_reset(&st->dict);
		gw_buf_add(&st->dict, s, n);
		st->in_dict = true;
		st->dict_line = lineno;
		gw__rd_line_save(r, &st->ctx);
		return closed(s, n) ? dict_done(r, st) : 0;
	}
	return 0;
}

static int tf_finish(struct gw_reader *r, void *state)
{
	(void)r;
	struct tf *st = state;
	st->in_dict = false;   /* a dict cut off by the end has no loss to trust */
	return 0;
}

static int tf_init(struct gw_reader *r, void *state)
{
	(void)r;
	struct tf *st = state;
	st->step = -1;
	return 0;
}

static void tf_deinit(void *state)
{
	struct tf *st = state;
	gw_buf_free(&st->dict);
}

static int tf_sniff(const char *h, size_t n, bool all)
{
	const char *p, *q = h;
	size_t len, rest;
	int64_t step;
	double t;
	int best = 0;
	if (!gw__rd_find(h, n, " per-step time ") && !gw__rd_find(h, n, "{'Loss/"))
		return 0;   /* neither: not worth reading line by line */
	while (gw__rd_sniff_msg(&q, h + n, all, &p, &len)) {
		if (step_line(p, len, &step, &t, &rest))
			return 90;
		if (len > 8 && !memcmp(p, "{'Loss/", 7))
			best = 60;
	}
	return best;
}

const struct gw_reader_format gw_rd_tfod = {
	.name = "tf_objdet",
	.describe = "TF Object Detection API (model_lib_v2: Step N per-step time Xs, then {'Loss/total_loss': X, ...})",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS | GW_RDF_PREFIX,
	.sniff = tf_sniff,
	.state_size = sizeof(struct tf),
	.init = tf_init,
	.line = tf_line,
	.finish = tf_finish,
	.deinit = tf_deinit,
};
