/*
 * The lines every framework prints in its own words about the same few
 * things, read as wire events (docs/wire-format.md "Events") in whichever
 * stdout format they appear: an fp16 overflow (an "overflow" event), a
 * checkpoint saved ("checkpoint_saved") or loaded to resume ("resumed").
 * reader.c hands every line of a stdout format (GW_RDF_LABELS) to
 * gw__rd_common_line before its format reads it; rd_point.c tells
 * events_point (its before_point hook) about every point, so events without
 * a step of their own get theirs from the points around them.
 *
 * The wordings, from each framework's source (cited at each rule below):
 *   overflow   DeepSpeed  "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss
 *                         scale: 1048576.0, reducing to 524288.0" (also "... but
 *                         hysteresis is 2", "fp16 dynamic loss scale overflow!")
 *              fairseq    "| WARNING: overflow detected, setting loss scale to: 64.0",
 *                         "NOTE: gradient overflow detected, ignoring gradient, setting
 *                         loss scale to: 64.0"
 *              apex       "Gradient overflow.  Skipping step, loss scaler 0 reducing loss
 *                         scale to 32768.0", "OVERFLOW! Skipping step. Attempted loss
 *                         scale: ..., reducing to ..."
 *              DeepSpeed's older fp16 optimizers: "Grad overflow on iteration N"
 *                         (the step named), "Reducing dynamic loss scale from X to Y",
 *                         "Overflow detected. Skipping step. Attempted loss scale: X,
 *                         reducing to Y"
 *              at the floor: DeepSpeed "Current loss scale already at minimum",
 *                         fairseq "Minimum loss scale reached (0.0001)"
 *   saved      Megatron "(successfully) saved checkpoint at iteration N", "saving
 *              checkpoint at iteration N"; fairseq "saved checkpoint PATH (epoch E @ N
 *              updates"; HF Trainer "Saving model checkpoint to DIR/checkpoint-N";
 *              DeepSpeed "Saving model checkpoint: DIR/global_stepN/..."; OLMo
 *              "Checkpoint saved to DIR/stepN(-unsharded)"; torchtitan "Saving a
 *              full checkpoint at last step, step N", "Saving the checkpoint (or
 *              staging if async is enabled)"; Lightning "global step N: ...
 *              saving model to 'PATH'"
 *   resumed    Megatron "(successfully) loaded checkpoint from DIR at iteration N",
 *              "loading checkpoint from DIR at iteration N"; fairseq "loaded
 *              checkpoint PATH (epoch E @ N updates)"; HF Trainer "Continuing
 *              training from global step N", HF examples "Checkpoint detected,
 *              resuming training at DIR/checkpoint-N"; DeepSpeed "Loading
 *              checkpoint from DIR/global_stepN/..."; OLMo "Loading checkpoint from
 *              DIR/stepN"; torchtitan "Loading the checkpoint at step N"; nanoGPT
 *              "Resuming training from DIR"; Lightning "Restoring states from the
 *              checkpoint path at PATH" (PATH ".../epoch=3-step=1000.ckpt");
 *              PyTorch's examples "=> loaded checkpoint 'PATH' (epoch N)", timm
 *              "Loaded checkpoint 'PATH' (epoch N)"; demucs/svoice "Loading
 *              checkpoint model: checkpoint.th"; mmcv "resumed epoch N, iter M",
 *              mmengine "resumed epoch: N, iter: M"
 *
 *   stopped    a loop that checks its loss prints that it was not finite and stops,
 *              without the loss's own line: torchvision's references, DETR, DeiT,
 *              MAE "Loss is nan, stopping training" ("inf", "-inf"), detectron2
 *              "FloatingPointError: Loss became infinite or NaN at iteration=N!",
 *              Keras' TerminateOnNaN "Batch N: Invalid loss, terminating training";
 *              Megatron's checks (--check-for-nan-in-loss-and-grad) "found NaN in
 *              local forward loss calculation" ("Inf"), "found NaN in local grad
 *              norm in backward pass ..." ("... for bucket #0 ..."), and
 *              autograd's anomaly mode "Function 'XBackward0' returned nan values
 *              in its 0th output" (a gradient: the grad norm).
 *              These become a point of the default run with that loss or grad norm
 *              (NaN where the line does not say which), so nonfinite judges it as
 *              if it had been logged: at the step the line names (detectron2's
 *              iteration), else the last point's step + 1 (the first step it can
 *              have happened at; Keras' N counts batches of the epoch).  The same
 *              statement again right after (every rank prints it, a traceback
 *              repeats it) adds no point.
 *
 * Steps: a line that names its step (N above, or a step in the path:
 * stepN, step_N, step=N, checkpoint-N, global_stepN, iter_N) gives it.  A
 * save without one is at the last point's step.  An overflow belongs to
 * the step being taken: the one a line names (and the lines about it after
 * it), else the last point's step + 1, + 2 for the next overflow line,
 * ...; every rank prints some of these: the same line at the same time is
 * one overflow; overflow lines before any point wait for the first
 * one, P, and end at it (P - n + 1 .. P).  A resume waits for the next
 * point: its step, when the line had none, is that point's step - 1 (the
 * checkpoint is of the step before the first one logged again; nanoGPT
 * logs the checkpoint's own step first, so its offset is 0).  A load at
 * step 0, one after which the steps do not go on from it (weights loaded to
 * fine-tune, at step 1), and one after which no point comes (a model
 * restored to test it) are no resume.  Several ranks and several files of
 * one checkpoint print the same line: an event that repeats the previous
 * one of its kind at the same step is left out.
 */
