/*
 * Telling the CSV layouts apart (rd_csv.h): each sniffer reads the header
 * row and the first data row of the head, with a small cell splitter of
 * its own (quotes removed, "" read as one quote), as libcsv is for the
 * rows that are read.  Lightning: a header of names with a `step` column;
 * W&B: "<run> - <metric>" cells after the x axis; csv: a step column of
 * another name and a loss or norm column.  Each wants a first row of as
 * many cells with a number in the step column.
 */
#include "rd_csv.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* csv: step column names, best first */
static const char *const step_names[] = {
	"step", "global_step", "_step", "iteration", "iter", "num_updates", "update", "batch", "epoch",
};

/* The next line of the head at *p (gw__rd_sniff_line): [*from, *to) as
 * offsets into head, without a byte-order mark on the first line.  Returns
 * 1, or when there is none: -1 if the input ended there, 0 while it may
 * still come. */
static int head_line(const char *head, size_t n, bool all, const char **p, size_t *from,
                     size_t *to)
{
	const char *line;
	size_t len;
	if (!n || !gw__rd_sniff_line(p, head + n, all, &line, &len))
		return all ? -1 : 0;
	*from = (size_t)(line - head);
	*to = *from + len;
	if (*from == 0 && len >= 3 && memcmp(head, "\xef\xbb\xbf", 3) == 0)
		*from = 3;
	return 1;
}

/* The next cell of s[*i..end) into out (quotes removed, "" read as one
 * quote, cut to outlen - 1 bytes); false after the last one. */
static bool next_cell(const char *s, size_t *i, size_t end, bool *more, char *out, size_t outlen)
{
	if (!*more)
		return false;
	size_t o = 0, k = *i;
	bool q = k < end && s[k] == '"';
	if (q)
		k++;
	for (; k < end; k++) {
		char c = s[k];
		if (q && c == '"') {
			if (k + 1 < end && s[k + 1] == '"') {
				k++;
			} else {
				q = false;
				continue;
			}
		} else if (!q && c == ',') {
			break;
		}
		if (o + 1 < outlen)
			out[o++] = c;
	}
	out[o] = '\0';
	*more = k < end;
	*i = k + 1;
	return true;
}

static bool is_number(const char *s)
{
	char *e;
	if (!*s)
		return false;
	strtod(s, &e);
	return *e == '\0';
}

/* The first data row, after the header (which ended at p): 1 when it
 * has `ncells` cells and a number in cell `numcol` (and, when `numbers`,
 * nothing but numbers and empty cells), 2 when there is none (the input
 * is a header only), 0 while it is not complete, -1 otherwise. */
static int first_row(const char *head, size_t n, bool all, const char *p, int ncells, int numcol,
                     bool numbers)
{
	size_t i, end;
	bool more = true, text = false;
	char cell[128];
	int k = head_line(head, n, all, &p, &i, &end);
	if (k <= 0)
		return k < 0 ? 2 : 0;
	int nc = 0;
	bool num = false;
	for (; next_cell(head, &i, end, &more, cell, sizeof(cell)); nc++) {
		if (nc == numcol)
			num = is_number(cell);
		text |= cell[0] && !is_number(cell);
	}
	return nc == ncells && num && !(numbers && text) ? 1 : -1;
}

/* Lightning: a header of names (no numbers, no " - ") with a `step`
 * column, and a first row of as many cells with a number there. */
int gw__csv_sniff_lightning(const char *head, size_t n, bool all)
{
	size_t i, end;
	const char *next = head;
	bool more = true, epoch = false;
	char cell[128];
	int nc = 0, step = -1;
	if (head_line(head, n, all, &next, &i, &end) <= 0)
		return 0;
	for (; next_cell(head, &i, end, &more, cell, sizeof(cell)); nc++) {
		if (!cell[0] || is_number(cell) || strstr(cell, " - ") || strchr(cell, '{') ||
		    strchr(cell, ':'))
			return 0;
		if (strcmp(cell, "step") == 0 && step < 0)
			step = nc;
		epoch |= strcmp(cell, "epoch") == 0;
	}
	if (nc < 2 || step < 0)
		return 0;
	/* Lightning writes numbers only: a text cell makes it a plain csv */
	switch (first_row(head, n, all, next, nc, step, true)) {
	case 1:
		return epoch ? 90 : 70;
	case 2:
		return 40;
	default:
		return 0;
	}
}

/* W&B: a header whose first cell names the x axis and every other cell is
 * "<run> - <metric>", and a first row of as many cells, a number first. */
int gw__csv_sniff_wandb(const char *head, size_t n, bool all)
{
	size_t i, end;
	const char *next = head;
	bool more = true;
	char cell[512], first[128];
	int nc = 1;
	if (head_line(head, n, all, &next, &i, &end) <= 0 ||
	    !next_cell(head, &i, end, &more, first, sizeof(first)) || !first[0] || is_number(first))
		return 0;
	for (; next_cell(head, &i, end, &more, cell, sizeof(cell)); nc++)
		if (!strstr(cell, " - "))
			return 0;
	if (nc < 2)
		return 0;
	switch (first_row(head, n, all, next, nc, 0, false)) {
	case 1:
		return strcmp(first, "Step") == 0 ? 95 : 80;
	case 2:
		return 40;
	default:
		return 0;
	}
}

/* The rank of a step column name in step_names, or -1. */
int gw__csv_step_rank(const char *name)
{
	for (size_t i = 0; i < GW_ARRAY_SIZE(step_names); i++)
		if (strcasecmp(name, step_names[i]) == 0)
			return (int)i;
	return -1;
}

/* csv: names, a step column (step_names) and a loss or norm column. */
int gw__csv_sniff_plain(const char *head, size_t n, bool all)
{
	size_t i, end;
	const char *next = head;
	bool more = true, role = false;
	char cell[128];
	int nc = 0, step = -1, best = -1;
	if (head_line(head, n, all, &next, &i, &end) <= 0)
		return 0;
	for (; next_cell(head, &i, end, &more, cell, sizeof(cell)); nc++) {
		if (!cell[0] || is_number(cell) || strstr(cell, " - ") || strchr(cell, '{'))
			return 0;
		int k = gw__csv_step_rank(cell);
		if (k >= 0 && (best < 0 || k < best)) {
			best = k;
			step = nc;
		}
		for (char *c = cell; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		role |= strstr(cell, "loss") || strstr(cell, "norm");
	}
	if (nc < 2 || step < 0 || !role)
		return 0;
	switch (first_row(head, n, all, next, nc, step, false)) {
	case 1:
		return 60;
	case 2:
		return 30;
	default:
		return 0;
	}
}
