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
 *   [1076]    3230 || B: 0.116 | C: 0.042 | ... | T: 0.477 || ETA: 1:41:48
 *                                                       (YOLACT: one-letter losses, T the total)
 *   Step 5650/50000; acc:   0.19; ppl:   nan; xent:  nan; lr: 0.00070    (OpenNMT-py)
 *   Epoch[0] Batch [100]<TAB>Speed: 500.00 samples/sec<TAB>cross-entropy=1.2   (MXNet)
 *   1epoch:train:1-100batch: iter_time=..., loss=92.3, ..., lr_0=1e-05   (ESPnet2)
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
 * + step (epoch x steps per epoch + step when the epochs count from 0,
 * MXNet's "Epoch[0]").  A line with an epoch and nothing else ("Epoch
 * 3/200") sets the epoch of the lines after it; an epoch's summary after
 * its batch lines (MXNet's "Epoch[1] Train-cross-entropy=nan") is at the
 * step after its last.  ESPnet2's "1epoch:train:1-100batch:" head is the
 * epoch and the range's last batch (espnet_head).
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
 * best score is below the sure 50) except for Keras' bar, speechbrain's
 * epoch line and ESPnet2's trainer line, so a framework's own format wins
 * when its lines are there.
 */
#include "rd_plain.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define CANDS 4

struct plain {
	int64_t epoch;            /* from an "Epoch E/N" line, -1: none */
	int64_t last_epoch, last_batch;
	bool per_epoch;           /* the step counter starts over each epoch */
	bool epoch0;              /* epochs count from 0 */
	int64_t epoch_len;        /* the largest batch of the epochs before */
	struct gw_rd_last last;
	/* the step counters of the last line that had any, and which one is
	 * the step (pick_step) */
	char cand[CANDS][24];
	double cand_v[CANDS];
	size_t ncand;
	char chosen[24];
	struct gw_pl_table tab;   /* a table being read */
	const char *run;          /* the run of a table's point (NULL: default) */
};

/* ---- steps ------------------------------------------------------------- */

/* The step counter of the line: the one chosen before while it moves, or
 * one that moves while it stands still (lit-gpt's "iter 77 step 39", "iter
 * 78 step 39": iter moves, step stands; a script's "iter[ 14/ 15] ...
 * [step] 104": step moves), else the first by gw__pl_step_rank.  Its index
 * in p, or -1. */
static int pick_step(struct plain *st, const struct gw_pl_parse *p)
{
	int pick = -1, best = 1 << 30, chosen = -1;
	for (size_t k = 0; k < p->n; k++) {
		int64_t w;
		int rank = gw__pl_step_rank(p->p[k].name);
		if (rank < 0 || !gw__rd_whole(p->p[k].v, &w))
			continue;   /* "Update: 2.8e-04" is no step */
		if (rank < best)
			best = rank, pick = (int)k;
		if (!strcmp(p->p[k].name, st->chosen))
			chosen = (int)k;
	}
	if (chosen >= 0) {
		pick = chosen;
		for (size_t c = 0; c < st->ncand; c++) {
			if (strcmp(st->cand[c], p->p[chosen].name) || st->cand_v[c] != p->p[chosen].v)
				continue;
			/* it stood still: another that moved is the step */
			for (size_t k = 0; k < p->n; k++)
				for (size_t d = 0; d < st->ncand; d++)
					if ((int)k != chosen && gw__pl_step_rank(p->p[k].name) >= 0 &&
					    !strcmp(st->cand[d], p->p[k].name) && p->p[k].v > st->cand_v[d])
						pick = (int)k;
		}
	}
	if (pick < 0)
		return -1;
	snprintf(st->chosen, sizeof(st->chosen), "%s", p->p[pick].name);
	st->ncand = 0;
	for (size_t k = 0; k < p->n && st->ncand < CANDS; k++)
		if (gw__pl_step_rank(p->p[k].name) >= 0) {
			snprintf(st->cand[st->ncand], sizeof(st->cand[0]), "%s", p->p[k].name);
			st->cand_v[st->ncand++] = p->p[k].v;
		}
	return pick;
}

/* A counter b within epoch e (total: the epoch's length when the line
 * says it): the global step.  A counter that goes back, or stays, when the
 * epoch goes up starts over each epoch. */
static int64_t global_step(struct plain *st, int64_t e, int64_t b, double total)
{
	/* the epoch goes up (or first shows: Keras' bar before its first
	 * "Epoch N/M" line) while the counter goes back or stays */
	if (e >= 0 && st->last_batch >= 0 && e > st->last_epoch && b <= st->last_batch) {
		st->per_epoch = true;
		if (st->last_batch > st->epoch_len)
			st->epoch_len = st->last_batch;
	}
	if (e >= 0)
		st->last_epoch = e;
	if (e == 0)
		st->epoch0 = true;   /* MXNet's "Epoch[0] Batch [100]" */
	st->last_batch = b;
	int64_t first = st->epoch0 ? 0 : 1;
	if (!st->per_epoch || e < first)
		return b;
	int64_t len = total >= 1 && total < 1e15 ? (int64_t)total : st->epoch_len;
	return (e - first) * len + b;
}

/* ---- names ------------------------------------------------------------- */

/* The name a pair is kept under: its own when the alias table knows it;
 * else, for a name of several words, its last word or two when those are
 * a role's ("Current learning rate" -> learning_rate, "avg loss" ->
 * loss), unless the first word says evaluation or an extreme (val, best,
 * min, max); else its own.  *role gets the role (-1: none). */
static const char *kept_name(const struct gw_alias *al, const struct gw_pl_pair *pr, int *role)
{
	const char *n = pr->name;
	*role = gw_alias_lookup(al, n, strlen(n), NULL);
	if (*role < 0 && !strncmp(n, "train-", 6)) {
		/* MXNet's "Train-cross-entropy": the training metric's name */
		int r = gw_alias_lookup(al, n + 6, strlen(n + 6), NULL);
		if (r >= 0 && r != GW_ROLE_TS) {
			*role = r;
			return n + 6;
		}
	}
	if (*role >= 0 || !pr->words)
		return n;
	const char *u = strchr(n, '_');
	size_t first = u ? (size_t)(u - n) : strlen(n);
	if (gw__rd_eval_word(n, first) || (first == 4 && !strncmp(n, "best", 4)) ||
	    (first == 3 && (!strncmp(n, "min", 3) || !strncmp(n, "max", 3))))
		return n;
	for (const char *q = u; q; q = strchr(q + 1, '_')) {
		int r = gw_alias_lookup(al, q + 1, strlen(q + 1), NULL);
		if (r >= 0 && r != GW_ROLE_TS) {
			*role = r;
			return q + 1;
		}
	}
	return n;
}

/* YOLACT's line ("[1076]  3230 || B: 0.116 | C: 0.042 | M: 0.244 | S:
 * 0.060 | I: 0.014 | T: 0.477 || ETA: ..."): its losses are named by one
 * letter each and T is their total.  The pair that is T when the line has
 * it and at least three other one-letter names, else -1. */
static int letter_total(const struct gw_pl_parse *p)
{
	int t = -1, letters = 0;
	for (size_t k = 0; k < p->n; k++) {
		const char *nm = p->p[k].name;
		if (nm[0] && !nm[1]) {
			letters++;
			if (nm[0] == 't')
				t = (int)k;
		}
	}
	return letters >= 4 ? t : -1;
}

/* Has the line a loss or a grad norm (the roles a point needs here)?
 * *part gets the pair that is the loss when no name is one and several
 * names hold one at an end ("loss_pr: 0.5, loss_ce: 1.2", not a sentence's
 * "the loss jumped"): the one whose name says total, else the first
 * (gw__rd_loss_part); -1 otherwise. */
static bool has_signal(const struct gw_alias *al, const struct gw_pl_parse *p, int *part)
{
	bool loss = false, gn = false;
	*part = -1;
	for (size_t k = 0; k < p->n; k++) {
		int role;
		kept_name(al, &p->p[k], &role);
		loss |= role == GW_ROLE_LOSS;
		gn |= role == GW_ROLE_GRAD_NORM;
	}
	for (size_t k = 0; k < p->n && !loss; k++) {
		const char *nm = p->p[k].name;
		size_t l = strlen(nm);
		if (!gw__rd_loss_part(nm) ||
		    !(!strncmp(nm, "loss", 4) || (l >= 4 && !strcmp(nm + l - 4, "loss"))))
			continue;
		bool total = strstr(nm, "total") != NULL;
		if (*part < 0 || total)
			*part = (int)k;
		if (total)
			break;
	}
	if (!loss && *part < 0)
		*part = letter_total(p);
	return loss || gn || *part >= 0;
}

/* ---- points ------------------------------------------------------------- */

/* The point of a parsed line (or a table row), if it is one. */
static int point(struct gw_reader *r, struct plain *st, const struct gw_pl_parse *p,
                 uint64_t lineno)
{
	if (p->eval || !p->n)
		return 0;
	int sk = pick_step(st, p), ek = -1;
	for (size_t k = 0; k < p->n && ek < 0; k++)
		if (gw__pl_epoch_name(p->p[k].name))
			ek = (int)k;
	int64_t e = -1, b = -1;
	if (ek >= 0 && !gw__rd_whole(p->p[ek].v, &e))
		return 0;
	double total = NAN;
	if (sk >= 0) {
		gw__rd_whole(p->p[sk].v, &b);
		total = p->p[sk].total;
	} else if (!isnan(p->lead_total) && gw__rd_whole(p->lead, &b)) {
		total = p->lead_total;   /* a bar's "B/T" */
	} else if (p->nhead == 2 && ek < 0) {
		e = p->head[0], b = p->head[1];   /* "333 154 Loss=nan" */
	} else if (p->nhead == 1) {
		b = p->head[0];
	}
	int part;
	if (!has_signal(gw__rd_aliases(r), p, &part)) {
		if (e >= 0 && b < 0 && p->n == 1)
			st->epoch = e;   /* "Epoch 3/200": the epoch of the lines after it */
		return 0;
	}
	if (e < 0)
		e = st->epoch;
	int64_t step;
	if (b >= 0)
		step = global_step(st, e, b, total);
	else if (e >= 0 && e == st->last_epoch && st->last_batch >= 0 &&
	         st->last.step >= 0)
		step = st->last.step + 1;   /* the epoch's summary after its batches */
	else if (e >= 0)
		step = e;
	else
		return 0;
	if (!st->run && gw__rd_repeats(r, &st->last, step))
		return 0;   /* the bar redrawn at the same step */
	gw__rd_last_set(r, &st->last, step);
	gw__rd_begin(r, st->run, st->run ? strlen(st->run) : 0, step);
	for (size_t k = 0; k < p->n; k++) {
		if ((int)k == sk)
			continue;
		int role;
		const char *n = kept_name(gw__rd_aliases(r), &p->p[k], &role);
		if (role == GW_ROLE_TS && !(p->p[k].v >= 1e9)) {
			/* "Time 1.803", "Time=0.040": how long a step took, not
			 * when (a Unix time is past 1e9 s, 2001) */
			char d[64];
			int dl = snprintf(d, sizeof(d), "%s_elapsed", n);
			gw__rd_metric(r, d, (size_t)dl, p->p[k].v);
			continue;
		}
		gw__rd_metric(r, n, strlen(n), p->p[k].v);
	}
	if (part >= 0)
		gw__rd_metric(r, "loss", 4, p->p[part].v);
	return gw__rd_emit(r, lineno);
}

/* ---- tables -------------------------------------------------------------- */

/* A row of the table being read: 1 (points were tried, or the alignment
 * row), 0 (not a row: the table ended), or a negative errno. */
static int row(struct gw_reader *r, struct plain *st, const char *s, size_t n, uint64_t lineno)
{
	struct gw_pl_parse p[GW_PL_TABLE_RUNS];
	const char *runs[GW_PL_TABLE_RUNS];
	int k = gw__pl_table_row(&st->tab, s, n, p, runs);
	for (int i = 0; i < k; i++) {
		st->run = runs[i][0] ? runs[i] : NULL;
		int rc = point(r, st, &p[i], lineno);
		st->run = NULL;
		if (rc < 0)
			return rc;
	}
	return k != 0;
}

/* ---- ESPnet2 ---------------------------------------------------------------- */

/* ESPnet2's trainer line, "1epoch:train:101-200batch: iter_time=..., loss=92.3,
 * ..., lr_0=1.0e-05, ...", after its logger's prefix: 1 with the epoch, the
 * range's last batch and where the pairs start; -1 for its other lines of
 * that shape (another key than train, the "1epoch results: [train] ...
 * [valid] ..." summary), which are no points; 0 for any other line. */
static int espnet_head(const char *s, size_t n, int64_t *e, int64_t *b, size_t *rest)
{
	const char *q = gw__rd_find(s, n, "epoch");
	if (!q)
		return 0;
	size_t i = (size_t)(q - s), a = i;
	while (a > 0 && isdigit((unsigned char)s[a - 1]))
		a--;
	if (a == i || (a > 0 && s[a - 1] != ' ') || !gw__rd_int(s + a, i - a, e))
		return 0;
	i += 5;
	if (n - i >= 9 && !memcmp(s + i, " results:", 9))
		return -1;
	if (i >= n || s[i++] != ':')
		return 0;
	size_t key = i;
	while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_'))
		i++;
	bool train = i - key == 5 && !memcmp(s + key, "train", 5);
	if (i == key || i >= n || s[i++] != ':')
		return 0;
	int64_t from;
	size_t k;
	if (!(k = gw__rd_int(s + i, n - i, &from)) || (i += k) >= n || s[i++] != '-' ||
	    !(k = gw__rd_int(s + i, n - i, b)) || (i += k) + 6 > n || memcmp(s + i, "batch:", 6))
		return 0;
	*rest = i + 6;
	return train ? 1 : -1;
}

/* An ESPnet2 line (espnet_head): its pairs read with the epoch and the
 * range's last batch as the step counter, so the step counts batches from
 * the first epoch on (global_step).  The pairs past ESPNET_MAX bytes are
 * left out. */
#define ESPNET_MAX 4096
static int espnet(struct gw_reader *r, struct plain *st, const char *s, size_t n,
                  int64_t e, int64_t b, size_t rest, uint64_t lineno)
{
	char buf[ESPNET_MAX];
	int h = snprintf(buf, sizeof(buf), "epoch %lld, batch %lld, ", (long long)e, (long long)b);
	size_t m = n - rest;
	if (m > sizeof(buf) - (size_t)h - 1) {
		m = sizeof(buf) - (size_t)h - 1;
		while (m && s[rest + m] != ',')
			m--;   /* cut between pairs, never inside a number */
	}
	memcpy(buf + h, s + rest, m);
	struct gw_pl_parse p;
	gw__pl_parse(buf, (size_t)h + m, &p);
	return point(r, st, &p, lineno);
}

/* ---- lines -------------------------------------------------------------- */

static int segment(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct plain *st = state;
	int64_t step;
	double loss;
	if (st->tab.on) {
		int rc = row(r, st, s, n, lineno);
		if (rc)
			return rc < 0 ? rc : 0;
		st->tab.on = false;
	}
	size_t t = 0;
	while (t < n && s[t] == ' ')
		t++;
	if (gw__pl_table_header(&st->tab, s, n, t < n && s[t] == '|'))
		return 0;
	int64_t e, b;
	size_t rest;
	int esp = espnet_head(s, n, &e, &b, &rest);
	if (esp)
		return esp > 0 ? espnet(r, st, s, n, e, b, rest, lineno) : 0;
	if (gw__pl_two_numbers(s, n, &step, &loss)) {
		gw__rd_begin(r, NULL, 0, step);
		gw__rd_metric(r, "loss", 4, loss);
		return gw__rd_emit(r, lineno);
	}
	struct gw_pl_parse p;
	gw__pl_parse(s, n, &p);
	return point(r, st, &p, lineno);
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

/* ---- sniffing ---------------------------------------------------------------- */

/* For the sniffer, which has no alias table: a name that holds a loss
 * (gw__rd_loss_part) or a norm and is not an evaluation's. */
static bool signal_name(const char *n)
{
	if (!strncmp(n, "val", 3) || !strncmp(n, "eval", 4) || !strncmp(n, "test", 4))
		return false;
	return gw__rd_loss_part(n) || strstr(n, "norm") || !strcmp(n, "xent") ||
	       strstr(n, "cross-entropy");
}

/* Does s[0..n) hold "oss" or "orm" in any case (loss, Loss, norm, ...),
 * or "xent" / "entropy" (OpenNMT's xent, MXNet's cross-entropy)?  One
 * pass, as the sniffer looks at every line of the head again and again. */
static bool loss_or_norm(const char *s, size_t n)
{
	for (size_t i = 0; i + 2 < n; i++) {
		char o = (char)(s[i] | 0x20);
		if (o != 'o' && o != 'e')
			continue;
		char a = (char)(s[i + 1] | 0x20), b = (char)(s[i + 2] | 0x20);
		if (o == 'o' && ((a == 's' && b == 's') || (a == 'r' && b == 'm')))
			return true;
		if (o == 'e' && a == 'n' && b == 't' &&
		    ((i && (s[i - 1] | 0x20) == 'x') ||
		     (i + 7 <= n && !strncasecmp(s + i + 3, "ropy", 4))))
			return true;   /* xent, entropy */
	}
	return false;
}

/* The sniffer reads lines as pl_line does. */
static int pl_sniff(const char *h, size_t n, bool all)
{
	const char *p, *q = h;
	size_t len;
	int pairs = 0, two = 0, other = 0, events = 0, best = 0;
	struct gw_pl_table tab = {0};
	while (gw__rd_sniff_msg(&q, h + n, all, &p, &len)) {
		const char *cr = memchr(p, '\r', len);
		if (cr)
			len = (size_t)(cr - p);   /* a redrawn bar: its first segment */
		int64_t step;
		double v;
		if (!len)
			continue;
		if (gw__pl_two_numbers(p, len, &step, &v)) {
			two++;
			continue;
		}
		if (gw__rd_event_words(p, len)) {
			events++;
			continue;
		}
		size_t t = 0;
		while (t < len && p[t] == ' ')
			t++;
		if (tab.on) {
			const char *c[GW_PL_TABLE_COLS + 1];
			size_t cl[GW_PL_TABLE_COLS + 1], k = gw__pl_cells(p, len, tab.md, c, cl), num = 0;
			if (tab.md && k && cl[0] && strspn(c[0], "-: ") >= cl[0])
				continue;   /* the alignment row */
			/* k may be one more than the table has columns (a row too
			 * long for it): no pair past them */
			for (size_t i = 0; i < k; i++)
				num += gw__pl_is_num(c[i], cl[i]) ||
				       (i < GW_PL_TABLE_COLS && tab.pair[i] && memchr(c[i], '/', cl[i]));
			if (k == tab.ncols && num >= 2) {
				pairs++;   /* a header and a row of numbers */
				continue;
			}
			tab.on = false;
		}
		if (gw__pl_table_header(&tab, p, len, t < len && p[t] == '|'))
			continue;
		if (!loss_or_norm(p, len) && !gw__rd_find(p, len, "| T: ")) {
			other++;   /* no loss or norm: nothing to parse for */
			continue;
		}
		int64_t e, b;
		size_t rest;
		if (espnet_head(p, len, &e, &b, &rest) > 0 && loss_or_norm(p + rest, len - rest)) {
			best = 85;   /* ESPnet2's trainer */
			continue;
		}
		struct gw_pl_parse ps;
		gw__pl_parse(p, len, &ps);
		bool signal = false;
		for (size_t k = 0; k < ps.n && !ps.eval; k++)
			signal |= signal_name(ps.p[k].name);
		signal |= !ps.eval && letter_total(&ps) >= 0;
		if (signal && !isnan(ps.lead_total) && gw__rd_find(p, len, " - loss: "))
			best = 85;   /* a Keras bar */
		else if (signal && len > 7 && !strncmp(p, "epoch: ", 7) &&
		         gw__rd_find(p, len, " - train loss: "))
			best = 85;   /* speechbrain */
		if (signal) {
			bool stepped = !isnan(ps.lead_total) || ps.nhead;
			for (size_t k = 0; k < ps.n; k++)
				stepped |= gw__pl_step_rank(ps.p[k].name) >= 0 ||
				           gw__pl_epoch_name(ps.p[k].name);
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
	.describe = "training lines in no framework's shape: step/loss name-value pairs, tables, Keras "
	            "bars, speechbrain epochs, OpenNMT, MXNet, ESPnet2, bare STEP LOSS columns; quoted or "
	            "fenced pastes",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS | GW_RDF_PREFIX,
	.sniff = pl_sniff,
	.state_size = sizeof(struct plain),
	.init = pl_init,
	.line = pl_line,
};
