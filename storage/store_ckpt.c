/*
 * store_ckpt: the store's checkpointer thread (see store_writer.c for the
 * writer): it folds the WAL back into the database with PASSIVE
 * checkpoints on its own connection, off the writer's path.  Also the
 * timed wait both threads use.
 */
#include "store_impl.h"

#include "clock.h"
#include "log.h"

#include <time.h>

/* Wait on cv (mu held) for at most ms milliseconds.  The store's
 * condition variables run on CLOCK_MONOTONIC (cond_init): on the default
 * wall clock a step backwards (NTP at boot, a VM resumed) stretched the
 * wait by the step, and a stream's lines or the WAL checkpoints waited
 * with it. */
void gw__store_timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms)
{
	struct timespec ts;
	gw_mono_deadline(&ts, ms);
	pthread_cond_timedwait(cv, mu, &ts);
}

/* SQLite's automatic checkpoint runs inside the COMMIT that crosses its
 * threshold, so one commit in a few hundred would wait for the whole WAL to
 * be copied (and, with synchronous=full, synced) into the database: tens of
 * milliseconds in the path of an HTTP acknowledgement or an alert.  Instead
 * this thread runs PASSIVE checkpoints on its own connection; they never
 * block the writer, and the writer starts the WAL over once one has caught
 * up.  It looks every CKPT_EVERY_MS and checkpoints when the WAL holds at
 * least CKPT_MIN_FRAMES (SQLite's own autocheckpoint threshold, 4 MB of
 * 4 KB pages): each checkpoint syncs the database file, and syncing after
 * every few commits cost the writer's fsyncs their latency under load. */
#define CKPT_EVERY_MS 250
#define CKPT_MIN_FRAMES 1000

/* Under sustained load a PASSIVE checkpoint never catches up on its own:
 * by the time it has copied the WAL, the writer has committed more, and
 * SQLite starts the WAL over only when a write transaction begins with
 * every frame copied.  At 100,000 records/s the WAL grew by 40 MB a
 * second for as long as the load lasted (500 MB in a 13 s benchmark).
 * So once the WAL holds RESTART_FRAMES (16 MB) and a pass of this thread
 * has left at most CATCHUP_FRAMES or two commits' frames behind, the
 * writer copies those itself between two transactions, once it has told
 * the loop of the commit before (gw__store_wal_restart: an alert waiting
 * for that commit is not held back by the copy), and its next transaction
 * starts the WAL over: at that load 4-7 ms of the writer's time, about
 * once a second.  At
 * FORCE_FRAMES (64 MB) it copies whatever is left, however long that
 * takes: a checkpointer that cannot keep up (a starved thread, a slow
 * disk) must not let the WAL grow without end.  (Passes back to back
 * once the WAL was large were tried: they write the same hot pages into
 * the database again and again, and cost alerts more.) */
#define RESTART_FRAMES 4000
#define FORCE_FRAMES 16000
#define CATCHUP_FRAMES 400

/* The writer's WAL hook: how many frames the WAL holds after a commit. */
int gw__store_on_wal(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct gw_store *s = arg;
	int before = atomic_exchange(&s->wal_frames, frames);
	s->commit_frames = frames > before ? frames - before : frames;
	return SQLITE_OK;
}

void gw__store_wal_restart(struct gw_store *s)
{
	int wal = atomic_load(&s->wal_frames);
	uint64_t last = atomic_load(&s->ckpt_last);
	int64_t seen = (int64_t)(last >> 32), done = (int64_t)(last & 0xffffffffu);
	/* a pass of an earlier WAL (seen > wal) says nothing of this one */
	int behind = 2 * s->commit_frames > CATCHUP_FRAMES ? 2 * s->commit_frames : CATCHUP_FRAMES;
	if (wal < RESTART_FRAMES || (wal < FORCE_FRAMES && (seen > wal || wal - done > behind)))
		return;
	int frames = 0, copied = 0;
	sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied);
}

void *gw__store_checkpointer_main(void *arg)
{
	struct gw_store *s = arg;
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		gw_log_warn("store: checkpointer cannot open %s: %s", s->path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	/* a connection learns the database is in WAL mode when it first reads
	 * it; until then sqlite3_wal_checkpoint_v2 does nothing at all (this
	 * thread's checkpoints were all no-ops, and the WAL grew until close) */
	char *msg = NULL;
	if (sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, &msg) != SQLITE_OK) {
		gw_log_warn("store: checkpointer cannot read %s: %s; the WAL is folded back at close "
		            "only", s->path, msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		sqlite3_close(db);
		return NULL;
	}
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		gw__store_timed_wait(&s->ckpt_cv, &s->mu, CKPT_EVERY_MS);
		if (s->stop)
			break;
		if (atomic_load(&s->wal_frames) < CKPT_MIN_FRAMES)
			continue;
		pthread_mutex_unlock(&s->mu);
		int frames = 0, done = 0;
		if (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &frames, &done) ==
		    SQLITE_OK && frames >= 0 && done >= 0)
			atomic_store(&s->ckpt_last, (uint64_t)frames << 32 | (uint32_t)done);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	sqlite3_close(db);
	return NULL;
}
