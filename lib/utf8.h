/*
 * utf8: the length of one UTF-8 sequence, the check every module that
 * takes text from outside shares (the logger's escaping, util.c's
 * gw_utf8_clean, the wire parser).  A header of its own, inline, below
 * log.c and util.c: the logger escapes with it and util.c's invariant
 * check logs, so neither may sit on the other.
 */
#ifndef GW_UTF8_H
#define GW_UTF8_H

#include <stddef.h>

/* Length of the valid multi-byte UTF-8 sequence at p (at most avail bytes;
 * p[0] >= 0x80), or 0.  Rejects overlong forms, surrogates and code points
 * above U+10FFFF. */
static inline size_t gw_utf8_seq(const unsigned char *p, size_t avail)
{
	unsigned char b0 = p[0];
	if (b0 >= 0xC2 && b0 <= 0xDF)
		return avail >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
	if (b0 >= 0xE0 && b0 <= 0xEF) {
		if (avail < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
			return 0;
		if (b0 == 0xE0 && p[1] < 0xA0)
			return 0;
		if (b0 == 0xED && p[1] >= 0xA0)
			return 0;
		return 3;
	}
	if (b0 >= 0xF0 && b0 <= 0xF4) {
		if (avail < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
		    (p[3] & 0xC0) != 0x80)
			return 0;
		if (b0 == 0xF0 && p[1] < 0x90)
			return 0;
		if (b0 == 0xF4 && p[1] >= 0x90)
			return 0;
		return 4;
	}
	return 0;
}

#endif