#include "reader_int.h"

#include "util.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static const char *find(const char *s, size_t n, const char *needle)
{
	return gw__rd_find(s, n, needle);
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The number after `key` in s (spaces skipped), into *v; true if one. */
static bool num_after(const char *s, size_t n, const char *key, double *v)
{
	const char *k = find(s, n, key);
	if (!k)
		return false;
	const char *p = k + strlen(key);
	while (p < s + n && blank(*p))
		p++;
	return gw__rd_num(p, (size_t)(s + n - p), v) > 0;
}

/* The integer after `key`, or -1. */
static int64_t int_after(const char *s, size_t n, const char *key)
{
	double v;
	int64_t step;
	if (!num_after(s, n, key, &v) || !gw__rd_whole(v, &step))
		return -1;
	return step;
}

/* A step named in a checkpoint's path: global_stepN, stepN, step_N,
 * step-N, step=N, checkpoint-N, iter_N (Megatron's iter_0000500); -1 if
 * none.  The last one in s counts. */
static int64_t path_step(const char *s, size_t n)
{
	static const char *const keys[] = {"global_step", "step", "checkpoint-", "iter_"};
	int64_t best = -1;
	const char *bestp = NULL;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		size_t kl = strlen(keys[k]);
		for (const char *p = s; (p = find(p, (size_t)(s + n - p), keys[k])); p += kl) {
			const char *q = p + kl;
			if (q < s + n && (*q == '_' || *q == '-' || *q == '=') && keys[k][kl - 1] != '-' &&
			    keys[k][kl - 1] != '_')
				q++;
			int64_t v = 0;
			size_t d = q < s + n ? gw__rd_int(q, (size_t)(s + n - q), &v) : 0;
			/* a whole number, not the start of a longer word ("step2x") */
			if (!d || (q + d < s + n && q[d] >= 'a' && q[d] <= 'z'))
				continue;
			if (p > bestp) {
				bestp = p;
				best = v;
			}
		}
	}
	return best;
}

/* ---- emitting ----------------------------------------------------------- */

static int overflow_event(struct gw_reader *r, const struct gw_rd_held *h, int64_t step)
{
	json_t *a = json_object();
	if (!a)
		return -ENOMEM;
	int rc = 0;
	if (!isnan(h->attempted))
		rc |= json_object_set_new(a, "attempted_loss_scale", gw_json_num(h->attempted));
	if (!isnan(h->scale))
		rc |= json_object_set_new(a, "loss_scale", gw_json_num(h->scale));
	if (h->min_scale)
		rc |= json_object_set_new(a, "min_scale", json_true());
	if (rc)
		rc = -ENOMEM;
	else
		rc = gw__rd_event_at(r, "overflow", step, a, h->line, h->ts, h->label);
	json_decref(a);
	return rc;
}

