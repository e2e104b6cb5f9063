/*
 * rd_tfevents: TensorBoard event files (events.out.tfevents.*), as written
 * by TensorFlow, Keras, torch.utils.tensorboard (HF Trainer, Lightning),
 * tensorboardX and the TF Object Detection API.
 *
 * The file is TFRecord framing (tfrecord.c, CRC-32C checked) around
 * serialized Event messages (proto/tbevent.proto, decoded by protobuf-c).
 * An Event carries a step, a wall time and one of: the file version (first
 * record), a graph, a Summary, ...; only Summaries are read.  A Summary
 * value is a number when it is
 *   - a simple_value (TF1, torch SummaryWriter), or
 *   - a rank-0 tensor (TF2: tf.summary.scalar, Keras) of DT_FLOAT or
 *     DT_DOUBLE, its value in a 4/8-byte tensor_content or in float_val /
 *     double_val, whose plugin is "scalars" or unnamed.
 * Images, audio, histograms, text, hparams (plugin metadata without a
 * value), graphs and non-scalar tensors are skipped without a word; a value
 * the scalars plugin claims but that cannot be read is reported.
 *
 * Points: writers put every tag in its own Event, so the values of one step
 * are gathered into one point: consecutive records of the same step make
 * one point, and a tag that comes again within the step (Lightning logs
 * "epoch" at a training and a validation call of one step) starts the next
 * point.  Tags map to roles through the alias table (train/loss, epoch_loss,
 * Loss/total_loss, ...).  A point's line is the record number of its first
 * value; its ts is that record's wall time.
 *
 * Growing files (GW_RDF_STREAM): a record cut at the end of the input is
 * waited for.  A point is handed over when the next step starts (or at the
 * end of the input), so the byte position reported as consumed stays at
 * the first record of the point still being gathered.
 */
#include "reader_impl.h"
#include "tfrecord.h"

#include "hash.h"
#include "intset.h"
#include "util.h"

#include "tbevent.pb-c.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define TAGSET_CAP 512            /* power of two */
#define TAGS_PER_POINT (TAGSET_CAP / 2)

struct tfev {
	struct gw_reader *r;
	struct gw__tfr tfr;
	bool open;                /* a point is being gathered */
	int64_t step;
	uint64_t line;            /* record of its first value */
	uint64_t start;           /* byte offset of that record */
	struct gw_intset tags;    /* 64-bit FNV-1a of the point's tags (at most
	                             TAGS_PER_POINT: never leaves tag_slots) */
	struct gw_intset_slot tag_slots[TAGSET_CAP];
};

static uint64_t tag_hash(const char *s, size_t n)
{
	return gw_fnv1a64_add(GW_FNV64_INIT, s, n);
}

/* Add h to the point's tags; false if it was there already. */
static bool tag_add(struct tfev *st, uint64_t h)
{
	return gw_intset_put(&st->tags, h, 0, NULL) != -EEXIST;
}

/* Hand the point over; its tag set empties by moving to the next gen. */
static int flush(struct tfev *st)
{
	if (!st->open)
		return 0;
	st->open = false;
	gw_intset_clear(&st->tags);   /* O(1): a new generation */
	return gw__rd_emit(st->r, st->line);
}

static uint32_t le32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The number a rank-0 DT_FLOAT / DT_DOUBLE tensor holds.  Returns 0, or -1
 * with why in msg. */
static int tensor_scalar(const GwTb__TensorProto *t, double *v, char *msg, size_t msglen)
{
	const ProtobufCBinaryData *c = &t->tensor_content;
	if (t->dtype == GW_TB__DATA_TYPE__DT_FLOAT) {
		if (c->len == 4 && t->n_float_val == 0) {
			uint32_t u = le32(c->data);
			float f;
			memcpy(&f, &u, sizeof(f));
			*v = f;
			return 0;
		}
		if (c->len == 0 && t->n_float_val == 1) {
			*v = t->float_val[0];
			return 0;
		}
		snprintf(msg, msglen, "DT_FLOAT scalar with %zu bytes of tensor_content and %zu float_val",
		         c->len, t->n_float_val);
		return -1;
	}
	if (t->dtype == GW_TB__DATA_TYPE__DT_DOUBLE) {
		if (c->len == 8 && t->n_double_val == 0) {
			uint64_t u = (uint64_t)le32(c->data) | (uint64_t)le32(c->data + 4) << 32;
			double d;
			memcpy(&d, &u, sizeof(d));
			*v = d;
			return 0;
		}
		if (c->len == 0 && t->n_double_val == 1) {
			*v = t->double_val[0];
			return 0;
		}
		snprintf(msg, msglen,
		         "DT_DOUBLE scalar with %zu bytes of tensor_content and %zu double_val", c->len,
		         t->n_double_val);
		return -1;
	}
	snprintf(msg, msglen, "scalar of dtype %d (only DT_FLOAT and DT_DOUBLE are read)",
	         (int)t->dtype);
	return -1;
}

