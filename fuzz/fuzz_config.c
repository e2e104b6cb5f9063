/*
 * Fuzz target: the configuration as gradwatchd reads it at start-up and on
 * SIGHUP.  Each input is the text of a configuration file, loaded over the
 * defaults with gw_cfg_load (from a memory file, /proc/self/fd/N, so the
 * real file path is taken), then checked as main() checks it:
 * gw_cfg_validate (which checks "auth"), the "sinks" array with
 * gw_sink_parse, the token files with gw_auth_load, and printed as
 * --check-config prints it.  What must hold (a broken invariant traps):
 *
 *   - no crash, no leak, no undefined behaviour (the sanitizers);
 *   - every failure comes with a message, and the message says where:
 *     a file error names the file, a sink error names sinks[i];
 *   - what loads is usable: limits at least their documented minimum.
 *
 * Token files named by relative paths are looked up in
 * $CREDENTIALS_DIRECTORY, which the target points at a directory of its
 * own with a good and a bad token file (ingest.tokens, read.tokens,
 * bad.tokens) for the seeds to name.  Seeds: fuzz/corpus/config/.
 *
 * fuzz-libs: -lcrypto -lpthread
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"
#include "fuzz.h"
#include "log.h"
#include "sink.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int mem_fd = -1;
static char mem_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = fuzz_tmpdir("config");
	fuzz_put_file("ingest.tokens", "# job tokens\n0123456789abcdef-ingest team-a-*\n"
	                               "fedcba9876543210-ingest\n");
	fuzz_put_file("read.tokens", "0123456789abcdef-reader\n");
	fuzz_put_file("bad.tokens", "short\n");
	fuzz_put_file("hook.url", "https://hooks.example.invalid/services/T/B/x\n");
	fuzz_put_file("hook.secret", "It's a Secret to Everybody\n");
	setenv("CREDENTIALS_DIRECTORY", dir, 1);
	setenv("GW_FUZZ_HOOK_URL", "http://127.0.0.1:9/hook", 1);
	setenv("STATE_DIRECTORY", dir, 1);
	setenv("RUNTIME_DIRECTORY", dir, 1);
	gw_log_init(GW_LOG_CRIT, false);
	mem_fd = memfd_create("gradwatch.json", 0);
	if (mem_fd < 0)
		fuzz_die("memfd_create");
	snprintf(mem_path, sizeof(mem_path), "/proc/self/fd/%d", mem_fd);
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	if (ftruncate(fd, 0) < 0)
		return -1;
	size_t off = 0;
	while (off < n) {
		ssize_t k = pwrite(fd, p + off, n - off, (off_t)off);
		if (k <= 0)
			return -1;
		off += (size_t)k;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (write_all(mem_fd, data, size) < 0)
		abort();
	struct gw_cfg cfg;
	char err[512];
	FUZZ_CHECK(gw_cfg_defaults(&cfg) == 0);
	err[0] = '\0';
	int rc = gw_cfg_load(&cfg, mem_path, err, sizeof(err));
	if (rc < 0) {
		FUZZ_CHECK(rc == -EINVAL || rc == -ENOMEM);
		FUZZ_CHECK(err[0] != '\0');
		FUZZ_CHECK(rc == -ENOMEM || strstr(err, mem_path) != NULL);
		gw_cfg_free(&cfg);
		return 0;
	}
	/* what loaded is within the documented ranges */
	FUZZ_CHECK(cfg.max_line >= 256 && cfg.max_connections >= 1 && cfg.commit_interval_ms >= 1 &&
	      cfg.commit_max_records >= 1 && cfg.tick_ms >= 10 && cfg.http_header_timeout_ms >= 100 &&
	      cfg.stream_idle_timeout_ms >= 1000 && cfg.max_pending_bytes >= (1u << 20));
	FUZZ_CHECK(cfg.db_path && cfg.state_dir && cfg.aliases);
	err[0] = '\0';
	rc = gw_cfg_validate(&cfg, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || err[0] != '\0');
	struct gw_sink_cfg *sinks = NULL;
	size_t n = 0;
	err[0] = '\0';
	rc = gw_sink_parse(cfg.sinks, &sinks, &n, err, sizeof(err));
	if (rc < 0) {
		FUZZ_CHECK(err[0] != '\0');
		FUZZ_CHECK(rc == -ENOMEM || strstr(err, "sinks") != NULL);
	} else {
		for (size_t i = 0; i < n; i++) {
			FUZZ_CHECK(sinks[i].url && sinks[i].type && sinks[i].name[0]);
			FUZZ_CHECK(sinks[i].retry_initial_ms > 0 && sinks[i].retry_max_ms >= sinks[i].retry_initial_ms);
			FUZZ_CHECK(sinks[i].max_in_flight >= 1);
		}
		gw_sink_free_all(sinks, n);
	}
	struct gw_auth *auth = NULL;
	err[0] = '\0';
	rc = gw_auth_load(cfg.auth, &auth, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || err[0] != '\0');
	gw_auth_free(auth);
	json_t *j = gw_cfg_to_json(&cfg);
	FUZZ_CHECK(j != NULL);   /* --check-config prints it */
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	free(s);
	json_decref(j);
	gw_cfg_free(&cfg);
	return 0;
}
