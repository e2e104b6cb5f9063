/*
 * The registry: which detectors exist, the order they run in on a line, and
 * the precedence between them (registry.c).  The engine reads both; the
 * daemon reads the names (configuration, counters, /metrics).
 */
#ifndef GW_REGISTRY_H
#define GW_REGISTRY_H

#include "detector.h"

/* Most detectors a registry may hold. */
#define GW_DET_MAX 16

/* NULL-terminated, in run order. */
extern const struct gw_detector *const gw_det_registry[];

/* Index of a detector in the registry by name, or -1. */
int gw_det_index(const char *name);

/* When a verdict of `loser` is dropped because of `winner`'s verdicts. */
enum gw_prec_scope {
	/* the winner reported a warning or critical verdict in this segment,
	 * and the line is within post_max metric lines of its restart */
	GW_PREC_SAME_RESTART,
	/* the winner gave a verdict (reported or itself dropped) within the
	 * last mr_pre + mr_gap + mr_post valid records: the windows the
	 * mid-run rule compares */
	GW_PREC_MIDRUN_WINDOWS,
};

/* A precedence rule: in `scope`, verdicts of `loser` (only those whose
 * rule is `loser_rule`, when not NULL) are dropped. */
struct gw_det_precedence {
	const char *winner;
	const char *loser;
	const char *loser_rule;
	enum gw_prec_scope scope;
};

/* The rules, terminated by a NULL winner. */
extern const struct gw_det_precedence gw_det_precedence[];

#endif
