/*
 * follow: tail the log files a training job already writes, in any format
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
 * (Some 720 lines: one file's life -- open, read, rotation, truncation,
 * the stored position and the run naming carried across them -- is one
 * state machine over one struct, driven by one uv_fs_t at a time.)
 */
#include "follow.h"

#include "daemon.h"
#include "engine.h"
#include "input.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define LOGGED_ERRORS 3

struct ffile {
	struct gw_daemon *d;
	char *path;              /* absolute */
	char *run;               /* run of lines without one, or NULL */
	char *format;            /* the reader format to use, or NULL: sniff */
	bool unreadable;         /* the reader gave up on this file: wait for another */
	bool undecided_logged;   /* "not recognised yet" was said for this reader */
	bool dir_logged;         /* the path is not a regular file, and that was said */
	char *key;               /* meta key */
	unsigned poll_ms;

	uv_fs_poll_t poll;
	bool poll_inited;
	uv_fs_t req;
	bool busy;               /* req in flight (or paused between reads) */
	bool changed;            /* the poll saw a change while busy */
	int st_status;           /* of the last poll: 0 or a libuv error */
	uv_stat_t st;            /* the last poll's stat of the path */

	uv_file fd;              /* -1 when no file is open */
	uint64_t dev, ino;
	uint64_t off;            /* next byte to read */
	uint64_t start_off;      /* where the source started reading (its byte 0) */
	uint64_t saved_line;     /* lines.lineno at the last stored position */
	bool draining;           /* rotated: read the old file to its end, then switch */
	bool waiting_logged;
	struct gw_ingest_src src;
	struct gw_paused paused;

	bool have_saved;         /* position stored by an earlier daemon */
	uint64_t s_dev, s_ino, s_off, s_line;
	bool have_runs;          /* the next reader continues the run naming from */
	struct gw_reader_runs runs;   /* this (stored, or the reader it replaces) */

	bool stopped;
	char buf[CHUNK];
};

struct gw_follow {
	struct ffile **files;
	size_t n;
};

static void do_open(struct ffile *f);
static void do_read(struct ffile *f);
static void process(struct ffile *f);

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
	int rc = gw_store_read_meta(f->d->cfg->db_path, f->key, &val);
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

/* ---- lines ---------------------------------------------------------------------- */

static void on_reject(struct gw_ingest_src *s, uint64_t lineno, const struct gw_wire_err *e)
{
	struct ffile *f = s->data;
	if (s->rejected <= LOGGED_ERRORS)
		gw_log_warn("follow %s:%" PRIu64 ": %s%s", f->path, lineno, e->msg,
		            s->rejected == LOGGED_ERRORS ? " (further errors of this file are counted, not logged)" : "");
}

/* Queue the position after the last complete line or record (caller holds
 * the store), with the lines it covers. */
static void save_position(struct ffile *f)
{
	uint64_t line = gw_ingest_src_lines(&f->src);
	if (line == f->saved_line)
		return;
	struct gw_reader_runs rs = {.no = 1, .label = -1};
	if (f->src.reader)
		gw_reader_get_runs(f->src.reader, &rs);
	char val[352];
	snprintf(val, sizeof(val),
	         "{\"dev\":%" PRIu64 ",\"ino\":%" PRIu64 ",\"offset\":%" PRIu64 ",\"line\":%" PRIu64
	         ",\"runs\":{\"no\":%u,\"any\":%s,\"first\":%" PRId64 ",\"last\":%" PRId64
	         ",\"label\":%" PRId64 "}}",
	         f->dev, f->ino, f->start_off + gw_ingest_src_consumed(&f->src), line, rs.no,
	         rs.any ? "true" : "false", rs.first, rs.last, rs.label);
	if (gw_store_put_meta(f->d->store, f->key, val))
		f->saved_line = line;
}

/* A fresh source from byte f->off (line `lineno`), read through a reader
 * that names the runs on from where the one it replaces (or the stored
 * position) stood: the file is one stream, whatever happened to it or to
 * the daemon in between. */
static void reset_lines(struct ffile *f, uint64_t lineno)
{
	if (f->src.reader) {
		gw_reader_get_runs(f->src.reader, &f->runs);
		f->have_runs = true;
	}
	gw_ingest_src_deinit(&f->src);
	gw_ingest_src_init(&f->src, &f->d->ingest, GW_TR_FOLLOW, lineno);
	f->src.default_run = f->run;
	f->src.on_reject = on_reject;
	f->src.data = f;
	f->saved_line = lineno;
	f->start_off = f->off;
	f->unreadable = false;
	f->undecided_logged = false;
	char err[256];
	if (gw_ingest_src_reader(&f->src, f->format, true, err, sizeof(err)) < 0) {
		gw_log_err("follow %s: %s", f->path, err);
		f->unreadable = true;
	} else if (f->have_runs) {
		gw_reader_set_runs(f->src.reader, &f->runs);
	}
}

