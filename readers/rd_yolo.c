/*
 * ultralytics: the training table YOLOv5 and YOLOv8 (Ultralytics) print,
 * one row per epoch under a header that names the columns, the row
 * redrawn with '\r' by its progress bar while the epoch runs.
 *
 *         Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
 *         1/100      2.61G      1.234      2.345      1.456         32        640: 100%|####| 118/118 [...]
 *                    Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|...
 *                      all        128        929      0.641      0.561      0.612      0.447
 *        Epoch   gpu_mem       box       obj       cls     total    labels  img_size      (YOLOv5)
 *
 * The header (first word "Epoch", a GPU_mem column) gives the columns'
 * names; a row ("E/N" first, then a value per column, the last one
 * glued to the bar by ':') is a point at step E, the epoch as printed
 * (YOLOv8 counts from 1, YOLOv5 from 0).  The losses shown are the
 * epoch's running means, so the point is the last redraw of each epoch:
 * a row is held until a row of another epoch or any other line (the
 * validation lines, the next header) comes, or the input ends.  The loss
 * the detectors judge is the sum of the loss columns (every column but
 * the epoch, GPU_mem, the instance count and the image size), or the
 * "total" column where the table has one; each column is kept as an extra
 * under its name in lower case ("box_loss", "obj"; a classifier's
 * single "loss" column is the loss itself), GPU_mem as gpu_mem_gb.  A
 * loss column that is not a number is reported as bad_value and the row
 * skipped.  The validation rows (Class / all) are no training points;
 * they end the held row.  An epoch that comes again
 * after other lines (a job resumed inside it runs it again) is a point
 * again: the engine sees the step go back.
 */
#include "reader_impl.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#define YL_COLS 16
#define YL_NAME 24

enum yl_kind { YL_LOSS, YL_TOTAL, YL_MEM, YL_OTHER };

struct yl {
	size_t ncols;                       /* columns after "Epoch" */
	char name[YL_COLS][YL_NAME];
	enum yl_kind kind[YL_COLS];
	/* the row held: the last redraw of its epoch */
	bool held;
	int64_t step, total;
	double v[YL_COLS];
	uint64_t line;
	struct gw_rd_linectx ctx;
	const char *line_start;             /* the line being read (columns count from it) */
};

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

/* The next whitespace-separated word of s[*i..n): start and length. */
static size_t word(const char *s, size_t n, size_t *i, const char **w)
{
	while (*i < n && sp(s[*i]))
		(*i)++;
	*w = s + *i;
	size_t a = *i;
	while (*i < n && !sp(s[*i]))
		(*i)++;
	return *i - a;
}

static bool word_is(const char *w, size_t k, const char *lit)
{
	return k == strlen(lit) && !strncasecmp(w, lit, k);
}

/* Is s[0..n) the table's header?  If so (and t is not NULL) t gets the
 * columns. */
static bool header(const char *s, size_t n, struct yl *t)
{
	size_t i = 0, k;
	const char *w;
	if (!(k = word(s, n, &i, &w)) || !word_is(w, k, "Epoch"))
		return false;
	size_t nc = 0;
	bool mem = false;
	char names[YL_COLS][YL_NAME];
	enum yl_kind kinds[YL_COLS];
	while ((k = word(s, n, &i, &w))) {
		if (nc == YL_COLS || k >= YL_NAME)
			return false;
		for (size_t j = 0; j < k; j++) {
			if (!isalnum((unsigned char)w[j]) && w[j] != '_' && w[j] != '.')
				return false;
			names[nc][j] = (char)tolower((unsigned char)w[j]);
		}
		names[nc][k] = '\0';
		if (!strcmp(names[nc], "gpu_mem"))
			kinds[nc] = YL_MEM, mem = true;
		else if (!strcmp(names[nc], "total"))
			kinds[nc] = YL_TOTAL;
		else if (!strcmp(names[nc], "instances") || !strcmp(names[nc], "labels") ||
		         !strcmp(names[nc], "targets") || !strcmp(names[nc], "size") ||
		         !strcmp(names[nc], "img_size"))
			kinds[nc] = YL_OTHER;
		else
			kinds[nc] = YL_LOSS;
		nc++;
	}
	if (!mem || nc < 3)
		return false;
	if (t) {
		t->ncols = nc;
		memcpy(t->name, names, sizeof(names));
		memcpy(t->kind, kinds, sizeof(kinds));
	}
	return true;
}

/* "E/N" at the start of s[0..n) (after spaces and a redraw's '\r'): the
 * epoch, the total and where the values begin; 0 if not. */
