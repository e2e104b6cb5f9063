/*
 * store_open: opening the store (the database file in WAL mode, its
 * tables migrated forward by schema.c, the writer's statements prepared,
 * the writer and checkpointer threads started) and closing it (the writer
 * commits everything queued first, and says loudly what it had to give
 * up).  See store.h.
 */
#include "store_impl.h"
#include "schema.h"
#include "tiles.h"

#include "fault.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gw_store_lib_init(void)
{
	/* SQLITE_MISUSE once the library is initialised: nothing to do then */
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int gw_store_open(const struct gw_store_opts *o, struct gw_store **out,
                  char *err, size_t errlen)
{
	struct gw_store *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (!s->o.commit_interval_ms)
		s->o.commit_interval_ms = 100;
	if (!s->o.commit_max_records)
		s->o.commit_max_records = 20000;
	if (!s->o.max_pending_bytes)
		s->o.max_pending_bytes = 256u << 20;
	s->path = strdup(o->path);
	if (!s->path || o->n_schemas > MAX_SCHEMAS) {
		bool oom = !s->path;
		free(s->path);
		free(s);
		return oom ? gw_errf(err, errlen, -ENOMEM, "out of memory")
		           : gw_errf(err, errlen, -EINVAL, "too many schemas");
	}
	for (size_t k = 0; k < o->n_schemas; k++)
		s->schemas[k] = o->schemas[k];
	s->n_schemas = o->n_schemas;
	s->o.schemas = NULL;
	s->crash_at_commit = gw_fault_crash_commit();
	if (s->crash_at_commit)
		gw_log_warn("store: test hook GRADWATCH_FAULT_CRASH_COMMIT: the process kills itself "
		            "before commit %" PRIu64, s->crash_at_commit);
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->notify_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* timed_wait's clock */
	pthread_cond_init(&s->cv, &ca);
	pthread_cond_init(&s->ckpt_cv, &ca);
	pthread_cond_init(&s->hold_cv, &ca);
	pthread_condattr_destroy(&ca);
	int rc = sqlite3_open_v2(o->path, &s->db,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		gw_errf(err, errlen, -EIO, "cannot open database %s: %s", o->path,
		     s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		rc = gw__store_errno(rc);
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 5000);
	char e[256];
	const char *sync = o->sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL";
	/* journal_size_limit: a WAL that starts over after a burst is trimmed */
	char pragmas[192];
	snprintf(pragmas, sizeof(pragmas), "PRAGMA foreign_keys = OFF; PRAGMA cache_size = -65536; "
	         "PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = %d",
	         GW_STORE_WAL_KEEP_BYTES);
	if ((rc = gw__store_exec(s->db, "PRAGMA journal_mode = WAL", e, sizeof(e))) < 0 ||
	    (rc = gw__store_exec(s->db, sync, e, sizeof(e))) < 0 ||
	    (rc = gw__store_exec(s->db, pragmas, e, sizeof(e))) < 0) {
		gw_errf(err, errlen, -EIO, "database %s: %s", o->path, e);
		goto fail;
	}
	if ((rc = gw__store_migrate(s->db, o->path, s->schemas, s->n_schemas, err, errlen)) < 0 ||
	    (rc = gw__store_prepare(s, err, errlen)) < 0)
		goto fail;
	if (!(s->tiles = gw__tiles_new())) {
		rc = -ENOMEM;
		goto fail;
	}
	sqlite3_wal_hook(s->db, gw__store_on_wal, s);
	if (pthread_create(&s->ckpt_thread, NULL, gw__store_checkpointer_main, s) == 0)
		s->ckpt_started = true;
	else
		gw_log_warn("store: no checkpointer thread; the WAL is folded back at close only");
	if (pthread_create(&s->thread, NULL, gw__store_writer_main, s) != 0) {
		rc = -EAGAIN;
		gw_errf(err, errlen, -EIO, "cannot start the storage writer thread");
		goto fail;
	}
	s->started = true;
	*out = s;
	return 0;
fail:
	gw_store_close(s);
	return rc;
}

void gw_store_set_notify(struct gw_store *s, void (*fn)(void *data), void *data)
{
	pthread_mutex_lock(&s->notify_mu);
	s->o.notify = fn;
	s->o.notify_data = data;
	pthread_mutex_unlock(&s->notify_mu);
}

int gw_store_close(struct gw_store *s)
{
	if (!s)
		return 0;
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_mutex_unlock(&s->mu);
		pthread_cond_signal(&s->cv);
		pthread_join(s->thread, NULL);
	}
	if (s->ckpt_started) {
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_mutex_unlock(&s->mu);
		pthread_cond_signal(&s->ckpt_cv);
		pthread_join(s->ckpt_thread, NULL);
	}
	int rc = s->dropped ? -EIO : s->last_error;
	for (size_t k = 0; k < s->n_st; k++)
		sqlite3_finalize(s->st[k]);
	free(s->st);
	for (int k = 0; k < T_COUNT; k++)
		sqlite3_finalize(s->tx[k]);
	gw__tiles_free(s->tiles);
	if (s->db) {
		/* fold the WAL back so the file is complete on its own */
		sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
		sqlite3_close(s->db);
	}
	gw__store_runs_clear(s);
	free(s->pending.buf);
	free(s->work.buf);
	free(s->spare.buf);
	free(s->path);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->notify_mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->ckpt_cv);
	pthread_cond_destroy(&s->hold_cv);
	free(s);
	return rc;
}
