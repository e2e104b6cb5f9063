/*
 * The NDJSON line parser (see wire.h); the roles and the alias table are
 * alias.c's, writing lines back is wire_write.c's.
 *
 * How it works: one pass over the line reads the top-level object into an
 * array of entries (key, kind, number or decoded string, raw span of nested
 * values), decoding strings into a scratch buffer sized from the line so no
 * pointer moves during the pass.  A second pass gives the entries meaning:
 * run, step, ts, event, role metrics, extras.  Nested values are validated
 * during the first pass and only turned into jansson values when the line is
 * an event.  Numbers take Clinger's exact fast path when the mantissa has at
 * most 15 digits and the decimal exponent is within +-22, else strtod.
 *
 * (About 900 lines, over the ~600 of the style on purpose: the value reader
 * (strings, numbers, nesting) and the record layer share the cursor, the
 * entry array and the scratch buffer, and this is the hot path of every
 * transport and of replay: in one file the compiler can inline the value
 * reader into the record pass.  Moving the reader behind an internal header
 * would cost that or put its code in the header.)
 */
#include "wire.h"
#include "buf.h"
#include "hash.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reasons ---------------------------------------------------------- */

static const char *const reason_names[GW_REJ_NREASONS] = {
	[GW_REJ_SYNTAX] = "malformed_json",
	[GW_REJ_NOT_OBJECT] = "not_object",
	[GW_REJ_UTF8] = "invalid_utf8",
	[GW_REJ_NO_RUN] = "missing_run",
	[GW_REJ_BAD_RUN] = "bad_run",
	[GW_REJ_NO_STEP] = "missing_step",
	[GW_REJ_BAD_STEP] = "bad_step",
	[GW_REJ_BAD_TS] = "bad_ts",
	[GW_REJ_BAD_VALUE] = "bad_value",
	[GW_REJ_DUP_KEY] = "duplicate_field",
	[GW_REJ_BAD_EVENT] = "bad_event",
	[GW_REJ_BAD_RANK] = "bad_rank",
	[GW_REJ_TOO_LONG] = "line_too_long",
	[GW_REJ_TRUNCATED] = "truncated",
	[GW_REJ_UNAUTHORIZED] = "unauthorized",
	[GW_REJ_NO_MEMORY] = "out_of_memory",
};

const char *gw_wire_reason_name(enum gw_wire_reason r)
{
	return (unsigned)r < GW_REJ_NREASONS ? reason_names[r] : "unknown";
}

/* ---- the parser ----------------------------------------------------------- */

enum vkind { V_NUM, V_STR, V_NULL, V_BOOL, V_NESTED };

struct entry {
	const char *key;
	size_t key_len;
	uint32_t key_hash;
	size_t key_col;       /* 1-based */
	enum vkind kind;
	double num;
	bool num_int;         /* integer literal without fraction or exponent */
	bool bval;
	const char *str;      /* decoded, NUL-terminated */
	size_t str_len;
	size_t raw_start, raw_end; /* span of the raw value text */
};

struct gw_wire {
	const struct gw_alias *aliases;
	char *scratch;
	size_t scratch_cap, scratch_len;
	struct entry *ent;
	size_t ent_cap, n_ent;
	struct gw_metric *metrics;
	size_t metrics_cap;
	json_t *attrs;
};

struct cur {
	const char *s;
	size_t n, i;
	struct gw_wire *w;
	struct gw_wire_err *err;
	const char *field; /* key being read, for messages */
};

struct gw_wire *gw_wire_new(const struct gw_alias *aliases)
{
	struct gw_wire *w = calloc(1, sizeof(*w));
	if (w)
		w->aliases = aliases;
	return w;
}

void gw_wire_free(struct gw_wire *w)
{
	if (!w)
		return;
	json_decref(w->attrs);
	free(w->scratch);
	free(w->ent);
	free(w->metrics);
	free(w);
}

