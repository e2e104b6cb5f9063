/*
 * Implementations of the helpers in util.h.
 */
#include "util.h"
#include "buf.h"
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void gw__require_failed(const char *expr, const char *file, int line)
{
	gw_log(GW_LOG_CRIT, "invariant failed: %s at %s:%d", expr, file, line);
	abort();
}

const char *gw_fmt_int(char *buf, size_t size, int64_t v)
{
	char raw[24];
	/* the magnitude as unsigned: -INT64_MIN does not fit an int64_t */
	uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	int n = snprintf(raw, sizeof(raw), "%" PRIu64, m);
	size_t o = 0;
	if (v < 0 && o + 1 < size)
		buf[o++] = '-';
	for (int i = 0; i < n && o + 1 < size; i++) {
		if (i && (n - i) % 3 == 0) {
			buf[o++] = ',';
			if (o + 1 >= size)
				break;
		}
		buf[o++] = raw[i];
	}
	buf[o] = '\0';
	return buf;
}

int gw_outfile_open(struct gw_outfile *o, const char *path)
{
	o->path = path && strcmp(path, "-") ? path : NULL;
	o->f = stdout;
	if (!o->path)
		return 0;
	if ((size_t)snprintf(o->tmp, sizeof(o->tmp), "%s.tmp", o->path) >= sizeof(o->tmp))
		return -ENAMETOOLONG;
	o->f = fopen(o->tmp, "w");
	return o->f ? 0 : -errno;
}

int gw_outfile_close(struct gw_outfile *o, bool keep)
{
	int rc = 0;
	if (!o->path) {
		if (fflush(stdout) != 0)
			rc = -errno;
		else if (ferror(stdout))
			rc = -EIO;
	} else {
		bool failed = ferror(o->f);
		if (fclose(o->f) != 0)
			rc = -errno;
		else if (failed)
			rc = -EIO;
		if (keep && rc == 0 && rename(o->tmp, o->path) != 0)
			rc = -errno;
		if (!keep || rc < 0)
			remove(o->tmp);
	}
	o->f = NULL;
	return rc;
}

json_t *gw_json_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

size_t gw_strlcpy(char *dst, const char *src, size_t dst_size)
{
	size_t n = strlen(src);
	if (dst_size) {
		size_t c = n < dst_size - 1 ? n : dst_size - 1;
		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}

size_t gw_utf8_clean(char *out, size_t cap, const char *in, size_t n)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;
	if (!cap)
		return 0;
	for (size_t i = 0; i < n;) {
		size_t k = p[i] < 0x80 ? (p[i] ? 1 : 0) : gw_utf8_seq(p + i, n - i);
		if (k) {
			if (o + k >= cap)
				break;
			memcpy(out + o, p + i, k);
			o += k;
			i += k;
			continue;
		}
		if (o + 4 >= cap)
			break;
		o += (size_t)snprintf(out + o, 5, "\\x%02x", p[i]);
		i++;
	}
	out[o] = '\0';
	return o;
}

size_t gw_utf8_cut(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t lead = n;
	/* back over at most 3 continuation bytes to the sequence's first byte */
	while (lead > 0 && n - lead < 4 && (p[lead - 1] & 0xC0) == 0x80)
		lead--;
	if (lead == 0 || n - lead >= 4 || p[lead - 1] < 0xC0)
		return n;            /* ASCII, or not a sequence we can judge */
	unsigned char b = p[lead - 1];
	size_t want = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
	return n - (lead - 1) < want ? lead - 1 : n;
}

void gw_utf8_fix_end(char *s)
{
	s[gw_utf8_cut(s, strlen(s))] = '\0';
}

int gw_glob_match(const char *pattern, const char *s)
{
	return fnmatch(pattern, s, 0) == 0;
}

int gw_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int gw_read_file(const char *path, size_t max, char **out, size_t *len)
{
	/* O_NONBLOCK: a named pipe would wait for a writer in open() */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	int e = fstat(fd, &st) < 0 ? errno : S_ISREG(st.st_mode) ? 0 : EINVAL;
	if (e) {
		close(fd);
		return -e;
	}
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		e = errno;
		close(fd);
		return -e;
	}
	struct gw_buf b = {0};
	size_t r;
	int rerr = 0;
	do {
		if (b.len > max) {
			rerr = -EFBIG;
			break;
		}
		if (gw_buf_reserve(&b, 4096) < 0)
			break;
		errno = 0;
		r = fread(b.p + b.len, 1, b.cap - b.len - 1, f);
		b.len += r;
		b.p[b.len] = '\0';
	} while (r);
	if (!rerr && ferror(f))
		rerr = errno ? -errno : -EIO;
	int err = b.err ? b.err : rerr;
	fclose(f);
	if (err) {
		gw_buf_free(&b);
		return err;
	}
	*out = b.p;
	if (len)
		*len = b.len;
	return 0;
}

