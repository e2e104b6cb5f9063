/*
 * Test fixture for the detector engine's unit tests (test_engine.c,
 * test_engine_alerts.c, test_detector.c): a real engine made with the
 * default thresholds (some detectors off, per-run overrides), hooks that
 * keep the segments and alerts it reports, and one line fed as a record
 * (metrics: rec; an event: event).
 */
#ifndef GW_TEST_ENGINEFIX_H
#define GW_TEST_ENGINEFIX_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "engine_opts.h"
#include "registry.h"

struct seen {
	int segs;
	enum gw_seg_reason reason[16];
	int64_t restart[16];
	int alerts;
	char det[16][32];
	int kind[16];
	int64_t step[16];
	char id[16][24];
	char summary[16][160];
};

static inline void on_seg(void *d, const struct gw_segment_info *si)
{
	struct seen *s = d;
	if (s->segs < 16) {
		s->reason[s->segs] = si->reason;
		s->restart[s->segs] = si->restart_step;
	}
	s->segs++;
}

static inline void on_alert(void *d, const struct gw_alert *a)
{
	struct seen *s = d;
	if (s->alerts < 16) {
		snprintf(s->det[s->alerts], 32, "%s", a->detector);
		s->kind[s->alerts] = a->kind;
		s->step[s->alerts] = a->step;
		memcpy(s->id[s->alerts], a->id, 24);
		snprintf(s->summary[s->alerts], sizeof(s->summary[0]), "%s", a->summary ? a->summary : "");
	}
	s->alerts++;
}

static inline struct gw_engine *mk_off(struct seen *s, const struct gw_th_override *ov, size_t nov,
                                        const char *off)
{
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
	if (off)
		o.disabled = 1ull << gw_det_index(off);
	o.overrides = ov;
	o.n_overrides = nov;
	struct gw_engine_hooks h = {.data = s, .on_alert = on_alert, .on_segment = on_seg};
	return gw_engine_new(&o, &h);
}

static inline struct gw_engine *mk(struct seen *s, const struct gw_th_override *ov, size_t nov)
{
	return mk_off(s, ov, nov, NULL);
}

/* Alerts of a detector, of one kind. */
static inline int alerts_of(const struct seen *s, const char *det, enum gw_alert_kind kind)
{
	int n = 0;
	for (int i = 0; i < s->alerts && i < 16; i++)
		n += strcmp(s->det[i], det) == 0 && s->kind[i] == (int)kind;
	return n;
}

/* Alerts of a detector that opened an incident. */
static inline int opened(const struct seen *s, const char *det)
{
	return alerts_of(s, det, GW_ALERT_OPEN);
}

static inline void rec(struct gw_engine *e, const char *run, int64_t step, double ts, double loss,
                       double gn, uint64_t line)
{
	struct gw_rec r = {.run = run, .run_len = strlen(run), .step = step, .ts = ts,
	                   .present = 1u << GW_ROLE_LOSS | 1u << GW_ROLE_GRAD_NORM};
	r.v[GW_ROLE_LOSS] = loss;
	r.v[GW_ROLE_GRAD_NORM] = gn;
	ck_assert_int_eq(gw_engine_feed(e, &r, line, NAN, NULL), 0);
}

/* An event line as a record (attrs: NULL or a JSON object it borrows). */
static inline struct gw_rec event(const char *run, int64_t step, const char *name, json_t *attrs)
{
	struct gw_rec r = {.run = run, .run_len = strlen(run), .step = step, .ts = NAN,
	                   .event = name, .attrs = attrs};
	return r;
}

#endif
