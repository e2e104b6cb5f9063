/*
 * stderr logger: a level threshold, a timestamp or journald priority prefix,
 * one write per line so lines from threads do not interleave.  Control
 * characters in a message (a run name, a field name, anything a client
 * sent) are written as \xNN, so no input can forge or split a log line or
 * send escape sequences to a terminal.  Warnings about peers share a
 * budget a minute (gw_log_peer): a fixed window on the monotonic clock,
 * the held-back count said once the window is over.  The threshold and the
 * journal switch are atomics: a reload (SIGHUP, on the loop) changes them
 * while the writer and checkpoint threads log.
 */
#include "log.h"
#include "clock.h"

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

#define PEER_WINDOW_MS 60000

static struct {
	pthread_mutex_t mu;
	uint64_t start;         /* gw_mono_ms(); 0: no window yet */
	unsigned used;
	uint64_t held;
} peer = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* With peer.mu held: say what was held back if the window is over (or
 * now), and open a new window when it is over. */
static void peer_flush_locked(uint64_t t, bool now)
{
	bool over = peer.start == 0 || t - peer.start >= PEER_WINDOW_MS;
	if (peer.held && (over || now)) {
		gw_log(GW_LOG_WARN, "%" PRIu64 " more warning(s) about what clients sent or did were "
		       "not logged in the last %.0f s (at most %d a minute are; the rejections are "
		       "counted in /metrics)", peer.held, (double)(t - peer.start) / 1000.0,
		       GW_LOG_PEER_BUDGET);
		peer.held = 0;
	}
	if (over) {
		peer.start = t;
		peer.used = 0;
	}
}

void gw_log_peer(enum gw_log_level level, const char *fmt, ...)
{
	if (!shown(level))
		return;
	pthread_mutex_lock(&peer.mu);
	peer_flush_locked(gw_mono_ms(), false);
	bool say = peer.used < GW_LOG_PEER_BUDGET;
	if (say)
		peer.used++;
	else
		peer.held++;
	pthread_mutex_unlock(&peer.mu);
	if (!say)
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void gw_log_peer_flush(bool now)
{
	pthread_mutex_lock(&peer.mu);
	if (peer.held)
		peer_flush_locked(gw_mono_ms(), now);
	pthread_mutex_unlock(&peer.mu);
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
	size_t len = (size_t)off;
	for (size_t i = 0; i < mlen && len < sizeof(buf) - 6; i++) {
		unsigned char ch = (unsigned char)msg[i];
		if (ch < 0x20 || ch == 0x7f)
			len += (size_t)snprintf(buf + len, 5, "\\x%02x", ch);
		else
			buf[len++] = (char)ch;
	}
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
