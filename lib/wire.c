/*
 * The NDJSON line parser (see wire.h): the object and the record layer;
 * the JSON values it reads (strings, numbers, nesting) are wire_value.c's,
 * the roles and the alias table alias.c's (alias.h), the reasons' names
 * and a failure's message wire_err.c's, writing lines back wire_write.c's,
 * and what the parts share wire_int.h's.
 *
 * How it works: one pass over the line reads the top-level object into an
 * array of entries (key, kind, number or decoded string, raw span of nested
 * values), decoding strings into a scratch buffer sized from the line so no
 * pointer moves during the pass; a key that repeats the last line's key at
 * its place is taken from the shape cache instead (wire_shape.c), meaning
 * and all.  A second pass gives the entries meaning:
 * run, step, ts, event, role metrics, fp16 fields, extras.  Nested values
 * are validated during the first pass and only turned into jansson values
 * when the line is an event.
 */
#include "wire_int.h"
#include "buf.h"
#include "hash.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the parser ----------------------------------------------------------- */


struct gw_wire *gw_wire_new(const struct gw_alias *aliases)
{
	struct gw_wire *w = calloc(1, sizeof(*w));
	if (w)
		w->aliases = aliases;
	return w;
}

void gw_wire_free(struct gw_wire *w)
{
	if (!w)
		return;
	json_decref(w->attrs);
	free(w->scratch);
	free(w->ent);
	free(w->metrics);
	free(w->shape);
	free(w->shape_text[0]);
	free(w->shape_text[1]);
	free(w);
}

static const char *kind_name(char ch)
{
	switch (ch) {
	case '"': return "a string";
	case '{': return "an object";
	case '[': return "an array";
	case 't':
	case 'f': return "a boolean";
	case 'n': return "null";
	default: return "a number";
	}
}

int gw_wire_check_run(const char *s, size_t n, char *why, size_t whylen)
{
	if (n == 0 || n > GW_WIRE_RUN_MAX)
		return gw_errf(why, whylen, -EINVAL, "a run name has 1 to %d bytes, this one has %zu",
		               GW_WIRE_RUN_MAX, n);
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		if (p[i] < 0x80) {
			if (p[i] < 0x20 || p[i] == 0x7f)
				return gw_errf(why, whylen, -EINVAL,
				               "a run name has no control characters (byte %zu is 0x%02x)",
				               i + 1, p[i]);
			i++;
			continue;
		}
		size_t k = gw_utf8_seq(p + i, n - i);
		if (!k)
			return gw_errf(why, whylen, -EINVAL,
			               "a run name is UTF-8 (byte %zu, 0x%02x, is not)", i + 1, p[i]);
		if (k == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0)
			return gw_errf(why, whylen, -EINVAL,
			               "a run name has no control characters (U+%04X at byte %zu)",
			               p[i + 1], i + 1);
		i += k;
	}
	return 0;
}

