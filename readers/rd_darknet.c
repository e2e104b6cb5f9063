/*
 * darknet: the line Darknet (pjreddie's and AlexeyAB's YOLOv2-v4) prints
 * after every training iteration of `darknet detector train`:
 *
 *   999: 0.000000, 0.000000 avg, 0.009960 rate, 4.797707 seconds, 63936 images
 *    70: -nan, -nan avg loss, 0.000000 rate, 332.178208 seconds, 4480 images, 717.177361 hours left
 *
 * (pjreddie's "avg", AlexeyAB's " N: ... avg loss, ..." with a leading
 * space and, in newer versions, the hours left).  The number before ':' is
 * the iteration: the step.  The first number after it is that iteration's
 * loss, the loss the detectors judge; the second, Darknet's running mean
 * of it, is kept as avg_loss; rate is the learning rate; seconds (the
 * iteration's time), images (seen so far) and hours_left are kept as
 * extras.  A NaN prints as "nan" or "-nan".  The lines between (Region /
 * YOLO per-layer IoU lines, "Loaded: ... seconds", the terminal title's
 * "ESC]2;N/M: loss=..." ) are no points.
 *
 * The line is read whole: its " 70: " is the iteration, not an srun rank
 * label, so the format takes no labels or logger prefixes.
 */
#include "reader_impl.h"

#include <string.h>

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

static size_t skip_sp(const char *s, size_t n, size_t i)
{
	while (i < n && sp(s[i]))
		i++;
	return i;
}

/* Does s[i..n) start with the word `w` (then a space, a ',' or the end)? */
static size_t word_at(const char *s, size_t n, size_t i, const char *w)
{
	size_t k = strlen(w);
	if (n - i < k || memcmp(s + i, w, k) || (i + k < n && s[i + k] != ' ' && s[i + k] != ','))
		return 0;
	return k;
}

/* The parts of one iteration's line. */
struct dn_line {
	int64_t step;
	double loss, avg, rate, seconds, images, hours;
	bool has_seconds, has_images, has_hours;
};

/* Read s[0..n) as an iteration's line; false if it is not one. */
static bool parse(const char *s, size_t n, struct dn_line *o)
{
	while (n && (sp(s[n - 1]) || s[n - 1] == '\r'))
		n--;   /* a CRLF paste's '\r', trailing spaces */
	size_t i = skip_sp(s, n, 0), k;
	if (!(k = gw__rd_int(s + i, n - i, &o->step)) || (i += k) >= n || s[i++] != ':')
		return false;
	i = skip_sp(s, n, i);
	if (!(k = gw__rd_num(s + i, n - i, &o->loss)) || (i += k) >= n || s[i++] != ',')
		return false;
	i = skip_sp(s, n, i);
	if (!(k = gw__rd_num(s + i, n - i, &o->avg)))
		return false;
	i = skip_sp(s, n, i + k);
	if (!(k = word_at(s, n, i, "avg")))
		return false;
	i = skip_sp(s, n, i + k);
	if ((k = word_at(s, n, i, "loss")))
		i += k;
	o->has_seconds = o->has_images = o->has_hours = false;
	bool rate = false;
	/* ", NUMBER WORDS" parts: rate, seconds, images, hours left */
	while ((i = skip_sp(s, n, i)) < n && s[i] == ',') {
		i = skip_sp(s, n, i + 1);
		double v;
		if (!(k = gw__rd_num(s + i, n - i, &v)))
			return false;
		i = skip_sp(s, n, i + k);
		if ((k = word_at(s, n, i, "rate")))
			o->rate = v, rate = true;
		else if ((k = word_at(s, n, i, "seconds")))
			o->seconds = v, o->has_seconds = true;
		else if ((k = word_at(s, n, i, "images")))
			o->images = v, o->has_images = true;
		else if ((k = word_at(s, n, i, "hours")))
			o->hours = v, o->has_hours = true;
		else
			return false;
		i += k;
		while (i < n && s[i] != ',')
			i++;   /* "hours left" */
	}
	return rate && i >= n;
}

static int dn_line(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno)
{
	(void)state;
	struct dn_line d;
	if (!parse(s, n, &d))
		return 0;
	gw__rd_begin(r, NULL, 0, d.step);
	gw__rd_metric(r, "loss", 4, d.loss);
	gw__rd_metric(r, "lr", 2, d.rate);
	gw__rd_metric(r, "avg_loss", 8, d.avg);
	if (d.has_seconds)
		gw__rd_metric(r, "seconds", 7, d.seconds);
	if (d.has_images)
		gw__rd_metric(r, "images", 6, d.images);
	if (d.has_hours)
		gw__rd_metric(r, "hours_left", 10, d.hours);
	return gw__rd_emit(r, lineno);
}

static int dn_sniff(const char *h, size_t n, bool all)
{
	const char *p = h, *end = h + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl && !all)
			break;   /* an incomplete last line says nothing yet */
		const char *s = p;
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		p += len + 1;
		if (len && s[len - 1] == '\r')
			len--;
		struct dn_line d;
		if (!gw__rd_unquote(&s, &len) && parse(s, len, &d))
			return 90;
	}
	return 0;
}

const struct gw_reader_format gw_rd_darknet = {
	.name = "darknet",
	.describe = "Darknet YOLOv2-v4 training stdout (N: LOSS, AVG avg loss, LR rate, S seconds, "
	            "I images)",
	.flags = GW_RDF_STREAM,
	.sniff = dn_sniff,
	.line = dn_line,
};
