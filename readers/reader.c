/*
 * The readers framework (see reader.h): decompression, format sniffing,
 * line splitting, the point builder of reader_impl.h, run splitting and the
 * consumed offset.  The formats themselves live in rd_*.c and are listed in
 * the registry at the end of this file.
 *
 * How bytes flow: gw_reader_feed -> stage 1 (gzip/zstd by magic bytes, or
 * pass-through) -> stage 2 (until a format is chosen, the decompressed bytes
 * are kept in `head`; sniffing happens at fixed sizes, 256 bytes doubling to
 * GW_READER_SNIFF_MAX, and at the end of the input, each time over exactly
 * that many bytes, so the choice never depends on how the input was cut into
 * chunks) -> stage 3 (lib/lines.c for line formats, the format's own feed
 * for byte formats).
 *
 * A point is built in the reader itself (one at a time): names are copied
 * into a small arena, roles are found through the alias table, and the
 * finished point is handed to the sink as a struct gw_rec.  Nothing here
 * allocates per point.
 */
#include "reader_impl.h"

#include "lines.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define SNIFF_FIRST 256       /* first sniff size; doubles up to GW_READER_SNIFF_MAX */
#define SNIFF_SURE 50         /* a score at least this high decides at once */
#define NAMES_MAX 8192        /* bytes of metric names per point */
#define ZBUF 65536            /* decompression output chunk */

enum dc { DC_UNDECIDED, DC_PLAIN, DC_GZIP, DC_ZSTD };

struct gw_reader {
	struct gw_reader_opts o;
	struct gw_reader_sink sink;
	char err[512];
	int failed;                    /* sticky -EPROTO once the input is unreadable */
	bool finished;

	/* stage 1: decompression */
	enum dc dc;
	unsigned char magic[4];
	size_t magic_len;
	z_stream zs;
	bool zs_live, z_ended;         /* inflate initialised; last member ended */
	ZSTD_DStream *zd;
	size_t zd_hint;                /* last ZSTD_decompressStream result (0: frame done) */
	char *zbuf;
	uint64_t in_raw;               /* bytes fed (compressed) */

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
	int prio[GW_NROLES];
	const char *role_name[GW_NROLES];
	int ts_prio;
	struct gw_metric extra[GW_RD_MAX_EXTRA];
	char names[NAMES_MAX];
	size_t names_len;
	char run[GW_WIRE_RUN_MAX + 1];
	bool run_set;

	/* the default run and its from-scratch restarts */
	char cur_run[GW_WIRE_RUN_MAX + 16];
	unsigned run_no;
	bool run_any;
	int64_t run_first, run_last;

	uint64_t records;              /* byte formats: records completed */
	uint64_t handed;               /* records and events given to the sink */
	uint64_t errors;
};

/* ---- helpers for format modules --------------------------------------- */

const struct gw_alias *gw__rd_aliases(const struct gw_reader *r)
{
	return r->o.aliases;
}

const char *gw__rd_default_run(const struct gw_reader *r)
{
	return r->o.run;
}

bool gw__rd_line_truncated(const struct gw_reader *r)
{
	return r->truncated;
}

void gw__rd_consumed(struct gw_reader *r, uint64_t bytes)
{
	r->consumed = bytes;
	r->records++;
}

void gw__rd_error(struct gw_reader *r, uint64_t line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->errors++;
	if (r->sink.on_error)
		r->sink.on_error(r->sink.data, line, msg);
}

