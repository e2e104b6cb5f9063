/*
 * text: training logs in no framework's own shape -- a script's prints, a
 * Keras progress bar, speechbrain's epoch lines, an excerpt pasted into an
 * issue -- read by what the words say.
 *
 *   Epoch [1/10], Step [100/600], Loss: 2.3456          (a script's print)
 *   [train] step: 100, loss: 2.345, grad_norm: 0.61, lr: 3e-4
 *   Epoch 3/200                                         (Keras, then its bar)
 *   123/500 [====>.........] - ETA: 1:23 - loss: 0.6931 - accuracy: 0.5012
 *   epoch: 1, lr: 1.00e+00 - train loss: 2.71 - valid loss: 2.50, valid error: 0.81
 *   1200: 2.7431                                        (bare STEP: LOSS, or STEP LOSS)
 *
 * A line (after its logger prefix, rd_line.c) is read as name/value pairs:
 * the words before a number (at most three) are its name ("train loss:
 * 2.71" -> train_loss, in lower case with '_' for spaces, so the alias
 * table finds the roles), a name ends at a separator ('|', ',', ';', ' - ',
 * brackets, parentheses) or a number; "N/M" is a number with a total; "45%" gives
 * NAME_pct, "401ms" NAME_ms; a clock time ("1:23") is no number.  The step
 * is the value named step, global_step, iteration, iter, it, update(s),
 * num_updates or batch (or ending in _step); otherwise a bar's leading
 * "B/T"; otherwise the epoch.  A step counter that starts over at every
 * epoch (it goes back when the epoch goes up: PyTorch's "Epoch [2/10],
 * Step [1/600]", a Keras bar) is made global: (epoch - 1) x steps per
 * epoch (the total after '/', else the largest step of the epochs before)
 * + step.  A line with an epoch and nothing else ("Epoch 3/200") sets the
 * epoch of the lines after it.
 *
 * A point needs a loss or a grad norm; when no alias names the loss and
 * several names hold one at an end ("loss_pr: 0.5, loss_ce: 1.2", not a
 * sentence's "the loss jumped"), the one whose name says total is the
 * loss, else the first (gw__rd_loss_part).  A line whose
 * first word says it is
 * an evaluation (val, valid, validation, eval, evaluation, test) is
 * skipped, and so is a line without a step.  A line of exactly two numbers
 * (a whole step, then a number: "1200: 2.7431", "1200 2.7431", "1200,2.74")
 * is the step and the loss.  Keras redraws its bar with '\r' and '\b': each
 * segment between them is read, and a redraw of the previous step is not
 * read again.
 *
 * It is the format of last resort: its sniffer never decides at once (its
 * best score is below the sure 50) except for Keras' bar and speechbrain's
 * epoch line, so a framework's own format wins when its lines are there.
 */
#include "reader_impl.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#define PAIRS 32
#define NAMEBUF 1024

struct pair {
	const char *name;  /* in the parse's names buffer, lower case */
	double v, total;   /* total: after '/', NaN if none */
};

struct parse {
	struct pair p[PAIRS];
	size_t n;
	char names[NAMEBUF];
	size_t used;
	bool eval;          /* the first word says evaluation */
	bool other_words;   /* words that named no number */
	double lead, lead_total;   /* the first unnamed "B/T" (a bar's; NaN: none) */
	size_t unnamed;     /* other numbers without a name */
};

struct plain {
	int64_t epoch;            /* from an "Epoch E/N" line, -1: none */
	int64_t last_epoch, last_batch;
	bool per_epoch;           /* the step counter starts over each epoch */
	int64_t epoch_len;        /* the largest batch of the epochs before */
	struct gw_rd_last last;
};

static bool word_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '/' || c == '.';
}

static bool sep(const char *s, size_t n, size_t i)
{
	char c = s[i];
	if (c == '|' || c == ',' || c == ';' || c == '[' || c == ']' || c == '(' || c == ')' ||
	    c == '{' || c == '}' || c == '\t')
		return true;
	/* " - " (Keras, speechbrain, loguru) and a dash before a space */
	return c == '-' && (i + 1 >= n || s[i + 1] == ' ') && (i == 0 || s[i - 1] == ' ');
}

static bool is_eval_word(const char *w, size_t n)
{
	static const char *const words[] = {"val", "valid", "validation", "validating", "eval",
	                                    "evaluation", "evaluating", "test", "testing"};
	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
		if (strlen(words[k]) == n && !strncasecmp(w, words[k], n))
			return true;
	return false;
}

/* A number at s[i..n): its value, a total after '/', a unit; bytes used,
 * 0 if none (or a clock time). */