static int fail(struct cur *c, enum gw_wire_reason r, size_t col,
                const char *field, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int fail(struct cur *c, enum gw_wire_reason r, size_t col,
                const char *field, const char *fmt, ...)
{
	struct gw_wire_err *e = c->err;
	if (!e)
		return -EINVAL;
	e->reason = r;
	e->column = col;
	if (field) {
		/* a long field name is cut at a character boundary: the message
		 * goes into JSON answers, which take only valid UTF-8 */
		size_t n = gw_utf8_cut(field, GW_MIN(strlen(field), sizeof(e->field) - 1));
		memcpy(e->field, field, n);
		e->field[n] = '\0';
	} else {
		e->field[0] = '\0';
	}
	char what[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	gw_utf8_fix_end(what);
	int off = snprintf(e->msg, sizeof(e->msg), "%s", gw_wire_reason_name(r));
	if (field && off < (int)sizeof(e->msg))
		off += snprintf(e->msg + off, sizeof(e->msg) - (size_t)off,
		                ": field \"%s\"", e->field);
	if (col && off < (int)sizeof(e->msg))
		off += snprintf(e->msg + off, sizeof(e->msg) - (size_t)off,
		                " at column %zu", col);
	if (off < (int)sizeof(e->msg))
		snprintf(e->msg + off, sizeof(e->msg) - (size_t)off, ": %s", what);
	gw_utf8_fix_end(e->msg);
	return -EINVAL;
}

/* A byte of the input for a message: 'x' when it is printable ASCII, else
 * its value (a lone byte of a UTF-8 sequence is no character). */
static const char *show_byte(char ch, char buf[16])
{
	unsigned char u = (unsigned char)ch;
	if (u >= 0x20 && u < 0x7f)
		snprintf(buf, 16, "'%c'", ch);
	else
		snprintf(buf, 16, "byte 0x%02x", u);
	return buf;
}

static void skip_ws(struct cur *c)
{
	while (c->i < c->n) {
		char ch = c->s[c->i];
		if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
			break;
		c->i++;
	}
}

static const char *kind_name(char ch)
{
	switch (ch) {
	case '"': return "a string";
	case '{': return "an object";
	case '[': return "an array";
	case 't':
	case 'f': return "a boolean";
	case 'n': return "null";
	default: return "a number";
	}
}

int gw_wire_check_run(const char *s, size_t n, char *why, size_t whylen)
{
	if (n == 0 || n > GW_WIRE_RUN_MAX)
		return gw_errf(why, whylen, -EINVAL, "a run name has 1 to %d bytes, this one has %zu",
		               GW_WIRE_RUN_MAX, n);
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		if (p[i] < 0x80) {
			if (p[i] < 0x20 || p[i] == 0x7f)
				return gw_errf(why, whylen, -EINVAL,
				               "a run name has no control characters (byte %zu is 0x%02x)",
				               i + 1, p[i]);
			i++;
			continue;
		}
		size_t k = gw_utf8_seq(p + i, n - i);
		if (!k)
			return gw_errf(why, whylen, -EINVAL,
			               "a run name is UTF-8 (byte %zu, 0x%02x, is not)", i + 1, p[i]);
		if (k == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0)
			return gw_errf(why, whylen, -EINVAL,
			               "a run name has no control characters (U+%04X at byte %zu)",
			               p[i + 1], i + 1);
		i += k;
	}
	return 0;
}

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
static int parse_string(struct cur *c, const char **out, size_t *out_len)
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
			return fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
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
				return fail(c, GW_REJ_UTF8, c->i + 1, c->field,
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
			return fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
			            "invalid escape: %s after a backslash", show_byte(e, (char[16]){0}));
		}
		if (lit) {
			if (o)
				*o++ = lit;
			c->i += 2;
			continue;
		}
		unsigned cp;
		if (c->i + 6 > c->n || hex4(c->s + c->i + 2, &cp) < 0)
			return fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
			            "invalid \\u escape");
		size_t esc_col = c->i + 1;
		c->i += 6;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			unsigned lo;
			if (c->i + 6 > c->n || c->s[c->i] != '\\' || c->s[c->i + 1] != 'u' ||
			    hex4(c->s + c->i + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
				return fail(c, GW_REJ_UTF8, esc_col, c->field,
				            "unpaired UTF-16 surrogate in \\u escape");
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			c->i += 6;
		} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
			return fail(c, GW_REJ_UTF8, esc_col, c->field,
			            "unpaired UTF-16 surrogate in \\u escape");
		} else if (cp == 0) {
			return fail(c, GW_REJ_SYNTAX, esc_col, c->field,
			            "\\u0000 is not allowed in a string");
		}
		if (o)
			o += put_utf8(o, cp);
	}
	return fail(c, GW_REJ_SYNTAX, start + 1, c->field, "unterminated string");
}