int gw_credential_path(const char *name, char **out)
{
	const char *cred = getenv("CREDENTIALS_DIRECTORY");
	*out = NULL;
	if (name[0] != '/' && cred && *cred) {
		if (asprintf(out, "%s/%s", cred, name) < 0)
			*out = NULL;
	} else {
		*out = strdup(name);
	}
	return *out ? 0 : -ENOMEM;
}

int gw_parse_duration(const json_t *v, uint64_t *ms)
{
	if (json_is_number(v)) {
		double s = json_number_value(v);
		if (!isfinite(s) || s < 0 || s > 1e9)
			return -EINVAL;
		*ms = (uint64_t)llround(s * 1000.0);
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	const char *s = json_string_value(v);
	char *end;
	double x = strtod(s, &end);
	if (end == s || strspn(s, "0123456789.eE+-") != (size_t)(end - s) || !isfinite(x) || x < 0 ||
	    x > 1e12)
		return -EINVAL;
	double mul;
	if (!*end || strcmp(end, "s") == 0)
		mul = 1000.0;
	else if (strcmp(end, "ms") == 0)
		mul = 1.0;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		mul = 60000.0;
	else if (strcmp(end, "h") == 0)
		mul = 3600000.0;
	else if (strcmp(end, "d") == 0)
		mul = 86400000.0;
	else
		return -EINVAL;
	if (x * mul > 1e15)
		return -EINVAL;   /* llround's range, and far past any retention */
	*ms = (uint64_t)llround(x * mul);
	return 0;
}

static void secret_trim_end(char *s, size_t *len)
{
	while (*len && isspace((unsigned char)s[*len - 1]))
		s[--*len] = '\0';
}

int gw_secret_load(const json_t *o, const char *key, const char *where, char **out,
                   size_t *out_len, char *err, size_t errlen)
{
	char k_env[32], k_file[32];
	snprintf(k_env, sizeof(k_env), "%s_env", key);
	snprintf(k_file, sizeof(k_file), "%s_file", key);
	const json_t *v = json_object_get(o, key), *ve = json_object_get(o, k_env),
	             *vf = json_object_get(o, k_file);
	int given = !!v + !!ve + !!vf;
	*out = NULL;
	if (!given)
		return 0;
	if (given > 1)
		return gw_errf(err, errlen, -EINVAL, "%s: give only one of \"%s\", \"%s\" and \"%s\"", where, key,
		            k_env, k_file);
	const json_t *which = v ? v : ve ? ve : vf;
	const char *wkey = v ? key : ve ? k_env : k_file;
	if (!json_is_string(which) || !json_string_length(which))
		return gw_errf(err, errlen, -EINVAL, "%s: \"%s\" must be a non-empty string", where, wkey);
	const char *s = json_string_value(which);
	char *val = NULL;
	size_t len = 0;
	if (v) {
		val = strdup(s);
		len = strlen(s);
	} else if (ve) {
		const char *e = getenv(s);
		if (!e || !*e)
			return gw_errf(err, errlen, -EINVAL, "%s: \"%s\": the environment variable %s is not set",
			            where, wkey, s);
		val = strdup(e);
		len = strlen(e);
	} else {
		char *path = NULL;
		if (gw_credential_path(s, &path) < 0)
			return -ENOMEM;
		int rc = gw_read_file(path, GW_SECRET_FILE_MAX, &val, &len);
		if (rc < 0) {
			gw_errf(err, errlen, -EINVAL, "%s: \"%s\": cannot read %s: %s", where, wkey, path,
			     rc == -EINVAL ? "not a regular file" : rc == -EFBIG ? "longer than 64 KiB"
			     : strerror(-rc));
			free(path);
			return rc;
		}
		free(path);
	}
	if (!val)
		return -ENOMEM;
	secret_trim_end(val, &len);
	if (!len) {
		free(val);
		return gw_errf(err, errlen, -EINVAL, "%s: \"%s\" gives an empty value", where, wkey);
	}
	*out = val;
	if (out_len)
		*out_len = len;
	return 0;
}
