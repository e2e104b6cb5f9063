/*
 * reload: SIGHUP (see reload.h).  The configuration file is read again
 * whole, as at the start; if it does not load, the daemon keeps what it
 * has and says why.  Then what can change while the daemon runs is swapped
 * in: thresholds, per-run overrides and disabled detectors (the engine
 * takes them, gw_ingest_reconfigure) and the log level (unless
 * --log-level was given); every other top-level key that differs from the
 * file as it was at start-up is named in a warning: it needs a restart.
 */
#include "reload.h"

#include "ingest.h"
#include "log.h"
#include "util.h"

#include <errno.h>
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

int gw_reload(struct gw_args *a, struct gw_ingest *in)
{
	struct gw_cfg *cfg = &a->cfg;
	if (!cfg->file) {
		gw_log_info("SIGHUP: no configuration file to reload");
		return 0;
	}
	struct gw_cfg fresh;
	char err[512];
	if (gw_cfg_defaults(&fresh) < 0)
		return -ENOMEM;
	int rc = gw_cfg_load(&fresh, cfg->file, err, sizeof(err));
	if (rc < 0) {
		gw_log_err("SIGHUP: keeping the old configuration: %s", err);
		gw_cfg_free(&fresh);
		return rc;
	}
	/* swap in what can change at run time */
	struct gw_th_override *ov = cfg->overrides;
	size_t nov = cfg->n_overrides;
	cfg->engine.th = fresh.engine.th;
	cfg->engine.disabled = fresh.engine.disabled;
	cfg->overrides = fresh.overrides;
	cfg->n_overrides = fresh.n_overrides;
	if (!a->log_level_flag)
		cfg->log_level = fresh.log_level;
	fresh.overrides = ov;
	fresh.n_overrides = nov;
	struct gw_engine_opts eo = cfg->engine;
	eo.overrides = cfg->overrides;
	eo.n_overrides = cfg->n_overrides;
	gw_ingest_reconfigure(in, &eo);
	gw_log_init(cfg->log_level, gw_log_stderr_is_journal());
	char later[512];
	restart_keys(a, &fresh, later, sizeof(later));
	gw_cfg_free(&fresh);
	gw_log_info("SIGHUP: reloaded thresholds, run overrides, detectors and log level from %s",
	            cfg->file);
	if (later[0])
		gw_log_warn("SIGHUP: %s changed in %s since the start and need a restart; "
		            "the daemon goes on with them as they were", later, cfg->file);
	return 0;
}
