/*
 * Unit tests of the binary and table readers: CRC-32C (published vectors
 * and a bit-at-a-time reference), TFRecord framing (a record TensorFlow
 * wrote, records split anywhere, bad CRCs, cut records, records over the
 * size limit), TensorBoard events through the reader API (both scalar
 * encodings, grouping by step, what is skipped, errors with record numbers,
 * the consumed offset), and the Lightning and W&B CSV layouts.  Event
 * files are built here byte by byte with a small protobuf writer, not with
 * the protobuf-c code under test.  Every input is read twice, in one feed
 * and byte by byte, and must give the same points.  (Over 600 lines: one
 * suite for the three readers that share the sink and the framing helpers;
 * the test cases are grouped by reader.)
 */
#include "gwcheck.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "reader.h"
#include "tfrecord.h"
#include "util.h"
#include "wire.h"

/* ---- CRC-32C ---------------------------------------------------------- */

/* Bit at a time, straight from the polynomial: the reference the table
 * must agree with. */
static uint32_t crc_bitwise(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? 0x82f63b78u : 0);
	}
	return ~c;
}

START_TEST(crc_vectors)
{
	unsigned char b[32];
	ck_assert_uint_eq(gw_crc32c(0, "", 0), 0);
	ck_assert_uint_eq(gw_crc32c(0, "123456789", 9), 0xe3069283u);
	/* RFC 3720 (iSCSI), appendix B.4 */
	memset(b, 0, sizeof(b));
	ck_assert_uint_eq(gw_crc32c(0, b, 32), 0x8a9136aau);
	memset(b, 0xff, sizeof(b));
	ck_assert_uint_eq(gw_crc32c(0, b, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		b[i] = (unsigned char)i;
	ck_assert_uint_eq(gw_crc32c(0, b, 32), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		b[i] = (unsigned char)(31 - i);
	ck_assert_uint_eq(gw_crc32c(0, b, 32), 0x113fdb5cu);
}
END_TEST

START_TEST(crc_table_and_chaining)
{
	unsigned char b[4096];
	srand(7);
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)rand();
	for (size_t n = 0; n <= 300; n++)
		ck_assert_uint_eq(gw_crc32c(0, b, n), crc_bitwise(b, n));
	uint32_t whole = gw_crc32c(0, b, sizeof(b));
	ck_assert_uint_eq(whole, crc_bitwise(b, sizeof(b)));
	for (size_t cut = 0; cut <= sizeof(b); cut += 97)
		ck_assert_uint_eq(gw_crc32c(gw_crc32c(0, b, cut), b + cut, sizeof(b) - cut), whole);
}
END_TEST

/* The first record of keras-yj-cbam-rms10-train.tfevents as TensorFlow
 * wrote it: length 24, its masked CRC, an Event {wall_time 1666350020.0,
 * file_version "brain.Event:2"}, the data's masked CRC. */
static const unsigned char tf_record[40] = {
	0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa3, 0x7f, 0x4b, 0x22,
	0x09, 0x00, 0x00, 0x00, 0xf1, 0x9e, 0xd4, 0xd8, 0x41, 0x1a, 0x0d, 'b',
	'r', 'a', 'i', 'n', '.', 'E', 'v', 'e', 'n', 't', ':', '2',
	0x49, 0x72, 0xda, 0xac,
};

static uint32_t rd32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

START_TEST(crc_mask_matches_tensorflow)
{
	ck_assert_uint_eq(gw_crc32c_mask(gw_crc32c(0, tf_record, 8)), rd32(tf_record + 8));
	ck_assert_uint_eq(gw_crc32c_mask(gw_crc32c(0, tf_record + 12, 24)), rd32(tf_record + 36));
	ck_assert(gw__tfr_head_ok(tf_record, 12));
	ck_assert(!gw__tfr_head_ok(tf_record, 11));
}
END_TEST

/* ---- TFRecord framing --------------------------------------------------- */

/* Append one framed record of data[0..n) to out; returns the new length.
 * bad: 1 spoils the length CRC, 2 the data CRC. */
static size_t put_record(unsigned char *out, size_t at, const void *data, size_t n, int bad)
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

struct frames {
	int n;
	char data[16][64];
	uint64_t len[16], recno[16], offset[16], end[16];
	int status[16];
	int stop_at;
};

static int on_frame(void *d, const struct gw__tfr_rec *rec)
{
	struct frames *f = d;
	if (f->n < 16) {
		memset(f->data[f->n], 0, sizeof(f->data[0]));
		if (rec->data)
			memcpy(f->data[f->n], rec->data, GW_MIN(rec->len, sizeof(f->data[0]) - 1));
		f->len[f->n] = rec->len;
		f->recno[f->n] = rec->recno;
		f->offset[f->n] = rec->offset;
		f->end[f->n] = rec->end;
		f->status[f->n] = rec->status;
	}
	f->n++;
	return f->stop_at && f->n == f->stop_at ? -EINTR : 0;
}

START_TEST(frame_tensorflow_record_any_split)
{
	/* the real record, fed in every split of two and one byte at a time */
	for (size_t cut = 0; cut <= sizeof(tf_record); cut++) {
		struct gw__tfr t;
		struct frames f = {0};
		gw__tfr_init(&t, 0, 0, 0);
		ck_assert_int_eq(gw__tfr_feed(&t, (const char *)tf_record, cut, on_frame, &f), 0);
		ck_assert_int_eq(f.n, cut == sizeof(tf_record));
		ck_assert_int_eq(gw__tfr_feed(&t, (const char *)tf_record + cut,
		                              sizeof(tf_record) - cut, on_frame, &f), 0);
		ck_assert_int_eq(f.n, 1);
		ck_assert_int_eq(f.status[0], GW_TFR_OK);
		ck_assert_uint_eq(f.len[0], 24);
		ck_assert_uint_eq(f.recno[0], 1);
		ck_assert_uint_eq(f.offset[0], 0);
		ck_assert_uint_eq(f.end[0], 40);
		ck_assert(memcmp(f.data[0] + 11, "brain.Event:2", 13) == 0);
		ck_assert_int_eq(gw__tfr_finish(&t), 0);
		gw__tfr_free(&t);
	}
	struct gw__tfr t;
	struct frames f = {0};
	gw__tfr_init(&t, 0, 0, 0);
	for (size_t i = 0; i < sizeof(tf_record); i++)
		ck_assert_int_eq(gw__tfr_feed(&t, (const char *)tf_record + i, 1, on_frame, &f), 0);
	ck_assert_int_eq(f.n, 1);
	gw__tfr_free(&t);
}
END_TEST

START_TEST(frame_numbers_offsets_and_base)
{
	unsigned char buf[256];
	size_t n = put_record(buf, 0, "alpha", 5, 0);
	n = put_record(buf, n, "", 0, 0);
	n = put_record(buf, n, "gamma!", 6, 0);
	struct gw__tfr t;
	struct frames f = {0};
	/* a reader resuming after 10 records and 1000 bytes */
	gw__tfr_init(&t, 0, 10, 1000);
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, n, on_frame, &f), 0);
	ck_assert_int_eq(f.n, 3);
	ck_assert_str_eq(f.data[0], "alpha");
	ck_assert_str_eq(f.data[1], "");
	ck_assert_str_eq(f.data[2], "gamma!");
	ck_assert_uint_eq(f.recno[0], 11);
	ck_assert_uint_eq(f.recno[2], 13);
	ck_assert_uint_eq(f.offset[0], 1000);
	ck_assert_uint_eq(f.offset[1], 1021);
	ck_assert_uint_eq(f.offset[2], 1037);
	ck_assert_uint_eq(f.end[2], 1000 + n);
	gw__tfr_free(&t);
}
END_TEST

