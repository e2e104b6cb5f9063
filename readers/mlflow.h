/*
 * mlflow: an MLflow run directory of the local file store
 * (mlruns/<experiment>/<run>/) as gradwatch NDJSON, for `gradwatch replay
 * DIR` and `gradwatch convert DIR`.
 *
 * MLflow keeps each metric in a file of its own, metrics/<name> (a name
 * with '/' in subfolders: metrics/train/loss), one line per value:
 * "<timestamp ms> <value> <step>".  The values of all files are put in time
 * order (then step, then file order) and gathered into points: consecutive
 * values of one step make one point, and a name that comes again within the
 * step starts the next point (a run that resumed logs its steps again,
 * later).  A point's ts is its first value's timestamp; its fields are the
 * metric names, which the alias table maps to roles when the NDJSON is read
 * (train/loss, grad_norm, lr, ...).  The run is `run` when given, else the
 * name MLflow shows (tags/mlflow.runName, or meta.yaml's run_name), else
 * `fallback`.  Part of the readers, but not a gw_reader format: it reads a
 * directory, not a byte stream.
 *
 * Everything is read into memory (the run's metric history: some 40 bytes
 * per value).  Blocks on the files.
 */
#ifndef GW_MLFLOW_H
#define GW_MLFLOW_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* A line of a metric file that is not "<timestamp> <value> <step>":
 * `file` (the metric file's path), its 1-based line, and why. */
typedef void (*gw_mlflow_err_fn)(void *data, const char *file, uint64_t line, const char *msg);

/* Whether `dir` is an MLflow run directory (it has a metrics/ folder). */
int gw_mlflow_is_run(const char *dir);

/* Append the run at `dir` to `out` as NDJSON lines, one per point, in time
 * order.  Returns 0; -ENOENT when dir has no metrics/ folder; -ENOMEM;
 * another negative errno for a file that cannot be read (message in err).
 * Bad lines go to on_err (may be NULL) and are skipped.  run, fallback:
 * valid run names (gw_wire_check_run), run may be NULL. */
int gw_mlflow_ndjson(const char *dir, const char *run, const char *fallback, struct gw_buf *out,
                     gw_mlflow_err_fn on_err, void *data, char *err, size_t errlen);

#endif
