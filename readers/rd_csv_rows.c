/*
 * The rows of the CSV layouts (rd_csv.h): a cell as a number or a step,
 * and a row as points -- Lightning's (every cell a number), W&B's (one
 * point per run) and the plain csv's (text columns: a date is the row's
 * ts, a phase that says evaluation skips the row, text in a role's column
 * is reported) -- and the loss of a table whose columns name several
 * losses and no alias (gw__csv_pick_loss).  rd_csv.c holds the libcsv
 * plumbing and the header.
 */
#include "rd_csv.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A cell as a number: 0, 1 when empty, -1 when not a number. */
static int cell_number(const char *s, double *v)
{
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s || !strcmp(s, "NA") || !strcmp(s, "N/A") || !strcmp(s, "None") || !strcmp(s, "null"))
		return 1;
	char *e;
	*v = strtod(s, &e);
	while (*e == ' ' || *e == '\t')
		e++;
	return e == s || *e ? -1 : 0;
}

/* A cell as a step: 0, 1 when empty, -1 when not a whole number in range. */
static int cell_step(const char *s, int64_t *step)
{
	double v;
	int rc = cell_number(s, &v);
	if (rc)
		return rc;
	if (!(v >= 0 && v <= (double)GW_WIRE_STEP_MAX) || v != floor(v))
		return -1;
	*step = (int64_t)v;
	return 0;
}

/* A table whose columns name no loss alias but several losses
 * ("loss_pr", "loss_ce"): the loss the detectors judge is the column whose
 * name says it is the total ("total_loss", "loss_total"), else the first
 * loss column; every column is kept under its own name as well. */
void gw__csv_pick_loss(struct csvst *st)
{
	st->losscol = SIZE_MAX;
	for (size_t i = 0; i < st->ncols; i++)
		if (st->cols[i].kind == COL_VALUE &&
		    gw_alias_lookup(gw__rd_aliases(st->r), st->cols[i].head, st->cols[i].len, NULL) ==
		            GW_ROLE_LOSS)
			return;
	for (size_t i = 0; i < st->ncols; i++) {
		if (st->cols[i].kind != COL_VALUE || !gw__rd_loss_part(st->cols[i].head))
			continue;
		bool total = strcasestr(st->cols[i].head, "total") != NULL;
		if (st->losscol == SIZE_MAX || total)
			st->losscol = i;
		if (total)
			return;
	}
}

const char *gw__csv_cell_at(const struct csvst *st, size_t i)
{
	return i < st->ncell ? st->buf + st->cell[i] : "";
}

static void bad_cell(struct csvst *st, size_t i, const char *reason, const char *what)
{
	gw__rd_error(st->r, st->row_line, "%s: column \"%.80s\": \"%.40s\" is not %s; skipped",
	             reason, st->cols[i].head, gw__csv_cell_at(st, i), what);
}

static void no_step(struct csvst *st)
{
	gw__rd_error(st->r, st->row_line, "missing_step: column \"%.80s\" is empty; skipped",
	             st->cols[st->stepcol].head);
}

/* The row's step: true, or false when its cell is empty or no step (said
 * at the row's line). */
static bool row_step(struct csvst *st, int64_t *step)
{
	int k = cell_step(gw__csv_cell_at(st, st->stepcol), step);
	if (k < 0)
		bad_cell(st, st->stepcol, "bad_step", "a step (a whole number from 0)");
	else if (k > 0)
		no_step(st);
	return k == 0;
}

int gw__csv_row_lightning(struct csvst *st)
{
	int64_t step;
	int k;
	if (!row_step(st, &step))
		return 0;
	gw__rd_begin(st->r, NULL, 0, step);
	for (size_t i = 0; i < st->ncell; i++) {
		if (st->cols[i].kind != COL_VALUE)
			continue;
		double v;
		k = cell_number(gw__csv_cell_at(st, i), &v);
		if (k < 0) {
			bad_cell(st, i, "bad_value", "a number");
			return 0;
		}
		if (k == 0)
			gw__rd_metric(st->r, st->cols[i].name, st->cols[i].len, v);
		if (k == 0 && i == st->losscol)
			gw__rd_metric(st->r, "loss", 4, v);
	}
	return gw__rd_emit(st->r, st->row_line);
}

/* csv: every number of the row; a text cell is no error (a run name, a
 * phase, a date) but a date and time is the row's ts, a phase that says
 * evaluation ("val", "eval", "test") skips the row, and text in a role's
 * column is reported (the row's other numbers still count). */
int gw__csv_row_plain(struct csvst *st)
{
	int64_t step;
	int k;
	if (!row_step(st, &step))
		return 0;
	for (size_t i = 0; i < st->ncell; i++)
		if (st->cols[i].kind == COL_VALUE && gw__rd_eval_word(gw__csv_cell_at(st, i), strlen(gw__csv_cell_at(st, i))))
			return 0;
	gw__rd_begin(st->r, NULL, 0, step);
	for (size_t i = 0; i < st->ncell; i++) {
		if (st->cols[i].kind != COL_VALUE)
			continue;
		const char *c = gw__csv_cell_at(st, i);
		double v;
		k = cell_number(c, &v);
		if (k == 0) {
			gw__rd_metric(st->r, st->cols[i].name, st->cols[i].len, v);
			if (i == st->losscol)
				gw__rd_metric(st->r, "loss", 4, v);
		} else if (k < 0) {
			size_t cl = strlen(c);
			if (gw__rd_datetime(c, cl, &v) == cl)
				gw__rd_ts(st->r, v);
			else if (gw_alias_lookup(gw__rd_aliases(st->r), st->cols[i].name, st->cols[i].len,
			                         NULL) >= 0)
				bad_cell(st, i, "bad_value", "a number");
		}
	}
	return gw__rd_emit(st->r, st->row_line);
}

int gw__csv_row_wandb(struct csvst *st)
{
	int64_t xstep = 0;
	int xk = cell_step(gw__csv_cell_at(st, 0), &xstep);
	for (size_t ri = 0; ri < st->nruns; ri++) {
		const struct run *ru = &st->runs[ri];
		int64_t step = xstep;
		int sk = xk;
		size_t scol = 0;
		if (ru->stepcol != SIZE_MAX && gw__csv_cell_at(st, ru->stepcol)[0]) {
			scol = ru->stepcol;
			sk = cell_step(gw__csv_cell_at(st, scol), &step);
		}
		bool begun = false, bad = false;
		for (size_t j = 0; j < ru->n && !bad; j++) {
			size_t i = st->order[ru->first + j];
			double v;
			int k = cell_number(gw__csv_cell_at(st, i), &v);
			if (k > 0)
				continue;
			if (k < 0) {
				bad_cell(st, i, "bad_value", "a number");
				bad = true;
			} else if (sk) {
				if (sk < 0)
					bad_cell(st, scol, "bad_step", "a step (a whole number from 0)");
				else
					no_step(st);
				bad = true;
			} else {
				if (!begun)
					gw__rd_begin(st->r, ru->name, ru->len, step);
				begun = true;
				gw__rd_metric(st->r, st->cols[i].name, st->cols[i].len, v);
			}
		}
		int rc;
		if (begun && !bad && (rc = gw__rd_emit(st->r, st->row_line)) < 0)
			return rc;
	}
	return 0;
}
