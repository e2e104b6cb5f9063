/*
 * The wire parser's errors (wire_int.h): the names of the reasons a line
 * is rejected for (the reject counters' labels), and the message that
 * names the reason, the field and the column, cut to valid UTF-8 for the
 * JSON answers it goes into.  Both parts of the parser (wire.c,
 * wire_value.c) fail through here.
 */
#include "wire_int.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- reasons ---------------------------------------------------------- */

static const char *const reason_names[GW_REJ_NREASONS] = {
	[GW_REJ_SYNTAX] = "malformed_json",
	[GW_REJ_NOT_OBJECT] = "not_object",
	[GW_REJ_UTF8] = "invalid_utf8",
	[GW_REJ_NO_RUN] = "missing_run",
	[GW_REJ_BAD_RUN] = "bad_run",
	[GW_REJ_NO_STEP] = "missing_step",
	[GW_REJ_BAD_STEP] = "bad_step",
	[GW_REJ_BAD_TS] = "bad_ts",
	[GW_REJ_BAD_VALUE] = "bad_value",
	[GW_REJ_DUP_KEY] = "duplicate_field",
	[GW_REJ_BAD_EVENT] = "bad_event",
	[GW_REJ_BAD_RANK] = "bad_rank",
	[GW_REJ_TOO_LONG] = "line_too_long",
	[GW_REJ_TRUNCATED] = "truncated",
	[GW_REJ_UNAUTHORIZED] = "unauthorized",
	[GW_REJ_NO_MEMORY] = "out_of_memory",
	[GW_REJ_SEG_FLOOD] = "segment_flood",
};

const char *gw_wire_reason_name(enum gw_wire_reason r)
{
	return (unsigned)r < GW_REJ_NREASONS ? reason_names[r] : "unknown";
}

/* ---- a line's error ------------------------------------------------------ */

int gw__wire_fail(struct cur *c, enum gw_wire_reason r, size_t col,
                  const char *field, const char *fmt, ...)
{
	struct gw_wire_err *e = c->err;
	if (!e)
		return -EINVAL;
	e->reason = r;
	e->column = col;
	if (field) {
		/* a long field name is cut at a character boundary: the message
		 * goes into JSON answers, which take only valid UTF-8 */
		size_t n = gw_utf8_cut(field, GW_MIN(strlen(field), sizeof(e->field) - 1));
		memcpy(e->field, field, n);
		e->field[n] = '\0';
	} else {
		e->field[0] = '\0';
	}
	char what[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	gw_utf8_fix_end(what);
	int off = snprintf(e->msg, sizeof(e->msg), "%s", gw_wire_reason_name(r));
	if (field && off < (int)sizeof(e->msg))
		off += snprintf(e->msg + off, sizeof(e->msg) - (size_t)off,
		                ": field \"%s\"", e->field);
	if (col && off < (int)sizeof(e->msg))
		off += snprintf(e->msg + off, sizeof(e->msg) - (size_t)off,
		                " at column %zu", col);
	if (off < (int)sizeof(e->msg))
		snprintf(e->msg + off, sizeof(e->msg) - (size_t)off, ": %s", what);
	gw_utf8_fix_end(e->msg);
	return -EINVAL;
}

/* A byte of the input for a message: 'x' when it is printable ASCII, else
 * its value (a lone byte of a UTF-8 sequence is no character). */
const char *gw__wire_show_byte(char ch, char buf[16])
{
	unsigned char u = (unsigned char)ch;
	if (u >= 0x20 && u < 0x7f)
		snprintf(buf, 16, "'%c'", ch);
	else
		snprintf(buf, 16, "byte 0x%02x", u);
	return buf;
}
