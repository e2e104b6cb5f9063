/*
 * The wire parser's JSON values (wire_int.h): strings (UTF-8 validated,
 * escapes and surrogate pairs decoded into the parser's scratch buffer,
 * which is sized from the line so nothing moves during a parse), numbers
 * (Clinger's exact fast path when the digits make an integer <= 2^53 and
 * the decimal exponent is within +-22, else strtod; Python's bare NaN,
 * Infinity, -Infinity), and nested objects and arrays (validated, and
 * built as jansson values only for an event's attributes).  The record
 * layer that gives a line's members their meaning is wire.c.
 */
#include "wire_int.h"
#include "buf.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int k = 0; k < 4; k++) {
		char ch = p[k];
		v <<= 4;
		if (ch >= '0' && ch <= '9')
			v |= (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v |= (unsigned)(ch - 'a' + 10);
		else if (ch >= 'A' && ch <= 'F')
			v |= (unsigned)(ch - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Bytes a string holds as they are: printable ASCII but '"' and '\\'. */
static inline bool plain_byte(unsigned char ch)
{
	return ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\';
}

/* Does the 8-byte word x hold a byte that is not plain_byte()?  Exact
 * (no false answer either way): a zero byte of x ^ '"'..., of x ^ '\\'...,
 * a byte below 0x20 or one with its top bit. */
static inline bool word_special(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
	uint64_t zq = (q - ones) & ~q, zb = (b - ones) & ~b, lo = x - ones * 0x20;
	return ((zq | zb | lo | x) & high) != 0;
}

/* Read a string at c->i (which is at '"'), decode it into scratch (if out is
 * not NULL) and advance past the closing quote.  The plain stretches are
 * found 8 bytes at a time and copied whole; the cursor lives in locals so
 * the copy's stores do not make the compiler reload it. */
int gw__wire_string(struct cur *c, const char **out, size_t *out_len)
{
	const char *s = c->s;
	const size_t n = c->n, start = c->i;
	size_t i = start + 1;
	char *o = NULL, *o0 = NULL;
	if (out)
		o0 = o = c->w->scratch + c->w->scratch_len;
	for (;;) {
		size_t j = i;
		while (j + 8 <= n) {
			uint64_t x;
			memcpy(&x, s + j, 8);
			if (word_special(x))
				break;
			j += 8;
		}
		while (j < n && plain_byte((unsigned char)s[j]))
			j++;
		if (o && j > i) {
			memcpy(o, s + i, j - i);
			o += j - i;
		}
		i = j;
		if (i >= n)
			break;
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"') {
			c->i = i + 1;
			if (out) {
				*o = '\0';
				*out = o0;
				*out_len = (size_t)(o - o0);
				c->w->scratch_len += (size_t)(o - o0) + 1;
			}
			return 0;
		}
		c->i = i;
		if (ch < 0x20)
			return gw__wire_fail(c, GW_REJ_SYNTAX, i + 1, c->field,
			                     "control character 0x%02x inside a string", ch);
		if (ch >= 0x80) {
			size_t k = gw_utf8_seq((const unsigned char *)s + i, n - i);
			if (!k)
				return gw__wire_fail(c, GW_REJ_UTF8, i + 1, c->field,
				                     "invalid UTF-8 byte 0x%02x", ch);
			if (o) {
				memcpy(o, s + i, k);
				o += k;
			}
			i += k;
			continue;
		}
		/* escape */
		if (i + 1 >= n)
			break;
		char e = s[i + 1];
		char lit = 0;
		switch (e) {
		case '"': lit = '"'; break;
		case '\\': lit = '\\'; break;
		case '/': lit = '/'; break;
		case 'b': lit = '\b'; break;
		case 'f': lit = '\f'; break;
		case 'n': lit = '\n'; break;
		case 'r': lit = '\r'; break;
		case 't': lit = '\t'; break;
		case 'u': break;
		default:
			return gw__wire_fail(c, GW_REJ_SYNTAX, i + 1, c->field,
			                     "invalid escape: %s after a backslash",
			                     gw__wire_show_byte(e, (char[16]){0}));
		}
		if (lit) {
			if (o)
				*o++ = lit;
			i += 2;
			continue;
		}
		unsigned cp;
		if (i + 6 > n || hex4(s + i + 2, &cp) < 0)
			return gw__wire_fail(c, GW_REJ_SYNTAX, i + 1, c->field,
			                     "invalid \\u escape");
		size_t esc_col = i + 1;
		i += 6;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			unsigned lo;
			if (i + 6 > n || s[i] != '\\' || s[i + 1] != 'u' ||
			    hex4(s + i + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
				return gw__wire_fail(c, GW_REJ_UTF8, esc_col, c->field,
				                     "unpaired UTF-16 surrogate in \\u escape");
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			i += 6;
		} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
			return gw__wire_fail(c, GW_REJ_UTF8, esc_col, c->field,
			                     "unpaired UTF-16 surrogate in \\u escape");
		} else if (cp == 0) {
			return gw__wire_fail(c, GW_REJ_SYNTAX, esc_col, c->field,
			                     "\\u0000 is not allowed in a string");
		}
		if (o)
			o += put_utf8(o, cp);
	}
	c->i = i;
	return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field, "unterminated string");
}