/* First pass: the top-level object into w->ent. */
static int read_object(struct cur *c)
{
	struct gw_wire *w = c->w;
	int rc;
	skip_ws(c);
	if (c->i >= c->n)
		return -ENODATA;
	if (c->s[c->i] != '{') {
		if (c->s[c->i] == '[' || c->s[c->i] == '"' || c->s[c->i] == '-' ||
		    (c->s[c->i] >= '0' && c->s[c->i] <= '9'))
			return gw__wire_fail(c, GW_REJ_NOT_OBJECT, c->i + 1, NULL,
			                     "a line must be a JSON object, got %s", kind_name(c->s[c->i]));
		return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, NULL, "'{' expected");
	}
	c->i++;
	skip_ws(c);
	if (c->i < c->n && c->s[c->i] == '}') {
		c->i++;
		goto tail;
	}
	/* one bit per key hash's low 6 bits: a key whose bit is clear is no
	 * duplicate, and the keys are compared only when it is set */
	uint64_t seen = 0;
	for (;;) {
		if (c->i >= c->n || c->s[c->i] != '"')
			return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, NULL, "field name expected");
		if (w->n_ent == w->ent_cap &&
		    (rc = gw_grow((void **)&w->ent, &w->ent_cap, w->n_ent + 1, sizeof(*w->ent))) < 0)
			return rc;
		struct entry *e = &w->ent[w->n_ent];
		e->key_col = c->i + 1;
		e->num_int = e->bval = false;
		e->str = NULL;
		e->str_len = 0;
		e->num = 0;
		c->field = NULL;
		e->known = false;
		if (!gw__wire_shape_key(c, e)) {
			if ((rc = gw__wire_string(c, &e->key, &e->key_len)) < 0)
				return rc;
			e->key_raw = c->i - e->key_col - 1;
			e->key_hash = gw_fnv1a32(e->key, e->key_len);
			uint64_t bit = UINT64_C(1) << (e->key_hash & 63);
			for (size_t k = 0; (seen & bit) && k < w->n_ent; k++) {
				if (w->ent[k].key_hash == e->key_hash &&
				    w->ent[k].key_len == e->key_len &&
				    memcmp(w->ent[k].key, e->key, e->key_len) == 0)
					return gw__wire_fail(c, GW_REJ_DUP_KEY, e->key_col, e->key,
					                     "the field appears twice");
			}
		}
		seen |= UINT64_C(1) << (e->key_hash & 63);
		c->field = e->key;
		skip_ws(c);
		if (c->i >= c->n || c->s[c->i] != ':')
			return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, e->key, "':' expected after the field name");
		c->i++;
		skip_ws(c);
		if (c->i >= c->n)
			return gw__wire_fail(c, GW_REJ_SYNTAX, c->i, e->key, "line ends where a value was expected");
		e->raw_start = c->i;
		char ch = c->s[c->i];
		rc = 0;   /* the literals below set no rc of their own */
		if (ch == '"') {
			e->kind = V_STR;
			rc = gw__wire_string(c, &e->str, &e->str_len);
		} else if (ch == '{' || ch == '[') {
			e->kind = V_NESTED;
			rc = gw__wire_value(c, 1, NULL);
		} else if (ch == 't' || ch == 'f' || ch == 'n') {
			if (match_word(c, "true")) {
				e->kind = V_BOOL;
				e->bval = true;
			} else if (match_word(c, "false")) {
				e->kind = V_BOOL;
			} else if (match_word(c, "null")) {
				e->kind = V_NULL;
			} else {
				rc = gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, e->key, "invalid literal");
			}
		} else if (ch == '-' || (ch >= '0' && ch <= '9') || ch == 'N' || ch == 'I') {
			e->kind = V_NUM;
			rc = gw__wire_number(c, &e->num, &e->num_int);
		} else {
			rc = gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, e->key, "unexpected character %s",
			                   gw__wire_show_byte(ch, (char[16]){0}));
		}
		if (rc < 0)
			return rc;
		e->raw_end = c->i;
		w->n_ent++;
		skip_ws(c);
		if (c->i < c->n && c->s[c->i] == ',') {
			c->i++;
			skip_ws(c);
			continue;
		}
		if (c->i < c->n && c->s[c->i] == '}') {
			c->i++;
			break;
		}
		if (c->i >= c->n)
			return gw__wire_fail(c, GW_REJ_SYNTAX, c->n, NULL, "line ends inside the object");
		return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, NULL, "',' or '}' expected");
	}
tail:
	c->field = NULL;
	skip_ws(c);
	if (c->i < c->n)
		return gw__wire_fail(c, GW_REJ_SYNTAX, c->i + 1, NULL, "text after the end of the object");
	return 0;
}

static const char *vkind_name(enum vkind k)
{
	switch (k) {
	case V_NUM: return "a number";
	case V_STR: return "a string";
	case V_NULL: return "null";
	case V_BOOL: return "a boolean";
	default: return "an object or array";
	}
}

static int build_attrs(struct cur *c, const struct entry *skip[], size_t nskip)
{
	struct gw_wire *w = c->w;
	json_decref(w->attrs);
	w->attrs = json_object();
	if (!w->attrs)
		return -ENOMEM;
	for (size_t k = 0; k < w->n_ent; k++) {
		const struct entry *e = &w->ent[k];
		bool skipped = false;
		for (size_t j = 0; j < nskip; j++)
			skipped |= skip[j] == e;
		int prio;
		if (skipped || (e->kind == V_NULL &&
		                gw__alias_lookup_hashed(w->aliases, e->key, e->key_len, e->key_hash,
		                                    &prio) == GW_ROLE_TS))
			continue;
		json_t *v = NULL;
		switch (e->kind) {
		case V_NUM: v = gw__wire_number_json(e->num, e->num_int); break;
		case V_STR: v = json_stringn(e->str, e->str_len); break;
		case V_NULL: v = json_null(); break;
		case V_BOOL: v = json_boolean(e->bval); break;
		case V_NESTED: {
			struct cur sub = *c;
			sub.i = e->raw_start;
			sub.n = c->n;
			sub.field = e->key;
			int rc = gw__wire_value(&sub, 1, &v);
			if (rc < 0)
				return rc;
			break;
		}
		}
		if (!v || json_object_setn_new(w->attrs, e->key, e->key_len, v) < 0)
			return -ENOMEM;
	}
	return 0;
}

