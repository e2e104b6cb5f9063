/*
 * The readers framework (see reader.h): sniffing, line splitting, the point
 * builder of reader_impl.h, run splitting, the consumed offset and the
 * registry.  Decompression is decompress.c, the text helpers formats share
 * rd_text.c, the formats themselves rd_*.c.
 *
 * How bytes flow: gw_reader_feed -> stage 1 (decompress.c: gzip/zstd by
 * magic bytes, or pass-through) -> stage 2 (until a format is chosen, the
 * decompressed bytes are kept in `head`; sniffing happens at fixed sizes,
 * 256 bytes doubling to GW_READER_SNIFF_MAX, and at the end of the input,
 * each time over exactly that many bytes, so the choice never depends on
 * how the input was cut into chunks) -> stage 3 (lib/lines.c for line
 * formats, the format's own feed for byte formats).
 *
 * A point is built in the reader itself (one at a time): names are copied
 * into a small arena, roles are found through the alias table, and the
 * finished point is handed to the sink as a struct gw_rec.  Nothing here
 * allocates per point.
 *
 * (Some 700 lines: decompression, sniffing, line splitting, run naming and
 * the point builder are one pipeline over one struct; the formats are in
 * rd_*.c.)
 */
#include "reader_impl.h"

#include "decompress.h"
#include "lines.h"
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
#define NAMES_MAX 8192        /* bytes of metric names per point */

struct gw_reader {
	struct gw_reader_opts o;
	struct gw_reader_sink sink;
	char err[512];
	int failed;                    /* sticky -EPROTO once the input is unreadable */
	bool finished;

	/* stage 1: decompression */
	struct gw_rd_dc dc;

	/* stage 2: sniffing */
	const struct gw_reader_format *fmt;
	void *state;
	bool state_live;
	char *head;
	size_t head_len, head_cap, next_sniff;

	/* stage 3 */
	struct gw_lines lines;
	uint64_t in_bytes;             /* decompressed bytes given to stage 3 */
	uint64_t consumed;
	const char *chunk;             /* the chunk gw_lines_feed is working on */
	uint64_t chunk_base;           /* its offset in the decompressed input */
	size_t chunk_held;             /* bytes of a partial line held before it */
	bool truncated;                /* the line being handed over had no '\n' */

	/* the point being built */
	struct gw_rec rec;
	int prio[GW_NALIAS_ROLES];     /* the roles' and the fp16 fields' (ts: ts_prio) */
	const char *role_name[GW_NALIAS_ROLES];
	int ts_prio;
	struct gw_metric extra[GW_RD_MAX_EXTRA];
	char names[NAMES_MAX];
	size_t names_len;
	char run[GW_WIRE_RUN_MAX + 1];
	bool run_set;
	int64_t line_label;            /* the rank label of the line being read, -1: none */
	int64_t label;                 /* the label whose points move the run splitting */

	/* the default run and its from-scratch restarts */
	char cur_run[GW_WIRE_RUN_MAX + 16];
	unsigned run_no;
	bool run_any;
	int64_t run_first, run_last;

	uint64_t records;              /* byte formats: records completed */
	uint64_t handed;               /* records and events given to the sink */
	bool fed;                      /* gw_reader_feed was given bytes */
	uint64_t errors;
};

static int dc_out(void *data, const char *p, size_t n);

/* ---- helpers for format modules --------------------------------------- */

const struct gw_alias *gw__rd_aliases(const struct gw_reader *r)
{
	return r->o.aliases;
}

void gw__rd_last_set(const struct gw_reader *r, struct gw_rd_last *l, int64_t step)
{
	l->step = step;
	l->label = r->line_label;
}

bool gw__rd_repeats(const struct gw_reader *r, const struct gw_rd_last *l, int64_t step)
{
	return step == l->step && r->line_label == l->label;
}

const char *gw__rd_default_run(const struct gw_reader *r)
{
	return r->o.run;
}

void gw__rd_consumed(struct gw_reader *r, uint64_t bytes)
{
	r->consumed = bytes;
	r->records++;
}

int gw__rd_fail(struct gw_reader *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->failed = -EPROTO;
	return -EPROTO;
}

uint64_t gw__rd_first_line(const struct gw_reader *r)
{
	return r->o.first_line;
}

void gw__rd_error(struct gw_reader *r, uint64_t line, const char *fmt, ...)
{
	struct gw_wire_err e = {.reason = r->truncated ? GW_REJ_TRUNCATED : GW_REJ_BAD_VALUE};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	r->errors++;
	if (r->sink.on_error)
		r->sink.on_error(r->sink.data, line, &e);
}

void gw__rd_wire_error(struct gw_reader *r, uint64_t line, const struct gw_wire_err *e)
{
	struct gw_wire_err x = *e;
	if (r->truncated) {
		/* the input ended inside this line: say so */
		snprintf(x.msg, sizeof(x.msg), "(last line, no newline) %.*s",
		         (int)sizeof(x.msg) - 32, e->msg);
	}
	r->errors++;
	if (r->sink.on_error)
		r->sink.on_error(r->sink.data, line, &x);
}