static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static inline bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static const uint64_t pow10_u64[] = {
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
};

/* Up to max digits at s[i..n) appended to *mant; returns how many.  Eight
 * bytes at a time where the line has them (little-endian): the bytes XOR
 * '0' are the digits' values, a byte above 9 (its flag: bit 7 of it or of
 * it + 0x76) ends them, and the first k digits, moved to the top of the
 * word, are combined in pairs, quads and eights by three multiplications.
 * A carry out of a byte comes only from a byte that is no digit, so the
 * first flag is exact. */
static inline size_t gather(const char *s, size_t i, size_t n, size_t max, uint64_t *mant)
{
	const size_t i0 = i;
	uint64_t m = *mant;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull;
	while (i + 8 <= n) {
		uint64_t x;
		memcpy(&x, s + i, 8);
		uint64_t a = x ^ (ones * '0');
		uint64_t flag = ((a + ones * 0x76) | a) & (ones * 0x80);
		size_t k = flag ? (size_t)__builtin_ctzll(flag) / 8 : 8;
		size_t room = max - (i - i0);
		if (k > room)
			k = room;
		if (k == 0)
			break;
		uint64_t d = a << (8 * (8 - k));
		d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFull;
		d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFull;
		d = (d * 10000 + (d >> 32)) & 0xFFFFFFFFull;
		m = m * pow10_u64[k] + d;
		i += k;
		if (k < 8) {
			*mant = m;
			return i - i0;
		}
	}
#endif
	size_t lim = n - i < max - (i - i0) ? n : i0 + max;
	while (i < lim) {
		unsigned d = (unsigned)(unsigned char)s[i] - '0';
		if (d > 9)
			break;
		m = m * 10 + d;
		i++;
	}
	*mant = m;
	return i - i0;
}

/* Read a number (JSON grammar, plus NaN, Infinity, -Infinity).  Up to 19
 * significant digits are gathered into an integer; when it is at most 2^53
 * and the decimal exponent within +-22, both it and the power of ten are
 * exact doubles and one IEEE multiplication or division rounds the value
 * correctly (Clinger's fast path), which is the double strtod gives.
 * Anything else goes to strtod. */
int gw__wire_number(struct cur *c, double *out, bool *is_int)
{
	const char *s = c->s;
	const size_t n = c->n, start = c->i;
	size_t i = start;
	bool neg = false;
	*is_int = false;
	if (s[i] == '-') {
		neg = true;
		i++;
	}
	if (i < n && s[i] == 'I') {
		c->i = i;
		if (!match_word(c, "Infinity"))
			return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid literal");
		*out = neg ? -INFINITY : INFINITY;
		return 0;
	}
	if (!neg && s[i] == 'N') {
		if (!match_word(c, "NaN"))
			return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid literal");
		*out = NAN;
		return 0;
	}
	uint64_t mant = 0;
	int digits = 0;   /* significant digits accumulated in mant */
	int dropped = 0;  /* integer digits not accumulated (beyond 19) */
	int frac_digits = 0;
	if (i < n && s[i] == '0') {
		i++;
	} else if (i < n && is_digit(s[i])) {
		/* the first digit is not 0: every digit is significant */
		digits = (int)gather(s, i, n, 19, &mant);
		i += (size_t)digits;
		while (i < n && is_digit(s[i])) {
			dropped++;
			i++;
		}
	} else {
		c->i = i;
		return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid number");
	}
	bool integer = true;
	if (i < n && s[i] == '.') {
		integer = false;
		i++;
		size_t fs = i;
		/* leading zeros of the fraction (0.000123) are no significant digits */
		if (!mant)
			while (i < n && s[i] == '0')
				i++;
		size_t got = gather(s, i, n, (size_t)(19 - digits), &mant);
		i += got;
		digits += (int)got;
		frac_digits = (int)(i - fs);
		while (i < n && is_digit(s[i]))
			i++;
		if (i == fs) {
			c->i = i;
			return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field,
			                     "digits expected after the decimal point");
		}
	}
	int exp10 = 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		integer = false;
		i++;
		bool eneg = false;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			eneg = s[i++] == '-';
		size_t es = i;
		while (i < n && is_digit(s[i])) {
			if (exp10 < 100000)
				exp10 = exp10 * 10 + (s[i] - '0');
			i++;
		}
		if (i == es) {
			c->i = i;
			return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field,
			                     "digits expected in the exponent");
		}
		if (eneg)
			exp10 = -exp10;
	}
	c->i = i;
	if (i >= n)
		return gw__wire_fail(c, GW_REJ_SYNTAX, i, c->field, "line ends inside a number");
	*is_int = integer;
	int e = exp10 + dropped - frac_digits;
	if (mant <= (UINT64_C(1) << 53) && dropped == 0 && e >= -22 && e <= 22) {
		double v = (double)mant;
		v = e < 0 ? v / pow10_exact[-e] : v * pow10_exact[e];
		*out = neg ? -v : v;
		return 0;
	}
	/* The span is a validated decimal followed by a delimiter inside the
	 * buffer, so strtod stops exactly at its end. */
	char *end = NULL;
	double v = strtod(s + start, &end);
	if (end != s + i)
		return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid number");
	*out = v;
	return 0;
}

