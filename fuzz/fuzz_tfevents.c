/*
 * Fuzz target: TensorBoard event files (readers/rd_tfevents.c, tfrecord.c,
 * the protobuf-c decoder).  Each input is read twice over:
 *   - as is: TFRecord framing with its CRCs, as a file on disk would be;
 *   - as Event payloads the harness frames itself with correct CRCs (the
 *     input is a sequence of [u16 length][payload]), so that mutations
 *     reach the Event/Summary/TensorProto decoding instead of stopping at
 *     the first CRC;
 * each once in one feed and once in random chunks, also as a followed
 * (growing) file.  Seeds: fuzz/corpus/tfevents/.
 */
#include "crc32c.h"
#include "fuzz_reader.h"

static void put32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* Frame [u16 len][payload]... as TFRecords with good CRCs. */
static size_t frame(const uint8_t *p, size_t n, uint8_t *out)
{
	size_t o = 0;
	while (n >= 2) {
		size_t len = (size_t)p[0] | (size_t)p[1] << 8;
		p += 2, n -= 2;
		if (len > n)
			len = n;
		for (int i = 0; i < 8; i++)
			out[o + i] = (uint8_t)((uint64_t)len >> (8 * i));
		put32(out + o + 8, gw_crc32c_mask(gw_crc32c(0, out + o, 8)));
		memcpy(out + o + 12, p, len);
		put32(out + o + 12 + len, gw_crc32c_mask(gw_crc32c(0, p, len)));
		o += 16 + len;
		p += len, n -= len;
	}
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_both("tfevents", false, data, size);
	fuzz_both("tfevents", true, data, size);
	/* framing adds 14 bytes per 2-byte length: at most 8x the input */
	uint8_t *framed = malloc(size * 8 + 16);
	if (!framed)
		return 0;
	size_t n = frame(data, size, framed);
	fuzz_both("tfevents", false, framed, n);
	free(framed);
	return 0;
}
