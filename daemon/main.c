/*
 * gradwatchd: the daemon.
 *
 * Start-up, in order: the command line and the configuration (args.c),
 * logging, kernel choice, the lock on the database, then the parts in the
 * order of parts[] below: tokens, storage (open, migrate, writer thread),
 * the alert outbox, the record path (the detector engine and its runs),
 * idempotency keys, the HTTP server and its routes, retention, the
 * listeners, followed files; then signals and timers, READY=1 to systemd,
 * and the loop runs.  SIGTERM or SIGINT: stop accepting, give open
 * connections a short grace period to deliver what they already sent,
 * close them (a partial last line is counted as truncated), commit
 * everything queued, STOPPING=1, exit 0.  SIGHUP reloads thresholds,
 * per-run overrides, disabled detectors and the log level from the
 * configuration file (reload.c).
 *
 * parts[] is the one place where parts start and stop: each row has a
 * _start, a _stop (close its handles) and a _free (after the loop ran the
 * close callbacks), docs/architecture.md "Starting and stopping"; the
 * parts start in the table's order, stop and are freed in the reverse
 * order (also after a start that failed half-way), and uv_loop_close()
 * must then find nothing open.  A new part is a new row.
 */
#include "ack.h"
#include "alerting.h"
#include "api.h"
#include "args.h"
#include "auth.h"
#include "fleet.h"
#include "fleet_view.h"
#include "follow.h"
#include "health.h"
#include "http.h"
#include "idem.h"
#include "ingest.h"
#include "metrics.h"
#include "notify.h"
#include "reload.h"
#include "retention.h"
#include "runs.h"
#include "stream.h"
#include "web.h"

#include "kern.h"
#include "log.h"
#include "outbox.h"
#include "outbox_db.h"
#include "store.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHUTDOWN_GRACE_MS 300

/* Everything the daemon is made of, main's alone: each part gets from it
 * only what it needs (its _opts), when it starts. */
struct gw_daemon {
	uv_loop_t *loop;
	struct gw_args *args;
	struct gw_cfg *cfg;               /* &args->cfg */
	double started;

	struct gw_auth *auth;             /* NULL: no tokens configured */
	struct gw_store *store;
	struct gw_outbox *outbox;
	struct gw_ingest *ingest;
	struct gw_idem idem;              /* idempotency keys of POST /v1/ingest */
	struct gw_http *http;
	struct gw_server *server;
	struct gw_follow *follow;
	struct gw_fleet *fleet;           /* NULL: not shipping to PostgreSQL */
	/* what the routes read: they keep a pointer, so it lives here */
	struct gw_api_opts api;
	struct gw_health_opts health;
	struct gw_metrics_opts metrics;
	struct gw_ack_opts ack;

	size_t n_started;                 /* parts[] whose start was called */
	int close_rc;                     /* the store's close: the last commit failed */

	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t tick_timer;
	uv_timer_t watchdog_timer;
	uv_timer_t grace_timer;
	unsigned drain_ticks;
	bool stopping;
};

/* ---- the parts ----------------------------------------------------------------------- */

static int start_auth(struct gw_daemon *d, char *err, size_t errlen)
{
	return gw_auth_load(d->cfg->auth, &d->auth, err, errlen);
}

static void free_auth(struct gw_daemon *d)
{
	gw_auth_free(d->auth);
}

static int start_store(struct gw_daemon *d, char *err, size_t errlen)
{
	static const struct gw_store_schema *const schemas[] = {&gw_outbox_schema, &gw_idem_schema,
	                                                        &gw_fleet_schema};
	const struct gw_cfg *cfg = d->cfg;
	const struct gw_store_opts so = {
		.path = cfg->db_path,
		.sync_full = cfg->sync_full,
		.commit_interval_ms = cfg->commit_interval_ms,
		.commit_max_records = cfg->commit_max_records,
		.max_pending_bytes = cfg->max_pending_bytes,
		.schemas = schemas,
		.n_schemas = GW_ARRAY_SIZE(schemas),
	};
	return gw_store_open(&so, &d->store, err, errlen);
}

