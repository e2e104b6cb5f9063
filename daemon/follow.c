/*
 * follow: one followed file's life (follow_set.c has the whole story, and
 * starts and stops the files):
 * whenever the poll sees the path's stat change, the file is read from the
 * position reached so far to its end, in 64 KiB chunks, into its ingest
 * source; a truncation reads it again from byte 0, a rotation reads the
 * old file to its end and then the new one from its start, a path gone
 * ends the file and its run.  One uv_fs_t at a time drives it (open,
 * fstat, read: on the thread pool), so the loop never waits for the disk.
 * After each chunk the position is queued with the chunk's records under
 * one store hold.
 */
#include "follow_impl.h"

#include "log.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define LOGGED_ERRORS 3

static void do_read(struct ffile *f);
static void process(struct ffile *f);

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
	if (gw_store_put_meta(f->fw->o.store, f->key, val))
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
	gw_ingest_src_init(&f->src, f->fw->o.ingest, GW_TR_FOLLOW, lineno);
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

void gw__ffile_close_fd(struct ffile *f)
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
	gw_store_hold(f->fw->o.store);
	if (!f->unreadable)
		gw_ingest_src_finish(&f->src);
	gw_store_release(f->fw->o.store);
	if (f->src.last_run[0])
		gw_ingest_run_ended(f->fw->o.ingest, f->src.last_run, why);
	gw__ffile_close_fd(f);
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

/* The path looked at afresh once the open file is read to its end and the
 * last poll said the path was gone: that stat may be older than the open
 * (at start the first poll's stat and the first open race: a stat from
 * before the file was created, an open after it), and ending a file that
 * is still there reads it again from its start when the poll sees it. */
static void on_path_stat(uv_fs_t *req)
{
	struct ffile *f = req->data;
	int rc = (int)req->result;
	uv_stat_t st = req->statbuf;
	uv_fs_req_cleanup(req);
	if (f->stopped) {
		idle(f);
		return;
	}
	if (rc < 0) {
		file_gone(f);
		return;
	}
	f->st_status = 0;
	f->st = st;
	if (st.st_ino != f->ino || st.st_dev != f->dev) {
		/* another file has the path: finish this one, then read that */
		f->draining = true;
		do_read(f);
		return;
	}
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
		gw__ffile_close_fd(f);
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
			gw__ffile_open(f);
			return;
		}
		if (f->st_status < 0 && !f->stopped) {
			f->req.data = f;
			if (uv_fs_stat(f->fw->o.loop, &f->req, f->path, on_path_stat) < 0)
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
	gw_store_hold(f->fw->o.store);
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
	gw_store_release(f->fw->o.store);
	if (f->stopped) {
		idle(f);
		return;
	}
	do_read(f);
}

void gw__ffile_unpause(struct gw_paused *p)
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
	if (gw_ingest_congested(f->fw->o.ingest)) {
		gw_ingest_pause(f->fw->o.ingest, &f->paused);
		return;
	}
	uv_buf_t b = uv_buf_init(f->buf, sizeof(f->buf));
	f->req.data = f;
	int rc = uv_fs_read(f->fw->o.loop, &f->req, f->fd, &b, 1, (int64_t)f->off, on_read);
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
		gw__ffile_close_fd(f);
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
		gw__ffile_close_fd(f);
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
	int rc = uv_fs_fstat(f->fw->o.loop, &f->req, f->fd, on_fstat);
	if (rc < 0) {
		gw__ffile_close_fd(f);
		idle(f);
	}
}

void gw__ffile_open(struct ffile *f)
{
	f->busy = true;
	f->req.data = f;
	/* O_NONBLOCK: opening a named pipe would wait for a writer, holding a
	 * thread-pool thread and the daemon's stop; a regular file reads the
	 * same either way */
	int rc = uv_fs_open(f->fw->o.loop, &f->req, f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0,
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
			gw__ffile_open(f);
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
		if (uv_fs_fstat(f->fw->o.loop, &f->req, f->fd, on_size) == 0)
			return;
	}
	do_read(f);
}

void gw__ffile_on_poll(uv_fs_poll_t *h, int status, const uv_stat_t *prev,
                       const uv_stat_t *curr)
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
