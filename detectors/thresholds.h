/*
 * Every detection threshold, in one place, with the reason for its value.
 *
 * GW_THRESHOLDS is an X-macro list: X(name, default, reason).  It expands to
 * the fields of struct gw_thresholds (all doubles), to the table that
 * `gradwatch thresholds` prints, and to the names the configuration accepts
 * ("thresholds": {"name": value} globally or per run glob, see
 * docs/configuration.md).  docs/detectors.md explains each detector's use of
 * them; the reasons here are the short form.  Values were tuned on
 * ../shared/corpus/dev and checked on ../shared/realworld, never on file or
 * run names.
 */
#ifndef GW_THRESHOLDS_H
#define GW_THRESHOLDS_H

#include <stddef.h>

#define GW_THRESHOLDS(X) \
	/* segmentation (engine) */ \
	X(gap_min_seconds, 60.0, \
	  "a wall-clock gap opens a new segment only if it is at least this long: " \
	  "restarts take minutes (scheduler, container, checkpoint load), " \
	  "a slow step or a short eval pause does not") \
	X(gap_factor, 30.0, \
	  "... and at least this many times the run's typical step interval, so " \
	  "runs with slow steps (minutes per step) are not split by normal jitter") \
	/* nonfinite */ \
	X(nonfinite_quiet_steps, 50.0, \
	  "a NaN/Inf incident is over after this many finite steps in a row; a new " \
	  "non-finite value after that is a new incident")

struct gw_thresholds {
#define GW_TH_FIELD(name, def, reason) double name;
	GW_THRESHOLDS(GW_TH_FIELD)
#undef GW_TH_FIELD
};

struct gw_threshold_info {
	const char *name;
	double def;
	const char *reason;
	size_t offset;
};

/* The table, NULL-name terminated. */
extern const struct gw_threshold_info gw_threshold_table[];

void gw_thresholds_default(struct gw_thresholds *t);

/* Set one threshold by name; -ENOENT if there is no such threshold,
 * -EINVAL if the value is not finite. */
int gw_thresholds_set(struct gw_thresholds *t, const char *name, double v);

#endif
