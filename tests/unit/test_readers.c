/*
 * Unit tests of the readers layer (readers/): the framework (compression,
 * sniffing, line splitting, run splitting, the consumed offset, "nothing
 * readable") and every text format's hazards.  Every input is fed twice,
 * in one piece and byte by byte, and must give the same points.
 */
#include "gwcheck.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "reader.h"
#include "wire.h"

#define GW_MIN_(a, b) ((a) < (b) ? (a) : (b))

/* ---- a sink that writes every point as one line of text ----------------- */

struct got {
	char *text;         /* "line run step role=value ... | extra=value ...\n" per point */
	size_t len, cap;
	int points, events, errors;
	char errmsg[8][256];
	uint64_t errline[8];
};

static void app(struct got *g, const char *s)
{
	size_t n = strlen(s);
	if (g->len + n + 1 > g->cap) {
		g->cap = (g->len + n + 1) * 2;
		g->text = realloc(g->text, g->cap);
	}
	memcpy(g->text + g->len, s, n + 1);
	g->len += n;
}

static int on_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct got *g = data;
	char b[256];
	snprintf(b, sizeof(b), "%llu %s %lld", (unsigned long long)line, rec->run, (long long)rec->step);
	app(g, b);
	if (rec->event) {
		g->events++;
		snprintf(b, sizeof(b), " event=%s", rec->event);
		app(g, b);
		json_t *v = json_object_get(rec->attrs, "checkpoint_step");
		if (v) {
			snprintf(b, sizeof(b), " checkpoint_step=%lld", (long long)json_integer_value(v));
			app(g, b);
		}
	} else {
		g->points++;
	}
	if (rec->ts == rec->ts) {
		snprintf(b, sizeof(b), " ts=%.17g", rec->ts);
		app(g, b);
	}
	for (int r = 0; r < GW_NROLES; r++) {
		if (!gw_rec_has(rec, (enum gw_role)r))
			continue;
		snprintf(b, sizeof(b), " %s=%.17g", gw_role_name((enum gw_role)r), rec->v[r]);
		app(g, b);
	}
	if (rec->n_extra)
		app(g, " |");
	for (size_t i = 0; i < rec->n_extra; i++) {
		snprintf(b, sizeof(b), " %s=%.17g", rec->extra[i].name, rec->extra[i].value);
		app(g, b);
	}
	app(g, "\n");
	return 0;
}

static void on_error(void *data, uint64_t line, const char *msg)
{
	struct got *g = data;
	if (g->errors < 8) {
		snprintf(g->errmsg[g->errors], sizeof(g->errmsg[0]), "%s", msg);
		g->errline[g->errors] = line;
	}
	g->errors++;
}

static struct gw_alias *aliases;

struct res {
	struct got g;
	int rc;
	char err[512];
	char format[32];
	uint64_t consumed, lines;
};

/* Read `in` with the given chunk size (0: one piece). */
static void read_with(const void *in, size_t n, size_t chunk, const char *format, struct res *out)
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
static void read_both(const void *in, size_t n, const char *format, struct res *one)
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

static void read_str(const char *s, const char *format, struct res *one)
{
	read_both(s, strlen(s), format, one);
}

/* ---- framework ------------------------------------------------------------ */