/* The reader gave up on the file (not a format that can be followed, a
 * corrupt record): say why once, read no more of it until it is replaced
 * or truncated. */
static void give_up(struct ffile *f, int rc)
{
	if (f->unreadable)
		return;
	f->unreadable = true;
	const char *why = f->src.reader ? gw_reader_error(f->src.reader) : "";
	gw_log_err("follow %s: %s; waiting for the file to be replaced or truncated", f->path,
	           rc == -EPROTO && why[0] ? why : strerror(-rc));
}

/* ---- the file: open, fstat, read -------------------------------------------------- */

/* One operation chain ended: handle what the poll saw meanwhile. */
static void idle(struct ffile *f)
{
	f->busy = false;
	if (f->stopped || !f->changed)
		return;
	f->changed = false;
	process(f);
}

static void close_fd(struct ffile *f)
{
	if (f->fd >= 0) {
		uv_fs_t req;
		uv_fs_close(NULL, &req, f->fd, NULL);
		uv_fs_req_cleanup(&req);
		f->fd = -1;
	}
}

/* The open file is read to its end and left (rotated away, or its path
 * gone): a last line without its newline is still a line; the run it fed
 * has ended there, as far as anyone can tell (`why`: no silence alert
 * until a new file has a line); the file is closed. */
static void finish_file(struct ffile *f, const char *why)
{
	gw_store_hold(f->d->store);
	if (!f->unreadable)
		gw_ingest_src_finish(&f->src);
	gw_store_release(f->d->store);
	if (f->src.last_run[0])
		gw_engine_run_ended(f->d->ingest.engine, f->src.last_run, why, gw_wall_now());
	close_fd(f);
}

/* The path is gone (deleted, or renamed with nothing in its place) and
 * the file it named is read to its end: a last line without its newline
 * is still a line, the run it fed has ended ("file_closed": nothing of it
 * can be read any more, since the path is what is polled, so its silence
 * is no stall), and the file is closed (a deleted file's space is freed).
 * A file that takes the path later is read from its start, the runs named
 * on from where this one left them, as after a rotation. */
static void file_gone(struct ffile *f)
{
	finish_file(f, "file_closed");
	gw_log_info("follow %s: the path is gone and its file is read to its end (line %" PRIu64
	            "); closed, waiting for a file to take the path", f->path,
	            gw_ingest_src_lines(&f->src));
	idle(f);
}

static void on_read(uv_fs_t *req)
{
	struct ffile *f = req->data;
	ssize_t n = req->result;
	uv_fs_req_cleanup(req);
	if (n < 0) {
		/* reopened when the path changes next, not at once: a read
		 * that keeps failing must not spin */
		gw_log_warn("follow %s: read failed: %s; reopening it when it changes", f->path,
		            uv_strerror((int)n));
		/* reopened, the same file goes on after its last whole line (as
		 * after a restart), not from byte 0 (every line twice) */
		f->have_saved = true;
		f->s_dev = f->dev;
		f->s_ino = f->ino;
		f->s_off = f->start_off + gw_ingest_src_consumed(&f->src);
		f->s_line = gw_ingest_src_lines(&f->src);
		close_fd(f);
		reset_lines(f, 0);
		idle(f);
		return;
	}
	if (n == 0) {
		if (f->draining && !f->stopped) {
			/* the old file is read to its end; then the new file from
			 * byte 0 */
			finish_file(f, "file_rotated");
			gw_log_info("follow %s: finished the rotated file at line %" PRIu64
			            "; reading the new one from its start", f->path,
			            gw_ingest_src_lines(&f->src));
			f->draining = false;
			do_open(f);
			return;
		}
		if (f->st_status < 0 && !f->stopped) {
			file_gone(f);
			return;
		}
		/* all there is was read and no format is sure of it yet: the
		 * reader waits for more (a log may open with a long preamble), so
		 * say once that nothing is being ingested, and why */
		if (!f->unreadable && !f->undecided_logged && f->src.reader &&
		    !gw_reader_format(f->src.reader) && f->off > f->start_off) {
			f->undecided_logged = true;
			gw_log_warn("follow %s: %" PRIu64 " bytes, not recognised as a log format yet "
			            "(gradwatch formats lists them); nothing of it is ingested until one is "
			            "sure (decided by %d KiB at the latest), or name the format: "
			            "--input-format NAME after --follow, or \"format\" in the follow entry", f->path,
			            f->off - f->start_off, GW_READER_SNIFF_MAX / 1024);
		}
		idle(f);
		return;
	}
	gw_store_hold(f->d->store);
	int rc = f->unreadable ? 0 : gw_ingest_src_feed(&f->src, f->buf, (size_t)n);
	f->off += (uint64_t)n;
	if (rc >= 0 && f->undecided_logged && f->src.reader && gw_reader_format(f->src.reader)) {
		f->undecided_logged = false;   /* the warning said "yet": now it is */
		gw_log_info("follow %s: recognised as %s; reading it", f->path,
		            gw_reader_format(f->src.reader)->name);
	}
	if (rc < 0)
		give_up(f, rc);
	else if (!f->unreadable)
		save_position(f);
	gw_store_release(f->d->store);
	if (f->stopped) {
		idle(f);
		return;
	}
	do_read(f);
}