/* Closing the store commits everything queued. */
static void free_store(struct gw_daemon *d)
{
	if (!d->store)
		return;
	int rc = gw_store_close(d->store);
	d->store = NULL;
	if (rc < 0) {
		gw_log_err("the last commit failed: %s", strerror(-rc));
		d->close_rc = rc;
	}
}

static int start_outbox(struct gw_daemon *d, char *err, size_t errlen)
{
	return gw_alerting_outbox(d->loop, d->cfg, d->store, &d->outbox, err, errlen);
}

static void stop_outbox(struct gw_daemon *d)
{
	gw_outbox_stop(d->outbox);
}

static void free_outbox(struct gw_daemon *d)
{
	gw_outbox_free(d->outbox);
}

static int start_ingest(struct gw_daemon *d, char *err, size_t errlen)
{
	const struct gw_ingest_opts o = {.loop = d->loop, .cfg = d->cfg, .store = d->store,
	                                 .outbox = d->outbox};
	return gw_ingest_start(&o, &d->ingest, err, errlen);
}

static void stop_ingest(struct gw_daemon *d)
{
	gw_ingest_stop(d->ingest);
}

static void free_ingest(struct gw_daemon *d)
{
	gw_ingest_free(d->ingest);
}

static int start_idem(struct gw_daemon *d, char *err, size_t errlen)
{
	return gw_idem_init(&d->idem, d->cfg->db_path, d->cfg->idempotency_window_s,
	                    d->cfg->idempotency_max_keys, err, errlen);
}

static void free_idem(struct gw_daemon *d)
{
	gw_idem_deinit(&d->idem);
}

static int start_http(struct gw_daemon *d, char *err, size_t errlen)
{
	const struct gw_http_opts o = {.loop = d->loop, .cfg = d->cfg, .ingest = d->ingest,
	                               .auth = d->auth};
	return gw_http_start(&o, &d->http, err, errlen);
}

static void stop_http(struct gw_daemon *d)
{
	gw_http_stop(d->http);
}

static void free_http(struct gw_daemon *d)
{
	gw_http_free(d->http);
}

/* The routes on the HTTP server, each owner's with what it reads. */
static int start_routes(struct gw_daemon *d, char *err, size_t errlen)
{
	d->api = (struct gw_api_opts){.cfg = d->cfg, .ingest = d->ingest, .store = d->store,
	                              .idem = &d->idem, .fleet = d->fleet};
	d->health = (struct gw_health_opts){.cfg = d->cfg, .ingest = d->ingest, .store = d->store,
	                                    .outbox = d->outbox, .started = d->started};
	d->metrics = (struct gw_metrics_opts){.cfg = d->cfg, .ingest = d->ingest, .store = d->store,
	                                      .outbox = d->outbox, .started = d->started,
	                                      .fleet = d->fleet};
	d->ack = (struct gw_ack_opts){.ingest = d->ingest, .outbox = d->outbox};
	int rc;
	if ((rc = gw_api_start(d->http, &d->api, err, errlen)) < 0 ||
	    (rc = gw_health_start(d->http, &d->health, err, errlen)) < 0 ||
	    (rc = gw_metrics_start(d->http, &d->metrics, err, errlen)) < 0 ||
	    (rc = gw_web_start(d->http, err, errlen)) < 0 ||
	    (rc = gw_alerting_start(d->http, d->outbox, err, errlen)) < 0 ||
	    (rc = gw_ack_start(d->http, &d->ack, err, errlen)) < 0)
		return rc;
	return 0;
}

static int start_retention(struct gw_daemon *d, char *err, size_t errlen)
{
	const struct gw_retention_opts o = {.loop = d->loop, .cfg = d->cfg, .ingest = d->ingest,
	                                    .store = d->store, .http = d->http};
	return gw_retention_start(&o, err, errlen);
}

static void stop_retention(struct gw_daemon *d)
{
	gw_retention_stop();
}

static int start_server(struct gw_daemon *d, char *err, size_t errlen)
{
	const struct gw_server_opts o = {.loop = d->loop, .cfg = d->cfg, .ingest = d->ingest,
	                                 .auth = d->auth};
	return gw_server_start(&o, &d->server, err, errlen);
}