START_TEST(ndjson_plain)
{
	struct res r;
	read_str("{\"run\":\"a\",\"step\":1,\"loss\":2.5,\"grad_norm\":NaN,\"x\":3}\n"
	         "\n"
	         "{\"step\":2,\"loss\":2.25}\n"
	         "{\"run\":\"a\",\"step\":3,\"loss\":\"bad\"}\n"
	         "{\"run\":\"a\",\"step\":4,\"event\":\"checkpoint_saved\"}\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "ndjson");
	ck_assert_str_eq(r.g.text, "1 a 1 loss=2.5 grad_norm=nan | x=3\n"
	                           "3 r 2 loss=2.25\n"
	                           "5 a 4 event=checkpoint_saved\n");
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_int_eq(r.g.errline[0], 4);
	ck_assert_str_eq(r.g.errmsg[0], "bad_value: field \"loss\" at column 28: expected a number "
	                                "(or NaN/Infinity), got a string");
	ck_assert_int_eq(r.lines, 5);
	free(r.g.text);
}
END_TEST

START_TEST(ndjson_cut_last_line)
{
	struct res r;
	read_str("{\"run\":\"a\",\"step\":1,\"loss\":1}\n{\"run\":\"a\",\"step\":2,\"lo", NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(r.g.points, 1);
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_int_eq(r.g.errline[0], 2);
	ck_assert_msg(strstr(r.g.errmsg[0], "(last line, no newline) malformed_json"), "%s", r.g.errmsg[0]);
	free(r.g.text);
}
END_TEST

START_TEST(nothing_readable)
{
	struct res r;
	read_str("hello world\nthis is not a training log\n", NULL, &r);
	ck_assert_int_eq(r.rc, -EPROTO);
	ck_assert_msg(strstr(r.err, "nothing readable") && strstr(r.err, "tried: ndjson"), "%s", r.err);
	free(r.g.text);

	read_str("", NULL, &r);
	ck_assert_int_eq(r.rc, -EPROTO);
	ck_assert_msg(strstr(r.err, "empty"), "%s", r.err);
	free(r.g.text);

	/* recognised, but every line is rejected: still nothing readable */
	read_str("{\"run\":\"a\",\"step\":\"x\"}\n{\"run\":\"a\",\"step\":-1}\n", NULL, &r);
	ck_assert_int_eq(r.rc, -EPROTO);
	ck_assert_int_eq(r.g.errors, 2);
	ck_assert_msg(strstr(r.err, "nothing readable: read as ndjson"), "%s", r.err);
	free(r.g.text);
}
END_TEST

START_TEST(unknown_format)
{
	struct gw_reader_opts o = {.aliases = aliases, .run = "r", .format = "nope"};
	struct gw_reader_sink s = {.on_rec = on_rec};
	struct gw_reader *r;
	char err[256];
	ck_assert_int_eq(gw_reader_new(&o, &s, &r, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, "unknown input format \"nope\"") && strstr(err, "ndjson"), "%s", err);
	ck_assert_ptr_eq(gw_reader_format_find("nope"), NULL);
	ck_assert_ptr_ne(gw_reader_format_find("ndjson"), NULL);
}
END_TEST

static char *gzip_of(const char *s, size_t n, size_t *out_len)
{
	z_stream z = {0};
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	size_t cap = deflateBound(&z, n) + 64;
	char *out = malloc(cap);
	z.next_in = (unsigned char *)s;
	z.avail_in = (uInt)n;
	z.next_out = (unsigned char *)out;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static char *zstd_of(const char *s, size_t n, size_t *out_len)
{
	/* with a checksum, as the zstd command writes by default */
	size_t cap = ZSTD_compressBound(n);
	char *out = malloc(cap);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	*out_len = ZSTD_compress2(c, out, cap, s, n);
	ZSTD_freeCCtx(c);
	ck_assert(!ZSTD_isError(*out_len));
	return out;
}

static char *ndjson_lines(int n, size_t *len)
{
	char *s = malloc((size_t)n * 64 + 1);
	size_t o = 0;
	for (int i = 1; i <= n; i++)
		o += (size_t)sprintf(s + o, "{\"run\":\"z\",\"step\":%d,\"loss\":%d.5}\n", i, i % 7);
	*len = o;
	return s;
}

START_TEST(gzip_and_zstd)
{
	size_t n, gn, zn;
	char *plain = ndjson_lines(3000, &n);
	char *gz = gzip_of(plain, n, &gn);
	char *zs = zstd_of(plain, n, &zn);
	struct res a, b, c;
	read_with(plain, n, 0, NULL, &a);
	read_both(gz, gn, NULL, &b);
	read_both(zs, zn, NULL, &c);
	ck_assert_int_eq(a.rc, 0);
	ck_assert_int_eq(a.g.points, 3000);
	ck_assert_int_eq(b.rc, 0);
	ck_assert_int_eq(c.rc, 0);
	ck_assert_str_eq(a.g.text, b.g.text);
	ck_assert_str_eq(a.g.text, c.g.text);
	ck_assert_int_eq(b.consumed, n); /* of the decompressed input */

	/* two gzip members one after the other are one input */
	char *two = malloc(gn * 2);
	memcpy(two, gz, gn);
	memcpy(two + gn, gz, gn);
	struct res d;
	read_with(two, gn * 2, 0, NULL, &d);
	ck_assert_int_eq(d.rc, 0);
	ck_assert_int_eq(d.g.points, 6000);
	free(two);
	free(d.g.text);

	/* cut short: the points before the cut, then -EPROTO naming it */
	struct res e;
	read_with(gz, gn / 2, 0, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "gzip: the compressed stream is cut short"), "%s", e.err);
	ck_assert_int_gt(e.g.points, 100);
	free(e.g.text);
	read_with(zs, zn / 2, 0, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "zstd: the compressed stream is cut short"), "%s", e.err);
	free(e.g.text);

	/* corrupt: a clear error */
	gz[gn / 2] ^= 0x5a;
	gz[gn / 2 + 1] ^= 0xa5;
	read_with(gz, gn, 0, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "gzip: corrupt compressed data"), "%s", e.err);
	free(e.g.text);
	zs[zn / 2] ^= 0x5a;
	zs[zn / 2 + 1] ^= 0xa5;
	read_with(zs, zn, 0, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "zstd: corrupt compressed data"), "%s", e.err);
	free(e.g.text);

	free(a.g.text);
	free(b.g.text);
	free(c.g.text);
	free(plain);
	free(gz);
	free(zs);
}
END_TEST

