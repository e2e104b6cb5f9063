/*
 * What the fuzz targets share: FUZZ_CHECK, the invariant check that traps
 * (libFuzzer then keeps the input as a crash), and a temporary directory of
 * the target's own under $TMPDIR (fuzz/run.sh gives each target one and
 * removes it afterwards) with the files the target writes there, removed
 * again at exit when the process ends normally (the meson seed replays).
 * Set-up failures abort: libFuzzer ignores LLVMFuzzerInitialize's result.
 * A target includes this header once.
 */
#ifndef GW_FUZZ_H
#define GW_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

#define FUZZ_MAX_FILES 16

struct fuzz_tmp {
	char dir[512];
	const char *files[FUZZ_MAX_FILES];   /* names in dir to remove at exit */
	size_t n;
};

static inline struct fuzz_tmp *fuzz_tmp(void)
{
	static struct fuzz_tmp t;
	return &t;
}

static inline void fuzz_die(const char *what)
{
	fprintf(stderr, "fuzz: %s\n", what);
	abort();
}

static inline void fuzz_cleanup(void)
{
	struct fuzz_tmp *t = fuzz_tmp();
	char p[1024];
	for (size_t i = 0; i < t->n; i++)
		if (snprintf(p, sizeof(p), "%s/%s", t->dir, t->files[i]) < (int)sizeof(p))
			unlink(p);
	rmdir(t->dir);
}

/* Make $TMPDIR/gw-fuzz-NAME-XXXXXX (or under /tmp); its path. */
static inline const char *fuzz_tmpdir(const char *name)
{
	struct fuzz_tmp *t = fuzz_tmp();
	const char *base = getenv("TMPDIR");
	snprintf(t->dir, sizeof(t->dir), "%s/gw-fuzz-%s-XXXXXX", base && *base ? base : "/tmp", name);
	if (!mkdtemp(t->dir))
		fuzz_die("cannot make a temporary directory");
	atexit(fuzz_cleanup);
	return t->dir;
}

/* Remove dir/name at exit too (a file something else creates there);
 * name must outlive the process (a literal). */
static inline void fuzz_track(const char *name)
{
	struct fuzz_tmp *t = fuzz_tmp();
	if (t->n == FUZZ_MAX_FILES)
		fuzz_die("too many temporary files");
	t->files[t->n++] = name;
}

/* Write dir/name with text. */
static inline void fuzz_put_file(const char *name, const char *text)
{
	char p[1024];
	if (snprintf(p, sizeof(p), "%s/%s", fuzz_tmp()->dir, name) >= (int)sizeof(p))
		fuzz_die("temporary path too long");
	FILE *f = fopen(p, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		fuzz_die("cannot write a temporary file");
	fuzz_track(name);
}

#endif
