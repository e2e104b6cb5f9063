/*
 * mlflow: an MLflow run directory as gradwatch NDJSON (see mlflow.h).
 *
 * The metric files are found by walking metrics/ in name order (folders
 * are the '/' of a metric name, up to MAX_DEPTH deep), each read whole and split into
 * values; the values of every file go into one array, sorted by time,
 * step and file order, then gathered into points and written with
 * gw_wire_append_rec, which the ndjson reader reads back with the alias
 * table.
 */
#include "mlflow.h"

#include "reader_impl.h"
#include "util.h"
#include "wire.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEPTH 8
#define FILE_MAX ((size_t)1 << 30)   /* bytes of one metric file */

struct val {
	int64_t ts_ms, step;
	double v;
	uint32_t name;     /* index into names */
	uint64_t seq;      /* file order: (file << 40) | line */
};

struct walk {
	char **names;      /* metric names, relative to metrics/ */
	size_t nnames, capnames;
	struct val *vals;
	size_t nvals, capvals;
	gw_mlflow_err_fn on_err;
	void *data;
	char *err;
	size_t errlen;
};

int gw_mlflow_is_run(const char *dir)
{
	char p[4096];
	struct stat st;
	snprintf(p, sizeof(p), "%s/metrics", dir);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void bad(struct walk *w, const char *file, uint64_t line, const char *msg)
{
	if (w->on_err)
		w->on_err(w->data, file, line, msg);
}

/* The values of one metric file. */
static int read_metric(struct walk *w, const char *path, const char *name)
{
	char *buf;
	size_t len;
	int rc = gw_read_file(path, FILE_MAX, &buf, &len);
	if (rc < 0)
		return gw_errf(w->err, w->errlen, rc, "%s: %s", path, strerror(-rc));
	if (gw_grow((void **)&w->names, &w->capnames, w->nnames + 1, sizeof(*w->names)) < 0 ||
	    !(w->names[w->nnames] = strdup(name))) {
		free(buf);
		return -ENOMEM;
	}
	uint32_t idx = (uint32_t)w->nnames++;
	uint64_t lineno = 0;
	for (size_t i = 0; i < len;) {
		const char *s = buf + i, *nl = memchr(s, '\n', len - i);
		size_t n = nl ? (size_t)(nl - s) : len - i;
		i += n + 1;
		lineno++;
		if (n && s[n - 1] == '\r')
			n--;
		if (!n)
			continue;
		/* "<timestamp ms> <value> <step>" */
		int64_t ts, step = 0;
		double v = 0;
		size_t k = gw__rd_int(s, n, &ts), j = k;
		size_t m = 0;
		if (k && j < n && s[j] == ' ' && (m = gw__rd_num(s + j + 1, n - j - 1, &v)) != 0) {
			j += 1 + m;
			if (j < n && s[j] == ' ') {
				size_t d = gw__rd_int(s + j + 1, n - j - 1, &step);
				j = d ? j + 1 + d : 0;
			}
		}
		if (!k || !m || j != n || step > GW_WIRE_STEP_MAX) {
			bad(w, path, lineno, "bad_value: expected \"<timestamp ms> <value> <step>\"; skipped");
			continue;
		}
		if (gw_grow((void **)&w->vals, &w->capvals, w->nvals + 1, sizeof(*w->vals)) < 0) {
			free(buf);
			return -ENOMEM;
		}
		w->vals[w->nvals++] = (struct val){.ts_ms = ts, .step = step, .v = v, .name = idx,
		                                   .seq = (uint64_t)idx << 40 | lineno};
	}
	free(buf);
	return 0;
}

/* Every file under path (metrics/ or below), named rel/..., in name order
 * (so the fields of a point come in the same order on every machine). */
static int walk_dir(struct walk *w, const char *path, const char *rel, int depth)
{
	struct dirent **ents;
	int n = scandir(path, &ents, NULL, alphasort);
	if (n < 0)
		return gw_errf(w->err, w->errlen, -errno, "%s: %s", path, strerror(errno));
	int rc = 0;
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		char p[4096], r[1024];
		struct stat st;
		if (!rc && name[0] != '.' &&
		    (size_t)snprintf(p, sizeof(p), "%s/%s", path, name) < sizeof(p) &&
		    (size_t)snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "", name) < sizeof(r) &&
		    stat(p, &st) == 0) {
			if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH)
				rc = walk_dir(w, p, r, depth + 1);
			else if (S_ISREG(st.st_mode))
				rc = read_metric(w, p, r);
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

static int by_time(const void *a, const void *b)
{
	const struct val *x = a, *y = b;
	if (x->ts_ms != y->ts_ms)
		return x->ts_ms < y->ts_ms ? -1 : 1;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The run's name as MLflow shows it, into buf; false if there is none. */
static bool run_name(const char *dir, char *buf, size_t len)
{
	char p[4096], *text;
	size_t n;
	snprintf(p, sizeof(p), "%s/tags/mlflow.runName", dir);
	if (gw_read_file(p, GW_WIRE_RUN_MAX, &text, &n) == 0) {
		while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
			n--;
		char why[128];
		bool ok = n && n < len && gw_wire_check_run(text, n, why, sizeof(why)) == 0;
		if (ok) {
			memcpy(buf, text, n);
			buf[n] = '\0';
		}
		free(text);
		if (ok)
			return true;
	}
	snprintf(p, sizeof(p), "%s/meta.yaml", dir);
	if (gw_read_file(p, 1 << 20, &text, &n) < 0)
		return false;
	bool ok = false;
	const char *k = gw__rd_find(text, n, "\nrun_name: ");
	if (k) {
		const char *v = k + 11, *e = memchr(v, '\n', (size_t)(text + n - v));
		size_t vl = e ? (size_t)(e - v) : (size_t)(text + n - v);
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
			vl--;
		char why[128];
		ok = vl && vl < len && gw_wire_check_run(v, vl, why, sizeof(why)) == 0;
		if (ok) {
			memcpy(buf, v, vl);
			buf[vl] = '\0';
		}
	}
	free(text);
	return ok;
}

/* The points of the sorted values, as NDJSON. */
static int write_points(struct walk *w, const char *run, struct gw_buf *out)
{
	struct gw_metric *m = calloc(w->nnames ? w->nnames : 1, sizeof(*m));
	uint64_t *mark = calloc(w->nnames ? w->nnames : 1, sizeof(*mark));
	if (!m || !mark) {
		free(m);
		free(mark);
		return -ENOMEM;
	}
	struct gw_rec rec = {.run = run, .run_len = strlen(run), .extra = m};
	uint64_t point = 0;   /* the point being gathered, from 1 */
	int rc = 0;
	for (size_t i = 0; i <= w->nvals && !rc; i++) {
		const struct val *v = i < w->nvals ? &w->vals[i] : NULL;
		if (point && (!v || v->step != rec.step || mark[v->name] == point)) {
			rc = gw_wire_append_rec(out, &rec);
			point = 0;
		}
		if (!v)
			break;
		if (!point) {
			point = i + 1;
			rec.step = v->step;
			rec.ts = (double)v->ts_ms / 1000.0;
			rec.n_extra = 0;
		}
		mark[v->name] = point;
		m[rec.n_extra].name = w->names[v->name];
		m[rec.n_extra].value = v->v;
		rec.n_extra++;
	}
	free(m);
	free(mark);
	return rc;
}

int gw_mlflow_ndjson(const char *dir, const char *run, const char *fallback, struct gw_buf *out,
                     gw_mlflow_err_fn on_err, void *data, char *err, size_t errlen)
{
	if (!gw_mlflow_is_run(dir))
		return gw_errf(err, errlen, -ENOENT, "%s: a directory, but not an MLflow run (no "
		               "metrics/ folder in it)", dir);
	struct walk w = {.on_err = on_err, .data = data, .err = err, .errlen = errlen};
	char path[4096], name[GW_WIRE_RUN_MAX + 1];
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;   /* "run/" names its files run/metrics/..., not run//metrics/... */
	snprintf(path, sizeof(path), "%.*s/metrics", (int)dl, dir);
	int rc = walk_dir(&w, path, "", 0);
	if (rc == -ENOMEM)
		gw_errf(err, errlen, rc, "out of memory");
	if (!rc) {
		qsort(w.vals, w.nvals, sizeof(*w.vals), by_time);
		if (!run)
			run = run_name(dir, name, sizeof(name)) ? name : fallback;
		if ((rc = write_points(&w, run, out)) < 0)
			gw_errf(err, errlen, rc, "out of memory");
	}
	for (size_t i = 0; i < w.nnames; i++)
		free(w.names[i]);
	free(w.names);
	free(w.vals);
	return rc;
}
