/*
 * Tables in the text format (rd_plain.h): a Markdown table pasted into an
 * issue ("| step | loss |", outer pipes optional) or a report printed in
 * columns (Chainer's PrintReport).  A header names the columns; the rows
 * under it are numbers, read as one point each.
 *
 * A header needs a loss or norm column and a step or epoch column; a
 * Markdown table without one takes its first column as the step when
 * its rows hold whole numbers there ("| block | loss |").  A Markdown
 * table may set runs side by side, each cell two numbers under a header
 * that names the run and both ("| block | M4 loss / gnorm | PC loss /
 * gnorm |", cells "0.6446 / 0.2278"): the words before the first name are
 * the run, and a row gives one point per run.
 */
#include "rd_plain.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

size_t gw__pl_cells(const char *s, size_t n, bool md, const char **c, size_t *cl)
{
	size_t k = 0, i = 0;
	while (i < n && s[i] == ' ')
		i++;
	if (md && i < n && s[i] == '|')
		i++;
	while (i < n && k <= GW_PL_TABLE_COLS) {
		if (!md && s[i] == '#')
			break;
		size_t a = i;
		while (i < n && (md ? s[i] != '|' : s[i] != ' ' && s[i] != '\t'))
			i++;
		size_t z = i;
		while (md && z > a && s[z - 1] == ' ')
			z--;
		while (md && a < z && s[a] == ' ')
			a++;
		if (z > a || md) {
			c[k] = s + a;
			cl[k++] = z - a;
		}
		while (i < n && (s[i] == ' ' || s[i] == '\t' || (md && s[i] == '|')))
			if (s[i++] == '|' && md)
				break;
	}
	if (md && k && cl[k - 1] == 0)
		k--;   /* the closing pipe */
	return k;
}

bool gw__pl_is_num(const char *s, size_t n)
{
	double v;
	return n && gw__rd_num_grouped(s, n, &v) == n;
}

/* A column name in lower case with '_' for spaces into o (cap bytes);
 * false if it does not fit. */
static bool col_name(char *o, size_t cap, const char *s, size_t n)
{
	while (n && s[n - 1] == ' ')
		n--;
	while (n && *s == ' ')
		s++, n--;
	if (!n || n >= cap)
		return false;
	for (size_t j = 0; j < n; j++)
		o[j] = s[j] == ' ' ? '_' : (char)tolower((unsigned char)s[j]);
	o[n] = '\0';
	return true;
}

static bool signal_col(const char *o)
{
	return gw__rd_loss_part(o) || strstr(o, "norm");
}

/* "M4 loss / gnorm": run "M4", names loss and gnorm.  False when the
 * cell is not that shape. */
static bool pair_col(struct gw_pl_table *t, size_t i, const char *s, size_t n)
{
	const char *sl = memchr(s, '/', n);
	if (!sl)
		return false;
	size_t left = (size_t)(sl - s);
	while (left && s[left - 1] == ' ')
		left--;
	size_t w = left;   /* the last word of the left side is the first name */
	while (w && s[w - 1] != ' ')
		w--;
	size_t rl = w;
	while (rl && s[rl - 1] == ' ')
		rl--;
	if (!col_name(t->cols[i], sizeof(t->cols[0]), s + w, left - w) ||
	    !col_name(t->cols2[i], sizeof(t->cols2[0]), sl + 1, n - (size_t)(sl + 1 - s)) ||
	    rl >= sizeof(t->run[0]))
		return false;
	memcpy(t->run[i], s, rl);
	t->run[i][rl] = '\0';
	t->pair[i] = true;
	return true;
}

