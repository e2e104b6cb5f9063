/*
 * What the parts of the CSV readers share (rd_csv.c: the libcsv plumbing,
 * the header and the rows of the three layouts; rd_csv_sniff.c: telling
 * the layouts apart from the first lines).  Internal to readers/.
 */
#ifndef GW_RD_CSV_H
#define GW_RD_CSV_H

#include "reader_impl.h"

#include <csv.h>

#define ROW_MAX (16u * 1024 * 1024)   /* bytes of one row */
#define COLS_MAX 65536

enum col_kind {
	COL_SKIP,     /* __MIN/__MAX, a W&B column naming no run */
	COL_STEP,     /* the step (Lightning `step`, W&B first column) */
	COL_RUNSTEP,  /* W&B `<run> - _step` */
	COL_VALUE,
};

struct col {
	enum col_kind kind;
	const char *name;       /* metric name (after "<run> - " for W&B) */
	size_t len;
	char *head;             /* the whole header cell, for messages */
	size_t run;             /* W&B: index into runs */
};

struct run {
	char *name;
	size_t len;
	size_t stepcol;         /* its _step column, or SIZE_MAX */
	size_t first, n;        /* its value columns: order[first..first+n) */
};

struct csvst {
	struct gw_reader *r;
	bool wandb;
	bool plain;             /* the csv layout (else Lightning's, unless wandb) */
	struct csv_parser p;
	bool header_done;
	bool failed;            /* the header was unusable: ignore the rest */
	int err;                /* -ENOMEM from a callback */

	struct col *cols;
	size_t ncols;
	size_t stepcol;
	size_t losscol;         /* the loss of a table whose columns name no
	                           loss alias (rd_csv.c pick_loss), or SIZE_MAX */
	struct run *runs;
	size_t nruns, capruns;
	size_t *order;          /* value columns grouped by run */

	/* the row being read */
	char *buf;              /* its cells, each NUL-terminated */
	size_t len, cap;
	size_t *cell;           /* offset of each cell in buf */
	size_t ncell, capcell;
	bool in_row, row_too_long;
	uint64_t row_line;      /* line the row started on */
	uint64_t line;          /* line being fed */
	uint64_t start_line;    /* where a row starting now would start */
	bool odd_quotes;        /* inside a quoted field across lines */
	bool row_ended;         /* a row ended in the line being fed */
};

/* The rank of a step column name among the csv layout's step names
 * (step, global_step, _step, iteration, iter, num_updates, update, batch,
 * epoch: best first, any case), or -1. */
int gw__csv_step_rank(const char *name);

/* rd_csv_rows.c: the cell i of the row being read ("" past its end); a
 * row as the layout's points (0 or a sink's negative errno); the loss
 * column of a table that names no loss alias (st->losscol). */
const char *gw__csv_cell_at(const struct csvst *st, size_t i);
int gw__csv_row_lightning(struct csvst *st);
int gw__csv_row_wandb(struct csvst *st);
int gw__csv_row_plain(struct csvst *st);
void gw__csv_pick_loss(struct csvst *st);

/* The sniffers of the three layouts (reader.h's sniff()). */
int gw__csv_sniff_lightning(const char *head, size_t n, bool all);
int gw__csv_sniff_wandb(const char *head, size_t n, bool all);
int gw__csv_sniff_plain(const char *head, size_t n, bool all);

#endif
