/*
 * wire_write: records and events written back as wire-format lines
 * (gw_wire_append_rec, gw_wire_fmt_double; see wire.h), for `gradwatch
 * convert` and the tests that read a line, write it and read it again.
 * Numbers take the shortest of %.15g..%.17g that reads back exactly;
 * strings are escaped as JSON wants (quote, backslash, control characters)
 * and otherwise written as they are.
 */
#include "wire.h"

#include "buf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gw_wire_fmt_double(char *buf, double v)
{
	if (isnan(v))
		return snprintf(buf, 32, "NaN");
	if (isinf(v))
		return snprintf(buf, 32, v > 0 ? "Infinity" : "-Infinity");
	for (int prec = 15; prec <= 17; prec++) {
		int n = snprintf(buf, 32, "%.*g", prec, v);
		if (prec == 17 || strtod(buf, NULL) == v)
			return n;
	}
	return 0;
}

/* A JSON string: quote, backslash and control characters escaped; other
 * bytes (UTF-8 included) as they are. */
static int put_str(struct gw_buf *b, const char *s, size_t n)
{
	int rc = gw_buf_add(b, "\"", 1);
	size_t i = 0, start = 0;
	for (; i < n && !rc; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		char esc[8];
		int k = ch == '"' || ch == '\\' ? snprintf(esc, sizeof(esc), "\\%c", ch)
		                                 : snprintf(esc, sizeof(esc), "\\u%04x", ch);
		rc = gw_buf_add(b, s + start, i - start);
		if (!rc)
			rc = gw_buf_add(b, esc, (size_t)k);
		start = i + 1;
	}
	if (!rc)
		rc = gw_buf_add(b, s + start, i - start);
	return rc ? rc : gw_buf_add(b, "\"", 1);
}

static int put_member(struct gw_buf *b, const char *name, double v)
{
	char num[32];
	int n = gw_wire_fmt_double(num, v);
	int rc = gw_buf_add(b, ",", 1);
	if (!rc)
		rc = put_str(b, name, strlen(name));
	if (!rc)
		rc = gw_buf_add(b, ":", 1);
	return rc ? rc : gw_buf_add(b, num, (size_t)n);
}

int gw_wire_append_rec(struct gw_buf *b, const struct gw_rec *rec)
{
	size_t mark = b->len;
	char num[48];
	int rc = gw_buf_add(b, "{\"run\":", 7);
	if (!rc)
		rc = put_str(b, rec->run, rec->run_len);
	if (!rc) {
		int n = snprintf(num, sizeof(num), ",\"step\":%lld", (long long)rec->step);
		rc = gw_buf_add(b, num, (size_t)n);
	}
	if (!rc && !isnan(rec->ts))
		rc = put_member(b, "ts", rec->ts);
	if (!rc && rec->has_rank && !rec->rank_label) {   /* a label is no "rank" field */
		int n = snprintf(num, sizeof(num), ",\"rank\":%u", (unsigned)rec->rank);
		rc = gw_buf_add(b, num, (size_t)n);
	}
	if (rec->event) {
		if (!rc)
			rc = gw_buf_add(b, ",\"event\":", 9);
		if (!rc)
			rc = put_str(b, rec->event, strlen(rec->event));
		if (!rc && rec->attrs && json_object_size(rec->attrs)) {
			char *a = json_dumps(rec->attrs, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17));
			rc = a ? gw_buf_add(b, ",", 1) : -ENOMEM;
			if (!rc) /* the attributes' members after ours */
				rc = gw_buf_add(b, a + 1, strlen(a) - 2);
			free(a);
		}
	} else {
		for (int r = 0; r < GW_NROLES && !rc; r++)
			if (gw_rec_has(rec, (enum gw_role)r))
				rc = put_member(b, gw_role_name((enum gw_role)r), rec->v[r]);
		for (int f = 0; f < GW_NFIELDS && !rc; f++)
			if (gw_rec_has_field(rec, (enum gw_field)f))
				rc = put_member(b, gw_field_name((enum gw_field)f), rec->f[f]);
		for (size_t i = 0; i < rec->n_extra && !rc; i++)
			rc = put_member(b, rec->extra[i].name, rec->extra[i].value);
	}
	if (!rc)
		rc = gw_buf_add(b, "}\n", 2);
	if (rc) {
		b->len = mark;
		if (b->p)
			b->p[mark] = '\0';
	}
	return rc;
}
