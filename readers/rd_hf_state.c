/*
 * hf_trainer_state: the Hugging Face Trainer's trainer_state.json (what it
 * saves in every checkpoint-N folder, and at the end of training).
 *
 *   {
 *     "best_metric": null, ...,
 *     "log_history": [
 *       {
 *         "epoch": 0.0002, "grad_norm": 0.601, "learning_rate": 0.0002,
 *         "loss": 2.2538, "step": 10
 *       },
 *       { "eval_loss": 1.93, "epoch": 0.5, "step": 500, ... },
 *       { "step": 1000, "train_loss": 2.01, "train_runtime": 5230.1, ... }
 *     ], ...
 *   }
 *
 * The document is read as it comes, line by line, by a small tokenizer that
 * only tracks depth and strings: when a '{' opens inside the array of the
 * top-level key "log_history", the entry's text is collected until its '}'
 * (only the current entry is held, so memory is bounded by the largest
 * entry, not the file), then read as one flat object.  An entry is a
 * training point at its "step" with every number in it ("loss",
 * "grad_norm", "learning_rate" or "lr" become roles through the aliases;
 * "epoch" and the rest stay extras), from the line where the entry starts.
 * Evaluation entries (an "eval_" or "test_" key) and the end-of-run
 * summary ("train_runtime"; its "train_loss" is an average, not a point)
 * are skipped.  Python writes non-finite numbers as bare NaN / Infinity,
 * which strict JSON (jansson) rejects; the object reader takes them.
 *
 * The file is rewritten at every checkpoint, never appended to, so it is
 * not a stream format.  Each checkpoint-N/trainer_state.json of a run holds
 * the run's history up to N: replaying several of them gives the same steps
 * again (the engine sees the rewind); read the newest one.
 */
#include "reader_impl.h"
#include "buf.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ENTRY_MAX (16u << 20)

struct hf {
	int depth;
	bool in_str, esc;
	char key[16];          /* the last string at depth 1 (a key before '[') */
	size_t key_len;
	bool key_long;
	bool in_log, in_entry, entry_dropped;
	uint64_t entry_line;
	char *buf;             /* the entry's text so far, across lines */
	size_t len, cap;
};

static int keep(struct hf *h, const char *s, size_t n)
{
	if (h->len + n > ENTRY_MAX)
		return -E2BIG;
	if (gw_grow((void **)&h->buf, &h->cap, h->len + n, 1) < 0)
		return -ENOMEM;
	memcpy(h->buf + h->len, s, n);
	h->len += n;
	return 0;
}

static bool key_is(const struct gw_rd_kv *kv, const char *k)
{
	size_t n = strlen(k);
	return kv->key_len == n && !memcmp(kv->key, k, n);
}

static int entry(struct gw_reader *r, const char *s, size_t n, uint64_t line)
{
	struct gw_rd_obj o;
	struct gw_rd_kv kv;
	int rc;
	int64_t step = -1;
	bool skip = false, bad_step = false;
	gw__rd_obj_init(&o, s, n);
	while ((rc = gw__rd_obj_next(&o, &kv)) == 1) {
		if (key_is(&kv, "step")) {
			if (!(kv.kind == GW_RD_NUM && gw__rd_whole(kv.num, &step)))
				bad_step = true;
		} else if ((kv.key_len > 5 && !memcmp(kv.key, "eval_", 5)) ||
		           (kv.key_len > 5 && !memcmp(kv.key, "test_", 5)) ||
		           key_is(&kv, "train_runtime")) {
			skip = true;
		}
	}
	if (rc < 0) {
		gw__rd_error(r, line, "malformed_json: the log_history entry starting here is not "
		                      "an object of numbers (stops at byte %zu of the entry)", o.i + 1);
		return 0;
	}
	if (skip)
		return 0;
	if (bad_step || step < 0) {
		gw__rd_error(r, line, "%s: the log_history entry starting here has %s",
		             bad_step ? "bad_step" : "missing_step",
		             bad_step ? "a \"step\" that is not an integer >= 0" : "no \"step\"");
		return 0;
	}
	gw__rd_begin(r, NULL, 0, step);
	gw__rd_obj_init(&o, s, n);
	while (gw__rd_obj_next(&o, &kv) == 1) {
		if (kv.kind == GW_RD_NUM && !key_is(&kv, "step"))
			gw__rd_metric(r, kv.key, kv.key_len, kv.num);
		else if (kv.kind != GW_RD_OTHER &&
		         gw_alias_lookup(gw__rd_aliases(r), kv.key, kv.key_len, NULL) >= 0)
			gw__rd_error(r, line, "bad_value: field \"%.*s\": expected a number",
			             (int)kv.key_len, kv.key);
	}
	return gw__rd_emit(r, line);
}