static void on_unpause(struct gw_paused *p)
{
	struct ffile *f = gw_container_of(p, struct ffile, paused);
	if (!f->stopped)
		do_read(f);
}

static void do_read(struct ffile *f)
{
	if (f->unreadable && !f->draining) {
		/* nothing more of this file is read (give_up); gone, it is
		 * closed all the same */
		if (f->st_status < 0 && !f->stopped)
			file_gone(f);
		else
			idle(f);
		return;
	}
	f->busy = true;
	if (gw_ingest_congested(&f->d->ingest)) {
		gw_ingest_pause(&f->d->ingest, &f->paused);
		return;
	}
	uv_buf_t b = uv_buf_init(f->buf, sizeof(f->buf));
	f->req.data = f;
	int rc = uv_fs_read(f->d->loop, &f->req, f->fd, &b, 1, (int64_t)f->off, on_read);
	if (rc < 0) {
		gw_log_warn("follow %s: cannot read: %s", f->path, uv_strerror(rc));
		idle(f);
	}
}

static void on_fstat(uv_fs_t *req)
{
	struct ffile *f = req->data;
	int rc = (int)req->result;
	uv_stat_t st = req->statbuf;
	uv_fs_req_cleanup(req);
	if (rc < 0) {
		gw_log_warn("follow %s: fstat failed: %s", f->path, uv_strerror(rc));
		close_fd(f);
		idle(f);
		return;
	}
	if ((st.st_mode & S_IFMT) != S_IFREG) {
		/* a directory, a pipe, a device: no size to follow, no offset to
		 * read at; said once, the path is looked at again when it changes */
		if (!f->dir_logged)
			gw_log_err("follow %s: is %s, not a regular file; waiting for a log file to "
			           "take its place", f->path,
			           (st.st_mode & S_IFMT) == S_IFDIR ? "a directory"
			           : (st.st_mode & S_IFMT) == S_IFIFO ? "a named pipe"
			           : (st.st_mode & S_IFMT) == S_IFSOCK ? "a socket" : "a device");
		f->dir_logged = true;
		close_fd(f);
		idle(f);
		return;
	}
	f->dir_logged = false;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->off = 0;
	uint64_t line = 0;
	if (f->have_saved) {
		if (f->s_dev == f->dev && f->s_ino == f->ino && f->s_off <= st.st_size) {
			f->off = f->s_off;
			line = f->s_line;
			gw_log_info("follow %s: continuing after line %" PRIu64 " (byte %" PRIu64 ")",
			            f->path, line, f->off);
		} else {
			gw_log_warn("follow %s: the file is not the one whose position was stored "
			            "(rotated or truncated while gradwatchd was down); reading it from its start",
			            f->path);
		}
		f->have_saved = false;
	} else {
		gw_log_info("follow %s: reading from its start", f->path);
	}
	reset_lines(f, line);
	do_read(f);
}

static void on_open(uv_fs_t *req)
{
	struct ffile *f = req->data;
	int fd = (int)req->result;
	uv_fs_req_cleanup(req);
	if (fd < 0) {
		if (!f->waiting_logged)
			gw_log_info("follow %s: %s; waiting for it", f->path, uv_strerror(fd));
		f->waiting_logged = true;
		idle(f);
		return;
	}
	f->waiting_logged = false;
	f->fd = fd;
	if (f->stopped) {
		idle(f);
		return;
	}
	int rc = uv_fs_fstat(f->d->loop, &f->req, f->fd, on_fstat);
	if (rc < 0) {
		close_fd(f);
		idle(f);
	}
}

static void do_open(struct ffile *f)
{
	f->busy = true;
	f->req.data = f;
	/* O_NONBLOCK: opening a named pipe would wait for a writer, holding a
	 * thread-pool thread and the daemon's stop; a regular file reads the
	 * same either way */
	int rc = uv_fs_open(f->d->loop, &f->req, f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0,
	                    on_open);
	if (rc < 0) {
		gw_log_warn("follow %s: cannot open: %s", f->path, uv_strerror(rc));
		idle(f);
	}
}

