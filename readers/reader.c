/*
 * The readers framework (see reader.h): sniffing, line splitting, the
 * consumed offset and the registry; the point builder of reader_impl.h and
 * run splitting are rd_point.c's.  Decompression is decompress.c, the text
 * helpers formats share rd_text.c, the formats themselves rd_*.c.
 *
 * How bytes flow: gw_reader_feed -> stage 1 (decompress.c: gzip/zstd by
 * magic bytes, or pass-through) -> stage 2 (until a format is chosen, the
 * decompressed bytes are kept in `head`, up to the size sniffed at next,
 * and once one is the rest of the chunk is read in place; sniffing happens
 * at fixed sizes, 256 bytes doubling to GW_READER_SNIFF_MAX, and at the
 * end of the input,
 * each time over exactly that many bytes, so the choice never depends on
 * how the input was cut into chunks) -> stage 3 (lib/lines.c for line
 * formats, the format's own feed for byte formats).
 *
 * A point is built in the reader itself, one at a time (rd_point.c); the
 * struct they share is reader_int.h's.
 */
#include "reader_int.h"

#include "buf.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SNIFF_FIRST 256       /* first sniff size; doubles up to GW_READER_SNIFF_MAX */
#define SNIFF_SURE 50         /* a score at least this high decides at once */

static int dc_out(void *data, const char *p, size_t n);

/* ---- registry ------------------------------------------------------------- */

extern const struct gw_reader_format gw_rd_ndjson, gw_rd_hf_state, gw_rd_swift, gw_rd_megatron,
	gw_rd_llmc, gw_rd_nanogpt, gw_rd_tfevents, gw_rd_wandb_csv, gw_rd_lightning_csv,
	gw_rd_fairseq, gw_rd_titan, gw_rd_composer, gw_rd_torchtune, gw_rd_yolo, gw_rd_tfod, gw_rd_sb3,
	gw_rd_darknet, gw_rd_csv, gw_rd_plain;

/* Best first when two are equally sure. */
const struct gw_reader_format *const gw_reader_formats[] = {
	&gw_rd_ndjson,
	&gw_rd_hf_state,
	&gw_rd_swift,
	&gw_rd_megatron,
	&gw_rd_llmc,
	&gw_rd_nanogpt,
	&gw_rd_tfevents,
	&gw_rd_wandb_csv,
	&gw_rd_lightning_csv,
	&gw_rd_fairseq,
	&gw_rd_titan,
	&gw_rd_composer,
	&gw_rd_torchtune,
	&gw_rd_yolo,
	&gw_rd_tfod,
	&gw_rd_sb3,
	&gw_rd_darknet,
	&gw_rd_csv,
	&gw_rd_plain,
	NULL,
};

const struct gw_reader_format *gw_reader_format_find(const char *name)
{
	for (size_t i = 0; gw_reader_formats[i]; i++)
		if (!strcmp(gw_reader_formats[i]->name, name))
			return gw_reader_formats[i];
	return NULL;
}

static size_t format_list(char *buf, size_t len, bool follow)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; gw_reader_formats[i]; i++) {
		if (follow && !(gw_reader_formats[i]->flags & GW_RDF_STREAM))
			continue;
		int n = snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
		                 gw_reader_formats[i]->name);
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
	}
	return off;
}

/* ---- life cycle -------------------------------------------------------------- */

static int start_format(struct gw_reader *r, const struct gw_reader_format *f)
{
	r->fmt = f;
	if (f->state_size) {
		r->state = calloc(1, f->state_size);
		if (!r->state)
			return -ENOMEM;
	}
	if (f->init) {
		int rc = f->init(r, r->state);
		if (rc < 0)
			return rc;
	}
	r->state_live = true;
	return 0;
}