/* The overflow waiting for the lines about it (every rank, and other
 * wordings of the same overflow: same step, same time), now handed over. */
static int flush_pending(struct gw_reader *r)
{
	struct gw_rd_events *e = &r->ev;
	if (!e->pending.line)
		return 0;
	struct gw_rd_held h = e->pending;
	e->pending.line = 0;
	return overflow_event(r, &h, h.step);
}

/* An overflow at `step`: merged into the pending one when it is the same
 * overflow (same step, same time), else that one is handed over and this
 * one waits.  Returns 1 or a negative errno. */
static int overflow_at(struct gw_reader *r, struct gw_rd_held *h, int64_t step)
{
	struct gw_rd_events *e = &r->ev;
	struct gw_rd_held *p = &e->pending;
	h->step = step;
	if (p->line && p->step == step && (p->ts == h->ts || (isnan(p->ts) && isnan(h->ts)))) {
		if (isnan(p->attempted))
			p->attempted = h->attempted;
		if (isnan(p->scale))
			p->scale = h->scale;
		p->min_scale |= h->min_scale;
		return 1;
	}
	int rc = flush_pending(r);
	if (rc < 0)
		return rc;
	*p = *h;
	return 1;
}

/* The overflows held before the first point, at steps ending at `end`. */
static int flush_overflows(struct gw_reader *r, int64_t end)
{
	struct gw_rd_events *e = &r->ev;
	int rc = 0;
	for (size_t i = 0; i < e->nheld && !rc; i++) {
		int64_t s = end - (int64_t)(e->nheld - 1 - i);
		rc = overflow_event(r, &e->held[i], s < 0 ? 0 : s);
	}
	e->nheld = 0;
	return rc;
}

static int resumed_event(struct gw_reader *r, const struct gw_rd_held *h, int64_t step)
{
	json_t *a = json_pack("{s:I}", "checkpoint_step", (json_int_t)step);
	if (!a)
		return -ENOMEM;
	int rc = gw__rd_event_at(r, "resumed", step, a, h->line, h->ts, h->label);
	json_decref(a);
	return rc;
}

static int events_point(struct gw_reader *r, int64_t step)
{
	struct gw_rd_events *e = &r->ev;
	int rc = flush_pending(r);
	if (rc < 0)
		return rc;
	if (e->resume.line) {
		const struct gw_rd_held *h = &e->resume;
		int64_t s = h->step >= 0 ? h->step : step + h->offset;
		/* a load at 0, or steps that do not go on from it: no resume */
		if (s > 0 && step >= s)
			rc = resumed_event(r, h, s);
		e->resume.line = 0;
	}
	if (!rc && e->nheld)
		rc = flush_overflows(r, step);
	e->point = step;
	e->overflows = 0;
	e->at_min = false;
	e->named = -1;
	return rc;
}

int gw__rd_events_finish(struct gw_reader *r)
{
	struct gw_rd_events *e = &r->ev;
	e->resume.line = 0;   /* no point came after it: nothing resumed */
	int rc = e->nheld ? flush_overflows(r, (int64_t)e->nheld) : 0;
	return rc < 0 ? rc : flush_pending(r);
}

/* ---- the lines ---------------------------------------------------------------- */

static void held_init(struct gw_reader *r, struct gw_rd_held *h, uint64_t line)
{
	memset(h, 0, sizeof(*h));
	h->line = line;
	h->ts = r->line_ts;
	h->label = r->line_label;
	h->step = -1;
	h->attempted = h->scale = NAN;
}