static size_t number(const char *s, size_t n, size_t i, double *v, double *total, char unit[8])
{
	size_t k = gw__rd_num_grouped(s + i, n - i, v);
	unit[0] = '\0';
	*total = NAN;
	if (!k)
		return 0;
	size_t j = i + k;
	if (j + 1 < n && s[j] == ':' && isdigit((unsigned char)s[j + 1]))
		return 0;   /* a clock time */
	if (j < n && s[j] == '/' && j + 1 < n && isdigit((unsigned char)s[j + 1])) {
		double t;
		size_t m = gw__rd_num(s + j + 1, n - j - 1, &t);
		if (m) {
			*total = t;
			j += 1 + m;
		}
	}
	if (j < n && s[j] == '%') {
		memcpy(unit, "pct", 4);
		j++;
	} else {
		size_t u = 0;
		while (j + u < n && u < 5 && isalpha((unsigned char)s[j + u]))
			u++;
		if (u && u <= 4 && !(j + u < n && word_char(s[j + u]))) {
			for (size_t q = 0; q < u; q++)
				unit[q] = (char)tolower((unsigned char)s[j + q]);
			unit[u] = '\0';
			j += u;
		} else if (u) {
			return 0;   /* "3rd", "1e" glued to a word: not a value */
		}
	}
	return j - i;
}

static void add_pair(struct parse *p, const char *name, size_t nl, const char *unit, double v,
                     double total)
{
	size_t ul = strlen(unit);
	if (p->n >= PAIRS || p->used + nl + ul + 2 > NAMEBUF)
		return;
	char *o = p->names + p->used;
	size_t k = 0;
	for (size_t i = 0; i < nl; i++)
		o[k++] = name[i] == ' ' ? '_' : (char)tolower((unsigned char)name[i]);
	if (ul) {
		o[k++] = '_';
		memcpy(o + k, unit, ul);
		k += ul;
	}
	o[k] = '\0';
	p->used += k + 1;
	p->p[p->n++] = (struct pair){o, v, total};
}

/* The name/value pairs of the line s[0..n). */
static void parse_line(const char *s, size_t n, struct parse *p)
{
	memset(p, 0, sizeof(*p));
	p->lead = p->lead_total = NAN;
	size_t i = 0, name0 = 0, name1 = 0;   /* the pending name s[name0..name1) */
	int words = 0;
	bool first_word = true;
	while (i < n) {
		char c = s[i];
		if (c == ' ' || c == ':' || c == '=') {
			i++;
			continue;
		}
		if ((c == '[' || c == '(') && words) {
			/* "Epoch [1/10]": a bracket between a name and its value */
			size_t j = i + 1;
			while (j < n && s[j] == ' ')
				j++;
			if (j < n && isdigit((unsigned char)s[j])) {
				i = j;
				continue;
			}
		}
		if (sep(s, n, i)) {
			if (words)
				p->other_words = true;
			words = 0;
			i++;
			continue;
		}
		double v, total;
		char unit[8];
		size_t k = 0;
		bool numeric = isdigit((unsigned char)c) || c == '.' ||
		               ((c == '-' || c == '+') && i + 1 < n &&
		                (isdigit((unsigned char)s[i + 1]) || s[i + 1] == '.'));
		if (numeric || (words && word_start(c) && (k = gw__rd_num(s + i, n - i, &v)) &&
		                (i + k >= n || !word_char(s[i + k])))) {
			/* a number, or nan / inf where a value is due */
			if (numeric)
				k = number(s, n, i, &v, &total, unit);
			else
				total = NAN, unit[0] = '\0';
			if (!k) {
				while (i < n && !sep(s, n, i) && s[i] != ' ')
					i++;
				words = 0;
				continue;
			}
			if (words)
				add_pair(p, s + name0, name1 - name0, unit, v, total);
			else if (!isnan(total) && isnan(p->lead_total) && !p->unnamed)
				p->lead = v, p->lead_total = total;   /* a bar's "B/T" */
			else
				p->unnamed++;
			words = 0;
			i += k;
			continue;
		}
		if (word_start(c)) {
			size_t a = i;
			while (i < n && word_char(s[i]))
				i++;
			while (i > a + 1 && s[i - 1] == '.')
				i--;   /* a sentence's full stop */
			if (first_word) {
				p->eval = is_eval_word(s + a, i - a);
				first_word = false;
			}
			if (words && words < 3 && name1 + 1 == a && s[name1] == ' ') {
				name1 = i;   /* "train loss", "learning rate" */
				words++;
			} else {
				if (words)
					p->other_words = true;
				name0 = a;
				name1 = i;
				words = 1;
			}
			continue;
		}
		/* anything else ends a name */
		if (words)
			p->other_words = true;
		words = 0;
		i++;
	}
	if (words)
		p->other_words = true;
}

