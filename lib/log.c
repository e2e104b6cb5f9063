/*
 * stderr logger: a level threshold, a timestamp or journald priority prefix,
 * one write per line so lines from threads do not interleave.  Control
 * characters in a message (a run name, a field name, anything a client
 * sent) are written as \xNN, so no input can forge or split a log line or
 * send escape sequences to a terminal; so is every byte that is not part
 * of valid UTF-8.  Characters that print nothing or reorder what a
 * terminal shows (C1 controls, bidi overrides and isolates such as U+202E,
 * the line and paragraph separators U+2028/9, zero-width characters such
 * as U+200B, tags; see invisible()) are written as \u202e, so a run name
 * cannot make a line read as something else.  Warnings about peers share a
 * budget a minute (gw_log_peer): a fixed window on the monotonic clock,
 * the held-back count said once the window is over.  The threshold and the
 * journal switch are atomics: a reload (SIGHUP, on the loop) changes them
 * while the writer and checkpoint threads log.
 */
#include "log.h"
#include "clock.h"
#include "utf8.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Relaxed is enough: each is one value on its own, and a line logged
 * beside a reload may use the old level or the new one. */
static _Atomic int threshold = GW_LOG_INFO;
static _Atomic int to_journal;

void gw_log_init(enum gw_log_level level, int journal)
{
	atomic_store_explicit(&threshold, (int)level, memory_order_relaxed);
	atomic_store_explicit(&to_journal, journal, memory_order_relaxed);
}

static bool shown(enum gw_log_level level)
{
	return (int)level <= atomic_load_explicit(&threshold, memory_order_relaxed);
}

bool gw_log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

enum gw_log_level gw_log_level(void)
{
	return (enum gw_log_level)atomic_load_explicit(&threshold, memory_order_relaxed);
}

