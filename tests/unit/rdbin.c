/*
 * The harness of the binary and table readers' unit tests (rdbin.h).
 */
#include "gwcheck.h"
#include "rdbin.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "util.h"

size_t put_record(unsigned char *out, size_t at, const void *data, size_t n, int bad)
{
	unsigned char *h = out + at;
	for (int i = 0; i < 8; i++)
		h[i] = (unsigned char)((uint64_t)n >> (8 * i));
	uint32_t c = gw_crc32c_mask(gw_crc32c(0, h, 8)) ^ (bad == 1);
	for (int i = 0; i < 4; i++)
		h[8 + i] = (unsigned char)(c >> (8 * i));
	memcpy(h + 12, data, n);
	c = gw_crc32c_mask(gw_crc32c(0, data, n)) ^ (bad == 2);
	for (int i = 0; i < 4; i++)
		h[12 + n + i] = (unsigned char)(c >> (8 * i));
	return at + 16 + n;
}

void app(struct got *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(g->text + g->len, sizeof(g->text) - g->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		g->len = GW_MIN(g->len + (size_t)n, sizeof(g->text) - 1);
}

int on_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct got *g = data;
	g->points++;
	app(g, "%llu %s %lld", (unsigned long long)line, rec->run, (long long)rec->step);
	if (rec->ts == rec->ts)
		app(g, " ts=%.17g", rec->ts);
	for (int k = 0; k < GW_NROLES; k++)
		if (gw_rec_has(rec, (enum gw_role)k))
			app(g, " %s=%.17g", gw_role_name((enum gw_role)k), rec->v[k]);
	if (rec->n_extra)
		app(g, " |");
	for (size_t i = 0; i < rec->n_extra; i++)
		app(g, " %s=%.17g", rec->extra[i].name, rec->extra[i].value);
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

/* Read in[0..n) with `format` (NULL: sniffed), in one feed (step 0) or in
 * pieces of `step` bytes; returns what gw_reader_finish (or a failing feed)
 * returned, the format used in *fmt and the error text in err. */
int read_in(const void *in, size_t n, const char *format, size_t step, uint64_t first_line,
                   struct got *g, char *fmt, char *err)
{
	struct gw_reader_opts o = {.aliases = aliases, .run = "r", .format = format,
	                           .first_line = first_line};
	struct gw_reader_sink sink = {.data = g, .on_rec = on_rec, .on_error = on_error};
	struct gw_reader *r;
	char e[256];
	memset(g, 0, sizeof(*g));
	ck_assert_int_eq(gw_reader_new(&o, &sink, &r, e, sizeof(e)), 0);
	int rc = 0;
	const char *p = in;
	for (size_t i = 0; i < n && !rc; i += step ? step : n)
		rc = gw_reader_feed(r, p + i, step ? GW_MIN(step, n - i) : n);
	if (!rc)
		rc = gw_reader_finish(r);
	if (fmt)
		snprintf(fmt, 32, "%s", gw_reader_format(r) ? gw_reader_format(r)->name : "");
	if (err)
		snprintf(err, 512, "%s", gw_reader_error(r));
	gw_reader_free(r);
	return rc;
}

/* Read twice (one feed, byte by byte): the same result both ways. */
int read_both(const void *in, size_t n, const char *format, struct got *g, char *err)
{
	static struct got g1;
	char err1[512], fmt1[32], fmt[32];
	int rc = read_in(in, n, format, 0, 0, g, fmt, err);
	int rc1 = read_in(in, n, format, 1, 0, &g1, fmt1, err1);
	ck_assert_int_eq(rc, rc1);
	ck_assert_str_eq(fmt, fmt1);
	ck_assert_str_eq(g->text, g1.text);
	ck_assert_int_eq(g->errors, g1.errors);
	if (err)
		ck_assert_str_eq(err, err1);
	return rc;
}
