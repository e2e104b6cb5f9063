/*
 * reload: SIGHUP (see reload.h).  The configuration file is read again
 * whole, as at the start; if it does not load, the daemon keeps what it
 * has and says why.  Then what can change while the daemon runs is swapped
 * in: thresholds, per-run overrides and disabled detectors (the engine
 * takes them, gw_ingest_reconfigure) and the log level (unless
 * --log-level was given); every other top-level key that differs from the
 * file as it was at start-up is named in a warning: it needs a restart.
 * The file is read and parsed on libuv's pool, never on the loop (a file
 * on a stuck network mount, a slow disk); only the swap runs on the loop.
 */
#include "reload.h"

#include "ingest.h"
#include "log.h"
#include "notify.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The top-level keys of the configuration file whose value in `fresh`
 * differs from the file at start-up, but for those a reload applies, as
 * "a, b" in out (empty when none). */
static void restart_keys(const struct gw_args *a, const struct gw_cfg *fresh, char *out,
                         size_t outlen)
{
	static const char *const applied[] = {"thresholds", "runs", "detectors", "log_level", NULL};
	json_t *now = gw_cfg_to_json(fresh);
	const char *key;
	json_t *v;
	size_t len = 0;
	out[0] = '\0';
	json_t *both[2] = {a->file_cfg, now};
	for (int side = 0; side < 2 && a->file_cfg && now; side++) {
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

/* One reload: read on the pool, applied on the loop. */
struct reload {
	uv_work_t work;
	struct gw_args *a;
	struct gw_ingest *in;
	struct gw_cfg fresh;
	int rc;
	char err[512];
	char later[512];
};

static bool in_flight, again;
static void start(uv_loop_t *loop, struct gw_args *a, struct gw_ingest *in);

/* Pool thread: read and check the file; a->file_cfg is only read. */
static void work_load(uv_work_t *w)
{
	struct reload *r = w->data;
	r->rc = gw_cfg_defaults(&r->fresh);
	if (r->rc < 0) {
		snprintf(r->err, sizeof(r->err), "out of memory");
		return;
	}
	r->rc = gw_cfg_load(&r->fresh, r->a->cfg.file, r->err, sizeof(r->err));
	if (r->rc == 0)
		restart_keys(r->a, &r->fresh, r->later, sizeof(r->later));
}

/* Loop thread: swap in what can change at run time. */
static void work_apply(uv_work_t *w, int status)
{
	struct reload *r = w->data;
	struct gw_cfg *cfg = &r->a->cfg;
	if (status < 0 || r->rc < 0) {
		gw_log_err("SIGHUP: keeping the old configuration: %s",
		           status < 0 ? uv_strerror(status) : r->err);
	} else {
		struct gw_th_override *ov = cfg->overrides;
		size_t nov = cfg->n_overrides;
		cfg->engine.th = r->fresh.engine.th;
		cfg->engine.disabled = r->fresh.engine.disabled;
		cfg->overrides = r->fresh.overrides;
		cfg->n_overrides = r->fresh.n_overrides;
		if (!r->a->log_level_flag)
			cfg->log_level = r->fresh.log_level;
		r->fresh.overrides = ov;
		r->fresh.n_overrides = nov;
		struct gw_engine_opts eo = cfg->engine;
		eo.overrides = cfg->overrides;
		eo.n_overrides = cfg->n_overrides;
		gw_ingest_reconfigure(r->in, &eo);
		gw_log_init(cfg->log_level, gw_log_stderr_is_journal());
		gw_log_info("SIGHUP: reloaded thresholds, run overrides, detectors and log level "
		            "from %s", cfg->file);
		if (r->later[0])
			gw_log_warn("SIGHUP: %s changed in %s since the start and need a restart; "
			            "the daemon goes on with them as they were", r->later, cfg->file);
	}
	gw_cfg_free(&r->fresh);
	uv_loop_t *loop = w->loop;
	struct gw_args *a = r->a;
	struct gw_ingest *in = r->in;
	free(r);
	in_flight = false;
	gw_notify("READY=1");
	if (again) {
		again = false;
		start(loop, a, in);
	}
}

static void start(uv_loop_t *loop, struct gw_args *a, struct gw_ingest *in)
{
	struct reload *r = calloc(1, sizeof(*r));
	if (!r) {
		gw_log_err("SIGHUP: keeping the old configuration: out of memory");
		return;
	}
	r->a = a;
	r->in = in;
	r->work.data = r;
	gw_notify("RELOADING=1");
	int rc = uv_queue_work(loop, &r->work, work_load, work_apply);
	if (rc < 0) {
		gw_log_err("SIGHUP: keeping the old configuration: %s", uv_strerror(rc));
		free(r);
		gw_notify("READY=1");
		return;
	}
	in_flight = true;
}

void gw_reload(uv_loop_t *loop, struct gw_args *a, struct gw_ingest *in)
{
	if (!a->cfg.file) {
		gw_log_info("SIGHUP: no configuration file to reload");
		return;
	}
	if (in_flight) {   /* the file may have changed since that one read it */
		again = true;
		return;
	}
	start(loop, a, in);
}