/* The number value `val` carries.  Returns 1 with *v set, 0 when it is not
 * a number (skipped), -1 when it should be one and is not (msg says why). */
static int value_number(const GwTb__Summary__Value *val, double *v, char *msg, size_t msglen)
{
	if (val->value_case == GW_TB__SUMMARY__VALUE__VALUE_SIMPLE_VALUE) {
		*v = val->simple_value;
		return 1;
	}
	if (val->value_case != GW_TB__SUMMARY__VALUE__VALUE_TENSOR)
		return 0;
	const char *plugin = "";
	if (val->metadata && val->metadata->plugin_data && val->metadata->plugin_data->plugin_name)
		plugin = val->metadata->plugin_data->plugin_name;
	bool scalars = strcmp(plugin, "scalars") == 0;
	if (!scalars && plugin[0])
		return 0;      /* text, images, histograms, ... */
	const GwTb__TensorProto *t = val->tensor;
	const GwTb__TensorShapeProto *sh = t->tensor_shape;
	if (sh && (sh->n_dim > 0 || sh->unknown_rank)) {
		if (!scalars)
			return 0;
		snprintf(msg, msglen, "the scalars plugin's tensor is not rank 0 (%zu dimensions)",
		         sh->n_dim);
		return -1;
	}
	if (t->dtype != GW_TB__DATA_TYPE__DT_FLOAT && t->dtype != GW_TB__DATA_TYPE__DT_DOUBLE &&
	    !scalars)
		return 0;
	return tensor_scalar(t, v, msg, msglen) < 0 ? -1 : 1;
}

static int on_summary(struct tfev *st, const struct gw__tfr_rec *rec, const GwTb__Event *ev)
{
	const GwTb__Summary *sum = ev->summary;
	bool step_ok = ev->step >= 0 && ev->step <= GW_WIRE_STEP_MAX;
	int rc;
	for (size_t i = 0; i < sum->n_value; i++) {
		const GwTb__Summary__Value *val = sum->value[i];
		char msg[128];
		double v;
		int k = value_number(val, &v, msg, sizeof(msg));
		if (k == 0)
			continue;
		const char *tag = val->tag ? val->tag : "";
		size_t tlen = strlen(tag);
		if (k < 0) {
			gw__rd_error(st->r, rec->recno,
			             "bad_value: record %" PRIu64 " at byte %" PRIu64 ": tag \"%.80s\": %s",
			             rec->recno, rec->offset, tag, msg);
			continue;
		}
		if (!step_ok) {
			gw__rd_error(st->r, rec->recno,
			             "bad_step: record %" PRIu64 " at byte %" PRIu64 ": step %" PRId64
			             " is outside 0..%lld",
			             rec->recno, rec->offset, ev->step, (long long)GW_WIRE_STEP_MAX);
			return 0;
		}
		if (tlen == 0) {
			gw__rd_error(st->r, rec->recno,
			             "bad_value: record %" PRIu64 " at byte %" PRIu64
			             ": a scalar without a tag",
			             rec->recno, rec->offset);
			continue;
		}
		uint64_t h = tag_hash(tag, tlen);
		if (st->open && (ev->step != st->step || st->tags.count >= TAGS_PER_POINT ||
		                 !tag_add(st, h))) {
			if ((rc = flush(st)) < 0)
				return rc;
		}
		if (!st->open) {
			st->open = true;
			st->step = ev->step;
			st->line = rec->recno;
			st->start = rec->offset;
			gw__rd_begin(st->r, NULL, 0, ev->step);
			gw__rd_ts(st->r, ev->wall_time > 0 && isfinite(ev->wall_time) ? ev->wall_time : NAN);
			tag_add(st, h);
		}
		gw__rd_metric(st->r, tag, tlen, v); /* -ENOSPC: extras full, dropped */
	}
	return 0;
}

