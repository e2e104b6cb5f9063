/*
 * ingest_src: a transport's stream of bytes to records (see ingest.h,
 * "sources").  An NDJSON source splits its bytes into lines (lib/lines.c)
 * and parses each (gw_wire_parse); a reader source hands them to a log
 * reader (readers/), which calls back with records.  Either way each
 * record goes through gw_ingest_record (ingest.c), and the outcome of each
 * line is counted on the source and, when rejected, reported to its owner
 * (on_reject) with the reason, column and field.
 */
#include "ingest_impl.h"

#include "config.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---- one line ------------------------------------------------------------------------ */

/* Parse, detect, queue one NDJSON line; 0 accepted, -EINVAL rejected (*e
 * filled), -ENODATA blank. */
static int ingest_line(struct gw_ingest_src *s, const char *line, size_t len, uint64_t lineno,
                       struct gw_wire_err *e)
{
	struct gw_ingest *in = s->in;
	struct gw_rec rec;
	int rc = gw_wire_parse(in->wire, line, len, s->default_run, &rec, e);
	if (rc == -ENODATA)
		return rc;
	if (rc < 0) {
		if (rc == -ENOMEM) {
			e->column = 0;
			e->field[0] = '\0';
			snprintf(e->msg, sizeof(e->msg), "out_of_memory: the line could not be parsed; "
			         "send it again later");
			e->reason = GW_REJ_NO_MEMORY;
		}
		in->n.rejected[s->t][e->reason]++;
		return -EINVAL;
	}
	return gw_ingest_record(s, &rec, lineno, e);
}

/* The outcome of one line: counted on the source, a rejection reported. */
static void outcome(struct gw_ingest_src *s, int rc, uint64_t lineno, const struct gw_wire_err *e)
{
	if (rc == 0) {
		s->accepted++;
	} else if (rc == -EINVAL) {
		s->rejected++;
		if (s->on_reject)
			s->on_reject(s, lineno, e);
	}
}

static int on_line(void *data, const char *line, size_t len, uint64_t lineno,
                   enum gw_line_status st)
{
	struct gw_ingest_src *s = data;
	struct gw_ingest *in = s->in;
	struct gw_wire_err e = {.reason = GW_REJ_SYNTAX};
	int rc;
	if (st == GW_LINE_TOO_LONG) {
		snprintf(e.msg, sizeof(e.msg),
		         "line_too_long: the line is longer than %zu bytes (limits.max_line_bytes); skipped",
		         len);
		gw__ingest_reject(in, s->t, &e, GW_REJ_TOO_LONG);
		rc = -EINVAL;
	} else {
		rc = ingest_line(s, line, len, lineno, &e);
		if (rc == -EINVAL && st == GW_LINE_TRUNCATED && !s->eof_ends_line) {
			/* the peer went away inside this line: count it as truncated
			 * rather than as whatever the parser tripped over */
			char m[sizeof(e.msg) + 64];
			snprintf(m, sizeof(m), "truncated: the connection closed inside this line (%s)",
			         e.msg);
			in->n.rejected[s->t][e.reason]--;
			gw__ingest_reject(in, s->t, &e, GW_REJ_TRUNCATED);
			gw_strlcpy(e.msg, m, sizeof(e.msg));
		}
	}
	outcome(s, rc, lineno, &e);
	return 0;
}


/* ---- sources ------------------------------------------------------------------------ */

void gw_ingest_src_init(struct gw_ingest_src *s, struct gw_ingest *in, enum gw_transport t,
                        uint64_t first_line)
{
	memset(s, 0, sizeof(*s));
	s->in = in;
	s->t = t;
	gw_lines_init(&s->lines, in->cfg->max_line);
	s->lines.lineno = first_line;
}

static int reader_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct gw_ingest_src *s = data;
	struct gw_wire_err e = {.reason = GW_REJ_SYNTAX};
	int rc = gw_ingest_record(s, rec, line, &e);
	outcome(s, rc, line, &e);
	return rc == -EINVAL ? 0 : rc;
}

static void reader_error(void *data, uint64_t line, const struct gw_wire_err *e)
{
	struct gw_ingest_src *s = data;
	s->in->n.rejected[s->t][e->reason]++;
	outcome(s, -EINVAL, line, e);
}

int gw_ingest_src_reader(struct gw_ingest_src *s, const char *format, bool follow, char *err,
                         size_t errlen)
{
	const struct gw_reader_opts ro = {
		.aliases = s->in->cfg->aliases,
		.run = s->default_run,
		.format = format,
		.max_line = s->in->cfg->max_line,
		.follow = follow,
		.first_line = s->lines.lineno,
	};
	const struct gw_reader_sink sink = {.data = s, .on_rec = reader_rec, .on_error = reader_error};
	gw_reader_free(s->reader);
	s->reader = NULL;
	return gw_reader_new(&ro, &sink, &s->reader, err, errlen);
}

void gw_ingest_src_deinit(struct gw_ingest_src *s)
{
	gw_lines_free(&s->lines);
	gw_reader_free(s->reader);
	s->reader = NULL;
}

int gw_ingest_src_feed(struct gw_ingest_src *s, const char *p, size_t n)
{
	s->in->n.bytes[s->t] += n;
	s->fed += n;
	if (s->reader)
		return gw_reader_feed(s->reader, p, n);
	return gw_lines_feed(&s->lines, p, n, on_line, s);
}

int gw_ingest_src_finish(struct gw_ingest_src *s)
{
	if (s->reader)
		return gw_reader_finish(s->reader);
	return gw_lines_finish(&s->lines, on_line, s);
}

uint64_t gw_ingest_src_consumed(const struct gw_ingest_src *s)
{
	if (s->reader)
		return gw_reader_consumed(s->reader);
	return s->lines.discarding ? s->fed : s->fed - s->lines.len;
}

uint64_t gw_ingest_src_lines(const struct gw_ingest_src *s)
{
	return s->reader ? s->lines.lineno + gw_reader_lines(s->reader) : s->lines.lineno;
}

json_t *gw_ingest_err_json(uint64_t lineno, const struct gw_wire_err *e)
{
	/* a message quotes the input (field and run names, the bytes of a log
	 * file): what is not UTF-8 is written \xNN, or jansson would refuse
	 * the text and the client would never hear of the error */
	char msg[sizeof(e->msg) * 4], field[sizeof(e->field) * 4];
	gw_utf8_clean(msg, sizeof(msg), e->msg, strnlen(e->msg, sizeof(e->msg)));
	gw_utf8_clean(field, sizeof(field), e->field, strnlen(e->field, sizeof(e->field)));
	json_t *j = json_pack("{s:I, s:s, s:s}", "line", (json_int_t)lineno,
	                      "reason", gw_wire_reason_name(e->reason), "message", msg);
	if (j && field[0])
		json_object_set_new(j, "field", json_string(field));
	if (j && e->column)
		json_object_set_new(j, "column", json_integer((json_int_t)e->column));
	return j;
}

void gw_ingest_alloc_slab(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char slab[256 * 1024];
	(void)h;
	(void)hint;
	buf->base = slab;
	buf->len = sizeof(slab);
}
