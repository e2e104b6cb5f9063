/*
 * The history of a run (see hist.h).  Both rings are column arrays indexed
 * by slot & MASK: head (vhead) is the slot of the next record, count
 * (vcount) how many are held, so the newest is at head - 1.  The valid ring
 * follows the timeline: a record entering it, leaving it at the old end
 * (ring full), popping at a restart or changing validity when a later line
 * of the same step merges into it updates the valid ring in the same step,
 * so the two always hold the same records.
 */
#include "hist.h"
#include "log.h"

#include <math.h>
#include <stdlib.h>

#define MASK (GW_RING_CAP - 1)

/* n values of a ring column from slot start, as one or two spans. */
static struct gw_win span(const double *col, size_t start, size_t n)
{
	struct gw_win w = {0};
	if (!n)
		return w;
	w.a = &col[start];
	if (start + n <= GW_RING_CAP) {
		w.na = n;
	} else {
		w.na = GW_RING_CAP - start;
		w.b = &col[0];
		w.nb = n - w.na;
	}
	return w;
}

struct gw_win gw_hist_recent(const struct gw_hist *h, enum gw_col col, size_t n)
{
	if (n > h->count)
		n = h->count;
	return span(h->col[col], (h->head - n) & MASK, n);
}

bool gw_hist_at(const struct gw_hist *h, size_t i, struct gw_hist_rec *out)
{
	if (i >= h->count)
		return false;
	size_t s = (h->head - 1 - i) & MASK;
	out->step = h->step[s];
	out->loss = h->col[GW_COL_LOSS][s];
	out->grad_norm = h->col[GW_COL_GRAD_NORM][s];
	out->lr = h->col[GW_COL_LR][s];
	out->throughput = h->col[GW_COL_THROUGHPUT][s];
	out->valid = h->valid[s];
	return true;
}

struct gw_win gw_hist_valid(const struct gw_hist *h, enum gw_vcol col, size_t count, size_t skip)
{
	if (skip >= h->vcount)
		return (struct gw_win){0};
	size_t n = h->vcount - skip < count ? h->vcount - skip : count;
	return span(h->vcol[col], (h->vhead - skip - n) & MASK, n);
}

int64_t gw_hist_valid_step(const struct gw_hist *h, size_t count, size_t skip, size_t i)
{
	if (skip >= h->vcount)
		return -1;
	size_t n = h->vcount - skip < count ? h->vcount - skip : count;
	if (i >= n)
		return -1;
	return h->vstep[(h->vhead - skip - n + i) & MASK];
}

size_t gw_hist_last_valid(const struct gw_hist *h, size_t count, size_t skip, double *loss,
                          double *gn, double *lr, int64_t *step)
{
	struct gw_win w = gw_hist_valid(h, GW_V_LOSS, count, skip);
	size_t n = gw_win_len(&w);
	if (loss)
		gw_win_copy(&w, loss);
	if (gn) {
		w = gw_hist_valid(h, GW_V_GRAD_NORM, count, skip);
		gw_win_copy(&w, gn);
	}
	if (lr) {
		w = gw_hist_valid(h, GW_V_LR, count, skip);
		gw_win_copy(&w, lr);
	}
	for (size_t i = 0; step && i < n; i++)
		step[i] = gw_hist_valid_step(h, count, skip, i);
	return n;
}

const struct gw_replayed *gw_hist_replayed(const struct gw_hist *h, int64_t step)
{
	size_t lo = 0, hi = h->nrep;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->rep[mid].step < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->nrep && h->rep[lo].step == step ? &h->rep[lo] : NULL;
}

size_t gw_hist_replay_count(const struct gw_hist *h)
{
	return h->nrep;
}

static bool is_valid(double loss, double gn)
{
	return isfinite(loss) && isfinite(gn) && loss > 0 && gn > 0;
}

static void valid_pop(struct gw_hist *h)
{
	h->vhead = (h->vhead - 1) & MASK;
	h->vcount--;
}

