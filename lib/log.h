/*
 * Logging to stderr with levels.  One line per message:
 *   "<level> <module>: text" (journald picks the level from the "<N>" prefix
 * when stderr is the journal, see gw_log_init).
 *
 * Levels, and what they mean here:
 *   CRIT  the daemon cannot go on (start-up error, invariant broken);
 *   ERR   an operation failed and data or an alert may be affected;
 *   WARN  something is wrong with input or a peer, survived and counted;
 *   INFO  lifecycle: start, stop, reload, listeners, segments, alerts;
 *   DEBUG per-connection and per-batch detail.
 * Never log secrets: URLs go through gw_log_redact_url() first.
 */
#ifndef GW_LOG_H
#define GW_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gw_log_level {
	GW_LOG_CRIT = 2,
	GW_LOG_ERR = 3,
	GW_LOG_WARN = 4,
	GW_LOG_INFO = 6,
	GW_LOG_DEBUG = 7,
};

/* Set the threshold; `journal` non-zero prefixes lines with "<N>" for
 * journald instead of a timestamp. */
void gw_log_init(enum gw_log_level level, int journal);

/* Whether standard error is the journal: $JOURNAL_STREAM ("DEV:INODE",
 * set by systemd) names stderr's device and inode.  The variable alone is
 * not enough: every process a service starts inherits it, whatever its
 * stderr is. */
bool gw_log_stderr_is_journal(void);

/* Parse "crit", "err", "warn", "info", "debug"; returns -EINVAL if unknown. */
int gw_log_parse_level(const char *s, enum gw_log_level *out);

enum gw_log_level gw_log_level(void);

void gw_log(enum gw_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define gw_log_crit(...) gw_log(GW_LOG_CRIT, __VA_ARGS__)
#define gw_log_err(...) gw_log(GW_LOG_ERR, __VA_ARGS__)
#define gw_log_warn(...) gw_log(GW_LOG_WARN, __VA_ARGS__)
#define gw_log_info(...) gw_log(GW_LOG_INFO, __VA_ARGS__)
#define gw_log_debug(...) \
	do { \
		if (gw_log_level() >= GW_LOG_DEBUG) \
			gw_log(GW_LOG_DEBUG, __VA_ARGS__); \
	} while (0)

/* Warnings about what a peer sent or did (a rejected line, a refused
 * connection) go through gw_log_peer instead of gw_log: all of them share
 * one budget of GW_LOG_PEER_BUDGET lines a minute, so no client can flood
 * the log however many connections it opens (the per-connection limit
 * alone let a sender that connects per line write a warning per line).
 * Beyond the budget they are only counted, and gw_log_peer_flush says how
 * many in one line: once the minute is over (the daemon calls it on its
 * tick), or at once when `now` (at exit).  Thread-safe; never blocks but
 * for the write to stderr. */
#define GW_LOG_PEER_BUDGET 20
void gw_log_peer(enum gw_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Say what every budget (the peers' and each gw_log_budget) held back:
 * those whose minute is over, or all when `now`. */
void gw_log_peer_flush(bool now);

/* The same for any line that input can repeat at will (a run's new
 * segment): a budget of per_min lines a minute, a fixed window on the
 * monotonic clock; beyond it the lines are counted and one line says
 * "N more <what> were not logged in the last S s (at most per_min a
 * minute are; <counted>)" once the minute is over (gw_log_peer_flush on
 * the daemon's tick) or at exit.  Define one per kind of line with
 * GW_LOG_BUDGET; thread-safe. */
struct gw_log_budget {
	const char *what;          /* "segment line(s)" */
	const char *counted;       /* where the lines held back show instead */
	unsigned per_min;
	pthread_mutex_t mu;
	uint64_t start;            /* gw_mono_ms() of the window; 0: none yet */
	unsigned used;
	uint64_t held;
	bool listed;               /* on the list gw_log_peer_flush walks */
	struct gw_log_budget *next;
};
#define GW_LOG_BUDGET(what_, counted_, per_min_) \
	{.what = (what_), .counted = (counted_), .per_min = (per_min_), \
	 .mu = PTHREAD_MUTEX_INITIALIZER}
void gw_log_budgeted(struct gw_log_budget *b, enum gw_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Copy url into out with its secret parts replaced by "/REDACTED": the user
 * info, the query and fragment, and the whole path unless keep_path (a URL
 * whose path is declared public).  Always terminates out. */
void gw_log_redact_url(const char *url, bool keep_path, char *out, size_t out_size);

#endif
