/*
 * input: one file (or standard input) read through the readers layer, for
 * the command-line tools (`gradwatch replay`, `gradwatch convert`).
 *
 * It opens the file, feeds it to a gw_reader in 1 MiB chunks, prints the
 * reader's complaints on stderr as `file:line: message` (the first
 * max_errors of them, then one "… and N more errors" line), and, when
 * stderr is a terminal and the file takes more than two seconds, keeps a
 * progress line there.  Points and events go to the caller's on_rec.
 */
#ifndef GW_INPUT_H
#define GW_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

/* Points already read from whole-file formats (files rewritten at every
 * checkpoint, such as trainer_state.json): each checkpoint-N copy of a run
 * holds the run's history up to N, so replaying several copies would give
 * the same points again.  A point equal to one read before (same run, step
 * and role values) is skipped and counted.  Points of stream formats are
 * never skipped (a repeated step there is a restart). */
struct gw_input_seen;

struct gw_input_seen *gw_input_seen_new(void);
void gw_input_seen_free(struct gw_input_seen *s);

struct gw_input {
	/* in */
	const char *cmd;             /* "replay", for messages */
	const char *path;            /* "-": standard input */
	const char *run;             /* run of points that name none; NULL: gw_input_run_name */
	const char *format;          /* --input-format, or NULL: sniff */
	const struct gw_alias *aliases;
	size_t max_line;
	unsigned max_errors;         /* error lines printed (0: 20) */
	int (*on_rec)(void *data, const struct gw_rec *rec, uint64_t line);
	void *data;
	struct gw_input_seen *seen;  /* shared by the files of one command, or NULL */
	/* out */
	uint64_t lines, handed, errors;
	uint64_t duplicates;         /* points skipped as copies (see gw_input_seen) */
	const char *format_used;     /* name of the format read, or NULL */
};

/* Read in->path to its end.  Returns 0; -EPROTO when the input is not
 * readable (unknown format, nothing readable, corrupt compression); a
 * negative errno for I/O and memory errors or when on_rec stops it (its
 * value).  Every failure is printed on stderr, naming the file.  Blocks on
 * the file (or stdin). */
int gw_input_read(struct gw_input *in);

/* The default run name of a path: the file name without its directory and
 * without the extensions gradwatch knows (.gz .zst .jsonl .json .log .out
 * .txt .csv, and .trainer_state / .logging / .main / .metrics / .train
 * before them); "stdin" for "-"; cut to 256 bytes, and made ASCII ('_'
 * for other bytes) if it is not valid UTF-8 without control characters.
 * A name every run of a framework writes (trainer_state.json, metrics.csv,
 * logging.jsonl, main.log, log.txt, events.out.tfevents.*) is replaced by
 * the name of its folder (above checkpoint-N), path resolved with
 * realpath(3).  A label only: nothing is chosen by it. */
void gw_input_run_name(const char *path, char *buf, size_t len);


#endif
