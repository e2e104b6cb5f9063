/*
 * follow_impl: what follow_set.c (the set of followed files:
 * configuration, stored positions, start and stop) and follow.c (one
 * file's life: open, read, rotation, truncation) share.  Internal: users
 * see follow.h.
 */
#ifndef GW_FOLLOW_IMPL_H
#define GW_FOLLOW_IMPL_H

#include "follow.h"

#include "ingest.h"
#include "reader.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define CHUNK (64 * 1024)

struct ffile {
	struct gw_follow *fw;     /* its set (the options) */
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
	struct gw_follow_opts o;
	struct ffile **files;
	size_t n;
};

/* follow.c: open f's path (the chain open, fstat, read from the
 * position; loop thread, the operations on the thread pool). */
void gw__ffile_open(struct ffile *f);
/* The poll callback of f->poll (data: f). */
void gw__ffile_on_poll(uv_fs_poll_t *h, int status, const uv_stat_t *prev,
                       const uv_stat_t *curr);
/* f->paused's resume: read on after back-pressure. */
void gw__ffile_unpause(struct gw_paused *p);
/* Close f's open file, if any (synchronously: a close does not wait). */
void gw__ffile_close_fd(struct ffile *f);

#endif