json_t *gw__wire_number_json(double v, bool is_int)
{
	if (is_int && v >= -9007199254740992.0 && v <= 9007199254740992.0)
		return json_integer((json_int_t)v);
	if (isnan(v))
		return json_string("NaN");
	if (isinf(v))
		return json_string(v > 0 ? "Infinity" : "-Infinity");
	return gw_json_num(v);
}

/* Read any value; if out is not NULL, build it as a jansson value. */
int gw__wire_value(struct cur *c, int depth, json_t **out)
{
	if (c->i >= c->n)
		return gw__wire_fail(c, GW_REJ_SYNTAX, c->i, c->field, "line ends where a value was expected");
	if (depth > GW_WIRE_MAX_DEPTH)
		return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, c->field, "nesting deeper than %d",
		                     GW_WIRE_MAX_DEPTH);
	char ch = c->s[c->i];
	int rc;
	if (ch == '"') {
		const char *s;
		size_t len;
		if (!out)
			return gw__wire_string(c, NULL, NULL);
		size_t mark = c->w->scratch_len;
		if ((rc = gw__wire_string(c, &s, &len)) < 0)
			return rc;
		*out = json_stringn(s, len);
		c->w->scratch_len = mark;
		return *out ? 0 : -ENOMEM;
	}
	if (ch == '{' || ch == '[') {
		bool obj = ch == '{';
		json_t *node = NULL;
		if (out && !(node = obj ? json_object() : json_array()))
			return -ENOMEM;
		c->i++;
		skip_ws(c);
		if (c->i < c->n && c->s[c->i] == (obj ? '}' : ']')) {
			c->i++;
			if (out)
				*out = node;
			return 0;
		}
		for (;;) {
			const char *key = NULL;
			size_t klen = 0, mark = c->w->scratch_len;
			if (obj) {
				if (c->i >= c->n || c->s[c->i] != '"') {
					json_decref(node);
					return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
					                     "object key expected");
				}
				if ((rc = gw__wire_string(c, out ? &key : NULL, &klen)) < 0) {
					json_decref(node);
					return rc;
				}
				skip_ws(c);
				if (c->i >= c->n || c->s[c->i] != ':') {
					json_decref(node);
					return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
					                     "':' expected after an object key");
				}
				c->i++;
				skip_ws(c);
			}
			json_t *child = NULL;
			if ((rc = gw__wire_value(c, depth + 1, out ? &child : NULL)) < 0) {
				json_decref(node);
				return rc;
			}
			if (out) {
				int r = obj ? json_object_setn_new(node, key, klen, child)
				            : json_array_append_new(node, child);
				c->w->scratch_len = mark;
				if (r < 0) {
					json_decref(node);
					return -ENOMEM;
				}
			}
			skip_ws(c);
			if (c->i < c->n && c->s[c->i] == ',') {
				c->i++;
				skip_ws(c);
				continue;
			}
			if (c->i < c->n && c->s[c->i] == (obj ? '}' : ']')) {
				c->i++;
				break;
			}
			json_decref(node);
			return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, c->field, "',' or '%c' expected",
			                     obj ? '}' : ']');
		}
		if (out)
			*out = node;
		return 0;
	}
	if (ch == 't' || ch == 'f' || ch == 'n') {
		if (match_word(c, "true")) {
			if (out)
				*out = json_true();
		} else if (match_word(c, "false")) {
			if (out)
				*out = json_false();
		} else if (match_word(c, "null")) {
			if (out)
				*out = json_null();
		} else {
			return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, c->field, "invalid literal");
		}
		return 0;
	}
	if (ch == '-' || (ch >= '0' && ch <= '9') || ch == 'N' || ch == 'I') {
		double v;
		bool is_int;
		if ((rc = gw__wire_number(c, &v, &is_int)) < 0)
			return rc;
		if (out && !(*out = gw__wire_number_json(v, is_int)))
			return -ENOMEM;
		return 0;
	}
	return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, c->field, "unexpected character %s",
	                     gw__wire_show_byte(ch, (char[16]){0}));
}