/* An overflow line: 1 (handled), 0 (not one), or a negative errno. */
static int overflow_line(struct gw_reader *r, const char *s, size_t n, uint64_t line)
{
	struct gw_rd_held h;
	held_init(r, &h, line);
	double v;
	const char *k;
	if (isnan(h.ts))   /* DeepSpeed's logger line glued to a progress bar */
		h.ts = gw__rd_stamp_in(s, n);
	if (find(s, n, "Current loss scale already at minimum")) {
		/* DeepSpeed deepspeed/runtime/fp16/loss_scaler.py update_scale */
		h.min_scale = true;
	} else if (find(s, n, "Minimum loss scale reached")) {
		/* fairseq fairseq/optim/dynamic_loss_scaler.py check_overflow */
		h.min_scale = true;
		if (num_after(s, n, "Minimum loss scale reached (", &v))
			h.scale = v;
	} else if (find(s, n, "OVERFLOW!") || find(s, n, "overflow!")) {
		/* DeepSpeed loss_scaler.py / fused_optimizer.py, apex fp16_utils */
		if (num_after(s, n, "Attempted loss scale:", &v))
			h.attempted = v;
		if (find(s, n, "but hysteresis is"))
			h.scale = h.attempted;
		else if (num_after(s, n, "reducing to", &v) || num_after(s, n, "educing loss scale to", &v))
			h.scale = v;
	} else if ((k = find(s, n, "overflow on iteration"))) {
		/* DeepSpeed's older fp16 optimizers (fused_optimizer.py,
		 * unfused_optimizer.py): "Grad overflow on iteration N", every
		 * rank, the step named */
		h.step = int_after(k, (size_t)(s + n - k), "overflow on iteration");
	} else if (find(s, n, "dynamic loss scale from")) {
		/* ... and their "Reducing dynamic loss scale from X to Y" */
		if (num_after(s, n, "dynamic loss scale from", &v))
			h.attempted = v;
		const char *to = find(s, n, "dynamic loss scale from");
		if (to && (to = find(to, (size_t)(s + n - to), " to ")) && num_after(to, (size_t)(s + n - to), " to ", &v))
			h.scale = v;
	} else if (find(s, n, "verflow detected") || find(s, n, "Gradient overflow")) {
		/* fairseq trainer.py ("overflow detected, setting loss scale to: X";
		 * fairseq <= 0.9 "| WARNING: overflow detected, ..."), apex amp
		 * handle.py ("Gradient overflow.  Skipping step, loss scaler 0
		 * reducing loss scale to X"), DeepSpeed's log_dist "[Rank 0] Overflow
		 * detected. Skipping step. Attempted loss scale: X, reducing to Y" */
		if (num_after(s, n, "loss scale to:", &v) || num_after(s, n, "loss scale to", &v) ||
		    num_after(s, n, "reducing to", &v))
			h.scale = v;
		if (num_after(s, n, "Attempted loss scale:", &v))
			h.attempted = v;
	} else {
		return 0;
	}
	struct gw_rd_events *e = &r->ev;
	if (h.min_scale && e->at_min)
		return 1;   /* the same error again (every rank, the traceback) */
	e->at_min |= h.min_scale;
	/* every rank prints some of these: the same line again at the same
	 * time (to the millisecond its prefix shows), or the same step named
	 * again, is that overflow again */
	size_t tl = GW_MIN(n, sizeof(e->last_text));
	if (!isnan(h.ts) && h.ts == e->last_ts && tl == e->last_len &&
	    !memcmp(e->last_text, s, tl))
		return 1;
	memcpy(e->last_text, s, tl);
	e->last_len = tl;
	e->last_ts = h.ts;
	if (h.step >= 0) {
		if (e->nheld) {
			/* the overflows before it, with no point before them */
			int rc = flush_overflows(r, h.step - 1);
			if (rc < 0)
				return rc;
		}
		e->named = h.step;
		return overflow_at(r, &h, h.step);
	}
	if (e->named >= 0)   /* the lines about the overflow whose step a line named */
		return overflow_at(r, &h, e->named);
	if (e->point >= 0)
		return overflow_at(r, &h, e->point + (int64_t)++e->overflows);
	/* before the first point: held until it (at most GW_RD_HELD; beyond
	 * that the oldest are let go at steps counted from 1) */
	if (e->nheld == GW_RD_HELD) {
		int rc = flush_overflows(r, GW_RD_HELD);
		if (rc)
			return rc;
	}
	e->held[e->nheld++] = h;
	return 1;
}