/* A protobuf varint at p[*i..n); false if it runs past n or 10 bytes. */
static bool varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *i < n; shift += 7) {
		uint8_t b = p[(*i)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Does the serialized Event p[0..n) hold a Summary (field 5)?  1, 0, or -1
 * when its top level does not parse.  Graphs and the other big records are
 * thereby skipped without protobuf-c copying them. */
static int event_has_summary(const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint64_t key, len;
		if (!varint(p, n, &i, &key))
			return -1;
		switch (key & 7) {
		case 0:
			if (!varint(p, n, &i, &len))
				return -1;
			break;
		case 1:
			i += 8;
			break;
		case 5:
			i += 4;
			break;
		case 2:
			if (!varint(p, n, &i, &len) || len > n - i)
				return -1;
			if (key >> 3 == 5)
				return 1;
			i += (size_t)len;
			break;
		default:
			return -1;
		}
	}
	return i == n ? 0 : -1;
}

static int on_record(void *data, const struct gw__tfr_rec *rec)
{
	struct tfev *st = data;
	int rc = 0;
	if (rec->status == GW_TFR_BAD_CRC) {
		gw__rd_error(st->r, rec->recno,
		             "bad_crc: record %" PRIu64 " at byte %" PRIu64 ": the CRC of its %" PRIu64
		             " data bytes does not match (stored 0x%08x, computed 0x%08x); skipped",
		             rec->recno, rec->offset, rec->len, rec->crc_stored, rec->crc_computed);
	} else if (rec->status == GW_TFR_OK) {
		const uint8_t *p = (const uint8_t *)rec->data;
		int has = event_has_summary(p, (size_t)rec->len);
		GwTb__Event *ev = has > 0 ? gw_tb__event__unpack(NULL, (size_t)rec->len, p) : NULL;
		if (has < 0 || (has > 0 && !ev))
			gw__rd_error(st->r, rec->recno,
			             "bad_record: record %" PRIu64 " at byte %" PRIu64 ": its %" PRIu64
			             " bytes are not a TensorBoard Event (protobuf does not decode); "
			             "skipped",
			             rec->recno, rec->offset, rec->len);
		else if (ev && ev->what_case == GW_TB__EVENT__WHAT_SUMMARY)
			rc = on_summary(st, rec, ev);
		if (ev)
			gw_tb__event__free_unpacked(ev, NULL);
	}
	/* GW_TFR_TOO_BIG: a record over 64 MiB is a graph or an image, not a
	 * point; its CRC held. */
	gw__rd_consumed(st->r, st->open ? st->start : rec->end);
	return rc;
}

static int sniff(const char *head, size_t n, bool all)
{
	return gw__tfr_head_ok(head, n) ? 100 : 0;
}

static int init(struct gw_reader *r, void *state)
{
	struct tfev *st = state;
	st->r = r;
	gw_intset_init(&st->tags, st->tag_slots, TAGSET_CAP);
	gw__tfr_init(&st->tfr, 0, gw__rd_first_line(r), 0);
	return 0;
}

static int feed(struct gw_reader *r, void *state, const char *p, size_t n)
{
	struct tfev *st = state;
	int rc = gw__tfr_feed(&st->tfr, p, n, on_record, st);
	if (rc == -EPROTO)
		return gw__rd_fail(r, "%s", st->tfr.err);
	return rc;
}

static int finish(struct gw_reader *r, void *state)
{
	struct tfev *st = state;
	int rc = gw__tfr_finish(&st->tfr);
	if (rc == -EPROTO)
		return gw__rd_fail(r, "%s", st->tfr.err);
	if (rc == -ENODATA)
		gw__rd_error(r, st->tfr.recno + 1, "truncated: %s", st->tfr.err);
	return flush(st);
}

static void deinit(void *state)
{
	struct tfev *st = state;
	gw__tfr_free(&st->tfr);
}

const struct gw_reader_format gw_rd_tfevents = {
	.name = "tfevents",
	.describe = "TensorBoard event files: simple_value and TF2 tensor scalars, CRC-checked",
	.flags = GW_RDF_STREAM,
	.sniff = sniff,
	.state_size = sizeof(struct tfev),
	.init = init,
	.feed = feed,
	.finish = finish,
	.deinit = deinit,
};
