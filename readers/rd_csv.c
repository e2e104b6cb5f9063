/*
 * rd_csv: metrics tables in CSV, read with libcsv (RFC 4180 quoting, CRLF
 * or LF, a last row without a newline).  Three layouts, told apart by the
 * header row:
 *
 *   lightning_csv  PyTorch Lightning CSVLogger's metrics.csv: one column
 *                  per logged name plus `step` (and usually `epoch`), in
 *                  sorted or insertion order.  Rows are sparse: a training
 *                  row, a validation row and an epoch row fill different
 *                  columns.  Every row is a point at its `step`; the named
 *                  numbers map to roles through the alias table, so a row
 *                  that fills no role column (validation, epoch
 *                  aggregates) is skipped.
 *   wandb_csv      a W&B panel export: `Step,<run> - <metric>,...`, each
 *                  metric optionally followed by `__MIN` / `__MAX` columns
 *                  (dropped), every field quoted or none.  Several runs per
 *                  file: each row gives one point per run that has a value
 *                  in it, named after the run (the header text before the
 *                  last " - ").  The step is the first column, or the run's
 *                  own `<run> - _step` column when the export has one.
 *
 *   csv            any other metrics table (Keras' CSVLogger, a script's own
 *                  logger): a header of names with a step column, the
 *                  first of these names found (any case): step,
 *                  global_step, _step, iteration, iter, num_updates,
 *                  update, batch, epoch (Keras logs per epoch: its steps
 *                  are epochs), and a column whose name holds "loss" or
 *                  "norm".  Rows read as Lightning's.  Such files are
 *                  appended row by row (CSVLogger flushes each epoch), so
 *                  this layout is followed while it grows.
 *
 * csv tables may have text columns (a run's name, a phase, a date): their
 * cells are no error; a date is the row's ts, a phase that says evaluation
 * skips the row, text in a role's column is reported (row_plain).  A
 * table whose columns name no loss alias but several losses ("loss_pr",
 * "loss_ce") has its loss picked by name (pick_loss).
 *
 * A row that repeats the header (a job started again appends its header)
 * is skipped.  Cells "NA", "N/A", "None" and "null" (pandas and Keras write them for a
 * missing value) are empty.  The framework hands over lines (line numbers, CRLF, the last line); each
 * goes to libcsv with its '\n' put back, so a quoted field may span lines.
 * A point's line is the line its row starts on.  Both files are rewritten
 * whole by their writers, so neither is read while it grows.
 *
 * Errors: a cell that is not a number, a bad step or a row with more cells
 * than the header is reported with its line and column and the row (for
 * W&B: that run's point) is skipped.  A header without a `step` column
 * (Lightning) ends the input.  Memory: the header, one row, and libcsv's
 * field buffer (a row over ROW_MAX bytes is dropped and reported).  The
 * sniffers are rd_csv_sniff.c's, the rows' reading rd_csv_rows.c's; what
 * the parts share, rd_csv.h.
 */
#include "rd_csv.h"
#include "buf.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the header ----------------------------------------------------------- */

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static bool ends_with(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);
	return n >= k && memcmp(s + n - k, suf, k) == 0;
}

/* The run named s[0..n), added if new; SIZE_MAX on allocation failure. */
static size_t run_index(struct csvst *st, const char *s, size_t n)
{
	for (size_t i = 0; i < st->nruns; i++)
		if (st->runs[i].len == n && memcmp(st->runs[i].name, s, n) == 0)
			return i;
	if (gw_grow((void **)&st->runs, &st->capruns, st->nruns + 1, sizeof(*st->runs)) < 0)
		return SIZE_MAX;
	struct run *ru = &st->runs[st->nruns];
	*ru = (struct run){.name = dup_n(s, n), .len = n, .stepcol = SIZE_MAX};
	if (!ru->name)
		return SIZE_MAX;
	return st->nruns++;
}

static int header_wandb(struct csvst *st)
{
	for (size_t i = 0; i < st->ncols; i++) {
		struct col *c = &st->cols[i];
		if (i == 0) {
			c->kind = COL_STEP;
			continue;
		}
		const char *h = c->head, *sep = NULL;
		for (const char *q = strstr(h, " - "); q; q = strstr(q + 1, " - "))
			sep = q;
		size_t hl = strlen(h);
		if (!sep || ends_with(h, hl, "__MIN") || ends_with(h, hl, "__MAX")) {
			c->kind = COL_SKIP;
			continue;
		}
		c->run = run_index(st, h, (size_t)(sep - h));
		if (c->run == SIZE_MAX)
			return -ENOMEM;
		c->name = sep + 3;
		c->len = hl - (size_t)(sep + 3 - h);
		if (c->len == 5 && memcmp(c->name, "_step", 5) == 0) {
			c->kind = COL_RUNSTEP;
			st->runs[c->run].stepcol = i;
		} else {
			c->kind = COL_VALUE;
			st->runs[c->run].n++;
		}
	}
	/* value columns grouped by run, in header order within a run */
	st->order = malloc((st->ncols ? st->ncols : 1) * sizeof(*st->order));
	if (!st->order)
		return -ENOMEM;
	size_t at = 0;
	for (size_t k = 0; k < st->nruns; k++) {
		st->runs[k].first = at;
		for (size_t i = 0; i < st->ncols; i++)
			if (st->cols[i].kind == COL_VALUE && st->cols[i].run == k)
				st->order[at++] = i;
	}
	return 0;
}

