/*
 * A line of the text format read as name/value pairs (rd_plain.h).  One
 * pass: separators end a name; words gather into a name (three at most,
 * "is" left out: "Loss is 1.26" is loss = 1.26); a number closes the
 * pending name and is its value, or, without one, is the line's lead
 * fraction (a bar's "B/T"), one of its head counters (the bare numbers
 * before any word: "333 154 Loss=nan" is epoch 333, step 154) or an
 * unnamed number.  Allocation-free; names go into the parse's buffer.
 */
#include "rd_plain.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

static bool word_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '/' || c == '.';
}

static bool sep(const char *s, size_t n, size_t i)
{
	char c = s[i];
	if (c == '|' || c == ',' || c == ';' || c == '[' || c == ']' || c == '(' || c == ')' ||
	    c == '{' || c == '}' || c == '\t')
		return true;
	/* " - " (Keras, speechbrain, loguru) and a dash before a space */
	return c == '-' && (i + 1 >= n || s[i + 1] == ' ') && (i == 0 || s[i - 1] == ' ');
}

/* After s[i]: spaces, then the start of a value (a digit, a sign, a '.',
 * or nan/inf)? */
static bool value_next(const char *s, size_t n, size_t i)
{
	while (i < n && s[i] == ' ')
		i++;
	if (i >= n)
		return false;
	if (isdigit((unsigned char)s[i]) || s[i] == '-' || s[i] == '+' || s[i] == '.')
		return true;
	return n - i >= 3 && (!strncasecmp(s + i, "nan", 3) || !strncasecmp(s + i, "inf", 3));
}

/* A number at s[i..n): its value, a total after '/', a unit; bytes used,
 * 0 if none (or a clock time). */
static size_t number(const char *s, size_t n, size_t i, double *v, double *total, char unit[8])
{
	size_t k = gw__rd_num_grouped(s + i, n - i, v);
	unit[0] = '\0';
	*total = NAN;
	if (!k)
		return 0;
	size_t j = i + k;
	if (j + 1 < n && s[j] == ':' && isdigit((unsigned char)s[j + 1]))
		return 0;   /* a clock time */
	if (j < n && s[j] == '/' && j + 1 < n && isdigit((unsigned char)s[j + 1])) {
		double t;
		size_t m = gw__rd_num(s + j + 1, n - j - 1, &t);
		if (m) {
			*total = t;
			j += 1 + m;
		}
	}
	if (j < n && s[j] == '%') {
		memcpy(unit, "pct", 4);
		j++;
	} else {
		size_t u = 0;
		while (j + u < n && u < 5 && isalpha((unsigned char)s[j + u]))
			u++;
		if (u && u <= 4 && !(j + u < n && word_char(s[j + u]) && s[j + u] != '.')) {
			for (size_t q = 0; q < u; q++)
				unit[q] = (char)tolower((unsigned char)s[j + q]);
			unit[u] = '\0';
			j += u;
		} else if (u) {
			return 0;   /* "3rd", "1e" glued to a word: not a value */
		}
	}
	return j - i;
}

/* nan or inf where a value is due: the word at s[i..n) starts with one
 * ("nan", "NaN", "Infinity", "nanxxx" as a reporter masked it); its length
 * and value, or 0.  Without `due` only the whole spellings count. */
static size_t nonfinite(const char *s, size_t n, size_t i, bool due, double *v)
{
	size_t k = gw__rd_num(s + i, n - i, v);
	if (!k || isfinite(*v))
		return 0;
	size_t e = i + k;
	if (e >= n || !word_char(s[e]) || (s[e] == '.' && (e + 1 >= n || s[e + 1] == ' ')))
		return k;   /* whole, or a sentence's full stop after it */
	if (!due)
		return 0;
	while (e < n && isalnum((unsigned char)s[e]))
		e++;
	return e - i;
}

static void add_pair(struct gw_pl_parse *p, const char *name, size_t nl, const char *unit,
                     double v, double total, bool words)
{
	size_t ul = strlen(unit);
	if (p->n >= GW_PL_PAIRS || p->used + nl + ul + 2 > GW_PL_NAMEBUF)
		return;
	char *o = p->names + p->used;
	size_t k = 0;
	for (size_t i = 0; i < nl; i++)
		o[k++] = name[i] == ' ' ? '_' : (char)tolower((unsigned char)name[i]);
	if (ul) {
		o[k++] = '_';
		memcpy(o + k, unit, ul);
		k += ul;
	}
	o[k] = '\0';
	p->used += k + 1;
	p->p[p->n++] = (struct gw_pl_pair){o, v, total, words};
}