void gw__rd_begin(struct gw_reader *r, const char *run, size_t run_len, int64_t step)
{
	memset(&r->rec, 0, sizeof(r->rec));
	r->rec.ts = NAN;
	r->rec.step = step;
	r->rec.extra = r->extra;
	for (int i = 0; i < GW_NROLES; i++) {
		r->prio[i] = 1 << 30;
		r->role_name[i] = NULL;
	}
	r->ts_prio = 1 << 30;
	r->names_len = 0;
	r->run_set = run != NULL;
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

bool gw__rd_has(const struct gw_reader *r, enum gw_role role)
{
	return (unsigned)role < GW_NROLES && gw_rec_has(&r->rec, role);
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
	if (role >= 0 && role < GW_NROLES) {
		if (r->role_name[role] && len == strlen(r->role_name[role]) &&
		    !memcmp(r->role_name[role], name, len))
			return 0; /* the same name twice: the first stays */
		if (prio < r->prio[role]) {
			const char *n = copy_name(r, name, len);
			if (!n)
				return -ENOSPC;
			int rc = 0;
			if (gw_rec_has(&r->rec, role)) /* a lesser alias becomes an extra */
				rc = add_extra(r, r->role_name[role], r->rec.v[role]);
			r->rec.v[role] = v;
			r->rec.present |= 1u << role;
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

/* The run of a point or event of the default run: a point whose step goes
 * back below the previous one, to or below the run's first step, starts
 * the next run (NAME#2, NAME#3, ...). */
static const char *default_run(struct gw_reader *r, int64_t step, bool point)
{
	if (point) {
		if (r->run_any && step < r->run_last && step <= r->run_first) {
			r->run_no++;
			r->run_any = false;
			snprintf(r->cur_run, sizeof(r->cur_run), "%s#%u", r->o.run, r->run_no);
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

int gw__rd_emit(struct gw_reader *r, uint64_t line)
{
	if (!r->rec.present)
		return 0;
	if (check_step(r, r->rec.step, line) < 0)
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
	if (check_step(r, step, line) < 0)
		return 0;
	struct gw_rec ev;
	memset(&ev, 0, sizeof(ev));
	ev.run = run ? run : default_run(r, step, false);
	ev.run_len = strlen(ev.run);
	ev.step = step;
	ev.ts = NAN;
	ev.event = name;
	json_t *empty = NULL;
	if (!attrs && !(attrs = empty = json_object()))
		return -ENOMEM;
	ev.attrs = attrs;
	r->handed++;
	int rc = r->sink.on_rec(r->sink.data, &ev, line);
	json_decref(empty);
	return rc;
}

/* ---- numbers in text ---------------------------------------------------- */

static bool word_ci(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	if (n < k)
		return false;
	for (size_t i = 0; i < k; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != w[i])
			return false;
	}
	return true;
}

size_t gw__rd_num(const char *s, size_t n, double *v)
{
	size_t i = 0;
	bool neg = false;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (word_ci(s + i, n - i, "nan")) {
		*v = NAN;
		return i + 3;
	}
	if (word_ci(s + i, n - i, "infinity")) {
		*v = neg ? -INFINITY : INFINITY;
		return i + 8;
	}
	if (word_ci(s + i, n - i, "inf")) {
		*v = neg ? -INFINITY : INFINITY;
		return i + 3;
	}
	size_t start = i, digits = 0;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++, digits++;
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++, digits++;
	}
	if (!digits)
		return 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t j = i + 1;
		if (j < n && (s[j] == '+' || s[j] == '-'))
			j++;
		if (j < n && s[j] >= '0' && s[j] <= '9') {
			while (j < n && s[j] >= '0' && s[j] <= '9')
				j++;
			i = j;
		}
	}
	char buf[64];
	size_t len = i - start;
	if (len >= sizeof(buf))
		return 0;
	memcpy(buf, s + start, len);
	buf[len] = '\0';
	double x = strtod(buf, NULL);
	*v = neg ? -x : x;
	return i;
}

size_t gw__rd_int(const char *s, size_t n, int64_t *v)
{
	size_t i = 0;
	int64_t x = 0;
	while (i < n && s[i] >= '0' && s[i] <= '9') {
		if (x > (INT64_MAX - 9) / 10)
			return 0;
		x = x * 10 + (s[i] - '0');
		i++;
	}
	if (i)
		*v = x;
	return i;
}

const char *gw__rd_find(const char *s, size_t n, const char *needle)
{
	return memmem(s, n, needle, strlen(needle));
}

/* ---- flat objects: JSON or Python dict reprs ---------------------------- */

void gw__rd_obj_init(struct gw_rd_obj *o, const char *s, size_t n)
{
	o->s = s;
	o->n = n;
	o->i = 1;
	o->first = true;
}

static void obj_ws(struct gw_rd_obj *o)
{
	while (o->i < o->n && (o->s[o->i] == ' ' || o->s[o->i] == '\t' || o->s[o->i] == '\n' ||
	                       o->s[o->i] == '\r'))
		o->i++;
}

/* A quoted string at o->i: its raw contents; o->i past the closing quote. */
static int obj_str(struct gw_rd_obj *o, const char **str, size_t *len)
{
	char q = o->s[o->i++];
	size_t start = o->i;
	while (o->i < o->n) {
		char c = o->s[o->i];
		if (c == '\\') {
			o->i += 2;
			continue;
		}
		if (c == q) {
			*str = o->s + start;
			*len = o->i - start;
			o->i++;
			return 0;
		}
		if (c == '\n')
			return -1;
		o->i++;
	}
	o->i = o->n;
	return -1;
}

/* A nested value or a call's parentheses: skip to the matching closer. */
static int obj_skip_nested(struct gw_rd_obj *o)
{
	char stack[64];
	size_t depth = 0;
	while (o->i < o->n) {
		char c = o->s[o->i];
		if (c == '"' || c == '\'') {
			const char *x;
			size_t xl;
			if (obj_str(o, &x, &xl) < 0)
				return -1;
			continue;
		}
		if (c == '{' || c == '[' || c == '(') {
			if (depth == sizeof(stack))
				return -1;
			stack[depth++] = c == '{' ? '}' : c == '[' ? ']' : ')';
		} else if (c == '}' || c == ']' || c == ')') {
			if (!depth || stack[depth - 1] != c)
				return -1;
			if (--depth == 0) {
				o->i++;
				return 0;
			}
		}
		o->i++;
	}
	return -1;
}

int gw__rd_obj_next(struct gw_rd_obj *o, struct gw_rd_kv *kv)
{
	obj_ws(o);
	if (o->i >= o->n)
		return -1;
	if (o->s[o->i] == '}') {
		o->i++;
		return 0;
	}
	if (!o->first) {
		if (o->s[o->i] != ',')
			return -1;
		o->i++;
		obj_ws(o);
		if (o->i < o->n && o->s[o->i] == '}') {
			o->i++;
			return 0;
		}
	}
	o->first = false;
	if (o->i >= o->n || (o->s[o->i] != '"' && o->s[o->i] != '\''))
		return -1;
	if (obj_str(o, &kv->key, &kv->key_len) < 0)
		return -1;
	obj_ws(o);
	if (o->i >= o->n || o->s[o->i] != ':')
		return -1;
	o->i++;
	obj_ws(o);
	if (o->i >= o->n)
		return -1;
	char c = o->s[o->i];
	kv->kind = GW_RD_OTHER;
	if (c == '"' || c == '\'') {
		kv->kind = GW_RD_STR;
		return obj_str(o, &kv->str, &kv->str_len) < 0 ? -1 : 1;
	}
	if (c == '{' || c == '[')
		return obj_skip_nested(o) < 0 ? -1 : 1;
	size_t used = gw__rd_num(o->s + o->i, o->n - o->i, &kv->num);
	if (used) {
		kv->kind = GW_RD_NUM;
		o->i += used;
	} else {
		/* null, true, None, a call such as tensor(1.5, device='cuda:0') */
		size_t start = o->i;
		while (o->i < o->n && ((o->s[o->i] >= 'a' && o->s[o->i] <= 'z') ||
		                       (o->s[o->i] >= 'A' && o->s[o->i] <= 'Z') ||
		                       (o->s[o->i] >= '0' && o->s[o->i] <= '9') ||
		                       o->s[o->i] == '_' || o->s[o->i] == '.'))
			o->i++;
		if (o->i == start)
			return -1;
		if (o->i < o->n && o->s[o->i] == '(' && obj_skip_nested(o) < 0)
			return -1;
	}
	size_t save = o->i;
	obj_ws(o);
	if (o->i < o->n && o->s[o->i] != ',' && o->s[o->i] != '}')
		return -1;
	o->i = save;
	return 1;
}

/* ---- registry ------------------------------------------------------------- */

extern const struct gw_reader_format gw_rd_ndjson, gw_rd_hf_state, gw_rd_swift, gw_rd_megatron,
	gw_rd_llmc, gw_rd_nanogpt;

/* Best first when two are equally sure.  The TensorBoard and CSV formats
 * are added here when they are merged. */
const struct gw_reader_format *const gw_reader_formats[] = {
	&gw_rd_ndjson,
	&gw_rd_hf_state,
	&gw_rd_swift,
	&gw_rd_megatron,
	&gw_rd_llmc,
	&gw_rd_nanogpt,
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

static int fail(struct gw_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct gw_reader *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->failed = -EPROTO;
	return -EPROTO;
}

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
	struct gw_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	r->o = *opts;
	if (!r->o.run || !*r->o.run)
		r->o.run = "default";
	if (!r->o.max_line)
		r->o.max_line = 16u << 20;
	r->sink = *sink;
	r->next_sniff = SNIFF_FIRST;
	gw_strlcpy(r->cur_run, r->o.run, sizeof(r->cur_run));
	r->run_no = 1;
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
	if (r->zs_live)
		inflateEnd(&r->zs);
	ZSTD_freeDStream(r->zd);
	free(r->zbuf);
	free(r->head);
	gw_lines_free(&r->lines);
	free(r);
}

const struct gw_reader_format *gw_reader_format(const struct gw_reader *r)
{
	return r->fmt;
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
	int rc = r->fmt->line(r, r->state, line, len, lineno);
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
		int s = f->sniff(r->head, n, all);
		if (s > *score) {
			*score = s;
			best = f;
		}
	}
	return best;
}

static int nothing_readable(struct gw_reader *r)
{
	char list[512];
	format_list(list, sizeof(list), r->o.follow);
	if (r->in_bytes == 0 && r->head_len == 0)
		return fail(r, "nothing readable: the input is empty");
	return fail(r, "nothing readable: not a format gradwatch reads (tried: %s)", list);
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
	if (r->head_len + n > r->head_cap) {
		size_t cap = r->head_cap ? r->head_cap : 4096;
		while (cap < r->head_len + n)
			cap *= 2;
		char *h = realloc(r->head, cap);
		if (!h)
			return -ENOMEM;
		r->head = h;
		r->head_cap = cap;
	}
	memcpy(r->head + r->head_len, p, n);
	r->head_len += n;
	return decide(r, false);
}

/* ---- stage 1: decompression ----------------------------------------------- */

static int inflate_some(struct gw_reader *r, const unsigned char *p, size_t n)
{
	r->zs.next_in = (unsigned char *)p;
	r->zs.avail_in = (uInt)n;
	do {
		if (r->z_ended) {
			if (!r->zs.avail_in)
				return 0;
			/* another gzip member follows (concatenated .gz files) */
			if (inflateReset(&r->zs) != Z_OK)
				return fail(r, "gzip: cannot start the next member");
			r->z_ended = false;
		}
		r->zs.next_out = (unsigned char *)r->zbuf;
		r->zs.avail_out = ZBUF;
		int zr = inflate(&r->zs, Z_NO_FLUSH);
		size_t got = ZBUF - r->zs.avail_out;
		if (got) {
			int rc = stage2(r, r->zbuf, got);
			if (rc)
				return rc;
		}
		if (zr == Z_STREAM_END) {
			r->z_ended = true;
			continue;
		}
		if (zr == Z_BUF_ERROR)
			return 0; /* needs more input */
		if (zr != Z_OK)
			return fail(r, "gzip: corrupt compressed data near compressed byte %llu: %s",
			            (unsigned long long)(r->in_raw - r->zs.avail_in),
			            r->zs.msg ? r->zs.msg : zError(zr));
	} while (r->zs.avail_in || r->zs.avail_out == 0);
	return 0;
}

static int unzstd_some(struct gw_reader *r, const void *p, size_t n)
{
	ZSTD_inBuffer in = {p, n, 0};
	for (;;) {
		ZSTD_outBuffer out = {r->zbuf, ZBUF, 0};
		size_t zr = ZSTD_decompressStream(r->zd, &out, &in);
		if (ZSTD_isError(zr))
			return fail(r, "zstd: corrupt compressed data: %s", ZSTD_getErrorName(zr));
		r->zd_hint = zr;
		if (out.pos) {
			int rc = stage2(r, r->zbuf, out.pos);
			if (rc)
				return rc;
		}
		if (in.pos == in.size && out.pos < out.size)
			return 0;
	}
}

static int stage1_start(struct gw_reader *r)
{
	static const unsigned char gz[2] = {0x1f, 0x8b}, zst[4] = {0x28, 0xb5, 0x2f, 0xfd};
	if (r->magic_len >= 2 && !memcmp(r->magic, gz, 2)) {
		r->dc = DC_GZIP;
		if (inflateInit2(&r->zs, 15 + 16) != Z_OK)
			return -ENOMEM;
		r->zs_live = true;
	} else if (r->magic_len >= 4 && !memcmp(r->magic, zst, 4)) {
		r->dc = DC_ZSTD;
		if (!(r->zd = ZSTD_createDStream()))
			return -ENOMEM;
		ZSTD_initDStream(r->zd);
	} else {
		r->dc = DC_PLAIN;
		return 0;
	}
	if (!(r->zbuf = malloc(ZBUF)))
		return -ENOMEM;
	return 0;
}

static int stage1(struct gw_reader *r, const unsigned char *p, size_t n)
{
	switch (r->dc) {
	case DC_PLAIN:
		return stage2(r, (const char *)p, n);
	case DC_GZIP:
		return inflate_some(r, p, n);
	case DC_ZSTD:
		return unzstd_some(r, p, n);
	default:
		return 0;
	}
}

/* Could the bytes seen so far still be a compression magic? */
static bool maybe_magic(const unsigned char *m, size_t n)
{
	static const unsigned char gz[2] = {0x1f, 0x8b}, zst[4] = {0x28, 0xb5, 0x2f, 0xfd};
	return !memcmp(m, gz, GW_MIN(n, 2u)) || !memcmp(m, zst, GW_MIN(n, 4u));
}

int gw_reader_feed(struct gw_reader *r, const void *data, size_t n)
{
	const unsigned char *p = data;
	if (r->failed)
		return r->failed;
	if (r->finished)
		return -EINVAL;
	r->in_raw += n;
	if (r->dc == DC_UNDECIDED) {
		while (n && r->magic_len < 4) {
			r->magic[r->magic_len++] = *p++;
			n--;
			if (!maybe_magic(r->magic, r->magic_len))
				break;
		}
		if (r->magic_len < 4 && maybe_magic(r->magic, r->magic_len) &&
		    !(r->magic_len >= 2 && r->magic[0] == 0x1f))
			return 0; /* wait for more bytes */
		int rc = stage1_start(r);
		if (rc < 0)
			return rc;
		if ((rc = stage1(r, r->magic, r->magic_len)) != 0)
			return rc;
	}
	return stage1(r, p, n);
}

static int cut_short(struct gw_reader *r, const char *what)
{
	return fail(r, "%s: the compressed stream is cut short (the input ends inside "
	               "compressed data, after %llu bytes)", what, (unsigned long long)r->in_raw);
}

int gw_reader_finish(struct gw_reader *r)
{
	if (r->failed)
		return r->failed;
	if (r->finished)
		return 0;
	r->finished = true;
	int rc;
	if (r->dc == DC_UNDECIDED) {
		if ((rc = stage1_start(r)) < 0)
			return rc;
		if ((rc = stage1(r, r->magic, r->magic_len)) != 0)
			return rc;
	}
	const char *cut = NULL;
	if (r->dc == DC_GZIP && !r->z_ended)
		cut = "gzip";
	if (r->dc == DC_ZSTD && r->zd_hint != 0)
		cut = "zstd";
	if (!r->fmt && (rc = decide(r, true)) != 0)
		return cut && rc == -EPROTO ? cut_short(r, cut) : rc;
	if (r->fmt->line) {
		r->chunk = NULL;
		if ((rc = gw_lines_finish(&r->lines, on_line, r)) != 0)
			return rc;
		r->consumed = r->in_bytes;
	}
	if (r->fmt->finish && (rc = r->fmt->finish(r, r->state)) != 0)
		return rc;
	if (cut)
		return cut_short(r, cut);
	if (!r->handed) {
		char list[512];
		format_list(list, sizeof(list), r->o.follow);
		return fail(r, "nothing readable: read as %s, but no training point or event was "
		               "found in %llu line(s)%s (formats: %s)", r->fmt->name,
		            (unsigned long long)gw_reader_lines(r),
		            r->errors ? ", every candidate line was rejected" : "", list);
	}
	return 0;
}
