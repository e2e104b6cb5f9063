/*
 * ingest_impl: what the record path's parts share (internal: ingest.c one
 * record's way and the engine's hooks; ingest_src.c the sources;
 * ingest_commit.c commits, waiters and back-pressure; ingest_counters.c
 * the counters' table; ingest_start.c the set-up).  Users see struct
 * gw_ingest only through ingest.h.
 */
#ifndef GW_INGEST_IMPL_H
#define GW_INGEST_IMPL_H

#include "ingest.h"
#include "registry.h"
#include "seg_cap.h"

struct gw_runs;

struct gw_ingest_counters {
	uint64_t accepted[GW_NTRANSPORTS];
	uint64_t rejected[GW_NTRANSPORTS][GW_REJ_NREASONS];
	uint64_t events[GW_NTRANSPORTS];
	uint64_t bytes[GW_NTRANSPORTS];
	uint64_t alerts[GW_DET_MAX][3];   /* opened, by detector and severity */
	uint64_t segments;
	uint64_t connections;
	uint64_t udp_dropped;             /* datagrams refused under back-pressure */
};

struct gw_ingest {
	struct gw_ingest_opts o;
	uv_loop_t *loop;
	const struct gw_cfg *cfg;         /* borrowed */
	struct gw_store *store;           /* borrowed, or NULL (replay) */
	struct gw_outbox *outbox;         /* borrowed, or NULL (replay) */
	struct gw_engine *engine;
	struct gw_wire *wire;
	struct gw_runs *runs;             /* active and dormant runs; NULL in a replay */
	uv_async_t commit_async;
	bool async_up;                    /* commit_async initialised (and not closed yet) */
	struct gw_commit_waiter *waiters;
	struct gw_paused paused;          /* list head */
	struct gw_ingest_counters n;
	struct gw_seg_cap seg_cap;        /* per_min 0 in a replay */
};

/* Count rejection reason r of a line of transport t, and set it on *e. */
void gw__ingest_reject(struct gw_ingest *in, enum gw_transport t, struct gw_wire_err *e,
                       enum gw_wire_reason r);

/* ingest.c: the engine's hooks, with in as their data. */
void gw__ingest_hooks(struct gw_ingest *in, struct gw_engine_hooks *h);

/* ingest_commit.c: the commit notification (loop; NULL for a replay). */
void gw__ingest_commit_init(struct gw_ingest *in);
void gw__ingest_commit_close(struct gw_ingest *in);

#endif