bool gw__pl_table_header(struct gw_pl_table *t, const char *s, size_t n, bool md)
{
	const char *c[GW_PL_TABLE_COLS + 1];
	size_t cl[GW_PL_TABLE_COLS + 1];
	/* most lines are no header: long, or a name: value / name=value line */
	if (n > 512 || memchr(s, ':', n) || memchr(s, '=', n))
		return false;
	size_t k = gw__pl_cells(s, n, md, c, cl);
	if (k < 2 || k > GW_PL_TABLE_COLS)
		return false;
	bool step = false, signal = false;
	memset(t->pair, 0, sizeof(t->pair));
	for (size_t i = 0; i < k; i++) {
		if (!cl[i] || gw__pl_is_num(c[i], cl[i]) || !isalpha((unsigned char)c[i][0]))
			return false;
		t->run[i][0] = '\0';
		if (md && i && pair_col(t, i, c[i], cl[i])) {
			signal |= signal_col(t->cols[i]) || signal_col(t->cols2[i]);
			continue;
		}
		if (!col_name(t->cols[i], sizeof(t->cols[0]), c[i], cl[i]))
			return false;
		step |= gw__pl_step_rank(t->cols[i]) >= 0 || gw__pl_epoch_name(t->cols[i]);
		signal |= signal_col(t->cols[i]);
	}
	t->first_step = false;
	if (!step && md && !signal_col(t->cols[0])) {
		step = t->first_step = true;   /* "| block | loss |": the first column */
		snprintf(t->cols[0], sizeof(t->cols[0]), "step");
	}
	if (!step || !signal)
		return false;
	t->on = true;
	t->md = md;
	t->ncols = k;
	return true;
}

/* Add the pair (name, v) to the parse of run `run` among out[0..*nout),
 * a new parse when the run has none yet. */
static bool add(struct gw_pl_parse *out, const char **runs, size_t *nout, const char *run,
                const char *name, double v)
{
	size_t g = 0;
	while (g < *nout && strcmp(runs[g], run))
		g++;
	if (g == *nout) {
		if (g == GW_PL_TABLE_RUNS)
			return false;
		memset(&out[g], 0, sizeof(out[g]));
		out[g].lead = out[g].lead_total = NAN;
		runs[g] = run;
		(*nout)++;
	}
	if (out[g].n == GW_PL_PAIRS)
		return false;
	out[g].p[out[g].n++] = (struct gw_pl_pair){name, v, NAN, false};
	return true;
}

int gw__pl_table_row(const struct gw_pl_table *t, const char *s, size_t n,
                     struct gw_pl_parse out[GW_PL_TABLE_RUNS], const char *runs[GW_PL_TABLE_RUNS])
{
	const char *c[GW_PL_TABLE_COLS + 1];
	size_t cl[GW_PL_TABLE_COLS + 1];
	size_t k = gw__pl_cells(s, n, t->md, c, cl), nout = 0;
	if (t->md && k && cl[0] && strspn(c[0], "-: ") >= cl[0])
		return -1;   /* the alignment row |---:|---| */
	if (k != t->ncols)
		return 0;
	int64_t whole;
	double v, v2;
	/* the columns of no run go with every run: gather them first */
	const char *shared = "";
	memset(&out[0], 0, sizeof(out[0]));
	out[0].lead = out[0].lead_total = NAN;
	runs[nout++] = shared;
	for (size_t i = 0; i < k; i++) {
		if (!cl[i])
			continue;
		if (t->pair[i]) {
			const char *sl = memchr(c[i], '/', cl[i]);
			size_t a = sl ? (size_t)(sl - c[i]) : 0;
			while (a && c[i][a - 1] == ' ')
				a--;
			size_t b = sl ? (size_t)(sl + 1 - c[i]) : 0;
			while (b < cl[i] && c[i][b] == ' ')
				b++;
			if (!sl || gw__rd_num_grouped(c[i], a, &v) != a ||
			    gw__rd_num_grouped(c[i] + b, cl[i] - b, &v2) != cl[i] - b)
				return 0;
			if (!add(out, runs, &nout, t->run[i], t->cols[i], v) ||
			    !add(out, runs, &nout, t->run[i], t->cols2[i], v2))
				return 0;
			continue;
		}
		if (gw__rd_num_grouped(c[i], cl[i], &v) != cl[i] ||
		    (i == 0 && t->first_step && !gw__rd_whole(v, &whole)))
			return 0;
		if (!add(out, runs, &nout, shared, t->cols[i], v))
			return 0;
	}
	if (nout == 1)
		return 1;   /* one run: the shared columns are the point */
	/* each run's point gets the shared columns (the step) too */
	for (size_t g = 1; g < nout; g++)
		for (size_t j = 0; j < out[0].n && out[g].n < GW_PL_PAIRS; j++)
			out[g].p[out[g].n++] = out[0].p[j];
	for (size_t g = 1; g < nout; g++) {
		out[g - 1] = out[g];
		runs[g - 1] = runs[g];
	}
	return (int)nout - 1;
}
