/*
 * llmc: Karpathy's llm.c, both of its outputs.
 *
 *   stdout   step    1/19560 | loss 11.009662 (+nanz)| norm 15.0789 (+nanz)| lr 8.57e-07 |
 *            4230.95 ms | 31.9% bf16 MFU | 123917 tok/s
 *            (older builds: "step 4/74: train loss 4.36 norm 2.1 lr 1e-4 (21.3 ms, 9000 tok/s)")
 *   main.log s:0 trl:11.0116 lr:0.000001 norm:14.96
 *
 * stdout: a segment (the text between '\r's of a line: the HellaSwag
 * progress redraws itself with bare '\r', so one '\n' line can hold
 * thousands of them) that starts with "step N" is a training point.  After
 * the header, words are read as they come: "loss X" -> loss, "(+1.2z)"
 * after it -> loss_z, "norm X" -> grad_norm (+ norm_z), "lr X" -> lr,
 * "X ms" -> step_ms, "X% ... MFU" -> mfu_pct, "X tok/s" -> tok_per_s.
 * Anything else is ignored, so a line cut by another message (SLURM's
 * "slurmstepd: ... CANCELLED" on the last line, or a CUDA error printed
 * into the middle of one) keeps the fields before the cut.  llm.c writes
 * non-finite values as "nan" and "(+nanz)"; the step-1 z-scores are NaN in
 * every run.  "val loss X" and "HellaSwag: ..." lines are evaluations and
 * skipped; "Writing checkpoint at step N" is a checkpoint_saved event.
 * The M of "step N/M" (the steps the run will take) becomes the extra
 * metric max_steps, which tells the engine when the run has finished.
 *
 * main.log: "s:N trl:X lr:X norm:X" is a training point (every key:value
 * pair kept, trl being the loss); "s:N tel:X" (validation) and
 * "s:N eval:X" (HellaSwag) are evaluations and skipped.
 */
#include "reader_impl.h"
#include "util.h"

#include <string.h>

struct llmc {
	int64_t last_ckpt;  /* the last checkpoint_saved step (events once each) */
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '/' || c == '%';
}

/* "step" [spaces] N ["/" M] at s: the step, M (-1 without one), and where
 * the fields start. */
static size_t step_header(const char *s, size_t n, int64_t *step, int64_t *total)
{
	*total = -1;
	if (n < 6 || memcmp(s, "step", 4) != 0 || !is_space(s[4]))
		return 0;
	size_t i = 4;
	while (i < n && is_space(s[i]))
		i++;
	size_t k = gw__rd_int(s + i, n - i, step);
	if (!k)
		return 0;
	i += k;
	if (i < n && s[i] == '/') {
		size_t m = gw__rd_int(s + i + 1, n - i - 1, total);
		if (!m)
			return 0;
		i += 1 + m;
	}
	if (i < n && s[i] == ':')
		i++;
	/* "step N: train loss ..." or "step N/M | loss ..." */
	if (i < n && !is_space(s[i]) && s[i] != '|')
		return 0;
	return i;
}

/* The fields after the header: keywords followed by numbers, and numbers
 * followed by units. */
static int stdout_fields(struct gw_reader *r, const char *s, size_t n)
{
	const char *prev = NULL; /* the role name the last number belonged to */
	size_t i = 0;
	while (i < n) {
		char c = s[i];
		if (is_space(c) || c == '|' || c == ',' || c == ')' || c == ':') {
			i++;
			continue;
		}
		if (c == '(') {
			/* "(+1.23z)" after a value: its z-score; "(21.3 ms" opens units */
			double z;
			size_t k = gw__rd_num(s + i + 1, n - i - 1, &z);
			if (k && i + 1 + k < n && s[i + 1 + k] == 'z' && prev) {
				char name[16];
				size_t len = (size_t)snprintf(name, sizeof(name), "%s_z", prev);
				gw__rd_metric(r, name, len, z);
				i += 2 + k;
				prev = NULL;
				continue;
			}
			i++;
			continue;
		}
		if (is_word(c)) {
			size_t w = i;
			while (i < n && (is_word(s[i]) || (s[i] >= '0' && s[i] <= '9')))
				i++;
			size_t wl = i - w;
			const char *role = NULL;
			if (wl == 4 && !memcmp(s + w, "loss", 4))
				role = "loss";
			else if (wl == 4 && !memcmp(s + w, "norm", 4))
				role = "norm";
			else if (wl == 2 && !memcmp(s + w, "lr", 2))
				role = "lr";
			prev = NULL;
			if (!role)
				continue;
			size_t j = i;
			while (j < n && (is_space(s[j]) || s[j] == ':'))
				j++;
			double v;
			size_t k = gw__rd_num(s + j, n - j, &v);
			if (!k)
				continue;
			gw__rd_metric(r, role, strlen(role), v);
			prev = role;
			i = j + k;
			continue;
		}
		double v;
		size_t k = gw__rd_num(s + i, n - i, &v);
		if (!k) {
			i++;
			continue;
		}
		i += k;
		prev = NULL;
		size_t j = i;
		while (j < n && is_space(s[j]))
			j++;
		if (n - j >= 2 && !memcmp(s + j, "ms", 2) && (j + 2 == n || !is_word(s[j + 2])))
			gw__rd_metric(r, "step_ms", 7, v);
		else if (n - j >= 5 && !memcmp(s + j, "tok/s", 5))
			gw__rd_metric(r, "tok_per_s", 9, v);
		else if (i < n && s[i] == '%') {
			/* "31.9% bf16 MFU": the unit within the next few bytes */
			size_t w = GW_MIN(n - i, (size_t)24);
			const char *e = memchr(s + i, '|', w);
			if (gw__rd_find(s + i, e ? (size_t)(e - s) - i : w, "MFU"))
				gw__rd_metric(r, "mfu_pct", 7, v);
		}
	}
	return 0;
}