void gw__pl_parse(const char *s, size_t n, struct gw_pl_parse *p)
{
	memset(p, 0, sizeof(*p));
	p->lead = p->lead_total = NAN;
	size_t i = 0, name0 = 0, name1 = 0;   /* the pending name s[name0..name1) */
	int words = 0;
	bool first_word = true, any_word = false, due = false;
	while (i < n) {
		char c = s[i];
		if (c == ' ') {
			i++;
			continue;
		}
		if (c == ':' || c == '=') {
			due = words > 0;
			i++;
			continue;
		}
		if ((c == '[' || c == '(') && words && value_next(s, n, i + 1)) {
			i++;   /* "Epoch [1/10]": a bracket between a name and its value */
			continue;
		}
		if ((c == ']' || c == ')') && words && value_next(s, n, i + 1)) {
			i++;   /* "[Loss] 5.1", "[step]    89": a name in brackets */
			continue;
		}
		if (sep(s, n, i)) {
			words = 0;
			due = false;
			i++;
			continue;
		}
		double v = 0, total = NAN;
		char unit[8] = "";
		size_t k = 0;
		bool numeric = isdigit((unsigned char)c) || c == '.' ||
		               ((c == '-' || c == '+') && i + 1 < n &&
		                (isdigit((unsigned char)s[i + 1]) || s[i + 1] == '.'));
		if (numeric)
			k = number(s, n, i, &v, &total, unit);
		else if (words && word_start(c))
			k = nonfinite(s, n, i, due, &v);
		if (numeric || k) {
			if (!k) {
				while (i < n && !sep(s, n, i) && s[i] != ' ')
					i++;
				words = 0;
				due = false;
				continue;
			}
			int64_t whole;
			if (words)
				add_pair(p, s + name0, name1 - name0, unit, v, total, words > 1);
			else if (!isnan(total) && isnan(p->lead_total))
				p->lead = v, p->lead_total = total;   /* a bar's "B/T" */
			else if (!any_word && p->nhead < 2 && !*unit && gw__rd_whole(v, &whole))
				p->head[p->nhead++] = whole;
			else
				p->unnamed++;
			words = 0;
			due = false;
			i += k;
			continue;
		}
		if (word_start(c)) {
			size_t a = i, first = 0;
			for (;;) {
				while (i < n && word_char(s[i]) &&
				       !(s[i] == '.' && i + 1 < n && isdigit((unsigned char)s[i + 1])))
					i++;
				if (!first)
					first = i;
				/* "cross-entropy", "Train-cross-entropy" (MXNet): a
				 * hyphen between letters joins one name */
				if (!(i + 1 < n && s[i] == '-' && isalpha((unsigned char)s[i - 1]) &&
				      isalpha((unsigned char)s[i + 1])))
					break;
				i++;
			}
			while (i > a + 1 && s[i - 1] == '.')
				i--;   /* a sentence's full stop */
			if (first > i)
				first = i;
			any_word = true;
			if (first_word) {
				p->eval = gw__rd_eval_word(s + a, first - a);
				first_word = false;
			}
			if (words && i - a == 2 && !strncasecmp(s + a, "is", 2))
				continue;   /* "Loss is 1.26" */
			if (words && words < 3 && !due && name1 + 1 == a && s[name1] == ' ') {
				name1 = i;   /* "train loss", "learning rate" */
				words++;
			} else {
				name0 = a;
				name1 = i;
				words = 1;
			}
			due = false;
			if (i + 1 < n && s[i] == '.' && isdigit((unsigned char)s[i + 1]))
				i++;   /* "it.670/50000": the name, then its value */
			continue;
		}
		/* anything else ends a name */
		words = 0;
		due = false;
		i++;
	}
}

int gw__pl_step_rank(const char *n)
{
	/* iterations before steps: lit-gpt's "iter 76 step 38" logs every
	 * micro-batch, the step only at the optimizer's (rd_plain.c also
	 * leaves a counter that stands still for one that moves) */
	static const char *const names[] = {"iteration", "iter", "it", "step", "global_step",
	                                    "update", "updates", "num_updates", "batch", "steps"};
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (!strcmp(n, names[k]))
			return (int)k;
	size_t l = strlen(n);
	return l > 5 && !strcmp(n + l - 5, "_step") ? (int)(sizeof(names) / sizeof(names[0])) : -1;
}

bool gw__pl_epoch_name(const char *n)
{
	size_t l = strlen(n);
	return !strcmp(n, "epoch") || (l > 6 && !strcmp(n + l - 6, "_epoch"));
}

bool gw__pl_two_numbers(const char *s, size_t n, int64_t *step, double *loss)
{
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	size_t k = gw__rd_int(s + i, n - i, step);
	if (!k)
		return false;
	i += k;
	size_t gap = i;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i < n && (s[i] == ':' || s[i] == ','))
		i++;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i == gap || i >= n)
		return false;
	k = gw__rd_num(s + i, n - i, loss);
	if (!k)
		return false;
	i += k;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i == n;
}