int gw_wire_parse(struct gw_wire *w, const char *line, size_t len,
                  const char *default_run, struct gw_rec *rec,
                  struct gw_wire_err *err)
{
	struct gw_wire_err dummy;
	if (!err)
		err = &dummy;
	err->reason = GW_REJ_SYNTAX;
	err->column = 0;
	err->field[0] = err->msg[0] = '\0';
	if (len && line[len - 1] == '\r')
		len--;
	/* Decoded strings never exceed their raw text; one byte per string for
	 * the terminator fits in the quotes.  So len + 1 bytes is enough and the
	 * buffer never moves during a parse. */
	if (gw_grow((void **)&w->scratch, &w->scratch_cap, len + 16, 1) < 0)
		return -ENOMEM;
	w->scratch_len = 0;
	w->n_ent = 0;
	struct cur c = {.s = line, .n = len, .i = 0, .w = w, .err = err};
	gw__wire_shape_begin(w);
	int rc = read_object(&c);
	if (rc < 0)
		return rc;
	if ((rc = gw__wire_shape_end(w)) < 0)
		return rc;

	memset(rec, 0, sizeof(*rec));
	rec->ts = NAN;
	const struct entry *run = NULL, *step = NULL, *event = NULL, *ts = NULL, *rank = NULL;
	const struct entry *bad_value = NULL;   /* a role field that is not a number */
	int ts_prio = 1 << 30;
	int prio[GW_NALIAS_ROLES];   /* the roles' and the fields' (ts: ts_prio) */
	for (int r = 0; r < GW_NALIAS_ROLES; r++)
		prio[r] = 1 << 30;
	size_t n_metrics = 0;
	if (gw_grow((void **)&w->metrics, &w->metrics_cap, w->n_ent + 1,
	            sizeof(*w->metrics)) < 0)
		return -ENOMEM;

	for (size_t k = 0; k < w->n_ent; k++) {
		const struct entry *e = &w->ent[k];
		switch (e->name) {
		case K_RUN: run = e; continue;
		case K_STEP: step = e; continue;
		case K_EVENT: event = e; continue;
		case K_RANK: rank = e; continue;
		case K_OTHER: break;
		}
		int p = e->prio;
		int role = e->role;
		if (role == GW_ROLE_TS) {
			/* null counts as absent, as for the roles; so does it
			 * among an event's attributes (build_attrs) */
			if (e->kind != V_NULL && p < ts_prio) {
				ts = e;
				ts_prio = p;
			}
			continue;
		}
		int f = GW_ROLE_FIELD(role);
		if (f >= 0) {
			/* an fp16 field: a number, or for the two counts a
			 * boolean (true: this step was skipped, 1); anything else
			 * is no value of it, and no error (senders logged such
			 * names before they were fields) */
			double v = e->num;
			if (e->kind == V_BOOL && f != GW_FIELD_LOSS_SCALE)
				v = e->bval;
			else if (e->kind != V_NUM)
				continue;
			if (p < prio[role]) {
				prio[role] = p;
				rec->f[f] = v;
				rec->fields |= 1u << f;
			}
			continue;
		}
		if (role >= 0) {
			if (e->kind == V_NULL)
				continue;
			if (e->kind != V_NUM) {
				/* an error for a record; an event's attribute */
				if (!bad_value)
					bad_value = e;
				continue;
			}
			if (p < prio[role]) {
				prio[role] = p;
				rec->v[role] = e->num;
				rec->present |= 1u << role;
			}
			continue;
		}
		if (e->kind == V_NUM) {
			w->metrics[n_metrics].name = e->key;
			w->metrics[n_metrics].value = e->num;
			n_metrics++;
		}
	}

