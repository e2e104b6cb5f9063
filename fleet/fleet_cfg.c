/*
 * fleet_cfg: the "fleet" configuration object (fleet.h), how its DSN is
 * shown in logs, and the SQLite table of the shipper's durable cursors.
 */
#include "fleet.h"

#include "store.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const gw_fleet_table_names[GW_FLEET_N_TABLES] = {
	"runs", "segments", "records", "events", "alerts",
};

/* fleet_cursor: per table, the highest local id shipped and committed in
 * PostgreSQL.  Written by the shipper after PostgreSQL committed. */
static const char *const migrations[] = {
	"CREATE TABLE fleet_cursor(tbl TEXT PRIMARY KEY, last_id INTEGER NOT NULL,"
	"  shipped_at REAL) WITHOUT ROWID",
};

const struct gw_store_schema gw_fleet_schema = {
	.name = "fleet",
	.migrations = migrations,
	.n_migrations = sizeof(migrations) / sizeof(migrations[0]),
};

void gw_fleet_redact_dsn(const char *dsn, char *out, size_t cap)
{
	if (!strncmp(dsn, "postgresql://", 13) || !strncmp(dsn, "postgres://", 11)) {
		/* keep scheme://host:port/dbname; user info and query go */
		const char *host = strstr(dsn, "://") + 3;
		const char *at = strchr(host, '@'), *end = host + strcspn(host, "/?");
		if (at && at < end)
			host = at + 1;
		const char *q = host + strcspn(host, "?#");
		snprintf(out, cap, "%.*s%.*s%s", (int)(strstr(dsn, "://") + 3 - dsn), dsn,
		         (int)(q - host), host, *q || (at && at < end) ? " (credentials redacted)" : "");
		return;
	}
	/* key=value pairs: only host, hostaddr, port and dbname are shown */
	size_t n = 0;
	out[0] = '\0';
	const char *p = dsn;
	while (*p && n + 1 < cap) {
		while (isspace((unsigned char)*p))
			p++;
		const char *k = p;
		while (*p && *p != '=' && !isspace((unsigned char)*p))
			p++;
		size_t klen = (size_t)(p - k);
		while (isspace((unsigned char)*p))
			p++;
		if (*p != '=')
			break;
		p++;
		while (isspace((unsigned char)*p))
			p++;
		const char *v = p;
		if (*p == '\'') {
			for (p++; *p && *p != '\''; p++)
				if (*p == '\\' && p[1])
					p++;
			if (*p)
				p++;
		} else {
			while (*p && !isspace((unsigned char)*p))
				p++;
		}
		static const char *const shown[] = {"host", "hostaddr", "port", "dbname"};
		bool show = false;
		for (size_t i = 0; i < GW_ARRAY_SIZE(shown); i++)
			show |= strlen(shown[i]) == klen && !strncmp(k, shown[i], klen);
		int w = snprintf(out + n, cap - n, "%s%.*s=%.*s", n ? " " : "", (int)klen, k,
		                 show ? (int)(p - v) : 8, show ? v : "REDACTED");
		if (w < 0 || (size_t)w >= cap - n)
			break;
		n += (size_t)w;
	}
}

int gw_fleet_cfg_parse(const json_t *fleet, struct gw_fleet_cfg *cfg, char *err, size_t errlen)
{
	static const char *const known[] = {
		"postgresql", "postgresql_env", "postgresql_file", "node", "interval", "batch_rows",
		NULL,
	};
	memset(cfg, 0, sizeof(*cfg));
	cfg->interval_ms = 1000;
	cfg->batch_rows = 20000;
	if (gethostname(cfg->node, sizeof(cfg->node)) < 0 || !cfg->node[0])
		gw_strlcpy(cfg->node, "localhost", sizeof(cfg->node));
	cfg->node[sizeof(cfg->node) - 1] = '\0';
	/* a node name is letters, digits and -_. (it is pasted into the
	 * shipper's SQL and is the NODE of NODE/RUN): anything else of a host
	 * name becomes '_' */
	for (char *p = cfg->node; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
			*p = '_';
	if (!fleet || json_is_null(fleet))
		return 0;
	if (!json_is_object(fleet))
		return gw_errf(err, errlen, -EINVAL, "fleet must be an object");
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)fleet, key, v) {
		bool ok = false;
		for (size_t k = 0; known[k]; k++)
			ok |= strcmp(known[k], key) == 0;
		if (!ok)
			return gw_errf(err, errlen, -EINVAL, "fleet: unknown key \"%s\"", key);
	}
	int rc = gw_secret_load(fleet, "postgresql", "fleet", &cfg->dsn, NULL, err, errlen);
	if (rc < 0)
		return rc;
	if (!cfg->dsn)
		return gw_errf(err, errlen, -EINVAL, "fleet: one of \"postgresql\", \"postgresql_env\" or "
		               "\"postgresql_file\" is required");
	gw_fleet_redact_dsn(cfg->dsn, cfg->dsn_log, sizeof(cfg->dsn_log));
	if ((v = json_object_get(fleet, "node"))) {
		const char *n = json_string_value(v);
		size_t len = n ? strlen(n) : 0;
		bool good = len > 0 && len < GW_FLEET_NODE_MAX;
		for (size_t k = 0; good && k < len; k++)
			good = isalnum((unsigned char)n[k]) || strchr("-_.", n[k]);
		if (!good) {
			gw_fleet_cfg_free(cfg);
			return gw_errf(err, errlen, -EINVAL, "fleet: \"node\" must be 1-%d letters, digits, "
			               "'-', '_' or '.'", GW_FLEET_NODE_MAX - 1);
		}
		gw_strlcpy(cfg->node, n, sizeof(cfg->node));
	}
	if ((v = json_object_get(fleet, "interval")) &&
	    (gw_parse_duration(v, &cfg->interval_ms) < 0 || cfg->interval_ms < 10 ||
	     cfg->interval_ms > 3600000)) {
		gw_fleet_cfg_free(cfg);
		return gw_errf(err, errlen, -EINVAL, "fleet: \"interval\" must be a duration from 10ms "
		               "to 1h");
	}
	if ((v = json_object_get(fleet, "batch_rows"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 1000000) {
			gw_fleet_cfg_free(cfg);
			return gw_errf(err, errlen, -EINVAL, "fleet: \"batch_rows\" must be 1 to 1000000");
		}
		cfg->batch_rows = (unsigned)json_integer_value(v);
	}
	return 0;
}

void gw_fleet_cfg_free(struct gw_fleet_cfg *cfg)
{
	if (cfg->dsn)
		memset(cfg->dsn, 0, strlen(cfg->dsn));
	free(cfg->dsn);
	cfg->dsn = NULL;
}