int gw_reader_new(const struct gw_reader_opts *opts, const struct gw_reader_sink *sink,
                  struct gw_reader **out, char *err, size_t errlen)
{
	*out = NULL;
	const struct gw_reader_format *forced = NULL;
	if (opts->format) {
		forced = gw_reader_format_find(opts->format);
		if (!forced) {
			char list[512];
			format_list(list, sizeof(list), false);
			return gw_errf(err, errlen, -ENOENT, "unknown input format \"%s\" (known: %s)",
			               opts->format, list);
		}
		if (opts->follow && !(forced->flags & GW_RDF_STREAM))
			return gw_errf(err, errlen, -EINVAL,
			               "input format \"%s\" cannot be followed while it grows "
			               "(its files are rewritten, not appended)", forced->name);
	}
	char why[128];
	if (opts->run && gw_wire_check_run(opts->run, strlen(opts->run), why, sizeof(why)) < 0)
		return gw_errf(err, errlen, -EINVAL, "bad run name: %s", why);
	struct gw_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	r->o = *opts;
	if (!r->o.run || !*r->o.run)
		r->o.run = "default";
	if (!r->o.max_line)
		r->o.max_line = 16u << 20;
	r->sink = *sink;
	gw__rd_dc_init(&r->dc, dc_out, r, r->err, sizeof(r->err));
	r->next_sniff = SNIFF_FIRST;
	r->run_no = 1;
	r->line_label = r->label = -1;
	r->line_ts = r->wrapped_ts = NAN;
	gw__rd_events_init(r);
	gw__rd_name_run(r);
	gw_lines_init(&r->lines, r->o.max_line);
	if (forced) {
		int rc = start_format(r, forced);
		if (rc < 0) {
			gw_reader_free(r);
			return gw_errf(err, errlen, rc, "out of memory");
		}
	}
	*out = r;
	return 0;
}

void gw_reader_free(struct gw_reader *r)
{
	if (!r)
		return;
	if (r->state_live && r->fmt->deinit)
		r->fmt->deinit(r->state);
	free(r->state);
	gw__rd_dc_free(&r->dc);
	free(r->head);
	gw_lines_free(&r->lines);
	free(r);
}

const struct gw_reader_format *gw_reader_format(const struct gw_reader *r)
{
	return r->fmt;
}

bool gw_reader_compressed(const struct gw_reader *r)
{
	return r->dc.kind == GW_RD_DC_GZIP || r->dc.kind == GW_RD_DC_ZSTD;
}

const char *gw_reader_error(const struct gw_reader *r)
{
	return r->failed ? r->err : "";
}

uint64_t gw_reader_consumed(const struct gw_reader *r)
{
	return r->consumed;
}

uint64_t gw_reader_lines(const struct gw_reader *r)
{
	return r->fmt && r->fmt->feed ? r->records : r->lines.lineno;
}

/* ---- stage 3: lines or the format's own feed ---------------------------------- */

static int on_line(void *data, const char *line, size_t len, uint64_t lineno,
                   enum gw_line_status st)
{
	struct gw_reader *r = data;
	lineno += r->o.first_line;
	if (st == GW_LINE_TOO_LONG) {
		gw__rd_error(r, lineno, "line_too_long: longer than %zu bytes, skipped", len);
		return 0;
	}
	r->truncated = st == GW_LINE_TRUNCATED;
	/* a paste's quote markers and fences, the launcher's rank label, the
	 * logger's prefix (rd_line.c); a stdout's overflow and checkpoint
	 * lines (rd_events.c) */
	const char *s = line;
	size_t n = len;
	int rc = 0;
	if (!gw__rd_unquote(&s, &n)) {
		unsigned fl = r->fmt->flags;
		uint32_t rank = 0;
		size_t k = fl & GW_RDF_LABELS ? gw__rd_label(s, n, &rank) : 0;
		r->line_label = k ? (int64_t)rank : -1;
		s += k;
		n -= k;
		size_t p = fl & (GW_RDF_LABELS | GW_RDF_PREFIX) ? gw__rd_prefix(s, n, &r->line_ts) : 0;
		/* a logger's prefix alone on its line, the message wrapped onto
		 * the next ("[...] [INFO] [fused_optimizer.py:314:_update_scale] "
		 * then "Grad overflow on iteration 8"): the next line's time */
		if (isnan(r->line_ts))
			r->line_ts = r->wrapped_ts;
		r->wrapped_ts = p && p == n ? r->line_ts : NAN;
		/* the format first: a line may end what it was gathering
		 * (Composer's block) before an event on it counts; a line that
		 * was a point is no event line */
		rc = fl & GW_RDF_PREFIX ? r->fmt->line(r, r->state, s + p, n - p, lineno)
		                        : r->fmt->line(r, r->state, s, n, lineno);
		int c = rc >= 0 && (fl & GW_RDF_LABELS) && r->point_line != lineno
		                ? gw__rd_common_line(r, s, n, lineno) : 0;
		if (c < 0)
			rc = c;
	}
	r->line_label = -1;
	r->line_ts = NAN;
	r->truncated = false;
	if (st == GW_LINE_OK) {
		/* where this line ended in the input: in place, or the first line
		 * of the chunk completing the bytes held from earlier chunks */
		if (line >= r->chunk && line < r->chunk + (r->in_bytes - r->chunk_base))
			r->consumed = r->chunk_base + (uint64_t)(line - r->chunk) + len + 1;
		else
			r->consumed = r->chunk_base + (len - r->chunk_held) + 1;
	}
	return rc;
}