static int hf_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct hf *h = state;
	size_t start = 0; /* where the entry's text on this line begins */
	int rc;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (h->in_str) {
			if (h->esc)
				h->esc = false;
			else if (c == '\\')
				h->esc = true;
			else if (c == '"')
				h->in_str = false;
			else if (h->depth == 1 && !h->in_entry) {
				if (h->key_len < sizeof(h->key))
					h->key[h->key_len++] = c;
				else
					h->key_long = true;
			}
			continue;
		}
		switch (c) {
		case '"':
			h->in_str = true;
			if (h->depth == 1) {
				h->key_len = 0;
				h->key_long = false;
			}
			break;
		case '{':
		case '[':
			if (h->in_log && h->depth == 2 && c == '{') {
				h->in_entry = true;
				h->entry_dropped = false;
				h->entry_line = lineno;
				h->len = 0;
				start = i;
			}
			h->depth++;
			if (h->depth == 2 && c == '[' && !h->key_long && h->key_len == 11 &&
			    !memcmp(h->key, "log_history", 11))
				h->in_log = true;
			break;
		case '}':
		case ']':
			if (h->depth > 0)
				h->depth--;
			if (h->in_entry && h->depth == 2) {
				h->in_entry = false;
				if (h->entry_dropped)
					break;
				if (!h->len) {
					rc = entry(r, s + start, i + 1 - start, h->entry_line);
				} else {
					if ((rc = keep(h, s + start, i + 1 - start)) == -ENOMEM)
						return rc;
					rc = rc ? 0 : entry(r, h->buf, h->len, h->entry_line);
				}
				h->len = 0;
				if (rc)
					return rc;
			}
			if (h->in_log && h->depth < 2)
				h->in_log = false;
			break;
		default:
			break;
		}
	}
	if (h->in_entry && !h->entry_dropped) {
		rc = keep(h, s + start, n - start);
		if (rc == 0)
			rc = keep(h, "\n", 1);
		if (rc == -ENOMEM)
			return rc;
		if (rc) {
			gw__rd_error(r, h->entry_line, "line_too_long: the log_history entry starting "
			             "here is longer than %u bytes, skipped", ENTRY_MAX);
			h->entry_dropped = true;
			h->len = 0;
		}
	}
	return 0;
}

static int hf_finish(struct gw_reader *r, void *state)
{
	struct hf *h = state;
	if (h->in_entry && !h->entry_dropped)
		gw__rd_error(r, h->entry_line, "truncated: the input ends inside the log_history "
		                               "entry starting here");
	return 0;
}

static void hf_deinit(void *state)
{
	struct hf *h = state;
	free(h->buf);
}

/* A JSON document whose top-level object has the key "log_history" (an
 * array); not a stream of one-line objects. */
static int hf_sniff(const char *s, size_t n, bool all)
{
	size_t i = 0;
	if (n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
		i = 3;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	if (i >= n || s[i] != '{')
		return 0;
	int depth = 0;
	bool in_str = false, esc = false;
	size_t str0 = 0, last0 = 0, last_len = 0;
	for (; i < n; i++) {
		char c = s[i];
		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"') {
				in_str = false;
				if (depth == 1) {
					last0 = str0;
					last_len = i - str0;
				}
			}
			continue;
		}
		if (c == '"') {
			in_str = true;
			str0 = i + 1;
		} else if (c == '{' || c == '[') {
			if (depth == 1 && c == '[' && last_len == 11 && !memcmp(s + last0, "log_history", 11))
				return 95;
			depth++;
		} else if (c == '}' || c == ']') {
			if (--depth == 0)
				return 0; /* the first object ended without a log_history */
		}
	}
	return 0;
}

const struct gw_reader_format gw_rd_hf_state = {
	.name = "hf_trainer_state",
	.describe = "Hugging Face Trainer trainer_state.json (log_history)",
	.flags = 0,
	.sniff = hf_sniff,
	.state_size = sizeof(struct hf),
	.line = hf_line,
	.finish = hf_finish,
	.deinit = hf_deinit,
};