/* The open file's size, asked when the poll's stat was below the
 * position: shorter, it was truncated (copytruncate): read again from its
 * start; else the stat was only older than the reads since. */
static void on_size(uv_fs_t *req)
{
	struct ffile *f = req->data;
	int rc = (int)req->result;
	uint64_t size = req->statbuf.st_size;
	uv_fs_req_cleanup(req);
	if (f->stopped) {
		idle(f);
		return;
	}
	if (rc == 0 && size < f->off) {
		gw_log_warn("follow %s: truncated (%" PRIu64 " bytes, was read up to byte %" PRIu64
		            "); reading it again from its start", f->path, size, f->off);
		f->off = 0;
		reset_lines(f, 0);
	}
	do_read(f);
}

/* The path's stat changed (or a chain ended after it did): decide. */
static void process(struct ffile *f)
{
	if (f->fd < 0) {
		if (f->st_status == 0)
			do_open(f);
		return;
	}
	if (f->st_status < 0) {
		/* renamed away or deleted: read the open file to its end, then
		 * it is closed and its run ended (file_gone) */
		do_read(f);
		return;
	}
	if (f->st.st_ino != f->ino || f->st.st_dev != f->dev) {
		f->draining = true;
		do_read(f);
		return;
	}
	if (f->st.st_size < f->off) {
		/* the poll's stat may be older than what was read since it (the
		 * file grew while a read or a pause was going on): the open file
		 * says whether it really is shorter */
		f->busy = true;
		f->req.data = f;
		if (uv_fs_fstat(f->d->loop, &f->req, f->fd, on_size) == 0)
			return;
	}
	do_read(f);
}

static void on_poll(uv_fs_poll_t *h, int status, const uv_stat_t *prev, const uv_stat_t *curr)
{
	struct ffile *f = h->data;
	if (f->stopped)
		return;
	f->st_status = status;
	if (status == 0)
		f->st = *curr;
	if (f->busy) {
		f->changed = true;
		return;
	}
	process(f);
}

/* ---- start, stop ------------------------------------------------------------------ */

int gw_follow_start(struct gw_daemon *d, char *err, size_t errlen)
{
	json_t *arr = d->cfg->follow;
	int rc = gw_follow_validate(arr, err, errlen);
	if (rc < 0 || json_array_size(arr) == 0)
		return rc;
	struct gw_follow *fw = calloc(1, sizeof(*fw));
	if (!fw || !(fw->files = calloc(json_array_size(arr), sizeof(*fw->files)))) {
		free(fw);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	d->follow = fw;
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e) {
		struct ffile *f = calloc(1, sizeof(*f));
		if (!f) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		fw->files[fw->n++] = f;
		f->d = d;
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
		f->paused.resume = on_unpause;
		gw_ingest_src_init(&f->src, &d->ingest, GW_TR_FOLLOW, 0);
		const char *format = json_string_value(json_object_get(e, "format"));
		f->format = format ? strdup(format) : NULL;
		if (!f->path || (run && !f->run) || asprintf(&f->key, "follow:%s", f->path) < 0) {
			f->key = NULL;
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		load_saved(f);
		uv_fs_poll_init(d->loop, &f->poll);
		f->poll_inited = true;
		f->poll.data = f;
		rc = uv_fs_poll_start(&f->poll, on_poll, f->path, f->poll_ms);
		if (rc < 0) {
			snprintf(err, errlen, "follow %s: %s", f->path, uv_strerror(rc));
			return rc;
		}
		gw_log_info("following %s as run %s", f->path, f->run);
		do_open(f);
	}
	return 0;
}

void gw_follow_stop(struct gw_daemon *d)
{
	struct gw_follow *fw = d->follow;
	for (size_t i = 0; fw && i < fw->n; i++) {
		struct ffile *f = fw->files[i];
		if (f->stopped)
			continue;
		f->stopped = true;
		gw_ingest_unpause(&d->ingest, &f->paused);
		if (!f->poll_inited)
			continue;
		if (uv_is_active((uv_handle_t *)&f->poll))
			uv_fs_poll_stop(&f->poll);
		if (!uv_is_closing((uv_handle_t *)&f->poll))
			uv_close((uv_handle_t *)&f->poll, NULL);
	}
}

void gw_follow_free(struct gw_daemon *d)
{
	struct gw_follow *fw = d->follow;
	if (!fw)
		return;
	for (size_t i = 0; i < fw->n; i++) {
		struct ffile *f = fw->files[i];
		close_fd(f);
		gw_ingest_src_deinit(&f->src);
		free(f->path);
		free(f->run);
		free(f->format);
		free(f->key);
		free(f);
	}
	free(fw->files);
	free(fw);
	d->follow = NULL;
}
