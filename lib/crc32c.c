/*
 * CRC-32C (see crc32c.h), "slicing by 8": table[0] holds the CRC of every
 * byte value (from the polynomial); table[k] the same byte followed by k
 * zero bytes, so eight input bytes fold in with eight independent lookups
 * instead of a chain of eight.  The tables (8 KiB) are built once, before
 * main() runs; tests/unit/test_rd_binary.c checks the result against a
 * bit-at-a-time reference and published vectors.
 */
#include "crc32c.h"

#define POLY 0x82f63b78u  /* 0x1EDC6F41 reflected */

static uint32_t table[8][256];

__attribute__((constructor)) static void crc32c_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? POLY : 0);
		table[0][i] = c;
	}
	for (int k = 1; k < 8; k++)
		for (int i = 0; i < 256; i++)
			table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xff];
}

uint32_t gw_crc32c(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;
	crc = ~crc;
	for (; n >= 8; b += 8, n -= 8) {
		uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
		                     (uint32_t)b[3] << 24);
		uint32_t hi = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
		              (uint32_t)b[7] << 24;
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		      table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
	}
	for (; n; b++, n--)
		crc = table[0][(crc ^ *b) & 0xff] ^ (crc >> 8);
	return ~crc;
}
