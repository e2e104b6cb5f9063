/*
 * The readers' unit-test harness (rdtest.h).
 */
#include "gwcheck.h"
#include "rdtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a sink that writes every point as one line of text ----------------- */

void app(struct got *g, const char *s)
{
	size_t n = strlen(s);
	if (g->len + n + 1 > g->cap) {
		g->cap = (g->len + n + 1) * 2;
		g->text = realloc(g->text, g->cap);
	}
	memcpy(g->text + g->len, s, n + 1);
	g->len += n;
}

int on_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct got *g = data;
	char b[512];
	snprintf(b, sizeof(b), "%llu %s %lld", (unsigned long long)line, rec->run, (long long)rec->step);
	app(g, b);
	if (rec->has_rank) {
		snprintf(b, sizeof(b), " [rank%u]", rec->rank);
		app(g, b);
	}
	if (rec->event) {
		g->events++;
		snprintf(b, sizeof(b), " event=%s", rec->event);
		app(g, b);
		/* the attributes that are numbers or booleans, sorted by name */
		const char *keys[32];
		size_t nk = 0;
		const char *key;
		json_t *v;
		json_object_foreach(rec->attrs, key, v)
			if (nk < 32 && (json_is_number(v) || json_is_boolean(v)))
				keys[nk++] = key;
		for (size_t i = 1; i < nk; i++)
			for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
				const char *t = keys[j];
				keys[j] = keys[j - 1];
				keys[j - 1] = t;
			}
		for (size_t i = 0; i < nk; i++) {
			char num[32];
			v = json_object_get(rec->attrs, keys[i]);
			if (json_is_boolean(v))
				snprintf(num, sizeof(num), "%s", json_is_true(v) ? "true" : "false");
			else
				gw_wire_fmt_double(num, json_number_value(v));
			snprintf(b, sizeof(b), " %s=%s", keys[i], num);
			app(g, b);
		}
	} else {
		g->points++;
	}
	char num[32];
	if (rec->ts == rec->ts) {
		gw_wire_fmt_double(num, rec->ts);
		snprintf(b, sizeof(b), " ts=%s", num);
		app(g, b);
	}
	for (int r = 0; r < GW_NROLES; r++) {
		if (!gw_rec_has(rec, (enum gw_role)r))
			continue;
		gw_wire_fmt_double(num, rec->v[r]);
		snprintf(b, sizeof(b), " %s=%s", gw_role_name((enum gw_role)r), num);
		app(g, b);
	}
	for (int f = 0; f < GW_NFIELDS; f++) {
		if (!gw_rec_has_field(rec, (enum gw_field)f))
			continue;
		gw_wire_fmt_double(num, rec->f[f]);
		snprintf(b, sizeof(b), " %s=%s", gw_field_name((enum gw_field)f), num);
		app(g, b);
	}
	if (rec->n_extra)
		app(g, " |");
	for (size_t i = 0; i < rec->n_extra; i++) {
		gw_wire_fmt_double(num, rec->extra[i].value);
		snprintf(b, sizeof(b), " %s=%s", rec->extra[i].name, num);
		app(g, b);
	}
	app(g, "\n");
	return 0;
}

void on_error(void *data, uint64_t line, const struct gw_wire_err *e)
{
	const char *msg = e->msg;
	struct got *g = data;
	if (g->errors < 8) {
		snprintf(g->errmsg[g->errors], sizeof(g->errmsg[0]), "%s", msg);
		g->errline[g->errors] = line;
	}
	g->errors++;
}

/* Read `in` with the given chunk size (0: one piece). */
void read_with(const void *in, size_t n, size_t chunk, const char *format, struct res *out)
{
	memset(out, 0, sizeof(*out));
	struct gw_reader_opts o = {.aliases = aliases, .run = "r", .format = format};
	struct gw_reader_sink s = {.data = &out->g, .on_rec = on_rec, .on_error = on_error};
	struct gw_reader *r;
	char err[256];
	ck_assert_int_eq(gw_reader_new(&o, &s, &r, err, sizeof(err)), 0);
	const char *p = in;
	size_t off = 0;
	int rc = 0;
	while (off < n && !rc) {
		size_t k = chunk ? GW_MIN_(chunk, n - off) : n;
		rc = gw_reader_feed(r, p + off, k);
		off += k;
	}
	if (!rc)
		rc = gw_reader_finish(r);
	out->rc = rc;
	snprintf(out->err, sizeof(out->err), "%s", gw_reader_error(r));
	if (gw_reader_format(r))
		snprintf(out->format, sizeof(out->format), "%s", gw_reader_format(r)->name);
	out->consumed = gw_reader_consumed(r);
	out->lines = gw_reader_lines(r);
	if (!out->g.text)
		app(&out->g, "");
	gw_reader_free(r);
}

/* Read s in one piece and byte by byte; both must agree.  Returns the
 * one-piece result (the caller frees res->g.text). */
void read_both(const void *in, size_t n, const char *format, struct res *one)
{
	struct res bytes;
	read_with(in, n, 0, format, one);
	read_with(in, n, 1, format, &bytes);
	ck_assert_int_eq(one->rc, bytes.rc);
	ck_assert_str_eq(one->g.text, bytes.g.text);
	ck_assert_int_eq(one->g.errors, bytes.g.errors);
	ck_assert_str_eq(one->format, bytes.format);
	free(bytes.g.text);
}

void read_str(const char *s, const char *format, struct res *one)
{
	read_both(s, strlen(s), format, one);
}


void forms(const struct form *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct res r;
		read_str(c[i].in, NULL, &r);
		ck_assert_msg(r.rc == 0, "%s: rc %d: %s", c[i].what, r.rc, r.err);
		ck_assert_msg(!strcmp(r.format, c[i].format), "%s: read as %s", c[i].what, r.format);
		ck_assert_msg(!strcmp(r.g.text, c[i].want), "%s:\n%s", c[i].what, r.g.text);
		ck_assert_msg(r.g.errors == 0, "%s: %d errors: %s", c[i].what, r.g.errors, r.g.errmsg[0]);
		free(r.g.text);
	}
}
