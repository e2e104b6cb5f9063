/*
 * The detector registry (the order detectors run in) and the formatting
 * helpers detectors share for their summaries.
 */
#include "detector.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

extern const struct gw_detector gw_det_nonfinite;
extern const struct gw_detector gw_det_resume_mismatch;
extern const struct gw_detector gw_det_lr_schedule;
extern const struct gw_detector gw_det_optimizer_reset;
extern const struct gw_detector gw_det_resume_regression;
extern const struct gw_detector gw_det_loss_spike;
extern const struct gw_detector gw_det_grad_explosion;
extern const struct gw_detector gw_det_stall;

/* The order matters where detectors defer to each other within a line:
 * resume evidence first (events, LR, optimizer state, level), then the
 * generic spike rules, which stay quiet about what a resume rule explained. */
const struct gw_detector *const gw_det_registry[] = {
	&gw_det_nonfinite,
	&gw_det_resume_mismatch,
	&gw_det_lr_schedule,
	&gw_det_optimizer_reset,
	&gw_det_resume_regression,
	&gw_det_loss_spike,
	&gw_det_grad_explosion,
	&gw_det_stall,
	NULL,
};

int gw_det_index(const char *name)
{
	for (int i = 0; gw_det_registry[i]; i++)
		if (strcmp(gw_det_registry[i]->name, name) == 0)
			return i;
	return -1;
}

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

json_t *gw_det_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

const char *gw_det_fmt_step(char *buf, size_t size, int64_t step)
{
	char raw[32];
	int n = snprintf(raw, sizeof(raw), "%" PRId64, step < 0 ? -step : step);
	size_t o = 0;
	if (step < 0 && o + 1 < size)
		buf[o++] = '-';
	for (int i = 0; i < n && o + 1 < size; i++) {
		if (i && (n - i) % 3 == 0 && o + 1 < size)
			buf[o++] = ',';
		if (o + 1 < size)
			buf[o++] = raw[i];
	}
	buf[o] = '\0';
	return buf;
}