static int saved(struct gw_reader *r, int64_t step, uint64_t line)
{
	struct gw_rd_events *e = &r->ev;
	int rc = flush_pending(r);
	if (rc < 0)
		return rc;
	if (step < 0)
		step = e->point;   /* the step just logged */
	if (step < 0 || step == e->last_saved)
		return 1;
	e->last_saved = step;
	rc = gw__rd_event_at(r, "checkpoint_saved", step, NULL, line, r->line_ts, r->line_label);
	return rc < 0 ? rc : 1;
}

static int resume(struct gw_reader *r, int64_t step, int offset, uint64_t line)
{
	struct gw_rd_events *e = &r->ev;
	int rc = flush_pending(r);
	if (rc < 0)
		return rc;
	held_init(r, &e->resume, line);
	e->resume.step = step;
	e->resume.offset = offset;
	e->point = -1;   /* the steps after it go on from the checkpoint */
	e->overflows = 0;
	e->last_saved = -1;
	return 1;
}

/* A checkpoint line: 1 (handled), 0 (not one), or a negative errno. */
static int checkpoint_line(struct gw_reader *r, const char *s, size_t n, uint64_t line)
{
	const char *k;
	int64_t step;
	/* Megatron megatron/training/checkpointing.py save_checkpoint /
	 * load_checkpoint */
	if ((k = find(s, n, " at iteration "))) {
		step = int_after(s, n, " at iteration ");
		size_t m = (size_t)(k - s);
		if (step >= 0 && (find(s, m, "saved checkpoint") || find(s, m, "saving checkpoint")))
			return saved(r, step, line);
		if (step >= 0 && (find(s, m, "loaded checkpoint from") || find(s, m, "loading checkpoint from")))
			return resume(r, step, 0, line);
	}
	/* fairseq fairseq/checkpoint_utils.py: "(epoch 143 @ 40015 updates" */
	if ((k = find(s, n, " updates")) && find(s, n, "(epoch ") && (step = int_after(s, n, " @ ")) >= 0) {
		if (find(s, n, "saved checkpoint") || find(s, n, "Saved checkpoint"))
			return saved(r, step, line);
		if (find(s, n, "loaded checkpoint"))
			return resume(r, step, 0, line);
	}
	/* HF transformers trainer.py _save_checkpoint / train */
	if ((k = find(s, n, "Saving model checkpoint to ")))
		return saved(r, path_step(k, (size_t)(s + n - k)), line);
	if ((step = int_after(s, n, "Continuing training from global step")) >= 0)
		return resume(r, step, 0, line);
	if ((k = find(s, n, "Checkpoint detected, resuming training at")))
		return resume(r, path_step(k, (size_t)(s + n - k)), -1, line);
	/* DeepSpeed deepspeed/runtime/engine.py _save_checkpoint, and its
	 * checkpoint engine's "Loading checkpoint from" */
	if ((k = find(s, n, "Saving model checkpoint: ")))
		return saved(r, path_step(k, (size_t)(s + n - k)), line);
	/* OLMo olmo/train.py: "Checkpoint saved to DIR/step500-unsharded" */
	if ((k = find(s, n, "Checkpoint saved to ")))
		return saved(r, path_step(k, (size_t)(s + n - k)), line);
	if ((k = find(s, n, "oading checkpoint from ")))
		return resume(r, path_step(k, (size_t)(s + n - k)), -1, line);
	/* torchtitan torchtitan/components/checkpoint.py */
	if ((step = int_after(s, n, "Saving a full checkpoint at last step, step")) >= 0)
		return saved(r, step, line);
	if (find(s, n, "Saving the checkpoint (or staging if async is enabled)"))
		return saved(r, -1, line);
	if ((step = int_after(s, n, "Loading the checkpoint at step")) >= 0)
		return resume(r, step, 0, line);
	/* Lightning pytorch_lightning/trainer/connectors/checkpoint_connector.py
	 * and callbacks/model_checkpoint.py (verbose) */
	if ((k = find(s, n, "Restoring states from the checkpoint path at ")))
		return resume(r, path_step(k, (size_t)(s + n - k)), -1, line);
	if ((k = find(s, n, ", saving model to ")) && (step = int_after(s, n, "global step ")) >= 0)
		return saved(r, step, line);
	/* nanoGPT train.py: "Resuming training from out" (then iter_num's own
	 * line: the checkpoint's step, not the one after it) */
	if (find(s, n, "Resuming training from "))
		return resume(r, -1, 0, line);
	/* PyTorch's examples (imagenet/main.py) "=> loaded checkpoint 'PATH'
	 * (epoch N)", timm's resume_checkpoint "Loaded checkpoint 'PATH'
	 * (epoch N)": epochs, not steps */
	if ((find(s, n, "loaded checkpoint '") || find(s, n, "Loaded checkpoint '")) &&
	    find(s, n, "' (epoch "))
		return resume(r, -1, -1, line);
	/* demucs / denoiser / svoice solver.py "Loading checkpoint model:
	 * checkpoint.th" (a run continued from its checkpoint file) */
	if (find(s, n, "Loading checkpoint model: "))
		return resume(r, -1, -1, line);
	/* mmcv runner "resumed epoch 5, iter 2500", mmengine "resumed epoch: 5,
	 * iter: 2500" (iter counted its own way: the next point's step) */
	if (find(s, n, "resumed epoch ") || find(s, n, "resumed epoch: "))
		return resume(r, -1, -1, line);
	return 0;
}

