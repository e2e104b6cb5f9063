/*
 * follow_set: tail the log files a training job already writes, in any format
 * that can be read while it grows (readers/: gradwatch NDJSON, Megatron,
 * llm.c, nanoGPT, ms-swift stdout and logging.jsonl, TensorBoard event
 * files; sniffed from the content or forced with "format").
 *
 * Each followed file has a uv_fs_poll_t that stats its path every poll_ms
 * and one uv_fs_t request at a time (open, fstat, read: all uv_fs_* on the
 * thread pool, so the loop never waits for the disk).  Whenever the stat
 * changes, the file is read from the position reached so far up to its end,
 * in 64 KiB chunks, into the record path as an ingest source read through
 * a log reader (ingest.h; transport "follow").  Line numbers are the file's own, so
 * an alert points into the file.
 *
 *   growth      read from the position to the end;
 *   truncation  (size below the position, as copytruncate does: the open
 *               file's size, asked again, since the poll's stat may be
 *               older than the reads after it) read again from byte 0,
 *               line 1; a partial line is dropped;
 *   rotation    (the path now names another inode) read the old file to
 *               its end, finish a last unterminated line, close it (its
 *               run ended: "file_rotated"), then read the new file from
 *               byte 0;
 *   gone        (the path disappeared) read the file to its end, finish a
 *               last line, close it (its run ended: "file_closed"), then
 *               wait as for a missing path;
 *   missing     wait until the path exists (a directory: until a file
 *               takes its place).
 *
 * Position: after each chunk the file's (device, inode, byte offset of the
 * end of its last complete line, line number, and where the reader stands
 * in the file's from-scratch runs NAME, NAME#2, ...) is queued with
 * gw_store_put_meta under key "follow:" + absolute path, between
 * gw_store_hold()/gw_store_release() together with the records of that
 * chunk, so the database always holds exactly the lines its stored position
 * covers.  At start the stored position is used when the file is still the
 * same inode and at least that long; otherwise (rotated or truncated while
 * the daemon was down) the file is read from its start.  Either way, and
 * on a truncation or rotation seen live, the new reader continues the run
 * naming where the old one (or the stored position) left it, so the runs
 * are named as `gradwatch replay` names them in the whole stream.  The tail of a file
 * that was rotated away while the daemon was down is not read.
 *
 * Back-pressure: when the store's queue is over its limit, reading pauses
 * until it drains, as for stream connections.
 *
 * Run: points that name no run are run "run" of the entry, else named
 * after the file as `gradwatch replay` names them (gw_input_run_name:
 * train.log -> "train"), so two followed logs never share a run.
 *
 * This file is the set of followed files: the configuration, the stored
 * positions, start and stop (follow.h); one file's life (open, read,
 * rotation, truncation) is follow.c's, beside it through follow_impl.h.
 */
#include "follow_impl.h"

#include "config.h"
#include "input.h"
#include "log.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- configuration ------------------------------------------------------------ */