	if (bad_value && !event)
		return gw__wire_fail(&c, GW_REJ_BAD_VALUE, bad_value->raw_start + 1, bad_value->key,
		                     "expected a number (or NaN/Infinity), got %s", vkind_name(bad_value->kind));

	if (run) {
		if (run->kind != V_STR)
			return gw__wire_fail(&c, GW_REJ_BAD_RUN, run->raw_start + 1, "run",
			                     "expected a string, got %s", vkind_name(run->kind));
		char why[128];
		/* lines of a stream repeat their run: checked once while it does */
		if (!w->last_run_len || run->str_len != w->last_run_len ||
		    !same_bytes(run->str, w->last_run, run->str_len)) {
			if (gw_wire_check_run(run->str, run->str_len, why, sizeof(why)) < 0)
				return gw__wire_fail(&c, GW_REJ_BAD_RUN, run->raw_start + 1, "run",
				                     "%s", why);
			memcpy(w->last_run, run->str, run->str_len);
			w->last_run_len = run->str_len;
		}
		rec->run = run->str;
		rec->run_len = run->str_len;
	} else if (default_run && *default_run) {
		char why[128];
		rec->run = default_run;
		rec->run_len = strlen(default_run);
		if (gw_wire_check_run(rec->run, rec->run_len, why, sizeof(why)) < 0)
			return gw__wire_fail(&c, GW_REJ_BAD_RUN, 0, "run", "the default run name: %s", why);
	} else {
		return gw__wire_fail(&c, GW_REJ_NO_RUN, 0, NULL, "the line has no \"run\" field");
	}

	if (!step)
		return gw__wire_fail(&c, GW_REJ_NO_STEP, 0, NULL, "the line has no \"step\" field");
	if (step->kind != V_NUM)
		return gw__wire_fail(&c, GW_REJ_BAD_STEP, step->raw_start + 1, "step",
		                     "expected an integer, got %s", vkind_name(step->kind));
	if (!isfinite(step->num) || step->num != floor(step->num))
		return gw__wire_fail(&c, GW_REJ_BAD_STEP, step->raw_start + 1, "step",
		                     "expected an integer, got %.17g", step->num);
	if (step->num < 0 || step->num > (double)GW_WIRE_STEP_MAX)
		return gw__wire_fail(&c, GW_REJ_BAD_STEP, step->raw_start + 1, "step",
		                     "step %.17g is outside 0..%lld", step->num,
		                     (long long)GW_WIRE_STEP_MAX);
	rec->step = (int64_t)step->num;

	if (rank && rank->kind != V_NULL) {   /* null: no rank, as for the roles */
		if (rank->kind != V_NUM)
			return gw__wire_fail(&c, GW_REJ_BAD_RANK, rank->raw_start + 1, "rank",
			                     "expected an integer, got %s", vkind_name(rank->kind));
		if (!isfinite(rank->num) || rank->num != floor(rank->num) || rank->num < 0 ||
		    rank->num > GW_WIRE_RANK_MAX)
			return gw__wire_fail(&c, GW_REJ_BAD_RANK, rank->raw_start + 1, "rank",
			                     "expected an integer in 0..%d, got %.17g", GW_WIRE_RANK_MAX,
			                     rank->num);
		rec->has_rank = true;
		rec->rank = (uint32_t)rank->num;
	}

	if (ts && ts->kind != V_NULL) {
		if (ts->kind != V_NUM || !isfinite(ts->num) || ts->num < 0)
			return gw__wire_fail(&c, GW_REJ_BAD_TS, ts->raw_start + 1, ts->key,
			                     "expected finite Unix seconds >= 0");
		rec->ts = ts->num;
	}

	if (event) {
		if (event->kind != V_STR || event->str_len == 0 ||
		    event->str_len > GW_WIRE_EVENT_MAX)
			return gw__wire_fail(&c, GW_REJ_BAD_EVENT, event->raw_start + 1, "event",
			                     "expected a name of 1 to %d bytes", GW_WIRE_EVENT_MAX);
		const struct entry *skip[] = {run, step, event, ts, rank};
		if ((rc = build_attrs(&c, skip, GW_ARRAY_SIZE(skip))) < 0)
			return rc;
		rec->event = event->str;
		rec->attrs = w->attrs;
		rec->present = rec->fields = 0;
		return 0;
	}
	rec->extra = w->metrics;
	rec->n_extra = n_metrics;
	return 0;
}