/* A loop's own statement that its loss was not finite (see the top): 1
 * (handled, a point emitted), 0 (not one), or a negative errno. */
static int stopped_line(struct gw_reader *r, const char *s, size_t n, uint64_t line)
{
	struct gw_rd_events *e = &r->ev;
	const char *k;
	double v = NAN;
	int64_t step = -1;
	const char *metric = "loss";
	if ((k = find(s, n, "found NaN in local ")) || (k = find(s, n, "found Inf in local "))) {
		/* Megatron: the loss (forward) or a bucket's grad norm (backward) */
		v = k[6] == 'I' ? INFINITY : NAN;
		if (find(s, n, "local grad norm"))
			metric = "grad_norm";
		else if (!find(s, n, "local forward loss"))
			return 0;
	} else if (find(s, n, "returned nan values in its")) {
		metric = "grad_norm";   /* autograd anomaly mode: a backward function's output */
	} else if ((k = find(s, n, "Loss is ")) && find(s, n, "stopping training")) {
		const char *p = k + 8;
		if ((size_t)(s + n - p) >= 7 && !memcmp(p, "tensor(", 7))
			p += 7;   /* a tensor printed whole: "Loss is tensor(nan, device=...)" */
		size_t m = (size_t)(s + n - p);
		if (m >= 3 && !memcmp(p, "inf", 3))
			v = INFINITY;
		else if (m >= 4 && !memcmp(p, "-inf", 4))
			v = -INFINITY;
		else if (!(m >= 3 && !memcmp(p, "nan", 3)))
			return 0;   /* a finite loss named: not this statement */
	} else if (find(s, n, "Loss became infinite or NaN at iteration")) {
		step = int_after(s, n, "at iteration=");
	} else if (!find(s, n, "Invalid loss, terminating training")) {
		return 0;
	}
	if (e->stopped >= 0 && e->point == e->stopped)
		return 1;   /* said again (another rank, a traceback): one stop */
	if (step < 0) {
		if (e->point < 0)
			return 0;   /* no point yet: no step to give it */
		step = e->point + 1;
	}
	int rc = flush_pending(r);
	if (rc < 0)
		return rc;
	gw__rd_begin(r, NULL, 0, step);
	gw__rd_ts(r, r->line_ts);
	if ((rc = gw__rd_metric(r, metric, strlen(metric), v)) < 0 || (rc = gw__rd_emit(r, line)) < 0)
		return rc;
	e->stopped = step;
	return 1;
}