static void valid_put(struct gw_hist *h, size_t at, size_t s)
{
	double l = h->col[GW_COL_LOSS][s], g = h->col[GW_COL_GRAD_NORM][s];
	h->vcol[GW_V_LOSS][at] = l;
	h->vcol[GW_V_GRAD_NORM][at] = g;
	h->vcol[GW_V_LOG_LOSS][at] = log(l);
	h->vcol[GW_V_LOG_GRAD_NORM][at] = log(g);
	h->vcol[GW_V_LR][at] = h->col[GW_COL_LR][s];
	h->vstep[at] = h->step[s];
}

/* Slot s is the newest record and its values changed: recompute its
 * validity and logs, and keep the valid ring in step. */
static void set_valid(struct gw_hist *h, size_t s)
{
	double l = h->col[GW_COL_LOSS][s], g = h->col[GW_COL_GRAD_NORM][s];
	bool was = h->valid[s], now = is_valid(l, g);
	h->valid[s] = now;
	if (was && !now) {
		valid_pop(h);
	} else if (now && !was) {
		valid_put(h, h->vhead, s);
		h->vhead = (h->vhead + 1) & MASK;
		h->vcount++;
	} else if (now) {
		valid_put(h, (h->vhead - 1) & MASK, s);
	}
}

int64_t gw_hist_cut(struct gw_hist *h, int64_t S)
{
	size_t popped = 0;
	while (popped < h->count && h->step[(h->head - 1 - popped) & MASK] > S)
		popped++;
	h->nrep = 0;
	if (!popped)
		return S;
	if (!h->rep && !(h->rep = malloc(sizeof(*h->rep) * GW_REPLAY_CAP))) {
		gw_log_err("no memory for a replay copy");
	} else {
		/* oldest popped first: those are the steps replayed first */
		size_t keep = popped < GW_REPLAY_CAP ? popped : GW_REPLAY_CAP;
		for (size_t j = 0; j < keep; j++) {
			size_t s = (h->head - popped + j) & MASK;
			h->rep[j] = (struct gw_replayed){
				.step = h->step[s], .loss = h->col[GW_COL_LOSS][s],
				.grad_norm = h->col[GW_COL_GRAD_NORM][s], .lr = h->col[GW_COL_LR][s],
				.valid = h->valid[s],
			};
		}
		h->nrep = keep;
		/* steps normally rise; keep the copy sorted for the binary search */
		for (size_t j = 1; j < keep; j++) {
			struct gw_replayed x = h->rep[j];
			size_t k = j;
			while (k > 0 && h->rep[k - 1].step > x.step) {
				h->rep[k] = h->rep[k - 1];
				k--;
			}
			h->rep[k] = x;
		}
	}
	int64_t T = h->step[(h->head - 1) & MASK];
	for (size_t j = 0; j < popped; j++)
		if (h->valid[(h->head - 1 - j) & MASK])
			valid_pop(h);
	h->head = (h->head - popped) & MASK;
	h->count -= popped;
	return T;
}

void gw_hist_push(struct gw_hist *h, const struct gw_rec *rec)
{
	size_t s = h->head;
	if (h->count == GW_RING_CAP) {
		/* the oldest record leaves; if valid, it is the oldest valid one */
		if (h->valid[s])
			h->vcount--;
		h->count--;
	}
	h->valid[s] = 0;
	for (int c = 0; c < GW_NROLES; c++)
		h->col[c][s] = gw_rec_has(rec, c) ? rec->v[c] : NAN;
	h->step[s] = rec->step;
	set_valid(h, s);
	h->head = (s + 1) & MASK;
	h->count++;
}

void gw_hist_merge_last(struct gw_hist *h, const struct gw_rec *rec)
{
	size_t s = (h->head - 1) & MASK;
	for (int c = 0; c < GW_NROLES; c++)
		if (gw_rec_has(rec, c))
			h->col[c][s] = rec->v[c];
	set_valid(h, s);
}

void gw_hist_end_replay(struct gw_hist *h)
{
	h->nrep = 0;
}

void gw_hist_free(struct gw_hist *h)
{
	free(h->rep);
	h->rep = NULL;
	h->nrep = 0;
}
