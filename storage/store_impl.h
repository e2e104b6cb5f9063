/*
 * store_impl: what the store's parts share (internal; users see store.h):
 * the queued items and their arena, the writer's cache of runs, the
 * statements' numbering, and struct gw_store.  store.c is the queue (the
 * callers' side), store_writer.c the writer thread and the statements it
 * runs, store_ckpt.c the checkpointer, store_open.c opening and closing.
 */
#ifndef GW_STORE_IMPL_H
#define GW_STORE_IMPL_H

#include "store.h"

#include "strtab.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* One queued row: statement index, values, then the text bytes. */
struct val {
	uint32_t type;        /* enum gw_sv_type */
	uint32_t len;         /* TEXT, RUN: bytes (the text is NUL-terminated too) */
	union {
		int64_t i;
		double d;
		uint64_t off;     /* TEXT, RUN: offset of the bytes from the item start */
	} u;
};

struct item {
	uint32_t size;        /* whole item, 8-aligned */
	uint16_t stmt;        /* index into gw_store.st */
	uint16_t nval;
	uint64_t seq;
	struct val v[];
};

struct arena {
	char *buf;
	size_t len, cap;
	size_t n;
	uint64_t last_seq;
	uint64_t first_ms;    /* monotonic ms when the first item went in */
};

/* The writer's cache of one run: its runs.id (-1 once the run was deleted:
 * resolved again on its next row) and the position it moved to in this
 * batch (dirty: the runs row is updated before the commit). */
struct run_slot {
	char *name;           /* the key of its entry in runs_by_name */
	int64_t id;
	int64_t seg, last_step;
	double last_ts, last_seen;
	bool dirty;
};

/* The store's own statements: the public ones (enum gw_store_stmt) first.
 * `counter` is the stats counter a row bumps; pos_* are the indices of the
 * values that move the run's position (seg, step, ts), -1 when unused. */
enum {
	S_RECORD = GW_STORE_NSTMT_PUBLIC, S_EVENT, S_SEGMENT, S_META, S_RANK_LINE, S_WRITERS,
	S_RUN_END, S_DEL_RECORDS, S_DEL_EVENTS, S_DEL_SEGMENTS, S_DEL_ALERTS, S_DEL_TILES,
	S_DEL_RANK_LINES, S_DEL_RANKS, S_DEL_RUN, S_NCORE,
};

enum counter { C_NONE, C_RECORDS, C_EVENTS, C_SEGMENTS, C_ALERTS, C_N };

enum { T_BEGIN, T_COMMIT, T_ROLLBACK, T_RUN_GET, T_RUN_INS, T_RUN_UPD, T_COUNT };

#define MAX_SCHEMAS 8

struct gw_store {
	struct gw_store_opts o;
	char *path;
	sqlite3 *db;
	pthread_t thread;
	bool started;
	pthread_t ckpt_thread;     /* folds the WAL back, off the writer's path */
	bool ckpt_started;
	pthread_cond_t ckpt_cv;
	_Atomic int wal_frames;    /* frames in the WAL after the last commit (wal hook) */
	_Atomic uint64_t ckpt_last; /* the checkpointer's last pass: frames in the WAL << 32 | frames backfilled */

	pthread_mutex_t mu;
	pthread_mutex_t notify_mu;     /* held while o.notify runs (gw_store_set_notify) */
	pthread_cond_t cv;
	struct arena pending;
	uint64_t seq;            /* last sequence handed out */
	bool urgent, stop;
	bool writer_idle;        /* the writer waits for a first row (put wakes it) */
	unsigned held;           /* gw_store_hold() depth: do not take the queue */
	bool held_waiter;        /* the writer waits for held to reach 0 */
	pthread_cond_t hold_cv;  /* an outermost gw_store_hold() waits on it
	                            while held_waiter (the writer goes first) */
	_Atomic uint64_t committed;
	_Atomic size_t pending_bytes;

	/* the statements: the store's own (S_NCORE), then each schema's */
	const struct gw_store_schema *schemas[MAX_SCHEMAS];
	unsigned schema_base[MAX_SCHEMAS];
	size_t n_schemas;
	sqlite3_stmt **st;
	size_t n_st;
	sqlite3_stmt *tx[T_COUNT];

	/* writer-thread only */
	struct arena work;
	struct arena spare;            /* an empty arena the queue gets when taken onto an open batch */
	struct run_slot *runs;         /* in the order first met */
	size_t runs_cap, runs_n;
	struct gw_strtab runs_by_name; /* name -> index into runs */
	struct gw__tiles *tiles;       /* chart extremes of this batch (series.c) */
	uint64_t commit_attempts;      /* COMMITs tried (the fault hook counts them) */
	int commit_frames;             /* frames the last commit added to the WAL (wal hook) */
	uint64_t crash_at_commit;      /* the test hook (gw_fault_crash_commit), 0: off */

	/* stats, under mu */
	uint64_t commits, n[C_N];
	uint64_t dropped;        /* items given up at shutdown (never committed) */
	int last_error;
	char last_error_msg[200];
};

/* store_ckpt.c: between two transactions, start the WAL over once the
 * checkpointer has nearly caught up (writer thread, after it has notified
 * the loop of the commit before). */
void gw__store_wal_restart(struct gw_store *s);

/* The bytes of text value x of item it. */
static inline const char *gw__store_val_text(const struct item *it, const struct val *x)
{
	return (const char *)it + x->u.off;
}

/* store_writer.c: forget every cached run (at close, and after a
 * rollback: the ids may name rows it removed). */
void gw__store_runs_clear(struct gw_store *s);
/* store_writer.c: prepare the writer's statements (transaction control,
 * the store's rows, each schema's rows) on s->db; 0 or a negative errno
 * with a message in err. */
int gw__store_prepare(struct gw_store *s, char *err, size_t errlen);
/* The writer thread and the checkpointer thread (arg: the store), and the
 * WAL hook that counts frames for the checkpointer. */
void *gw__store_writer_main(void *arg);
void *gw__store_checkpointer_main(void *arg);
int gw__store_on_wal(void *arg, sqlite3 *db, const char *name, int frames);

/* Wait on cv (mu held) for at most ms milliseconds (store_ckpt.c). */
void gw__store_timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms);

#endif
