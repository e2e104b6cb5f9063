/*
 * The history of a run (see hist.h).  The timeline is column arrays
 * indexed by slot & MASK: head is the slot of the next record, count how
 * many are held, so the newest is at head - 1.  The valid ring is the
 * slots of the valid records, vhead and vcount the same way.  It follows
 * the timeline: a record entering it, leaving it at the old end (ring
 * full), popping at a restart or changing validity when a later line of
 * the same step merges into it updates the valid ring in the same step,
 * so the two always hold the same records.  A valid window is the
 * timeline's spans when its first and last records are as many slots
 * apart as it is long (every record between them valid), else a gather.
 *
 * Bounds (gw_hist_valid_bound, gw_hist_recent_bound): a small cache, each
 * entry a window, a side, a value and the change count of its ring when
 * the value was last checked.  A record added, removed at the new end (a
 * restart) or changed (a merge) counts one change of that ring; a window
 * full then and now that saw j changes since holds at most j values that
 * were not in it and misses at most j that were (a record evicted at the
 * old end was never in a window that is full after it), so its order
 * statistic of rank i lies between ranks i - j and i + j of the old one,
 * and a value J ranks below the lower middle (above the upper middle)
 * stays a bound for J changes.  Then the next call counts how far from the
 * middle the value stands now (gw_kern_count), and keeps it for that many
 * changes if that is n / 16 to n / 4, or selects a new one n / 8 ranks
 * from the middle: one pass over the window every n / 16 to n / 4
 * records, a selection when the series moved.
 */
#include "hist.h"
#include "arena.h"
#include "kern.h"
#include "log.h"
#include "robust.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#define MASK (GW_RING_CAP - 1)

_Static_assert(GW_RING_CAP <= GW_WIN_MAX, "robust.h takes windows of the whole ring");
_Static_assert(GW_RING_CAP <= 65536, "the valid ring holds slots as unsigned short");
#define NBOUNDS GW_HIST_BOUNDS

enum { B_VALID = 1, B_RECENT = 2 };

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

/* The timeline column a valid-record column reads. */
static const double *vcolumn(const struct gw_hist *h, enum gw_vcol col)
{
	switch (col) {
	case GW_V_LOSS: return h->col[GW_COL_LOSS];
	case GW_V_GRAD_NORM: return h->col[GW_COL_GRAD_NORM];
	case GW_V_LOG_LOSS: return h->logs[0];
	case GW_V_LOG_GRAD_NORM: return h->logs[1];
	default: return h->col[GW_COL_LR];
	}
}

/* How many valid records the window (count, skip) holds, and the valid
 * ring's position of its oldest. */
static size_t valid_range(const struct gw_hist *h, size_t count, size_t skip, size_t *first)
{
	if (skip >= h->vcount)
		return 0;
	size_t n = h->vcount - skip < count ? h->vcount - skip : count;
	*first = (h->vhead - skip - n) & MASK;
	return n;
}

struct gw_win gw_hist_valid(const struct gw_hist *h, enum gw_vcol col, size_t count, size_t skip)
{
	size_t first, n = valid_range(h, count, skip, &first);
	if (!n)
		return (struct gw_win){0};
	size_t s0 = h->vslot[first], s1 = h->vslot[(first + n - 1) & MASK];
	if (((s1 - s0) & MASK) == n - 1)
		return span(vcolumn(h, col), s0, n);   /* no invalid record between */
	struct gw_win w = {.col = vcolumn(h, col), .ia = &h->vslot[first]};
	if (first + n <= GW_RING_CAP) {
		w.na = n;
	} else {
		w.na = GW_RING_CAP - first;
		w.ib = &h->vslot[0];
		w.nb = n - w.na;
	}
	return w;
}

int64_t gw_hist_valid_step(const struct gw_hist *h, size_t count, size_t skip, size_t i)
{
	size_t first, n = valid_range(h, count, skip, &first);
	if (i >= n)
		return -1;
	return h->step[h->vslot[(first + i) & MASK]];
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
	h->vchanges++;
}

