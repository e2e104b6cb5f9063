/*
 * alias: the roles a metric field can play (loss, grad_norm, lr,
 * throughput, the ts pseudo-role, the fp16 fields) and the alias table
 * that maps field names to them (alias.c; docs/wire-format.md).  The wire
 * parser (wire.h, which includes this) looks every field up here; this
 * knows nothing of lines.
 */
#ifndef GW_ALIAS_H
#define GW_ALIAS_H

#include <stddef.h>
#include <stdint.h>

enum gw_role {
	GW_ROLE_LOSS,
	GW_ROLE_GRAD_NORM,
	GW_ROLE_LR,
	GW_ROLE_THROUGHPUT,
	GW_NROLES,
	GW_ROLE_TS = GW_NROLES, /* pseudo-role: aliases of the "ts" field */
	/* the fp16 fields (enum gw_field below): the alias table maps their
	 * names like the roles', a record carries them in f[], not v[] */
	GW_ROLE_LOSS_SCALE,
	GW_ROLE_SKIPPED,
	GW_ROLE_NAN_ITERATIONS,
	GW_NALIAS_ROLES,
};

/* The fp16 overflow fields a record may carry besides the four roles
 * (docs/wire-format.md "fp16 overflow"): the dynamic loss scale after the
 * record's step, and how many iterations of the record's logging interval
 * were skipped (an overflow: inf/NaN gradients, the update not applied) or
 * had a NaN.  Not typed columns in storage: stored in the record's extras
 * under their canonical names. */
enum gw_field {
	GW_FIELD_LOSS_SCALE,      /* "loss_scale" */
	GW_FIELD_SKIPPED,         /* "skipped" */
	GW_FIELD_NAN_ITERATIONS,  /* "nan_iterations" */
	GW_NFIELDS,
};

/* The alias-table role of a field, and back (-1: not a field). */
#define GW_FIELD_ROLE(f) ((enum gw_role)(GW_ROLE_LOSS_SCALE + (int)(f)))
#define GW_ROLE_FIELD(r) ((int)(r) >= GW_ROLE_LOSS_SCALE && (int)(r) < GW_NALIAS_ROLES \
                          ? (int)(r) - GW_ROLE_LOSS_SCALE : -1)

/* Canonical name of a role ("loss", "grad_norm", "lr", "throughput", "ts",
 * "loss_scale", "skipped", "nan_iterations"). */
const char *gw_role_name(enum gw_role r);

/* Canonical name of a field ("loss_scale", "skipped", "nan_iterations"). */
const char *gw_field_name(enum gw_field f);

/* Alias table: field name -> role.  Built with the defaults, extended from
 * the configuration.  Lookups are exact and case-sensitive. */
struct gw_alias;

/* New table with the built-in aliases (see docs/wire-format.md).  NULL on
 * allocation failure. */
struct gw_alias *gw_alias_new(void);
void gw_alias_free(struct gw_alias *a);

/* Add `name` as an alias of `role` with lower priority than the existing
 * ones (when a line has several aliases of one role, the one added first
 * wins).  Returns 0, -EEXIST if the name is already an alias of another
 * role, -ENOMEM. */
int gw_alias_add(struct gw_alias *a, enum gw_role role, const char *name);

/* How many aliases the table holds (the built-in ones and those added). */
size_t gw_alias_count(const struct gw_alias *a);

/* Role of a field name, or -1.  *prio gets its priority (lower wins). */
int gw_alias_lookup(const struct gw_alias *a, const char *name, size_t len,
                    int *prio);
/* The same for a caller that has hash = gw_fnv1a32(name, len) already
 * (shared-internal: the parser). */
int gw__alias_lookup_hashed(const struct gw_alias *a, const char *name, size_t len,
                            uint32_t hash, int *prio);

/* Parse a role name ("loss", "grad_norm", "lr", "throughput", "ts", or a
 * field's: "loss_scale", ...); returns the role or -1. */
int gw_role_parse(const char *name);

#endif
