/*
 * Fuzz target: the resume check (detectors/resume_check.c), which the
 * resume_mismatch detector and the HTTP resume gate share.  An input is a
 * JSON array [checkpoint, live] (anything else is compared as the live
 * manifest of a run without a checkpoint).  What must hold (a broken
 * invariant traps):
 *
 *   - gw_resume_diff returns an array of {kind, field, message} with a
 *     known kind, and gw_resume_cause/action answer for each kind;
 *   - a manifest compared with itself differs at most in
 *     optimizer_state_loaded: false (which is about the manifest alone);
 *   - nothing is dropped: the checkpoint compared with a copy of itself in
 *     which one thing was changed reports that thing -- each non-LR
 *     hyperparameter, the optimizer class, the parameter-name hash, an
 *     emptied optimizer state (a difference the gate misses is a resume
 *     that looks fine and is not).
 *
 * Seeds: fuzz/corpus/resume/.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"

#include "resume_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kinds[] = {"optimizer", "params", "state", "hparams"};

/* Check the shape of a diff array; returns how many entries have `kind`
 * (and, when field is not NULL, that field). */
static size_t check_diffs(const json_t *diffs, const char *kind, const char *field)
{
	FUZZ_CHECK(json_is_array(diffs));
	size_t i, n = 0;
	json_t *d;
	json_array_foreach(diffs, i, d) {
		const char *k = json_string_value(json_object_get(d, "kind"));
		const char *f = json_string_value(json_object_get(d, "field"));
		FUZZ_CHECK(k && f && json_is_string(json_object_get(d, "message")));
		bool known = false;
		for (size_t j = 0; j < sizeof(kinds) / sizeof(kinds[0]); j++)
			known |= strcmp(k, kinds[j]) == 0;
		FUZZ_CHECK(known);
		FUZZ_CHECK(gw_resume_cause(k) && gw_resume_action(k));
		if (kind && strcmp(k, kind) == 0 && (!field || strcmp(f, field) == 0))
			n++;
	}
	return n;
}

static size_t diff_count(const json_t *ckpt, const json_t *live, const char *kind,
                         const char *field)
{
	json_t *d = gw_resume_diff(ckpt, live);
	if (!d)
		return SIZE_MAX;   /* out of memory: nothing to check */
	size_t n = check_diffs(d, kind, field);
	json_decref(d);
	return n;
}

/* A value certainly different from v (under the check's own equality). */
static json_t *changed(const json_t *v)
{
	if (json_is_string(v)) {
		size_t n = json_string_length(v);
		char *s = malloc(n + 2);
		if (!s)
			return NULL;
		memcpy(s, json_string_value(v), n);
		s[n] = '~';
		s[n + 1] = '\0';
		json_t *r = json_stringn(s, n + 1);
		free(s);
		return r;
	}
	return json_string("changed");
}

/* ckpt with key (of obj, or of its "hparams" object when hp) replaced by a
 * changed value. */
static json_t *with_changed(const json_t *ckpt, const char *key, bool hp)
{
	json_t *live = json_deep_copy(ckpt);
	json_t *o = hp ? json_object_get(live, "hparams") : live;
	json_t *v = changed(json_object_get(o, key));
	if (!live || !v || json_object_set_new(o, key, v) < 0) {
		json_decref(live);
		return NULL;
	}
	return live;
}

static void completeness(const json_t *ckpt)
{
	/* with itself */
	json_t *d = gw_resume_diff(ckpt, ckpt);
	if (d) {
		size_t loaded = check_diffs(d, "state", "optimizer_state_loaded");
		FUZZ_CHECK(json_array_size(d) == loaded);
		json_decref(d);
	}
	/* each hyperparameter but the LR, changed alone, is reported */
	const json_t *hp = json_object_get(ckpt, "hparams");
	if (json_is_object(hp)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)hp, k, v) {
			if (!strcmp(k, "lr") || !strcmp(k, "initial_lr"))
				continue;
			json_t *live = with_changed(ckpt, k, true);
			if (!live)
				continue;
			size_t n = diff_count(ckpt, live, "hparams", NULL);
			FUZZ_CHECK(n == 1 || n == SIZE_MAX);
			json_decref(live);
		}
	}
	/* another optimizer class; another parameter-name hash */
	static const struct {
		const char *key, *kind;
	} top[] = {{"optimizer", "optimizer"}, {"param_names_sha256", "params"}};
	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++) {
		if (!json_is_string(json_object_get(ckpt, top[i].key)))
			continue;
		json_t *live = with_changed(ckpt, top[i].key, false);
		if (!live)
			continue;
		size_t n = diff_count(ckpt, live, top[i].kind, top[i].key);
		FUZZ_CHECK(n == 1 || n == SIZE_MAX);
		json_decref(live);
	}
	/* the optimizer state emptied by the resume */
	const json_t *keys = json_object_get(ckpt, "optimizer_state_keys");
	if (json_is_array(keys) && json_array_size(keys)) {
		json_t *live = json_deep_copy(ckpt);
		if (live && json_object_set_new(live, "optimizer_state_keys", json_array()) == 0) {
			size_t n = diff_count(ckpt, live, "state", "optimizer_state_keys");
			FUZZ_CHECK(n == 1 || n == SIZE_MAX);
		}
		json_decref(live);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t je;
	json_t *in = json_loadb((const char *)data, size, 0, &je);  /* as the gate reads its body */
	if (!in)
		return 0;
	const json_t *ckpt = NULL, *live = in;
	if (json_is_array(in) && json_array_size(in) == 2) {
		ckpt = json_array_get(in, 0);
		live = json_array_get(in, 1);
		if (json_is_null(ckpt))
			ckpt = NULL;
	}
	/* the gate answers from whatever it was sent */
	json_t *d = gw_resume_diff(ckpt, live);
	if (d) {
		check_diffs(d, NULL, NULL);
		const char *kind = json_string_value(json_object_get(json_array_get(d, 0), "kind"));
		if (kind) {
			FUZZ_CHECK(gw_resume_cause(kind) != NULL);
			FUZZ_CHECK(gw_resume_action(kind) != NULL);
		}
		json_decref(d);
	}
	json_decref(gw_resume_diff(NULL, live));
	if (json_is_object(ckpt))
		completeness(ckpt);
	if (json_is_object(live))
		completeness(live);
	json_decref(in);
	return 0;
}