void gw__rd_begin(struct gw_reader *r, const char *run, size_t run_len, int64_t step)
{
	memset(&r->rec, 0, sizeof(r->rec));
	r->rec.ts = NAN;
	r->rec.step = step;
	r->rec.extra = r->extra;
	for (int i = 0; i < GW_NALIAS_ROLES; i++) {
		r->prio[i] = 1 << 30;
		r->role_name[i] = NULL;
	}
	r->ts_prio = 1 << 30;
	r->names_len = 0;
	r->run_set = run != NULL;
	if (r->line_label >= 0) {
		r->rec.has_rank = r->rec.rank_label = true;
		r->rec.rank = (uint32_t)r->line_label;
	}
	if (run) {
		if (run_len > GW_WIRE_RUN_MAX)
			run_len = GW_WIRE_RUN_MAX;
		memcpy(r->run, run, run_len);
		r->run[run_len] = '\0';
	}
}

void gw__rd_ts(struct gw_reader *r, double ts)
{
	if (isfinite(ts) && ts >= 0) {
		r->rec.ts = ts;
		r->ts_prio = -1;
	}
}

static const char *copy_name(struct gw_reader *r, const char *name, size_t len)
{
	if (r->names_len + len + 1 > sizeof(r->names))
		return NULL;
	char *p = r->names + r->names_len;
	memcpy(p, name, len);
	p[len] = '\0';
	r->names_len += len + 1;
	return p;
}

static int add_extra(struct gw_reader *r, const char *name, double v)
{
	if (r->rec.n_extra >= GW_RD_MAX_EXTRA)
		return -ENOSPC;
	r->extra[r->rec.n_extra].name = name;
	r->extra[r->rec.n_extra].value = v;
	r->rec.n_extra++;
	return 0;
}

static bool reserved(const char *name, size_t len)
{
	return (len == 3 && !memcmp(name, "run", 3)) || (len == 4 && !memcmp(name, "step", 4)) ||
	       (len == 5 && !memcmp(name, "event", 5));
}

int gw__rd_metric(struct gw_reader *r, const char *name, size_t len, double v)
{
	if (!len || reserved(name, len))
		return 0;
	int prio;
	int role = gw_alias_lookup(r->o.aliases, name, len, &prio);
	if (role == GW_ROLE_TS) {
		if (prio < r->ts_prio && isfinite(v) && v >= 0) {
			r->rec.ts = v;
			r->ts_prio = prio;
		}
		return 0;
	}
	if (role >= 0) {   /* a role, or an fp16 field (GW_ROLE_FIELD) */
		if (r->role_name[role] && len == strlen(r->role_name[role]) &&
		    !memcmp(r->role_name[role], name, len))
			return 0; /* the same name twice: the first stays */
		if (prio < r->prio[role]) {
			const char *n = copy_name(r, name, len);
			if (!n)
				return -ENOSPC;
			int rc = 0, f = GW_ROLE_FIELD(role);
			double *slot = f >= 0 ? &r->rec.f[f] : &r->rec.v[role];
			unsigned *bits = f >= 0 ? &r->rec.fields : &r->rec.present;
			unsigned bit = 1u << (f >= 0 ? f : role);
			if (*bits & bit) /* a lesser alias becomes an extra */
				rc = add_extra(r, r->role_name[role], *slot);
			*slot = v;
			*bits |= bit;
			r->prio[role] = prio;
			r->role_name[role] = n;
			return rc;
		}
	}
	for (size_t i = 0; i < r->rec.n_extra; i++)
		if (!strncmp(r->extra[i].name, name, len) && r->extra[i].name[len] == '\0')
			return 0;
	if (r->rec.n_extra >= GW_RD_MAX_EXTRA)
		return -ENOSPC;
	const char *n = copy_name(r, name, len);
	if (!n)
		return -ENOSPC;
	return add_extra(r, n, v);
}

/* cur_run for run_no: NAME, or NAME#k with NAME cut (at a character) to
 * keep it in the limit. */
