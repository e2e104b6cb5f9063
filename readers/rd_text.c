/*
 * Text helpers of the format modules (reader_impl.h): numbers as logs spell
 * them (nan, inf, 1.2E+01), substring search, the lines of a sniffing head,
 * '\r'-separated segments, and a reader of flat objects written as JSON or
 * as Python dict reprs.  None of them allocates or needs NUL-terminated
 * input: lines handed to formats point into the reader's buffers.
 */
#include "reader_impl.h"

#include <errno.h>

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- numbers in text ---------------------------------------------------- */

static bool word_ci(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	if (n < k)
		return false;
	for (size_t i = 0; i < k; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != w[i])
			return false;
	}
	return true;
}

size_t gw__rd_num(const char *s, size_t n, double *v)
{
	size_t i = 0;
	bool neg = false;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (word_ci(s + i, n - i, "nan")) {
		*v = NAN;
		return i + 3;
	}
	if (word_ci(s + i, n - i, "infinity")) {
		*v = neg ? -INFINITY : INFINITY;
		return i + 8;
	}
	if (word_ci(s + i, n - i, "inf")) {
		*v = neg ? -INFINITY : INFINITY;
		return i + 3;
	}
	size_t start = i, digits = 0;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++, digits++;
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++, digits++;
	}
	if (!digits)
		return 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t j = i + 1;
		if (j < n && (s[j] == '+' || s[j] == '-'))
			j++;
		if (j < n && s[j] >= '0' && s[j] <= '9') {
			while (j < n && s[j] >= '0' && s[j] <= '9')
				j++;
			i = j;
		}
	}
	char buf[64];
	size_t len = i - start;
	if (len >= sizeof(buf))
		return 0;
	memcpy(buf, s + start, len);
	buf[len] = '\0';
	double x = strtod(buf, NULL);
	*v = neg ? -x : x;
	return i;
}

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Exactly three digits at p[0..m). */
static bool group3(const char *p, size_t m)
{
	return m >= 3 && digit(p[0]) && digit(p[1]) && digit(p[2]) && (m == 3 || !digit(p[3]));
}

size_t gw__rd_num_grouped(const char *s, size_t n, double *v)
{
	size_t k = gw__rd_num(s, n, v);
	if (!k || k >= n || s[k] != ',' || !group3(s + k + 1, n - k - 1))
		return k;
	size_t i = s[0] == '+' || s[0] == '-' ? 1 : 0;
	for (size_t j = i; j < k; j++)
		if (!digit(s[j]))
			return k; /* "1.5,250" is two numbers */
	char buf[64];
	size_t o = 0;
	bool neg = s[0] == '-';
	while (i < n && o + 1 < sizeof(buf)) {
		if (digit(s[i]))
			buf[o++] = s[i++];
		else if (s[i] == ',' && group3(s + i + 1, n - i - 1))
			i++;
		else
			break;
	}
	if (i < n && s[i] == '.' && o + 1 < sizeof(buf)) {
		buf[o++] = s[i++];
		while (i < n && digit(s[i]) && o + 1 < sizeof(buf))
			buf[o++] = s[i++];
	}
	buf[o] = '\0';
	double x = strtod(buf, NULL);
	*v = neg ? -x : x;
	return i;
}

size_t gw__rd_plain(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		if (s[i] != '\x1b') {
			out[o++] = s[i];
			continue;
		}
		if (i + 1 < n && s[i + 1] == '[') {
			/* CSI: parameters and intermediates, then one final byte */
			i += 2;
			while (i < n && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e))
				i++;
		}
	}
	out[o] = '\0';
	return o;
}

size_t gw__rd_int(const char *s, size_t n, int64_t *v)
{
	size_t i = 0;
	int64_t x = 0;
	while (i < n && s[i] >= '0' && s[i] <= '9') {
		if (x > (INT64_MAX - 9) / 10)
			return 0;
		x = x * 10 + (s[i] - '0');
		i++;
	}
	if (i)
		*v = x;
	return i;
}

bool gw__rd_whole(double v, int64_t *step)
{
	/* 0x1p63 is INT64_MAX + 1: anything below it converts */
	if (!(v >= 0 && v < 0x1p63) || v != floor(v))
		return false;
	*step = (int64_t)v;
	return true;
}