/* The words the rules need, looked for where the few bytes they hold are
 * (memchr, fast over the many lines that hold none of the words): a mask
 * of W_OVERFLOW (an overflow's), W_CHECKPOINT (a checkpoint's or a
 * resume's) and W_STOPPED (a loop's non-finite loss statement). */
enum { W_OVERFLOW = 1, W_CHECKPOINT = 2, W_STOPPED = 4 };

static unsigned words(const char *s, size_t n)
{
	static const struct {
		char byte;
		size_t back;          /* where the word starts, before that byte */
		const char *w;
		size_t len;
		unsigned kind;
	} look[] = {
#define W(b, back, w, kind) {b, back, w, sizeof(w) - 1, kind}
		W('k', 3, "heckpoint", W_CHECKPOINT),        /* checkpoint, Checkpoint */
		W('v', 0, "verflow", W_OVERFLOW),            /* overflow, Overflow */
		W('V', 0, "VERFLOW", W_OVERFLOW),
		W('v', 2, "saving model to", W_CHECKPOINT),  /* Lightning's ModelCheckpoint */
		W('y', 6, "already at minimum", W_OVERFLOW), /* DeepSpeed's loss scaler */
		W('y', 1, "dynamic loss scale from", W_OVERFLOW),   /* its older fp16 optimizers */
		W('M', 0, "Minimum loss scale", W_OVERFLOW), /* fairseq's */
		W('R', 0, "Resuming training", W_CHECKPOINT),   /* nanoGPT */
		W('C', 0, "Continuing training from global step", W_CHECKPOINT),   /* HF Trainer */
		W('r', 0, "resumed epoch", W_CHECKPOINT),    /* mmcv, mmengine */
		W('L', 0, "Loss is ", W_STOPPED),            /* torchvision, DETR, DeiT, MAE */
		W('L', 0, "Loss became infinite or NaN", W_STOPPED),   /* detectron2 */
		W('I', 0, "Invalid loss, terminating", W_STOPPED),   /* Keras TerminateOnNaN */
		W('N', 6, "found NaN in local", W_STOPPED),  /* Megatron's NaN checks */
		W('I', 6, "found Inf in local", W_STOPPED),
		W('v', 13, "returned nan values in its", W_STOPPED),   /* autograd anomaly mode */
#undef W
	};
	unsigned hit = 0;
	for (size_t k = 0; k < sizeof(look) / sizeof(look[0]); k++) {
		if (hit & look[k].kind)
			continue;
		for (const char *p = s; (p = memchr(p, look[k].byte, (size_t)(s + n - p))); p++) {
			size_t i = (size_t)(p - s);
			if (i >= look[k].back && i - look[k].back + look[k].len <= n &&
			    !memcmp(s + i - look[k].back, look[k].w, look[k].len)) {
				hit |= look[k].kind;
				break;
			}
		}
	}
	return hit;
}

bool gw__rd_event_words(const char *s, size_t n)
{
	return words(s, n) != 0;
}

int gw__rd_common_line(struct gw_reader *r, const char *s, size_t n, uint64_t line)
{
	unsigned w = words(s, n);
	int rc = w & W_OVERFLOW ? overflow_line(r, s, n, line) : 0;
	if (!rc && (w & W_CHECKPOINT))
		rc = checkpoint_line(r, s, n, line);
	if (!rc && (w & W_STOPPED))
		rc = stopped_line(r, s, n, line);
	return rc;
}

void gw__rd_events_init(struct gw_reader *r)
{
	struct gw_rd_events *e = &r->ev;
	memset(e, 0, sizeof(*e));
	e->point = e->named = -1;
	e->last_saved = -1;
	e->stopped = -1;
	e->last_ts = NAN;
	e->pending.line = 0;
	r->before_point = events_point;
}