static int stage3(struct gw_reader *r, const char *p, size_t n)
{
	if (!n)
		return 0;
	if (r->fmt->feed) {
		r->in_bytes += n;
		return r->fmt->feed(r, r->state, p, n);
	}
	r->chunk = p;
	r->chunk_base = r->in_bytes;
	r->chunk_held = r->lines.len;
	r->in_bytes += n;
	int rc = gw_lines_feed(&r->lines, p, n, on_line, r);
	if (rc == 0 && !r->lines.discarding)
		r->consumed = r->in_bytes - r->lines.len;
	r->chunk = NULL;
	return rc;
}

/* ---- stage 2: sniffing ------------------------------------------------------ */

static const struct gw_reader_format *sniff(struct gw_reader *r, size_t n, bool all, int *score)
{
	const struct gw_reader_format *best = NULL;
	*score = 0;
	for (size_t i = 0; gw_reader_formats[i]; i++) {
		const struct gw_reader_format *f = gw_reader_formats[i];
		if (r->o.follow && !(f->flags & GW_RDF_STREAM))
			continue;
		/* no head yet is "" (h + 0 on a NULL head is undefined) */
		int s = f->sniff(r->head ? r->head : "", n, all);
		if (s > *score) {
			*score = s;
			best = f;
		}
	}
	return best;
}

/* Following: a format that is rewritten whole (not GW_RDF_STREAM) and is
 * surer than every stream format (best), or NULL.  Such a file is said to
 * be one at once, instead of waiting for a sure stream format forever. */
static const struct gw_reader_format *whole_instead(struct gw_reader *r, size_t n, bool all,
                                                    int best)
{
	for (size_t i = 0; r->o.follow && gw_reader_formats[i]; i++) {
		const struct gw_reader_format *f = gw_reader_formats[i];
		if (!(f->flags & GW_RDF_STREAM) && f->sniff(r->head, n, all) >= GW_MAX(SNIFF_SURE, best + 1))
			return f;
	}
	return NULL;
}

static int nothing_readable(struct gw_reader *r)
{
	char list[512];
	format_list(list, sizeof(list), r->o.follow);
	if (r->in_bytes == 0 && r->head_len == 0)
		return gw__rd_fail(r, "nothing readable: the input is empty");
	return gw__rd_fail(r, "nothing readable: not a format gradwatch reads (tried: %s)", list);
}

/* Sniff at every size threshold the head has reached (or at its end when
 * `all`); start the format when one is sure enough, or, at the last
 * chance, the most likely one. */