START_TEST(frame_bad_data_crc_skips_one_record)
{
	unsigned char buf[256];
	size_t n = put_record(buf, 0, "one", 3, 0);
	n = put_record(buf, n, "two", 3, 2);
	n = put_record(buf, n, "three", 5, 0);
	for (int split = 0; split < 2; split++) {
		struct gw__tfr t;
		struct frames f = {0};
		gw__tfr_init(&t, 0, 0, 0);
		if (split)
			for (size_t i = 0; i < n; i++)
				ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf + i, 1, on_frame, &f), 0);
		else
			ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, n, on_frame, &f), 0);
		ck_assert_int_eq(f.n, 3);
		ck_assert_int_eq(f.status[0], GW_TFR_OK);
		ck_assert_int_eq(f.status[1], GW_TFR_BAD_CRC);
		ck_assert_str_eq(f.data[1], "");   /* no data handed over */
		ck_assert_uint_eq(f.recno[1], 2);
		ck_assert_uint_eq(f.offset[1], 19);
		ck_assert_int_eq(f.status[2], GW_TFR_OK);
		ck_assert_str_eq(f.data[2], "three");
		gw__tfr_free(&t);
	}
}
END_TEST

START_TEST(frame_bad_length_crc_ends_input)
{
	unsigned char buf[256];
	size_t n = put_record(buf, 0, "one", 3, 0);
	n = put_record(buf, n, "two", 3, 1);
	n = put_record(buf, n, "three", 5, 0);
	struct gw__tfr t;
	struct frames f = {0};
	gw__tfr_init(&t, 0, 0, 0);
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, n, on_frame, &f), -EPROTO);
	ck_assert_int_eq(f.n, 1);
	ck_assert_msg(strstr(t.err, "record 2 at byte 19") && strstr(t.err, "CRC of its length"),
	              "%s", t.err);
	/* dead from now on */
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, 19, on_frame, &f), -EPROTO);
	ck_assert_int_eq(f.n, 1);
	ck_assert_int_eq(gw__tfr_finish(&t), -EPROTO);
	gw__tfr_free(&t);
}
END_TEST

START_TEST(frame_cut_record_waits_then_reports)
{
	unsigned char buf[256];
	size_t n1 = put_record(buf, 0, "one", 3, 0);
	size_t n = put_record(buf, n1, "second", 6, 0);
	/* every cut inside the second record: nothing is wrong while more may
	 * come; at the end it is a cut record with its number and offset */
	for (size_t cut = n1 + 1; cut < n; cut++) {
		struct gw__tfr t;
		struct frames f = {0};
		gw__tfr_init(&t, 0, 0, 0);
		ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, cut, on_frame, &f), 0);
		ck_assert_int_eq(f.n, 1);
		ck_assert_int_eq(gw__tfr_finish(&t), -ENODATA);
		ck_assert_msg(strstr(t.err, "record 2 at byte 19 is cut"), "%s", t.err);
		if (cut < n1 + 12)
			ck_assert_msg(strstr(t.err, "12-byte head"), "%s", t.err);
		else if (cut < n1 + 18)
			ck_assert_msg(strstr(t.err, "of its 6 data bytes"), "%s", t.err);
		else
			ck_assert_msg(strstr(t.err, "inside the CRC"), "%s", t.err);
		gw__tfr_free(&t);
	}
}
END_TEST

