/*
 * gradwatchd: the daemon.
 *
 * Start-up, in order: configuration (defaults, file, flags), logging, kernel
 * choice, storage (open, migrate, writer thread), the detector engine seeded
 * with where every known run stood, listeners (Unix, TCP, UDP, HTTP),
 * signals and timers; then READY=1 to systemd and the loop runs.  SIGTERM or
 * SIGINT: stop accepting, give open connections a short grace period to
 * deliver what they already sent, close them (a partial last line is
 * counted as truncated), commit everything queued, STOPPING=1, exit 0.
 * SIGHUP reloads thresholds, per-run overrides and disabled detectors from
 * the configuration file.  One cleanup path unwinds in reverse: every part
 * that owns libuv handles has _start, _stop (close its handles: close_all)
 * and _free (after the loop ran the close callbacks), docs/architecture.md
 * "Starting and stopping"; uv_loop_close() must then find nothing open.
 * (Some 650 lines: start-up is one ordered sequence and its unwinding, kept
 * in one file so that the order of the two can be read side by side.)
 */
#include "api.h"
#include "auth.h"
#include "cli.h"
#include "daemon.h"
#include "follow.h"
#include "http.h"
#include "metrics.h"
#include "retention.h"
#include "runs.h"
#include "web.h"

#include "kern.h"
#include "log.h"
#include "outbox_db.h"
#include "reader.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHUTDOWN_GRACE_MS 300

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gradwatchd [options]\n"
	        "\n"
	        "The gradwatch daemon: ingests training telemetry (NDJSON over a Unix socket,\n"
	        "TCP, UDP and HTTP, or followed log files), stores it in SQLite, runs the\n"
	        "detectors and delivers alerts.\n"
	        "\n"
	        "  -c, --config FILE        JSON configuration (docs/configuration.md)\n"
	        "      --state-dir DIR      where the database lives (default $STATE_DIRECTORY,\n"
	        "                           else $XDG_STATE_HOME/gradwatch, ~/.local/state/gradwatch)\n"
	        "      --db PATH            the SQLite database (default STATE_DIR/gradwatch.db)\n"
	        "      --socket PATH|off    Unix socket for NDJSON (default $RUNTIME_DIRECTORY/\n"
	        "                           gradwatch.sock, else $XDG_RUNTIME_DIR/gradwatch/gradwatch.sock,\n"
	        "                           else STATE_DIR/gradwatch.sock)\n"
	        "      --tcp ADDR:PORT|off  NDJSON over TCP (default 127.0.0.1:%d)\n"
	        "      --udp ADDR:PORT|off  NDJSON datagrams (default 127.0.0.1:%d)\n"
	        "      --http ADDR:PORT|off HTTP API and web view (default 127.0.0.1:%d)\n"
	        "      --log-level LEVEL    crit, err, warn, info, debug (default info)\n"
	        "      --kernels NAME       scalar, sse2, avx2, neon (default: $GRADWATCH_KERNELS,\n"
	        "                           else the best the CPU has)\n"
	        "      --follow FILE        tail the log a job writes to FILE, in any format that\n"
	        "                           can be followed (gradwatch formats; sniffed); repeatable\n"
	        "      --run NAME           run name of points without one in the --follow FILE\n"
	        "                           before it (default: from the file name, as replay)\n"
	        "      --input-format NAME  the format of the --follow FILE before it (default:\n"
	        "                           sniffed)\n"
	        "      --check-config       check the configuration; print the effective one as\n"
	        "                           JSON in the file's schema on stdout; exit\n"
	        "  -V, --version            print version, kernel variant, detectors, formats\n"
	        "  -h, --help               print this\n"
	        "\n"
	        "exit status: 0 stopped cleanly; 1 a start-up or shutdown failure (bad\n"
	        "configuration, database, address in use); 2 a usage error\n",
	        GW_DEFAULT_PORT, GW_DEFAULT_PORT, GW_DEFAULT_HTTP_PORT);
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
	gw_follow_stop(d);
	gw_server_stop(d);
	gw_retention_stop(d);
	gw_http_stop(d->http);
	gw_ingest_stop(&d->ingest);
	uv_close((uv_handle_t *)&d->sig_term, NULL);
	uv_close((uv_handle_t *)&d->sig_int, NULL);
	uv_close((uv_handle_t *)&d->sig_hup, NULL);
	uv_close((uv_handle_t *)&d->tick_timer, NULL);
	uv_close((uv_handle_t *)&d->watchdog_timer, NULL);
	uv_close((uv_handle_t *)&d->grace_timer, NULL);
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
	gw_server_stop(d);
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
	 * deliver what they sent before we close them */
	gw_http_drain(d->http);
	gw_follow_stop(d);
	uv_timer_stop(&d->tick_timer);
	uv_timer_stop(&d->watchdog_timer);
	uv_timer_start(&d->grace_timer, on_grace_over, SHUTDOWN_GRACE_MS, 0);
}