static bool step_name(const char *n)
{
	static const char *const names[] = {"step", "global_step", "iteration", "iter", "it",
	                                    "update", "updates", "num_updates", "batch", "steps"};
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (!strcmp(n, names[k]))
			return true;
	size_t l = strlen(n);
	return l > 5 && !strcmp(n + l - 5, "_step");
}

static bool epoch_name(const char *n)
{
	size_t l = strlen(n);
	return !strcmp(n, "epoch") || (l > 6 && !strcmp(n + l - 6, "_epoch"));
}

/* Has the line a loss or a grad norm (the roles a point needs here)?
 * *part gets the pair that is the loss when no alias names one and
 * several names hold one ("loss_pr: 0.5, loss_ce: 1.2": the total's, else
 * the first; gw__rd_loss_part), or -1. */
static bool has_signal(const struct gw_alias *al, const struct parse *p, int *part)
{
	bool loss = false, gn = false;
	*part = -1;
	for (size_t k = 0; k < p->n; k++) {
		int role = gw_alias_lookup(al, p->p[k].name, strlen(p->p[k].name), NULL);
		loss |= role == GW_ROLE_LOSS;
		gn |= role == GW_ROLE_GRAD_NORM;
	}
	for (size_t k = 0; k < p->n && !loss; k++) {
		/* a loss is named so at an end of the name ("loss_pr", "kl_loss"),
		 * not in the middle of a sentence's words ("the_loss_jumped") */
		const char *nm = p->p[k].name;
		size_t l = strlen(nm);
		if (!gw__rd_loss_part(nm) ||
		    !(!strncmp(nm, "loss", 4) || (l >= 4 && !strcmp(nm + l - 4, "loss"))))
			continue;
		bool total = strstr(p->p[k].name, "total") != NULL;
		if (*part < 0 || total)
			*part = (int)k;
		if (total)
			break;
	}
	return loss || gn || *part >= 0;
}

/* The two-number line "STEP: LOSS" / "STEP LOSS" / "STEP,LOSS". */
static bool two_numbers(const char *s, size_t n, int64_t *step, double *loss)
{
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	size_t k = gw__rd_int(s + i, n - i, step);
	if (!k)
		return false;
	i += k;
	size_t gap = i;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i < n && (s[i] == ':' || s[i] == ','))
		i++;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i == gap || i >= n)
		return false;
	k = gw__rd_num(s + i, n - i, loss);
	if (!k)
		return false;
	i += k;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i == n;
}

static int segment(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct plain *st = state;
	int64_t step;
	double loss;
	if (two_numbers(s, n, &step, &loss)) {
		gw__rd_begin(r, NULL, 0, step);
		gw__rd_metric(r, "loss", 4, loss);
		return gw__rd_emit(r, lineno);
	}
	struct parse p;
	parse_line(s, n, &p);
	if (p.eval || !p.n)
		return 0;
	double sv = NAN, stot = NAN, ev = NAN;
	for (size_t k = 0; k < p.n; k++) {
		if (isnan(sv) && step_name(p.p[k].name))
			sv = p.p[k].v, stot = p.p[k].total;
		else if (isnan(ev) && epoch_name(p.p[k].name))
			ev = p.p[k].v;
	}
	int64_t e = -1, b;
	if (!isnan(ev) && !gw__rd_whole(ev, &e))
		return 0;
	if (isnan(sv) && !isnan(p.lead_total))
		sv = p.lead, stot = p.lead_total;   /* a bar's "B/T" */
	int part;
	if (!has_signal(gw__rd_aliases(r), &p, &part)) {
		if (e >= 0 && isnan(sv) && p.n == 1)
			st->epoch = e;   /* "Epoch 3/200": the epoch of the lines after it */
		return 0;
	}
	if (e < 0)
		e = st->epoch;
	if (!isnan(sv)) {
		if (!gw__rd_whole(sv, &b))
			return 0;
		if (e >= 0 && st->last_epoch >= 0 && e > st->last_epoch && b <= st->last_batch) {
			st->per_epoch = true;
			if (st->last_batch > st->epoch_len)
				st->epoch_len = st->last_batch;
		}
		if (e >= 0 && e != st->last_epoch && st->last_batch > st->epoch_len && st->per_epoch)
			st->epoch_len = st->last_batch;
		if (e >= 0)
			st->last_epoch = e;
		st->last_batch = b;
		step = b;
		if (st->per_epoch && e >= 1) {
			int64_t len = !isnan(stot) && stot >= 1 && stot < 1e15 ? (int64_t)stot : st->epoch_len;
			step = (e - 1) * len + b;
		}
	} else if (e >= 0) {
		step = e;
	} else {
		return 0;
	}
	if (gw__rd_repeats(r, &st->last, step))
		return 0;   /* the bar redrawn at the same step */
	gw__rd_last_set(r, &st->last, step);
	gw__rd_begin(r, NULL, 0, step);
	for (size_t k = 0; k < p.n; k++)
		if (!step_name(p.p[k].name))
			gw__rd_metric(r, p.p[k].name, strlen(p.p[k].name), p.p[k].v);
	if (part >= 0)
		gw__rd_metric(r, "loss", 4, p.p[part].v);
	return gw__rd_emit(r, lineno);
}

