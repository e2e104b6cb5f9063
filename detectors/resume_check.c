/*
 * resume_check: does a resume manifest (a `resumed` event, or the live
 * manifest the resume gate is asked about) match the `checkpoint_saved`
 * event it restarts from?  Shared by the resume_mismatch detector and the
 * daemon's resume-check endpoint, so the gate and the alert never disagree.
 *
 * What differs, in the order it is reported:
 *   optimizer  the optimizer class (AdamW -> SGD), or the checkpoint recorded
 *              no class: its state cannot apply to another class;
 *   params     the SHA-256 of the ordered trainable parameter names: state
 *              keyed by position lands on the wrong tensors;
 *   state      optimizer_state_loaded is false, or the live state keys are
 *              not the saved ones (empty after a resume = a fresh optimizer);
 *   hparams    a hyperparameter other than the learning rate (which the
 *              schedule moves legitimately) differs; skipped when the class
 *              differs, since another class has other hyperparameters.
 * Without a checkpoint to compare with, only what the manifest says about
 * itself is checked: state not loaded, or empty state reported as loaded.
 */
#include "resume_check.h"

#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int add(json_t *diffs, const char *kind, const char *field, const json_t *ck,
               const json_t *live, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int add(json_t *diffs, const char *kind, const char *field, const json_t *ck,
               const json_t *live, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* names and values from the manifests may be long UTF-8: a cut inside
	 * a character would make jansson refuse the text, and the difference
	 * would silently go missing */
	gw_utf8_fix_end(msg);
	return json_array_append_new(diffs, json_pack("{s:s, s:s, s:O?, s:O?, s:s}", "kind", kind,
	                                              "field", field, "checkpoint", ck, "live", live,
	                                              "message", msg));
}

/* Short text of a value for messages: numbers %g, arrays [a, b], strings. */
static void brief(const json_t *v, char *out, size_t n)
{
	if (!v) {
		snprintf(out, n, "(none)");
	} else if (json_is_string(v)) {
		snprintf(out, n, "%s", json_string_value(v));
		gw_utf8_fix_end(out);
	} else if (json_is_number(v)) {
		snprintf(out, n, "%g", json_number_value(v));
	} else if (json_is_boolean(v)) {
		snprintf(out, n, "%s", json_is_true(v) ? "true" : "false");
	} else if (json_is_array(v)) {
		size_t o = (size_t)snprintf(out, n, "[");
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) {
			char b[64];
			brief(x, b, sizeof(b));
			if (o < n)
				o += (size_t)snprintf(out + o, n - o, "%s%s", i ? ", " : "", b);
		}
		if (o < n)
			snprintf(out + o, n - o, "]");
		gw_utf8_fix_end(out);
	} else {
		snprintf(out, n, "{...}");
	}
}

/* Equal as hyperparameters: numbers within a relative 1e-9, arrays and
 * objects element by element, the rest exactly. */
static bool same(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b)) {
		double x = json_number_value(a), y = json_number_value(b);
		return x == y || fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y));
	}
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!same(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	if (json_is_object(a) && json_is_object(b)) {
		if (json_object_size(a) != json_object_size(b))
			return false;
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)a, k, v) {
			if (!same(v, json_object_get(b, k)))
				return false;
		}
		return true;
	}
	return json_equal((json_t *)a, (json_t *)b);
}

static bool keys_equal(const json_t *a, const json_t *b)
{
	if (json_array_size(a) != json_array_size(b))
		return false;
	for (size_t i = 0; i < json_array_size(a); i++) {
		bool found = false;
		for (size_t j = 0; j < json_array_size(b) && !found; j++)
			found = json_equal(json_array_get(a, i), json_array_get(b, j));
		if (!found)
			return false;
	}
	return true;
}

/* Optimizers that keep no per-parameter state (plain SGD). */
static bool stateless(const json_t *live)
{
	const char *cls = json_string_value(json_object_get(live, "optimizer"));
	if (!cls || strcmp(cls, "SGD") != 0)
		return false;
	json_t *m = json_object_get(json_object_get(live, "hparams"), "momentum");
	return !m || json_number_value(m) == 0;
}

