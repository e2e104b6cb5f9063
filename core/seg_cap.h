/*
 * seg_cap: the daemon's cap on the segments one run may open in a minute
 * (limits.max_segments_per_minute).  A run that rewinds again and again
 * (a loop re-sending the same steps, a restart storm) is one incident,
 * not 50,000 segments: once a run has opened that many in its current
 * minute, its lines that would open another are rejected (segment_flood)
 * until the minute is over; lines that go on are taken.  The runs are
 * tracked in a small table (the SEG_CAP_RUNS that opened segments most
 * recently), so the check costs one integer test on a line of a run that
 * is not capped.  Loop thread only; off in a replay.
 */
#ifndef GW_SEG_CAP_H
#define GW_SEG_CAP_H

#include "wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEG_CAP_RUNS 32
#define SEG_CAP_WINDOW_MS 60000

struct gw_seg_cap_run {
	char run[GW_WIRE_RUN_MAX + 1];  /* "" : a free slot */
	uint64_t start;                 /* gw_mono_ms() the window opened */
	unsigned opened;                /* segments opened in the window */
	bool capped;
	uint64_t refused;               /* lines rejected in the window */
};

struct gw_seg_cap {
	unsigned per_min;               /* 0: no cap */
	unsigned ncapped;               /* slots capped (0: nothing to look up) */
	struct gw_seg_cap_run r[SEG_CAP_RUNS];
};

/* A run opened a segment (not its first) at now_ms. */
void gw_seg_cap_opened(struct gw_seg_cap *c, const char *run, uint64_t now_ms);

/* Is run[0..len) capped now, so that a line that would open a segment is
 * to be rejected?  (Its window over: no longer, and what it refused is
 * logged.)  It reads the clock only for a run that is capped: a line of
 * any other costs the one integer test.  gw_seg_cap_refused counts such a
 * rejection for that line. */
bool gw_seg_cap_capped(struct gw_seg_cap *c, const char *run, size_t len);
void gw_seg_cap_refused(struct gw_seg_cap *c, const char *run, size_t len);

#endif