const char *gw__rd_find(const char *s, size_t n, const char *needle)
{
	return memmem(s, n, needle, strlen(needle));
}

size_t gw__rd_label(const char *s, size_t n, uint32_t *rank)
{
	size_t i = 0, d;
	int64_t v;
	if (n && s[0] == '[') {
		/* "[rank3]:", "[default3]:": a name, digits, "]:" */
		i = 1;
		while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		                 s[i] == '_'))
			i++;
		if (i == 1 || !(d = gw__rd_int(s + i, n - i, &v)) || d > 7)
			return 0;
		i += d;
		if (i + 1 >= n || s[i] != ']' || s[i + 1] != ':')
			return 0;
		i += 2;
	} else {
		/* srun --label: "%Nd: ", right-aligned */
		while (i < n && i < 8 && s[i] == ' ')
			i++;
		if (!(d = gw__rd_int(s + i, n - i, &v)) || d > 7)
			return 0;
		i += d;
		if (i + 1 >= n || s[i] != ':' || s[i + 1] != ' ')
			return 0;
		i += 1;
	}
	if (v > GW_WIRE_RANK_MAX)
		return 0;
	while (i < n && s[i] == ' ')
		i++;
	if (s[0] != '[') {
		/* "1200: 2.7431" is a step and its loss, not rank 1200's line */
		double x;
		size_t k = gw__rd_num(s + i, n - i, &x);
		while (k && i + k < n && (s[i + k] == ' ' || s[i + k] == '\t'))
			k++;
		if (k && i + k == n)
			return 0;
	}
	*rank = (uint32_t)v;
	return i;
}

bool gw__rd_sniff_line(const char **p, const char *end, bool all, const char **line, size_t *len)
{
	for (;;) {
		if (*p >= end)
			return false;
		const char *nl = memchr(*p, '\n', (size_t)(end - *p));
		if (!nl && !all)
			return false; /* an incomplete last line says nothing yet */
		size_t n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
		*line = *p;
		*p += n + 1;
		if (n && (*line)[n - 1] == '\r')
			n--;
		if (gw__rd_unquote(line, &n))
			continue;   /* a code fence */
		uint32_t rank;
		size_t k = gw__rd_label(*line, n, &rank);
		*line += k;
		*len = n - k;
		return true;
	}
}

bool gw__rd_sniff_msg(const char **p, const char *end, bool all, const char **line, size_t *len)
{
	if (!gw__rd_sniff_line(p, end, all, line, len))
		return false;
	double ts;
	size_t k = gw__rd_prefix(*line, *len, &ts);
	*line += k;
	*len -= k;
	return true;
}

int gw__rd_cr_segments(struct gw_reader *r, void *state, const char *s, size_t n,
                       uint64_t lineno, gw_rd_segment_fn fn)
{
	for (;;) {
		const char *cr = memchr(s, '\r', n);
		size_t len = cr ? (size_t)(cr - s) : n;
		int rc = fn(r, state, s, len, lineno);
		if (rc || !cr)
			return rc;
		s += len + 1;
		n -= len + 1;
	}
}

/* ---- flat objects: JSON or Python dict reprs ---------------------------- */

bool gw__rd_kv_num(const struct gw_rd_kv *kv, double *v)
{
	if (kv->kind == GW_RD_NUM) {
		*v = kv->num;
		return true;
	}
	if (kv->kind == GW_RD_STR && kv->str_len) {
		size_t k = gw__rd_num(kv->str, kv->str_len, v);
		return k == kv->str_len;
	}
	return false;
}

void gw__rd_obj_init(struct gw_rd_obj *o, const char *s, size_t n)
{
	o->s = s;
	o->n = n;
	o->i = 1;
	o->first = true;
}

static void obj_ws(struct gw_rd_obj *o)
{
	while (o->i < o->n && (o->s[o->i] == ' ' || o->s[o->i] == '\t' || o->s[o->i] == '\n' ||
	                       o->s[o->i] == '\r'))
		o->i++;
}

/* A quoted string at o->i: its raw contents; o->i past the closing quote. */
static int obj_str(struct gw_rd_obj *o, const char **str, size_t *len)
{
	char q = o->s[o->i++];
	size_t start = o->i;
	while (o->i < o->n) {
		char c = o->s[o->i];
		if (c == '\\') {
			o->i += 2;
			continue;
		}
		if (c == q) {
			*str = o->s + start;
			*len = o->i - start;
			o->i++;
			return 0;
		}
		if (c == '\n')
			return -1;
		o->i++;
	}
	o->i = o->n;
	return -1;
}