static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static bool match_word(struct cur *c, const char *word)
{
	size_t n = strlen(word);
	if (c->n - c->i < n || memcmp(c->s + c->i, word, n) != 0)
		return false;
	c->i += n;
	return true;
}

/* Read a number (JSON grammar, plus NaN, Infinity, -Infinity). */
static int parse_number(struct cur *c, double *out, bool *is_int)
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
			return fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid literal");
		*out = neg ? -INFINITY : INFINITY;
		return 0;
	}
	if (!neg && c->s[c->i] == 'N') {
		if (!match_word(c, "NaN"))
			return fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid literal");
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
		return fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid number");
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
			return fail(c, GW_REJ_SYNTAX, start + 1, c->field,
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
			return fail(c, GW_REJ_SYNTAX, start + 1, c->field,
			            "digits expected in the exponent");
		if (eneg)
			exp10 = -exp10;
	}
	if (c->i >= c->n)
		return fail(c, GW_REJ_SYNTAX, c->i, c->field, "line ends inside a number");
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
		return fail(c, GW_REJ_SYNTAX, start + 1, c->field, "invalid number");
	*out = v;
	return 0;
}

static json_t *number_json(double v, bool is_int)
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
static int parse_value(struct cur *c, int depth, json_t **out)
{
	if (c->i >= c->n)
		return fail(c, GW_REJ_SYNTAX, c->i, c->field, "line ends where a value was expected");
	if (depth > GW_WIRE_MAX_DEPTH)
		return fail(c, GW_REJ_SYNTAX, c->i + 1, c->field, "nesting deeper than %d",
		            GW_WIRE_MAX_DEPTH);
	char ch = c->s[c->i];
	int rc;
	if (ch == '"') {
		const char *s;
		size_t len;
		if (!out)
			return parse_string(c, NULL, NULL);
		size_t mark = c->w->scratch_len;
		if ((rc = parse_string(c, &s, &len)) < 0)
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
					return fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
					            "object key expected");
				}
				if ((rc = parse_string(c, out ? &key : NULL, &klen)) < 0) {
					json_decref(node);
					return rc;
				}
				skip_ws(c);
				if (c->i >= c->n || c->s[c->i] != ':') {
					json_decref(node);
					return fail(c, GW_REJ_SYNTAX, c->i + 1, c->field,
					            "':' expected after an object key");
				}
				c->i++;
				skip_ws(c);
			}
			json_t *child = NULL;
			if ((rc = parse_value(c, depth + 1, out ? &child : NULL)) < 0) {
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
			return fail(c, GW_REJ_SYNTAX, c->i + 1, c->field, "',' or '%c' expected",
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
			return fail(c, GW_REJ_SYNTAX, c->i + 1, c->field, "invalid literal");
		}
		return 0;
	}
	if (ch == '-' || (ch >= '0' && ch <= '9') || ch == 'N' || ch == 'I') {
		double v;
		bool is_int;
		if ((rc = parse_number(c, &v, &is_int)) < 0)
			return rc;
		if (out && !(*out = number_json(v, is_int)))
			return -ENOMEM;
		return 0;
	}
	return fail(c, GW_REJ_SYNTAX, c->i + 1, c->field, "unexpected character %s",
	            show_byte(ch, (char[16]){0}));
}

