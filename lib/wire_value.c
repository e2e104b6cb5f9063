/*
 * The wire parser's JSON values (wire_int.h): strings (UTF-8 validated,
 * escapes and surrogate pairs decoded into the parser's scratch buffer,
 * which is sized from the line so nothing moves during a parse), numbers
 * (Clinger's exact fast path when the mantissa has at most 15 digits and
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

/* Read a string at c->i (which is at '"'), decode it into scratch (if out is
 * not NULL) and advance past the closing quote. */
int gw__wire_string(struct cur *c, const char **out, size_t *out_len)
{
	size_t start = c->i++;
	char *o = NULL, *o0 = NULL;
	if (out) {
		o0 = o = c->w->scratch + c->w->scratch_len;
	}
	while (c->i < c->n) {
		unsigned char ch = (unsigned char)c->s[c->i];
		if (ch == '"') {
			c->i++;
			if (out) {
				*o = '\0';
				*out = o0;
				*out_len = (size_t)(o - o0);
				c->w->scratch_len += (size_t)(o - o0) + 1;
			}
			return 0;
		}
		if (ch < 0x20)
			return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
			                     "control character 0x%02x inside a string", ch);
		if (ch < 0x80 && ch != '\\') {
			if (o)
				*o++ = (char)ch;
			c->i++;
			continue;
		}
		if (ch >= 0x80) {
			size_t k = gw_utf8_seq((const unsigned char *)c->s + c->i, c->n - c->i);
			if (!k)
				return gw__wire_fail(c, GW_REJ_UTF8, c->i + 1, c->field,
				                     "invalid UTF-8 byte 0x%02x", ch);
			if (o) {
				memcpy(o, c->s + c->i, k);
				o += k;
			}
			c->i += k;
			continue;
		}
		/* escape */
		if (c->i + 1 >= c->n)
			break;
		char e = c->s[c->i + 1];
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
			return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
			                     "invalid escape: %s after a backslash",
			                     gw__wire_show_byte(e, (char[16]){0}));
		}
		if (lit) {
			if (o)
				*o++ = lit;
			c->i += 2;
			continue;
		}
		unsigned cp;
		if (c->i + 6 > c->n || hex4(c->s + c->i + 2, &cp) < 0)
			return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
			                     "invalid \\u escape");
		size_t esc_col = c->i + 1;
		c->i += 6;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			unsigned lo;
			if (c->i + 6 > c->n || c->s[c->i] != '\\' || c->s[c->i + 1] != 'u' ||
			    hex4(c->s + c->i + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
				return gw__wire_fail(c, GW_REJ_UTF8, esc_col, c->field,
				                     "unpaired UTF-16 surrogate in \\u escape");
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			c->i += 6;
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
	return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field, "unterminated string");
}

static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* Read a number (JSON grammar, plus NaN, Infinity, -Infinity). */
int gw__wire_number(struct cur *c, double *out, bool *is_int)
{
	size_t start = c->i;
	bool neg = false;
	*is_int = false;
	if (c->s[c->i] == '-') {
		neg = true;
		c->i++;
	}
	if (c->i < c->n && c->s[c->i] == 'I') {
		if (!match_word(c, "Infinity"))
			return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid literal");
		*out = neg ? -INFINITY : INFINITY;
		return 0;
	}
	if (!neg && c->s[c->i] == 'N') {
		if (!match_word(c, "NaN"))
			return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid literal");
		*out = NAN;
		return 0;
	}
	uint64_t mant = 0;
	int digits = 0;   /* significant digits accumulated in mant */
	int dropped = 0;  /* integer digits not accumulated (beyond 19) */
	int frac_digits = 0;
	bool any = false;
	if (c->i < c->n && c->s[c->i] == '0') {
		c->i++;
		any = true;
	} else {
		while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
			if (digits < 19) {
				mant = mant * 10 + (uint64_t)(c->s[c->i] - '0');
				if (mant)
					digits++;
			} else {
				dropped++;
			}
			c->i++;
			any = true;
		}
	}
	if (!any)
		return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid number");
	bool integer = true;
	if (c->i < c->n && c->s[c->i] == '.') {
		integer = false;
		c->i++;
		size_t fs = c->i;
		while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
			if (digits < 19) {
				mant = mant * 10 + (uint64_t)(c->s[c->i] - '0');
				if (mant)
					digits++;
				frac_digits++;
			}
			c->i++;
		}
		if (c->i == fs)
			return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field,
			                     "digits expected after the decimal point");
	}
	int exp10 = 0;
	if (c->i < c->n && (c->s[c->i] == 'e' || c->s[c->i] == 'E')) {
		integer = false;
		c->i++;
		bool eneg = false;
		if (c->i < c->n && (c->s[c->i] == '+' || c->s[c->i] == '-'))
			eneg = c->s[c->i++] == '-';
		size_t es = c->i;
		while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
			if (exp10 < 100000)
				exp10 = exp10 * 10 + (c->s[c->i] - '0');
			c->i++;
		}
		if (c->i == es)
			return gw__wire_fail(c, GW_REJ_SYNTAX, start + 1, c->field,
			                     "digits expected in the exponent");
		if (eneg)
			exp10 = -exp10;
	}
	if (c->i >= c->n)
		return gw__wire_fail(c, GW_REJ_SYNTAX, c->i, c->field, "line ends inside a number");
	*is_int = integer;
	int e = exp10 + dropped - frac_digits;
	if (digits <= 15 && dropped == 0 && e >= -22 && e <= 22) {
		double v = (double)mant;
		v = e < 0 ? v / pow10_exact[-e] : v * pow10_exact[e];
		*out = neg ? -v : v;
		return 0;
	}
	/* The span is a validated decimal followed by a delimiter inside the
	 * buffer, so strtod stops exactly at its end. */
	char *end = NULL;
	double v = strtod(c->s + start, &end);
	if (end != c->s + c->i)
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