/* main.log: "s:N key:value key:value ..." */
static int mainlog_line(struct gw_reader *r, const char *s, size_t n, uint64_t lineno)
{
	int64_t step;
	size_t i = 2;
	size_t k = gw__rd_int(s + i, n - i, &step);
	if (!k || !gw__rd_find(s, n, " trl:"))
		return 0; /* tel: (validation), eval: (HellaSwag) */
	i += k;
	gw__rd_begin(r, NULL, 0, step);
	while (i < n) {
		while (i < n && is_space(s[i]))
			i++;
		size_t w = i;
		while (i < n && s[i] != ':' && !is_space(s[i]))
			i++;
		if (i >= n || s[i] != ':')
			break;
		size_t wl = i - w;
		i++;
		double v;
		size_t m = gw__rd_num(s + i, n - i, &v);
		if (!m) {
			gw__rd_error(r, lineno, "bad_value: field \"%.*s\" at column %zu: expected a number",
			             (int)wl, s + w, i + 1);
			return 0;
		}
		gw__rd_metric(r, s + w, wl, v);
		i += m;
	}
	return gw__rd_emit(r, lineno);
}

static int segment(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct llmc *st = state;
	while (n && is_space(*s))
		s++, n--;
	if (n > 2 && s[0] == 's' && s[1] == ':')
		return mainlog_line(r, s, n, lineno);
	int64_t step, total;
	size_t h = step_header(s, n, &step, &total);
	if (h) {
		gw__rd_begin(r, NULL, 0, step);
		stdout_fields(r, s + h, n - h);
		if (total > 0)
			gw__rd_metric(r, "max_steps", 9, (double)total);
		return gw__rd_emit(r, lineno);
	}
	static const char ck[] = "Writing checkpoint at step ";
	if (n > sizeof(ck) - 1 && !memcmp(s, ck, sizeof(ck) - 1)) {
		if (gw__rd_int(s + sizeof(ck) - 1, n - (sizeof(ck) - 1), &step) && step != st->last_ckpt) {
			st->last_ckpt = step;
			return gw__rd_event(r, NULL, "checkpoint_saved", step, NULL, lineno);
		}
	}
	return 0;
}

static int llmc_init(struct gw_reader *r, void *state)
{
	struct llmc *st = state;
	st->last_ckpt = -1;
	return 0;
}

static int llmc_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	return gw__rd_cr_segments(r, state, s, n, lineno, segment);
}

static int llmc_sniff(const char *h, size_t n, bool all)
{
	int best = 0;
	const char *p, *q = h;
	size_t len;
	while (gw__rd_sniff_msg(&q, h + n, all, &p, &len)) {
		int64_t step, total;
		size_t k = step_header(p, len, &step, &total);
		if (k && gw__rd_find(p, len, "loss ")) {
			bool llmc_style = gw__rd_find(p, len, "| loss ") || gw__rd_find(p, len, "train loss ");
			if (llmc_style && (gw__rd_find(p, len, "norm ") || gw__rd_find(p, len, "ms")))
				return 95;
		}
		if (len > 4 && p[0] == 's' && p[1] == ':' && p[2] >= '0' && p[2] <= '9' &&
		    (gw__rd_find(p, len, " trl:") || gw__rd_find(p, len, " tel:")))
			return 90;
		if (gw__rd_find(p, len, "| Parameter ") && gw__rd_find(p, len, "| Value "))
			best = 60; /* llm.c's configuration table */
	}
	return best;
}

const struct gw_reader_format gw_rd_llmc = {
	.name = "llmc",
	.describe = "llm.c stdout (step N/M | loss X | norm X | lr X ...) and main.log (s:N trl:X lr:X norm:X)",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS | GW_RDF_PREFIX,
	.sniff = llmc_sniff,
	.state_size = sizeof(struct llmc),
	.init = llmc_init,
	.line = llmc_line,
};