/* First pass: the top-level object into w->ent. */
static int read_object(struct cur *c)
{
	struct gw_wire *w = c->w;
	int rc;
	skip_ws(c);
	if (c->i >= c->n)
		return -ENODATA;
	if (c->s[c->i] != '{') {
		if (c->s[c->i] == '[' || c->s[c->i] == '"' || c->s[c->i] == '-' ||
		    (c->s[c->i] >= '0' && c->s[c->i] <= '9'))
			return fail(c, GW_REJ_NOT_OBJECT, c->i + 1, NULL,
			            "a line must be a JSON object, got %s", kind_name(c->s[c->i]));
		return fail(c, GW_REJ_SYNTAX, c->i + 1, NULL, "'{' expected");
	}
	c->i++;
	skip_ws(c);
	if (c->i < c->n && c->s[c->i] == '}') {
		c->i++;
		goto tail;
	}
	for (;;) {
		if (c->i >= c->n || c->s[c->i] != '"')
			return fail(c, GW_REJ_SYNTAX, c->i + 1, NULL, "field name expected");
		if ((rc = gw_grow((void **)&w->ent, &w->ent_cap, w->n_ent + 1, sizeof(*w->ent))) < 0)
			return rc;
		struct entry *e = &w->ent[w->n_ent];
		memset(e, 0, sizeof(*e));
		e->key_col = c->i + 1;
		c->field = NULL;
		if ((rc = parse_string(c, &e->key, &e->key_len)) < 0)
			return rc;
		e->key_hash = gw_fnv1a32(e->key, e->key_len);
		for (size_t k = 0; k < w->n_ent; k++) {
			if (w->ent[k].key_hash == e->key_hash && w->ent[k].key_len == e->key_len &&
			    memcmp(w->ent[k].key, e->key, e->key_len) == 0)
				return fail(c, GW_REJ_DUP_KEY, e->key_col, e->key,
				            "the field appears twice");
		}
		c->field = e->key;
		skip_ws(c);
		if (c->i >= c->n || c->s[c->i] != ':')
			return fail(c, GW_REJ_SYNTAX, c->i + 1, e->key, "':' expected after the field name");
		c->i++;
		skip_ws(c);
		if (c->i >= c->n)
			return fail(c, GW_REJ_SYNTAX, c->i, e->key, "line ends where a value was expected");
		e->raw_start = c->i;
		char ch = c->s[c->i];
		if (ch == '"') {
			e->kind = V_STR;
			rc = parse_string(c, &e->str, &e->str_len);
		} else if (ch == '{' || ch == '[') {
			e->kind = V_NESTED;
			rc = parse_value(c, 1, NULL);
		} else if (ch == 't' || ch == 'f' || ch == 'n') {
			if (match_word(c, "true")) {
				e->kind = V_BOOL;
				e->bval = true;
			} else if (match_word(c, "false")) {
				e->kind = V_BOOL;
			} else if (match_word(c, "null")) {
				e->kind = V_NULL;
			} else {
				rc = fail(c, GW_REJ_SYNTAX, c->i + 1, e->key, "invalid literal");
			}
		} else if (ch == '-' || (ch >= '0' && ch <= '9') || ch == 'N' || ch == 'I') {
			e->kind = V_NUM;
			rc = parse_number(c, &e->num, &e->num_int);
		} else {
			rc = fail(c, GW_REJ_SYNTAX, c->i + 1, e->key, "unexpected character %s",
			          show_byte(ch, (char[16]){0}));
		}
		if (rc < 0)
			return rc;
		e->raw_end = c->i;
		w->n_ent++;
		skip_ws(c);
		if (c->i < c->n && c->s[c->i] == ',') {
			c->i++;
			skip_ws(c);
			continue;
		}
		if (c->i < c->n && c->s[c->i] == '}') {
			c->i++;
			break;
		}
		if (c->i >= c->n)
			return fail(c, GW_REJ_SYNTAX, c->n, NULL, "line ends inside the object");
		return fail(c, GW_REJ_SYNTAX, c->i + 1, NULL, "',' or '}' expected");
	}
tail:
	c->field = NULL;
	skip_ws(c);
	if (c->i < c->n)
		return fail(c, GW_REJ_SYNTAX, c->i + 1, NULL, "text after the end of the object");
	return 0;
}

static const char *vkind_name(enum vkind k)
{
	switch (k) {
	case V_NUM: return "a number";
	case V_STR: return "a string";
	case V_NULL: return "null";
	case V_BOOL: return "a boolean";
	default: return "an object or array";
	}
}