START_TEST(consumed_offset)
{
	const char *s = "{\"run\":\"a\",\"step\":1,\"loss\":1}\n{\"run\":\"a\",\"step\":2,\"loss\":1}\n{\"run\":\"a\"";
	struct gw_reader_opts o = {.aliases = aliases, .run = "r", .format = "ndjson", .first_line = 100};
	struct got g = {0};
	struct gw_reader_sink sk = {.data = &g, .on_rec = on_rec, .on_error = on_error};
	struct gw_reader *r;
	char err[256];
	ck_assert_int_eq(gw_reader_new(&o, &sk, &r, err, sizeof(err)), 0);
	size_t first = strchr(s, '\n') - s + 1;
	/* fed up to the middle of line 2: only line 1 is consumed */
	ck_assert_int_eq(gw_reader_feed(r, s, first + 5), 0);
	ck_assert_int_eq(gw_reader_consumed(r), first);
	ck_assert_int_eq(gw_reader_feed(r, s + first + 5, strlen(s) - first - 5), 0);
	ck_assert_int_eq(gw_reader_consumed(r), strrchr(s, '\n') - s + 1);
	ck_assert_int_eq(g.points, 2);
	/* line numbers continue from first_line */
	ck_assert_msg(!strncmp(g.text, "101 a 1", 7), "%s", g.text);
	gw_reader_free(r);
	free(g.text);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("readers");
	TCase *t = tcase_create("framework");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, ndjson_plain);
	tcase_add_test(t, ndjson_cut_last_line);
	tcase_add_test(t, nothing_readable);
	tcase_add_test(t, unknown_format);
	tcase_add_test(t, gzip_and_zstd);
	tcase_add_test(t, consumed_offset);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	aliases = gw_alias_new();
	int rc = gw_check_run(suite());
	gw_alias_free(aliases);
	return rc;
}