START_TEST(frame_oversized_record_is_skipped_unheld)
{
	static unsigned char buf[3 * 4096];
	char big[4000];
	memset(big, 'x', sizeof(big));
	size_t n = put_record(buf, 0, "small", 5, 0);
	n = put_record(buf, n, big, sizeof(big), 0);
	n = put_record(buf, n, big, sizeof(big), 2);
	n = put_record(buf, n, "after", 5, 0);
	for (size_t step = 1; step <= 4096; step *= 8) {
		struct gw__tfr t;
		struct frames f = {0};
		gw__tfr_init(&t, 100, 0, 0);
		for (size_t i = 0; i < n; i += step)
			ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf + i, GW_MIN(step, n - i),
			                              on_frame, &f), 0);
		ck_assert_int_eq(f.n, 4);
		ck_assert_int_eq(f.status[1], GW_TFR_TOO_BIG);
		ck_assert_uint_eq(f.len[1], sizeof(big));
		ck_assert_int_eq(f.status[2], GW_TFR_BAD_CRC);
		ck_assert_str_eq(f.data[3], "after");
		ck_assert_uint_le(t.cap, 100 + 4);   /* the big ones were never held */
		gw__tfr_free(&t);
	}
}
END_TEST

START_TEST(frame_huge_length_holds_nothing)
{
	/* a head claiming 2^62 bytes with a valid CRC: no allocation, and the
	 * input ending is a cut record */
	unsigned char h[12] = {0, 0, 0, 0, 0, 0, 0, 0x40};
	uint32_t c = gw_crc32c_mask(gw_crc32c(0, h, 8));
	for (int i = 0; i < 4; i++)
		h[8 + i] = (unsigned char)(c >> (8 * i));
	struct gw__tfr t;
	struct frames f = {0};
	gw__tfr_init(&t, 0, 0, 0);
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)h, 12, on_frame, &f), 0);
	char junk[1000] = {0};
	ck_assert_int_eq(gw__tfr_feed(&t, junk, sizeof(junk), on_frame, &f), 0);
	ck_assert_int_eq(f.n, 0);
	ck_assert_ptr_null(t.buf);
	ck_assert_int_eq(gw__tfr_finish(&t), -ENODATA);
	gw__tfr_free(&t);
}
END_TEST

START_TEST(frame_callback_stop)
{
	unsigned char buf[256];
	size_t n = put_record(buf, 0, "a", 1, 0);
	n = put_record(buf, n, "b", 1, 0);
	struct gw__tfr t;
	struct frames f = {.stop_at = 1};
	gw__tfr_init(&t, 0, 0, 0);
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, n, on_frame, &f), -EINTR);
	ck_assert_int_eq(f.n, 1);
	gw__tfr_free(&t);
}
END_TEST

/* ---- a reader and a sink that prints every point ------------------------ */

struct got {
	char text[16384];     /* "line run step [ts] role=v ... | extra=v ...\n" per point */
	size_t len;
	int points, errors;
	char errmsg[8][320];
	uint64_t errline[8];
};

