/*
 * sb3: the boxed tables Stable-Baselines3's logger prints to stdout
 * (verbose=1), one per dump, between lines of dashes:
 *
 *   -----------------------------------------
 *   | rollout/                |             |
 *   |    ep_rew_mean          | 22.4        |
 *   | time/                   |             |
 *   |    total_timesteps      | 4096        |
 *   | train/                  |             |
 *   |    loss                 | 20.1        |
 *   |    n_updates            | 10          |
 *   -----------------------------------------
 *
 * A row with an empty value and a name ending in '/' opens a section; an
 * indented row below it is SECTION/NAME ("train/loss"), so the alias
 * table finds train/loss (the loss) and train/learning_rate (the lr); the
 * rest (train/value_loss, train/approx_kl, rollout/ep_rew_mean, ...) are
 * extras.  A table is a point when its closing line of dashes comes (from
 * the line of its train/loss row, where an alert then points); its
 * step is time/total_timesteps (the environment steps, which every
 * algorithm logs and a resumed run continues), else train/n_updates.  A
 * value that is not a number (a string someone logged) is left out; a
 * table with neither step is skipped, and so is one without a role (the
 * first PPO table, before any update, holds no train/ section).
 */
#include "reader_impl.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SB_ROWS 64
#define SB_NAME 96

struct sb {
	bool in;                     /* inside a table */
	char section[48];
	size_t nrows;
	char name[SB_ROWS][SB_NAME];
	double v[SB_ROWS];
	uint64_t line;               /* the table's train/loss row, else its first */
	struct gw_rd_linectx ctx;
	bool loss_line;
};

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

/* A line of dashes only (a table's border). */
static bool border(const char *s, size_t n)
{
	size_t i = 0, d = 0;
	while (i < n && sp(s[i]))
		i++;
	for (; i < n && s[i] == '-'; i++)
		d++;
	while (i < n && sp(s[i]))
		i++;
	return i == n && d >= 10;
}

/* "| key | value |": the key (with its indent) and the value, trimmed of
 * the spaces after each; false if s is not such a row. */
static bool row(const char *s, size_t n, const char **k, size_t *kl, bool *indent,
                const char **v, size_t *vl)
{
	size_t i = 0;
	while (i < n && sp(s[i]))
		i++;
	if (i >= n || s[i] != '|')
		return false;
	const char *a = s + i + 1;
	const char *bar = memchr(a, '|', (size_t)(s + n - a));
	if (!bar)
		return false;
	const char *b = bar + 1;
	const char *end = s + n;
	while (end > b && sp(end[-1]))
		end--;
	if (end == b || end[-1] != '|' || memchr(b, '|', (size_t)(end - 1 - b)))
		return false;
	/* "| name" opens a section, "|    name" is in it */
	*indent = bar - a >= 3 && !memcmp(a, "   ", 3);
	while (a < bar && sp(*a))
		a++;
	const char *ae = bar;
	while (ae > a && sp(ae[-1]))
		ae--;
	const char *be = end - 1;
	while (b < be && sp(*b))
		b++;
	while (be > b && sp(be[-1]))
		be--;
	*k = a, *kl = (size_t)(ae - a);
	*v = b, *vl = (size_t)(be - b);
	return *kl > 0;
}

static int table_done(struct gw_reader *r, struct sb *st)
{
	int64_t step = -1, alt = -1;
	size_t nrows = st->nrows;
	st->nrows = 0;
	st->section[0] = '\0';
	for (size_t j = 0; j < nrows; j++) {
		int64_t w;
		if (!strcmp(st->name[j], "time/total_timesteps") && gw__rd_whole(st->v[j], &w))
			step = w;
		else if (!strcmp(st->name[j], "train/n_updates") && gw__rd_whole(st->v[j], &w))
			alt = w;
	}
	if (step < 0)
		step = alt;
	if (step < 0)
		return 0;
	struct gw_rd_linectx now;
	gw__rd_line_save(r, &now);
	gw__rd_line_restore(r, &st->ctx);
	gw__rd_begin(r, NULL, 0, step);
	for (size_t j = 0; j < nrows; j++)
		if (strcmp(st->name[j], "time/total_timesteps") != 0)
			gw__rd_metric(r, st->name[j], strlen(st->name[j]), st->v[j]);
	int rc = gw__rd_emit(r, st->line);
	gw__rd_line_restore(r, &now);
	return rc;
}

static int sb_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct sb *st = state;
	if (border(s, n)) {
		int rc = st->in && st->nrows ? table_done(r, st) : 0;
		st->in = true;
		st->nrows = 0;
		st->section[0] = '\0';
		return rc;
	}
	const char *k, *v;
	size_t kl, vl;
	bool indent;
	if (!st->in || !row(s, n, &k, &kl, &indent, &v, &vl)) {
		st->in = false;    /* the table ended without its border */
		st->nrows = 0;
		return 0;
	}
	if (!vl && k[kl - 1] == '/') {
		snprintf(st->section, sizeof(st->section), "%.*s", (int)GW_MIN(kl, 40u), k);
		return 0;
	}
	double x;
	if (!vl || gw__rd_num(v, vl, &x) != vl || st->nrows == SB_ROWS)
		return 0;
	snprintf(st->name[st->nrows], SB_NAME, "%s%.*s", indent ? st->section : "",
	         (int)GW_MIN(kl, 40u), k);
	bool loss = !strcmp(st->name[st->nrows], "train/loss");
	if (!st->nrows || (loss && !st->loss_line)) {
		st->line = lineno;
		st->loss_line = loss;
		gw__rd_line_save(r, &st->ctx);
	}
	st->v[st->nrows++] = x;
	return 0;
}

static int sb_sniff(const char *h, size_t n, bool all)
{
	const char *p, *q = h, *k, *v;
	size_t len, kl, vl;
	bool indent, after_border = false;
	while (gw__rd_sniff_line(&q, h + n, all, &p, &len)) {
		if (border(p, len)) {
			after_border = true;
			continue;
		}
		if (after_border && row(p, len, &k, &kl, &indent, &v, &vl) && !vl && !indent &&
		    k[kl - 1] == '/')
			return 90;
		after_border = false;
	}
	return 0;
}

const struct gw_reader_format gw_rd_sb3 = {
	.name = "sb3",
	.describe = "Stable-Baselines3 logger tables (| train/ | |, |    loss | X |, ...; step time/total_timesteps)",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS,
	.sniff = sb_sniff,
	.state_size = sizeof(struct sb),
	.line = sb_line,
};
