/*
 * The formatting helpers detectors use for summaries and evidence (see
 * detector.h): numbers, steps, percentages, and non-finite numbers as JSON
 * null.
 */
#include "detector.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

const char *gw_det_fmt_num(char *buf, size_t size, double v)
{
	if (isnan(v))
		snprintf(buf, size, "NaN");
	else if (isinf(v))
		snprintf(buf, size, v > 0 ? "Infinity" : "-Infinity");
	else if (v != 0 && (fabs(v) < 1e-2 || fabs(v) >= 1e6))
		snprintf(buf, size, "%.2e", v);
	else if (fabs(v) >= 1000)
		snprintf(buf, size, "%.0f", v);
	else
		snprintf(buf, size, "%.3g", v);
	return buf;
}

const char *gw_det_fmt_pct(char *buf, size_t size, double logratio)
{
	snprintf(buf, size, "%+.0f%%", (exp(logratio) - 1) * 100);
	return buf;
}