static void name_run(struct gw_reader *r)
{
	if (r->run_no <= 1) {
		gw_strlcpy(r->cur_run, r->o.run, sizeof(r->cur_run));
		return;
	}
	char suffix[16];
	size_t sl = (size_t)snprintf(suffix, sizeof(suffix), "#%u", r->run_no);
	size_t n = strlen(r->o.run);
	if (n + sl > GW_WIRE_RUN_MAX) {
		n = GW_WIRE_RUN_MAX - sl;
		while (n && ((unsigned char)r->o.run[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(r->cur_run, r->o.run, n);
	memcpy(r->cur_run + n, suffix, sl + 1);
}

/* The run of a point or event of the default run: a point whose step goes
 * back below the previous one, to or below the run's first step, starts
 * the next run (NAME#2, NAME#3, ...). */
static const char *default_run(struct gw_reader *r, int64_t step, bool point)
{
	if (point && r->line_label >= 0) {
		if (r->label < 0)
			r->label = r->line_label;
		point = r->line_label == r->label;   /* another rank's: no new run */
	}
	if (point) {
		if (r->run_any && step < r->run_last && step <= r->run_first) {
			r->run_no++;
			r->run_any = false;
			name_run(r);
		}
		if (!r->run_any) {
			r->run_any = true;
			r->run_first = step;
		}
		r->run_last = step;
	}
	return r->cur_run;
}

static int check_step(struct gw_reader *r, int64_t step, uint64_t line)
{
	if (step < 0 || step > GW_WIRE_STEP_MAX) {
		gw__rd_error(r, line, "bad_step: step %lld is outside 0..%lld", (long long)step,
		             (long long)GW_WIRE_STEP_MAX);
		return -1;
	}
	return 0;
}

/* A run a format names: the rule of every entry point (gw_wire_check_run). */
static int check_run(struct gw_reader *r, const char *run, uint64_t line)
{
	char why[128];
	if (gw_wire_check_run(run, strlen(run), why, sizeof(why)) < 0) {
		gw__rd_error(r, line, "bad_run: %s", why);
		return -1;
	}
	return 0;
}

int gw__rd_emit(struct gw_reader *r, uint64_t line)
{
	if (!r->rec.present && !r->rec.fields)
		return 0;
	if (check_step(r, r->rec.step, line) < 0 || (r->run_set && check_run(r, r->run, line) < 0))
		return 0;
	r->rec.run = r->run_set ? r->run : default_run(r, r->rec.step, true);
	r->rec.run_len = strlen(r->rec.run);
	r->rec.extra = r->extra;
	r->handed++;
	return r->sink.on_rec(r->sink.data, &r->rec, line);
}

int gw__rd_emit_rec(struct gw_reader *r, const struct gw_rec *rec, uint64_t line)
{
	r->handed++;
	return r->sink.on_rec(r->sink.data, rec, line);
}

int gw__rd_event(struct gw_reader *r, const char *run, const char *name, int64_t step,
                 json_t *attrs, uint64_t line)
{
	if (check_step(r, step, line) < 0 || (run && check_run(r, run, line) < 0))
		return 0;
	struct gw_rec ev;
	memset(&ev, 0, sizeof(ev));
	ev.run = run ? run : default_run(r, step, false);
	ev.run_len = strlen(ev.run);
	ev.step = step;
	ev.ts = NAN;
	ev.event = name;
	if (r->line_label >= 0) {
		ev.has_rank = ev.rank_label = true;
		ev.rank = (uint32_t)r->line_label;
	}
	json_t *empty = NULL;
	if (!attrs && !(attrs = empty = json_object()))
		return -ENOMEM;
	ev.attrs = attrs;
	r->handed++;
	int rc = r->sink.on_rec(r->sink.data, &ev, line);
	json_decref(empty);
	return rc;
}

/* ---- registry ------------------------------------------------------------- */

extern const struct gw_reader_format gw_rd_ndjson, gw_rd_hf_state, gw_rd_swift, gw_rd_megatron,
	gw_rd_llmc, gw_rd_nanogpt, gw_rd_tfevents, gw_rd_wandb_csv, gw_rd_lightning_csv,
	gw_rd_fairseq, gw_rd_titan, gw_rd_composer, gw_rd_torchtune, gw_rd_csv;

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
	&gw_rd_csv,
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
	name_run(r);
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
	uint32_t rank;
	size_t k = r->fmt->flags & GW_RDF_LABELS ? gw__rd_label(line, len, &rank) : 0;
	r->line_label = k ? (int64_t)rank : -1;
	int rc = r->fmt->line(r, r->state, line + k, len - k, lineno);
	r->line_label = -1;
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
	if (!n)
		return 0;
	if (gw_grow((void **)&r->head, &r->head_cap, r->head_len + n, 1) < 0)
		return -ENOMEM;
	memcpy(r->head + r->head_len, p, n);
	r->head_len += n;
	return decide(r, false);
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

void gw_reader_get_runs(const struct gw_reader *r, struct gw_reader_runs *out)
{
	*out = (struct gw_reader_runs){
		.no = r->run_no, .any = r->run_any, .first = r->run_first, .last = r->run_last,
		.label = r->label,
	};
}

int gw_reader_set_runs(struct gw_reader *r, const struct gw_reader_runs *st)
{
	if (st->no < 1 || r->fed)
		return -EINVAL;
	r->run_no = st->no;
	r->run_any = st->any;
	r->run_first = st->first;
	r->run_last = st->last;
	r->label = st->label;
	name_run(r);
	return 0;
}
