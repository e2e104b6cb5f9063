/*
 * resume_check: compare a resume manifest with the checkpoint it restarts
 * from (see resume_check.c).  Pure; shared by the resume_mismatch detector
 * and the daemon's resume gate.
 */
#ifndef GW_RESUME_CHECK_H
#define GW_RESUME_CHECK_H

#include <jansson.h>

/* Differences between `ckpt` (checkpoint_saved attributes, or NULL when the
 * run recorded none) and `live` (resumed attributes / a live manifest), as a
 * new JSON array of {kind, field, checkpoint, live, message}; kind is
 * "optimizer", "params", "state" or "hparams".  Empty when they match. */
json_t *gw_resume_diff(const json_t *ckpt, const json_t *live);

/* Likely cause and what to check for a difference kind. */
const char *gw_resume_cause(const char *kind);
const char *gw_resume_action(const char *kind);

#endif
