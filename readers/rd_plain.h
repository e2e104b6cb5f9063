/*
 * What the parts of the text format share (rd_plain.c: the format, its
 * steps, tables and sniffer; rd_plain_parse.c: a line read as name/value
 * pairs).  Internal to readers/.
 */
#ifndef GW_RD_PLAIN_H
#define GW_RD_PLAIN_H

#include "reader_impl.h"

#define GW_PL_PAIRS 32
#define GW_PL_NAMEBUF 1024

struct gw_pl_pair {
	const char *name;  /* in the parse's names buffer, lower case, '_' for spaces */
	double v, total;   /* total: after '/', NaN if none */
	bool words;        /* the name was several words ("train loss") */
};

struct gw_pl_parse {
	struct gw_pl_pair p[GW_PL_PAIRS];
	size_t n;
	char names[GW_PL_NAMEBUF];
	size_t used;
	bool eval;          /* the first word says evaluation */
	double lead, lead_total;   /* the first unnamed "B/T" (a bar's; NaN: none) */
	int64_t head[2];    /* whole numbers before any word ("333 154 Loss=nan") */
	int nhead;
	size_t unnamed;     /* other numbers without a name */
};

/* The name/value pairs of the line s[0..n) into *p (rd_plain_parse.c):
 * the words before a number (at most three; "is" left out) are its name;
 * a name ends at a separator ('|', ',', ';', ' - ', a bracket or a
 * parenthesis, but "Epoch [1/10]" and "[Loss] 5.1" keep theirs) or a
 * number; "N/M" is a number with a total, "45%" gives NAME_pct, "401ms"
 * NAME_ms; a clock time is no number; where a value is due (after ':' or
 * '='), a word that starts with nan or inf is one ("nanxxx" as pasted). */
void gw__pl_parse(const char *s, size_t n, struct gw_pl_parse *p);

/* The rank of a step name among the text format's (iteration, iter, it,
 * step, global_step, update(s), num_updates, batch, steps, then any
 * *_step), lower first; -1 if it is none.  An epoch name: epoch, *_epoch. */
int gw__pl_step_rank(const char *name);
bool gw__pl_epoch_name(const char *name);

/* A line of exactly a whole step and a number ("1200: 2.7431", "1200
 * 2.7431", "1200,2.7431"). */
bool gw__pl_two_numbers(const char *s, size_t n, int64_t *step, double *v);

/* ---- tables (rd_plain_table.c) ------------------------------------------ */

#define GW_PL_TABLE_COLS 32
#define GW_PL_TABLE_RUNS 8

/* A table being read: its header's names.  A column of runs set side by
 * side ("M4 loss / gnorm") is a pair: run[i], cols[i] and cols2[i]. */
struct gw_pl_table {
	bool on, md, first_step;  /* first_step: column 0 is the step by place */
	size_t ncols;
	char cols[GW_PL_TABLE_COLS][48];
	char cols2[GW_PL_TABLE_COLS][24];
	char run[GW_PL_TABLE_COLS][24];
	bool pair[GW_PL_TABLE_COLS];
};

/* The cells of a table line: a Markdown row when md, else words split on
 * spaces, a "#" comment left out.  At most GW_PL_TABLE_COLS + 1. */
size_t gw__pl_cells(const char *s, size_t n, bool md, const char **c, size_t *cl);
bool gw__pl_is_num(const char *s, size_t n);

/* Is s[0..n) a table's header (see rd_plain_table.c)?  If so, *t is set
 * up to read its rows. */
bool gw__pl_table_header(struct gw_pl_table *t, const char *s, size_t n, bool md);

/* A row of the table: the count of points it holds, each as a parse in
 * out[] of the run runs[] names ("": the reader's default run); 0 when it
 * is no row (the table ended); -1 for Markdown's alignment row.  The
 * parses' names point into *t. */
int gw__pl_table_row(const struct gw_pl_table *t, const char *s, size_t n,
                     struct gw_pl_parse out[GW_PL_TABLE_RUNS], const char *runs[GW_PL_TABLE_RUNS]);

#endif