static void stop_server(struct gw_daemon *d)
{
	gw_server_stop(d->server);
}

static void free_server(struct gw_daemon *d)
{
	gw_server_free(d->server);
}

/* Shipping to the fleet's PostgreSQL, when configured: a thread that
 * reads what the store committed (fleet/fleet.h). */
static int start_fleet(struct gw_daemon *d, char *err, size_t errlen)
{
	struct gw_fleet_cfg fc;
	int rc = gw_fleet_cfg_parse(d->cfg->fleet, &fc, err, errlen);
	if (rc == 0 && fc.dsn)
		rc = gw_fleet_start(&fc, d->cfg->db_path, &d->fleet, err, errlen);
	gw_fleet_cfg_free(&fc);
	return rc;
}

static void free_fleet(struct gw_daemon *d)
{
	gw_fleet_stop(d->fleet);
	d->fleet = NULL;
}

static int start_follow(struct gw_daemon *d, char *err, size_t errlen)
{
	const struct gw_follow_opts o = {.loop = d->loop, .cfg = d->cfg, .ingest = d->ingest,
	                                 .store = d->store};
	return gw_follow_start(&o, &d->follow, err, errlen);
}

static void stop_follow(struct gw_daemon *d)
{
	gw_follow_stop(d->follow);
}

static void free_follow(struct gw_daemon *d)
{
	gw_follow_free(d->follow);
}

/* One part: start (0 or a negative errno with a message in err), stop
 * (close its handles; idempotent, safe after a failed start) and free
 * (after the loop ran the close callbacks).  NULL: nothing to do. */
struct part {
	int (*start)(struct gw_daemon *d, char *err, size_t errlen);
	void (*stop)(struct gw_daemon *d);
	void (*free)(struct gw_daemon *d);
};

/* In the order they start: each uses only those above it. */
static const struct part parts[] = {
	{start_auth, NULL, free_auth},
	{start_store, NULL, free_store},
	{start_fleet, NULL, free_fleet},
	{start_outbox, stop_outbox, free_outbox},
	{start_ingest, stop_ingest, free_ingest},
	{start_idem, NULL, free_idem},
	{start_http, stop_http, free_http},
	{start_routes, NULL, NULL},
	{start_retention, stop_retention, NULL},
	{start_server, stop_server, free_server},
	{start_follow, stop_follow, free_follow},
};

/* Start the parts in order; at the first that fails, 0 > its errno (err
 * says why) and the parts started so far, that one too, are stopped and
 * freed by the caller like after a run. */