/* Keras erases its bar with '\b's before it redraws it: read each part. */
static int pl_segments(struct gw_reader *r, void *state, const char *s, size_t n,
                       uint64_t lineno)
{
	for (;;) {
		const char *b = memchr(s, '\b', n);
		size_t len = b ? (size_t)(b - s) : n;
		int rc = len ? segment(r, state, s, len, lineno) : 0;
		if (rc || !b)
			return rc;
		while (len < n && s[len] == '\b')
			len++;
		s += len;
		n -= len;
	}
}

static int pl_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	return gw__rd_cr_segments(r, state, s, n, lineno, pl_segments);
}

static int pl_init(struct gw_reader *r, void *state)
{
	struct plain *st = state;
	(void)r;
	st->epoch = st->last_epoch = st->last_batch = -1;
	st->last.step = -1;
	st->last.label = -1;
	return 0;
}

/* For the sniffer, which has no alias table: a name that holds "loss" or
 * "norm" and is not an evaluation's. */
static bool signal_name(const char *n)
{
	if (!strncmp(n, "val", 3) || !strncmp(n, "eval", 4) || !strncmp(n, "test", 4))
		return false;
	return gw__rd_loss_part(n) || strstr(n, "norm");
}

/* The sniffer reads lines as pl_line does. */
static int pl_sniff(const char *h, size_t n, bool all)
{
	const char *p, *q = h;
	size_t len;
	int pairs = 0, two = 0, other = 0, events = 0, best = 0;
	while (gw__rd_sniff_msg(&q, h + n, all, &p, &len)) {
		const char *cr = memchr(p, '\r', len);
		if (cr)
			len = (size_t)(cr - p);   /* a redrawn bar: its first segment */
		int64_t step;
		double v;
		if (!len)
			continue;
		if (two_numbers(p, len, &step, &v)) {
			two++;
			continue;
		}
		if (gw__rd_find(p, len, "OVERFLOW!") || gw__rd_find(p, len, "overflow detected") ||
		    gw__rd_find(p, len, "heckpoint")) {
			events++;
			continue;
		}
		if (!gw__rd_find(p, len, "oss") && !gw__rd_find(p, len, "OSS") &&
		    !gw__rd_find(p, len, "orm") && !gw__rd_find(p, len, "ORM")) {
			other += len > 0;   /* no loss or norm: nothing to parse for */
			continue;
		}
		struct parse ps;
		parse_line(p, len, &ps);
		bool signal = false;
		for (size_t k = 0; k < ps.n && !ps.eval; k++)
			signal |= signal_name(ps.p[k].name);
		if (signal && !isnan(ps.lead_total) && gw__rd_find(p, len, " - loss: "))
			best = 85;   /* a Keras bar */
		else if (signal && len > 7 && !strncmp(p, "epoch: ", 7) &&
		         gw__rd_find(p, len, " - train loss: "))
			best = 85;   /* speechbrain */
		if (signal) {
			bool stepped = !isnan(ps.lead_total);
			for (size_t k = 0; k < ps.n; k++)
				stepped |= step_name(ps.p[k].name) || epoch_name(ps.p[k].name);
			pairs += stepped;
		} else {
			other++;
		}
	}
	if (best)
		return best;
	if (pairs)
		return 45;
	if (two >= 3 && two >= 2 * other)
		return 40;
	if (two && all && !other)
		return 40;
	return events ? 20 : 0;
}

const struct gw_reader_format gw_rd_plain = {
	.name = "text",
	.describe = "training lines in no framework's shape: step/loss name-value pairs, Keras bars, "
	            "speechbrain epochs, bare STEP LOSS columns; quoted or fenced pastes",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS | GW_RDF_PREFIX,
	.sniff = pl_sniff,
	.state_size = sizeof(struct plain),
	.init = pl_init,
	.line = pl_line,
};