static int header_lightning(struct csvst *st)
{
	st->stepcol = SIZE_MAX;
	int best = -1;
	for (size_t i = 0; st->plain && i < st->ncols; i++) {
		int k = gw__csv_step_rank(st->cols[i].head);
		if (k >= 0 && (best < 0 || k < best)) {
			best = k;
			st->stepcol = i;
		}
	}
	for (size_t i = 0; i < st->ncols; i++) {
		struct col *c = &st->cols[i];
		if (st->plain ? i == st->stepcol
		              : strcmp(c->head, "step") == 0 && st->stepcol == SIZE_MAX) {
			c->kind = COL_STEP;
			st->stepcol = i;
		} else {
			c->kind = COL_VALUE;
			c->name = c->head;
			c->len = strlen(c->head);
		}
	}
	if (st->stepcol == SIZE_MAX) {
		st->failed = true;
		if (st->plain)
			return gw__rd_fail(st->r, "line %" PRIu64 ": the header has no step column "
			                   "(step, global_step, _step, iteration, iter, num_updates, "
			                   "update, batch or epoch)", st->row_line);
		return gw__rd_fail(st->r, "line %" PRIu64 ": the header has no 'step' column "
		                   "(not a Lightning metrics.csv)", st->row_line);
	}
	return 0;
}


static int on_header(struct csvst *st)
{
	st->header_done = true;
	if (st->ncell > COLS_MAX) {
		st->failed = true;
		return gw__rd_fail(st->r, "line %" PRIu64 ": the header has %zu columns (at most %d)",
		                   st->row_line, st->ncell, COLS_MAX);
	}
	st->cols = calloc(st->ncell ? st->ncell : 1, sizeof(*st->cols));
	if (!st->cols)
		return -ENOMEM;
	st->ncols = st->ncell;
	for (size_t i = 0; i < st->ncols; i++) {
		const char *h = st->buf + st->cell[i];
		if (i == 0 && strncmp(h, "\xef\xbb\xbf", 3) == 0)
			h += 3; /* a UTF-8 byte-order mark */
		if (!(st->cols[i].head = strdup(h)))
			return -ENOMEM;
	}
	st->stepcol = 0;
	int rc = st->wandb ? header_wandb(st) : header_lightning(st);
	if (!rc && !st->wandb)
		gw__csv_pick_loss(st);
	return rc;
}

/* The header again (a job started again appends its header to the file):
 * not a row. */
static bool repeated_header(const struct csvst *st)
{
	for (size_t i = 0; i < st->ncell; i++) {
		const char *h = st->cols[i].head, *c = gw__csv_cell_at(st, i);
		if (i == 0 && strncmp(c, "\xef\xbb\xbf", 3) == 0)
			c += 3;
		if (strcmp(h, c) != 0)
			return false;
	}
	return true;
}

static int on_row(struct csvst *st)
{
	if (st->row_too_long) {
		gw__rd_error(st->r, st->row_line, "line_too_long: a row over %u bytes; skipped",
		             ROW_MAX);
		return 0;
	}
	if (!st->header_done)
		return on_header(st);
	if (st->failed)
		return 0;
	if (st->ncell == st->ncols && repeated_header(st))
		return 0;
	if (st->ncell > st->ncols) {
		gw__rd_error(st->r, st->row_line,
		             "bad_row: %zu cells, but the header has %zu columns; skipped", st->ncell,
		             st->ncols);
		return 0;
	}
	return st->wandb ? gw__csv_row_wandb(st) : st->plain ? gw__csv_row_plain(st) : gw__csv_row_lightning(st);
}