static int build_attrs(struct cur *c, const struct entry *skip[], size_t nskip)
{
	struct gw_wire *w = c->w;
	json_decref(w->attrs);
	w->attrs = json_object();
	if (!w->attrs)
		return -ENOMEM;
	for (size_t k = 0; k < w->n_ent; k++) {
		const struct entry *e = &w->ent[k];
		bool skipped = false;
		for (size_t j = 0; j < nskip; j++)
			skipped |= skip[j] == e;
		int prio;
		if (skipped || (e->kind == V_NULL &&
		                gw__alias_lookup_hashed(w->aliases, e->key, e->key_len, e->key_hash,
		                                    &prio) == GW_ROLE_TS))
			continue;
		json_t *v = NULL;
		switch (e->kind) {
		case V_NUM: v = number_json(e->num, e->num_int); break;
		case V_STR: v = json_stringn(e->str, e->str_len); break;
		case V_NULL: v = json_null(); break;
		case V_BOOL: v = json_boolean(e->bval); break;
		case V_NESTED: {
			struct cur sub = *c;
			sub.i = e->raw_start;
			sub.n = c->n;
			sub.field = e->key;
			int rc = parse_value(&sub, 1, &v);
			if (rc < 0)
				return rc;
			break;
		}
		}
		if (!v || json_object_setn_new(w->attrs, e->key, e->key_len, v) < 0)
			return -ENOMEM;
	}
	return 0;
}

int gw_wire_parse(struct gw_wire *w, const char *line, size_t len,
                  const char *default_run, struct gw_rec *rec,
                  struct gw_wire_err *err)
{
	struct gw_wire_err dummy;
	if (!err)
		err = &dummy;
	err->reason = GW_REJ_SYNTAX;
	err->column = 0;
	err->field[0] = err->msg[0] = '\0';
	if (len && line[len - 1] == '\r')
		len--;
	/* Decoded strings never exceed their raw text; one byte per string for
	 * the terminator fits in the quotes.  So len + 1 bytes is enough and the
	 * buffer never moves during a parse. */
	if (gw_grow((void **)&w->scratch, &w->scratch_cap, len + 16, 1) < 0)
		return -ENOMEM;
	w->scratch_len = 0;
	w->n_ent = 0;
	struct cur c = {.s = line, .n = len, .i = 0, .w = w, .err = err};
	int rc = read_object(&c);
	if (rc < 0)
		return rc;

	memset(rec, 0, sizeof(*rec));
	rec->ts = NAN;
	const struct entry *run = NULL, *step = NULL, *event = NULL, *ts = NULL, *rank = NULL;
	const struct entry *bad_value = NULL;   /* a role field that is not a number */
	int ts_prio = 1 << 30;
	int prio[GW_NROLES];
	for (int r = 0; r < GW_NROLES; r++)
		prio[r] = 1 << 30;
	size_t n_metrics = 0;
	if (gw_grow((void **)&w->metrics, &w->metrics_cap, w->n_ent + 1,
	            sizeof(*w->metrics)) < 0)
		return -ENOMEM;

	for (size_t k = 0; k < w->n_ent; k++) {
		const struct entry *e = &w->ent[k];
		if (e->key_len == 3 && memcmp(e->key, "run", 3) == 0) {
			run = e;
			continue;
		}
		if (e->key_len == 4 && memcmp(e->key, "step", 4) == 0) {
			step = e;
			continue;
		}
		if (e->key_len == 5 && memcmp(e->key, "event", 5) == 0) {
			event = e;
			continue;
		}
		if (e->key_len == 4 && memcmp(e->key, "rank", 4) == 0) {
			rank = e;
			continue;
		}
		int p;
		int role = gw__alias_lookup_hashed(w->aliases, e->key, e->key_len, e->key_hash, &p);
		if (role == GW_ROLE_TS) {
			/* null counts as absent, as for the roles; so does it
			 * among an event's attributes (build_attrs) */
			if (e->kind != V_NULL && p < ts_prio) {
				ts = e;
				ts_prio = p;
			}
			continue;
		}
		if (role >= 0) {
			if (e->kind == V_NULL)
				continue;
			if (e->kind != V_NUM) {
				/* an error for a record; an event's attribute */
				if (!bad_value)
					bad_value = e;
				continue;
			}
			if (p < prio[role]) {
				prio[role] = p;
				rec->v[role] = e->num;
				rec->present |= 1u << role;
			}
			continue;
		}
		if (e->kind == V_NUM) {
			w->metrics[n_metrics].name = e->key;
			w->metrics[n_metrics].value = e->num;
			n_metrics++;
		}
	}

