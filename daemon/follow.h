/*
 * follow: tail NDJSON log files that training jobs already write
 * (`gradwatchd --follow FILE --run NAME`, or the config's "follow" array),
 * surviving truncation, rotation and daemon restarts (see follow_set.c).
 */
#ifndef GW_FOLLOW_H
#define GW_FOLLOW_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

struct gw_cfg;
struct gw_follow;
struct gw_ingest;
struct gw_store;

/* What following needs (all borrowed, outliving the set). */
struct gw_follow_opts {
	uv_loop_t *loop;
	const struct gw_cfg *cfg;     /* the "follow" array, the database path */
	struct gw_ingest *ingest;     /* where every line goes */
	struct gw_store *store;       /* each file's position, with its lines */
};

#define GW_FOLLOW_POLL_MS 200   /* default stat interval */

/* Check the config's "follow" array: objects {"path": FILE, "run": NAME
 * (optional), "poll_ms": N (optional)}, no path twice.  Returns 0 or
 * -EINVAL with a message in err. */
int gw_follow_validate(const json_t *follow, char *err, size_t errlen);

/* Start following every file of o->cfg->follow (before the loop runs: it
 * reads each file's stored position from the database synchronously).
 * A file that does not exist yet is waited for.  Returns 0, or a negative
 * errno with a message in err; *out is NULL when nothing is followed. */
int gw_follow_start(const struct gw_follow_opts *o, struct gw_follow **out, char *err,
                    size_t errlen);

/* Lifecycle (docs/architecture.md, "Starting and stopping"): start, stop,
 * free.  Stop following (shutdown): close the poll handles; reads in flight
 * finish and are ingested.  Idempotent, also after a failed start (fw may
 * be NULL). */
void gw_follow_stop(struct gw_follow *fw);

/* Free everything once the loop has run the close callbacks (fw may be
 * NULL). */
void gw_follow_free(struct gw_follow *fw);

#endif
