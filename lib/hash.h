/*
 * hash: FNV-1a, the one byte-string hash of gradwatch.
 *
 * 32-bit for hash tables (lib/strtab.h and any table keyed by a name), 64-bit
 * where the value leaves the process and must not collide in practice (alert
 * ids, detectors/alert.c).  Both can be continued over several pieces:
 * gw_fnv1a64_add(gw_fnv1a64_add(GW_FNV64_INIT, a, na), b, nb) is the hash of
 * the concatenation a||b.  Not a defence against chosen keys: a table that
 * keys on outside names must bound its probes some other way (ours keep the
 * load at or below 1/2).  Pure, inline, no allocation.
 */
#ifndef GW_HASH_H
#define GW_HASH_H

#include <stddef.h>
#include <stdint.h>

#define GW_FNV32_INIT 2166136261u
#define GW_FNV64_INIT 14695981039346656037ull

/* Continue a 32-bit FNV-1a hash h over p[0..n). */
static inline uint32_t gw_fnv1a32_add(uint32_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 16777619u;
	}
	return h;
}

/* 32-bit FNV-1a of p[0..n); gw_fnv1a32(s, strlen(s)) for a C string. */
static inline uint32_t gw_fnv1a32(const void *p, size_t n)
{
	return gw_fnv1a32_add(GW_FNV32_INIT, p, n);
}

/* Continue a 64-bit FNV-1a hash h over p[0..n); start from GW_FNV64_INIT. */
static inline uint64_t gw_fnv1a64_add(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 1099511628211ull;
	}
	return h;
}

#endif