static int decide(struct gw_reader *r, bool all)
{
	int score;
	const struct gw_reader_format *f = NULL;
	while (r->head_len >= r->next_sniff) {
		size_t n = r->next_sniff;
		f = sniff(r, n, false, &score);
		/* before a sure stream format: a plain csv is sure of a
		 * Lightning metrics.csv too, which Lightning is surer of */
		const struct gw_reader_format *w = whole_instead(r, n, false, score);
		if (w)
			return gw__rd_fail(r, "not a log that can be followed: %s (%s) is rewritten whole "
			                   "while a job runs; replay the file instead (gradwatch replay)",
			                   w->name, w->describe);
		if (score >= SNIFF_SURE)
			goto chosen;
		if (n >= GW_READER_SNIFF_MAX) {
			if (score > 0)
				goto chosen;
			return nothing_readable(r);
		}
		r->next_sniff = GW_MIN(n * 2, (size_t)GW_READER_SNIFF_MAX);
	}
	if (!all)
		return 0;
	f = sniff(r, r->head_len, true, &score);
	if (score > 0)
		goto chosen;
	return nothing_readable(r);
chosen:;
	int rc = start_format(r, f);
	if (rc < 0)
		return rc;
	char *h = r->head;
	size_t hn = r->head_len;
	r->head = NULL;
	r->head_len = r->head_cap = 0;
	rc = stage3(r, h, hn);
	free(h);
	return rc;
}

static int stage2(struct gw_reader *r, const char *p, size_t n)
{
	if (r->fmt)
		return stage3(r, p, n);
	/* the head takes the chunk up to the next size sniffed at, then the
	 * next: once a format is chosen the rest of the chunk is read where it
	 * is, not copied (a whole file's first chunk was) */
	while (n) {
		size_t k = r->next_sniff > r->head_len ? r->next_sniff - r->head_len : n;
		k = GW_MIN(k, n);
		if (gw_grow((void **)&r->head, &r->head_cap, r->head_len + k, 1) < 0)
			return -ENOMEM;
		memcpy(r->head + r->head_len, p, k);
		r->head_len += k;
		p += k;
		n -= k;
		int rc = decide(r, false);
		if (rc)
			return rc;
		if (r->fmt)
			return stage3(r, p, n);
	}
	return 0;
}

/* ---- feeding ------------------------------------------------------------- */

static int dc_out(void *data, const char *p, size_t n)
{
	return stage2(data, p, n);
}

int gw_reader_feed(struct gw_reader *r, const void *data, size_t n)
{
	if (r->failed)
		return r->failed;
	if (r->finished)
		return -EINVAL;
	r->fed = r->fed || n;
	int rc = gw__rd_dc_feed(&r->dc, data, n);
	if (rc == -EPROTO)
		r->failed = -EPROTO;
	return rc;
}

int gw_reader_finish(struct gw_reader *r)
{
	if (r->failed)
		return r->failed;
	if (r->finished)
		return 0;
	r->finished = true;
	const char *cut;
	int rc = gw__rd_dc_finish(&r->dc, &cut);
	if (rc) {
		if (rc == -EPROTO)
			r->failed = -EPROTO;
		return rc;
	}
	if (!r->fmt && (rc = decide(r, true)) != 0)
		return cut && rc == -EPROTO ? (r->failed = gw__rd_dc_cut_msg(&r->dc, cut)) : rc;
	if (r->fmt->line) {
		r->chunk = NULL;
		if ((rc = gw_lines_finish(&r->lines, on_line, r)) != 0)
			return rc;
		r->consumed = r->in_bytes;
	}
	if (r->fmt->finish && (rc = r->fmt->finish(r, r->state)) != 0)
		return rc;
	if ((rc = gw__rd_events_finish(r)) != 0)
		return rc;
	if (cut)
		return r->failed = gw__rd_dc_cut_msg(&r->dc, cut);
	if (!r->handed) {
		char list[512];
		format_list(list, sizeof(list), r->o.follow);
		return gw__rd_fail(r, "nothing readable: read as %s, but no training point or event was "
		                      "found in %llu line(s)%s (formats: %s)", r->fmt->name,
		                   (unsigned long long)gw_reader_lines(r),
		                   r->errors ? ", every candidate line was rejected" : "", list);
	}
	return 0;
}