/* libcsv: a field ended. */
static void cb_field(void *s, size_t n, void *data)
{
	struct csvst *st = data;
	if (!st->in_row) {
		st->in_row = true;
		st->row_too_long = false;
		st->row_line = st->start_line;
		st->len = 0;
		st->ncell = 0;
	}
	if (st->err || st->row_too_long)
		return;
	if (st->len + n + 1 > ROW_MAX) {
		st->row_too_long = true;
		return;
	}
	if (gw_grow((void **)&st->cell, &st->capcell, st->ncell + 1, sizeof(*st->cell)) < 0 ||
	    gw_grow((void **)&st->buf, &st->cap, st->len + n + 1, 1) < 0) {
		st->err = -ENOMEM;
		return;
	}
	st->cell[st->ncell++] = st->len;
	if (n)
		memcpy(st->buf + st->len, s, n);
	st->len += n;
	st->buf[st->len++] = '\0';
}

/* libcsv: a row ended. */
static void cb_row(int c, void *data)
{
	struct csvst *st = data;
	if (!st->in_row)
		return;
	st->in_row = false;
	st->row_ended = true;
	if (!st->err) {
		int rc = on_row(st);
		if (rc < 0)
			st->err = rc;
	}
}

static int parse(struct csvst *st, const char *s, size_t n)
{
	if (csv_parse(&st->p, s, n, cb_field, cb_row, st) != n && !st->err)
		st->err = csv_error(&st->p) == CSV_ENOMEM ? -ENOMEM : -EPROTO;
	return st->err;
}

static int line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct csvst *st = state;
	if (st->failed)
		return 0;
	st->line = lineno;
	if (!st->odd_quotes)
		st->start_line = lineno;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '"')
			st->odd_quotes = !st->odd_quotes;
	int rc = parse(st, s, n);
	if (!rc)
		rc = parse(st, "\n", 1);
	if (st->row_ended && !st->in_row)
		st->odd_quotes = false; /* a stray quote in an unquoted cell: resync */
	st->row_ended = false;
	if (!rc && st->p.entry_pos > ROW_MAX) {
		/* a quoted field that never ends: start afresh on the next line */
		gw__rd_error(r, st->start_line, "line_too_long: a quoted field over %u bytes; skipped",
		             ROW_MAX);
		csv_free(&st->p);
		csv_init(&st->p, CSV_APPEND_NULL);
		st->in_row = false;
		st->odd_quotes = false;
	}
	return rc;
}

static int finish(struct gw_reader *r, void *state)
{
	struct csvst *st = state;
	if (st->failed)
		return 0;
	if (csv_fini(&st->p, cb_field, cb_row, st) != 0 && !st->err)
		st->err = -EPROTO;
	if (!st->err && !st->header_done)
		return gw__rd_fail(r, "no header row");
	return st->err;
}

static int init_common(struct gw_reader *r, struct csvst *st, bool wandb)
{
	st->r = r;
	st->wandb = wandb;
	st->plain = false;
	st->losscol = SIZE_MAX;
	if (csv_init(&st->p, CSV_APPEND_NULL) != 0)
		return -ENOMEM;
	return 0;
}

static int init_lightning(struct gw_reader *r, void *state)
{
	return init_common(r, state, false);
}

static int init_wandb(struct gw_reader *r, void *state)
{
	return init_common(r, state, true);
}

static int init_plain(struct gw_reader *r, void *state)
{
	struct csvst *st = state;
	int rc = init_common(r, st, false);
	st->plain = true;
	return rc;
}

static void deinit(void *state)
{
	struct csvst *st = state;
	csv_free(&st->p);
	for (size_t i = 0; i < st->ncols; i++)
		free(st->cols[i].head);
	free(st->cols);
	for (size_t i = 0; i < st->nruns; i++)
		free(st->runs[i].name);
	free(st->runs);
	free(st->order);
	free(st->buf);
	free(st->cell);
}

const struct gw_reader_format gw_rd_lightning_csv = {
	.name = "lightning_csv",
	.describe = "PyTorch Lightning CSVLogger metrics.csv (sparse rows, step column)",
	.flags = 0,
	.sniff = gw__csv_sniff_lightning,
	.state_size = sizeof(struct csvst),
	.init = init_lightning,
	.line = line,
	.finish = finish,
	.deinit = deinit,
};

const struct gw_reader_format gw_rd_wandb_csv = {
	.name = "wandb_csv",
	.describe = "W&B panel CSV export (Step,<run> - <metric>; several runs; __MIN/__MAX dropped)",
	.flags = 0,
	.sniff = gw__csv_sniff_wandb,
	.state_size = sizeof(struct csvst),
	.init = init_wandb,
	.line = line,
	.finish = finish,
	.deinit = deinit,
};

const struct gw_reader_format gw_rd_csv = {
	.name = "csv",
	.describe = "any metrics CSV with a step/iteration/epoch column and loss columns (Keras CSVLogger, ...)",
	.flags = GW_RDF_STREAM,
	.sniff = gw__csv_sniff_plain,
	.state_size = sizeof(struct csvst),
	.init = init_plain,
	.line = line,
	.finish = finish,
	.deinit = deinit,
};
