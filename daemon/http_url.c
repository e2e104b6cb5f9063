/*
 * http_url: the parts of a request URL the HTTP API reads (see
 * http_url.h): percent-decoding (of a path's {run} part and of query
 * values) and query parameters.  Pure functions over the bytes
 * given, no state, so tests/unit/test_daemon.c checks them directly.
 */
#include "http_url.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>

#include <string.h>

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

int gw_http_pct_decode(const char *s, size_t n, char *out, size_t cap, bool plus_is_space)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == '%') {
			if (i + 2 >= n)
				return -1;
			int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			ch = (char)(hi * 16 + lo);
			if (ch == '\0')
				return -1;
			i += 2;
		} else if (ch == '+' && plus_is_space) {
			ch = ' ';
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = ch;
	}
	out[o] = '\0';
	return (int)o;
}

int gw_http_query_param(const char *query, size_t qlen, const char *name, char *out,
                        size_t cap)
{
	size_t nl = strlen(name);
	const char *p = query, *end = query + qlen;
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(e - p));
		if (eq && (size_t)(eq - p) == nl && memcmp(p, name, nl) == 0)
			return gw_http_pct_decode(eq + 1, (size_t)(e - eq - 1), out, cap, true) < 0 ? -1 : 1;
		p = e + 1;
	}
	return 0;
}

int gw_http_int_param(const char *qs, size_t qlen, const char *name, long long min, long long max,
                     long long *out, char *err, size_t errlen)
{
	char v[64];
	int r = gw_http_query_param(qs, qlen, name, v, sizeof(v));
	if (r == 0)
		return 0;
	char *end = NULL;
	errno = 0;
	long long x = r > 0 ? strtoll(v, &end, 10) : 0;
	if (r < 0 || !v[0] || *end || errno || x < min || x > max) {
		gw_errf(err, errlen, -EINVAL, "bad query parameter %s=%s: expected an integer from %lld to %lld",
		        name, r < 0 ? "(undecodable)" : v, min, max);
		return -1;
	}
	*out = x;
	return 1;
}
