/*
 * TFRecord framing (see tfrecord.h).  A small state machine over the
 * input: the 12-byte head (assembled across calls), then either the data
 * and its CRC (handed over in place when they lie whole in the caller's
 * chunk, else collected in a buffer of exactly their size), or, for a
 * record over `max`, the data folded into a running CRC and dropped.  A
 * buffer over 1 MiB is released after its record, so a single large record
 * (a graph) does not keep its memory for the rest of the file.
 */
#include "tfrecord.h"

#include "crc32c.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP_BUF (1024 * 1024)

static uint32_t le32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t le64(const unsigned char *b)
{
	return (uint64_t)le32(b) | (uint64_t)le32(b + 4) << 32;
}

bool gw__tfr_head_ok(const void *p, size_t n)
{
	const unsigned char *b = p;
	return n >= 12 && gw_crc32c_mask(gw_crc32c(0, b, 8)) == le32(b + 8);
}

void gw__tfr_init(struct gw__tfr *t, size_t max, uint64_t first_recno, uint64_t base_offset)
{
	memset(t, 0, sizeof(*t));
	t->max = max ? max : GW_TFR_MAX_DEFAULT;
	t->recno = first_recno;
	t->offset = base_offset;
}

void gw__tfr_free(struct gw__tfr *t)
{
	free(t->buf);
	t->buf = NULL;
	t->cap = 0;
}

/* The current record is whole: data (if held) and its stored CRC.  Reset
 * for the next one and hand it over. */
static int deliver(struct gw__tfr *t, const char *data, uint32_t stored, uint32_t computed,
                   gw__tfr_fn fn, void *cbdata)
{
	struct gw__tfr_rec rec = {
		.data = data,
		.len = t->len,
		.recno = ++t->recno,
		.offset = t->offset,
		.end = t->offset + 12 + t->len + 4,
		.crc_stored = stored,
		.crc_computed = computed,
	};
	if (stored != computed)
		rec.status = GW_TFR_BAD_CRC;
	else if (!data)
		rec.status = GW_TFR_TOO_BIG;
	if (rec.status != GW_TFR_OK)
		rec.data = NULL;
	t->offset = rec.end;
	t->head_len = 0;
	t->in_data = false;
	t->skipping = false;
	t->got = 0;
	return fn(cbdata, &rec);
}

/* A held record: data[0..len) then its 4-byte CRC. */
static int deliver_held(struct gw__tfr *t, const char *p, gw__tfr_fn fn, void *cbdata)
{
	size_t len = (size_t)t->len;
	uint32_t stored = le32((const unsigned char *)p + len);
	uint32_t computed = gw_crc32c_mask(gw_crc32c(0, p, len));
	return deliver(t, p, stored, computed, fn, cbdata);
}

int gw__tfr_feed(struct gw__tfr *t, const char *p, size_t n, gw__tfr_fn fn, void *cbdata)
{
	int rc;
	if (t->dead)
		return -EPROTO;
	while (n > 0) {
		if (!t->in_data) {
			size_t k = GW_MIN(sizeof(t->head) - t->head_len, n);
			memcpy(t->head + t->head_len, p, k);
			t->head_len += k;
			p += k;
			n -= k;
			if (t->head_len < sizeof(t->head))
				break;
			if (!gw__tfr_head_ok(t->head, sizeof(t->head))) {
				t->dead = true;
				snprintf(t->err, sizeof(t->err),
				         "record %" PRIu64 " at byte %" PRIu64 ": the CRC of its length "
				         "does not match (stored 0x%08x, computed 0x%08x); not a TFRecord "
				         "file from here on",
				         t->recno + 1, t->offset, le32(t->head + 8),
				         gw_crc32c_mask(gw_crc32c(0, t->head, 8)));
				return -EPROTO;
			}
			t->len = le64(t->head);
			t->in_data = true;
			t->skipping = t->len > t->max;
			t->got = 0;
			t->crc = 0;
			continue;
		}
		if (!t->skipping) {
			size_t need = (size_t)t->len + 4;
			if (t->got == 0 && n >= need) {
				rc = deliver_held(t, p, fn, cbdata);
				p += need;
				n -= need;
				if (rc)
					return rc;
				continue;
			}
			if (t->cap < need) {
				char *nb = realloc(t->buf, need);
				if (!nb)
					return -ENOMEM;
				t->buf = nb;
				t->cap = need;
			}
			size_t k = GW_MIN(need - (size_t)t->got, n);
			memcpy(t->buf + t->got, p, k);
			t->got += k;
			p += k;
			n -= k;
			if (t->got < need)
				break;
			rc = deliver_held(t, t->buf, fn, cbdata);
			if (t->cap > KEEP_BUF)
				gw__tfr_free(t);
			if (rc)
				return rc;
			continue;
		}
		/* skipping: the data through the CRC, then the 4 CRC bytes */
		if (t->got < t->len) {
			uint64_t left = t->len - t->got;
			size_t k = left < n ? (size_t)left : n;
			t->crc = gw_crc32c(t->crc, p, k);
			t->got += k;
			p += k;
			n -= k;
			continue;
		}
		size_t have = (size_t)(t->got - t->len);
		size_t k = GW_MIN(4 - have, n);
		memcpy(t->tail + have, p, k);
		t->got += k;
		p += k;
		n -= k;
		if (have + k < 4)
			break;
		rc = deliver(t, NULL, le32(t->tail), gw_crc32c_mask(t->crc), fn, cbdata);
		if (rc)
			return rc;
	}
	return 0;
}

int gw__tfr_finish(struct gw__tfr *t)
{
	if (t->dead)
		return -EPROTO;
	if (!t->in_data && t->head_len == 0)
		return 0;
	if (!t->in_data)
		snprintf(t->err, sizeof(t->err),
		         "record %" PRIu64 " at byte %" PRIu64 " is cut: the input ends %zu bytes "
		         "into its 12-byte head",
		         t->recno + 1, t->offset, t->head_len);
	else if (t->got < t->len)
		snprintf(t->err, sizeof(t->err),
		         "record %" PRIu64 " at byte %" PRIu64 " is cut: the input ends after %" PRIu64
		         " of its %" PRIu64 " data bytes",
		         t->recno + 1, t->offset, t->got, t->len);
	else
		snprintf(t->err, sizeof(t->err),
		         "record %" PRIu64 " at byte %" PRIu64 " is cut: the input ends inside the "
		         "CRC after its %" PRIu64 " data bytes",
		         t->recno + 1, t->offset, t->len);
	return -ENODATA;
}