/* A nested value or a call's parentheses: skip to the matching closer. */
static int obj_skip_nested(struct gw_rd_obj *o)
{
	char stack[64];
	size_t depth = 0;
	while (o->i < o->n) {
		char c = o->s[o->i];
		if (c == '"' || c == '\'') {
			const char *x;
			size_t xl;
			if (obj_str(o, &x, &xl) < 0)
				return -1;
			continue;
		}
		if (c == '{' || c == '[' || c == '(') {
			if (depth == sizeof(stack))
				return -1;
			stack[depth++] = c == '{' ? '}' : c == '[' ? ']' : ')';
		} else if (c == '}' || c == ']' || c == ')') {
			if (!depth || stack[depth - 1] != c)
				return -1;
			if (--depth == 0) {
				o->i++;
				return 0;
			}
		}
		o->i++;
	}
	return -1;
}

int gw__rd_obj_next(struct gw_rd_obj *o, struct gw_rd_kv *kv)
{
	obj_ws(o);
	if (o->i >= o->n)
		return -1;
	if (o->s[o->i] == '}') {
		o->i++;
		return 0;
	}
	if (!o->first) {
		if (o->s[o->i] != ',')
			return -1;
		o->i++;
		obj_ws(o);
		if (o->i < o->n && o->s[o->i] == '}') {
			o->i++;
			return 0;
		}
	}
	o->first = false;
	if (o->i >= o->n || (o->s[o->i] != '"' && o->s[o->i] != '\''))
		return -1;
	if (obj_str(o, &kv->key, &kv->key_len) < 0)
		return -1;
	obj_ws(o);
	if (o->i >= o->n || o->s[o->i] != ':')
		return -1;
	o->i++;
	obj_ws(o);
	if (o->i >= o->n)
		return -1;
	char c = o->s[o->i];
	kv->kind = GW_RD_OTHER;
	if (c == '"' || c == '\'') {
		kv->kind = GW_RD_STR;
		return obj_str(o, &kv->str, &kv->str_len) < 0 ? -1 : 1;
	}
	if (c == '{' || c == '[')
		return obj_skip_nested(o) < 0 ? -1 : 1;
	size_t used = gw__rd_num(o->s + o->i, o->n - o->i, &kv->num);
	if (used) {
		kv->kind = GW_RD_NUM;
		o->i += used;
	} else {
		/* null, true, None, a call such as tensor(1.5, device='cuda:0') */
		size_t start = o->i;
		while (o->i < o->n && ((o->s[o->i] >= 'a' && o->s[o->i] <= 'z') ||
		                       (o->s[o->i] >= 'A' && o->s[o->i] <= 'Z') ||
		                       (o->s[o->i] >= '0' && o->s[o->i] <= '9') ||
		                       o->s[o->i] == '_' || o->s[o->i] == '.'))
			o->i++;
		if (o->i == start)
			return -1;
		if (o->i < o->n && o->s[o->i] == '(' && obj_skip_nested(o) < 0)
			return -1;
	}
	size_t save = o->i;
	obj_ws(o);
	if (o->i < o->n && o->s[o->i] != ',' && o->s[o->i] != '}')
		return -1;
	o->i = save;
	return 1;
}

bool gw__rd_loss_part(const char *name)
{
	char n[128];
	size_t k = 0;
	for (; name[k] && k + 1 < sizeof(n); k++)
		n[k] = (char)tolower((unsigned char)name[k]);
	n[k] = '\0';
	return strstr(n, "loss") && strncmp(n, "val", 3) && strncmp(n, "eval", 4) &&
	       strncmp(n, "test", 4) && !strstr(n, "scale") &&
	       !(k > 6 && !strcmp(n + k - 6, "_epoch"));
}

bool gw__rd_eval_word(const char *w, size_t n)
{
	static const char *const words[] = {"val", "valid", "validation", "validating", "eval",
	                                    "evaluation", "evaluating", "test", "testing"};
	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
		if (strlen(words[k]) == n && !strncasecmp(w, words[k], n))
			return true;
	return false;
}
