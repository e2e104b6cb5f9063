/*
 * outbox_db: the alert delivery outbox's own tables in gradwatch's
 * database (registered with the store as a schema) and its rows and
 * start-up reads.  The tables:
 *
 *   outbox       one row per alert event (open, update, resolve) with the
 *                alert JSON as it was then; (alert_id, version) is unique
 *   deliveries   the state of one event at one sink (pending, delivered,
 *                superseded, failed), attempts, last status and error
 *
 * Both are pruned with their run (gw_store_delete_run: retention, DELETE
 * /v1/runs/{run}, prune), in its transaction, but for what at-least-once
 * delivery still needs: a pending delivery and its event stay until the
 * delivery is no longer pending, then a trigger removes them (their alert
 * is gone).
 */
#ifndef GW_OUTBOX_DB_H
#define GW_OUTBOX_DB_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* The schema to pass in gw_store_opts.schemas. */
extern const struct gw_store_schema gw_outbox_schema;

/* Queue one alert event to deliver. */
uint64_t gw_outbox_db_put_event(struct gw_store *s, const char *alert_id, int64_t version,
                                const char *kind, const char *run, const char *alert_json,
                                double created);

/* The delivery state of one event at one sink (insert or replace). */
struct gw_outbox_delivery {
	const char *alert_id;
	int64_t version;
	const char *sink;
	const char *state;         /* "pending", "delivered", "superseded", "failed" */
	int64_t attempts;
	int64_t last_status;       /* HTTP status of the last attempt, 0 if none */
	const char *last_error;    /* NULL or "" if none */
	double updated, delivered; /* wall clock; delivered NaN until then */
};
uint64_t gw_outbox_db_put_delivery(struct gw_store *s, const struct gw_outbox_delivery *dv);

/* Start-up reads (once, before the loop runs).  read_pending calls fn for
 * every pending delivery, oldest event first.  read_versions calls fn for
 * every alert that can still change (open, or in its run's last segment)
 * with its run, its version, whether it is acknowledged and, when open, the JSON of
 * its last event other than a resolve (open, update, ack, unack) that went
 * through the outbox (NULL if none). */
int gw_outbox_db_read_pending(const char *path,
                              void (*fn)(void *data, const char *sink, const char *alert_id,
                                         int64_t version, const char *kind, const char *run,
                                         double created, const char *alert_json,
                                         int64_t attempts),
                              void *data, char *err, size_t errlen);
int gw_outbox_db_read_versions(const char *path,
                               void (*fn)(void *data, const char *alert_id, const char *run,
                                          int64_t version, bool open, bool acked,
                                          const char *alert_json),
                               void *data, char *err, size_t errlen);

#endif
