/*
 * ingest_commit: acknowledgement and back-pressure (see ingest.h).  The
 * store's writer wakes the loop after each commit through commit_async;
 * on_commit then tells the outbox what is durable, answers the waiters the
 * commit covers (all of them, with the cause, when it failed: nobody hangs
 * on a full disk) and resumes the paused sources once the queue drained
 * below their share.
 */
#include "ingest_impl.h"

#include "outbox.h"
#include "store.h"
#include "util.h"

#define STREAM_SHARE_PCT 50   /* of max_pending_bytes, for streams, files and UDP */

/* ---- commit notifications --------------------------------------------------------- */

static void on_commit(uv_async_t *a)
{
	struct gw_ingest *in = a->data;
	uint64_t done = gw_store_committed(in->store);
	gw_outbox_committed(in->outbox, done);
	struct gw_store_stats st;
	gw_store_stats(in->store, &st);
	/* answer every waiter that is now covered, or all of them with the
	 * cause when the last commit failed (they must not hang on a full disk) */
	struct gw_commit_waiter *ready = NULL;
	for (struct gw_commit_waiter **p = &in->waiters; *p;) {
		struct gw_commit_waiter *w = *p;
		if (w->seq <= done || st.last_error) {
			*p = w->next;
			w->next = ready;
			ready = w;
		} else {
			p = &w->next;
		}
	}
	while (ready) {
		struct gw_commit_waiter *w = ready;
		ready = w->next;
		w->error = w->seq <= done ? 0 : st.last_error;
		w->why = w->error ? st.last_error_msg : NULL;
		w->fn(w);
	}
	if (!gw_ingest_congested(in)) {
		while (in->paused.next != &in->paused) {
			struct gw_paused *p = in->paused.next;
			gw_ingest_unpause(in, p);
			p->resume(p);
		}
	}
}

static void store_notify(void *data)
{
	uv_async_send(data);
}

void gw_ingest_wait_commit(struct gw_ingest *in, struct gw_commit_waiter *w)
{
	w->error = 0;
	w->why = NULL;
	/* no record path (the fleet view): nothing to wait for */
	if (!in || gw_store_committed(in->store) >= w->seq) {
		w->fn(w);
		return;
	}
	gw_store_flush(in->store);
	w->next = in->waiters;
	in->waiters = w;
}

void gw_ingest_cancel_wait(struct gw_ingest *in, struct gw_commit_waiter *w)
{
	for (struct gw_commit_waiter **p = in ? &in->waiters : NULL; p && *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			return;
		}
	}
}

void gw_ingest_barrier(struct gw_ingest *in, struct gw_commit_waiter *w)
{
	/* every write queued, not only lines: a route's own (an ack, a
	 * deletion) is what a read again after it must see */
	w->seq = in ? gw_store_queued(in->store) : 0;
	gw_ingest_wait_commit(in, w);
}

bool gw_ingest_congested(const struct gw_ingest *in)
{
	return gw_store_over(in->store, STREAM_SHARE_PCT);
}

bool gw_ingest_full(const struct gw_ingest *in)
{
	return gw_store_over(in->store, 100);
}

int gw_ingest_store_error(const struct gw_ingest *in, char *why, size_t whylen)
{
	struct gw_store_stats st;
	gw_store_stats(in->store, &st);
	if (st.last_error && why)
		gw_strlcpy(why, st.last_error_msg, whylen);
	return st.last_error;
}

void gw_ingest_pause(struct gw_ingest *in, struct gw_paused *p)
{
	if (p->linked)
		return;
	p->next = in->paused.next;
	p->prev = &in->paused;
	in->paused.next->prev = p;
	in->paused.next = p;
	p->linked = true;
}

void gw_ingest_unpause(struct gw_ingest *in, struct gw_paused *p)
{
	if (!p->linked)
		return;
	p->prev->next = p->next;
	p->next->prev = p->prev;
	p->linked = false;
}

void gw__ingest_commit_init(struct gw_ingest *in)
{
	if (in->loop) {
		uv_async_init(in->loop, &in->commit_async, on_commit);
		in->commit_async.data = in;
		in->async_up = true;
	}
	if (in->store && in->loop)
		gw_store_set_notify(in->store, store_notify, &in->commit_async);
}

void gw__ingest_commit_close(struct gw_ingest *in)
{
	if (in->store && in->async_up)
		gw_store_set_notify(in->store, NULL, NULL);
	if (in->async_up && !uv_is_closing((uv_handle_t *)&in->commit_async))
		uv_close((uv_handle_t *)&in->commit_async, NULL);
}
