/*
 * Unit tests of the daemon's parts, linked from the libraries gradwatchd
 * itself is built from (daemon/meson.build: gwcore, gwd):
 *
 *   config   defaults and the XDG/systemd paths, every key's type and range
 *            error naming the file and the key, unknown keys, the
 *            loopback/auth rule, listen addresses, --check-config's JSON
 *            read back as a file giving the same configuration;
 *   http     percent-decoding and query parameters with hostile input
 *            (truncated and bad escapes, encoded NUL, overflow);
 *   metrics  label escaping (backslash, quote, newline; UTF-8 untouched);
 *   names    the run-name rule (lib/wire.c) and the log's escaping of
 *            control characters (lib/log.c), read back from a real stderr;
 *            the level changed (as SIGHUP does) while threads log.
 *
 * Configuration files are real files in a temporary directory.
 */
#include "gwcheck.h"

#include "config.h"
#include "http.h"
#include "http_url.h"
#include "log.h"
#include "metrics.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static void make_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gw-test-daemon-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Write text to DIR/name; returns the path (static buffer). */
static const char *write_file(const char *name, const char *text)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

/* Load text as a configuration over the defaults: the return code, with
 * the message in err. */
static int load(const char *text, char *err, size_t errlen)
{
	struct gw_cfg c;
	ck_assert_int_eq(gw_cfg_defaults(&c), 0);
	err[0] = '\0';
	int rc = gw_cfg_load(&c, write_file("c.json", text), err, errlen);
	if (rc == 0)
		rc = gw_cfg_validate(&c, err, errlen);
	gw_cfg_free(&c);
	return rc;
}

/* ---- config ------------------------------------------------------------------------ */

static void set_env(const char *k, const char *v)
{
	if (v)
		setenv(k, v, 1);
	else
		unsetenv(k);
}

START_TEST(defaults_follow_xdg_outside_systemd)
{
	struct gw_cfg c;
	set_env("STATE_DIRECTORY", NULL);
	set_env("RUNTIME_DIRECTORY", NULL);
	set_env("XDG_STATE_HOME", "/x/state");
	set_env("XDG_RUNTIME_DIR", "/x/run");
	ck_assert_int_eq(gw_cfg_defaults(&c), 0);
	ck_assert_str_eq(c.state_dir, "/x/state/gradwatch");
	ck_assert_str_eq(c.db_path, "/x/state/gradwatch/gradwatch.db");
	ck_assert_str_eq(c.socket_path, "/x/run/gradwatch/gradwatch.sock");
	ck_assert(c.tcp.enabled && !strcmp(c.tcp.host, "127.0.0.1") && c.tcp.port == GW_DEFAULT_PORT);
	ck_assert_int_eq(c.http.port, GW_DEFAULT_HTTP_PORT);
	ck_assert_uint_eq(c.max_line, 65536);
	gw_cfg_free(&c);

	/* no runtime directory: beside the database; a relative XDG path is
	 * not used (the spec wants absolute ones): HOME's default */
	set_env("XDG_RUNTIME_DIR", NULL);
	set_env("XDG_STATE_HOME", "relative");
	set_env("HOME", "/home/u");
	ck_assert_int_eq(gw_cfg_defaults(&c), 0);
	ck_assert_str_eq(c.db_path, "/home/u/.local/state/gradwatch/gradwatch.db");
	ck_assert_str_eq(c.socket_path, "/home/u/.local/state/gradwatch/gradwatch.sock");
	gw_cfg_free(&c);

	/* no HOME either: the working directory */
	set_env("XDG_STATE_HOME", NULL);
	set_env("HOME", NULL);
	ck_assert_int_eq(gw_cfg_defaults(&c), 0);
	ck_assert_str_eq(c.db_path, "gradwatch.db");
	ck_assert_str_eq(c.socket_path, "gradwatch.sock");
	gw_cfg_free(&c);

	/* systemd: its directories, the first of several */
	set_env("STATE_DIRECTORY", "/var/lib/gradwatch:/var/lib/other");
	set_env("RUNTIME_DIRECTORY", "/run/gradwatch");
	set_env("XDG_RUNTIME_DIR", "/x/run");
	ck_assert_int_eq(gw_cfg_defaults(&c), 0);
	ck_assert_str_eq(c.db_path, "/var/lib/gradwatch/gradwatch.db");
	ck_assert_str_eq(c.socket_path, "/run/gradwatch/gradwatch.sock");
	gw_cfg_free(&c);
	set_env("STATE_DIRECTORY", NULL);
	set_env("RUNTIME_DIRECTORY", NULL);
	set_env("XDG_RUNTIME_DIR", NULL);
}
END_TEST