	if (bad_value && !event)
		return fail(&c, GW_REJ_BAD_VALUE, bad_value->raw_start + 1, bad_value->key,
		            "expected a number (or NaN/Infinity), got %s", vkind_name(bad_value->kind));

	if (run) {
		if (run->kind != V_STR)
			return fail(&c, GW_REJ_BAD_RUN, run->raw_start + 1, "run",
			            "expected a string, got %s", vkind_name(run->kind));
		char why[128];
		if (gw_wire_check_run(run->str, run->str_len, why, sizeof(why)) < 0)
			return fail(&c, GW_REJ_BAD_RUN, run->raw_start + 1, "run", "%s", why);
		rec->run = run->str;
		rec->run_len = run->str_len;
	} else if (default_run && *default_run) {
		char why[128];
		rec->run = default_run;
		rec->run_len = strlen(default_run);
		if (gw_wire_check_run(rec->run, rec->run_len, why, sizeof(why)) < 0)
			return fail(&c, GW_REJ_BAD_RUN, 0, "run", "the default run name: %s", why);
	} else {
		return fail(&c, GW_REJ_NO_RUN, 0, NULL, "the line has no \"run\" field");
	}

	if (!step)
		return fail(&c, GW_REJ_NO_STEP, 0, NULL, "the line has no \"step\" field");
	if (step->kind != V_NUM)
		return fail(&c, GW_REJ_BAD_STEP, step->raw_start + 1, "step",
		            "expected an integer, got %s", vkind_name(step->kind));
	if (!isfinite(step->num) || step->num != floor(step->num))
		return fail(&c, GW_REJ_BAD_STEP, step->raw_start + 1, "step",
		            "expected an integer, got %.17g", step->num);
	if (step->num < 0 || step->num > (double)GW_WIRE_STEP_MAX)
		return fail(&c, GW_REJ_BAD_STEP, step->raw_start + 1, "step",
		            "step %.17g is outside 0..%lld", step->num,
		            (long long)GW_WIRE_STEP_MAX);
	rec->step = (int64_t)step->num;

	if (rank && rank->kind != V_NULL) {   /* null: no rank, as for the roles */
		if (rank->kind != V_NUM)
			return fail(&c, GW_REJ_BAD_RANK, rank->raw_start + 1, "rank",
			            "expected an integer, got %s", vkind_name(rank->kind));
		if (!isfinite(rank->num) || rank->num != floor(rank->num) || rank->num < 0 ||
		    rank->num > GW_WIRE_RANK_MAX)
			return fail(&c, GW_REJ_BAD_RANK, rank->raw_start + 1, "rank",
			            "expected an integer in 0..%d, got %.17g", GW_WIRE_RANK_MAX,
			            rank->num);
		rec->has_rank = true;
		rec->rank = (uint32_t)rank->num;
	}

	if (ts && ts->kind != V_NULL) {
		if (ts->kind != V_NUM || !isfinite(ts->num) || ts->num < 0)
			return fail(&c, GW_REJ_BAD_TS, ts->raw_start + 1, ts->key,
			            "expected finite Unix seconds >= 0");
		rec->ts = ts->num;
	}

	if (event) {
		if (event->kind != V_STR || event->str_len == 0 ||
		    event->str_len > GW_WIRE_EVENT_MAX)
			return fail(&c, GW_REJ_BAD_EVENT, event->raw_start + 1, "event",
			            "expected a name of 1 to %d bytes", GW_WIRE_EVENT_MAX);
		const struct entry *skip[] = {run, step, event, ts, rank};
		if ((rc = build_attrs(&c, skip, GW_ARRAY_SIZE(skip))) < 0)
			return rc;
		rec->event = event->str;
		rec->attrs = w->attrs;
		rec->present = 0;
		return 0;
	}
	rec->extra = w->metrics;
	rec->n_extra = n_metrics;
	return 0;
}