json_t *gw_resume_diff(const json_t *ckpt, const json_t *live)
{
	json_t *diffs = json_array();
	if (!diffs || !live)
		return diffs;
	char a[160], b[160];
	const json_t *ck_cls = ckpt ? json_object_get(ckpt, "optimizer") : NULL;
	const json_t *lv_cls = json_object_get(live, "optimizer");
	bool class_differs = false;
	if (ckpt) {
		if (!json_is_string(ck_cls) && json_is_string(lv_cls)) {
			add(diffs, "optimizer", "optimizer", NULL, lv_cls,
			    "the checkpoint recorded no optimizer class (the live one is %s)",
			    json_string_value(lv_cls));
			class_differs = true;
		} else if (json_is_string(ck_cls) && json_is_string(lv_cls) &&
		           strcmp(json_string_value(ck_cls), json_string_value(lv_cls)) != 0) {
			add(diffs, "optimizer", "optimizer", ck_cls, lv_cls, "optimizer class %s \u2192 %s",
			    json_string_value(ck_cls), json_string_value(lv_cls));
			class_differs = true;
		}
		const json_t *ch = json_object_get(ckpt, "param_names_sha256");
		const json_t *lh = json_object_get(live, "param_names_sha256");
		if (json_is_string(ch) && json_is_string(lh) &&
		    strcmp(json_string_value(ch), json_string_value(lh)) != 0) {
			const char *x = json_string_value(ch), *y = json_string_value(lh);
			add(diffs, "params", "param_names_sha256", ch, lh,
			    "parameter-name hash %.*s\u2026 \u2192 %.*s\u2026 (parameters reordered, added or removed)",
			    (int)gw_utf8_cut(x, GW_MIN(strlen(x), 8)), x,
			    (int)gw_utf8_cut(y, GW_MIN(strlen(y), 8)), y);
		}
	}
	const json_t *loaded = json_object_get(live, "optimizer_state_loaded");
	if (json_is_false(loaded))
		add(diffs, "state", "optimizer_state_loaded", NULL, loaded,
		    "the optimizer state was not loaded (optimizer_state_loaded: false)");
	const json_t *ck_keys = ckpt ? json_object_get(ckpt, "optimizer_state_keys") : NULL;
	const json_t *lv_keys = json_object_get(live, "optimizer_state_keys");
	if (json_is_array(ck_keys) && json_is_array(lv_keys) && !keys_equal(ck_keys, lv_keys)) {
		brief(ck_keys, a, sizeof(a));
		brief(lv_keys, b, sizeof(b));
		add(diffs, "state", "optimizer_state_keys", ck_keys, lv_keys,
		    json_array_size(lv_keys) ? "optimizer state keys %s \u2192 %s"
		                             : "the optimizer state is empty after the resume (saved: %s%s)",
		    a, json_array_size(lv_keys) ? b : "");
	} else if (!ckpt && json_is_array(lv_keys) && !json_array_size(lv_keys) &&
	           json_is_true(loaded) && !stateless(live)) {
		add(diffs, "state", "optimizer_state_keys", NULL, lv_keys,
		    "the optimizer reports its state loaded, but holds no state");
	}
	if (ckpt && !class_differs) {
		const json_t *ch = json_object_get(ckpt, "hparams");
		const json_t *lh = json_object_get(live, "hparams");
		if (json_is_object(ch) && json_is_object(lh)) {
			const char *k;
			json_t *v;
			json_object_foreach((json_t *)ch, k, v) {
				if (!strcmp(k, "lr") || !strcmp(k, "initial_lr"))
					continue;
				const json_t *w = json_object_get(lh, k);
				if (w && same(v, w))
					continue;
				brief(v, a, sizeof(a));
				brief(w, b, sizeof(b));
				char field[96];
				snprintf(field, sizeof(field), "hparams.%s", k);
				gw_utf8_fix_end(field);
				add(diffs, "hparams", field, v, w, "%s %s \u2192 %s", k, a, b);
			}
			json_object_foreach((json_t *)lh, k, v) {
				if (!strcmp(k, "lr") || !strcmp(k, "initial_lr") || json_object_get(ch, k))
					continue;
				brief(v, b, sizeof(b));
				char field[96];
				snprintf(field, sizeof(field), "hparams.%s", k);
				gw_utf8_fix_end(field);
				add(diffs, "hparams", field, NULL, v, "%s (none) \u2192 %s", k, b);
			}
		}
	}
	return diffs;
}

const char *gw_resume_cause(const char *kind)
{
	if (!strcmp(kind, "optimizer"))
		return "the job was restarted with a different optimizer than the one that wrote the "
		       "checkpoint, so the saved optimizer state could not be used";
	if (!strcmp(kind, "params"))
		return "the parameters are not in the order (or set) they had when the checkpoint was "
		       "saved: optimizer state loaded by position lands on the wrong tensors, silently";
	if (!strcmp(kind, "state"))
		return "the resume path restored the model but not the optimizer: AdamW's moments "
		       "start from zero";
	return "hyperparameters changed between the save and the resume";
}

const char *gw_resume_action(const char *kind)
{
	if (!strcmp(kind, "optimizer"))
		return "restart with the optimizer class the checkpoint was written with, or start the "
		       "new optimizer deliberately and expect a loss spike";
	if (!strcmp(kind, "params"))
		return "build the model and parameter groups in the same order as at save time (same "
		       "frozen layers, same wrappers), or load the optimizer state by parameter name";
	if (!strcmp(kind, "state"))
		return "load optimizer.state_dict() from the checkpoint too (and the scheduler's), and "
		       "check that the load did not fall back to a fresh optimizer";
	return "restore the optimizer's param_groups from the checkpoint, or confirm the change is "
	       "intended";
}
