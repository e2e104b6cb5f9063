/*
 * crc32c: CRC-32C (Castagnoli; reflected polynomial 0x82F63B78), the
 * checksum of TFRecord framing (TensorBoard event files), LevelDB and iSCSI.
 * One table-driven implementation (slicing by 8, portable C, about 1 GB/s)
 * for every module that needs it.
 */
#ifndef GW_CRC32C_H
#define GW_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of p[0..n) continued from `crc`, the result of an earlier call
 * over the bytes before (0 to start).  gw_crc32c(0, "123456789", 9) is
 * 0xE3069283. */
uint32_t gw_crc32c(uint32_t crc, const void *p, size_t n);

/* The masked form TFRecord and LevelDB store, so that a CRC of data that
 * itself holds CRCs is not degenerate: rotate right by 15, add 0xa282ead8. */
static inline uint32_t gw_crc32c_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

#endif
