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

#endif
