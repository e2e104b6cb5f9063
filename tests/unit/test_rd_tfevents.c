/*
 * Unit tests of TensorBoard event files through the reader API
 * (readers/rd_tfevents.c): both scalar encodings, grouping by step, what is
 * skipped, errors with record numbers, the consumed offset, a growing
 * file.  Event files are built here byte by byte with a small protobuf
 * writer, not with the protobuf-c code under test, and framed by rdbin.c.
 * Every input is read twice, in one feed and byte by byte, and must give
 * the same points.
 */
#include "gwcheck.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "rdbin.h"
#include "reader.h"
#include "tfrecord.h"
#include "util.h"
#include "wire.h"

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

static Suite *suite(void)
{
	Suite *s = suite_create("rd_tfevents");
	TCase *tc;
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
	return s;
}

int main(void)
{
	return rd_main(suite());
}