/* The valid ring's entry `at` names slot s; the slot's logs. */
static void valid_put(struct gw_hist *h, size_t at, size_t s)
{
	h->vslot[at] = (unsigned short)s;
	h->logs[0][s] = log(h->col[GW_COL_LOSS][s]);
	h->logs[1][s] = log(h->col[GW_COL_GRAD_NORM][s]);
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
		h->vchanges++;
	} else if (now) {
		valid_put(h, (h->vhead - 1) & MASK, s);
		h->vchanges++;
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
	if (!h->rep && !(h->rep = h->arena ? gw_arena_alloc(h->arena, sizeof(*h->rep) * GW_REPLAY_CAP)
	                                   : malloc(sizeof(*h->rep) * GW_REPLAY_CAP))) {
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
	h->tchanges += popped;
	return T;
}

void gw_hist_push(struct gw_hist *h, const struct gw_rec *rec)
{
	size_t s = h->head;
	h->tchanges++;
	if (h->count == GW_RING_CAP) {
		/* the oldest record leaves; if valid, it is the oldest valid one */
		if (h->valid[s])
			h->vcount--;   /* no change to a full window (hist.c "Bounds") */
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
	h->tchanges++;
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
	if (!h->arena)
		free(h->rep);
	h->rep = NULL;
	h->nrep = 0;
}

/* ---- bounds ------------------------------------------------------------------ */

static bool kept(double v, bool positive)
{
	return positive ? v > 0 && v <= DBL_MAX : isfinite(v);
}

/* Select a new bound n / 8 ranks beyond the middle (below the lower
 * middle, side < 0; above the upper middle, side > 0) of the kept values
 * x[0..n): a bound for that many changes.  False with fewer than 3. */
static bool select_bound(double *x, size_t n, int side, uint64_t now, struct gw_hist_bound *b)
{
	b->lasts = 0;
	if (n < 3)
		return false;
	size_t J = n / 8 ? n / 8 : 1;
	b->v = gw_order_stat(x, n, side < 0 ? (n - 1) / 2 - J : n / 2 + J);
	b->lasts = (uint32_t)J;
	b->at = now;
	return true;
}

/* Renew a bound that is too old at change count `now`.  Its old value is
 * counted first (one pass: gw_kern_count, on the spans in place, a
 * gathered window copied): lo <= s[c] when c values are below it, a bound
 * of the lower middle s[(n-1)/2] for (n-1)/2 - c changes (hi mirrored); it
 * stays if that is n / 16 to n / 4 changes (at least 1 to 3), else a new
 * one is selected. */
static bool renew(const struct gw_win *w, bool positive, int side, uint64_t now,
                  struct gw_hist_bound *b)
{
	double x[GW_RING_CAP];
	struct gw_win plain = *w;
	if (w->col) {
		gw_win_copy(w, x);
		plain = (struct gw_win){.a = x, .na = gw_win_len(w)};
	}
	if (b->lasts) {
		size_t n, c = gw_kern_count(plain.a, plain.na, plain.b, plain.nb, b->v, side, positive, &n);
		size_t mid = side < 0 ? (n - 1) / 2 : n - 1 - n / 2;   /* ranks from the end */
		size_t least = n / 16 ? n / 16 : 1, most = n / 4 > 3 ? n / 4 : 3;
		if (n >= 3 && c < mid && mid - c >= least && mid - c <= most) {
			b->lasts = (uint32_t)(mid - c);
			b->at = now;
			return true;
		}
	}
	size_t n = 0;
	for (size_t i = 0; i < gw_win_len(&plain); i++) {
		double v = gw_win_at(&plain, i);
		if (kept(v, positive))
			x[n++] = v;   /* in place over a copied window: i >= n */
	}
	return select_bound(x, n, side, now, b);
}

/* The cached bound of window `key` at the ring's change count `changes`,
 * if still good; else false and *slot its slot (NBOUNDS: none yet).  The
 * cache is no part of what a reader sees: a const history updates it. */
static inline bool bound_cached(const struct gw_hist *h, uint32_t key, uint64_t changes,
                                size_t *slot, double *out)
{
	/* rules ask for the same windows in the same order line after line:
	 * the slot after the last one asked for is the likely one */
	struct gw_hist_bounds *c = (struct gw_hist_bounds *)&h->bounds;
	size_t i = c->hint < NBOUNDS && c->key[c->hint] == key ? c->hint : 0;
	while (i < NBOUNDS && c->key[i] != key)
		i++;
	*slot = i;
	if (i == NBOUNDS)
		return false;
	const struct gw_hist_bound *b = &c->b[i];
	if (!b->lasts || changes - b->at > b->lasts)
		return false;
	c->hint = (unsigned)(i + 1);
	*out = b->v;
	return true;
}

/* Renew the bound of window `key` in slot i (a free one, or the oldest
 * when all are used, for a new key).  Out of line: the caller's path is
 * the cached one. */
static __attribute__((noinline)) bool bound_renew(const struct gw_hist *h, size_t i, uint32_t key,
                                                  const struct gw_win *w, uint64_t changes,
                                                  double *out)
{
	struct gw_hist_bounds *c = (struct gw_hist_bounds *)&h->bounds;
	if (i == NBOUNDS) {
		i = 0;
		while (i < NBOUNDS && c->key[i])
			i++;
		if (i == NBOUNDS)
			i = c->next++ % NBOUNDS;
		c->key[i] = key;
		c->b[i].lasts = 0;
	}
	c->hint = (unsigned)(i + 1);
	struct gw_hist_bound *b = &c->b[i];
	if (!renew(w, (key & 3) == B_RECENT, key & 4 ? 1 : -1, changes, b))
		return false;
	*out = b->v;
	return true;
}

/* A window and a side as a key (count and skip are at most GW_RING_CAP). */
static uint32_t bound_key(int kind, int col, int side, size_t count, size_t skip)
{
	return (uint32_t)kind | (side > 0 ? 4u : 0u) | (uint32_t)col << 3 | (uint32_t)count << 8 |
	       (uint32_t)skip << 20;
}

bool gw_hist_valid_bound(const struct gw_hist *h, enum gw_vcol col, size_t count, size_t skip,
                         int side, double *v)
{
	if (col == GW_V_LR || count > GW_RING_CAP || skip > GW_RING_CAP ||
	    h->vcount < skip + count)
		return false;
	uint32_t key = bound_key(B_VALID, col, side, count, skip);
	size_t slot;
	if (bound_cached(h, key, h->vchanges, &slot, v))
		return true;
	struct gw_win w = gw_hist_valid(h, col, count, skip);
	return bound_renew(h, slot, key, &w, h->vchanges, v);
}

bool gw_hist_recent_bound(const struct gw_hist *h, enum gw_col col, size_t count, size_t skip,
                          int side, double *v)
{
	if (count > GW_RING_CAP || skip > GW_RING_CAP || h->count < skip + count)
		return false;
	uint32_t key = bound_key(B_RECENT, col, side, count, skip);
	size_t slot;
	if (bound_cached(h, key, h->tchanges, &slot, v))
		return true;
	struct gw_win w = span(h->col[col], (h->head - skip - count) & MASK, count);
	return bound_renew(h, slot, key, &w, h->tchanges, v);
}