int gw_follow_validate(const json_t *follow, char *err, size_t errlen)
{
	size_t i;
	json_t *e;
	json_array_foreach(follow, i, e) {
		const char *key;
		json_t *v;
		if (!json_is_object(e)) {
			snprintf(err, errlen, "follow[%zu] must be an object {\"path\": FILE, \"run\": NAME}", i);
			return -EINVAL;
		}
		json_object_foreach(e, key, v) {
			if (strcmp(key, "path") && strcmp(key, "run") && strcmp(key, "poll_ms") &&
			    strcmp(key, "format")) {
				snprintf(err, errlen, "follow[%zu]: unknown key \"%s\" (path, run, format, poll_ms)",
				         i, key);
				return -EINVAL;
			}
		}
		json_t *fmt = json_object_get(e, "format");
		const struct gw_reader_format *rf = json_is_string(fmt)
		                                    ? gw_reader_format_find(json_string_value(fmt)) : NULL;
		if (fmt && (!rf || !(rf->flags & GW_RDF_STREAM))) {
			snprintf(err, errlen, "follow[%zu].format: %s", i,
			         !json_is_string(fmt) ? "must be a format name (gradwatch formats)"
			         : !rf ? "no such format (gradwatch formats lists them)"
			               : "that format is rewritten whole by its writer and cannot be followed; "
			                 "replay it instead");
			return -EINVAL;
		}
		const char *path = json_string_value(json_object_get(e, "path"));
		if (!path || !*path) {
			snprintf(err, errlen, "follow[%zu].path (the file to follow) is required", i);
			return -EINVAL;
		}
		json_t *run = json_object_get(e, "run");
		char why[128];
		if (run && (!json_is_string(run) ||
		            gw_wire_check_run(json_string_value(run), json_string_length(run), why,
		                              sizeof(why)) < 0)) {
			snprintf(err, errlen, "follow[%zu].run: %s", i,
			         json_is_string(run) ? why : "must be a string");
			return -EINVAL;
		}
		json_t *pm = json_object_get(e, "poll_ms");
		if (pm && (!json_is_integer(pm) || json_integer_value(pm) < 10 ||
		           json_integer_value(pm) > 60000)) {
			snprintf(err, errlen, "follow[%zu].poll_ms must be an integer from 10 to 60000", i);
			return -EINVAL;
		}
		for (size_t k = 0; k < i; k++) {
			const char *p = json_string_value(json_object_get(json_array_get(follow, k), "path"));
			if (p && strcmp(p, path) == 0) {
				snprintf(err, errlen, "follow[%zu]: \"%s\" is already followed (follow[%zu])", i,
				         path, k);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static char *absolute(const char *path)
{
	char *out = NULL;
	if (path[0] == '/')
		return strdup(path);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)) || asprintf(&out, "%s/%s", cwd, path) < 0)
		return NULL;
	return out;
}

/* The position an earlier daemon stored for f, if any. */
static void load_saved(struct ffile *f)
{
	char *val = NULL;
	int rc = gw_store_read_meta(f->fw->o.cfg->db_path, f->key, &val);
	if (rc < 0 || !val) {
		if (rc < 0)
			gw_log_err("follow %s: the stored position cannot be read (%s); reading the "
			           "file from its start", f->path, strerror(-rc));
		return;
	}
	json_t *j = json_loads(val, 0, NULL);
	json_int_t dev, ino, off, line, no = 0, first = 0, last = 0, label = -1;
	int any = 0;
	if (j && json_unpack(j, "{s:I, s:I, s:I, s:I}", "dev", &dev, "ino", &ino, "offset", &off,
	                     "line", &line) == 0 && off >= 0 && line >= 0) {
		f->have_saved = true;
		f->s_dev = (uint64_t)dev;
		f->s_ino = (uint64_t)ino;
		f->s_off = (uint64_t)off;
		f->s_line = (uint64_t)line;
		/* the run naming at that position (stored since it is kept; an
		 * older daemon's position has none) */
		if (json_unpack(j, "{s:{s:I, s:b, s:I, s:I, s?I}}", "runs", "no", &no, "any", &any,
		                "first", &first, "last", &last, "label", &label) == 0 && no >= 1 &&
		    no <= UINT_MAX) {
			f->have_runs = true;
			f->runs = (struct gw_reader_runs){
				.no = (unsigned)no, .any = any, .first = first, .last = last,
				.label = label >= 0 && label <= GW_WIRE_RANK_MAX ? label : -1,
			};
		}
	} else {
		gw_log_warn("follow %s: ignoring a stored position that does not parse: %s", f->path, val);
	}
	json_decref(j);
	free(val);
}

/* ---- start, stop ------------------------------------------------------------------ */

int gw_follow_start(const struct gw_follow_opts *o, struct gw_follow **out, char *err,
                    size_t errlen)
{
	*out = NULL;
	json_t *arr = o->cfg->follow;
	int rc = gw_follow_validate(arr, err, errlen);
	if (rc < 0 || json_array_size(arr) == 0)
		return rc;
	struct gw_follow *fw = calloc(1, sizeof(*fw));
	if (!fw || !(fw->files = calloc(json_array_size(arr), sizeof(*fw->files)))) {
		free(fw);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fw->o = *o;
	*out = fw;
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e) {
		struct ffile *f = calloc(1, sizeof(*f));
		if (!f) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		fw->files[fw->n++] = f;
		f->fw = fw;
		f->fd = -1;
		f->path = absolute(json_string_value(json_object_get(e, "path")));
		const char *run = json_string_value(json_object_get(e, "run"));
		char by_name[GW_WIRE_RUN_MAX + 1];
		if (!run && f->path) {
			gw_input_run_name(f->path, by_name, sizeof(by_name));
			run = by_name;
		}
		f->run = run ? strdup(run) : NULL;
		json_t *pm = json_object_get(e, "poll_ms");
		f->poll_ms = pm ? (unsigned)json_integer_value(pm) : GW_FOLLOW_POLL_MS;
		f->paused.resume = gw__ffile_unpause;
		gw_ingest_src_init(&f->src, o->ingest, GW_TR_FOLLOW, 0);
		const char *format = json_string_value(json_object_get(e, "format"));
		f->format = format ? strdup(format) : NULL;
		if (!f->path || (run && !f->run) || asprintf(&f->key, "follow:%s", f->path) < 0) {
			f->key = NULL;
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		load_saved(f);
		uv_fs_poll_init(o->loop, &f->poll);
		f->poll_inited = true;
		f->poll.data = f;
		rc = uv_fs_poll_start(&f->poll, gw__ffile_on_poll, f->path, f->poll_ms);
		if (rc < 0) {
			snprintf(err, errlen, "follow %s: %s", f->path, uv_strerror(rc));
			return rc;
		}
		gw_log_info("following %s as run %s", f->path, f->run);
		gw__ffile_open(f);
	}
	return 0;
}

void gw_follow_stop(struct gw_follow *fw)
{
	for (size_t i = 0; fw && i < fw->n; i++) {
		struct ffile *f = fw->files[i];
		if (f->stopped)
			continue;
		f->stopped = true;
		gw_ingest_unpause(fw->o.ingest, &f->paused);
		if (!f->poll_inited)
			continue;
		if (uv_is_active((uv_handle_t *)&f->poll))
			uv_fs_poll_stop(&f->poll);
		if (!uv_is_closing((uv_handle_t *)&f->poll))
			uv_close((uv_handle_t *)&f->poll, NULL);
	}
}

void gw_follow_free(struct gw_follow *fw)
{
	if (!fw)
		return;
	for (size_t i = 0; i < fw->n; i++) {
		struct ffile *f = fw->files[i];
		gw__ffile_close_fd(f);
		gw_ingest_src_deinit(&f->src);
		free(f->path);
		free(f->run);
		free(f->format);
		free(f->key);
		free(f);
	}
	free(fw->files);
	free(fw);
}