START_TEST(make_dirs_creates_only_the_defaults_0700)
{
	make_tmp();
	char state[300], run[300], path[400];
	snprintf(state, sizeof(state), "%s/state", tmpdir);
	snprintf(run, sizeof(run), "%s/run", tmpdir);
	ck_assert_int_eq(mkdir(run, 0700), 0);
	set_env("STATE_DIRECTORY", NULL);
	set_env("RUNTIME_DIRECTORY", NULL);
	set_env("XDG_STATE_HOME", state);
	set_env("XDG_RUNTIME_DIR", run);
	struct gw_cfg c;
	char err[256];
	ck_assert_int_eq(gw_cfg_defaults(&c), 0);
	ck_assert_int_eq(gw_cfg_make_dirs(&c, err, sizeof(err)), 0);
	struct stat st;
	snprintf(path, sizeof(path), "%s/gradwatch", state);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(stat(state, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/gradwatch", run);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	/* a database given by hand: its directory is not made up */
	snprintf(path, sizeof(path), "%s/typo/x.db", tmpdir);
	ck_assert_int_eq(gw_cfg_set_str(&c.db_path, path), 0);
	ck_assert_int_eq(gw_cfg_make_dirs(&c, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/typo", tmpdir);
	ck_assert_int_ne(stat(path, &st), 0);
	gw_cfg_free(&c);
	set_env("XDG_STATE_HOME", NULL);
	set_env("XDG_RUNTIME_DIR", NULL);
	rm_tmp();
}
END_TEST

START_TEST(every_key_type_and_range)
{
	make_tmp();
	char err[512];
	static const struct {
		const char *text, *want;
	} bad[] = {
		{"[1]", "must be a JSON object"},
		{"{\"state_dir\": 5}", "\"state_dir\" must be a string"},
		{"{\"database\": true}", "\"database\" must be a string"},
		{"{\"socket\": 3}", "\"socket\" must be a string"},
		{"{\"socket_mode\": \"0999\"}", "socket_mode must be an octal mode"},
		{"{\"tcp\": 7470}", "\"tcp\" must be \"host:port\" or false"},
		{"{\"udp\": \"host:99999\"}", "port must be 0..65535"},
		{"{\"http\": \"example.com:80\"}", "is not a numeric IPv4 or IPv6 address"},
		{"{\"allow_remote\": \"yes\"}", "allow_remote must be true or false"},
		{"{\"public_url\": \"ftp://x\"}", "public_url"},
		{"{\"log_level\": \"loud\"}", "log_level \"loud\" is not one of"},
		{"{\"kernels\": 1}", "\"kernels\" must be a string"},
		{"{\"tick_ms\": 5}", "\"tick_ms\" must be an integer from 10 to 60000"},
		{"{\"tick_ms\": 1.5}", "\"tick_ms\" must be an integer"},
		{"{\"limits\": 1}", "limits must be an object"},
		{"{\"limits\": {\"max_line_bytes\": 10}}", "\"limits.max_line_bytes\" must be an integer from 256"},
		{"{\"limits\": {\"max_body_bytes\": -1}}", "\"limits.max_body_bytes\" must be an integer"},
		{"{\"limits\": {\"max_connections\": 0}}", "\"limits.max_connections\" must be an integer from 1"},
		{"{\"limits\": {\"max_runs\": \"9\"}}", "\"limits.max_runs\" must be an integer"},
		{"{\"limits\": {\"http_header_timeout_ms\": 0}}", "\"limits.http_header_timeout_ms\""},
		{"{\"limits\": {\"http_idle_timeout_ms\": 99}}", "\"limits.http_idle_timeout_ms\""},
		{"{\"limits\": {\"http_body_timeout_ms\": 1e12}}", "\"limits.http_body_timeout_ms\""},
		{"{\"limits\": {\"http_reserved_connections\": 10001}}", "\"limits.http_reserved_connections\""},
		{"{\"limits\": {\"stream_idle_timeout_ms\": 999}}", "\"limits.stream_idle_timeout_ms\""},
		{"{\"limits\": {\"stream_evict_idle_ms\": 0}}", "\"limits.stream_evict_idle_ms\""},
		{"{\"limits\": {\"idempotency_window_s\": 59}}", "\"limits.idempotency_window_s\""},
		{"{\"limits\": {\"idempotency_max_keys\": 99}}", "\"limits.idempotency_max_keys\""},
		{"{\"limits\": {\"max_runs\": 0}}", "\"limits.max_runs\" must be an integer from 1"},
		{"{\"limits\": {\"run_evict_idle_s\": 0}}", "\"limits.run_evict_idle_s\""},
		{"{\"limits\": {\"max_line_bytez\": 5}}", "unknown key \"limits.max_line_bytez\""},
		{"{\"storage\": {\"commit_interval_ms\": 0}}", "\"storage.commit_interval_ms\""},
		{"{\"storage\": {\"commit_max_records\": 0}}", "\"storage.commit_max_records\""},
		{"{\"storage\": {\"max_pending_bytes\": 1}}", "\"storage.max_pending_bytes\""},
		{"{\"storage\": {\"synchronous\": \"off\"}}", "storage.synchronous must be \"full\" or \"normal\""},
		{"{\"storage\": {\"wal\": 1}}", "unknown key \"storage.wal\""},
		{"{\"aliases\": {\"speed\": [\"x\"]}}", "\"speed\" is not a role"},
		{"{\"aliases\": {\"loss\": \"x\"}}", "aliases.loss must be an array"},
		{"{\"aliases\": {\"loss\": [1]}}", "aliases.loss[0] must be a string"},
		{"{\"aliases\": {\"grad_norm\": [\"x\", \"\"]}}", "aliases.grad_norm[1] is empty"},
		{"{\"aliases\": {\"loss\": [\"lr\"]}}", "already an alias of another role"},
		{"{\"thresholds\": {\"no_such\": 1}}", "unknown threshold \"thresholds.no_such\""},
		{"{\"thresholds\": {\"gap_min_seconds\": \"1\"}}", "\"thresholds.gap_min_seconds\" must be a number"},
		{"{\"runs\": {}}", "\"runs\" must be an array"},
		{"{\"runs\": [{\"thresholds\": {}}]}", "runs[0].match (a run-name glob) is required"},
		{"{\"runs\": [{\"match\": \"a\", \"x\": 1}]}", "unknown key \"runs[0].x\""},
		{"{\"detectors\": {\"disabled\": [\"nope\"]}}", "no detector named \"nope\""},
		{"{\"detectors\": {\"enabled\": []}}", "unknown key \"detectors.enabled\""},
		{"{\"sinks\": {}}", "sinks must be an array"},
		{"{\"follow\": \"x\"}", "follow must be an array"},
		{"{\"nosuch\": 1}", "unknown key \"nosuch\""},
		{"{\"tcp\": \"0.0.0.0:1\"}", "not a loopback address; set \"allow_remote\""},
		{"{\"allow_remote\": true, \"http\": \"0.0.0.0:1\"}", "configure \"auth\""},
		{"{\"tcp\": \"127.0.0.1:1\",", "c.json:1:"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = load(bad[i].text, err, sizeof(err));
		ck_assert_msg(rc == -EINVAL, "%s: rc %d (%s)", bad[i].text, rc, err);
		ck_assert_msg(strstr(err, bad[i].want), "%s: \"%s\" lacks \"%s\"", bad[i].text, err, bad[i].want);
		ck_assert_msg(strstr(err, "c.json") || strstr(err, "listens on"), "%s: no file in \"%s\"",
		              bad[i].text, err);
	}
	/* a file that cannot be opened: its name and why, no "-1:-1" position */
	struct gw_cfg nc;
	ck_assert_int_eq(gw_cfg_defaults(&nc), 0);
	ck_assert_int_eq(gw_cfg_load(&nc, "/nonexistent/gw.json", err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "/nonexistent/gw.json") && strstr(err, "No such file") &&
	              !strstr(err, "-1"), "%s", err);
	gw_cfg_free(&nc);
	/* the edges of a range are accepted */
	ck_assert_int_eq(load("{\"tick_ms\": 10, \"limits\": {\"max_line_bytes\": 256, "
	                      "\"max_runs\": 1, \"idempotency_window_s\": 2592000}}", err, sizeof(err)), 0);
	/* loopback in both families is fine without allow_remote */
	ck_assert_int_eq(load("{\"tcp\": \"127.0.0.2:1\", \"http\": \"[::1]:7471\", \"udp\": false}",
	                      err, sizeof(err)), 0);
	rm_tmp();
}
END_TEST

START_TEST(listen_addresses)
{
	struct gw_listen l;
	char err[256];
	ck_assert_int_eq(gw_cfg_parse_listen("7000", &l, err, sizeof(err)), 0);
	ck_assert(l.enabled && !strcmp(l.host, "127.0.0.1") && l.port == 7000);
	ck_assert_int_eq(gw_cfg_parse_listen("[::1]:80", &l, err, sizeof(err)), 0);
	ck_assert(!strcmp(l.host, "::1") && l.port == 80);
	ck_assert_int_eq(gw_cfg_parse_listen("localhost:1", &l, err, sizeof(err)), 0);
	ck_assert_str_eq(l.host, "127.0.0.1");
	ck_assert_int_eq(gw_cfg_parse_listen("off", &l, err, sizeof(err)), 0);
	ck_assert(!l.enabled);
	static const char *const bad[] = {"[::1]80", "[::1", "1.2.3.4:", "1.2.3.4:-1", "1.2.3.4:65536",
	                                  "host:80", "1.2.3.4:80x",
	                                  "0123456789012345678901234567890123456789012345678901234567890123456789:1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(gw_cfg_parse_listen(bad[i], &l, err, sizeof(err)) == -EINVAL, "%s", bad[i]);
}
END_TEST

START_TEST(check_config_json_round_trips)
{
	make_tmp();
	char err[512];
	struct gw_cfg a, b;
	ck_assert_int_eq(gw_cfg_defaults(&a), 0);
	char text[1024];
	snprintf(text, sizeof(text),
	         "{\"state_dir\": \"%s\", \"database\": \"x.db\", \"udp\": false, \"socket\": false,"
	         " \"limits\": {\"max_runs\": 5, \"run_evict_idle_s\": 77}, \"thresholds\": {\"gap_min_seconds\": 120},"
	         " \"runs\": [{\"match\": \"big-*\", \"thresholds\": {\"gap_min_seconds\": 30}}],"
	         " \"detectors\": {\"disabled\": [\"stall\"]}, \"aliases\": {\"loss\": [\"my_loss\"]},"
	         " \"storage\": {\"synchronous\": \"normal\"}, \"log_level\": \"debug\"}", tmpdir);
	ck_assert_int_eq(gw_cfg_load(&a, write_file("a.json", text), err, sizeof(err)), 0);
	json_t *ja = gw_cfg_to_json(&a);
	ck_assert_ptr_nonnull(ja);
	ck_assert_int_eq(json_dump_file(ja, write_file("b.json", ""), JSON_REAL_PRECISION(17)), 0);
	ck_assert_int_eq(gw_cfg_defaults(&b), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/b.json", tmpdir);
	ck_assert_msg(gw_cfg_load(&b, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(a.db_path, b.db_path);
	ck_assert_ptr_null(b.socket_path);
	ck_assert(!b.udp.enabled && b.tcp.enabled);
	ck_assert_uint_eq(b.max_runs, 5);
	ck_assert_uint_eq(b.run_evict_idle_s, 77);
	ck_assert(!b.sync_full);
	ck_assert_int_eq(b.log_level, GW_LOG_DEBUG);
	ck_assert_uint_eq(b.engine.disabled, a.engine.disabled);
	ck_assert_mem_eq(&b.engine.th, &a.engine.th, sizeof(a.engine.th));
	ck_assert_uint_eq(b.n_overrides, 1);
	ck_assert_str_eq(b.overrides[0].glob, "big-*");
	ck_assert_mem_eq(&b.overrides[0].th, &a.overrides[0].th, sizeof(a.overrides[0].th));
	int prio = -1;
	ck_assert_int_eq(gw_alias_lookup(b.aliases, "my_loss", 7, &prio), GW_ROLE_LOSS);
	json_t *jb = gw_cfg_to_json(&b);
	ck_assert(json_equal(ja, jb));
	json_decref(ja);
	json_decref(jb);
	gw_cfg_free(&a);
	gw_cfg_free(&b);
	rm_tmp();
}
END_TEST

/* ---- http --------------------------------------------------------------------------- */

START_TEST(percent_decoding_hostile)
{
	char out[16];
	ck_assert_int_eq(gw_http_pct_decode("a%2Fb+c", 7, out, sizeof(out), true), 5);
	ck_assert_str_eq(out, "a/b c");
	/* in a path '+' is itself: /v1/runs/lr+warmup is the run "lr+warmup" */
	ck_assert_int_eq(gw_http_pct_decode("lr+warmup%2B1", 13, out, sizeof(out), false), 11);
	ck_assert_str_eq(out, "lr+warmup+1");
	ck_assert_int_eq(gw_http_pct_decode("%e2%9C%93", 9, out, sizeof(out), true), 3);
	ck_assert_str_eq(out, "\xe2\x9c\x93");
	ck_assert_int_eq(gw_http_pct_decode("", 0, out, sizeof(out), true), 0);
	ck_assert_str_eq(out, "");
	static const char *const bad[] = {"%", "%4", "a%", "%zz", "%4g", "%00", "x%00y", "%%41"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(gw_http_pct_decode(bad[i], strlen(bad[i]), out, sizeof(out), true) == -1, "%s", bad[i]);
	/* the length bounds the input: an escape cut by it is truncated */
	ck_assert_int_eq(gw_http_pct_decode("%41", 2, out, sizeof(out), true), -1);
	/* exactly fits (15 bytes and the NUL), one more does not */
	ck_assert_int_eq(gw_http_pct_decode("aaaaaaaaaaaaaaa", 15, out, sizeof(out), true), 15);
	ck_assert_int_eq(gw_http_pct_decode("aaaaaaaaaaaaaaaa", 16, out, sizeof(out), true), -1);
	ck_assert_int_eq(gw_http_pct_decode("%41%41%41%41%41%41%41%41%41%41%41%41%41%41%41%41", 48, out,
	                                     sizeof(out), true), -1);
	ck_assert_int_eq(gw_http_pct_decode("a", 1, out, 1, true), -1);
}
END_TEST

START_TEST(query_parameters)
{
	char out[32];
	const char *q = "run=a%20b&from=10&to=&flag&run2=x&=v&max_points=5";
	size_t n = strlen(q);
	ck_assert_int_eq(gw_http_query_param(q, n, "run", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "a b");
	ck_assert_int_eq(gw_http_query_param(q, n, "from", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "10");
	ck_assert_int_eq(gw_http_query_param(q, n, "to", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(gw_http_query_param(q, n, "max_points", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "5");
	/* a prefix of a name, a name without '=', absent: not present */
	ck_assert_int_eq(gw_http_query_param(q, n, "ru", out, sizeof(out)), 0);
	ck_assert_int_eq(gw_http_query_param(q, n, "flag", out, sizeof(out)), 0);
	ck_assert_int_eq(gw_http_query_param(q, n, "cursor", out, sizeof(out)), 0);
	ck_assert_int_eq(gw_http_query_param("", 0, "run", out, sizeof(out)), 0);
	ck_assert_int_eq(gw_http_query_param("&&&", 3, "run", out, sizeof(out)), 0);
	/* the first of repeated parameters */
	ck_assert_int_eq(gw_http_query_param("a=1&a=2", 7, "a", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "1");
	/* hostile values */
	ck_assert_int_eq(gw_http_query_param("run=%00", 7, "run", out, sizeof(out)), -1);
	ck_assert_int_eq(gw_http_query_param("run=%", 5, "run", out, sizeof(out)), -1);
	ck_assert_int_eq(gw_http_query_param("run=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 46, "run", out,
	                                     sizeof(out)), -1);
	/* qlen bounds the query: bytes past it are not read */
	ck_assert_int_eq(gw_http_query_param("a=1&b=2", 3, "b", out, sizeof(out)), 0);
	ck_assert_int_eq(gw_http_query_param("a=12", 3, "a", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "1");
}
END_TEST

/* ---- metrics ------------------------------------------------------------------------ */

static char *label(const char *s)
{
	static char buf[256];
	memset(buf, 0, sizeof(buf));
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	ck_assert_ptr_nonnull(f);
	gw_metrics_label(f, s);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

START_TEST(metric_label_escaping)
{
	ck_assert_str_eq(label("plain-run_1"), "plain-run_1");
	ck_assert_str_eq(label("a\\b"), "a\\\\b");
	ck_assert_str_eq(label("say \"hi\""), "say \\\"hi\\\"");
	ck_assert_str_eq(label("two\nlines"), "two\\nlines");
	ck_assert_str_eq(label("\\\"\n"), "\\\\\\\"\\n");
	/* UTF-8 passes as it is (the format is UTF-8) */
	ck_assert_str_eq(label("run-\xc3\xa9\xe2\x9c\x93"), "run-\xc3\xa9\xe2\x9c\x93");
	ck_assert_str_eq(label(""), "");
}
END_TEST

/* ---- run names, log escaping --------------------------------------------------------- */

START_TEST(run_name_rule)
{
	char why[128];
	ck_assert_int_eq(gw_wire_check_run("run-1", 5, why, sizeof(why)), 0);
	ck_assert_int_eq(gw_wire_check_run("r\xc3\xa9sum\xc3\xa9 / 2", 12, why, sizeof(why)), 0);
	ck_assert_int_eq(gw_wire_check_run("", 0, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(gw_wire_check_run("a\nb", 3, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(gw_wire_check_run("a\x7f", 2, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(gw_wire_check_run("a\xc2\x85", 3, why, sizeof(why)), -EINVAL);   /* C1 NEL */
	ck_assert_int_eq(gw_wire_check_run("a\xff", 2, why, sizeof(why)), -EINVAL);       /* not UTF-8 */
	ck_assert_int_eq(gw_wire_check_run("a\0b", 3, why, sizeof(why)), -EINVAL);
	char long_name[GW_WIRE_RUN_MAX + 2];
	memset(long_name, 'x', sizeof(long_name));
	ck_assert_int_eq(gw_wire_check_run(long_name, GW_WIRE_RUN_MAX, why, sizeof(why)), 0);
	ck_assert_int_eq(gw_wire_check_run(long_name, GW_WIRE_RUN_MAX + 1, why, sizeof(why)), -EINVAL);
	ck_assert(why[0] != '\0');
}
END_TEST

/* stderr into a file of the temporary directory (rewound and read by the
 * caller, who closes it), the old stderr kept in *saved for stderr_back. */
static FILE *stderr_to_tmp_file(int *saved)
{
	make_tmp();
	char path[400];
	snprintf(path, sizeof(path), "%s/log", tmpdir);
	fflush(stderr);
	*saved = dup(STDERR_FILENO);
	FILE *f = fopen(path, "w+");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(dup2(fileno(f), STDERR_FILENO), 0);
	return f;
}

static void stderr_back(int saved)
{
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
}

START_TEST(log_escapes_control_characters)
{
	int saved;
	FILE *f = stderr_to_tmp_file(&saved);
	gw_log_init(GW_LOG_INFO, 0);
	gw_log_warn("run %s: bad", "evil\nfake line\x1b[31m\r\t\x7f\xc3\xa9");
	gw_log_debug("not shown at info");
	/* bidi override, line separator, zero width, C1, invalid byte, a tag */
	gw_log_warn("name %s", "a\xe2\x80\xae" "b\xe2\x80\xa8" "c\xe2\x80\x8b" "d\xc2\x85" "e\xff" "f\xf3\xa0\x80\x81");
	stderr_back(saved);
	char buf[512] = "";
	rewind(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	/* one line, every control character as \xNN, UTF-8 kept */
	ck_assert_ptr_nonnull(strstr(buf, "run evil\\x0afake line\\x1b[31m\\x0d\\x09\\x7f\xc3\xa9: bad"));
	ck_assert_ptr_nonnull(strstr(buf, "name a\\u202eb\\u2028c\\u200bd\\u0085e\\xfff\\ue0001\n"));
	size_t lines = 0;   /* two messages, two lines */
	for (size_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	ck_assert_uint_eq(lines, 2);
	ck_assert_ptr_eq(strrchr(buf, '\n'), buf + n - 1);
	ck_assert_ptr_null(strstr(buf, "not shown"));
	rm_tmp();
}
END_TEST

/* A reload changes the level on the loop while the writer and checkpoint
 * threads log (lib/log.c keeps it atomic; a ThreadSanitizer build of this
 * test reports a race otherwise).  Every line stays whole, and the level
 * set last is the one that holds. */
#define LOG_RACE_LINES 2000

static void *log_race_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < LOG_RACE_LINES; i++) {
		gw_log_debug("tick %d", i);
		gw_log_warn("warn %d", i);
	}
	return NULL;
}

START_TEST(log_level_changes_while_threads_log)
{
	int saved;
	FILE *f = stderr_to_tmp_file(&saved);
	gw_log_init(GW_LOG_DEBUG, 0);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, log_race_writer, NULL), 0);
	for (int i = 0; i < LOG_RACE_LINES; i++)
		gw_log_init(i % 2 ? GW_LOG_DEBUG : GW_LOG_INFO, 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	gw_log_init(GW_LOG_INFO, 0);
	ck_assert_int_eq(gw_log_level(), GW_LOG_INFO);
	gw_log_debug("after the last change");
	stderr_back(saved);
	rewind(f);
	char line[256];
	int warns = 0;
	while (fgets(line, sizeof(line), f)) {
		ck_assert_msg(strlen(line) > 1 && line[strlen(line) - 1] == '\n', "a cut line: %s", line);
		ck_assert_msg(strstr(line, " debug tick ") || strstr(line, " warn warn "),
		              "a line neither thread wrote: %s", line);
		ck_assert_ptr_null(strstr(line, "after the last change"));
		warns += strstr(line, " warn warn ") != NULL;
	}
	fclose(f);
	ck_assert_int_eq(warns, 2 * LOG_RACE_LINES);
	rm_tmp();
}
END_TEST

START_TEST(counts_with_thousands_separators)
{
	char b[32];
	ck_assert_str_eq(gw_fmt_int(b, sizeof(b), 0), "0");
	ck_assert_str_eq(gw_fmt_int(b, sizeof(b), 999), "999");
	ck_assert_str_eq(gw_fmt_int(b, sizeof(b), 65000), "65,000");
	ck_assert_str_eq(gw_fmt_int(b, sizeof(b), -8500), "-8,500");
	ck_assert_str_eq(gw_fmt_int(b, sizeof(b), 1234567), "1,234,567");
	ck_assert_str_eq(gw_fmt_int(b, sizeof(b), INT64_MIN), "-9,223,372,036,854,775,808");
	ck_assert_str_eq(gw_fmt_int(b, sizeof(b), INT64_MAX), "9,223,372,036,854,775,807");
	/* cut to fit, always terminated, never a separator last */
	ck_assert_str_eq(gw_fmt_int(b, 5, 1234567), "1,23");
	ck_assert_str_eq(gw_fmt_int(b, 2, 1234567), "1");
	ck_assert_str_eq(gw_fmt_int(b, 1, 1234567), "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("daemon");
	TCase *cfg = tcase_create("config");
	tcase_add_test(cfg, defaults_follow_xdg_outside_systemd);
	tcase_add_test(cfg, make_dirs_creates_only_the_defaults_0700);
	tcase_add_test(cfg, every_key_type_and_range);
	tcase_add_test(cfg, listen_addresses);
	tcase_add_test(cfg, check_config_json_round_trips);
	suite_add_tcase(s, cfg);
	TCase *http = tcase_create("http");
	tcase_add_test(http, percent_decoding_hostile);
	tcase_add_test(http, query_parameters);
	suite_add_tcase(s, http);
	TCase *met = tcase_create("metrics");
	tcase_add_test(met, metric_label_escaping);
	suite_add_tcase(s, met);
	TCase *names = tcase_create("names");
	tcase_add_test(names, run_name_rule);
	tcase_add_test(names, log_escapes_control_characters);
	tcase_add_test(names, log_level_changes_while_threads_log);
	tcase_add_test(names, counts_with_thousands_separators);
	suite_add_tcase(s, names);
	return gw_check_run(s);
}