int gw_log_parse_level(const char *s, enum gw_log_level *out)
{
	static const struct {
		const char *name;
		enum gw_log_level level;
	} names[] = {
		{"crit", GW_LOG_CRIT}, {"err", GW_LOG_ERR}, {"error", GW_LOG_ERR},
		{"warn", GW_LOG_WARN}, {"warning", GW_LOG_WARN},
		{"info", GW_LOG_INFO}, {"debug", GW_LOG_DEBUG},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcasecmp(s, names[i].name) == 0) {
			*out = names[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *level_name(enum gw_log_level l)
{
	switch (l) {
	case GW_LOG_CRIT: return "crit";
	case GW_LOG_ERR: return "error";
	case GW_LOG_WARN: return "warn";
	case GW_LOG_INFO: return "info";
	default: return "debug";
	}
}

static void vlog(enum gw_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

void gw_log(enum gw_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

#define BUDGET_WINDOW_MS 60000

static struct gw_log_budget peer = GW_LOG_BUDGET(
	"warning(s) about what clients sent or did", "the rejections are counted in /metrics",
	GW_LOG_PEER_BUDGET);

/* The budgets used so far, for gw_log_peer_flush. */
static pthread_mutex_t budgets_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gw_log_budget *budgets;

/* With b->mu held: say what was held back if the window is over (or
 * now), and open a new window when it is over. */
static void budget_flush_locked(struct gw_log_budget *b, uint64_t t, bool now)
{
	bool over = b->start == 0 || t - b->start >= BUDGET_WINDOW_MS;
	if (b->held && (over || now)) {
		gw_log(GW_LOG_WARN, "%" PRIu64 " more %s were not logged in the last %.0f s (at most "
		       "%u a minute are; %s)", b->held, b->what, (double)(t - b->start) / 1000.0,
		       b->per_min, b->counted);
		b->held = 0;
	}
	if (over) {
		b->start = t;
		b->used = 0;
	}
}

static void vbudgeted(struct gw_log_budget *b, enum gw_log_level level, const char *fmt,
                      va_list ap) __attribute__((format(printf, 3, 0)));

static void vbudgeted(struct gw_log_budget *b, enum gw_log_level level, const char *fmt,
                      va_list ap)
{
	if (!shown(level))
		return;
	pthread_mutex_lock(&b->mu);
	bool list = !b->listed;
	b->listed = true;
	budget_flush_locked(b, gw_mono_ms(), false);
	bool say = b->used < b->per_min;
	if (say)
		b->used++;
	else
		b->held++;
	pthread_mutex_unlock(&b->mu);
	if (list) {
		pthread_mutex_lock(&budgets_mu);
		b->next = budgets;
		budgets = b;
		pthread_mutex_unlock(&budgets_mu);
	}
	if (say)
		vlog(level, fmt, ap);
}

void gw_log_budgeted(struct gw_log_budget *b, enum gw_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vbudgeted(b, level, fmt, ap);
	va_end(ap);
}

void gw_log_peer(enum gw_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vbudgeted(&peer, level, fmt, ap);
	va_end(ap);
}

void gw_log_peer_flush(bool now)
{
	pthread_mutex_lock(&budgets_mu);
	for (struct gw_log_budget *b = budgets; b; b = b->next) {
		pthread_mutex_lock(&b->mu);
		if (b->held)
			budget_flush_locked(b, gw_mono_ms(), now);
		pthread_mutex_unlock(&b->mu);
	}
	pthread_mutex_unlock(&budgets_mu);
}

/* Whether code point c prints nothing visible or changes how the text
 * around it is shown: the C1 controls, format characters (Unicode's Cf:
 * soft hyphen, zero-width space and joiners, the bidi marks, embeddings,
 * overrides and isolates, the word joiner and invisible operators, the
 * byte-order mark, the interlinear annotation marks, the tags), the line
 * and paragraph separators, the blank Hangul fillers, and the
 * noncharacters U+FFFE/U+FFFF. */
static bool invisible(uint32_t c)
{
	static const uint32_t ranges[][2] = {
		{0x80, 0x9f}, {0xad, 0xad}, {0x34f, 0x34f}, {0x61c, 0x61c}, {0x115f, 0x1160},
		{0x17b4, 0x17b5}, {0x180b, 0x180f}, {0x200b, 0x200f}, {0x2028, 0x202e},
		{0x2060, 0x206f}, {0x3164, 0x3164}, {0xfeff, 0xfeff}, {0xffa0, 0xffa0},
		{0xfff9, 0xfffb}, {0xfffe, 0xffff}, {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (c >= ranges[i][0] && c <= ranges[i][1])
			return true;
	return false;
}

/* The code point of the valid k-byte UTF-8 sequence at p. */
static uint32_t utf8_decode(const unsigned char *p, size_t k)
{
	uint32_t c = p[0] & (k == 2 ? 0x1f : k == 3 ? 0x0f : 0x07);
	for (size_t i = 1; i < k; i++)
		c = c << 6 | (p[i] & 0x3f);
	return c;
}

/* Append msg[0..mlen) to buf (at len, cap bytes, room kept for the
 * newline) escaped as the file's comment says; returns the new length. */
static size_t escape_into(char *buf, size_t len, size_t cap, const char *msg, size_t mlen)
{
	const unsigned char *m = (const unsigned char *)msg;
	for (size_t i = 0; i < mlen;) {
		unsigned char ch = m[i];
		size_t k = ch < 0x80 ? 1 : gw_utf8_seq(m + i, mlen - i);
		char esc[16];
		int en = 0;
		if (k == 0 || ch < 0x20 || ch == 0x7f) {
			en = snprintf(esc, sizeof(esc), "\\x%02x", ch);
			k = 1;
		} else if (k > 1 && invisible(utf8_decode(m + i, k))) {
			en = snprintf(esc, sizeof(esc), "\\u%04" PRIx32, utf8_decode(m + i, k));
		}
		size_t need = en ? (size_t)en : k;
		if (len + need + 1 >= cap)
			break;
		memcpy(buf + len, en ? esc : msg + i, need);
		len += need;
		i += k;
	}
	return len;
}

static void vlog(enum gw_log_level level, const char *fmt, va_list ap)
{
	if (!shown(level))
		return;
	char buf[2048];
	int off;
	if (atomic_load_explicit(&to_journal, memory_order_relaxed)) {
		off = snprintf(buf, sizeof(buf), "<%d>", (int)level);
	} else {
		struct timespec ts;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		off = snprintf(buf, sizeof(buf),
		               "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ",
		               tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		               tm.tm_hour, tm.tm_min, tm.tm_sec,
		               ts.tv_nsec / 1000000, level_name(level));
	}
	char msg[2048];
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t mlen = n < 0 ? 0 : (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
	size_t len = escape_into(buf, (size_t)off, sizeof(buf), msg, mlen);
	buf[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, buf, len);
	(void)w;
}

void gw_log_redact_url(const char *url, bool keep_path, char *out, size_t out_size)
{
	if (!out_size)
		return;
	const char *scheme = strstr(url, "://");
	const char *host = scheme ? scheme + 3 : url;
	const char *path = strpbrk(host, "/?#");
	size_t host_len = path ? (size_t)(path - host) : strlen(host);
	const char *at = memchr(host, '@', host_len);
	if (at) {
		host_len -= (size_t)(at + 1 - host);
		host = at + 1;
	}
	/* Keep scheme://host; the user info, the path (Slack's
	 * /services/T/B/secret, a token as the first segment) and the query
	 * are replaced unless the path is declared public, and then only the
	 * query and fragment go. */
	size_t keep = 0;
	if (path && keep_path)
		keep = strcspn(path, "?#");
	bool redacted = at || (path && path[keep] != '\0');
	snprintf(out, out_size, "%.*s%.*s%.*s%s", scheme ? (int)(scheme + 3 - url) : 0, url,
	         (int)host_len, host, (int)keep, path ? path : "", redacted ? "/REDACTED" : "");
}