/* The top-level keys of the configuration file whose value in `fresh`
 * differs from the file at start-up, but for those a reload applies, as
 * "a, b" in out (empty when none). */
static void restart_keys(const struct gw_daemon *d, const struct gw_cfg *fresh, char *out,
                         size_t outlen)
{
	static const char *const applied[] = {"thresholds", "runs", "detectors", "log_level", NULL};
	json_t *now = gw_cfg_to_json(fresh);
	const char *key;
	json_t *v;
	size_t len = 0;
	out[0] = '\0';
	json_t *both[2] = {d->file_cfg, now};
	for (int side = 0; side < 2 && d->file_cfg && now; side++) {
		json_object_foreach(both[side], key, v) {
			bool live = false;
			for (size_t i = 0; applied[i] && !live; i++)
				live = strcmp(key, applied[i]) == 0;
			json_t *other = json_object_get(both[!side], key);
			/* a key on both sides is compared once, from the first */
			if (live || (side == 1 && other) || (other && json_equal(v, other)))
				continue;
			int n = snprintf(out + len, outlen - len, "%s%s", len ? ", " : "", key);
			if (n < 0 || (size_t)n >= outlen - len)
				break;
			len += (size_t)n;
		}
	}
	json_decref(now);
}

static int reload(struct gw_daemon *d)
{
	if (!d->cfg->file) {
		gw_log_info("SIGHUP: no configuration file to reload");
		return 0;
	}
	struct gw_cfg fresh;
	char err[512];
	if (gw_cfg_defaults(&fresh) < 0)
		return -ENOMEM;
	int rc = gw_cfg_load(&fresh, d->cfg->file, err, sizeof(err));
	if (rc < 0) {
		gw_log_err("SIGHUP: keeping the old configuration: %s", err);
		gw_cfg_free(&fresh);
		return rc;
	}
	/* swap in what can change at run time */
	struct gw_th_override *ov = d->cfg->overrides;
	size_t nov = d->cfg->n_overrides;
	d->cfg->engine.th = fresh.engine.th;
	d->cfg->engine.disabled = fresh.engine.disabled;
	d->cfg->overrides = fresh.overrides;
	d->cfg->n_overrides = fresh.n_overrides;
	if (!d->log_level_flag)
		d->cfg->log_level = fresh.log_level;
	fresh.overrides = ov;
	fresh.n_overrides = nov;
	struct gw_engine_opts eo = d->cfg->engine;
	eo.overrides = d->cfg->overrides;
	eo.n_overrides = d->cfg->n_overrides;
	gw_engine_reconfigure(d->ingest.engine, &eo);
	gw_log_init(d->cfg->log_level, gw_log_stderr_is_journal());
	char later[512];
	restart_keys(d, &fresh, later, sizeof(later));
	gw_cfg_free(&fresh);
	gw_log_info("SIGHUP: reloaded thresholds, run overrides, detectors and log level from %s",
	            d->cfg->file);
	if (later[0])
		gw_log_warn("SIGHUP: %s changed in %s since the start and need a restart; "
		            "the daemon goes on with them as they were", later, d->cfg->file);
	return 0;
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct gw_daemon *d = s->data;
	if (signum == SIGHUP) {
		gw_notify("RELOADING=1");
		reload(d);
		gw_notify("READY=1");
		return;
	}
	begin_shutdown(d, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void on_tick(uv_timer_t *t)
{
	struct gw_daemon *d = t->data;
	gw_ingest_tick(&d->ingest, gw_wall_now());
	gw_log_peer_flush(false);
}

static void on_watchdog(uv_timer_t *t)
{
	gw_notify("WATCHDOG=1");
}

/* ---- main ------------------------------------------------------------------------------ */

enum {
	OPT_STATE_DIR = 1000, OPT_DB, OPT_SOCKET, OPT_TCP, OPT_UDP, OPT_HTTP, OPT_LOG,
	OPT_KERNELS, OPT_CHECK, OPT_FOLLOW, OPT_RUN, OPT_FORMAT,
};

/* --follow FILE [--run NAME] [--input-format NAME]: one more entry of the
 * config's "follow" array; --run and --input-format apply to the --follow
 * before them. */
static int add_follow(struct gw_cfg *cfg, int opt, const char *v)
{
	size_t n = json_array_size(cfg->follow);
	if (opt == OPT_FOLLOW)
		return json_array_append_new(cfg->follow, json_pack("{s:s}", "path", v)) ? -ENOMEM : 0;
	const char *key = opt == OPT_RUN ? "run" : "format";
	if (n == 0 || json_object_get(json_array_get(cfg->follow, n - 1), key)) {
		gw_cli_usage_error("gradwatchd", opt == OPT_RUN ? "--run NAME goes after the --follow FILE "
		                   "it applies to (once per --follow); got --run" : "--input-format NAME goes "
		                   "after the --follow FILE it applies to (once per --follow); got --input-format", v);
		return -EINVAL;
	}
	if (opt == OPT_FORMAT && !gw_reader_format_find(v))
		return gw_cli_bad_format("gradwatchd", v), -EINVAL;
	return json_object_set_new(json_array_get(cfg->follow, n - 1), key, json_string(v));
}

static int apply_listen(const char *flag, const char *v, struct gw_listen *l)
{
	char err[256], what[300];
	if (gw_cfg_parse_listen(v, l, err, sizeof(err)) < 0) {
		snprintf(what, sizeof(what), "%s: %s", flag, err);
		gw_cli_usage_error("gradwatchd", what, NULL);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"config", required_argument, NULL, 'c'},
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"db", required_argument, NULL, OPT_DB},
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"tcp", required_argument, NULL, OPT_TCP},
		{"udp", required_argument, NULL, OPT_UDP},
		{"http", required_argument, NULL, OPT_HTTP},
		{"log-level", required_argument, NULL, OPT_LOG},
		{"kernels", required_argument, NULL, OPT_KERNELS},
		{"check-config", no_argument, NULL, OPT_CHECK},
		{"follow", required_argument, NULL, OPT_FOLLOW},
		{"run", required_argument, NULL, OPT_RUN},
		{"input-format", required_argument, NULL, OPT_FORMAT},
		{"version", no_argument, NULL, 'V'},
		GW_CLI_OPT_HELP,
	};
	struct gw_cfg cfg;
	struct gw_daemon d;
	char err[512];
	int rc = 1;
	memset(&d, 0, sizeof(d));
	if (gw_cfg_defaults(&cfg) < 0) {
		fprintf(stderr, "gradwatchd: out of memory\n");
		return 1;
	}
	/* the file first, so flags override it wherever they stand */
	const char *config = NULL;
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":c:Vh", lo, NULL)) != -1) {
		if (ch == 'c') {
			config = optarg;
		} else if (ch == '?' || ch == ':') {
			rc = gw_cli_bad_option("gradwatchd", ch, argv);
			goto out_cfg;
		} else if (ch == 'h') {
			/* help without reading the file */
			usage(stdout);
			rc = 0;
			goto out_cfg;
		}
	}
	if (config && gw_cfg_load(&cfg, config, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		goto out_cfg;
	}
	/* the file alone, before flags: a SIGHUP says what changed in it that
	 * only a restart applies */
	if (config)
		d.file_cfg = gw_cfg_to_json(&cfg);
	bool check = false, version = false;
	const char *kernels = cfg.kernels;
	optind = 0;   /* 0: glibc starts afresh */
	rc = GW_EXIT_USAGE;    /* for the usage errors below */
	while ((ch = getopt_long(argc, argv, ":c:Vh", lo, NULL)) != -1) {
		switch (ch) {
		case 'c':
			break;
		case OPT_STATE_DIR:
			gw_cfg_set_str(&cfg.state_dir, optarg);
			free(cfg.db_path);
			if (asprintf(&cfg.db_path, "%s/gradwatch.db", optarg) < 0)
				cfg.db_path = NULL;
			break;
		case OPT_DB:
			gw_cfg_set_str(&cfg.db_path, optarg);
			break;
		case OPT_SOCKET:
			gw_cfg_set_str(&cfg.socket_path, strcmp(optarg, "off") ? optarg : NULL);
			break;
		case OPT_TCP:
			if (apply_listen("--tcp", optarg, &cfg.tcp) < 0)
				goto out_cfg;
			break;
		case OPT_UDP:
			if (apply_listen("--udp", optarg, &cfg.udp) < 0)
				goto out_cfg;
			break;
		case OPT_HTTP:
			if (apply_listen("--http", optarg, &cfg.http) < 0)
				goto out_cfg;
			break;
		case OPT_LOG:
			d.log_level_flag = true;
			if (gw_log_parse_level(optarg, &cfg.log_level) < 0) {
				gw_cli_usage_error("gradwatchd", "--log-level is crit, err, warn, info or debug, not",
				                   optarg);
				goto out_cfg;
			}
			break;
		case OPT_KERNELS:
			kernels = optarg;
			break;
		case OPT_CHECK:
			check = true;
			break;
		case OPT_FOLLOW:
		case OPT_RUN:
		case OPT_FORMAT:
			if (add_follow(&cfg, ch, optarg) < 0)
				goto out_cfg;
			break;
		case 'V':
			version = true;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out_cfg;
		default:
			gw_cli_bad_option("gradwatchd", ch, argv);
			goto out_cfg;
		}
	}
	if (optind < argc) {
		gw_cli_usage_error("gradwatchd", "takes no arguments; unexpected", argv[optind]);
		goto out_cfg;
	}
	rc = 1;
	if (gw_cfg_init_kernels(kernels, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		goto out_cfg;
	}
	if (version) {
		gw_cli_print_version(stdout, "gradwatchd");
		printf("memory per run: %zu bytes\n", gw_engine_bytes_per_run());
		rc = 0;
		goto out_cfg;
	}
	if (gw_cfg_validate(&cfg, err, sizeof(err)) < 0 ||
	    gw_follow_validate(cfg.follow, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		goto out_cfg;
	}
	if (gw_alerting_check(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "gradwatchd: %s\n", err);
		goto out_cfg;
	}
	char warn[512];
	if (check && gw_cfg_check_dirs(&cfg, err, sizeof(err), warn, sizeof(warn)) < 0) {
		/* a valid configuration this daemon cannot run with here */
		fprintf(stderr, "gradwatchd: %s\n", err);
		rc = 2;
		goto out_cfg;
	}
	if (check && warn[0])
		fprintf(stderr, "gradwatchd: warning: %s\n", warn);
	if (check) {
		/* the token files as the start reads them (it would refuse them) */
		struct gw_auth *auth = NULL;
		int arc = gw_auth_load(cfg.auth, &auth, err, sizeof(err));
		gw_auth_free(auth);
		if (arc < 0) {
			fprintf(stderr, "gradwatchd: %s\n", err);
			goto out_cfg;
		}
		/* stdout: only the configuration, in the file's schema */
		char *s = gw_cfg_dumps(&cfg);
		if (!s) {
			fprintf(stderr, "gradwatchd: out of memory\n");
			goto out_cfg;
		}
		printf("%s\n", s);
		free(s);
		if (fflush(stdout) != 0) {
			fprintf(stderr, "gradwatchd: cannot write the configuration: %s\n", strerror(errno));
			goto out_cfg;
		}
		fprintf(stderr, "configuration OK%s%s\n", cfg.file ? ": " : " (no file: defaults and flags)",
		        cfg.file ? cfg.file : "");
		rc = 0;
		goto out_cfg;
	}
	gw_log_init(cfg.log_level, gw_log_stderr_is_journal());
	gw_log_info("gradwatchd %s starting: kernels %s, database %s", GW_VERSION, gw_kern_name(),
	            cfg.db_path);

	if (gw_cfg_make_dirs(&cfg, err, sizeof(err)) < 0 ||
	    gw_cfg_check_dirs(&cfg, err, sizeof(err), warn, sizeof(warn)) < 0) {
		gw_log_crit("%s", err);
		goto out_cfg;
	}
	if (warn[0])
		gw_log_warn("%s", warn);
	int lock_fd = lock_instance(cfg.db_path, err, sizeof(err));
	if (lock_fd < 0) {
		gw_log_crit("%s", err);
		goto out_cfg;
	}
	d.cfg = &cfg;
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

	static const struct gw_store_schema *const schemas[] = {&gw_outbox_schema, &gw_idem_schema};
	struct gw_store_opts so = {
		.path = cfg.db_path,
		.sync_full = cfg.sync_full,
		.commit_interval_ms = cfg.commit_interval_ms,
		.commit_max_records = cfg.commit_max_records,
		.max_pending_bytes = cfg.max_pending_bytes,
		.schemas = schemas,
		.n_schemas = GW_ARRAY_SIZE(schemas),
	};
	if (gw_auth_load(cfg.auth, &d.auth, err, sizeof(err)) < 0) {
		gw_log_crit("%s", err);
		goto out;
	}
	struct gw_http_opts ho = {
		.loop = d.loop,
		.cfg = &cfg,
		.ingest = &d.ingest,
		.auth = d.auth,
	};
	/* the signals first: a SIGTERM while the listeners come up (the socket
	 * already there) stops the daemon cleanly once the loop runs, instead
	 * of killing it by the default action with the socket file left */
	uv_signal_start(&d.sig_term, on_signal, SIGTERM);
	uv_signal_start(&d.sig_int, on_signal, SIGINT);
	uv_signal_start(&d.sig_hup, on_signal, SIGHUP);
	if (gw_store_open(&so, &d.store, err, sizeof(err)) < 0 ||
	    gw_ingest_start(&d.ingest, &(struct gw_ingest_opts){.loop = d.loop, .cfg = &cfg, .store = d.store},
	                   err, sizeof(err)) < 0 ||
	    gw_idem_init(&d.idem, cfg.db_path, cfg.idempotency_window_s, cfg.idempotency_max_keys,
	                 err, sizeof(err)) < 0 ||
	    gw_http_start(&ho, &d.http, err, sizeof(err)) < 0 ||
	    gw_api_start(&d, err, sizeof(err)) < 0 || gw_metrics_start(&d, err, sizeof(err)) < 0 ||
	    gw_retention_start(&d, err, sizeof(err)) < 0 ||
	    gw_web_start(&d, err, sizeof(err)) < 0 ||
	    gw_alerting_start(&d, err, sizeof(err)) < 0 ||
	    gw_server_start(&d, err, sizeof(err)) < 0 || gw_follow_start(&d, err, sizeof(err)) < 0) {
		gw_log_crit("%s", err);
		goto out;
	}
	if (cfg.tick_ms)
		uv_timer_start(&d.tick_timer, on_tick, cfg.tick_ms, cfg.tick_ms);
	uint64_t watchdog_usec = gw_notify_watchdog_usec();
	if (watchdog_usec) {
		uint64_t ms = watchdog_usec / 2000;
		uv_timer_start(&d.watchdog_timer, on_watchdog, ms ? ms : 1, ms ? ms : 1);
	}

	gw_notify("READY=1");
	gw_log_info("ready");
	uv_run(d.loop, UV_RUN_DEFAULT);   /* until on_drain's close_all() */
	rc = 0;
out:
	if (rc != 0)
		close_all(&d);
	uv_run(d.loop, UV_RUN_DEFAULT);   /* the close callbacks */
	/* every handle is closed: free in the reverse order of the start */
	gw_follow_free(&d);
	gw_server_free(&d);
	gw_http_free(d.http);
	gw_idem_deinit(&d.idem);
	gw_ingest_free(&d.ingest);
	if (d.store) {
		/* everything ingested is queued; commit it before going */
		int src = gw_store_close(d.store);
		d.store = NULL;
		if (src < 0) {
			gw_log_err("the last commit failed: %s", strerror(-src));
			rc = 1;
		}
	}
	gw_auth_free(d.auth);
	if (uv_loop_close(d.loop) != 0) {
		/* a handle some owner did not close: a bug, made visible */
		gw_log_err("exit with libuv handles still open");
		rc = 1;
	}
	gw_log_peer_flush(true);
	gw_log_info("stopped");
	close(lock_fd);
out_cfg:
	json_decref(d.file_cfg);
	gw_cfg_free(&cfg);
	return rc;
}