static void app(struct got *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void app(struct got *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(g->text + g->len, sizeof(g->text) - g->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		g->len = GW_MIN(g->len + (size_t)n, sizeof(g->text) - 1);
}

static int on_rec(void *data, const struct gw_rec *rec, uint64_t line)
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

static void on_error(void *data, uint64_t line, const struct gw_wire_err *e)
{
	const char *msg = e->msg;
	struct got *g = data;
	if (g->errors < 8) {
		snprintf(g->errmsg[g->errors], sizeof(g->errmsg[0]), "%s", msg);
		g->errline[g->errors] = line;
	}
	g->errors++;
}

static struct gw_alias *aliases;

/* Read in[0..n) with `format` (NULL: sniffed), in one feed (step 0) or in
 * pieces of `step` bytes; returns what gw_reader_finish (or a failing feed)
 * returned, the format used in *fmt and the error text in err. */
static int read_in(const void *in, size_t n, const char *format, size_t step, uint64_t first_line,
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
static int read_both(const void *in, size_t n, const char *format, struct got *g, char *err)
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

/* ---- a protobuf writer for the event files of the tests ----------------- */

struct pb {
	unsigned char b[2048];
	size_t n;
};

static void pb_varint(struct pb *p, uint64_t v)
{
	do {
		p->b[p->n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void pb_key(struct pb *p, unsigned field, unsigned wt)
{
	pb_varint(p, field << 3 | wt);
}

static void pb_bytes(struct pb *p, unsigned field, const void *d, size_t n)
{
	pb_key(p, field, 2);
	pb_varint(p, n);
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void pb_str(struct pb *p, unsigned field, const char *s)
{
	pb_bytes(p, field, s, strlen(s));
}

static void pb_msg(struct pb *p, unsigned field, const struct pb *m)
{
	pb_bytes(p, field, m->b, m->n);
}

static void pb_fixed(struct pb *p, unsigned field, uint64_t v, int bytes)
{
	pb_key(p, field, bytes == 8 ? 1 : 5);
	for (int i = 0; i < bytes; i++)
		p->b[p->n++] = (unsigned char)(v >> (8 * i));
}

static uint32_t f32bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static uint64_t f64bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	return u;
}

/* Summary.Value with a simple_value. */
static void val_simple(struct pb *sum, const char *tag, float v)
{
	struct pb val = {.n = 0};
	pb_str(&val, 1, tag);
	pb_fixed(&val, 2, f32bits(v), 4);
	pb_msg(sum, 1, &val);
}

enum tenc { T_CONTENT, T_VAL };

/* Summary.Value with a TensorProto: dtype 1 (float) or 2 (double), value in
 * tensor_content or float_val/double_val, ndim dimensions of size 2,
 * plugin (NULL: no metadata). */
static void val_tensor(struct pb *sum, const char *tag, int dtype, double v, enum tenc enc,
                       int ndim, const char *plugin)
{
	struct pb val = {.n = 0}, t = {.n = 0}, shape = {.n = 0}, md = {.n = 0}, pd = {.n = 0};
	pb_str(&val, 1, tag);
	pb_key(&t, 1, 0);
	pb_varint(&t, (uint64_t)dtype);
	for (int i = 0; i < ndim; i++) {
		struct pb dim = {.n = 0};
		pb_key(&dim, 1, 0);
		pb_varint(&dim, 2);
		pb_msg(&shape, 2, &dim);
	}
	pb_msg(&t, 2, &shape);   /* present even when empty, as TF writes it */
	unsigned char c[8];
	size_t cn = dtype == 1 ? 4 : 8;
	uint64_t bits = dtype == 1 ? f32bits((float)v) : f64bits(v);
	for (size_t i = 0; i < cn; i++)
		c[i] = (unsigned char)(bits >> (8 * i));
	if (enc == T_CONTENT)
		pb_bytes(&t, 4, c, cn);
	else
		pb_bytes(&t, dtype == 1 ? 5 : 6, c, cn);   /* packed, one element */
	pb_msg(&val, 8, &t);
	if (plugin) {
		pb_str(&pd, 1, plugin);
		pb_msg(&md, 1, &pd);
		pb_msg(&val, 9, &md);
	}
	pb_msg(sum, 1, &val);
}

/* An Event at step with wall time, its Summary (NULL: a graph_def instead). */
static void event(struct pb *ev, int64_t step, double wall, const struct pb *sum)
{
	ev->n = 0;
	pb_fixed(ev, 1, f64bits(wall), 8);
	pb_key(ev, 2, 0);
	pb_varint(ev, (uint64_t)step);
	if (sum)
		pb_msg(ev, 5, sum);
	else
		pb_bytes(ev, 4, "\x0a\x03" "abc", 5);
}

struct file {
	unsigned char b[16384];
	size_t n;
	size_t off[64];       /* offset of each record */
	int nrec;
};

static void add_rec(struct file *f, const void *d, size_t n, int bad)
{
	f->off[f->nrec++] = f->n;
	f->n = put_record(f->b, f->n, d, n, bad);
}

static void add_event(struct file *f, int64_t step, double wall, const struct pb *sum)
{
	struct pb ev;
	event(&ev, step, wall, sum);
	add_rec(f, ev.b, ev.n, 0);
}

/* A run as torch's SummaryWriter writes it: the file version, then one
 * Event per tag (loss, grad_norm, lr at steps 10 and 20, epoch). */
static void hf_like(struct file *f)
{
	struct pb ev = {.n = 0}, s;
	memset(f, 0, sizeof(*f));
	pb_fixed(&ev, 1, f64bits(1000.5), 8);
	pb_str(&ev, 3, "brain.Event:2");
	add_rec(f, ev.b, ev.n, 0);
	for (int k = 1; k <= 2; k++) {
		s.n = 0, val_simple(&s, "train/loss", 2.0f / (float)k), add_event(f, 10 * k, 1000 + k, &s);
		s.n = 0, val_simple(&s, "train/grad_norm", 0.5f), add_event(f, 10 * k, 1000.25 + k, &s);
		s.n = 0, val_simple(&s, "train/learning_rate", 1e-4f), add_event(f, 10 * k, 1001 + k, &s);
		s.n = 0, val_simple(&s, "train/epoch", 0.25f * (float)k), add_event(f, 10 * k, 1002 + k, &s);
	}
}

START_TEST(tfevents_simple_values_grouped_by_step)
{
	struct file f;
	struct got g;
	char err[512];
	hf_like(&f);
	ck_assert_int_eq(read_both(f.b, f.n, NULL, &g, err), 0);
	ck_assert_int_eq(g.errors, 0);
	/* sniffed; one point per step, at the record of its first value, with
	 * that record's wall time; float32 values widened exactly */
	ck_assert_str_eq(g.text,
	                 "2 r 10 ts=1001 loss=2 grad_norm=0.5 lr=9.9999997473787516e-05 | train/epoch=0.25\n"
	                 "6 r 20 ts=1002 loss=1 grad_norm=0.5 lr=9.9999997473787516e-05 | train/epoch=0.5\n");
}
END_TEST

START_TEST(tfevents_sniffed_as_tfevents)
{
	struct file f;
	struct got g;
	char fmt[32], err[512];
	hf_like(&f);
	ck_assert_int_eq(read_in(f.b, f.n, NULL, 0, 0, &g, fmt, err), 0);
	ck_assert_str_eq(fmt, "tfevents");
	/* a file of one record (shorter than any sniffing threshold) too */
	ck_assert_int_ne(read_in(f.b, f.off[1], NULL, 0, 0, &g, fmt, err), 0);
	ck_assert_str_eq(fmt, "tfevents");
	ck_assert_msg(strstr(err, "no training point"), "%s", err);
}
END_TEST

START_TEST(tfevents_tensor_scalars)
{
	struct file f = {.n = 0};
	struct got g;
	struct pb s;
	/* TF2: rank-0 tensors, plugin "scalars", every encoding */
	s.n = 0, val_tensor(&s, "epoch_loss", 1, 2.5, T_CONTENT, 0, "scalars");
	add_event(&f, 0, 50, &s);
	s.n = 0, val_tensor(&s, "epoch_loss", 1, 1.25, T_VAL, 0, "scalars");
	add_event(&f, 1, 51, &s);
	s.n = 0, val_tensor(&s, "epoch_loss", 2, 0.1, T_CONTENT, 0, "scalars");
	add_event(&f, 2, 52, &s);
	s.n = 0, val_tensor(&s, "epoch_loss", 2, 0.2, T_VAL, 0, NULL);   /* no plugin: read */
	add_event(&f, 3, 53, &s);
	/* several values in one Summary, one of them the TF OD API's total */
	s.n = 0;
	val_tensor(&s, "Loss/classification_loss", 1, 0.5, T_CONTENT, 0, "scalars");
	val_tensor(&s, "Loss/total_loss", 1, 0.75, T_CONTENT, 0, "scalars");
	val_tensor(&s, "learning_rate", 1, 0.0625, T_CONTENT, 0, "scalars");
	add_event(&f, 1100, 60, &s);
	ck_assert_int_eq(read_both(f.b, f.n, "tfevents", &g, NULL), 0);
	ck_assert_int_eq(g.errors, 0);
	ck_assert_str_eq(g.text,
	                 "1 r 0 ts=50 loss=2.5\n"
	                 "2 r 1 ts=51 loss=1.25\n"
	                 "3 r 2 ts=52 loss=0.10000000000000001\n"
	                 "4 r 3 ts=53 loss=0.20000000000000001\n"
	                 "5 r 1100 ts=60 loss=0.75 lr=0.0625 | Loss/classification_loss=0.5\n");
}
END_TEST

START_TEST(tfevents_skips_what_is_not_a_scalar)
{
	struct file f = {.n = 0};
	struct got g;
	struct pb s, ev, val, md, pd;
	/* a graph, text (DT_STRING, shape [1], plugin text), a rank-1 float
	 * tensor, an image, hparams metadata without a value, a histogram */
	add_event(&f, 0, 1, NULL);
	s.n = 0, val_tensor(&s, "args/text_summary", 7, 0, T_CONTENT, 1, "text");
	add_event(&f, 0, 2, &s);
	s.n = 0, val_tensor(&s, "loss", 1, 1.0, T_CONTENT, 1, NULL);
	add_event(&f, 1, 3, &s);
	s.n = 0, val.n = 0, pb_str(&val, 1, "loss"), pb_bytes(&val, 4, "\x08\x01", 2);
	pb_msg(&s, 1, &val), add_event(&f, 1, 4, &s);
	s.n = 0, val.n = 0, md.n = 0, pd.n = 0;
	pb_str(&pd, 1, "hparams"), pb_msg(&md, 1, &pd);
	pb_str(&val, 1, "_hparams_/experiment"), pb_msg(&val, 9, &md), pb_msg(&s, 1, &val);
	add_event(&f, 0, 5, &s);
	s.n = 0, val.n = 0, pb_str(&val, 1, "loss"), pb_bytes(&val, 5, "\x09", 1);
	pb_msg(&s, 1, &val), add_event(&f, 1, 6, &s);
	/* a simple scalar without a role: no point */
	s.n = 0, val_simple(&s, "hp_metric", -1), add_event(&f, 0, 7, &s);
	/* an event of another kind at a step: does not end the point */
	s.n = 0, val_simple(&s, "loss", 3), add_event(&f, 5, 8, &s);
	ev.n = 0, pb_key(&ev, 2, 0), pb_varint(&ev, 5), pb_bytes(&ev, 7, "\x08\x01", 2);
	add_rec(&f, ev.b, ev.n, 0);
	s.n = 0, val_simple(&s, "grad_norm", 4), add_event(&f, 5, 9, &s);
	ck_assert_int_eq(read_both(f.b, f.n, "tfevents", &g, NULL), 0);
	ck_assert_int_eq(g.errors, 0);
	ck_assert_str_eq(g.text, "8 r 5 ts=8 loss=3 grad_norm=4\n");
}
END_TEST

START_TEST(tfevents_repeated_tag_starts_a_point)
{
	struct file f = {.n = 0};
	struct got g;
	struct pb s;
	/* Lightning: train_loss and epoch at step 49; at the epoch's end the
	 * validation logs epoch again at the same step, then val_loss */
	s.n = 0, val_simple(&s, "train_loss", 2), add_event(&f, 49, 1, &s);
	s.n = 0, val_simple(&s, "epoch", 0), add_event(&f, 49, 2, &s);
	s.n = 0, val_simple(&s, "epoch", 0), add_event(&f, 49, 3, &s);
	s.n = 0, val_simple(&s, "val_loss", 1.5), add_event(&f, 49, 4, &s);
	s.n = 0, val_simple(&s, "train_loss", 1.75), add_event(&f, 99, 5, &s);
	/* the same tag twice in one Summary too */
	s.n = 0, val_simple(&s, "loss", 1), val_simple(&s, "loss", 0.5), add_event(&f, 100, 6, &s);
	ck_assert_int_eq(read_both(f.b, f.n, "tfevents", &g, NULL), 0);
	ck_assert_str_eq(g.text,
	                 "1 r 49 ts=1 loss=2 | epoch=0\n"
	                 "5 r 99 ts=5 loss=1.75\n"
	                 "6 r 100 ts=6 loss=1\n"
	                 "6 r 100 ts=6 loss=0.5\n");
}
END_TEST

START_TEST(tfevents_bad_values_are_reported)
{
	struct file f = {.n = 0};
	struct got g;
	struct pb s, val, t, md, pd;
	/* a scalars-plugin tensor with 3 content bytes, of dtype int32, of rank 1;
	 * a negative step; bytes that are not an Event */
	s.n = val.n = t.n = md.n = pd.n = 0;
	pb_str(&val, 1, "epoch_loss");
	pb_key(&t, 1, 0), pb_varint(&t, 1), pb_bytes(&t, 4, "abc", 3), pb_msg(&val, 8, &t);
	pb_str(&pd, 1, "scalars"), pb_msg(&md, 1, &pd), pb_msg(&val, 9, &md), pb_msg(&s, 1, &val);
	add_event(&f, 1, 1, &s);
	s.n = 0, val_tensor(&s, "epoch_loss", 3, 0, T_CONTENT, 0, "scalars");
	add_event(&f, 2, 1, &s);
	s.n = 0, val_tensor(&s, "epoch_loss", 1, 1, T_CONTENT, 1, "scalars");
	add_event(&f, 3, 1, &s);
	s.n = 0, val_simple(&s, "loss", 1), add_event(&f, -5, 1, &s);
	add_rec(&f, "\xff\xff\xff", 3, 0);
	s.n = 0, val_simple(&s, "loss", 7), add_event(&f, 6, 1, &s);
	ck_assert_int_eq(read_both(f.b, f.n, "tfevents", &g, NULL), 0);
	ck_assert_str_eq(g.text, "6 r 6 ts=1 loss=7\n");
	ck_assert_int_eq(g.errors, 5);
	ck_assert_uint_eq(g.errline[0], 1);
	ck_assert_msg(strstr(g.errmsg[0], "record 1 at byte 0: tag \"epoch_loss\": DT_FLOAT scalar "
	                     "with 3 bytes of tensor_content"), "%s", g.errmsg[0]);
	ck_assert_msg(strstr(g.errmsg[1], "dtype 3"), "%s", g.errmsg[1]);
	ck_assert_msg(strstr(g.errmsg[2], "not rank 0 (1 dimensions)"), "%s", g.errmsg[2]);
	ck_assert_msg(strstr(g.errmsg[3], "bad_step: record 4") && strstr(g.errmsg[3], "step -5"),
	              "%s", g.errmsg[3]);
	ck_assert_uint_eq(g.errline[4], 5);
	ck_assert_msg(strstr(g.errmsg[4], "bad_record: record 5 at byte") &&
	              strstr(g.errmsg[4], "not a TensorBoard Event"), "%s", g.errmsg[4]);
}
END_TEST

START_TEST(tfevents_crc_and_cut_records)
{
	struct file f;
	struct got g;
	char err[512];
	/* a spoilt data CRC: that record (step 10's loss) is reported, the rest read */
	hf_like(&f);
	f.b[f.off[2] - 1] ^= 1;
	ck_assert_int_eq(read_both(f.b, f.n, "tfevents", &g, err), 0);
	ck_assert_int_eq(g.errors, 1);
	ck_assert_uint_eq(g.errline[0], 2);
	char want[128];
	snprintf(want, sizeof(want), "bad_crc: record 2 at byte %zu", f.off[1]);
	ck_assert_msg(strstr(g.errmsg[0], want), "%s", g.errmsg[0]);
	ck_assert_str_eq(g.text,
	                 "3 r 10 ts=1001.25 grad_norm=0.5 lr=9.9999997473787516e-05 | train/epoch=0.25\n"
	                 "6 r 20 ts=1002 loss=1 grad_norm=0.5 lr=9.9999997473787516e-05 | train/epoch=0.5\n");
	/* a spoilt length CRC: the input ends there, with the record and offset */
	hf_like(&f);
	f.b[f.off[6] + 9] ^= 1;
	ck_assert_int_eq(read_both(f.b, f.n, "tfevents", &g, err), -EPROTO);
	snprintf(want, sizeof(want), "record 7 at byte %zu: the CRC of its length", f.off[6]);
	ck_assert_msg(strstr(err, want), "%s", err);
	ck_assert_str_eq(g.text, "2 r 10 ts=1001 loss=2 grad_norm=0.5 lr=9.9999997473787516e-05 "
	                         "| train/epoch=0.25\n");
	/* cut inside the last record: reported, and every point before it kept */
	hf_like(&f);
	ck_assert_int_eq(read_both(f.b, f.n - 5, "tfevents", &g, err), 0);
	ck_assert_int_eq(g.errors, 1);
	ck_assert_uint_eq(g.errline[0], 9);
	snprintf(want, sizeof(want), "record 9 at byte %zu is cut", f.off[8]);
	ck_assert_msg(strstr(g.errmsg[0], want), "%s", g.errmsg[0]);
	ck_assert_int_eq(g.points, 2);
}
END_TEST

START_TEST(tfevents_growing_file)
{
	struct file f;
	hf_like(&f);
	struct got g;
	struct gw_reader_opts o = {.aliases = aliases, .run = "r", .follow = true};
	struct gw_reader_sink sink = {.data = &g, .on_rec = on_rec, .on_error = on_error};
	struct gw_reader *r;
	char e[256];
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(gw_reader_new(&o, &sink, &r, e, sizeof(e)), 0);
	/* up to the middle of step 20's second record: step 10 is handed over
	 * once step 20 starts; the consumed offset stays at step 20's first
	 * record, which a follower would read again */
	ck_assert_int_eq(gw_reader_feed(r, f.b, f.off[6] + 7), 0);
	ck_assert_int_eq(g.points, 1);
	ck_assert_uint_eq(gw_reader_consumed(r), f.off[5]);
	ck_assert_uint_eq(gw_reader_lines(r), 6);
	ck_assert_int_eq(gw_reader_feed(r, f.b + f.off[6] + 7, f.n - f.off[6] - 7), 0);
	ck_assert_int_eq(g.points, 1);
	ck_assert_int_eq(gw_reader_finish(r), 0);
	ck_assert_int_eq(g.points, 2);
	ck_assert_int_eq(g.errors, 0);
	gw_reader_free(r);
	/* a follower resuming there numbers the records from where it was */
	ck_assert_int_eq(read_in(f.b + f.off[5], f.n - f.off[5], "tfevents", 0, 5, &g, NULL, NULL), 0);
	ck_assert_str_eq(g.text, "6 r 20 ts=1002 loss=1 grad_norm=0.5 lr=9.9999997473787516e-05 "
	                         "| train/epoch=0.5\n");
}
END_TEST

/* ---- CSV ------------------------------------------------------------------- */

START_TEST(csv_lightning_sorted_crlf_sparse)
{
	/* Lightning's newer CSVLogger: sorted header, CRLF, train rows, a
	 * validation row, an epoch row; no newline at the end */
	const char *in =
		"epoch,step,train_loss_epoch,train_loss_step,train_ppl_step,val_loss\r\n"
		"0,49,,7.5,2000.5,\r\n"
		"0,99,,7.25,1500,\r\n"
		"0,99,,,,4.125\r\n"
		"0,99,7.375,,,\r\n"
		"1,149,,nan,1400,";
	struct got g;
	char fmt[32], err[512];
	ck_assert_int_eq(read_in(in, strlen(in), NULL, 0, 0, &g, fmt, err), 0);
	ck_assert_str_eq(fmt, "lightning_csv");
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, err), 0);
	ck_assert_int_eq(g.errors, 0);
	ck_assert_str_eq(g.text,
	                 "2 r 49 loss=7.5 | epoch=0 train_ppl_step=2000.5\n"
	                 "3 r 99 loss=7.25 | epoch=0 train_ppl_step=1500\n"
	                 "6 r 149 loss=nan | epoch=1 train_ppl_step=1400\n");
}
END_TEST

START_TEST(csv_lightning_insertion_order)
{
	/* the older CSVLogger: columns in the order they were logged, step last */
	const char *in = "train_loss,train_acc,epoch,step\n"
	                 "2.5,0.375,0,49\n"
	                 "2.75,0.25,1,99\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, NULL), 0);
	ck_assert_str_eq(g.text, "2 r 49 loss=2.5 | train_acc=0.375 epoch=0\n"
	                         "3 r 99 loss=2.75 | train_acc=0.25 epoch=1\n");
}
END_TEST

START_TEST(csv_lightning_errors)
{
	/* (the first row is sound: Lightning writes numbers only, and a text
	 * cell in the first row makes the table a plain csv, test_rd_paste) */
	const char *in = "epoch,step,train/loss,lr-AdamW\n"
	                 "0,19,1.75,0.001\n"
	                 "0,49,abc,0.001\n"      /* not a number */
	                 "0,,1.5,0.001\n"        /* no step */
	                 "0,4.5,1.5,0.001\n"     /* not a whole step */
	                 "0,99,1.5,0.001,7\n"    /* one cell too many */
	                 "0,149,1.25,0.001\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, NULL), 0);
	ck_assert_str_eq(g.text, "2 r 19 loss=1.75 lr=0.001 | epoch=0\n7 r 149 loss=1.25 lr=0.001 | epoch=0\n");
	ck_assert_int_eq(g.errors, 4);
	ck_assert_uint_eq(g.errline[0], 3);
	ck_assert_str_eq(g.errmsg[0], "bad_value: column \"train/loss\": \"abc\" is not a number; skipped");
	ck_assert_uint_eq(g.errline[1], 4);
	ck_assert_str_eq(g.errmsg[1], "missing_step: column \"step\" is empty; skipped");
	ck_assert_msg(strstr(g.errmsg[2], "bad_step: column \"step\": \"4.5\""), "%s", g.errmsg[2]);
	ck_assert_str_eq(g.errmsg[3], "bad_row: 5 cells, but the header has 4 columns; skipped");
	/* forced on a table without a step column: not readable, said so */
	char err[512];
	const char *nostep = "epoch,loss\n0,1\n";
	ck_assert_int_eq(read_both(nostep, strlen(nostep), "lightning_csv", &g, err), -EPROTO);
	ck_assert_msg(strstr(err, "line 1: the header has no 'step' column"), "%s", err);
}
END_TEST

START_TEST(csv_wandb_quoted_several_runs)
{
	/* the raw W&B export: all quoted, __MIN/__MAX, runs with gaps */
	const char *in =
		"\"Step\",\"run-a - loss\",\"run-a - loss__MIN\",\"run-a - loss__MAX\","
		"\"my - run - train/loss\",\"my - run - train/loss__MIN\",\"my - run - train/loss__MAX\"\n"
		"\"10\",\"3.5\",\"3.5\",\"3.5\",\"76.75\",\"76.75\",\"76.75\"\n"
		"\"20\",\"\",\"\",\"\",\"37.25\",\"37.25\",\"37.25\"\n"
		"\"30\",\"3.25\",\"3\",\"3.5\",\"\",\"\",\"\"\n";
	struct got g;
	char fmt[32];
	ck_assert_int_eq(read_in(in, strlen(in), NULL, 0, 0, &g, fmt, NULL), 0);
	ck_assert_str_eq(fmt, "wandb_csv");
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, NULL), 0);
	ck_assert_int_eq(g.errors, 0);
	/* run names keep their own " - " (the last one splits) */
	ck_assert_str_eq(g.text,
	                 "2 run-a 10 loss=3.5\n"
	                 "2 my - run 10 loss=76.75\n"
	                 "3 my - run 20 loss=37.25\n"
	                 "4 run-a 30 loss=3.25\n");
}
END_TEST

START_TEST(csv_wandb_unquoted_step_column_and_errors)
{
	/* unquoted (re-saved through pandas); a run with its own _step column;
	 * a bad cell spoils only its run's point */
	const char *in = "Step,a - loss,b - _step,b - train_loss\n"
	                 "10,3.5,100,1.5\n"
	                 "20,x,200,1.25\n"
	                 "30,3.25,,1\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, NULL), 0);
	ck_assert_str_eq(g.text,
	                 "2 a 10 loss=3.5\n"
	                 "2 b 100 loss=1.5\n"
	                 "3 b 200 loss=1.25\n"
	                 "4 a 30 loss=3.25\n"
	                 "4 b 30 loss=1\n");
	ck_assert_int_eq(g.errors, 1);
	ck_assert_uint_eq(g.errline[0], 3);
	ck_assert_str_eq(g.errmsg[0], "bad_value: column \"a - loss\": \"x\" is not a number; skipped");
}
END_TEST

START_TEST(csv_quoted_newline_and_line_numbers)
{
	/* a header cell with a comma and a line break inside quotes: the
	 * header is one row over two lines; points keep the lines they start on */
	const char *in = "step,\"loss\",\"note, with\nnewline\"\n"
	                 "1,2.5,3\n"
	                 "\n"
	                 "2,2.25,4\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), "lightning_csv", &g, NULL), 0);
	ck_assert_str_eq(g.text, "3 r 1 loss=2.5 | note, with\nnewline=3\n"
	                         "5 r 2 loss=2.25 | note, with\nnewline=4\n");
}
END_TEST

START_TEST(csv_stray_quote_keeps_line_numbers)
{
	/* a quote inside an unquoted cell is kept as text (not a quoted field),
	 * and the rows after it keep their own line numbers */
	const char *in = "step,loss\n"
	                 "1,2\"5\n"
	                 "2,2.5\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), "lightning_csv", &g, NULL), 0);
	ck_assert_str_eq(g.text, "3 r 2 loss=2.5\n");
	ck_assert_int_eq(g.errors, 1);
	ck_assert_uint_eq(g.errline[0], 2);
	ck_assert_str_eq(g.errmsg[0], "bad_value: column \"loss\": \"2\"5\" is not a number; skipped");
}
END_TEST

START_TEST(csv_sniffing)
{
	struct got g;
	char fmt[32], err[512];
	/* NDJSON with a "step" key is not a table */
	const char *nd = "{\"run\":\"x\",\"step\":1,\"loss\":2}\n";
	ck_assert_int_eq(read_in(nd, strlen(nd), NULL, 0, 0, &g, fmt, err), 0);
	ck_assert_str_eq(fmt, "ndjson");
	/* a header longer than the first sniff (256 bytes) */
	char in[2048];
	int n = snprintf(in, sizeof(in), "Step");
	for (int i = 0; i < 12; i++)
		n += snprintf(in + n, sizeof(in) - (size_t)n, ",\"a-long-run-name-number-%02d - loss\"", i);
	n += snprintf(in + n, sizeof(in) - (size_t)n, "\n5");
	for (int i = 0; i < 12; i++)
		n += snprintf(in + n, sizeof(in) - (size_t)n, ",%d", i);
	ck_assert_int_eq(read_in(in, (size_t)n, NULL, 0, 0, &g, fmt, err), 0);
	ck_assert_str_eq(fmt, "wandb_csv");
	ck_assert_int_eq(g.points, 12);
	/* prose that looks like a header for a line is not a table: the first
	 * row must have as many cells, with a number for the step */
	const char *prose = "Starting, model - gpt2, data - owt\nloading data, please wait, ok\n";
	ck_assert_int_eq(read_in(prose, strlen(prose), NULL, 0, 0, &g, fmt, err), -EPROTO);
	ck_assert_msg(strstr(err, "nothing readable"), "%s", err);
	const char *prose2 = "step,then,more\nnot,a,number\n";
	ck_assert_int_eq(read_in(prose2, strlen(prose2), NULL, 0, 0, &g, fmt, err), -EPROTO);
	/* a table with neither layout is not read as one */
	const char *other = "a,b,c\n1,2,3\n";
	ck_assert_int_eq(read_in(other, strlen(other), NULL, 0, 0, &g, fmt, err), -EPROTO);
	ck_assert_msg(strstr(err, "nothing readable"), "%s", err);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rd_binary");
	TCase *tc = tcase_create("crc32c");
	tcase_add_test(tc, crc_vectors);
	tcase_add_test(tc, crc_table_and_chaining);
	tcase_add_test(tc, crc_mask_matches_tensorflow);
	suite_add_tcase(s, tc);
	tc = tcase_create("tfrecord");
	tcase_add_test(tc, frame_tensorflow_record_any_split);
	tcase_add_test(tc, frame_numbers_offsets_and_base);
	tcase_add_test(tc, frame_bad_data_crc_skips_one_record);
	tcase_add_test(tc, frame_bad_length_crc_ends_input);
	tcase_add_test(tc, frame_cut_record_waits_then_reports);
	tcase_add_test(tc, frame_oversized_record_is_skipped_unheld);
	tcase_add_test(tc, frame_huge_length_holds_nothing);
	tcase_add_test(tc, frame_callback_stop);
	suite_add_tcase(s, tc);
	tc = tcase_create("tfevents");
	tcase_add_test(tc, tfevents_simple_values_grouped_by_step);
	tcase_add_test(tc, tfevents_sniffed_as_tfevents);
	tcase_add_test(tc, tfevents_tensor_scalars);
	tcase_add_test(tc, tfevents_skips_what_is_not_a_scalar);
	tcase_add_test(tc, tfevents_repeated_tag_starts_a_point);
	tcase_add_test(tc, tfevents_bad_values_are_reported);
	tcase_add_test(tc, tfevents_crc_and_cut_records);
	tcase_add_test(tc, tfevents_growing_file);
	suite_add_tcase(s, tc);
	tc = tcase_create("csv");
	tcase_add_test(tc, csv_lightning_sorted_crlf_sparse);
	tcase_add_test(tc, csv_lightning_insertion_order);
	tcase_add_test(tc, csv_lightning_errors);
	tcase_add_test(tc, csv_wandb_quoted_several_runs);
	tcase_add_test(tc, csv_wandb_unquoted_step_column_and_errors);
	tcase_add_test(tc, csv_quoted_newline_and_line_numbers);
	tcase_add_test(tc, csv_stray_quote_keeps_line_numbers);
	tcase_add_test(tc, csv_sniffing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	aliases = gw_alias_new();
	int rc = gw_check_run(suite());
	gw_alias_free(aliases);
	return rc;
}
