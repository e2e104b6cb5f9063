/*
 * Small helpers every module uses: container_of, array size, min/max, the
 * always-on invariant check, string copy, cutting UTF-8 text at a
 * character boundary, glob match, error
 * messages next to negative errnos, and reading a whole file.  Only
 * gw_read_file allocates and does I/O (and GW_REQUIRE's abort path logs).
 * The growable buffer, the hash, the string table and the clocks have
 * their own headers: buf.h, hash.h, strtab.h, clock.h (included here, as
 * most users of util.h read a clock).
 */
#ifndef GW_UTIL_H
#define GW_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "utf8.h"

#define GW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define GW_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GW_MAX(a, b) ((a) > (b) ? (a) : (b))

#define gw_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Invariant that must hold in release builds too; on failure, log where and
 * abort.  For conditions that a bug, not input, can break. */
#define GW_REQUIRE(cond) \
	do { \
		if (!(cond)) \
			gw__require_failed(#cond, __FILE__, __LINE__); \
	} while (0)

void gw__require_failed(const char *expr, const char *file, int line)
	__attribute__((noreturn));

/* v in decimal with thousands separators ("-8,500", "65,000"), cut to fit
 * size (size >= 1); writes buf and returns it.  Every step and count a
 * person reads (summaries, error caps, progress) goes through it. */
const char *gw_fmt_int(char *buf, size_t size, int64_t v);

/* An output file written whole or not at all (`-o FILE` of export and
 * report): gw_outfile_open writes to "FILE.tmp" (standard output when path
 * is NULL or "-"); gw_outfile_close closes it and, when keep and every write
 * worked, renames it over FILE, else removes it, so a failed run never
 * touches FILE.  Both return 0 or a negative errno (-ENAMETOOLONG, fopen's,
 * -EIO for a write that failed, rename's); o->f is the stream to write. */
struct gw_outfile {
	FILE *f;
	const char *path;          /* NULL: standard output */
	char tmp[4096];
};
int gw_outfile_open(struct gw_outfile *o, const char *path);
int gw_outfile_close(struct gw_outfile *o, bool keep);

/* A number for JSON that jansson always takes: a real, or null when v is
 * NaN or infinite (json_real and json_pack's "f" fail on those, and the
 * whole object built with them would be lost).  Every double that goes into
 * alert evidence, a record, or an API answer goes through it (json_pack
 * "o"); tests/lint_json_num.py keeps "f" and json_real out of the tree.
 * A new reference, NULL only when out of memory. */
json_t *gw_json_num(double v);

/* Copy at most dst_size - 1 bytes of src and terminate; returns strlen(src). */
size_t gw_strlcpy(char *dst, const char *src, size_t dst_size);

/* gw_utf8_seq: utf8.h. */

/* Copy in[0..n) into out (cap bytes, NUL-terminated) as valid UTF-8: each
 * byte that is not part of a valid sequence (and each NUL) becomes the
 * text \xNN, as the log writes control characters.  Stops at a character
 * that does not fit.  Returns the length written.  For text from the
 * network that goes into a JSON answer. */
size_t gw_utf8_clean(char *out, size_t cap, const char *in, size_t n);

/* How much of s[0..n) to keep so as not to end inside a UTF-8 sequence:
 * n, or less when the last character is incomplete (a cut made by a
 * fixed-size buffer: snprintf, a field copied into char[64]).  The bytes
 * before are taken as they are.  For text that goes into JSON, which must
 * be valid UTF-8 (jansson refuses anything else). */
size_t gw_utf8_cut(const char *s, size_t n);

/* Terminate s (a C string that may have been cut short) at gw_utf8_cut. */
void gw_utf8_fix_end(char *s);

/* Shell-style glob match of a whole string ('*', '?', '[...]'). */
int gw_glob_match(const char *pattern, const char *s);

/* Format a message into err (if err and errlen) and return rc: the one
 * way modules report a failure's reason next to its negative errno. */
int gw_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Read a whole regular file of at most `max` bytes into a NUL-terminated
 * heap buffer (caller frees).  Returns 0, -EINVAL when the path is not a
 * regular file (a directory, a named pipe that would wait for a writer, a
 * device such as /dev/zero that never ends), -EFBIG when the file is longer
 * than max, or another negative errno; *len (may be NULL) gets the length. */
int gw_read_file(const char *path, size_t max, char **out, size_t *len);

/* Where a secret file named in the configuration is: a relative name is
 * looked up in $CREDENTIALS_DIRECTORY when systemd set it (LoadCredential=),
 * else taken as given.  Heap string in *out; returns 0 or -ENOMEM. */
int gw_credential_path(const char *name, char **out);

/* Parse a duration: a number of seconds (may be fractional) or a string
 * with a unit ("250ms", "10s", "5m", "4h", "0"), decimal digits only, at
 * most 10^15 ms (about 31,700 years).  -EINVAL if malformed or larger. */
int gw_parse_duration(const json_t *v, uint64_t *ms);

/* a secret read from a file (a webhook URL, a signing key, a DSN) is at most this long */
#define GW_SECRET_FILE_MAX (64 * 1024)

/* Read a secret of object o from exactly one of key, key_env (an
 * environment variable's name) and key_file (a file, systemd credentials
 * style: gw_credential_path), trailing white space dropped.  *out is a heap
 * string (caller frees) or NULL when none is given; *out_len (may be NULL)
 * its length.  Errors name where and the key in err: 0 or a negative errno. */
int gw_secret_load(const json_t *o, const char *key, const char *where, char **out,
                   size_t *out_len, char *err, size_t errlen);

#endif
