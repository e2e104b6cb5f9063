/*
 * What a text line goes through before its format reads it (reader.c
 * on_line, and the sniffers through gw__rd_sniff_line / gw__rd_sniff_msg):
 * the wrapping of a paste and the prefixes of a logger.
 *
 *   > > ```text                      Markdown / GitHub quote markers (nested)
 *   > > [2022-01-19 13:09:13,305] [INFO] [stage_1_and_2.py:1644:step] msg
 *
 * A person who pastes a log into an issue or a chat quotes it ("> ", as
 * GitHub's "Quote reply" does, nested in a reply to a reply) and fences it
 * (```); gw__rd_unquote takes the quote markers off every line and says
 * which lines are fences (skipped).  A logger puts a timestamp, a level
 * and its name before the message; gw__rd_prefix finds that prefix, its
 * length and the time it names (the line's ts: a finished log keeps the
 * times it was written at, docs/formats.md "Lines").
 *
 * The prefix is a chain of these, each followed by spaces and at most one
 * separator ("|", "-", ">>", ":"):
 *   - a date and time: 2023-03-22 09:30:39(,305 | .123456)(Z | +02:00),
 *     2023/03/22 09:30:39, 03/22/2023 09:30:39 (the HF examples' format,
 *     month first), optionally in brackets; read as UTC when no offset is
 *     given (only differences between lines matter to the detectors);
 *   - a level word: INFO, WARNING, ... (also "INFO:root:", Python
 *     logging's default, with the logger's name after it);
 *   - a bracketed tag without '=' or spaces: [INFO], [titan], [train],
 *     [stage_1_and_2.py:1644:step], [INFO|trainer.py:1611]; or a bracket
 *     holding a date and time ([NeMo I 2023-03-22 09:30:39 exp_manager:374]);
 *   - glog/absl's "I0322 09:30:39.123456 140234 train.py:123]" (no year: no
 *     ts);
 *   - once a time or a level was seen: a logger name before a separator
 *     (fairseq's "| fairseq.trainer |", "- root - INFO -", loguru's
 *     "__main__:log_dist:54 -").
 * "[step=16/739328]", "[epoch=1]", "[Rank 0]", "[1/200]" and the like are
 * messages, not prefixes.  Nothing here allocates.
 */
#include "reader_impl.h"

#include <math.h>
#include <string.h>

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

bool gw__rd_unquote(const char **s, size_t *n)
{
	const char *p = *s;
	size_t m = *n, i = 0;
	for (;;) {
		size_t j = i;
		while (j < m && j - i < 3 && p[j] == ' ')
			j++;
		if (j >= m || p[j] != '>')
			break;
		i = j + 1;
		if (i < m && p[i] == ' ')
			i++;
	}
	*s = p + i;
	*n = m - i;
	size_t j = i;
	while (j < m && j - i < 3 && p[j] == ' ')
		j++;
	return m - j >= 3 && ((p[j] == '`' && p[j + 1] == '`' && p[j + 2] == '`') ||
	                      (p[j] == '~' && p[j + 1] == '~' && p[j + 2] == '~'));
}

/* n digits at s as a number, or -1. */
static int digits(const char *s, size_t avail, size_t n)
{
	if (avail < n)
		return -1;
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (the civil calendar
 * counted in 400-year eras of 146097 days, the year starting in March so
 * that the leap day is its last). */
static int64_t days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* "HH:MM:SS" with an optional fraction after '.' or ','; seconds of the
 * day in *t, bytes used or 0. */
static size_t clock_time(const char *s, size_t n, double *t)
{
	int h = digits(s, n, 2), mi, se;
	if (h < 0 || n < 8 || s[2] != ':' || (mi = digits(s + 3, n - 3, 2)) < 0 || s[5] != ':' ||
	    (se = digits(s + 6, n - 6, 2)) < 0 || h > 23 || mi > 59 || se > 60)
		return 0;
	size_t i = 8;
	double frac = 0, scale = 0.1;
	if (i + 1 < n && (s[i] == '.' || s[i] == ',') && digit(s[i + 1])) {
		for (i++; i < n && digit(s[i]); i++, scale /= 10)
			frac += (s[i] - '0') * scale;
	}
	*t = h * 3600.0 + mi * 60.0 + se + frac;
	return i;
}

/* A date and a time at s (see the top of the file): Unix seconds in *t,
 * bytes used or 0. */
size_t gw__rd_datetime(const char *s, size_t n, double *t)
{
	int y, mo, d;
	size_t i;
	if (n >= 10 && (s[4] == '-' || s[4] == '/') && s[7] == s[4] &&
	    (y = digits(s, n, 4)) >= 0 && (mo = digits(s + 5, n - 5, 2)) >= 0 &&
	    (d = digits(s + 8, n - 8, 2)) >= 0) {
		i = 10;
	} else if (n >= 10 && s[2] == '/' && s[5] == '/' && (mo = digits(s, n, 2)) >= 0 &&
	           (d = digits(s + 3, n - 3, 2)) >= 0 && (y = digits(s + 6, n - 6, 4)) >= 0) {
		i = 10;
	} else {
		return 0;
	}
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || i >= n || (s[i] != ' ' && s[i] != 'T'))
		return 0;
	i++;
	double sec;
	size_t k = clock_time(s + i, n - i, &sec);
	if (!k)
		return 0;
	i += k;
	double off = 0;
	if (i < n && s[i] == 'Z') {
		i++;
	} else if (i + 2 < n && (s[i] == '+' || s[i] == '-') && digits(s + i + 1, n - i - 1, 2) >= 0) {
		int oh = digits(s + i + 1, n - i - 1, 2), om = 0;
		size_t j = i + 3;
		if (j < n && s[j] == ':')
			j++;
		if ((om = digits(s + j, n - j, 2)) >= 0)
			j += 2;
		else
			om = 0;
		off = (s[i] == '-' ? -1 : 1) * (oh * 3600.0 + om * 60.0);
		i = j;
	}
	if (i < n && (alpha(s[i]) || digit(s[i])))
		return 0;
	*t = (double)days_from_civil(y, mo, d) * 86400.0 + sec - off;
	return i;
}