static int start_parts(struct gw_daemon *d, char *err, size_t errlen)
{
	for (size_t i = 0; i < GW_ARRAY_SIZE(parts); i++) {
		d->n_started = i + 1;
		int rc = parts[i].start(d, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- signals, timers ------------------------------------------------------------------ */

/* One daemon per database: an exclusive lock on DB.lock (with our pid in
 * it), taken before anything is opened or bound, held until exit.  Returns
 * the lock's fd, or a negative errno with a message in err. */
static int lock_instance(const char *db_path, char *err, size_t errlen)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s.lock", db_path) >= (int)sizeof(path))
		return gw_errf(err, errlen, -ENAMETOOLONG, "database path too long: %s", db_path);
	struct stat st;
	if (stat(db_path, &st) == 0 && S_ISDIR(st.st_mode))   /* SQLite: "unable to open database file" */
		return gw_errf(err, errlen, -EISDIR, "the database %s is a directory: name a file in it "
		               "(--db %s/gradwatch.db), or give the directory with --state-dir", db_path,
		               db_path);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT) {
		/* only the default directories are created (gw_cfg_make_dirs) */
		char dir[PATH_MAX];
		gw_strlcpy(dir, db_path, sizeof(dir));
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		return gw_errf(err, errlen, -ENOENT, "the database's directory %s does not exist: a "
		               "directory given with --state-dir, --db or the configuration must exist "
		               "(create it first)", slash ? dir : ".");
	}
	if (fd < 0)
		return gw_errf(err, errlen, -errno, "cannot open the lock file %s: %s", path,
		               strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		char pid[32] = "";
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		if (e == EWOULDBLOCK)
			return gw_errf(err, errlen, -EBUSY, "%s is in use by another gradwatchd%s%s%s; "
			               "one daemon per database", db_path, pid[0] ? " (pid " : "", pid,
			               pid[0] ? ")" : "");
		return gw_errf(err, errlen, -e, "cannot lock %s: %s", path, strerror(e));
	}
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		gw_log_warn("cannot write the pid into %s: %s", path, strerror(errno));
	return fd;
}

/* Close every handle the daemon still holds, each through its owner's
 * _stop, in the reverse order of their start, then main's own signals and
 * timers; the loop then ends.  Also the failure path of a start. */
static void close_all(struct gw_daemon *d)
{
	for (size_t i = d->n_started; i-- > 0;)
		if (parts[i].stop)
			parts[i].stop(d);
	uv_close((uv_handle_t *)&d->sig_term, NULL);
	uv_close((uv_handle_t *)&d->sig_int, NULL);
	uv_close((uv_handle_t *)&d->sig_hup, NULL);
	uv_close((uv_handle_t *)&d->tick_timer, NULL);
	uv_close((uv_handle_t *)&d->watchdog_timer, NULL);
	uv_close((uv_handle_t *)&d->grace_timer, NULL);
}

/* Every handle is closed: free the parts in the reverse order of their
 * start. */
static void free_all(struct gw_daemon *d)
{
	for (size_t i = d->n_started; i-- > 0;)
		if (parts[i].free)
			parts[i].free(d);
}

/* After the grace period: every line read is queued.  Wait (without
 * blocking) until the store has committed all of it and the HTTP requests
 * waiting for that commit are answered, at most DRAIN_MAX_MS. */
#define DRAIN_TICK_MS 10
#define DRAIN_MAX_MS 10000

static void on_drain(uv_timer_t *t)
{
	struct gw_daemon *d = t->data;
	bool committed = gw_store_committed(d->store) >= gw_store_queued(d->store);
	if (!committed)
		gw_store_flush(d->store);
	d->drain_ticks++;
	if ((committed && !gw_http_busy(d->http)) || d->drain_ticks * DRAIN_TICK_MS > DRAIN_MAX_MS) {
		if (!committed)
			gw_log_warn("shutdown: storage still busy after %d ms; closing anyway "
			            "(the store commits the rest before exit)", DRAIN_MAX_MS);
		uv_timer_stop(t);
		close_all(d);
	}
}

static void on_grace_over(uv_timer_t *t)
{
	struct gw_daemon *d = t->data;
	gw_server_stop(d->server);
	gw_store_flush(d->store);
	uv_timer_start(t, on_drain, DRAIN_TICK_MS, DRAIN_TICK_MS);
}

static void begin_shutdown(struct gw_daemon *d, const char *why)
{
	if (d->stopping)
		return;
	d->stopping = true;
	gw_log_info("%s: stopping (committing everything received)", why);
	/* for the stall watch of the next start (core/runs.c gw_runs_restore) */
	char at[32];
	snprintf(at, sizeof(at), "%.3f", gw_wall_now());
	gw_store_put_meta(d->store, GW_RUNS_STOPPED_AT, at);
	gw_notify("STOPPING=1");
	/* stop accepting; connections already open get a short grace period to
	 * deliver what they sent before we close them; retention deletes
	 * nothing more */
	gw_http_drain(d->http);
	gw_follow_stop(d->follow);
	gw_retention_stop();
	uv_timer_stop(&d->tick_timer);
	uv_timer_stop(&d->watchdog_timer);
	uv_timer_start(&d->grace_timer, on_grace_over, SHUTDOWN_GRACE_MS, 0);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct gw_daemon *d = s->data;
	if (signum == SIGHUP) {
		gw_reload(d->loop, d->args, d->ingest);
		return;
	}
	begin_shutdown(d, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void on_tick(uv_timer_t *t)
{
	struct gw_daemon *d = t->data;
	gw_ingest_tick(d->ingest, gw_wall_now());
	gw_log_peer_flush(false);
}

static void on_watchdog(uv_timer_t *t)
{
	gw_notify("WATCHDOG=1");
}

/* ---- main ------------------------------------------------------------------------------ */

/* Run the daemon with the configuration in a until it is stopped: the
 * exit status. */
static int run(struct gw_args *a)
{
	struct gw_daemon d = {.args = a, .cfg = &a->cfg};
	struct gw_cfg *cfg = d.cfg;
	char err[512], warn[512];
	gw_log_init(cfg->log_level, gw_log_stderr_is_journal());
	gw_log_info("gradwatchd %s starting: kernels %s, database %s", GW_VERSION, gw_kern_name(),
	            cfg->db_path);
	if (gw_cfg_make_dirs(cfg, err, sizeof(err)) < 0 ||
	    gw_cfg_check_dirs(cfg, err, sizeof(err), warn, sizeof(warn)) < 0) {
		gw_log_crit("%s", err);
		return 1;
	}
	if (warn[0])
		gw_log_warn("%s", warn);
	int lock_fd = lock_instance(cfg->db_path, err, sizeof(err));
	if (lock_fd < 0) {
		gw_log_crit("%s", err);
		return 1;
	}
	d.loop = uv_default_loop();
	d.started = gw_wall_now();
	signal(SIGPIPE, SIG_IGN);
	/* handles main.c owns: set up first, so one close_all() closes them
	 * on every path */
	uv_signal_init(d.loop, &d.sig_term);
	uv_signal_init(d.loop, &d.sig_int);
	uv_signal_init(d.loop, &d.sig_hup);
	d.sig_term.data = d.sig_int.data = d.sig_hup.data = &d;
	uv_timer_init(d.loop, &d.tick_timer);
	uv_timer_init(d.loop, &d.watchdog_timer);
	uv_timer_init(d.loop, &d.grace_timer);
	d.tick_timer.data = d.grace_timer.data = &d;
	/* the signals first: a SIGTERM while the listeners come up (the socket
	 * already there) stops the daemon cleanly once the loop runs, instead
	 * of killing it by the default action with the socket file left */
	uv_signal_start(&d.sig_term, on_signal, SIGTERM);
	uv_signal_start(&d.sig_int, on_signal, SIGINT);
	uv_signal_start(&d.sig_hup, on_signal, SIGHUP);
	int rc = 1;
	if (start_parts(&d, err, sizeof(err)) < 0) {
		gw_log_crit("%s", err);
		close_all(&d);
	} else {
		if (cfg->tick_ms)
			uv_timer_start(&d.tick_timer, on_tick, cfg->tick_ms, cfg->tick_ms);
		uint64_t watchdog_usec = gw_notify_watchdog_usec();
		if (watchdog_usec) {
			uint64_t ms = watchdog_usec / 2000;
			uv_timer_start(&d.watchdog_timer, on_watchdog, ms ? ms : 1, ms ? ms : 1);
		}
		gw_notify("READY=1");
		gw_log_info("ready");
		uv_run(d.loop, UV_RUN_DEFAULT);   /* until on_drain's close_all() */
		rc = 0;
	}
	uv_run(d.loop, UV_RUN_DEFAULT);   /* the close callbacks */
	free_all(&d);   /* the store among them: it commits everything queued */
	if (d.close_rc < 0)
		rc = 1;
	if (uv_loop_close(d.loop) != 0) {
		/* a handle some owner did not close: a bug, made visible */
		gw_log_err("exit with libuv handles still open");
		rc = 1;
	}
	gw_log_peer_flush(true);
	gw_log_info("stopped");
	close(lock_fd);
	return rc;
}

int main(int argc, char **argv)
{
	struct gw_args a;
	gw_store_lib_init();   /* before any connection is opened */
	int rc = gw_args_parse(argc, argv, &a);
	if (rc >= 0)
		return rc;
	rc = a.fleet_view ? gw_fleet_view_main(&a) : run(&a);
	gw_args_free(&a);
	return rc;
}