static size_t epoch_of(const char *s, size_t n, int64_t *e, int64_t *total)
{
	size_t i = 0, k;
	while (i < n && (sp(s[i]) || s[i] == '\r'))
		i++;
	if (!(k = gw__rd_int(s + i, n - i, e)) || (i += k) >= n || s[i++] != '/')
		return 0;
	if (!(k = gw__rd_int(s + i, n - i, total)) || (i += k) >= n || !sp(s[i]))
		return 0;
	return i;
}

static int flush(struct gw_reader *r, struct yl *t)
{
	if (!t->held)
		return 0;
	t->held = false;
	struct gw_rd_linectx now;
	gw__rd_line_save(r, &now);
	gw__rd_line_restore(r, &t->ctx);
	gw__rd_begin(r, NULL, 0, t->step);
	double sum = 0, total = NAN;
	bool has_total = false;
	for (size_t c = 0; c < t->ncols; c++) {
		if (t->kind[c] == YL_LOSS)
			sum += t->v[c];
		else if (t->kind[c] == YL_TOTAL)
			total = t->v[c], has_total = true;
	}
	/* the loss first: a column's name the alias table knows never takes its place */
	gw__rd_metric(r, "loss", 4, has_total ? total : sum);
	for (size_t c = 0; c < t->ncols; c++) {
		const char *nm = t->kind[c] == YL_MEM ? "gpu_mem_gb" : t->name[c];
		if (strcmp(nm, "loss") != 0)   /* a classifier's one loss column is the sum */
			gw__rd_metric(r, nm, strlen(nm), t->v[c]);
	}
	gw__rd_metric(r, "max_epochs", 10, (double)t->total);
	int rc = gw__rd_emit(r, t->line);
	gw__rd_line_restore(r, &now);
	return rc;
}

/* One redraw of a row: held as its epoch's last (a row of another epoch
 * hands the one held over first). */
static int segment(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct yl *t = state;
	int64_t e = 0, total = 0;
	size_t i = t->ncols ? epoch_of(s, n, &e, &total) : 0;
	if (!i)
		return 0;
	double v[YL_COLS];
	for (size_t c = 0; c < t->ncols; c++) {
		const char *w;
		size_t k = word(s, n, &i, &w);
		if (k && w[k - 1] == ':')    /* the last column, glued to the bar */
			k--;
		size_t u = k ? gw__rd_num(w, k, &v[c]) : 0;
		if (u && t->kind[c] == YL_MEM && u + 1 == k && (w[u] == 'G' || w[u] == 'M')) {
			if (w[u] == 'M')
				v[c] /= 1024;
		} else if (!u || u != k) {
			if (!k)
				return 0;   /* a redraw cut short */
			if (t->kind[c] == YL_LOSS || t->kind[c] == YL_TOTAL)
				gw__rd_error(r, lineno, "bad_value: field \"%s\" at column %zu: expected a number",
				             t->name[c], (size_t)(w - t->line_start) + 1);
			return 0;
		}
	}
	if (t->held && t->step != e) {
		int rc = flush(r, t);
		if (rc < 0)
			return rc;
	}
	t->held = true;
	t->step = e;
	t->total = total;
	memcpy(t->v, v, sizeof(v));
	t->line = lineno;
	gw__rd_line_save(r, &t->ctx);
	return 0;
}

static int yl_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	struct yl *t = state;
	int64_t e, total;
	if (t->ncols && epoch_of(s, n, &e, &total)) {
		t->line_start = s;
		return gw__rd_cr_segments(r, state, s, n, lineno, segment);
	}
	/* any other line ends the epoch's redraws */
	int rc = flush(r, t);
	if (rc < 0)
		return rc;
	header(s, n, t);
	return 0;
}

static int yl_finish(struct gw_reader *r, void *state)
{
	return flush(r, state);
}

static int yl_sniff(const char *h, size_t n, bool all)
{
	const char *p, *q = h;
	size_t len;
	if (!gw__rd_find(h, n, "_mem "))
		return 0;   /* no header's GPU_mem: not worth reading line by line */
	while (gw__rd_sniff_msg(&q, h + n, all, &p, &len))
		if (header(p, len, NULL))
			return 90;
	return 0;
}

const struct gw_reader_format gw_rd_yolo = {
	.name = "ultralytics",
	.describe = "Ultralytics YOLOv5/YOLOv8 training table (Epoch GPU_mem box_loss ... under it E/N rows)",
	.flags = GW_RDF_STREAM | GW_RDF_LABELS | GW_RDF_PREFIX,
	.sniff = yl_sniff,
	.state_size = sizeof(struct yl),
	.line = yl_line,
	.finish = yl_finish,
};