static const char *const levels[] = {
	"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL", "FATAL", "NOTICE", "TRACE",
};

/* A level word at s followed by a non-word character: its length, or 0. */
static size_t level(const char *s, size_t n)
{
	if (!n || !strchr("IWEDCFNT", s[0]))
		return 0;
	for (size_t k = 0; k < sizeof(levels) / sizeof(levels[0]); k++) {
		size_t l = strlen(levels[k]);
		if (n >= l && !memcmp(s, levels[k], l) && (n == l || !(alpha(s[l]) || s[l] == '_')))
			return l;
	}
	return 0;
}

static bool name_char(char c)
{
	return alpha(c) || digit(c) || c == '_' || c == '.' || c == ':' || c == '<' || c == '>';
}

/* A bracketed prefix element at s ('['): its length, with *t a time in it
 * (NaN if none), or 0 when the bracket is a message ("[step=16/739328]"). */
static size_t bracket(const char *s, size_t n, double *t)
{
	const char *e = memchr(s, ']', n < 128 ? n : 128);
	if (!e)
		return 0;
	size_t len = (size_t)(e - s) + 1, in = len - 2;
	const char *c = s + 1;
	if (!in || memchr(c, '=', in))
		return 0;
	for (size_t i = 0; i + 10 <= in; i++) {
		if ((i == 0 || c[i - 1] == ' ') && digit(c[i]) && gw__rd_datetime(c + i, in - i, t))
			return len;
	}
	*t = NAN;
	if (level(c, in) == in)
		return len;
	bool letter = false;
	for (size_t i = 0; i < in; i++) {
		if (c[i] == ' ' || c[i] == '\t' || c[i] == '[')
			return 0;
		letter |= alpha(c[i]);
	}
	return letter ? len : 0;
}

/* glog / absl: "I0322 09:30:39.123456 140234 train.py:123]". */
static size_t glog(const char *s, size_t n)
{
	double t;
	if (n < 20 || !strchr("IWEF", s[0]) || digits(s + 1, n - 1, 4) < 0 || s[5] != ' ')
		return 0;
	size_t i = 6, k = clock_time(s + i, n - i, &t);
	if (!k)
		return 0;
	i += k;
	while (i < n && blank(s[i]))
		i++;
	while (i < n && digit(s[i]))
		i++;
	if (i >= n || s[i] != ' ')
		return 0;
	i++;
	while (i < n && name_char(s[i]) && s[i] != ']')
		i++;
	return i < n && s[i] == ']' ? i + 1 : 0;
}

/* Spaces, then at most one separator and the spaces after it. */
static size_t separator(const char *s, size_t n, size_t i)
{
	while (i < n && blank(s[i]))
		i++;
	if (i + 1 < n && s[i] == '>' && s[i + 1] == '>')
		i += 2;
	else if (i < n && (s[i] == '|' || (s[i] == '-' && i + 1 < n && blank(s[i + 1]))))
		i++;
	while (i < n && blank(s[i]))
		i++;
	return i;
}

size_t gw__rd_prefix(const char *s, size_t n, double *ts)
{
	size_t i = 0, end = 0;
	bool strong = false;   /* a time or a level was seen: names may follow */
	*ts = NAN;
	while (i < n && blank(s[i]))
		i++;
	for (int elems = 0; elems < 8 && i < n; elems++) {
		double t = NAN;
		size_t k;
		if (s[i] == '[' && (k = bracket(s + i, n - i, &t))) {
			if (!isnan(t))
				*ts = t, strong = true;
			i += k;
			if (i < n && s[i] == ':')
				i++;
		} else if (digit(s[i]) && (k = gw__rd_datetime(s + i, n - i, &t))) {
			*ts = t;
			strong = true;
			i += k;
		} else if ((k = level(s + i, n - i))) {
			strong = true;
			i += k;
			if (i < n && s[i] == ':' && i + 1 < n && !blank(s[i + 1])) {
				/* Python logging's "INFO:root:" */
				size_t j = i + 1;
				while (j < n && name_char(s[j]) && s[j] != ':')
					j++;
				if (j < n && s[j] == ':' && j > i + 1)
					i = j + 1;
			}
		} else if ((k = glog(s + i, n - i))) {
			strong = true;
			i += k;
		} else if (strong && (alpha(s[i]) || s[i] == '_')) {
			/* a logger's name, when a separator follows it */
			size_t j = i;
			while (j < n && j - i < 96 && name_char(s[j]))
				j++;
			size_t q = j;
			while (q < n && blank(s[q]))
				q++;
			if (q == j || q >= n || !(s[q] == '|' || (s[q] == '-' && q + 1 < n && blank(s[q + 1]))))
				break;
			i = j;
		} else {
			break;
		}
		end = i = separator(s, n, i);
	}
	return end;
}

double gw__rd_stamp_in(const char *s, size_t n)
{
	double t, last = NAN;
	for (const char *b = s; (b = memchr(b, '[', (size_t)(s + n - b))); b++)
		if (b + 1 < s + n && digit(b[1]) && gw__rd_datetime(b + 1, (size_t)(s + n - b - 1), &t))
			last = t;
	return last;
}
