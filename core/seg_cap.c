/*
 * seg_cap: the per-run segment cap (seg_cap.h): a fixed table of the runs
 * that opened segments lately, each with its one-minute window on the
 * monotonic clock (a wall-clock step neither opens nor closes one).
 */
#include "seg_cap.h"

#include "clock.h"
#include "log.h"
#include "util.h"

#include <inttypes.h>
#include <string.h>

static struct gw_seg_cap_run *find(struct gw_seg_cap *c, const char *run, size_t len)
{
	for (size_t i = 0; i < SEG_CAP_RUNS; i++)
		if (c->r[i].run[0] && strlen(c->r[i].run) == len && memcmp(c->r[i].run, run, len) == 0)
			return &c->r[i];
	return NULL;
}

/* The window of s is over: say what it refused, open the next. */
static void roll(struct gw_seg_cap *c, struct gw_seg_cap_run *s, uint64_t now_ms)
{
	if (s->capped) {
		c->ncapped--;
		gw_log_warn("run %s: segment cap over: %" PRIu64 " line(s) that would have opened "
		            "more segments were rejected (segment_flood) in the last minute", s->run,
		            s->refused);
	}
	s->start = now_ms;
	s->opened = 0;
	s->capped = false;
	s->refused = 0;
}

void gw_seg_cap_opened(struct gw_seg_cap *c, const char *run, uint64_t now_ms)
{
	if (!c->per_min)
		return;
	size_t len = strlen(run);
	struct gw_seg_cap_run *s = find(c, run, len);
	if (!s) {
		/* a free slot, else the one whose window opened first */
		s = &c->r[0];
		for (size_t i = 0; i < SEG_CAP_RUNS && s->run[0]; i++)
			if (!c->r[i].run[0] || c->r[i].start < s->start)
				s = &c->r[i];
		if (s->capped)
			c->ncapped--;
		gw_strlcpy(s->run, run, sizeof(s->run));
		s->start = now_ms;
		s->opened = 0;
		s->capped = false;
		s->refused = 0;
	} else if (now_ms - s->start >= SEG_CAP_WINDOW_MS) {
		roll(c, s, now_ms);
	}
	if (++s->opened >= c->per_min && !s->capped) {
		s->capped = true;
		c->ncapped++;
		gw_log_warn("run %s: %u segments opened within a minute (limits.max_segments_per_minute):"
		            " lines that would open another are rejected (segment_flood) for the rest "
		            "of the minute; lines that go on are taken", s->run, s->opened);
	}
}

bool gw_seg_cap_capped(struct gw_seg_cap *c, const char *run, size_t len)
{
	if (!c->ncapped)
		return false;
	struct gw_seg_cap_run *s = find(c, run, len);
	if (!s || !s->capped)
		return false;
	uint64_t now_ms = gw_mono_ms();
	if (now_ms - s->start >= SEG_CAP_WINDOW_MS) {
		roll(c, s, now_ms);
		return false;
	}
	return true;
}

void gw_seg_cap_refused(struct gw_seg_cap *c, const char *run, size_t len)
{
	struct gw_seg_cap_run *s = find(c, run, len);
	if (s)
		s->refused++;
}
